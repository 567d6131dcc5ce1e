"""``fakebroker serve`` with security (issue 37): ``--security-protocol`` and ``--user`` (or the
TOML file's ``security_protocol`` and ``[users]``), the ``tls-ca:`` line after the bootstrap
line, a real client over SASL_SSL, and each mistake refused with what is valid."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from click.testing import CliRunner
from confluent_kafka import Producer

from fakebroker.cli import main

pytestmark = pytest.mark.clients


def serve(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "fakebroker", "serve", "--port", "0", "--no-color", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("from_file", [False, True], ids=["flags", "config file"])
def test_serve_over_sasl_ssl_names_its_ca_and_takes_a_scram_client(tmp_path, from_file):
    if from_file:
        path = tmp_path / "c.toml"
        path.write_text('port = 0\nsecurity_protocol = "SASL_SSL"\n[users]\nalice = "alice-secret"\n')
        proc = serve("--config", str(path))
    else:
        proc = serve("--security-protocol", "SASL_SSL", "--user", "alice:alice-secret", "--topic", "orders")
    try:
        bootstrap = proc.stdout.readline().split()[1]
        tls, ca_file = proc.stdout.readline().split()
        assert tls == "tls-ca:" and open(ca_file).read().startswith("-----BEGIN CERTIFICATE-----")
        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": "alice",
                "sasl.password": "alice-secret",
                "ssl.ca.location": ca_file,
                "log_level": 3,
            }
        )
        producer.produce("orders", value=b"paid")
        assert producer.flush(15) == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=15)
    assert "client_authenticated" in out and "User:alice" in out
    assert proc.returncode == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--security-protocol", "TLS"], "'TLS' is not one of 'PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'"),
        (["--user", "alice"], "'alice': give NAME:PASSWORD, e.g. --user alice:alice-secret"),
        (
            ["--security-protocol", "SASL_SSL", "--set", "sasl.enabled.mechanisms=GSSAPI"],
            "sasl.enabled.mechanisms='GSSAPI': the mechanisms served are PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
            "OAUTHBEARER",
        ),
    ],
)
def test_security_mistakes_are_usage_errors(args, message):
    result = CliRunner().invoke(main, ["serve", "--port", "0", *args])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert message in " ".join(result.output.split()), result.output


def test_a_bad_users_table_is_refused(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[users]\nalice = 7\n")
    result = CliRunner().invoke(main, ["serve", "--config", str(path)])
    assert result.exit_code == 2 and 'users must be a table of name = "password"' in result.output
