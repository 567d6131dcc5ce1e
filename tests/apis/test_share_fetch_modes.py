"""ShareFetch's less common paths through the handler: read_committed isolation (stops at the
LSO, archives aborted batches, leaves markers to be GAP-acknowledged), RENEW (v2), the
record_limit acquire mode, the in-flight record-lock limit and ``by_duration`` resets."""

from __future__ import annotations

import pytest

from fakebroker.protocol import records
from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.protocol.messages import ApiKey

from .support import call, cluster, produce_records
from .test_share_apis import ACCEPT, acquired, earliest, fetch

GAP, RENEW = 0, 4


@pytest.fixture
def state():
    s = cluster(1)
    s.features.finalized["share.version"] = 2
    s.create_topic("t", 1, 1)
    return s


def test_read_committed_stops_at_an_open_transaction(state):
    earliest(state, "g", share_isolation_level="read_committed")
    produce_records(state, "t", 0, b"plain")
    state.topics["t"].partitions[0].log.open_txns[99] = 1  # a transaction from offset 1 on, still open
    produce_records(state, "t", 0, b"in-txn")
    assert acquired(fetch(state, "g", "m1", 0, [("t", 0)])) == [(0, 0, 1)]  # not past the LSO
    state.topics["t"].partitions[0].log.open_txns.clear()
    assert acquired(fetch(state, "g", "m1", 1)) == [(1, 1, 1)]


def test_renew_restarts_the_lock_of_the_renewed_records(state):
    earliest(state, "g", share_record_lock_duration_ms=15000)
    produce_records(state, "t", 0, b"a", b"b")
    fetch(state, "g", "m1", 0, [("t", 0)], version=2)
    renewed = fetch(
        state,
        "g",
        "m1",
        1,
        acks={("t", 0): [(0, 1, [RENEW, RENEW])]},
        now_ms=10_000,
        version=2,
        is_renew_ack=True,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=0,
        max_records=0,
    )
    assert renewed.responses[0].partitions[0].acknowledge_error_code == E.NONE
    state.tick(15_000)  # the first lock's end: renewed, so still held
    sp = state.groups.shares.partitions[("g", "t", 0)]
    assert [(r.first, r.last, r.state.name, r.member) for r in sp.ranges] == [(0, 1, "ACQUIRED", "m1")]
    state.tick(25_000)  # the renewed lock's end
    assert [(r.state.name, r.count) for r in sp.ranges] == [("AVAILABLE", 1)]


def test_renew_needs_is_renew_ack_and_its_zero_limits(state):
    earliest(state, "g")
    produce_records(state, "t", 0, b"a")
    fetch(state, "g", "m1", 0, [("t", 0)], version=2)
    without = fetch(state, "g", "m1", 1, acks={("t", 0): [(0, 0, [RENEW])]}, version=2)
    assert without.responses[0].partitions[0].acknowledge_error_code == E.INVALID_REQUEST
    with_limits = fetch(state, "g", "m1", 2, version=2, is_renew_ack=True)  # MaxRecords 500: not allowed
    assert with_limits.error_code == E.INVALID_REQUEST


def test_record_limit_takes_no_more_than_max_records(state):
    earliest(state, "g")
    produce_records(state, "t", 0, *[b"r%d" % i for i in range(10)])  # one batch of 10
    batch_optimized = fetch(state, "g", "m1", 0, [("t", 0)], version=2, max_records=3, batch_size=3)
    assert acquired(batch_optimized) == [(0, 9, 1)]  # the whole log batch
    state.create_topic("u", 1, 1)
    produce_records(state, "u", 0, *[b"r%d" % i for i in range(10)])
    earliest(state, "h")
    limited = fetch(state, "h", "m1", 0, [("u", 0)], version=2, max_records=3, batch_size=3, share_acquire_mode=1)
    assert acquired(limited) == [(0, 2, 1)]


