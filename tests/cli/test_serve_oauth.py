"""``fakebroker serve`` and OAUTHBEARER's validators: the default (unsecured) validator's options
with ``--oauth-option NAME=VALUE`` or the TOML file's ``[oauth_validator]`` table, Kafka's secured
validator (JWKS) with the broker settings of ``--set`` or ``[settings]``, each proved by a real
client (librdkafka's ``oauth_cb``) whose principal the server's event lines name; and each
mistake refused before anything starts, naming what is valid, without a traceback."""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from confluent_kafka import Producer

from fakebroker.cli import main
from tests.jwks_issuer import Issuer, broker_settings

pytestmark = pytest.mark.clients
OPTIONS = "unsecuredValidatorPrincipalClaimName, unsecuredValidatorScopeClaimName, unsecuredValidatorRequiredScope, "


def serve(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "fakebroker", "serve", "--port", "0", "--no-color", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def part(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def unsecured(**claims: object) -> str:
    now = time.time()
    return f"{part({'alg': 'none'})}.{part({'iat': now - 1, 'exp': now + 60, **claims})}."


def produce_with(proc: subprocess.Popen, token: str, *, tls: bool = False) -> None:
    """A producer on the bootstrap line's cluster with ``token`` (over TLS: the next line's CA)."""
    bootstrap = proc.stdout.readline().split()[1]
    client = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "oauth_cb": lambda config: (token, time.time() + 60),
        "log_level": 3,
    }
    if tls:
        label, ca_file = proc.stdout.readline().split()
        assert label == "tls-ca:"
        client |= {"security.protocol": "SASL_SSL", "ssl.ca.location": ca_file}
    producer = Producer(client)
    producer.produce("orders", value=b"paid")
    assert producer.flush(15) == 0


def stopped(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    return out


@pytest.mark.parametrize("from_file", [False, True], ids=["flags", "config file"])
def test_the_unsecured_validators_options_come_from_flags_or_the_file(tmp_path, from_file):
    if from_file:
        path = tmp_path / "c.toml"
        path.write_text(
            'port = 0\nsecurity_protocol = "SASL_PLAINTEXT"\n'
            '[oauth_validator]\nunsecuredValidatorPrincipalClaimName = "client_id"\n'
            'unsecuredValidatorRequiredScope = "kafka"\n'
        )
        proc = serve("--config", str(path), "--topic", "orders")
    else:
        proc = serve(
            "--security-protocol",
            "SASL_PLAINTEXT",
            "--topic",
            "orders",
            "--oauth-option",
            "unsecuredValidatorPrincipalClaimName=client_id",
            "--oauth-option",
            "unsecuredValidatorRequiredScope=kafka",
        )
    try:
        produce_with(proc, unsecured(client_id="svc-orders", scope=["kafka"]))
    finally:
        out = stopped(proc)
    assert "client_authenticated" in out and "User:svc-orders" in out


@pytest.mark.parametrize("from_file", [False, True], ids=["flags", "config file"])
def test_kafkas_secured_validator_comes_from_the_broker_settings(tmp_path, from_file):
    issuer = Issuer()
    issuer.add_key("signing-1")
    settings = broker_settings(issuer.write(tmp_path / "jwks.json"))
    if from_file:
        path = tmp_path / "c.toml"
        lines = "".join(f'"{k}" = "{v}"\n' for k, v in settings.items())
        path.write_text(f'port = 0\nsecurity_protocol = "SASL_SSL"\n[settings]\n{lines}')
        proc = serve("--config", str(path), "--topic", "orders")
    else:
        proc = serve("--security-protocol", "SASL_SSL", "--topic", "orders", *set_flags(settings))
    try:
        produce_with(proc, issuer.token("svc-signed", "signing-1"), tls=True)
    finally:
        out = stopped(proc)
    assert "client_authenticated" in out and "User:svc-signed" in out


def refused(*args: str) -> str:
    result = CliRunner().invoke(main, ["serve", "--port", "0", *args])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    return " ".join(result.output.split())


def test_oauth_option_mistakes_are_usage_errors():
    assert "'client_id': give NAME=VALUE, e.g. --oauth-option unsecuredValidatorPrincipalClaimName=client_id" in (
        refused("--security-protocol", "SASL_PLAINTEXT", "--oauth-option", "client_id")
    )
    message = refused("--security-protocol", "SASL_PLAINTEXT", "--oauth-option", "principalClaim=client_id")
    assert "--oauth-option: unknown option 'principalClaim': the unsecured validator's options are " in message
    assert OPTIONS in message
    assert "--oauth-option needs a SASL listener: security_protocol is 'PLAINTEXT'" in refused(
        "--oauth-option", "unsecuredValidatorPrincipalClaimName=client_id"
    )
    message = refused(
        "--security-protocol", "SASL_PLAINTEXT", "--oauth-option", "unsecuredValidatorAllowableClockSkewMs=soon"
    )
    assert "unsecuredValidatorAllowableClockSkewMs='soon': a whole number of ms" in message


def test_oauth_validator_table_mistakes_name_the_file(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[oauth_validator]\nunsecuredValidatorAllowableClockSkewMs = 1.5\n")
    assert f"{path}: oauth_validator must be a table of the unsecured OAUTHBEARER validator's options" in refused(
        "--config", str(path)
    )
    path.write_text('security_protocol = "SASL_PLAINTEXT"\n[oauth_validator]\nsub = "client_id"\n')
    assert f"{path}: [oauth_validator]: unknown option 'sub'" in refused("--config", str(path))


def set_flags(settings: dict) -> list[str]:
    return [arg for name, value in settings.items() for arg in ("--set", f"{name}={value}")]


def test_jwks_mistakes_are_usage_errors(tmp_path):
    missing = tmp_path / "nowhere.json"
    message = refused("--security-protocol", "SASL_SSL", *set_flags(broker_settings(missing.as_uri())))
    assert f"sasl.oauthbearer.jwks.endpoint.url contains a file ({missing}) that doesn't exist" in message

    issuer = Issuer()
    issuer.add_key("k")
    settings = broker_settings(issuer.write(tmp_path / "jwks.json"))
    no_audience = {k: v for k, v in settings.items() if k != "sasl.oauthbearer.expected.audience"}
    message = refused("--security-protocol", "SASL_SSL", *set_flags(no_audience))
    assert 'requires "sasl.oauthbearer.expected.audience" to be configured' in message
    both = ["--oauth-option", "unsecuredValidatorRequiredScope=x"]
    message = refused("--security-protocol", "SASL_SSL", *set_flags(settings), *both)
    assert "--oauth-option and sasl.oauthbearer.jwks.endpoint.url both choose how OAUTHBEARER tokens are checked" in (
        message
    )
