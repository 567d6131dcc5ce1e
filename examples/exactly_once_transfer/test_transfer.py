"""Every payment lands in the ledger exactly once while the group churns: members join and
leave, one is killed inside a transaction and restarted (fencing its zombie transaction), and
transaction coordinators move."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer
from transfer import GROUP, SINK, SOURCE, TransferMember

pytestmark = pytest.mark.clients
PAYMENTS = 1500  # fed at RATE per second while the churn happens
MAX_PAYMENTS = 3000  # fed further only if the churn is slow (a loaded machine)
RATE = 100
CONSUMER = {
    "session.timeout.ms": 3000,
    "heartbeat.interval.ms": 300,
    "max.poll.interval.ms": 10000,
}
PRODUCER = {"transaction.timeout.ms": 20000}
CONFIG = {
    "group.min.session.timeout.ms": 1000,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
}


class MemberProcess:
    """A member in a process of its own, which stops inside its ``hold``-th transaction."""

    def __init__(self, bootstrap: str, name: str, hold: int):
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).with_name("transfer.py")),
                "--bootstrap",
                bootstrap,
                "--name",
                name,
                "--hold-in-transaction",
                str(hold),
                "--consumer-settings",
                json.dumps(CONSUMER),
                "--producer-settings",
                json.dumps(PRODUCER),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.strip())

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.proc.stdout.close()


def ledger_payments(cluster) -> Counter[str]:
    """How many times each payment id is in the ledger as a read_committed reader sees it."""
    return Counter(json.loads(value)["payment"] for _, _, _, value in cluster.records(SINK, committed=True))


@pytest.mark.fakebroker(brokers=3, topics={SOURCE: 6, SINK: 6}, config=CONFIG)
def test_every_payment_once_under_churn(fakebroker):
    cluster = fakebroker
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True, "log_level": 2})
    fed = 0

    def feed(upto: int) -> None:
        nonlocal fed
        while fed < upto:
            producer.produce(SOURCE, key=b"c%d" % (fed % 17), value=b"p%05d:c%d:%d" % (fed, fed % 17, 100 + fed))
            fed += 1
        producer.poll(0)

    everyone: list[TransferMember] = []

    def member(name: str) -> TransferMember:
        # transactions stay open across 10 polls: rebalances come in the middle of some
        m = TransferMember(
            cluster.bootstrap_servers,
            name,
            polls_per_transaction=10,
            consumer_settings=CONSUMER,
            producer_settings=PRODUCER,
        )
        everyone.append(m)
        return m

    members = {"m1": member("m1"), "m2": member("m2")}
    zombie: list[MemberProcess] = []
    done: list[str] = []

    def start_m3() -> None:
        zombie.append(MemberProcess(cluster.bootstrap_servers, "m3", hold=3))
        done.append("m3 joined (a process)")

    def m3_holding() -> bool:
        return bool(zombie) and "holding" in zombie[0].lines

    def kill_and_restart_m3() -> None:
        group = cluster.group(GROUP)
        assert group.state == "Stable" and len(group.members) == 3, group
        txn = cluster.transaction("transfer-m3")
        assert txn.state == "Ongoing" and any(t == SINK for t, _ in txn.partitions), txn
        zombie[0].kill()
        done.append(f"m3 killed in a transaction on {len(txn.partitions)} partitions")
        members["m3"] = member("m3")  # the same transactional.id: fences the zombie's transaction
        done.append("m3 restarted")

    def m1_leaves() -> None:
        members.pop("m1").close()
        done.append("m1 left")

    def move_coordinators() -> None:
        for name in members:
            cluster.move_transaction_coordinator(f"transfer-{name}", load_time_ms=300)
        done.append("transaction coordinators moved")

    def m4_joins() -> None:
        members["m4"] = member("m4")
        done.append("m4 joined")

    # (share of the payments fed, ready?, action): each happens once both hold
    churn = [
        (0.1, lambda: True, start_m3),
        (0.2, m3_holding, kill_and_restart_m3),
        (0.5, lambda: "m3" in members and members["m3"].committed > 0, m1_leaves),
        (0.65, lambda: True, move_coordinators),
        (0.8, lambda: True, m4_joins),
    ]
    began = time.monotonic()
    deadline = began + 120
    try:
        while True:
            assert time.monotonic() < deadline, f"not done in 120 s: {done}, {fed} fed"
            target = PAYMENTS if not churn else MAX_PAYMENTS
            feed(min(target, int((time.monotonic() - began) * RATE)))
            while churn and fed >= churn[0][0] * PAYMENTS and churn[0][1]():
                churn.pop(0)[2]()
            for m in list(members.values()):
                m.step(0.01)
            if not churn and fed >= PAYMENTS and sum(m.in_transaction for m in members.values()) == 0:
                assert producer.flush(10) == 0
                ends = {("payments", p): cluster.offsets(SOURCE, p)[1] for p in range(6)}
                if cluster.committed(GROUP) == ends:
                    break
    finally:
        for z in zombie:
            if z.proc.poll() is None:
                z.kill()
    assert not churn, done
    for m in members.values():
        m.close()

    # Every payment exactly once, and nothing else, in what a read_committed reader sees ...
    seen = ledger_payments(cluster)
    assert set(seen) == {f"p{i:05d}" for i in range(fed)}
    assert [p for p, n in seen.items() if n != 1] == []
    # ... while the log also holds aborted work: the zombie's transaction at least.
    assert len(cluster.records(SINK)) > len(cluster.records(SINK, committed=True))
    # The group's committed offsets are the end of every input partition.
    assert cluster.committed(GROUP) == {(SOURCE, p): cluster.offsets(SOURCE, p)[1] for p in range(6)}
    kinds = Counter(e.kind for e in cluster.events)
    fenced = [e for e in cluster.events if e.kind == "txn_fenced" and e.details["transactional_id"] == "transfer-m3"]
    assert fenced and fenced[0].details["reason"] == "fenced by a new instance", fenced
    assert kinds["txn_aborted"] >= 1 and kinds["txn_committed"] >= 20, kinds
    # Rebalances aborted open transactions, and their work was redone (counted once above).
    assert sum(m.aborted for m in everyone) >= 1
    print(f"\n{fed} payments; {'; '.join(done)}; aborted per member {[m.aborted for m in everyone]}; {dict(kinds)}")
