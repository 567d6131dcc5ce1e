"""Every group request enters the core once, through the group service (issue 34): a traced
JoinGroup and a traced ConsumerGroupHeartbeat each call into ``core/groups/`` from a handler
exactly once (building the typed request aside), and no handler names a group type."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import anyio

from fakebroker.protocol import headers
from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.server.pipeline import Peer, Pipeline

from ..server.test_pipeline import join_payload, runtime

APIS = Path(__file__).resolve().parents[2] / "fakebroker" / "apis"
JOIN_GROUP, CONSUMER_GROUP_HEARTBEAT = 11, 68
GROUPS = "fakebroker.core.groups"
REQUESTS = "fakebroker.core.groups.requests"  # the typed requests' dataclass __init__


def consumer_heartbeat(correlation_id: int) -> bytes:
    body = {
        "group_id": "cg",
        "member_id": "m-1",
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": 30_000,
        "subscribed_topic_names": ["orders"],
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [],
    }
    return headers.encode_request(CONSUMER_GROUP_HEARTBEAT, 1, correlation_id, body, client_id="beater")


def entries_into_groups(pipeline: Pipeline, payload: bytes) -> tuple[list[str], bytes]:
    """The core/groups functions a handler called directly while ``payload`` was answered."""
    entered: list[str] = []

    def profile(frame, event, arg):
        if event != "call":
            return
        callee = frame.f_globals.get("__name__", "")
        if not callee.startswith(GROUPS) or callee == REQUESTS:
            return
        caller = frame.f_back
        if caller is not None and caller.f_globals.get("__name__", "").startswith("fakebroker.apis"):
            entered.append(f"{callee}.{frame.f_code.co_name}")

    async def main() -> bytes:
        sys.setprofile(profile)
        try:
            return await pipeline.process(payload, Peer("127.0.0.1:5555", "127.0.0.1"))
        finally:
            sys.setprofile(None)

    return entered, anyio.run(main, backend="trio")


def test_a_join_group_enters_the_group_service_once():
    pipeline = Pipeline(runtime(), 0)
    first = headers.decode_response(
        JOIN_GROUP, 9, anyio.run(pipeline.process, join_payload(1), Peer(), backend="trio")
    )[1]
    assert first.error_code == E.MEMBER_ID_REQUIRED
    entered, payload = entries_into_groups(pipeline, join_payload(2, first.member_id))
    joined = headers.decode_response(JOIN_GROUP, 9, payload)[1]
    assert joined.error_code == E.NONE and joined.generation_id == 1
    assert entered == ["fakebroker.core.groups.service.join"]


def test_a_consumer_group_heartbeat_enters_the_group_service_once():
    rt = runtime()
    rt.state.create_topic("orders", 2)
    pipeline = Pipeline(rt, 0)
    entered, payload = entries_into_groups(pipeline, consumer_heartbeat(1))
    beat = headers.decode_response(CONSUMER_GROUP_HEARTBEAT, 1, payload)[1]
    assert beat.error_code == E.NONE and beat.member_epoch > 0
    assert sorted(p for t in beat.assignment.topic_partitions for p in t.partitions) == [0, 1]
    assert entered == ["fakebroker.core.groups.service.consumer_heartbeat"]


def test_no_handler_names_a_group_type():
    """Which type a group is (classic, consumer, later share and streams) is the group
    service's question alone."""
    asked = re.compile(r"consumer_group\(|consumer_groups|\.classic\b|\.consumer\.|GroupState|ConsumerGroup\b")
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted(APIS.glob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if asked.search(line)
    ]
    assert found == []
