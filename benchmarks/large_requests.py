"""How long a small request waits behind one large valid request on another connection.

    python benchmarks/large_requests.py [--count 50000] [--bomb-records 7700000] [--baseline /work/main]

Large requests: a Produce of one one-record batch to each of ``--count`` partitions, a
Metadata auto-creating ``--count`` topics, a CreateTopics (v7) of ``--count`` one-partition
topics (at most 10,000: Kafka's cap on the partitions one request may create), a
DeleteTopics (v6) of ``--count`` topics, and a record bomb: a Produce to 8 partitions, each a
zstd batch of ``--bomb-records`` 7-byte records of two layouts (7.7 million: 8.5 KB that
decompress to 54 MB, within every limit, so accepted). While each is handled, another connection sends a
small Metadata request every 10 ms; the table shows the large request's time and the small
ones' longest wait. Each cell runs in its own process with that tree's ``fakebroker`` first
on ``sys.path``, so ``--baseline`` (e.g. main) and this tree are measured side by side.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path

try:
    from ._measure import RawClient, run_cell
except ImportError:  # run as a script: this folder is first on sys.path
    from _measure import RawClient, run_cell

HERE = Path(__file__).resolve().parent.parent
CREATE_CAP = 10_000  # one-partition topics one CreateTopics may create
BOMB_BATCHES = 8  # partitions of the record bomb, each one batch


def bomb_batch(count: int) -> bytes:
    """A zstd v2 batch of ``count`` records alternating a null and an empty value."""
    import struct

    import crc32c

    from fakebroker.protocol import compression, records

    section = (b"\x0c\x00\x00\x00\x01\x01\x00\x0c\x00\x00\x00\x01\x00\x00" * (count // 2 + 1))[: 7 * count]
    payload = compression.compress(compression.ZSTD, section)
    header = bytearray(records.build_batch([(None, b"x")])[: records.RECORD_BATCH_OVERHEAD])
    header[8:12] = struct.pack(">i", records.RECORD_BATCH_OVERHEAD - 12 + len(payload))
    header[21:23] = struct.pack(">h", compression.ZSTD)
    header[23:27] = struct.pack(">i", count - 1)
    header[57:61] = struct.pack(">i", count)
    header[17:21] = struct.pack(">I", crc32c.crc32c(payload, crc32c.crc32c(bytes(header[21:]))))
    return bytes(header) + payload


def worker(kind: str, count: int) -> dict:
    from fakebroker.cluster import FakeCluster
    from fakebroker.protocol import records
    from fakebroker.protocol.primitives import ZERO_UUID

    per = 1000  # partitions per topic (a creation of more is refused)
    names = [f"wide-{t}" for t in range((count + per - 1) // per)]
    topics = {name: per for name in names} if kind == "produce" else {}
    if kind == "bomb":
        topics = {"bombed": BOMB_BATCHES}
    if kind == "delete":
        topics = {f"doomed-{i}": 1 for i in range(count)}
    with FakeCluster(topics=topics).run_in_thread() as cluster:
        port = cluster.servers[0].port
        if kind == "produce":
            batch = records.build_batch([(None, b"v")])
            parts = [{"index": i, "records": batch} for i in range(per)]
            data = [{"name": name, "partition_data": parts} for name in names]
            key, version = 0, 9
            body = {
                "acks": -1,
                "timeout_ms": 60_000,
                "transactional_id": None,
                "topic_data": data,
            }
        elif kind == "bomb":
            batch = bomb_batch(count)
            parts = [{"index": i, "records": batch} for i in range(BOMB_BATCHES)]
            key, version = 0, 9
            body = {
                "acks": -1,
                "timeout_ms": 60_000,
                "transactional_id": None,
                "topic_data": [{"name": "bombed", "partition_data": parts}],
            }
        elif kind == "metadata":
            key, version = 3, 12
            body = {"topics": [{"name": f"auto-{i}"} for i in range(count)], "allow_auto_topic_creation": True}
        elif kind == "create":
            key, version = 19, 7
            one = {"num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
            made = [{"name": f"made-{i}", **one} for i in range(min(count, CREATE_CAP))]
            body = {"topics": made, "timeout_ms": 60_000, "validate_only": False}
        else:
            key, version = 20, 6
            doomed = [{"name": name, "topic_id": ZERO_UUID} for name in topics]
            body = {"topics": doomed, "timeout_ms": 60_000}
        big, small = RawClient(port), RawClient(port)
        done = threading.Event()
        waits: list[float] = []

        def poll_small() -> None:
            while not done.is_set():
                start = time.perf_counter()
                small.call(3, 12, {"topics": [], "allow_auto_topic_creation": False})
                waits.append(time.perf_counter() - start)
                time.sleep(0.01)

        thread = threading.Thread(target=poll_small)
        start = time.perf_counter()
        thread.start()
        big.call(key, version, body)
        took = time.perf_counter() - start
        done.set()
        thread.join()
        big.close()
        small.close()
    return {"big_s": took, "worst_small_ms": max(waits) * 1000, "smalls": len(waits)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=50_000)
    parser.add_argument("--bomb-records", type=int, default=7_700_000, help="records in each batch of the bomb")
    parser.add_argument(
        "--only", action="append", help="run only these kinds (produce, metadata, create, delete, bomb)"
    )
    parser.add_argument("--baseline", help="another checkout to measure first (e.g. /work/main)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.count)))
        return
    trees = ([("baseline", Path(args.baseline))] if args.baseline else []) + [("this tree", HERE)]
    print(f"{'':<12}{'request':<32}{'large took s':>14}{'worst small wait ms':>22}{'smalls':>8}")
    for kind, label in (
        ("produce", f"Produce to {args.count:,} partitions"),
        ("metadata", f"Metadata creating {args.count:,}"),
        ("create", f"CreateTopics of {min(args.count, CREATE_CAP):,}"),
        ("delete", f"DeleteTopics of {args.count:,}"),
        ("bomb", f"Produce {BOMB_BATCHES} x {args.bomb_records / 1e6:.1f}M records"),
    ):
        if args.only and kind not in args.only:
            continue
        count = args.bomb_records if kind == "bomb" else args.count
        for name, tree in trees:
            r = run_cell(__file__, tree, "--worker", kind, "--count", str(count))
            print(f"{name:<12}{label:<32}{r['big_s']:>14.2f}{r['worst_small_ms']:>22.0f}{r['smalls']:>8}")


if __name__ == "__main__":
    main()
