"""A structure-aware request fuzzer: valid requests of every served API and version, built from
the schemas, then mutated where the structure is (array counts, string/bytes lengths, compact
varints, tagged-field sections, record batches behind a recomputed CRC-32C), sent to a live
cluster while an acks=all producer runs beside them.

Used by ``test_garbage_frames.py`` (a bounded CI run) and runnable on its own for long runs::

    python -m tests.server.fuzz_frames --frames 1000000 --seed 7
"""

from __future__ import annotations

import argparse
import collections
import random
import socket
import struct
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import crc32c

from benchmarks._measure import rss_mb
from fakebroker.apis.registry import served
from fakebroker.protocol import headers
from fakebroker.protocol import primitives as p
from fakebroker.protocol.messages import request_type
from fakebroker.protocol.records.batch import build_batch
from fakebroker.protocol.schema import StructCodec

BYSTANDER_TOPIC = "bystander"  # never named by the fuzzer
FUZZ_TOPICS = ["fz", "fz2"]
_NAMES = ["fz", "fz2", "g", "g2", "tx", "", "fz-new", "__consumer_offsets", "x" * 300]
_WAITS = ("timeout", "wait", "_ms", "delay")
KNOWN_TOPIC_IDS: list[uuid.UUID] = []  # the fuzzed topics' ids, set by run(): requests by id reach them too


# ---------------------------------------------------------------- valid random requests


def _int(rng: random.Random, size: int, attr: str) -> int:
    if any(w in attr for w in _WAITS):
        return rng.choice([0, 1, 10, 50, -1])
    if attr in ("index", "partition_index", "partition", "partition_id") and rng.random() < 0.7:
        return rng.choice([0, 1])  # partitions that exist
    if attr == "acks" and rng.random() < 0.8:
        return rng.choice([-1, 1])
    bits = size * 8
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    r = rng.random()
    if r < 0.6:
        return rng.choice([0, 1, -1, 2, 3, 5])
    if r < 0.85:
        return rng.randint(-10, 100)
    return rng.choice([low, high, low + 1, high - 1])


def _records(rng: random.Random) -> bytes:
    n = rng.randint(1, 4)
    return build_batch(
        [(None, f"fz-{rng.random()}".encode())] * n,
        compression=rng.choice([0, 0, 1, 2, 3, 4]),
        producer_id=rng.choice([-1, -1, 1, 1000]),
        producer_epoch=rng.choice([-1, 0]),
        base_sequence=rng.choice([-1, 0]),
        transactional=rng.random() < 0.1,
    )


def random_value(rng: random.Random, sub: Any, attr: str, depth: int = 0) -> Any:
    if isinstance(sub, StructCodec):
        values = {a: random_value(rng, s, a, depth + 1) for a, s in sub.fixed}
        for a, s, _default in sub.tagged.values():
            if rng.random() < 0.5:
                values[a] = random_value(rng, s, a, depth + 1)
        obj = sub.cls(**values)
        if sub.flexible and rng.random() < 0.1:
            obj._unknown_tagged_fields = {rng.randint(50, 200): rng.randbytes(rng.randint(0, 6))}
        return obj
    if isinstance(sub, p.NullableStruct):
        return None if rng.random() < 0.2 else random_value(rng, sub.subcon, attr, depth)
    if isinstance(sub, p.KArray):
        if sub.nullable and rng.random() < 0.1:
            return None
        n = rng.choice([0, 1, 1, 2, 3]) if depth < 3 else rng.choice([0, 1])
        return [random_value(rng, sub.element, attr, depth + 1) for _ in range(n)]
    if isinstance(sub, p.KString):
        if sub.nullable and rng.random() < 0.15:
            return None
        if attr in ("name", "topic", "topic_name") and rng.random() < 0.6:
            return rng.choice(FUZZ_TOPICS)  # existing topics, so the checks past the name run too
        if rng.random() < 0.7:
            return rng.choice(_NAMES)
        return "".join(rng.choice("abcé-_.") for _ in range(rng.randint(0, 10)))
    if isinstance(sub, p.KBytes):
        if sub.nullable and rng.random() < 0.15:
            return None
        if attr == "records":
            return _records(rng)
        return rng.randbytes(rng.randint(0, 12))
    if isinstance(sub, p.KBool):
        return rng.random() < 0.5
    if isinstance(sub, p.KUuid):
        if "topic_id" in attr and KNOWN_TOPIC_IDS and rng.random() < 0.6:
            return rng.choice(KNOWN_TOPIC_IDS)
        return rng.choice([uuid.UUID(int=0), uuid.UUID(int=rng.getrandbits(128))])
    if isinstance(sub, p.KNumber):
        if sub.packer.format[-1] == "d":
            return rng.choice([0.0, 1.0, -1.0, 1e300])
        if sub.packer.format[-1] in "HI":
            return rng.choice([0, 1, 2**16 - 1])
        return _int(rng, sub.size, attr)
    raise TypeError(f"no generator for {sub!r}")


