"""The bounded event log as the faces see it: the dropped count in the facade, ``/events`` and
the timeline, and pending ``/wait`` calls that do not hold producing back."""

from __future__ import annotations

import json
import threading
import urllib.request

from fakebroker.cluster import FakeCluster
from fakebroker.core import events as ev
from fakebroker.http import ControlEndpoint
from fakebroker.protocol import records as rec
from fakebroker.timeline import timeline

from ..raw_client import RawClient

PRODUCE = 0


def _call(control: ControlEndpoint, method: str, path: str, body=None, timeout: float = 20):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(control.url + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {control.token}")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


def test_a_small_log_drops_the_oldest_events_and_every_face_says_how_many():
    with FakeCluster(event_log_size=5).run_in_thread() as cluster, ControlEndpoint(cluster) as control:
        cluster.call(lambda: [cluster.state.events.append(ev.FaultsCleared()) for _ in range(20)])
        total = cluster.event_count
        assert cluster.events_dropped == total - 5 and len(cluster.events) == 5
        assert [e.seq for e in cluster.events] == list(range(total - 4, total + 1))
        assert [e.seq for e in cluster.events_since(total - 2)] == [total - 1, total]
        page = _call(control, "GET", "/events")
        assert page["dropped"] == total - 5 and [e["seq"] for e in page["events"]][0] == total - 4
        assert timeline(cluster).startswith(f"({total - 5} earlier events dropped")


def test_pending_waits_do_not_hold_producing_back():
    with FakeCluster(topics={"t": 1}).run_in_thread() as cluster, ControlEndpoint(cluster) as control:
        cluster.call(lambda: [cluster.state.events.append(ev.FaultsCleared()) for _ in range(50_000)])
        answers: list[str] = []

        def wait() -> None:
            body = {"condition": "event", "kind": "member_expired", "details": {"group": "never"}, "timeout": 30}
            try:
                _call(control, "POST", "/wait", body, timeout=40)
                answers.append("answered")
            except Exception as exc:  # 408 when it gives up, or the cluster stopping under it
                answers.append(type(exc).__name__)

        threads = [threading.Thread(target=wait, daemon=True) for _ in range(20)]
        for thread in threads:
            thread.start()
        batch = rec.build_batch([(None, b"v")])
        body = {
            "acks": -1,
            "timeout_ms": 5000,
            "transactional_id": None,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}],
        }
        with RawClient(cluster.servers[0].port) as client:
            for _ in range(300):
                assert client.request(PRODUCE, 9, body).responses[0].partition_responses[0].error_code == 0
        # every produce was answered while all 20 waits were still pending (each waits 30 s)
        assert answers == [] and cluster.offsets("t", 0)[1] == 300
