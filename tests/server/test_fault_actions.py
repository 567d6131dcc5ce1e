"""Each fault action and cluster action on the wire, seen by a raw client."""

from __future__ import annotations

import socket
import time

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.cluster import conditions as cond
from fakebroker.protocol import records as rec
from fakebroker.protocol.error_codes import ErrorCode as E

from ..raw_client import RawClient

PRODUCE, FETCH, METADATA, HEARTBEAT, JOIN, SYNC = 0, 1, 3, 12, 11, 14


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3).run_in_thread() as c:
        c.create_topic("t", 2, replication_factor=3)
        yield c


def produce_body(partitions=(0, 1), value=b"v"):
    batch = rec.build_batch([(None, value)])
    return {
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": "t", "partition_data": [{"index": p, "records": batch} for p in partitions]}],
    }


def leader_client(cluster, partition=0, client_id="raw-test"):
    return RawClient(cluster.servers[cluster.leader("t", partition)].port, client_id=client_id)


def test_error_without_handling_and_partition_scope(cluster):
    # both partitions led by one broker so one request carries both
    cluster.move_leader("t", 1, cluster.leader("t", 0))
    rule = cluster.faults.add(api="Produce", topic="t", partition=1, error="NOT_LEADER_OR_FOLLOWER", times=1)
    with leader_client(cluster) as client:
        first = client.request(PRODUCE, 9, produce_body())
        second = client.request(PRODUCE, 9, produce_body())
    codes = {p.index: p.error_code for p in first.responses[0].partition_responses}
    assert codes == {0: 0, 1: E.NOT_LEADER_OR_FOLLOWER}
    assert {p.index: p.error_code for p in second.responses[0].partition_responses} == {0: 0, 1: 0}
    assert cluster.offsets("t", 0)[1] == 2 and cluster.offsets("t", 1)[1] == 1  # the failed one was not appended
    assert (rule.fired, rule.active) == (1, False)
    fired = [e for e in cluster.events if e.kind == "fault_fired"]
    assert (
        len(fired) == 1 and fired[0].details["error"] == "NOT_LEADER_OR_FOLLOWER" and fired[0].client_id == "raw-test"
    )


def test_replace_error_keeps_the_side_effect(cluster):
    cluster.faults.add(api="Produce", action="replace_error", error="REQUEST_TIMED_OUT", nth=1)
    with leader_client(cluster) as client:
        answer = client.request(PRODUCE, 9, produce_body(partitions=(0,)))
    assert answer.responses[0].partition_responses[0].error_code == E.REQUEST_TIMED_OUT
    assert cluster.offsets("t", 0)[1] == 1  # handled: the record is there


def test_delay_and_throttle(cluster):
    cluster.faults.add(api="Metadata", broker=0, delay=0.4)
    cluster.faults.add(api="Metadata", broker=0, throttle_ms=250)
    with RawClient(cluster.servers[0].port) as slow, RawClient(cluster.servers[1].port) as fast:
        start = time.monotonic()
        answer = slow.request(METADATA, 12, {"topics": None})
        slow_s = time.monotonic() - start
        start = time.monotonic()
        fast.request(METADATA, 12, {"topics": None})
        fast_s = time.monotonic() - start
    assert slow_s >= 0.4 > fast_s
    assert answer.throttle_time_ms == 250 and len(answer.brokers) == 3


def test_drop_before_and_after_handling(cluster):
    cluster.faults.add(api="Produce", client_id="dropper", action="drop", times=1)
    cluster.faults.add(api="Produce", client_id="late", action="drop_after", times=1)
    with leader_client(cluster, client_id="dropper") as client:
        client.send(PRODUCE, 9, produce_body(partitions=(0,)))
        with pytest.raises(ConnectionError):
            client.receive(PRODUCE, 9)
    assert cluster.offsets("t", 0)[1] == 0
    with leader_client(cluster, client_id="late") as client:
        client.send(PRODUCE, 9, produce_body(partitions=(0,)))
        with pytest.raises(ConnectionError):
            client.receive(PRODUCE, 9)
    assert cluster.offsets("t", 0)[1] == 1  # handled, never acknowledged
    closed = [e.details["reason"] for e in cluster.events if e.kind == "connection_closed"]
    assert any("drop before" in r for r in closed) and any("drop after" in r for r in closed)


