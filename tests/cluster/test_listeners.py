"""Several listeners per broker (issue 37), as Kafka configures them: ``listeners``,
``listener.security.protocol.map``, ``advertised.listeners`` and listener-prefixed settings.
A client is told the addresses of the listener it connected to, in Metadata, FindCoordinator,
DescribeCluster and the leader endpoints of NOT_LEADER_OR_FOLLOWER answers."""

from __future__ import annotations

import ssl

import pytest

from fakebroker.cluster import ClusterUsageError, FakeCluster
from fakebroker.cluster.listeners import ListenerSpec, listener_specs
from tests.raw_client import RawClient, SaslError, tls_context

METADATA, FIND_COORDINATOR, DESCRIBE_CONFIGS, DESCRIBE_CLUSTER = 3, 10, 32, 60
MIXED = {
    "listeners": "CLIENT://:0,INTERNAL://:0,SECURE://:0",
    "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT,SECURE:SASL_SSL",
    "advertised.listeners": "CLIENT://localhost:0",
}


def port_of(bootstrap: str, index: int = 0) -> int:
    return int(bootstrap.split(",")[index].rsplit(":", 1)[1])


def addresses(bootstrap: str) -> list[tuple[str, int]]:
    return [(h, int(p)) for h, _, p in (a.rpartition(":") for a in bootstrap.split(","))]


# -- the settings ---------------------------------------------------------------------------


def test_without_listeners_one_is_named_for_the_protocol():
    assert listener_specs({}, "SASL_SSL", 9092, None, 1) == [ListenerSpec("SASL_SSL", "SASL_SSL", None, 9092)]


def test_listeners_names_protocols_and_advertised_addresses_are_read_as_kafka_reads_them():
    specs = listener_specs(
        {
            "listeners": "client://127.0.0.1:9092, SASL_SSL://[::1]:9192",
            "listener.security.protocol.map": "CLIENT:SSL",
            "advertised.listeners": "CLIENT://kafka.test:19092",
        },
        "PLAINTEXT",
        0,
        None,
        3,
    )
    assert specs == [
        ListenerSpec("CLIENT", "SSL", "127.0.0.1", 9092, "kafka.test", 19092),
        ListenerSpec("SASL_SSL", "SASL_SSL", "::1", 9192),
    ]
    assert [specs[0].port_of(i) for i in range(3)] == [9092, 9093, 9094]
    assert specs[0].advertised_port_of(2) == 19094


@pytest.mark.parametrize(
    ("config", "options", "message"),
    [
        ({"listeners": "CLIENT://:0"}, {}, "no security protocol for listener CLIENT"),
        ({"listeners": "PLAINTEXT://:0,plaintext://:0"}, {}, "different name (PLAINTEXT twice)"),
        ({"listeners": "PLAINTEXT:9092"}, {}, "is not a listener: NAME://HOST:PORT"),
        ({"listeners": "PLAINTEXT://:70000"}, {}, "is not a listener"),
        ({"listeners": "PLAINTEXT://:9092,SSL://:9093"}, {"brokers": 2}, "would both use 9093 with 2 brokers"),
        ({"listeners": "PLAINTEXT://:0", "listener.security.protocol.map": "X:TLS"}, {}, "is not NAME:PROTOCOL"),
        ({"listeners": "PLAINTEXT://:0", "advertised.listeners": "SSL://h:1"}, {}, "SSL is not one of the listeners"),
        ({"advertised.listeners": "PLAINTEXT://h:1"}, {}, "advertised.listeners needs listeners"),
        ({"listeners": "SSL://:0"}, {"security_protocol": "SSL"}, "give one of them"),
        ({"listeners": "SSL://:0"}, {"port": 9092}, "give the ports in listeners"),
        ({"listeners": "SSL://:0", "listener.name.ssl.ssl.client.auth": "always"}, {}, "the values are none"),
        (
            {"listeners": "SASL_SSL://:0", "listener.name.sasl_ssl.sasl.enabled.mechanisms": "GSSAPI"},
            {},
            "listener SASL_SSL: sasl.enabled.mechanisms='GSSAPI'",
        ),
        ({"listener.name.x.ssl.clent.auth": "required"}, {}, "did you mean 'ssl.client.auth'"),
    ],
)
def test_a_wrong_listener_setting_names_what_is_valid(config, options, message):
    with pytest.raises(ClusterUsageError, match=None) as raised:
        FakeCluster(config=config, **options)
    assert message in str(raised.value)


# -- what clients are told --------------------------------------------------------------------


