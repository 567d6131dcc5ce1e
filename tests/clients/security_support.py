"""What the secured client tests share: a user, and a confluent-kafka client's settings to log in
as that user with SCRAM-SHA-512 over TLS, trusting the cluster's throwaway CA; the settings of a
PLAIN login over SASL_PLAINTEXT; and the authorizer settings of the ACL tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fakebroker import FakeCluster

USERS = {"alice": "alice-secret"}


def scram_ssl_settings(cluster: FakeCluster, user: str = "alice") -> dict:
    return {
        "bootstrap.servers": cluster.bootstrap_servers,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": USERS[user],
        "ssl.ca.location": cluster.tls_ca_file,
        "log_level": 3,
    }


# Kafka's authorizer with User:admin as super user (the ACL tests' clusters)
AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
}


def plain_settings(cluster: FakeCluster, user: str, password: str, log_level: int = 3) -> dict:
    """A confluent-kafka client logging in as ``user`` with SASL PLAIN over SASL_PLAINTEXT."""
    return {
        "bootstrap.servers": cluster.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
        "log_level": log_level,
    }


@contextmanager
def acl_cluster(users: dict[str, str]) -> Iterator[FakeCluster]:
    """A SASL_PLAINTEXT cluster with the authorizer on, serving ``users``; no request may have
    failed in a handler by its end."""
    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=users, config=AUTHORIZER).run_in_thread() as c:
        yield c
        assert not [e.describe() for e in c.events if e.kind == "handler_error"]
