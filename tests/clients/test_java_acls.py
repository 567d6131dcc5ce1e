"""Issue 37 with the Java client (kafka-clients 4.4.0): a transactional producer without WRITE on
its transactional id fails ``initTransactions`` with ``TransactionalIdAuthorizationException``
(Kafka's default text), as on Kafka, whether FindCoordinator refuses it (no ACL on the id) or
InitProducerId (DESCRIBE only), and cannot begin a transaction after it. With WRITE granted on
the id and the topic it commits.

Each test runs ``fakebroker.AclScenarios`` (``tests/clients/java``, in the test jar built once per
run by ``java_client_jar``) once over SASL_PLAINTEXT: ``BOOTSTRAP txn key=value...``, JSON lines out.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from fakebroker.cluster import FakeCluster

from .security_support import acl_cluster
from .test_java_client import KAFKA_CLIENTS_VERSION, java_client_jar, java_command  # noqa: F401 (fixture)

pytestmark = [pytest.mark.clients, pytest.mark.java]

MAIN = "fakebroker.AclScenarios"
RUN_TIMEOUT = 90
USERS = {"admin": "a", "alice": "b"}
ALICE = "User:alice"
REFUSED = "org.apache.kafka.common.errors.TransactionalIdAuthorizationException"


def run_txn(jar: Path, cluster: FakeCluster, **args: Any) -> list[dict]:
    settings = {"mechanism": "SCRAM-SHA-512", "user": "alice", "password": USERS["alice"]}
    cmd = java_command(
        "-cp", str(jar), MAIN, cluster.bootstrap_servers, "txn", *(f"{k}={v}" for k, v in (settings | args).items())
    )
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{MAIN} ran over {RUN_TIMEOUT} s\nstderr:\n{exc.stderr}")
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines or lines[-1]["type"] != "end":
        events = "\n".join(e.describe() for e in cluster.events[-60:])
        pytest.fail(f"{MAIN} exited {out.returncode}: {lines[-3:]}\nstderr:\n{out.stderr[-6000:]}\nevents:\n{events}")
    assert (lines[0]["type"], lines[0]["kafka_clients"]) == ("version", KAFKA_CLIENTS_VERSION)
    return lines


def steps(lines: list[dict]) -> dict[str, tuple[str | None, str | None]]:
    return {line["step"]: (line["error"], line["message"]) for line in lines if line["type"] == "step"}


@pytest.fixture
def cluster():
    with acl_cluster(USERS) as c:
        yield c


# what beginTransaction then throws: the fatal state's refusal, or (after an InitProducerId
# refusal, which kafka-clients takes as abortable, depending on when its sender thread got to it)
# the refusal of a producer never initialized
AFTER_FAILURE = {
    ("org.apache.kafka.common.KafkaException", "Cannot execute transactional method because we are in an error state"),
    ("java.lang.IllegalStateException", "from state UNINITIALIZED to state IN_TRANSACTION"),
}


@pytest.mark.parametrize("acl", [None, "DESCRIBE"], ids=["no-acl", "describe-only"])
def test_java_transactional_producer_without_write_on_its_id_fails(java_client_jar, cluster, acl):  # noqa: F811
    tid, topic = f"tx-{uuid.uuid4().hex[:6]}", f"orders-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, 1)
    cluster.acls.allow(ALICE, "WRITE", topic=topic)
    if acl:  # FindCoordinator passes (DESCRIBE on the id); InitProducerId refuses (WRITE)
        cluster.acls.allow(ALICE, acl, transactional_id=tid)
    got = steps(run_txn(java_client_jar, cluster, tid=tid, topic=topic, n=3))
    assert got["init"] == (REFUSED, "Transactional Id authorization failed.")
    error, message = got["begin-after-failure"]
    assert any(error == kind and text in message for kind, text in AFTER_FAILURE), got
    refused_by = [e.details.get("api") for e in cluster.events if e.kind == "request_error"]
    assert ("InitProducerId" in refused_by) == (acl is not None), refused_by
    assert cluster.records(topic) == []


def test_java_transactional_producer_granted_write_commits(java_client_jar, cluster):  # noqa: F811
    tid, topic = f"tx-{uuid.uuid4().hex[:6]}", f"orders-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, 1)
    cluster.acls.allow(ALICE, "WRITE", topic=topic)
    cluster.acls.allow(ALICE, "WRITE", transactional_id=tid)
    lines = run_txn(java_client_jar, cluster, tid=tid, topic=topic, n=3)
    assert steps(lines) == {"init": (None, None), "commit": (None, None)}
    assert [line["i"] for line in lines if line["type"] == "sent"] == [0, 1, 2]
    committed = [value for _, _, _, value in cluster.records(topic, committed=True)]
    assert committed == [b"value-0", b"value-1", b"value-2"]
