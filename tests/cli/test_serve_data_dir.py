"""`fakebroker serve --data-dir`: a restart keeps topics, records and committed offsets; retention
deletes segments under a real consumer, which resets by ``auto.offset.reset``; a directory that
cannot be used is refused in one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from fakebroker.cli import config as serve_config

MIB = 1024 * 1024


def start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, str]:
    """Start serve (its output goes to a file, so a full pipe never stalls it); returns it and
    its bootstrap address."""
    out = open(tmp_path / f"serve-{time.monotonic_ns()}.out", "w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fakebroker", "serve", "--port", "0", "--no-color", *args],
        stdout=out,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # a warning on stderr (a log cut by recovery) may come first
        lines = Path(out.name).read_text().split("\n")[:-1]
        found = [line for line in lines if line.startswith("bootstrap: ")]
        if found:
            return proc, found[0].split()[1]
        assert proc.poll() is None, Path(out.name).read_text()
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("serve did not start")


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=15) == 0


def consume(bootstrap: str, group: str, count: int, **config) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest", **config})
    consumer.subscribe(["orders"])
    got = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                got.append(message)
        if got and config.get("enable.auto.commit") is False:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return got


def test_a_restart_on_the_same_data_dir_keeps_topics_records_and_committed_offsets(tmp_path):
    data = tmp_path / "data"
    proc, bootstrap = start(tmp_path, "--data-dir", str(data), "--topic", "orders:2")
    try:
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        sent = {(i % 2, f"v{i}".encode()) for i in range(600)}
        for partition, value in sorted(sent):
            producer.produce("orders", value=value, key=b"k", partition=partition)
        assert producer.flush(20) == 0
        half = consume(bootstrap, "billing", 300, **{"enable.auto.commit": False})
        assert len(half) == 300
        committed = {(m.partition(), m.offset() + 1) for m in half}
        committed = {p: max(o for q, o in committed if q == p) for p, _ in committed}
    finally:
        stop(proc)
    assert (data / "orders-0" / "00000000000000000000.log").stat().st_size > 0

    proc, bootstrap = start(tmp_path, "--data-dir", str(data))
    try:
        everything = consume(bootstrap, "audit", 600)
        assert {(m.partition(), m.value()) for m in everything} == sent
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "billing"})
        try:
            found = consumer.committed([TopicPartition("orders", p) for p in committed], timeout=10)
        finally:
            consumer.close()
        assert {tp.partition: tp.offset for tp in found} == committed
        producer = Producer({"bootstrap.servers": bootstrap})
        producer.produce("orders", value=b"after", partition=0)
        assert producer.flush(10) == 0
        low, high = Consumer({"bootstrap.servers": bootstrap, "group.id": "x"}).get_watermark_offsets(
            TopicPartition("orders", 0), timeout=10
        )
        assert (low, high) == (0, 301)  # offsets continue after the restart
    finally:
        stop(proc)


def test_retention_deletes_a_consumers_position_and_it_resets_to_the_new_start(tmp_path):
    proc, bootstrap = start(tmp_path, "--set", "log.retention.check.interval.ms=200")
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        config = {"segment.bytes": str(MIB), "retention.bytes": str(MIB)}  # Kafka's smallest segment
        admin.create_topics([NewTopic("orders", 1, 1, config=config)])["orders"].result(10)
        group = Consumer({"bootstrap.servers": bootstrap, "group.id": "slow", "enable.auto.commit": False})
        group.commit(offsets=[TopicPartition("orders", 0, 3)], asynchronous=False)  # its position: offset 3
        group.close()
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        for i in range(300):  # 3 MB: three segments, the first two past retention.bytes
            producer.produce("orders", value=b"x" * 10_000 + str(i).encode())
        assert producer.flush(10) == 0
        watcher = Consumer({"bootstrap.servers": bootstrap, "group.id": "watcher"})
        deadline = time.monotonic() + 20
        while (low := watcher.get_watermark_offsets(TopicPartition("orders", 0), timeout=5)[0]) <= 3:
            assert time.monotonic() < deadline, "retention did not run"
            time.sleep(0.1)
        watcher.close()
        strict = Consumer({"bootstrap.servers": bootstrap, "group.id": "slow", "auto.offset.reset": "error"})
        strict.subscribe(["orders"])
        deadline = time.monotonic() + 20
        try:
            while (message := strict.poll(0.5)) is None or not message.error():
                assert time.monotonic() < deadline, "no offset-out-of-range error"
        finally:
            strict.close()
        assert message.error().code() == KafkaError._AUTO_OFFSET_RESET
        assert "Offset out of range" in message.error().str()  # what the broker answered the fetch at 3
        [first] = consume(bootstrap, "slow", 1)  # the same fetch, reset to earliest
        assert first.offset() >= low > 3
    finally:
        stop(proc)


def test_a_data_dir_that_cannot_be_used_gets_one_line(tmp_path):
    file = tmp_path / "not-a-dir"
    file.write_text("x")
    for bad, why in ((file, "is a file, not a directory"), (file / "below", "cannot be used")):
        done = subprocess.run(
            [sys.executable, "-m", "fakebroker", "serve", "--port", "0", "--data-dir", str(bad)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 2
        assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
        assert done.stderr.startswith("fakebroker: data directory") and why in done.stderr


def test_the_toml_file_names_the_data_dir_and_the_command_line_wins(tmp_path):
    config = tmp_path / "serve.toml"
    config.write_text(f'data_dir = "{tmp_path / "from-file"}"\n')
    assert serve_config.load(config).data_dir == str(tmp_path / "from-file")
    proc, _ = start(tmp_path, "--config", str(config))
    stop(proc)
    assert (tmp_path / "from-file" / "fakebroker-meta.json").exists()
    proc, _ = start(tmp_path, "--config", str(config), "--data-dir", str(tmp_path / "given"))
    stop(proc)
    assert (tmp_path / "given" / "fakebroker-meta.json").exists()


def serve_once(data: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fakebroker", "serve", "--port", "0", "--data-dir", str(data)],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_a_data_dir_with_logs_and_damaged_or_missing_metadata_is_refused_in_one_line(tmp_path):
    data = tmp_path / "data"
    proc, bootstrap = start(tmp_path, "--data-dir", str(data), "--topic", "orders:2")
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        producer.produce("orders", value=b"v%d" % i, partition=i % 2)
    assert producer.flush(10) == 0
    stop(proc)
    meta = data / "fakebroker-meta.json"
    good = meta.read_bytes()
    logs = {p: p.read_bytes() for p in data.glob("*/*.log")}
    for content, why in (
        (None, "is missing, but the directory holds partition logs (orders-0, orders-1)"),
        (b"", "is empty"),
        (b"null", "holds null, not an object"),
        (b"{", "is not valid JSON"),
        (b'{"version": 1, "cluster_id": "x", "topics": {"orders": {"id": "x", "partitions": []}}}', "not a UUID"),
    ):
        if content is None:
            meta.unlink()
        else:
            meta.write_bytes(content)
        done = serve_once(data)
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.startswith(f"fakebroker: {meta}") and why in done.stderr, done.stderr
        assert {p: p.read_bytes() for p in data.glob("*/*.log")} == logs  # left as they were
        assert not [p for p in data.iterdir() if p.name.endswith("-stray")]
    meta.write_bytes(good)
    proc, bootstrap = start(tmp_path, "--data-dir", str(data))
    try:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "x"})
        assert consumer.get_watermark_offsets(TopicPartition("orders", 1), timeout=10) == (0, 5)
        consumer.close()
    finally:
        stop(proc)


def test_serve_says_in_one_line_on_stderr_where_recovery_cut_a_damaged_log(tmp_path):
    data = tmp_path / "data"
    proc, bootstrap = start(tmp_path, "--data-dir", str(data), "--topic", "orders:1")
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(20):
        producer.produce("orders", value=b"x" * 100, partition=0)
        assert producer.flush(10) == 0  # a batch each
    stop(proc)
    segment = data / "orders-0" / "00000000000000000000.log"
    blob = bytearray(segment.read_bytes())
    size = len(blob) // 20  # the batches are alike
    blob[12 * size + 70] ^= 0x01  # a byte of a record of batch 12
    segment.write_bytes(bytes(blob))
    out = tmp_path / "recovered.err"
    with open(out, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fakebroker", "serve", "--port", "0", "--data-dir", str(data)],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            deadline = time.monotonic() + 20
            while "log recovery" not in out.read_text():
                assert time.monotonic() < deadline and proc.poll() is None, out.read_text()
                time.sleep(0.05)
            time.sleep(0.3)  # anything else it would say at start
        finally:
            stop(proc)
    [line] = out.read_text().splitlines()
    crc = int.from_bytes(blob[12 * size + 17 : 12 * size + 21], "big")
    assert line == (
        f"fakebroker: orders-0: log recovery cut the log at offset 12 (segment 00000000000000000000.log, "
        f"byte {12 * size}): CRC mismatch (stored {crc:#010x}); {8 * size} bytes dropped"
    )