# ---------------------------------------------------------------- where the structure is


@dataclass
class Point:
    pos: int  # offset in the body
    kind: str  # "i16" | "i32" (a length or count), "uvarint" (compact length or count), "tags", "nullstruct"
    width: int
    value: int


@dataclass
class Layout:
    points: list[Point] = field(default_factory=list)
    batches: list[tuple[int, int]] = field(default_factory=list)  # (pos, length) of records fields


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    start = pos
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos - start


def walk(sub: Any, data: bytes, pos: int, out: Layout, attr: str = "") -> int:
    """Read ``data`` at ``pos`` as ``sub`` does, noting every length, count and tag section."""
    if isinstance(sub, StructCodec):
        for a, s in sub.fixed:
            pos = walk(s, data, pos, out, a)
        if sub.flexible:
            n, w = _uvarint(data, pos)
            out.points.append(Point(pos, "tags", w, n))
            pos += w
            for _ in range(n):
                _, w = _uvarint(data, pos)
                pos += w
                size, w = _uvarint(data, pos)
                out.points.append(Point(pos, "uvarint", w, size))
                pos += w + size
        return pos
    if isinstance(sub, p.NullableStruct):
        out.points.append(Point(pos, "nullstruct", 1, data[pos]))
        if data[pos] >= 0x80:
            return pos + 1
        return walk(sub.subcon, data, pos + 1, out, attr)
    if isinstance(sub, p._Length):
        if sub.compact:
            n, w = _uvarint(data, pos)
            out.points.append(Point(pos, "uvarint", w, n))
            n -= 1
        elif sub.wide:
            w, n = 4, struct.unpack_from(">i", data, pos)[0]
            out.points.append(Point(pos, "i32", 4, n))
        else:
            w, n = 2, struct.unpack_from(">h", data, pos)[0]
            out.points.append(Point(pos, "i16", 2, n))
        pos += w
        if n < 0:
            return pos
        if isinstance(sub, p.KArray):
            for _ in range(n):
                pos = walk(sub.element, data, pos, out, attr)
            return pos
        if attr == "records" and n:
            out.batches.append((pos, n))
        return pos + n
    if isinstance(sub, p.KNumber):
        return pos + sub.size
    if isinstance(sub, p.KUuid):
        return pos + 16
    if isinstance(sub, p.KBool):
        return pos + 1
    raise TypeError(f"cannot walk {sub!r}")


# ---------------------------------------------------------------- mutations


def _overlong(value: int, width: int) -> bytes:
    out = bytearray()
    for i in range(width):
        b = (value >> (7 * i)) & 0x7F
        out.append(b | (0x80 if i < width - 1 else 0))
    return bytes(out)