def test_the_in_flight_limit_stops_new_acquisitions(state):
    earliest(state, "g", share_partition_max_record_locks=100)
    for _ in range(3):
        produce_records(state, "t", 0, *[b"x"] * 60)  # three batches of 60
    first = fetch(state, "g", "m1", 0, [("t", 0)], max_records=500)
    assert acquired(first) == [(0, 119, 1)]  # the second batch crosses 100: no third
    assert acquired(fetch(state, "g", "m2", 0, [("t", 0)])) == []
    after_ack = fetch(state, "g", "m1", 1, acks={("t", 0): [(0, 119, [ACCEPT])]})
    assert acquired(after_ack) == [(120, 179, 1)]  # the window moved past what was accepted


def test_by_duration_starts_at_the_first_record_that_recent(state):
    state.create_topic("d", 1, 1)
    partition = state.topics["d"].partitions[0]
    for ts, value in ((1_000, b"old"), (9_000_000, b"recent")):
        data = records.build_batch([(None, value, [], ts)])
        assert (
            state.append(partition, data, produce_version=11, transactional_id=None, now_ms=9_000_000).error == E.NONE
        )
    state.groups.shares.wall_ms = lambda: 9_000_000 + 60_000
    state.group_configs.overrides["g"] = {"share.auto.offset.reset": "by_duration:PT1H"}
    assert acquired(fetch(state, "g", "m1", 0, [("d", 0)])) == [(1, 1, 1)]


def test_a_gap_acknowledges_what_holds_no_record(state):
    earliest(state, "g")
    produce_records(state, "t", 0, b"a", b"b")
    fetch(state, "g", "m1", 0, [("t", 0)])
    done = fetch(state, "g", "m1", 1, acks={("t", 0): [(0, 1, [ACCEPT, GAP])]})
    assert done.responses[0].partitions[0].acknowledge_error_code == E.NONE
    assert state.groups.shares.partitions[("g", "t", 0)].start == 2
    events = [e.details["outcome"] for e in state.events if e.kind == "share_records_acknowledged"]
    assert events == ["accept", "gap"]


def test_share_acknowledge_needs_the_partition_loaded_here(state):
    earliest(state, "g")
    fetch(state, "g", "m1", 0, [])
    result, _ = call(
        state,
        ApiKey.SHARE_ACKNOWLEDGE,
        1,
        group_id="g",
        member_id="m1",
        share_session_epoch=1,
        topics=[
            {
                "topic_id": state.topics["t"].topic_id,
                "partitions": [
                    {
                        "partition_index": 0,
                        "acknowledgement_batches": [{"first_offset": 0, "last_offset": 0, "acknowledge_types": [1]}],
                    }
                ],
            }
        ],
    )
    assert result.responses[0].partitions[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION


def test_read_committed_archives_an_aborted_transaction_and_leaves_markers_to_gap(state):
    earliest(state, "g", share_isolation_level="read_committed")
    partition = state.topics["t"].partitions[0]
    data = records.build_batch(
        [(None, b"aborted", [], 1_000)], producer_id=7, producer_epoch=0, base_sequence=0, transactional=True
    )
    (header,) = records.iter_batch_headers(data)
    partition.log.append(data, header, leader_epoch=0, now_ms=0, log_append_time=False)  # offset 0
    partition.log.append_marker(7, 0, False, 0, leader_epoch=0, now_ms=0)  # offset 1: the ABORT marker
    produce_records(state, "t", 0, b"after")  # offset 2
    got = fetch(state, "g", "m1", 0, [("t", 0)])
    assert acquired(got) == [(1, 2, 1)]  # the aborted batch is archived, the marker acquired
    done = fetch(state, "g", "m1", 1, acks={("t", 0): [(1, 2, [GAP, ACCEPT])]})
    assert done.responses[0].partitions[0].acknowledge_error_code == E.NONE
    assert state.groups.shares.partitions[("g", "t", 0)].start == 3
