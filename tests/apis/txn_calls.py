"""What the transaction API tests share: the API keys, and helpers that call each
transactional handler the way a client of that version does."""

from __future__ import annotations

from fakebroker.protocol import records as rec
from fakebroker.protocol.error_codes import ErrorCode as E

from .support import batch, call, cluster

PRODUCE, FETCH, LIST_OFFSETS, OFFSET_FETCH, FIND_COORDINATOR, API_VERSIONS = 0, 1, 2, 9, 10, 18
INIT_PRODUCER_ID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, WRITE_MARKERS, TXN_OFFSET_COMMIT = 22, 24, 25, 26, 27, 28
DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 61, 65, 66
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
TID = "tx"


def coordinator(state, tid=TID) -> int:
    return state.transactions.placement.coordinator_of(tid)


def init(state, tid=TID, *, version=5, timeout_ms=60_000, pid=-1, epoch=-1, broker=None, now_ms=0):
    response, _ = call(
        state,
        INIT_PRODUCER_ID,
        version,
        broker=coordinator(state, tid) if broker is None else broker,
        now_ms=now_ms,
        transactional_id=tid,
        transaction_timeout_ms=timeout_ms,
        producer_id=pid,
        producer_epoch=epoch,
    )
    return response


def begin(state, tid=TID, **kwargs) -> tuple[int, int]:
    response = init(state, tid, **kwargs)
    assert response.error_code == E.NONE
    return response.producer_id, response.producer_epoch


def add_partitions(state, pid, epoch, topics: dict[str, list[int]], *, tid=TID, version=3, broker=None):
    """AddPartitionsToTxn v0-3 (a client): {(topic, partition): error}."""
    response, _ = call(
        state,
        ADD_PARTITIONS,
        version,
        broker=coordinator(state, tid) if broker is None else broker,
        v3_and_below_transactional_id=tid,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[{"name": t, "partitions": ps} for t, ps in topics.items()],
    )
    return {
        (t.name, p.partition_index): p.partition_error_code
        for t in response.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }


def add_offsets(state, pid, epoch, group="g", *, tid=TID, version=4, broker=None):
    response, _ = call(
        state,
        ADD_OFFSETS,
        version,
        broker=coordinator(state, tid) if broker is None else broker,
        transactional_id=tid,
        producer_id=pid,
        producer_epoch=epoch,
        group_id=group,
    )
    return response.error_code


def end(state, pid, epoch, commit=True, *, tid=TID, version=4, broker=None, now_ms=0):
    response, _ = call(
        state,
        END_TXN,
        version,
        broker=coordinator(state, tid) if broker is None else broker,
        now_ms=now_ms,
        transactional_id=tid,
        producer_id=pid,
        producer_epoch=epoch,
        committed=commit,
    )
    return response


def produce_txn(state, pid, epoch, *values, topic="t", partition=0, seq=0, tid=TID, version=9, now_ms=0):
    data = batch(*(values or (b"v",)), producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True)
    response, _ = call(
        state,
        PRODUCE,
        version,
        broker=state.partition(topic, partition).leader,
        now_ms=now_ms,
        acks=-1,
        timeout_ms=30_000,
        transactional_id=tid,
        topic_data=[{"name": topic, "partition_data": [{"index": partition, "records": data}]}],
    )
    [answer] = response.responses[0].partition_responses
    return answer


def txn_offset_commit(
    state, pid, epoch, offsets: dict[tuple[str, int], int], *, group="g", tid=TID, version=3, generation=-1, member=""
):
    by_topic: dict[str, list] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": offset,
                "committed_leader_epoch": -1,
                "committed_metadata": "",
            }
        )
    response, _ = call(
        state,
        TXN_OFFSET_COMMIT,
        version,
        broker=state.groups.coordinator_of(group),
        transactional_id=tid,
        group_id=group,
        producer_id=pid,
        producer_epoch=epoch,
        generation_id_or_member_epoch=generation,
        member_id=member,
        group_instance_id=None,
        topics=[{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    )
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def fetch(state, topic="t", offset=0, *, partition=0, isolation=READ_COMMITTED, version=12):
    response, _ = call(
        state,
        FETCH,
        version,
        broker=state.partition(topic, partition).leader,
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        isolation_level=isolation,
        session_id=0,
        session_epoch=-1,
        topics=[
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "fetch_offset": offset,
                        "partition_max_bytes": 1 << 20,
                        "log_start_offset": -1,
                        "current_leader_epoch": -1,
                    }
                ],
            }
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    [answer] = response.responses[0].partitions
    return answer


def values(records: bytes) -> list[bytes]:
    return [r.value for b in rec.read_batches(records) if not b.is_control for r in b.records]


def txn_cluster(brokers=1, **config):
    state = cluster(brokers, config or None)
    state.create_topic("t", 2, 1)
    return state
