"""Regenerate docs/timeline-rebalance.svg, the README's example timeline.

The scenario (tests/server/test_timeline.py plays the same one and checks it): three
confluent-kafka consumers join group ``orders-app`` on a 6-partition topic one after the
other (generations 1-3, ending 2/2/2); then a fault rule black-holes c2's Heartbeat and
JoinGroup requests, the coordinator expires its session 6 s later, and c1 and c3 rebalance to
3/3 (generation 4).

c2 runs in a child process so that, once it is a zombie, it can be killed like a crashed
process (a consumer closed in-process would try to leave the group through the black hole).

    python3 scripts/draw_example_timeline.py [OUT.svg|OUT.png]
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer

from fakebroker import FakeCluster
from fakebroker.cluster import conditions as cond
from fakebroker.timeline import timeline, write_timeline

TOPIC = "orders"
PARTITIONS = 6
GROUP = "orders-app"
TIMINGS = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "max.poll.interval.ms": 10000}
DOCS_PICTURE = Path(__file__).resolve().parent.parent / "docs" / "timeline-rebalance.svg"
TITLE = "3 consumers share orders (6 partitions); c2's Heartbeat/JoinGroup black-holed: it expires, c1 and c3 take over"

# c2: polls until killed, printing each assignment it gets.
CHILD = r"""
import json, sys
from confluent_kafka import Consumer
conf, topic = json.loads(sys.argv[1]), sys.argv[2]
consumer = Consumer(conf)
consumer.subscribe([topic], on_assign=lambda c, ps: print(json.dumps(sorted(p.partition for p in ps)), flush=True))
while True:
    consumer.poll(0.1)
"""


class ThreadMember(threading.Thread):
    """A consumer polled by its own thread; ``assigned`` is what its on_assign last got."""

    def __init__(self, conf: dict[str, Any]):
        super().__init__(name=f"consumer-{conf['client.id']}", daemon=True)
        self.conf = conf
        self.assigned: list[int] | None = None
        self.errors: list[BaseException] = []
        self.halt = threading.Event()

    def run(self) -> None:
        consumer = Consumer(self.conf)
        try:
            consumer.subscribe(
                [TOPIC], on_assign=lambda c, ps: setattr(self, "assigned", sorted(p.partition for p in ps))
            )
            while not self.halt.is_set():
                consumer.poll(0.1)
        except BaseException as exc:  # noqa: BLE001 - reported by the scenario
            self.errors.append(exc)
        finally:
            consumer.close()


class ProcessMember:
    """A consumer in a child process (killable like a crash); ``assigned`` as above."""

    def __init__(self, conf: dict[str, Any]):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, json.dumps(conf), TOPIC], stdout=subprocess.PIPE, text=True
        )
        self.assigned: list[int] | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.assigned = json.loads(line)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self._reader.join(timeout=5)


@dataclass
class Outcome:
    """What the scenario saw: assignments as the clients got them, and the group's generations."""

    before: dict[str, list[int]] = field(default_factory=dict)  # client id -> partitions, with 3 members
    after: dict[str, list[int]] = field(default_factory=dict)  # with the 2 survivors
    generations: list[int] = field(default_factory=list)  # generation when Stable, per step


def _wait_assigned(members: dict[str, Any], sizes: dict[str, int], timeout: float = 15.0) -> dict[str, list[int]]:
    """Until each named member's on_assign got that many partitions (the client's view)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = {name: members[name].assigned for name in sizes}
        if all(seen[n] is not None and len(seen[n]) == k for n, k in sizes.items()):
            return seen
        time.sleep(0.05)
    raise AssertionError(f"clients never got assignments of sizes {sizes}: {seen}")


@contextmanager
def rebalance_with_failure(cluster: FakeCluster, group: str = GROUP, *, settle: float = 1.0) -> Iterator[Outcome]:
    """Play the scenario; inside the ``with`` the survivors are still running (Stable, 3/3)."""
    outcome = Outcome()
    members: dict[str, Any] = {}
    rule = None

    def conf(name: str) -> dict[str, Any]:
        return {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 3,
            **TIMINGS,
        }

    try:
        for n, name in enumerate(["c1", "c2", "c3"], start=1):
            member = ProcessMember(conf(name)) if name == "c2" else ThreadMember(conf(name))
            if isinstance(member, ThreadMember):
                member.start()
            members[name] = member
            view = cluster.wait_for_sync(cond.GroupState(group, "Stable", members=n), timeout=20)
            outcome.generations.append(view.generation)
            _wait_assigned(members, {m: PARTITIONS // n for m in members})
            time.sleep(0.8)  # let each generation show on the picture
        outcome.before = _wait_assigned(members, {"c1": 2, "c2": 2, "c3": 2})
        since = len(cluster.events)
        # c2 goes silent towards its coordinator: its heartbeats and any rejoin vanish.
        rule = cluster.faults.add(api=["Heartbeat", "JoinGroup"], client_id="c2", action="blackhole")
        cluster.wait_for_sync(cond.member_expired(group, "c2", since=since), timeout=15)
        view = cluster.wait_for_sync(
            cond.GroupState(group, "Stable", members=2, generation_above=outcome.generations[-1]), timeout=15
        )
        outcome.generations.append(view.generation)
        outcome.after = _wait_assigned(members, {"c1": 3, "c3": 3})
        time.sleep(settle)  # the last generation's bars get some width
        yield outcome
    finally:
        for member in members.values():
            if isinstance(member, ProcessMember):
                member.kill()
            else:
                member.halt.set()
        if rule is not None:
            cluster.faults.remove(rule)
        for member in members.values():
            if isinstance(member, ThreadMember):
                member.join(timeout=15)
                if member.errors:
                    raise member.errors[0]


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else DOCS_PICTURE
    with FakeCluster(brokers=3, topics={TOPIC: PARTITIONS}).run_in_thread() as cluster:
        with rebalance_with_failure(cluster, settle=2.5) as outcome:
            write_timeline(cluster, out, group=GROUP, title=TITLE)
            print(timeline(cluster, GROUP))
    print(f"wrote {out} ({out.stat().st_size} bytes); assignments {outcome.before} -> {outcome.after}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
