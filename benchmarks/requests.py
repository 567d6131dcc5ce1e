"""Request round trips per second: fakebroker vs librdkafka's mock cluster vs a bare trio floor.

    python benchmarks/requests.py [--seconds 2] [--runs 3] [--baseline /work/main]

A raw client on 127.0.0.1 (one connection, one request in flight, TCP_NODELAY) sends, for
``--seconds`` each: single-record acks=all Produce requests (a 100-byte value, linger 0),
Produce requests of one 1,000-record batch (shown as records/s), Metadata requests for one
topic, and Heartbeat requests for an unknown member (an error answer, on every server).

Servers, each in its own process so the client never shares their interpreter: fakebroker
from this tree (and from ``--baseline``, another checkout, side by side), librdkafka's mock
cluster (``test.mock.num.brokers``, inside a confluent-kafka Producer; the client talks to the
partition's leader) and the *floor*: a bare trio server that reads each frame and answers
with a canned response of the same API and version (correlation id patched in) -- what any
trio server pays for framing and sockets alone. Targets are measured interleaved, ``--runs``
times; the table shows medians. The last line is ``produce_requests_ratio_floor: X``, this
tree's single-record produce rate over the floor's.

``--one-core`` pins every server and the client to one CPU. On this kind of shared VM a
request that wakes a server sleeping on another core costs that server 30-45 µs of CPU (the
floor's 16 µs of work per round trip becomes 49): the default run's floor is mostly that
cost. Pinned, a round trip costs the client and the server their own work, so the ratios
there compare the servers' Python work alone.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
TOPIC = "bench"
PRODUCE, METADATA, HEARTBEAT, API_VERSIONS = 0, 3, 12, 18
WANTED = {PRODUCE: 9, METADATA: 12, HEARTBEAT: 4}  # capped by what the server supports
KINDS = ["produce 1 rec", "produce 1000 rec", "metadata", "heartbeat"]


# ------------------------------------------------------------------------------------------
# servers (child processes): print "ADDR host:port" then serve until stdin closes
# ------------------------------------------------------------------------------------------


def serve_fakebroker() -> None:
    from fakebroker.cluster import FakeCluster

    with FakeCluster(topics={TOPIC: 1}).run_in_thread() as cluster:
        print(f"ADDR 127.0.0.1:{cluster.servers[0].port}", flush=True)
        sys.stdin.read()


def serve_mock() -> None:
    from confluent_kafka import Producer

    quiet = {"log_level": 3}
    mock = Producer({"test.mock.num.brokers": 3, **quiet})
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in mock.list_topics(timeout=10).brokers.values())
    warm = Producer({"bootstrap.servers": bootstrap, **quiet})
    warm.produce(TOPIC, b"warm")  # the mock auto-creates the topic
    warm.flush(10)
    metadata = warm.list_topics(TOPIC, timeout=10)
    broker = metadata.brokers[metadata.topics[TOPIC].partitions[0].leader]
    print(f"ADDR {broker.host}:{broker.port}", flush=True)
    sys.stdin.read()
    del warm, mock


def serve_floor() -> None:
    import trio

    from fakebroker.protocol import headers

    produce = {
        "responses": [
            {
                "name": TOPIC,
                "partition_responses": [{"index": 0, "error_code": 0, "base_offset": 0, "log_start_offset": 0}],
            }
        ],
        "throttle_time_ms": 0,
    }
    bodies = {PRODUCE: produce, METADATA: {"brokers": [], "topics": []}, HEARTBEAT: {"error_code": 0}}
    bodies[API_VERSIONS] = {
        "error_code": 0,
        "api_keys": [{"api_key": k, "min_version": 0, "max_version": v} for k, v in WANTED.items()],
    }
    canned: dict[tuple[int, int], bytes] = {}

    async def connection(stream) -> None:
        buf = b""
        while True:
            while len(buf) < 4 or len(buf) < 4 + int.from_bytes(buf[:4], "big"):
                chunk = await stream.receive_some(1 << 16)
                if not chunk:
                    return
                buf += chunk
            size = int.from_bytes(buf[:4], "big")
            frame, buf = buf[4 : 4 + size], buf[4 + size :]
            key, version = struct.unpack_from(">hh", frame)
            if (key, version) not in canned:
                payload = headers.encode_response(key, version, 0, bodies[key])
                canned[key, version] = struct.pack(">i", len(payload)) + payload
            answer = canned[key, version]
            await stream.send_all(answer[:4] + frame[4:8] + answer[8:])  # the request's correlation id

    async def main() -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        print(f"ADDR 127.0.0.1:{listeners[0].socket.getsockname()[1]}", flush=True)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, connection, listeners)
            await trio.to_thread.run_sync(sys.stdin.read)
            nursery.cancel_scope.cancel()

    trio.run(main)


# ------------------------------------------------------------------------------------------
# the client
# ------------------------------------------------------------------------------------------


class Client:
    def __init__(self, addr: str) -> None:
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        from fakebroker.protocol import headers

        self.headers = headers
        reply = self.call(self.frame(API_VERSIONS, 0, {}))
        _, body = headers.decode_response(API_VERSIONS, 0, reply)
        supported = {k.api_key: k.max_version for k in body.api_keys}
        self.versions = {key: min(want, supported[key]) for key, want in WANTED.items()}

    def frame(self, key: int, version: int, body: dict) -> bytes:
        payload = self.headers.encode_request(key, version, 7, body, client_id="bench")
        return struct.pack(">i", len(payload)) + payload

    def call(self, frame: bytes) -> bytes:
        self.sock.sendall(frame)
        head = self.sock.recv(4, socket.MSG_WAITALL)
        size = struct.unpack(">i", head)[0]
        out = bytearray()
        while len(out) < size:
            out += self.sock.recv(size - len(out))
        return bytes(out)

    def requests(self) -> dict[str, tuple[bytes, int]]:
        from fakebroker.protocol import records

        v = self.versions

        def produce(n: int) -> bytes:
            batch = records.build_batch([(None, b"x" * 100)] * n)
            part = {"index": 0, "records": batch}
            body = {
                "acks": -1,
                "timeout_ms": 5000,
                "transactional_id": None,
                "topic_data": [{"name": TOPIC, "partition_data": [part]}],
            }
            frame = self.frame(PRODUCE, v[PRODUCE], body)
            _, answer = self.headers.decode_response(PRODUCE, v[PRODUCE], self.call(frame))
            error = answer.responses[0].partition_responses[0].error_code
            if error:
                raise RuntimeError(f"produce answered with error {error}")
            return frame

        heartbeat = {"group_id": "bench-group", "generation_id": 1, "member_id": "nobody", "group_instance_id": None}
        return {
            "produce 1 rec": (produce(1), 1),
            "produce 1000 rec": (produce(1000), 1000),
            "metadata": (self.frame(METADATA, v[METADATA], {"topics": [{"name": TOPIC, "topic_id": None}]}), 1),
            "heartbeat": (self.frame(HEARTBEAT, v[HEARTBEAT], heartbeat), 1),
        }


def rate(client: Client, frame: bytes, seconds: float) -> float:
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        client.call(frame)
        count += 1
    return count / elapsed


def start_server(kind: str, tree: Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", kind],
        env=env,
        cwd=tree,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("ADDR "):
            return proc, line.split()[1]
    raise RuntimeError(f"{kind} server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", help="another checkout measured side by side (e.g. /work/main)")
    parser.add_argument("--one-core", action="store_true", help="pin the servers and the client to one CPU")
    parser.add_argument("--serve", choices=["fakebroker", "mock", "floor"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        {"fakebroker": serve_fakebroker, "mock": serve_mock, "floor": serve_floor}[args.serve]()
        return
    targets = [("fakebroker", "fakebroker", HERE)]
    if args.baseline:
        targets.insert(0, ("fakebroker baseline", "fakebroker", Path(args.baseline)))
    targets += [("librdkafka mock", "mock", HERE), ("trio floor", "floor", HERE)]
    servers, clients = [], {}
    if args.one_core:  # before the servers start: they and their threads inherit it
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    try:
        for name, kind, tree in targets:
            proc, addr = start_server(kind, tree)
            servers.append(proc)
            client = Client(addr)
            clients[name] = (client, client.requests())
        samples: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.runs):
            for kind in KINDS:  # interleaved: every target once per kind per run
                for name, (client, frames) in clients.items():
                    frame, records_each = frames[kind]
                    samples.setdefault((name, kind), []).append(rate(client, frame, args.seconds) * records_each)
    finally:
        for proc in servers:
            proc.communicate("")
    median = {key: statistics.median(values) for key, values in samples.items()}
    print(f"{f'round trips/s (median of {args.runs})':<30}" + "".join(f"{k:>18}" for k in KINDS))
    for name, (client, _) in clients.items():
        print(f"{name:<30}" + "".join(f"{median[name, k]:>18,.0f}" for k in KINDS))
    print(
        "(produce 1000 rec in records/s; versions: "
        + ", ".join(
            f"{name} produce v{c.versions[PRODUCE]} metadata v{c.versions[METADATA]} heartbeat v{c.versions[HEARTBEAT]}"
            for name, (c, _) in clients.items()
        )
        + ")"
    )
    for name in clients:
        if name in ("fakebroker", "fakebroker baseline"):
            mock = median[name, "produce 1 rec"] / median["librdkafka mock", "produce 1 rec"]
            floor = median[name, "produce 1 rec"] / median["trio floor", "produce 1 rec"]
            batch = median[name, "produce 1000 rec"] / median["librdkafka mock", "produce 1000 rec"]
            print(f"{name}: produce 1 rec {mock:.2f}x the mock, {floor:.2f}x the floor; 1000 rec {batch:.2f}x the mock")
    ratio = median["fakebroker", "produce 1 rec"] / median["trio floor", "produce 1 rec"]
    print(f"produce_requests_ratio_floor: {ratio:.3f}")


if __name__ == "__main__":
    main()