def mutate_point(rng: random.Random, body: bytes, pt: Point) -> tuple[bytes, str]:
    left = len(body) - pt.pos
    if pt.kind in ("i16", "i32"):
        fmt, top = (">h", 0x7FFF) if pt.kind == "i16" else (">i", 0x7FFFFFFF)
        new = rng.choice([-2, -1, pt.value + 1, max(pt.value - 1, -(top + 1)), top, min(left + 1, top), -(top + 1)])
        new = max(-(top + 1), min(top, new))
        repl = struct.pack(fmt, new)
    elif pt.kind == "nullstruct":
        repl = bytes([rng.choice([0x00, 0x02, 0x7F, 0x80, 0xFE])])
    else:  # uvarint: lengths, counts, tag sections
        choice = rng.randrange(6)
        if choice == 0:
            repl = _overlong(pt.value, rng.randint(pt.width + 1, 5))  # overlong but in range
        elif choice == 1:
            repl = _overlong(pt.value, rng.randint(6, 10))  # too long for a varint32
        elif choice == 2:
            repl = b"\xff\xff\xff\xff\x0f"  # 2**32 - 1
        elif choice == 3:
            repl = p.uvarint_bytes(pt.value + 1)
        elif choice == 4:
            repl = p.uvarint_bytes(max(pt.value - 1, 0))
        else:
            repl = p.uvarint_bytes(rng.choice([0, left, left + 1, 2**31 - 1, 2**31]))
    return body[: pt.pos] + repl + body[pt.pos + pt.width :], pt.kind


def mutate_batch(rng: random.Random, body: bytes, pos: int, length: int) -> tuple[bytes, str]:
    """Change a header field of the record batch at body[pos:pos+length], then fix its CRC."""
    batch = bytearray(body[pos : pos + length])
    if len(batch) < 61:
        return body, "batch-short"
    what = rng.choice(["batch_length", "attributes", "count", "last_offset_delta", "magic", "record_len", "timestamps"])
    if what == "batch_length":
        struct.pack_into(">i", batch, 8, rng.choice([-1, 0, 48, len(batch) - 12 + 1, len(batch) - 12 - 1, 2**31 - 1]))
    elif what == "attributes":
        struct.pack_into(
            ">h",
            batch,
            21,
            rng.choice([1, 2, 3, 4, 5, 6, 7, 0x08, 0x10, 0x20, 0x30, 0x40, -1, 0x7FFF])
            ^ (batch[22] & 0x07 if rng.random() < 0.5 else 0),
        )
    elif what == "count":
        struct.pack_into(">i", batch, 57, rng.choice([-1, 0, 2**31 - 1, struct.unpack_from(">i", batch, 57)[0] + 1]))
    elif what == "last_offset_delta":
        struct.pack_into(">i", batch, 23, rng.choice([-1, 2**31 - 1, 100]))
    elif what == "magic":
        batch[16] = rng.choice([0, 1, 3, 255])
    elif what == "timestamps":
        struct.pack_into(">qq", batch, 27, rng.choice([-(2**63), 2**63 - 1, -2]), rng.choice([-1, 2**63 - 1]))
    else:  # the first record's length (a zigzag varint right after the header)
        batch[61] = rng.choice([0x01, 0x7F, 0xFE, 0x00])
    if batch[16] == 2:
        struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return body[:pos] + bytes(batch) + body[pos + length :], f"batch-{what}"


def mutate(rng: random.Random, body: bytes, layout: Layout) -> tuple[bytes, str]:
    r = rng.random()
    if r < 0.15:
        return body, "valid"
    if r < 0.25:
        cut = rng.randrange(len(body)) if body else 0
        return body[:cut], "truncated"
    if layout.batches and r < 0.55:
        pos, length = rng.choice(layout.batches)
        return mutate_batch(rng, body, pos, length)
    tags = [pt for pt in layout.points if pt.kind == "tags"]
    if tags and r < 0.6:
        pt = rng.choice(tags)  # a tagged section with one more field: duplicate, known tag junk or a lying size
        extra = p.uvarint_bytes(rng.choice([0, 1, 2, 200])) + rng.choice([b"\x00", b"\x05ab", b"\xff\xff\xff\xff\x0f"])
        repl = p.uvarint_bytes(pt.value + 1) + extra
        return body[: pt.pos] + repl + body[pt.pos + pt.width :], "tags-extra"
    if not layout.points:
        return body, "valid"
    return mutate_point(rng, body, rng.choice(layout.points))


