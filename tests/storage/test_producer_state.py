"""Issue 33: producer state survives a restart on a data directory, rebuilt from the log as
Kafka rebuilds it. An idempotent producer's retry of a batch written before the restart (its
acknowledgement lost with the crash) is answered as a duplicate, not written twice; its next
sequence is taken and a gap refused, as before the restart."""

from __future__ import annotations

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import records as rec
from fakebroker.protocol.error_codes import ErrorCode as E

from ..raw_client import RawClient

PRODUCE, INIT_PRODUCER_ID = 0, 22


def _produce(client: RawClient, pid: int, epoch: int, sequence: int, *values: bytes):
    batch = rec.build_batch([(None, v) for v in values], producer_id=pid, producer_epoch=epoch, base_sequence=sequence)
    body = {
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}],
    }
    answer = client.request(PRODUCE, 9, body).responses[0].partition_responses[0]
    return answer.error_code, answer.base_offset


def test_an_idempotent_producers_retry_after_a_restart_is_a_duplicate(tmp_path):
    with FakeCluster(data_dir=tmp_path, topics={"t": 1}).run_in_thread() as cluster:
        with RawClient(cluster.servers[0].port) as client:
            init = client.request(INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
            pid, epoch = init.producer_id, init.producer_epoch
            assert _produce(client, pid, epoch, 0, b"a", b"b") == (E.NONE, 0)
            assert _produce(client, pid, epoch, 2, b"c") == (E.NONE, 2)
    with FakeCluster(data_dir=tmp_path).run_in_thread() as cluster:
        with RawClient(cluster.servers[0].port) as client:
            assert _produce(client, pid, epoch, 2, b"c") == (E.NONE, 2)  # the retry: acknowledged, not written
            assert _produce(client, pid, epoch, 5, b"x")[0] == E.OUT_OF_ORDER_SEQUENCE_NUMBER  # a gap
            assert _produce(client, pid, epoch, 3, b"d") == (E.NONE, 3)  # the next sequence
        assert [v for _, _, _, v in cluster.records("t", 0)] == [b"a", b"b", b"c", b"d"]
