"""Security through the pytest plugin and the timeline (issue 37), with librdkafka
(confluent-kafka) in inner pytest sessions (``pytester``):

- the Security guide's pytest example (``docs/guides/security.md``, "In pytest") passes as
  written: the ``fakebroker`` marker on a module makes a SASL_SSL cluster with users and the
  authorizer, and a SCRAM producer and a consumer in a group use it;
- a secured test that fails reports the timeline with each client's principal, its login and the
  refusal its group got (a consumer without READ on its group: GROUP_AUTHORIZATION_FAILED)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.clients
ROOT = Path(__file__).resolve().parents[2]


def security_guide_pytest_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "guides" / "security.md").read_text(), flags=re.S)
    (example,) = [b for b in blocks if "pytest.mark.fakebroker(" in b]
    return example


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """An inner session in a process of its own (``cryptography``'s bindings load once a process)."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")  # pytest-asyncio's warning
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def test_the_security_guides_pytest_example_passes(pytester):
    pytester.makepyfile(test_secured_example=security_guide_pytest_example())
    result = run(pytester)
    result.assert_outcomes(passed=1)


DENIED_GROUP = """
import pytest
from confluent_kafka import Consumer, KafkaError

from fakebroker.cluster.access import STANDARD_AUTHORIZER


@pytest.mark.fakebroker(
    security_protocol="SASL_SSL",
    users={"alice": "alice-secret"},
    config={"authorizer.class.name": STANDARD_AUTHORIZER},
    topics={"orders": 1},
)
def test_billing_reads_orders(fakebroker):
    fakebroker.acls.allow("User:alice", "ALL", topic="orders")  # and nothing on its group
    consumer = Consumer(
        {
            "bootstrap.servers": fakebroker.bootstrap_servers,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
            "ssl.ca.location": fakebroker.tls_ca_file,
            "client.id": "billing-1",
            "group.id": "billing",
            "log_level": 3,
        }
    )
    consumer.subscribe(["orders"])
    msg = None
    for _ in range(30):
        msg = consumer.poll(0.5)
        if msg is not None:
            break
    consumer.close()
    assert msg is not None and msg.error() is None, msg and msg.error()  # fails: refused its group
"""


def test_a_failing_secured_tests_timeline_names_the_principal_and_the_refusal(pytester, tmp_path):
    pytester.makepyfile(test_denied=DENIED_GROUP)
    result = run(pytester, f"--fakebroker-timeline-dir={tmp_path}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*fakebroker timeline*",
            "*client_authenticated*billing-1 as User:alice*mechanism=SCRAM-SHA-512*",
            "*request_error*billing-1 as User:alice*error=GROUP_AUTHORIZATION_FAILED*",
        ]
    )
    assert "GROUP_AUTHORIZATION_FAILED" in result.stdout.str().split("fakebroker timeline")[0]  # the client's own