# ---------------------------------------------------------------- the run


@dataclass
class Stats:
    frames: int = 0
    per_api: collections.Counter = field(default_factory=collections.Counter)
    per_mutation: collections.Counter = field(default_factory=collections.Counter)
    answered: int = 0
    errors_answered: int = 0
    closed: int = 0
    no_answer: int = 0  # no answer in time (acks=0, or a parked request): connection dropped


def build_frame(rng: random.Random, windows: dict[int, tuple[int, int]], correlation_id: int):
    key = 0 if rng.random() < 0.25 and 0 in windows else rng.choice(sorted(windows))  # Produce carries batches
    version = rng.randint(*windows[key])
    codec = request_type(key).codec(version)
    body_value = random_value(rng, codec, "")
    payload = headers.encode_request(key, version, correlation_id, body_value, client_id="fuzz")
    header_len = len(payload) - len(request_type(key).encode(body_value, version))
    header, body = payload[:header_len], payload[header_len:]
    layout = Layout()
    walk(codec, body, 0, layout)
    body, how = mutate(rng, body, layout)
    expect_answer = not (key == 0 and getattr(body_value, "acks", 1) == 0)
    return key, version, header + body, how, expect_answer


class Conn:
    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=2)
        self.sock.settimeout(1.0)

    def read_frame(self) -> bytes | None:
        buf = b""
        while len(buf) < 4:
            chunk = self.sock.recv(4 - len(buf))
            if not chunk:
                return None
            buf += chunk
        size = struct.unpack(">i", buf)[0]
        out = b""
        while len(out) < size:
            chunk = self.sock.recv(min(65536, size - len(out)))
            if not chunk:
                return None
            out += chunk
        return out


def fuzz(
    port: int, frames: int, seed: int, windows: dict[int, tuple[int, int]], stats: Stats, seconds: float | None = None
) -> None:
    rng = random.Random(seed)
    conn: Conn | None = None
    stop_at = time.monotonic() + seconds if seconds else None
    for i in range(frames):
        if i % 50_000 == 0 and i:
            print(
                f"{i} frames, {stats.closed} closed, {stats.answered} answered, rss {rss_mb():.0f} MB", file=sys.stderr
            )
            if stop_at is not None and time.monotonic() > stop_at:
                break
        if conn is None:
            conn = Conn(port)
        key, version, payload, how, expect = build_frame(rng, windows, i + 1)
        stats.frames += 1
        stats.per_api[key] += 1
        stats.per_mutation[how] += 1
        try:
            conn.sock.sendall(struct.pack(">i", len(payload)) + payload)
            if not expect and how == "valid":
                continue
            answer = conn.read_frame()
        except TimeoutError:
            stats.no_answer += 1
            conn.sock.close()
            conn = None
            continue
        except OSError:
            answer = None
        if answer is None:
            stats.closed += 1
            conn.sock.close()
            conn = None
            continue
        stats.answered += 1
        try:
            header, body = headers.decode_response(key, version, answer)
        except Exception as exc:  # the broker answered something that cannot be read
            raise AssertionError(f"undecodable answer to api {key} v{version} ({how}): {answer!r}") from exc
        assert header.correlation_id == i + 1, f"answer to {i + 1} carries correlation id {header.correlation_id}"
        if getattr(body, "error_code", 0):
            stats.errors_answered += 1
    if conn is not None:
        conn.sock.close()


