"""Conformance probes: the same raw requests sent to fakebroker and, in the differential mode, to
a real Apache Kafka broker (4.4.0, KRaft, from Maven Central), their decoded answers compared
field by field.

- ``test_plain[probe]`` runs each probe against fakebroker alone and checks the probe's own
  expectations (the answers Kafka gives, written into the probe). It is part of the fast loop.
- ``test_differential[probe]`` (marker ``conformance``) runs each probe against Kafka, then
  against fakebroker, checks the expectations on both, and asserts that the normalised answers
  are equal except for the differences in :data:`ALLOWED` below. An allowed difference that no
  longer shows fails too, so the list stays honest: remove it when fakebroker is fixed.

The secured probes (``probes_security.py``, ``@probe(secured=True)``) run the same way against
a pair of their own (SASL_SSL, StandardAuthorizer; see conftest.py), after the others, so one
JVM at a time serves each kind. Their denials are compared too: what Kafka's authorizer logged
("Principal = User:alice is Denied operation = READ ... on resource = Group:LITERAL:g for
request = JoinGroup", ``kafka.authorizer.logger`` at INFO, in the broker's server.log) while the
probe ran, and fakebroker's ``access_denied`` events, as multisets of (principal, operation,
resource type, resource, API).

Select them with ``-m conformance`` or leave them out with ``-m "not conformance"``. Set
``FAKEBROKER_CONFORMANCE_REPORT=path`` to append each differential probe's figures (steps,
same, allowed, different) to a JSON-lines file.

How a probe is written: see :mod:`.probing`; probes live in ``probes_*.py``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from . import (  # noqa: F401  (they register their probes)
    probes_admin,
    probes_api,
    probes_configs,
    probes_consumer_groups,
    probes_data,
    probes_groups,
    probes_quotas_features,
    probes_security,
    probes_share,
    probes_streams,
    probes_topics,
    probes_txn,
)
from .kafka_broker import SECURED_USERS
from .probing import PROBES, SECURED_PROBES, Difference, Security, compare, run_probe

RUN_ID = secrets.token_hex(3)  # names are unique per test process, so one broker serves many runs


@dataclass(frozen=True)
class Allowed:
    """A known difference: in ``probe`` (a name), steps whose label matches ``step`` and fields
    whose dotted path matches ``field`` (regular expressions, whole match)."""

    probe: str
    step: str
    field: str
    reason: str

    def matches(self, probe: str, d: Difference) -> bool:
        return (
            probe == self.probe
            and re.fullmatch(self.step, d.label) is not None
            and re.fullmatch(self.field, d.path) is not None
        )


ALLOWED: list[Allowed] = []


def fakebroker_security(cluster) -> Security:
    """How the secured probes reach a secured fakebroker: its CA, the users it was made with."""
    return Security(str(cluster.tls_ca_file), SECURED_USERS)


# the plain probes first, then the secured ones: a test process switches its Kafka broker once
NAMES = sorted(set(PROBES) - SECURED_PROBES) + sorted(SECURED_PROBES)

# StandardAuthorizerData's audit line for a denial a request asked to be logged (logIfDenied)
DENIED = re.compile(
    r"Principal = (\S+) is Denied operation = (\w+) from host = \S+ on resource = "
    r"(\w+):LITERAL:(.*?) for request = (\w+) with resourceRefCount"
)
RESOURCE_TYPES = {  # SecurityUtils.resourceTypeName -> ResourceType's name
    "Topic": "TOPIC",
    "Group": "GROUP",
    "Cluster": "CLUSTER",
    "TransactionalId": "TRANSACTIONAL_ID",
    "DelegationToken": "DELEGATION_TOKEN",
    "User": "USER",
}


def kafka_denials(log: Path, start: int) -> Counter:
    """The denials Kafka's authorizer logged in ``log`` after byte ``start``."""
    with log.open("rb") as f:
        f.seek(start)
        text = f.read().decode(errors="replace")
    return Counter((m[1], m[2], RESOURCE_TYPES.get(m[3], m[3]), m[4], m[5]) for m in DENIED.finditer(text))


