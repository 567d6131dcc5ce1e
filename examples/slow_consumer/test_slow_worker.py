"""When a slow consumer is kicked out of its group, and when it is not."""

from __future__ import annotations

import pytest
from slow_worker import run

from fakebroker.testing import values

pytestmark = pytest.mark.clients
RECORDS = 40


def fill(cluster) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    for i in range(RECORDS):
        producer.send("jobs", b"job-%d" % i, partition=0)
    producer.flush(10)
    producer.close()
    assert len(values(cluster, "jobs")) == RECORDS


@pytest.mark.fakebroker(topics={"jobs": 1})
def test_small_batches_keep_the_member_in_the_group(fakebroker):
    fill(fakebroker)
    # 4 records x 50 ms = 0.2 s between polls, well inside 1 s
    stats = run(
        fakebroker.bootstrap_servers,
        "jobs-ok",
        "jobs",
        seconds_per_record=0.05,
        max_poll_records=4,
        max_poll_interval_ms=1000,
        records_wanted=RECORDS,
    )
    assert stats == {"processed": RECORDS, "committed": RECORDS, "commit_failures": 0}
    group_events = [e for e in fakebroker.events if e.group == "jobs-ok"]
    left = [e.seq for e in group_events if e.kind == "member_left"]
    last_commit = max(e.seq for e in group_events if e.kind == "offset_committed")
    assert len(left) == 1 and left[0] > last_commit  # it left once: when it closed, after its work
    assert fakebroker.committed("jobs-ok") == {("jobs", 0): RECORDS}


@pytest.mark.fakebroker(topics={"jobs": 1})
def test_big_batches_get_the_member_kicked_out(fakebroker):
    fill(fakebroker)
    # 40 records x 50 ms = 2 s between polls: the 1 s max.poll.interval.ms runs out mid-batch
    stats = run(
        fakebroker.bootstrap_servers,
        "jobs-slow",
        "jobs",
        seconds_per_record=0.05,
        max_poll_records=40,
        max_poll_interval_ms=1000,
        records_wanted=RECORDS,
        deadline_s=8,
    )
    assert stats["commit_failures"] >= 1
    assert stats["processed"] > stats["committed"]  # the work of a failed commit is done again
    left = [e for e in fakebroker.events if e.kind == "member_left" and e.group == "jobs-slow"]
    assert left and left[0].client_id == "slow-worker"
