"""A rebalance storm: two failed heartbeats, then the group's coordinator moves.

    fakebroker run examples/scenarios/rebalance_storm.py -- python my_consumer_app.py

The application under test consumes ``orders`` in a consumer group; whatever group it uses,
the scenario finds it, waits for it to settle, and then makes its day worse.
"""

from fakebroker.cluster import conditions as cond

CLUSTER = {"brokers": 3, "topics": {"orders": 6}}  # FakeCluster keyword arguments
TIMEOUT = 90  # seconds for the whole run; the command is stopped after that


async def scenario(cluster, proc):
    # The application's group: the first one to appear, once it has settled.
    group = await cluster.wait_for(lambda c: next(iter(c.groups()), None), timeout=30)
    stable = await cluster.wait_for(cond.GroupState(group, "Stable"), timeout=30)
    print(f"scenario: group {group} is Stable in generation {stable.generation}", flush=True)

    # Two heartbeats answered REBALANCE_IN_PROGRESS: the member rejoins (once or twice: a
    # second error that lands while it is already rejoining changes nothing).
    storm = cluster.faults.add(api="Heartbeat", group=group, error="REBALANCE_IN_PROGRESS", times=2)
    await cluster.wait_for(lambda c: storm.fired == 2, timeout=30)

    # Mid-stream, the coordinator moves to another broker, which reloads the group.
    moved_to = cluster.move_coordinator(group)
    settled = await cluster.wait_for(cond.generation_above(group, stable.generation), timeout=30)
    print(f"scenario: coordinator now broker {moved_to}; group Stable in generation {settled.generation}", flush=True)