def fake_denials(cluster, since: int) -> Counter:
    """fakebroker's ``access_denied`` events after the first ``since``, as :func:`kafka_denials`."""
    return Counter(
        (e.principal, e.operation, e.resource_type, e.resource, e.api)
        for e in cluster.events_since(since)
        if e.kind == "access_denied"
    )


@pytest.mark.parametrize("name", NAMES)
def test_plain(name, request):
    if name in SECURED_PROBES:
        cluster = request.getfixturevalue("secured_conformance_fakebroker")
        fake = run_probe(name, "fakebroker", cluster.servers[0].port, RUN_ID + "p", fakebroker_security(cluster))
    else:
        cluster = request.getfixturevalue("conformance_fakebroker")
        fake = run_probe(name, "fakebroker", cluster.servers[0].port, RUN_ID + "p")
    assert not fake.failures, "unmet expectations:\n" + "\n".join(fake.failures)


@pytest.mark.conformance
@pytest.mark.parametrize("name", NAMES)
def test_differential(name, request):
    secured = name in SECURED_PROBES
    kafka_broker = request.getfixturevalue("secured_kafka_broker" if secured else "kafka_broker")
    fakebroker = request.getfixturevalue("secured_differential_fakebroker" if secured else "differential_fakebroker")
    kafka_security = fake_security = None
    if secured:
        kafka_security = Security(kafka_broker.secured.ca_file, kafka_broker.secured.users)
        fake_security = fakebroker_security(fakebroker)
    log = kafka_broker.folder / "server.log" if secured else None
    start = log.stat().st_size if log is not None else 0
    try:
        kafka = run_probe(name, "kafka", kafka_broker.port, RUN_ID + "d", kafka_security)
    except Exception:
        print(kafka_broker.log_tail())
        raise
    since = fakebroker.event_count
    fake = run_probe(name, "fakebroker", fakebroker.servers[0].port, RUN_ID + "d", fake_security)
    steps, differences = compare(kafka.steps, fake.steps)
    entries = [a for a in ALLOWED if a.probe == name]
    used: set[Allowed] = set()
    unexplained = []
    for d in differences:
        entry = next((a for a in entries if a.matches(name, d)), None)
        if entry is None:
            unexplained.append(d)
        else:
            used.add(entry)
    differing_steps = {d.label for d in differences}
    allowed_steps = differing_steps - {d.label for d in unexplained}
    figures = {
        "probe": name,
        "steps": steps,
        "same": steps - len(differing_steps),
        "allowed": len(allowed_steps),
        "different": len(differing_steps) - len(allowed_steps),
    }
    print(json.dumps(figures))
    report = os.environ.get("FAKEBROKER_CONFORMANCE_REPORT")
    if report:
        with open(report, "a") as out:
            out.write(json.dumps(figures) + "\n")
    problems = []
    if kafka.failures:
        problems.append("Kafka did not meet the probe's expectations:\n  " + "\n  ".join(kafka.failures))
    if fake.failures:
        problems.append("fakebroker did not meet the probe's expectations:\n  " + "\n  ".join(fake.failures))
    if unexplained:
        problems.append("differences from Kafka:\n  " + "\n  ".join(map(str, unexplained)))
    if log is not None:
        logged, recorded = kafka_denials(log, start), fake_denials(fakebroker, since)
        if logged != recorded:
            problems.append(
                "denials: Kafka's authorizer logged, not recorded as access_denied:\n  "
                + "\n  ".join(map(str, sorted((logged - recorded).elements())))
                + "\nrecorded as access_denied, not logged by Kafka:\n  "
                + "\n  ".join(map(str, sorted((recorded - logged).elements())))
            )
    stale = [a for a in entries if a not in used]
    if stale:
        problems.append("allowed differences that no longer show (remove them):\n  " + "\n  ".join(map(repr, stale)))
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
