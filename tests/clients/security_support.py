"""What the SASL_SSL client tests share: a user, and a confluent-kafka client's settings to log in
as that user with SCRAM-SHA-512 over TLS, trusting the cluster's throwaway CA."""

from __future__ import annotations

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
