"""`fakebroker serve --data-dir` keeps the transaction coordinator's state through `kill -9`, as
Kafka keeps it in ``__transaction_state``. A confluent-kafka transactional producer commits
records and its consumer's offsets (``send_offsets_to_transaction``); EndTxn is answered in
PrepareCommit and the markers are to follow a minute later (``transaction_marker_delay_ms``), but
the server is killed the moment ``commit_transaction`` returns. The next start on the same
directory and port writes the markers: a read_committed consumer sees the records and the
group's committed offset. The producer, still running from before the kill, is a zombie once
its transactional id is initialised again: the new instance gets the next epoch of the same
producer id, and the zombie's next transaction is fenced."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from ..ports import port_runs
from .serve_on_port import start_on_port

QUIET = {"log_level": 0}
CONFIG = "transaction_marker_delay_ms = 60000\n"


def start(tmp_path: Path, port: int, data: Path) -> subprocess.Popen | None:
    """serve on ``port`` with ``data``, once its bootstrap line is out; None if the port was taken."""
    config = tmp_path / "serve.toml"
    config.write_text(CONFIG)
    return start_on_port(
        tmp_path, port, "--data-dir", str(data), "--config", str(config), "--topic", "in:1", "--topic", "out:1"
    )


def kill(proc: subprocess.Popen) -> None:
    proc.kill()  # SIGKILL: no clean stop, no snapshot written at exit
    proc.wait(timeout=15)


def read_committed(bootstrap: str, n: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "isolation.level": "read_committed"})
    values: list[bytes] = []
    try:
        consumer.assign([TopicPartition("out", 0, 0)])
        deadline = time.monotonic() + 15
        while len(values) < n and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                values.append(message.value())
    finally:
        consumer.close()
    return values


@pytest.mark.clients
def test_a_commit_answered_before_its_markers_survives_kill9_and_the_zombie_is_fenced(tmp_path):
    data = tmp_path / "data"
    for port in port_runs(1):
        proc = start(tmp_path, port, data)
        if proc is not None:
            break
    boot = f"127.0.0.1:{port}"
    try:
        group = Consumer({"bootstrap.servers": boot, "group.id": "app", **QUIET})
        zombie = Producer(
            {"bootstrap.servers": boot, "transactional.id": "app-tx", "reconnect.backoff.max.ms": 200, **QUIET}
        )
        zombie.init_transactions(10)
        zombie.begin_transaction()
        for i in range(3):
            zombie.produce("out", value=b"v%d" % i, partition=0)
        zombie.send_offsets_to_transaction([TopicPartition("in", 0, 42)], group.consumer_group_metadata(), 10)
        zombie.commit_transaction(10)  # answered in PrepareCommit: the markers are a minute away
        kill(proc)
        group.close()
        proc = start(tmp_path, port, data)
        assert proc is not None, f"port {port} was taken while serve was down"

        assert read_committed(boot, 3) == [b"v0", b"v1", b"v2"]
        check = Consumer({"bootstrap.servers": boot, "group.id": "app", **QUIET})
        [committed] = check.committed([TopicPartition("in", 0)], timeout=10)
        check.close()
        assert committed.offset == 42

        fresh = Producer({"bootstrap.servers": boot, "transactional.id": "app-tx", **QUIET})
        fresh.init_transactions(10)  # the same producer id at the next epoch: the zombie is fenced
        zombie.begin_transaction()
        zombie.produce("out", value=b"zombie", partition=0)
        with pytest.raises(KafkaException) as raised:
            zombie.commit_transaction(10)
        error = raised.value.args[0]
        assert error.fatal() and error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED), error
        fresh.begin_transaction()
        fresh.produce("out", value=b"v3", partition=0)
        fresh.commit_transaction(10)
        kill(proc)
        proc = start(tmp_path, port, data)
        assert proc is not None
        assert read_committed(boot, 4) == [b"v0", b"v1", b"v2", b"v3"]
    finally:
        kill(proc)
