"""The control endpoint bounds what one request can cost: a body nested too deep is a 400 (not a
RecursionError and 500), a request whose headers or body never finish is closed after a bounded
time (a slow client cannot hold a connection and a 1 MB buffer for ever), a declared body over
the limit is refused before it is read, and only so many bodies are read at once."""

from __future__ import annotations

import json
import socket
import time

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.http import ControlEndpoint
from fakebroker.http import server as http_server
from fakebroker.http.server import MAX_DEPTH, nesting

from .test_control_http import Endpoint


@pytest.fixture
def cluster():
    with FakeCluster(brokers=1).run_in_thread() as c:
        yield c


@pytest.fixture
def control(cluster):
    with ControlEndpoint(cluster) as endpoint:
        yield endpoint


def raw_request(control: ControlEndpoint, body: bytes, *, length: int | None = None) -> socket.socket:
    """A POST /faults whose Content-Length is ``length`` (default: the body's), headers and ``body`` sent."""
    sock = socket.create_connection(("127.0.0.1", control.port), timeout=10)
    head = (
        f"POST /faults HTTP/1.1\r\nHost: 127.0.0.1:{control.port}\r\nAuthorization: Bearer {control.token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body) if length is None else length}\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    return sock


def read_answer(sock: socket.socket) -> tuple[int, dict, bytes]:
    """(status, JSON body, raw head) of one answer; then the socket must be closed by the server."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, data
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.lower().split(b"\r\n")
    length = int(next(line.split(b":")[1] for line in lines if line.startswith(b"content-length")))
    while len(rest) < length:
        rest += sock.recv(65536)
    return int(head.split()[1]), json.loads(rest[:length]), head


def test_a_body_nested_100000_deep_is_a_400_not_a_500(control):
    api = Endpoint(control)
    deep = b"[" * 100_000 + b"]" * 100_000
    with raw_request(control, deep) as sock:
        status, payload, _ = read_answer(sock)
    assert status == 400
    assert payload == {"error": f"the body is JSON nested too deep: at most {MAX_DEPTH} levels"}
    # deeper than the limit but shallow enough for the parser: the same answer
    with raw_request(control, b'{"api": ' + b"[" * 40 + b"]" * 40 + b"}") as sock:
        assert read_answer(sock)[:2] == (400, payload)
    # the endpoint still serves
    assert api.ok("POST", "/faults", {"api": "Heartbeat", "error": "REBALANCE_IN_PROGRESS"})["api"]


def test_nesting_is_counted_without_recursion():
    assert nesting(1) == 0 and nesting([]) == 1 and nesting({"a": [1, {"b": []}]}) == 4
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert MAX_DEPTH < nesting(deep) <= MAX_DEPTH + 2  # stops counting past the limit


def test_a_body_that_never_completes_gets_408_and_the_connection_closes(control, monkeypatch):
    monkeypatch.setattr(http_server, "BODY_TIMEOUT_S", 0.5)
    started = time.monotonic()
    with raw_request(control, b'{"api', length=1_000_000) as sock:
        status, payload, head = read_answer(sock)
        took = time.monotonic() - started
        assert sock.recv(100) == b""  # closed: nothing more is held for this client
    assert status == 408 and payload == {"error": "the request body did not arrive within 0.5 s; send it whole"}
    assert b"connection: close" in head.lower()
    assert 0.4 < took < 5, took


def test_headers_that_never_complete_are_cut_off(cluster, monkeypatch):
    monkeypatch.setattr(http_server, "HEADERS_TIMEOUT_S", 0.5)
    with ControlEndpoint(cluster) as control:
        sock = socket.create_connection(("127.0.0.1", control.port), timeout=10)
        with sock:
            started = time.monotonic()
            sock.sendall(b"POST /faults HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            closed = None
            for _ in range(100):  # a header line every 0.1 s: data keeps coming, the headers never end
                try:
                    sock.sendall(b"X-Slow: 1\r\n")
                    sock.settimeout(0.1)
                    if sock.recv(100) == b"":
                        closed = time.monotonic() - started
                        break
                except TimeoutError:
                    continue
                except OSError:  # reset while sending
                    closed = time.monotonic() - started
                    break
        assert closed is not None and closed < 3, closed


def test_a_declared_body_over_the_limit_is_refused_before_it_is_read(control):
    with raw_request(control, b"{", length=http_server.MAX_BODY + 1) as sock:
        status, payload, _ = read_answer(sock)
        assert sock.recv(100) == b""
    assert status == 413 and payload == {"error": f"request body over {http_server.MAX_BODY} bytes"}


def test_bodies_are_read_a_bounded_number_at_a_time(control, monkeypatch):
    monkeypatch.setattr(http_server, "MAX_BODY_READERS", 1)
    monkeypatch.setattr(http_server, "BODY_TIMEOUT_S", 2.0)
    slow = raw_request(control, b'{"api', length=1000)  # holds the one reading turn for 2 s
    time.sleep(1.0)
    started = time.monotonic()
    body = json.dumps({"api": "Heartbeat", "error": "REBALANCE_IN_PROGRESS"}).encode()
    with slow, raw_request(control, body) as quick:
        assert read_answer(slow)[0] == 408
        status, payload, _ = read_answer(quick)
    assert status == 201, payload
    assert 0.5 < time.monotonic() - started < 5  # it waited for the slow body's turn to end
