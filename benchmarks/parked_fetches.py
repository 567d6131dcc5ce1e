"""Produce throughput while Fetch long polls are parked on *other* topics.

    python benchmarks/parked_fetches.py [--parked 0,100,1000] [--seconds 3] [--baseline /work/main]

A raw client on 127.0.0.1 sends one-record acks=all Produce requests one after another for
``--seconds`` and counts them, with 0 / 100 / 1,000 connections each holding a Fetch parked
(min_bytes 1, max_wait 60 s) on idle topics. Each (tree, parked) cell runs in its own
process with that tree's ``fakebroker`` first on ``sys.path``, so ``--baseline`` (another
checkout, e.g. main) and this tree are measured side by side in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
IDLE_TOPICS = 10
PRODUCE, FETCH = 0, 1


def _request(headers, api_key: int, version: int, correlation: int, body: dict) -> bytes:
    payload = headers.encode_request(api_key, version, correlation, body, client_id="bench")
    return struct.pack(">i", len(payload)) + payload


def _receive(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed")
            out += chunk
        return out

    return exactly(struct.unpack(">i", exactly(4))[0])


def worker(parked: int, seconds: float) -> dict:
    """Run in a child process: one cluster, ``parked`` parked fetches, then produce."""
    from fakebroker.cluster import FakeCluster
    from fakebroker.protocol import headers, records

    topics = {"bench": 1, **{f"idle-{i}": 1 for i in range(IDLE_TOPICS)}}
    with FakeCluster(topics=topics).run_in_thread() as cluster:
        port = cluster.servers[0].port
        fetchers = []
        for i in range(parked):
            sock = socket.create_connection(("127.0.0.1", port))
            part = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
            body = {
                "max_wait_ms": 60_000,
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [{"topic": f"idle-{i % IDLE_TOPICS}", "partitions": [part]}],
            }
            sock.sendall(_request(headers, FETCH, 12, 1, body))
            fetchers.append(sock)
        time.sleep(0.5 + parked / 1000)  # let every fetch reach the broker and park
        producer = socket.create_connection(("127.0.0.1", port))
        producer.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        batch = records.build_batch([(None, b"x" * 100)])
        body = {
            "acks": -1,
            "timeout_ms": 5000,
            "transactional_id": None,
            "topic_data": [{"name": "bench", "partition_data": [{"index": 0, "records": batch}]}],
        }
        count, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            count += 1
            producer.sendall(_request(headers, PRODUCE, 9, count, body))
            _receive(producer)
        producer.close()
        for sock in fetchers:
            sock.close()
    return {"rate": count / elapsed}


def run_cell(tree: Path, parked: int, seconds: float) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, __file__, "--worker", str(parked), "--seconds", str(seconds)],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])["rate"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parked", default="0,100,1000")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--baseline", help="another checkout to measure first (e.g. /work/main)")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(worker(args.worker, args.seconds)))
        return
    trees = ([("baseline", Path(args.baseline))] if args.baseline else []) + [("this tree", HERE)]
    counts = [int(n) for n in args.parked.split(",")]
    rows = {name: [run_cell(tree, n, args.seconds) for n in counts] for name, tree in trees}
    print(f"{'produce msg/s (acks=all)':<26}" + "".join(f"{f'{n} parked':>14}" for n in counts))
    for name, rates in rows.items():
        print(f"{name:<26}" + "".join(f"{r:>14,.0f}" for r in rates))


if __name__ == "__main__":
    main()
