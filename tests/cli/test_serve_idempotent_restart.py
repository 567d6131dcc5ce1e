"""An idempotent producer (librdkafka, ``enable.idempotence=true``) writing while ``fakebroker serve
--data-dir`` is killed (``kill -9``) and started again on the same port, three times: it keeps
going, no error of it is fatal, and every record it had acknowledged is in the log afterwards.
(The README once said such a producer fails fatally after a restart; it does not: the new server
has no state for its producer id and accepts its next sequence, as Kafka accepts a producer it
has no state for.)"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from ..ports import port_runs
from .serve_on_port import start_on_port

RESTARTS = 3
TOPIC = "orders"
PARTITIONS = 2


def start(tmp_path: Path, port: int, data: Path) -> subprocess.Popen | None:
    """serve on ``port`` with ``data``, once its bootstrap line is out; None if the port was taken."""
    return start_on_port(tmp_path, port, "--data-dir", str(data), "--topic", f"{TOPIC}:{PARTITIONS}")


def read_all(bootstrap: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False})
    values: list[bytes] = []
    try:
        for partition in range(PARTITIONS):
            low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, partition), timeout=10)
            consumer.assign([TopicPartition(TOPIC, partition, low)])
            got, deadline = 0, time.monotonic() + 15
            while got < high - low and time.monotonic() < deadline:
                message = consumer.poll(1)
                if message is not None and not message.error():
                    values.append(message.value())
                    got += 1
    finally:
        consumer.close()
    return values


def test_an_idempotent_producer_keeps_going_across_restarts_and_loses_nothing_acknowledged(tmp_path):
    data = tmp_path / "data"
    for port in port_runs(1):
        proc = start(tmp_path, port, data)
        if proc is not None:
            break
    acked: list[bytes] = []
    failed: list[KafkaError] = []
    errors: list[KafkaError] = []

    def delivered(err, message) -> None:
        (failed.append(err) if err is not None else acked.append(message.value()))

    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "enable.idempotence": True,
            "linger.ms": 2,
            "reconnect.backoff.max.ms": 200,
            "message.timeout.ms": 30000,
            "error_cb": errors.append,
            "log_level": 0,  # the connection refused lines of each restart are expected
        }
    )
    stop = threading.Event()
    produced = [0]

    def produce() -> None:
        while not stop.is_set():
            try:
                producer.produce(TOPIC, key=b"%d" % (produced[0] % 7), value=b"%d" % produced[0], on_delivery=delivered)
                produced[0] += 1
            except BufferError:  # the queue is full while the server is down
                pass
            producer.poll(0.002)

    writer = threading.Thread(target=produce, daemon=True)
    writer.start()
    try:
        for _ in range(RESTARTS):
            time.sleep(1.0)
            proc.kill()  # kill -9: no clean stop
            proc.wait(timeout=15)
            time.sleep(0.3)  # the producer finds the port closed
            proc = start(tmp_path, port, data)
            assert proc is not None, f"port {port} was taken while serve was down"
        time.sleep(1.0)
        stop.set()
        writer.join(timeout=10)
        assert producer.flush(30) == 0
        stored = read_all(f"127.0.0.1:{port}")
    finally:
        stop.set()
        proc.kill()
        proc.wait(timeout=15)
    assert not [e for e in errors if e.fatal()], errors
    assert not failed, failed[:5]
    assert len(acked) == produced[0] > 1000, (len(acked), produced[0])
    assert set(acked) <= set(stored), f"{len(set(acked) - set(stored))} acknowledged records lost"