def test_blackhole_swallows_stops_reading_then_closes(cluster):
    cluster.faults.add(api="Metadata", client_id="hole", action="blackhole", duration=0.6, times=1)
    with RawClient(cluster.servers[0].port, client_id="hole", timeout=0.3) as client:
        client.send(METADATA, 12, {"topics": None})
        with pytest.raises(socket.timeout):
            client.receive(METADATA, 12)
        client.sock.settimeout(5)
        start = time.monotonic()
        client.send(METADATA, 12, {"topics": None})  # not read while the hole lasts
        with pytest.raises(ConnectionError):  # then closed: the first request was never answered
            client.receive(METADATA, 12)
        assert 0.1 < time.monotonic() - start < 2
    with RawClient(cluster.servers[0].port, client_id="hole") as again:
        assert len(again.request(METADATA, 12, {"topics": None}).brokers) == 3
    assert any("black hole over" in e.details["reason"] for e in cluster.events if e.kind == "connection_closed")


def test_fault_errors_are_request_errors_too(cluster):
    cluster.faults.add(api="Metadata", error="CLUSTER_AUTHORIZATION_FAILED", times=1)
    cluster.faults.add(api="Metadata", action="replace_error", error="NOT_CONTROLLER", times=1, after=1)
    with RawClient(cluster.servers[0].port) as client:
        client.request(METADATA, 12, {"topics": [{"name": "t"}]})
        client.request(METADATA, 12, {"topics": [{"name": "t"}]})
    errors = [(e.details["error"], e.details.get("fault")) for e in cluster.events if e.kind == "request_error"]
    assert errors == [("CLUSTER_AUTHORIZATION_FAILED", 1), ("NOT_CONTROLLER", 2)]


def test_network_cut_and_heal(cluster):
    with (
        RawClient(cluster.servers[1].port, client_id="svc-1") as victim,
        RawClient(cluster.servers[1].port, client_id="other") as bystander,
    ):
        victim.request(METADATA, 12, {"topics": None})
        bystander.request(METADATA, 12, {"topics": None})
        cluster.cut("svc-*", broker=1)
        with pytest.raises((ConnectionError, OSError)):
            victim.request(METADATA, 12, {"topics": None})
        assert bystander.request(METADATA, 12, {"topics": None}).brokers
    with RawClient(cluster.servers[1].port, client_id="svc-1") as again:
        with pytest.raises((ConnectionError, OSError)):
            again.request(METADATA, 12, {"topics": None})
    with RawClient(cluster.servers[2].port, client_id="svc-1") as elsewhere:
        assert elsewhere.request(METADATA, 12, {"topics": None}).brokers
    cluster.heal("svc-*")
    with RawClient(cluster.servers[1].port, client_id="svc-1") as healed:
        assert healed.request(METADATA, 12, {"topics": None}).brokers


def test_stop_and_start_broker_moves_leaders_and_back(cluster):
    leader = cluster.leader("t", 0)
    port = cluster.servers[leader].port
    cluster.stop_broker(leader)
    with pytest.raises(ConnectionRefusedError):
        RawClient(port)
    new_leader = cluster.leader("t", 0)
    assert new_leader != leader
    with RawClient(cluster.servers[new_leader].port) as client:
        meta = client.request(METADATA, 12, {"topics": [{"name": "t"}]})
        assert leader not in {b.node_id for b in meta.brokers}
        assert meta.topics[0].partitions[0].leader_id == new_leader
        assert leader in meta.topics[0].partitions[0].offline_replicas
        answer = client.request(PRODUCE, 9, produce_body(partitions=(0,)))
        assert answer.responses[0].partition_responses[0].error_code == 0
    cluster.start_broker(leader)
    assert cluster.servers[leader].port == port
    assert cluster.elect_preferred_leaders() >= 1 and cluster.leader("t", 0) == leader
    with RawClient(port) as client:
        assert len(client.request(METADATA, 12, {"topics": None}).brokers) == 3
    kinds = [e.kind for e in cluster.events if e.kind in ("broker_stopped", "broker_started", "leader_moved")]
    assert kinds[-1] == "leader_moved" and "broker_stopped" in kinds


def test_rf1_partitions_go_offline_until_their_broker_returns(cluster):
    cluster.create_topic("single", 1)
    home = cluster.leader("single", 0)
    cluster.stop_broker(home)
    assert cluster.leader("single", 0) == -1
    other = next(s for s in cluster.servers if s.node_id != home)
    with RawClient(other.port) as client:
        meta = client.request(METADATA, 12, {"topics": [{"name": "single"}]})
    assert meta.topics[0].partitions[0].error_code == E.LEADER_NOT_AVAILABLE
    cluster.start_broker(home)
    assert cluster.leader("single", 0) == home


