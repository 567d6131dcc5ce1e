"""What the benchmarks (and the long fuzz run in tests/server) share: resident memory, a raw
Kafka client that sends one request at a time, a Produce loop, a confluent-kafka producer's
rate, a median with its range, running a cell in a child process with another tree's ``fakebroker`` first on
``sys.path``, and the real Kafka broker of the conformance tests.

Benchmarks run both as ``python benchmarks/x.py`` and ``python -m benchmarks.x``; they import
this module with ``from ._measure import ...`` falling back to ``from _measure import ...``.
``fakebroker`` is imported inside functions so a child cell uses the tree it was started for.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def rss_mb(pid: int | str = "self") -> float:
    """Resident set size of a process (Linux ``/proc``), in MiB; NaN where it cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


class RawClient:
    """One loopback connection sending framed requests and reading whole answers, in order."""

    def __init__(self, port: int, *, nodelay: bool = True):
        self.sock = socket.create_connection(("127.0.0.1", port))
        if nodelay:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation = 0

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> None:
        from fakebroker.protocol import headers

        self.correlation += 1
        payload = headers.encode_request(api_key, version, self.correlation, body, client_id="bench")
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def receive(self) -> bytes:
        """The next answer's bytes (header included), without decoding them."""
        return self._exactly(struct.unpack(">i", self._exactly(4))[0])

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> bytes:
        self.send(api_key, version, body)
        return self.receive()

    def close(self) -> None:
        self.sock.close()

    def _exactly(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(min(n - len(out), 1 << 20))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            out += chunk
        return bytes(out)


def produce_rate(port: int, seconds: float, topic: str = "bench") -> float:
    """One-record acks=all Produce requests (v9) to partition 0 of ``topic``, one after
    another for ``seconds``; returns requests answered per second."""
    from fakebroker.protocol import records

    client = RawClient(port)
    body = {
        "acks": -1,
        "timeout_ms": 5000,
        "transactional_id": None,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": records.build_batch([(None, b"x" * 100)])}]}
        ],
    }
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        client.call(0, 9, body)
        count += 1
    client.close()
    return count / elapsed


def client_produce_rate(settings: dict[str, Any], records: int, topic: str = "bench") -> tuple[float, float]:
    """One confluent-kafka producer (``linger.ms=5``) sends ``records`` records of 100 bytes:
    (records/s, this process's CPU µs per record)."""
    from confluent_kafka import Producer

    producer = Producer({**settings, "linger.ms": 5})
    value = b"x" * 100
    cpu, began = time.process_time(), time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value=value)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(60) == 0
    return records / (time.perf_counter() - began), (time.process_time() - cpu) * 1e6 / records


def spread(values: list[float], digits: int = 0) -> str:
    """The median of ``values``, and their range when there are several."""
    median = f"{statistics.median(values):,.{digits}f}"
    if len(values) == 1:
        return median
    return f"{median} ({min(values):,.{digits}f}-{max(values):,.{digits}f})"


def run_cell(script: str, tree: Path, *args: str) -> dict[str, Any]:
    """Run ``script`` with ``args`` in a child process whose ``fakebroker`` is ``tree``'s; the
    child prints one JSON object as its last line, which is returned."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, script, *args], env=env, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def tests_importable() -> None:
    """Put the checkout on ``sys.path``, so ``tests`` (the conformance tests' helpers) imports."""
    root = Path(__file__).resolve().parent.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))


def real_kafka() -> Any:
    """The conformance tests' ``KafkaBroker`` (one KRaft Kafka 4.4 broker on loopback, a context
    manager), or a sentence saying why it cannot run here."""
    tests_importable()
    from tests.conformance import kafka_jars
    from tests.conformance.kafka_broker import KafkaBroker

    if shutil.which("java") is None:
        return "not measured: no java"
    if not kafka_jars.jars_dir().is_dir():
        return "not measured: no Kafka jars (python3 tests/conformance/kafka_jars.py fetches them)"
    return KafkaBroker
