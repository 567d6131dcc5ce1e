"""Real admin clients manage SCRAM credentials (AlterUserScramCredentials, DescribeUserScramCredentials)
on a PLAINTEXT listener, as with Kafka's ``kafka-configs --entity-type users``: confluent-kafka's
AdminClient and kafka-python's KafkaAdminClient upsert, describe and delete, and the cluster
records each change. The credential a client upserted is the one a SCRAM login is checked
against (the client computes the salted password; the broker keeps only the derived keys)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka import KafkaAdminClient
from kafka.admin import ScramMechanism as KpMechanism
from kafka.admin import UserScramCredentialDeletion as KpDeletion
from kafka.admin import UserScramCredentialUpsertion as KpUpsertion

from fakebroker.cluster import FakeCluster
from fakebroker.core.security import new_server

from ..core.scram_client import Client

pytestmark = pytest.mark.clients
SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


@pytest.fixture
def cluster():
    with FakeCluster(brokers=1).run_in_thread() as c:
        yield c


def alter(admin: AdminClient, *alterations) -> None:
    for future in admin.alter_user_scram_credentials(list(alterations), request_timeout=10).values():
        future.result(10)


def described(admin: AdminClient, *users: str) -> dict:
    """user -> {mechanism name: iterations} (every user when none is named)."""
    if users:
        found = {u: f.result(10) for u, f in admin.describe_user_scram_credentials(list(users)).items()}
    else:
        found = admin.describe_user_scram_credentials(request_timeout=10).result(10)
    return {u: {c.mechanism.name: c.iterations for c in d.scram_credential_infos} for u, d in found.items()}


def scram_changes(cluster: FakeCluster) -> list[tuple]:
    return [
        (e.user, e.mechanism, e.change, e.details.get("iterations"))
        for e in cluster.events
        if e.kind == "scram_credentials_altered"
    ]


def test_confluent_kafka_upserts_describes_and_deletes(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 3})
    assert described(admin) == {}
    alter(
        admin,
        UserScramCredentialUpsertion("alice", ScramCredentialInfo(SHA256, 8192), b"s3cret"),
        UserScramCredentialUpsertion("bob", ScramCredentialInfo(SHA512, 4096), b"hunter2", b"pinch of salt"),
    )
    # one mechanism per user per request: Kafka refuses a user altered twice in one request
    alter(admin, UserScramCredentialUpsertion("alice", ScramCredentialInfo(SHA512, 10000), b"s3cret"))
    assert described(admin) == {
        "alice": {"SCRAM_SHA_256": 8192, "SCRAM_SHA_512": 10000},
        "bob": {"SCRAM_SHA_512": 4096},
    }
    alter(admin, UserScramCredentialDeletion("alice", SHA256), UserScramCredentialDeletion("bob", SHA512))
    assert described(admin, "alice") == {"alice": {"SCRAM_SHA_512": 10000}}
    assert described(admin) == {"alice": {"SCRAM_SHA_512": 10000}}
    with pytest.raises(KafkaException) as missing:
        described(admin, "bob")
    assert missing.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND
    with pytest.raises(KafkaException) as refused:
        alter(admin, UserScramCredentialUpsertion("carol", ScramCredentialInfo(SHA256, 100), b"pw"))
    assert refused.value.args[0].code() == KafkaError.UNACCEPTABLE_CREDENTIAL
    changes = scram_changes(cluster)  # within a request, in Kafka's (HashMap) order of the users
    assert sorted(changes[:2]) == [
        ("alice", "SCRAM-SHA-256", "upserted", 8192),
        ("bob", "SCRAM-SHA-512", "upserted", 4096),
    ]
    assert changes[2] == ("alice", "SCRAM-SHA-512", "upserted", 10000)
    assert sorted(changes[3:]) == [
        ("alice", "SCRAM-SHA-256", "deleted", None),
        ("bob", "SCRAM-SHA-512", "deleted", None),
    ]


def test_kafka_python_upserts_describes_and_deletes(cluster):
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10_000)
    try:
        assert admin.alter_user_scram_credentials(
            [KpUpsertion("alice", KpMechanism.SCRAM_SHA_512, "s3cret", iterations=4096)]
        ) == {"alice": None}
        got = admin.describe_user_scram_credentials(["alice"])
        assert got["alice"]["error"] is None
        assert [(c["mechanism"], c["iterations"]) for c in got["alice"]["credential_infos"]] == [
            (KpMechanism.SCRAM_SHA_512, 4096)
        ]
        assert admin.alter_user_scram_credentials([KpDeletion("alice", KpMechanism.SCRAM_SHA_512)]) == {"alice": None}
        assert admin.describe_user_scram_credentials() == {}
        gone = admin.alter_user_scram_credentials([KpDeletion("alice", KpMechanism.SCRAM_SHA_512)])
        assert "exist" in gone["alice"]
    finally:
        admin.close()


def test_the_upserted_password_is_the_one_a_login_checks(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 3})
    alter(admin, UserScramCredentialUpsertion("alice", ScramCredentialInfo(SHA512, 4096), b"s3cret"))
    client = Client("SCRAM-SHA-512", "alice", "s3cret")
    srv = new_server("SCRAM-SHA-512", cluster.state.users, 0, lambda: "nonce")
    assert client.verify(srv.evaluate(client.final(srv.evaluate(client.first()))))
