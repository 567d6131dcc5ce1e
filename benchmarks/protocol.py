"""Encode/decode rates of the protocol layer for the messages a broker handles most.

    python benchmarks/protocol.py [--seconds 0.5]

Prints one table: messages/s and MB/s for encoding and decoding each message, and for
the record batch inside Produce/Fetch (building and reading 1,000 records). Where the
independent ``kio`` package is installed (it is in the test extra), its rates on the very
same bytes are printed beside ours as a baseline from the same run (compare ratios, not
absolute numbers).
"""

from __future__ import annotations

import argparse
import io
import time
import uuid
from collections.abc import Callable

from rich.console import Console
from rich.table import Table

from fakebroker.protocol import data, records
from fakebroker.protocol.messages import request_type, response_type


def rate(fn: Callable[[], object], seconds: float) -> float:
    """Calls per second of ``fn`` over about ``seconds`` (after one warm-up call)."""
    fn()
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        fn()
        n += 1
    return n / elapsed


def batch_of(n: int) -> bytes:
    return records.build_batch([(f"key-{i}".encode(), b"v" * 100) for i in range(n)], base_timestamp=1_700_000_000_000)


def cases() -> list[tuple[str, object, int, object]]:
    batch = batch_of(1000)
    produce = request_type(0).new(
        acks=-1, timeout_ms=30000, topic_data=[{"name": "orders", "partition_data": [{"index": 0, "records": batch}]}]
    )
    fetch = response_type(1).new(
        responses=[
            {
                "topic": "orders",
                "partitions": [
                    {
                        "partition_index": 0,
                        "high_watermark": 1000,
                        "last_stable_offset": 1000,
                        "log_start_offset": 0,
                        "records": batch,
                    }
                ],
            }
        ]
    )
    metadata = response_type(3).new(
        brokers=[{"node_id": i, "host": "127.0.0.1", "port": 9092 + i} for i in range(3)],
        cluster_id="bench",
        controller_id=0,
        topics=[
            {
                "name": f"topic-{t}",
                "topic_id": uuid.UUID(int=t + 1),
                "partitions": [
                    {
                        "partition_index": p,
                        "leader_id": p % 3,
                        "leader_epoch": 0,
                        "replica_nodes": [p % 3],
                        "isr_nodes": [p % 3],
                    }
                    for p in range(10)
                ],
            }
            for t in range(100)
        ],
    )
    subscription = data.encode_subscription(["orders", "payments"], version=1)
    join = response_type(11).new(
        generation_id=5,
        protocol_type="consumer",
        protocol_name="range",
        leader="member-0",
        member_id="member-0",
        members=[{"member_id": f"member-{i}", "metadata": subscription} for i in range(100)],
    )
    return [
        ("Produce request, 1,000 records", request_type(0), 9, produce),
        ("Fetch response, 1,000 records", response_type(1), 12, fetch),
        ("Metadata response, 100 topics x 10", response_type(3), 12, metadata),
        ("JoinGroup response, 100 members", response_type(11), 7, join),
    ]


KIO_MODULES = {0: "produce", 1: "fetch", 3: "metadata", 11: "join_group"}


def kio_codec(mt, version: int):
    """kio's reader and writer for the same message, or None when kio is not installed.
    kio reads our bytes into its own entity and writes that entity back: no conversion."""
    try:
        import importlib

        from kio.serial import entity_reader, entity_writer
    except ImportError:
        return None
    module = importlib.import_module(f"kio.schema.{KIO_MODULES[mt.api_key]}.v{version}.{mt.kind}")
    cls = getattr(module, mt.name)
    return entity_reader(cls), entity_writer(cls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=0.5, help="time per measurement")
    args = parser.parse_args()
    table = Table(title="fakebroker protocol layer (kio: the independent kio package on the same bytes, same run)")
    for col in (
        "message",
        "version",
        "bytes",
        "encode msg/s",
        "encode MB/s",
        "decode msg/s",
        "decode MB/s",
        "kio encode msg/s",
        "kio decode msg/s",
    ):
        table.add_column(col, justify="right" if col != "message" else "left")
    for name, mt, version, msg in cases():
        encoded = mt.encode(msg, version)
        enc = rate(lambda: mt.encode(msg, version), args.seconds)
        dec = rate(lambda: mt.decode(encoded, version), args.seconds)
        size = len(encoded)
        kio_enc = kio_dec = "-"
        codec = kio_codec(mt, version)
        if codec is not None:
            read, write = codec
            entity, _ = read(encoded, 0)
            check = io.BytesIO()
            write(check, entity)
            assert check.getvalue() == encoded, "kio must agree on the bytes for a fair comparison"
            kio_enc = f"{rate(lambda: write(io.BytesIO(), entity), args.seconds):,.0f}"
            kio_dec = f"{rate(lambda: read(encoded, 0), args.seconds):,.0f}"
        table.add_row(
            name,
            f"v{version}",
            f"{size:,}",
            f"{enc:,.0f}",
            f"{enc * size / 1e6:,.1f}",
            f"{dec:,.0f}",
            f"{dec * size / 1e6:,.1f}",
            kio_enc,
            kio_dec,
        )
    batch = batch_of(1000)
    build = rate(lambda: batch_of(1000), args.seconds)
    read = rate(lambda: records.read_batches(batch), args.seconds)
    walk = rate(lambda: list(records.iter_batch_headers(batch)), args.seconds)
    validate = rate(lambda: records.validate_produce_records(batch, produce_version=9), args.seconds)
    size = len(batch)
    table.add_row(
        "RecordBatch build, 1,000 records",
        "magic 2",
        f"{size:,}",
        f"{build:,.0f}",
        f"{build * size / 1e6:,.1f}",
        "",
        "",
        "",
        "",
    )
    table.add_row(
        "RecordBatch read (all records)",
        "magic 2",
        f"{size:,}",
        "",
        "",
        f"{read:,.0f}",
        f"{read * size / 1e6:,.1f}",
        "",
        "",
    )
    table.add_row(
        "RecordBatch header walk (hot path)",
        "magic 2",
        f"{size:,}",
        "",
        "",
        f"{walk:,.0f}",
        f"{walk * size / 1e6:,.1f}",
        "",
        "",
    )
    table.add_row(
        "Produce-time validation",
        "magic 2",
        f"{size:,}",
        "",
        "",
        f"{validate:,.0f}",
        f"{validate * size / 1e6:,.1f}",
        "",
        "",
    )
    Console(width=150).print(table)


if __name__ == "__main__":
    main()
