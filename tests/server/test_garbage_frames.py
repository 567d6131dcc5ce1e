"""Random, truncated and oversized frames at a live broker: it closes those connections,
keeps serving everyone else and loses nothing it acknowledged."""

from __future__ import annotations

import os
import random
import socket
import struct

import pytest
from confluent_kafka import Producer  # noqa: E402
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakebroker.apis.registry import served
from fakebroker.cluster import FakeCluster
from fakebroker.protocol import headers
from fakebroker.protocol.messages import request_type

from . import fuzz_frames

# A valid Metadata v12 and Produce v9 request to cut and corrupt.
METADATA = headers.encode_request(3, 12, 1, {"topics": None})
PRODUCE = headers.encode_request(
    0,
    9,
    2,
    {
        "acks": 1,
        "timeout_ms": 1000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"\x00" * 70}]}],
    },
)

frames = st.one_of(
    st.binary(max_size=300).map(lambda b: struct.pack(">i", len(b)) + b),  # random payload
    st.tuples(st.sampled_from([METADATA, PRODUCE]), st.integers(0, 200)).map(  # truncated request
        lambda t: struct.pack(">i", min(t[1], len(t[0]))) + t[0][: t[1]]
    ),
    st.tuples(st.sampled_from([METADATA, PRODUCE]), st.integers(0, 60), st.integers(0, 255)).map(  # one byte flipped
        lambda t: struct.pack(">i", len(t[0])) + t[0][: t[1] % len(t[0])] + bytes([t[2]]) + t[0][t[1] % len(t[0]) + 1 :]
    ),
    st.integers(-(2**31), 2**31 - 1).map(lambda n: struct.pack(">i", n) + b"\x00" * 16),  # any size prefix
    st.binary(max_size=3),  # not even a size
)


def _send(port: int, data: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(2)
        try:
            while sock.recv(65536):
                pass
        except (TimeoutError, ConnectionResetError):
            pass


def _produce(bootstrap: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 3, "acks": "all"})
    for v in values:
        producer.produce("t", value=v, partition=0)
    assert producer.flush(10) == 0


@pytest.mark.slow
def test_garbage_never_hurts_other_clients_or_acknowledged_data():
    with FakeCluster(brokers=1, topics={"t": 1}).run_in_thread() as cluster:
        port = cluster.servers[0].port
        before = [f"before-{i}".encode() for i in range(50)]
        _produce(cluster.bootstrap_servers, before)

        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(frames)
        def throw(data: bytes) -> None:
            _send(port, data)

        # A client that stays connected the whole time must be served throughout.
        with socket.create_connection(("127.0.0.1", port), timeout=5) as bystander:
            throw()
            bystander.sendall(struct.pack(">i", len(METADATA)) + METADATA)
            size = struct.unpack(">i", bystander.recv(4))[0]
            payload = b""
            while len(payload) < size:
                payload += bystander.recv(size - len(payload))
            _, body = headers.decode_response(3, 12, payload)
            assert [t.name for t in body.topics] == ["t"]

        after = [f"after-{i}".encode() for i in range(10)]
        _produce(cluster.bootstrap_servers, after)
        assert [v for *_, v in cluster.records("t")] == before + after
        assert any(e.kind == "connection_closed" for e in cluster.events)
        assert not any(e.kind == "handler_error" for e in cluster.events), [
            e for e in cluster.events if e.kind == "handler_error"
        ][:3]


# --------------------------------------------------------------------- structure-aware fuzz
# Valid requests of every served API and version, mutated where their structure is (see
# fuzz_frames.py). CI runs a bounded count with a fixed seed and one random seed (printed on
# failure); FAKEBROKER_FUZZ_FRAMES=1000000 pytest -m fuzz_long tests/server -s runs the long one
# (skipped unless that variable is set).


def test_the_fuzzers_layout_reads_every_valid_request_to_its_end():
    """The walker that finds counts and lengths reads each valid body exactly to its end."""
    rng = random.Random(5)
    for kafka_version in ("4.4", "3.9"):
        for key, (low, high) in served(kafka_version).items():
            for version in range(low, high + 1):
                codec = request_type(key).codec(version)
                for _ in range(3):
                    body = request_type(key).encode(fuzz_frames.random_value(rng, codec, ""), version)
                    layout = fuzz_frames.Layout()
                    assert fuzz_frames.walk(codec, body, 0, layout) == len(body), (key, version)


def _check(result: dict) -> None:
    seed = result["seed"]
    assert result["handler_errors"] == 0, (seed, result["handler_error_samples"])
    assert result["lost"] == 0 and result["duplicated"] == 0, (seed, result)
    assert result["in_order"] and result["stored_matches"], (seed, result)
    assert result["acknowledged"] > 0 and result["produce_failures"] == 0, (seed, result)
    assert result["answered"] > 0 and result["connections_closed"] > 0, (seed, result)


@pytest.mark.slow
@pytest.mark.parametrize(
    "seed, kafka_version",
    [(20260, "4.4"), (random.randrange(2**32), "4.4"), (39, "3.9")],
    ids=["fixed-seed", "random-seed", "kafka-3.9"],
)
def test_structure_aware_fuzz_never_hurts_bystanders(seed, kafka_version):
    print(f"fuzz seed {seed} (rerun: python -m tests.server.fuzz_frames --frames 2500 --seed {seed})")
    _check(fuzz_frames.run(2500, seed, kafka_version, report=lambda r: None))


@pytest.mark.fuzz_long
@pytest.mark.timeout(0)  # hours at 1,000,000 frames: the run itself is bounded by its frame count
@pytest.mark.skipif(not os.environ.get("FAKEBROKER_FUZZ_FRAMES"), reason="set FAKEBROKER_FUZZ_FRAMES=1000000 to run")
def test_structure_aware_fuzz_long():
    frames = int(os.environ["FAKEBROKER_FUZZ_FRAMES"])
    seed = int(os.environ.get("FAKEBROKER_FUZZ_SEED", random.randrange(2**32)))
    print(f"fuzz seed {seed}, {frames} frames")
    _check(fuzz_frames.run(frames, seed, os.environ.get("FAKEBROKER_FUZZ_KAFKA", "4.4"), report=print))