def join(client, group="g", session_ms=45000):
    """JoinGroup v5 twice: the first answer is MEMBER_ID_REQUIRED with the id to use."""
    body = {
        "group_id": group,
        "session_timeout_ms": session_ms,
        "rebalance_timeout_ms": 60000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }
    first = client.request(JOIN, 5, body)
    assert first.error_code == E.MEMBER_ID_REQUIRED
    return client.request(JOIN, 5, {**body, "member_id": first.member_id})


def test_virtual_time_expires_a_session_at_once():
    with FakeCluster(virtual_time=True).run_in_thread() as cluster:
        with RawClient(cluster.servers[0].port, client_id="lonely") as client:
            joined = join(client)
            client.request(
                SYNC,
                3,
                {
                    "group_id": "g",
                    "generation_id": joined.generation_id,
                    "member_id": joined.member_id,
                    "assignments": [{"member_id": joined.member_id, "assignment": b""}],
                },
            )
            assert cluster.group("g").state == "Stable"
            start = cluster.clock.now_ms()
            cluster.clock.advance(44)
            assert cluster.group("g").state == "Stable"
            began = time.monotonic()
            cluster.clock.advance(2)
            view = cluster.wait_for_sync(cond.GroupState("g", "Empty"), timeout=2)
            assert time.monotonic() - began < 1.0
            assert view.generation == 2 and not view.members
            expired = cluster.wait_for_sync(cond.member_expired("g", "lonely"))
            assert expired.time_ms == start + 45000  # fired at its own deadline, not at the end of the jump
            beat = client.request(HEARTBEAT, 3, {"group_id": "g", "generation_id": 1, "member_id": joined.member_id})
            assert beat.error_code == E.UNKNOWN_MEMBER_ID


def test_real_clock_refuses_advance(cluster):
    with pytest.raises(RuntimeError, match="virtual_time=True"):
        cluster.clock.advance(1)


def test_wait_for_timeout_names_the_condition(cluster):
    with pytest.raises(AssertionError, match=r"group 'nope' is Stable with 2 members"):
        cluster.wait_for_sync(cond.GroupState("nope", "Stable", members=2), timeout=0.2)


def test_a_parked_fetch_ends_at_once_when_its_leader_moves(cluster):
    leader = cluster.leader("t", 0)
    with RawClient(cluster.servers[leader].port) as client:
        client.send(
            FETCH,
            12,
            {
                "replica_id": -1,
                "max_wait_ms": 5000,
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "topics": [
                    {"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}
                ],
            },
        )
        time.sleep(0.2)  # parked: nothing to read yet
        start = time.monotonic()
        cluster.move_leader("t", 0, (leader + 1) % 3)
        answer = client.receive(FETCH, 12)
        assert time.monotonic() - start < 1.0  # not after max_wait_ms
    assert answer.responses[0].partitions[0].error_code == E.NOT_LEADER_OR_FOLLOWER


def test_acks0_produce_errors_close_the_connection_as_kafka_does(cluster):
    """No answer is owed for acks=0, so Kafka appends what it can and closes the connection
    on an error; a fault's error does the same."""
    cluster.move_leader("t", 1, cluster.leader("t", 0))
    cluster.faults.add(api="Produce", topic="t", partition=1, error="NOT_LEADER_OR_FOLLOWER", times=1)
    with leader_client(cluster) as client:
        client.send(PRODUCE, 9, {**produce_body(), "acks": 0})
        with pytest.raises(ConnectionError):
            client.receive(PRODUCE, 9)
    assert cluster.offsets("t", 0)[1] == 1 and cluster.offsets("t", 1)[1] == 0  # the rest was appended
    other = next(b for b in range(3) if b != cluster.leader("t", 0))
    with RawClient(cluster.servers[other].port) as client:  # not the leader: a real error, same outcome
        client.send(PRODUCE, 9, {**produce_body(partitions=(0,)), "acks": 0})
        with pytest.raises(ConnectionError):
            client.receive(PRODUCE, 9)
    with leader_client(cluster) as client:  # and a clean acks=0 produce gets no answer, connection kept
        client.send(PRODUCE, 9, {**produce_body(partitions=(0,)), "acks": 0})
        assert len(client.request(METADATA, 12, {"topics": None}).brokers) == 3
    reasons = [e.details["reason"] for e in cluster.events if e.kind == "connection_closed"]
    assert len(reasons) == 2 and "fault rule" in reasons[0] and "acks=0 produce failed" in reasons[1]
