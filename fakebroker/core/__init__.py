"""The pure core (sans-IO): every piece of cluster state and every transition of it.

No sockets, no threads, no clock, no trio: whatever depends on time takes ``now_ms``, and
``ClusterState.tick(now_ms)`` fires the timers that are due. Everything that happens is
recorded as a typed event in one ordered log (``events/``), and appending calls nothing
back: the server tells listeners after each change.

- ``cluster_state.py``: the root — brokers, topics, leaders, coordinator placement and moves,
  records, periodic checks
- ``topics/``: brokers, topics and partitions as data (``model.py``), where replicas go
  (``layout.py``), reassignments and leader elections
- ``log/``: one partition's log (``partition.py``), its segments and their storage, recovery
  at start, per-partition producer state (``producers.py``) and Produce's append path
  (``appends.py``)
- ``groups/``: the group service (every group request enters there) and one module of
  transitions per group type (``classic/``, ``consumer/``), committed offsets, placement
- ``transactions/``: the transaction coordinator, its state table and the producer id allocator
- ``configs.py`` settings (``kafka_config_keys.py``, ``kafka_config_ranges.py``: Kafka's, as
  data), ``group_configs.py`` group configs (resource type GROUP; their checks in
  ``group_config_checks.py``), ``quotas.py`` client quotas, ``features.py`` feature levels (``releases.py``: the
  Kafka releases fakebroker can pose as), ``placement.py`` which broker coordinates a key
- ``timers.py`` keyed timers (tuple keys) and parked answers, ``events/`` the event log
"""
