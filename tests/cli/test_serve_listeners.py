"""``fakebroker serve --listeners`` (issue 37): the bootstrap line names the first listener, a
``listener NAME:`` line each other one, and a client on each listener round-trips a record;
mistakes are usage errors naming what is valid."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer

from fakebroker.cli import main

pytestmark = pytest.mark.clients


def test_serve_with_two_listeners_prints_both_and_serves_each(tmp_path):
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "fakebroker", "serve", "--no-color", "--brokers", "2", "--topic", "orders:2"),
            *("--listeners", "CLIENT://:0,SECURE://:0", "--user", "alice:alice-secret"),
            *("--set", "listener.security.protocol.map=CLIENT:PLAINTEXT,SECURE:SASL_SSL"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first, client = proc.stdout.readline().split()
        label, name, secure = proc.stdout.readline().split()
        tls, ca_file = proc.stdout.readline().split()
        assert (first, label, name, tls) == ("bootstrap:", "listener", "SECURE:", "tls-ca:")
        assert len(client.split(",")) == len(secure.split(",")) == 2
        producer = Producer({"bootstrap.servers": client, "log_level": 3})
        for i in range(4):
            producer.produce("orders", value=b"v%d" % i, partition=i % 2)
        assert producer.flush(15) == 0
        consumer = Consumer(
            {
                "bootstrap.servers": secure,
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "alice",
                "sasl.password": "alice-secret",
                "ssl.ca.location": ca_file,
                "group.id": "billing",
                "auto.offset.reset": "earliest",
                "log_level": 3,
            }
        )
        consumer.subscribe(["orders"])
        got: list[bytes] = []
        for _ in range(150):
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            if len(got) == 4:
                break
        consumer.close()
        assert sorted(got) == [b"v0", b"v1", b"v2", b"v3"]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=15)
    assert proc.returncode == 0
    assert "User:alice" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--listeners", "CLIENT://:0"], "no security protocol for listener CLIENT"),
        (["--listeners", "PLAINTEXT://:9092,SSL://:9093", "--brokers", "2"], "would both use 9093 with 2 brokers"),
        (["--listeners", "PLAINTEXT://:0", "--port", "9092"], "give the ports in listeners"),
        (["--listeners", "SSL://:0", "--security-protocol", "SSL"], "give one of them"),
        (["--listeners", "PLAINTEXT:9092"], "is not a listener: NAME://HOST:PORT"),
    ],
)
def test_listener_mistakes_are_usage_errors(args, message):
    result = CliRunner().invoke(main, ["serve", *args])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert message in " ".join(result.output.split()), result.output