def test_each_listener_tells_its_clients_its_own_addresses():
    with FakeCluster(brokers=3, config=MIXED, users={"alice": "alice-secret"}).run_in_thread() as cluster:
        assert cluster.listener_names == ["CLIENT", "INTERNAL", "SECURE"]
        assert cluster.security_protocol == "PLAINTEXT"
        assert cluster.bootstrap_servers == cluster.bootstrap_for("client")
        client, internal = addresses(cluster.bootstrap_for("CLIENT")), addresses(cluster.bootstrap_for("INTERNAL"))
        assert {h for h, _ in client} == {"localhost"} and {h for h, _ in internal} == {"127.0.0.1"}
        assert len({p for _, p in client + internal + addresses(cluster.bootstrap_for("SECURE"))}) == 9

        with RawClient(client[1][1]) as raw:  # PLAINTEXT: no login
            told = raw.request(METADATA, 12, {"topics": None})
            assert sorted((b.node_id, b.host, b.port) for b in told.brokers) == [
                (i, h, p) for i, (h, p) in enumerate(client)
            ]
            coordinator = raw.request(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["billing"]})
            assert (coordinator.coordinators[0].host, coordinator.coordinators[0].port) in client
            described = raw.request(DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False})
            assert sorted((b.broker_id, b.host, b.port) for b in described.brokers) == [
                (i, h, p) for i, (h, p) in enumerate(client)
            ]
            configs = raw.request(
                DESCRIBE_CONFIGS,
                4,
                {
                    "resources": [
                        {"resource_type": 4, "resource_name": "1", "configuration_keys": ["advertised.listeners"]}
                    ]
                },
            )
            ports = {name: addresses(cluster.bootstrap_for(name))[1] for name in cluster.listener_names}
            assert configs.results[0].configs[0].value == ",".join(f"{n}://{h}:{p}" for n, (h, p) in ports.items())

        with RawClient(internal[0][1]) as raw:  # SASL_PLAINTEXT: Metadata only after a login
            raw.login("SCRAM-SHA-512", "alice", "alice-secret")
            told = raw.request(METADATA, 12, {"topics": None})
            assert sorted((b.node_id, b.host, b.port) for b in told.brokers) == [
                (i, h, p) for i, (h, p) in enumerate(internal)
            ]
            coordinator = raw.request(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["billing"]})
            assert (coordinator.coordinators[0].host, coordinator.coordinators[0].port) in internal


def test_each_listener_has_its_own_security():
    with FakeCluster(config=MIXED, users={"alice": "alice-secret"}).run_in_thread() as cluster:
        secure = port_of(cluster.bootstrap_for("SECURE"))
        with RawClient(secure, tls=tls_context(cluster.tls_ca_file)) as raw:
            assert raw.login("PLAIN", "alice", "alice-secret").error_code == 0
            assert raw.request(METADATA, 12, {"topics": None}).brokers[0].port == secure
        with RawClient(port_of(cluster.bootstrap_for("INTERNAL"))) as raw, pytest.raises(SaslError):
            raw.login("PLAIN", "alice", "wrong")
        principals = [(e.principal, e.mechanism) for e in cluster.events if e.kind == "client_authenticated"]
        assert principals == [("User:alice", "PLAIN")]


def test_a_listener_prefixed_setting_applies_to_that_listener_only():
    config = {
        "listeners": "PLAINTEXT://:0,SASL_PLAINTEXT://:0,SASL_SSL://:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
        # KIP-684: a SASL_SSL listener asks for client certificates only through its own setting
        "listener.name.sasl_ssl.ssl.client.auth": "required",
    }
    with FakeCluster(config=config, users={"alice": "alice-secret"}).run_in_thread() as cluster:
        with RawClient(port_of(cluster.bootstrap_for("SASL_PLAINTEXT"))) as raw:
            assert raw.login("PLAIN", "alice", "alice-secret").error_code == 0
        with RawClient(port_of(cluster.bootstrap_for("SASL_PLAINTEXT"))) as raw, pytest.raises(SaslError, match="33"):
            raw.login("SCRAM-SHA-256", "alice", "alice-secret")  # UNSUPPORTED_SASL_MECHANISM
        tls_port = port_of(cluster.bootstrap_for("SASL_SSL"))
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):  # no client certificate: refused
            with RawClient(tls_port, tls=tls_context(cluster.tls_ca_file)) as raw:
                raw.login("SCRAM-SHA-256", "alice", "alice-secret")
        cert = cluster.client_certificate("alice")
        context = tls_context(cluster.tls_ca_file)
        context.load_cert_chain(cert.cert_file, cert.key_file)
        with RawClient(tls_port, tls=context) as raw:
            raw.login("SCRAM-SHA-256", "alice", "alice-secret")
            assert raw.request(METADATA, 12, {"topics": None}).brokers[0].port == tls_port


def test_a_restarted_broker_listens_on_every_listener_again_on_the_same_ports():
    config = {"listeners": "PLAINTEXT://:0,OTHER://:0", "listener.security.protocol.map": "OTHER:PLAINTEXT"}
    with FakeCluster(brokers=2, config=config).run_in_thread() as cluster:
        before = {name: cluster.bootstrap_for(name) for name in cluster.listener_names}
        cluster.stop_broker(1)
        cluster.start_broker(1)
        assert {name: cluster.bootstrap_for(name) for name in cluster.listener_names} == before
        other = addresses(before["OTHER"])
        with RawClient(other[1][1]) as raw:
            told = raw.request(METADATA, 12, {"topics": None})
            assert sorted((b.node_id, b.port) for b in told.brokers) == [(i, p) for i, (_, p) in enumerate(other)]


def test_bootstrap_for_an_unknown_listener_names_the_listeners():
    with (
        FakeCluster().run_in_thread() as cluster,
        pytest.raises(ClusterUsageError, match="the listeners are PLAINTEXT"),
    ):
        cluster.bootstrap_for("CLIENT")