class Bystanders:
    """An idempotent acks=all producer that runs until stopped, then a consumer that reads it all back."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.acked: list[bytes] = []
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _produce(self) -> None:
        from confluent_kafka import Producer

        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True, "log_level": 3}
        )

        def done(err, msg):
            if err is None:
                self.acked.append(msg.value())
            else:
                self.failed += 1

        i = 0
        while not self._stop.is_set():
            producer.produce(BYSTANDER_TOPIC, value=f"b-{i}".encode(), partition=0, on_delivery=done)
            producer.poll(0.01)
            i += 1
        producer.flush(15)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def consume(self) -> list[bytes]:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "bystander-reader",
                "log_level": 3,
                "enable.auto.commit": False,
            }
        )
        consumer.assign([TopicPartition(BYSTANDER_TOPIC, 0, 0)])
        out: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(out) < len(self.acked) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                out.append(msg.value())
        consumer.close()
        return out


def check_alive(port: int) -> None:
    conn = Conn(port)
    try:
        for key, version, body in ((18, 3, {}), (3, 12, {"topics": None})):
            payload = headers.encode_request(key, version, 1, body)
            conn.sock.sendall(struct.pack(">i", len(payload)) + payload)
            answer = conn.read_frame()
            assert answer is not None, f"api {key} not answered after the fuzz"
            headers.decode_response(key, version, answer)
    finally:
        conn.sock.close()


def run(
    frames: int, seed: int, kafka_version: str = "4.4", report=print, seconds: float | None = None
) -> dict[str, Any]:
    from fakebroker.cluster import FakeCluster

    windows = served(kafka_version)
    topics = {BYSTANDER_TOPIC: 1, "fz": 2, "fz2": 1}
    with FakeCluster(brokers=2, topics=topics, kafka_version=kafka_version).run_in_thread() as cluster:
        port = cluster.servers[0].port
        KNOWN_TOPIC_IDS[:] = [uuid.UUID(cluster.describe_topic(t).topic_id) for t in FUZZ_TOPICS]
        rss_before = rss_mb()
        bystanders = Bystanders(cluster.bootstrap_servers)
        bystanders.start()
        stats = Stats()
        started = time.monotonic()
        try:
            fuzz(port, frames, seed, windows, stats, seconds)
        finally:
            bystanders.stop()
        elapsed = time.monotonic() - started
        check_alive(port)
        check_alive(cluster.servers[1].port)
        read = bystanders.consume()
        stored = [v for *_, v in cluster.records(BYSTANDER_TOPIC)]
        handler_errors = [e for e in cluster.events if e.kind == "handler_error"]
        counts = collections.Counter(read)
        kinds = collections.Counter(e.kind for e in cluster.events)
        result = {
            "seed": seed,
            "kafka_version": kafka_version,
            "frames": stats.frames,
            "seconds": round(elapsed, 1),
            "answered": stats.answered,
            "errors_answered": stats.errors_answered,
            "connections_closed": stats.closed,
            "no_answer_in_time": stats.no_answer,
            "handler_errors": len(handler_errors),
            "handler_error_samples": [repr(e) for e in handler_errors[:3]],
            "acknowledged": len(bystanders.acked),
            "produce_failures": bystanders.failed,
            "lost": len(set(bystanders.acked) - set(read)),
            "duplicated": sum(1 for n in counts.values() if n > 1),
            "in_order": read[: len(bystanders.acked)] == bystanders.acked,
            "stored_matches": stored[: len(bystanders.acked)] == bystanders.acked,
            "rss_mb_before": round(rss_before, 1),
            "rss_mb_after": round(rss_mb(), 1),
            "events": sum(kinds.values()),
            "records_in_fuzzed_topics": sum(  # the fuzz may have deleted or recreated them
                cluster.offsets(t, p)[1] for t, n in cluster.topics().items() if t in FUZZ_TOPICS for p in range(n)
            ),
            "top_event_kinds": dict(kinds.most_common(4)),
            "per_api": dict(sorted(stats.per_api.items())),
            "per_mutation": dict(stats.per_mutation.most_common()),
        }
    report(result)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--kafka-version", default="4.4")
    parser.add_argument(
        "--seconds", type=float, default=None, help="stop early after this long (checked every 50,000 frames)"
    )
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    import json

    run(args.frames, seed, args.kafka_version, report=lambda r: print(json.dumps(r, indent=1)), seconds=args.seconds)


if __name__ == "__main__":
    main()
