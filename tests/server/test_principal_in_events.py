"""Who sent it, in the events of a request and of a connection (issue 37): on a SASL listener,
``request_error``, ``fault_fired`` and ``connection_closed`` name the principal the connection
logged in as, and an authorizer's refusal is an ``access_denied`` event beside the error; a
PLAINTEXT connection (``User:ANONYMOUS``) adds no ``principal`` to anything. On the wire, with a
raw client."""

from __future__ import annotations

import time

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.core.configs import STANDARD_AUTHORIZER
from fakebroker.protocol.error_codes import ErrorCode

from ..raw_client import RawClient

HEARTBEAT, METADATA, JOIN_GROUP = 12, 3, 11
USERS = {"alice": "alice-secret", "admin": "admin-secret"}
CONFIG = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"}
UNKNOWN_MEMBER = {"group_id": "g", "generation_id": 1, "member_id": "nobody", "group_instance_id": None}


@pytest.fixture(scope="module")
def cluster():
    with FakeCluster(security_protocol="SASL_PLAINTEXT", users=USERS, config=CONFIG).run_in_thread() as running:
        yield running


def events_of(cluster, kind: str, client_id: str) -> list:
    deadline = time.monotonic() + 5
    while True:
        found = [e for e in cluster.events if e.kind == kind and e.client_id == client_id]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def test_a_request_error_names_the_principal_and_a_denial_is_recorded_beside_it(cluster):
    with RawClient(cluster.servers[0].port, client_id="alice-raw") as client:
        client.login("PLAIN", "alice", "alice-secret")
        answer = client.request(HEARTBEAT, 4, UNKNOWN_MEMBER)
        assert answer.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    (error,) = events_of(cluster, "request_error", "alice-raw")
    assert error.details == {
        "api": "Heartbeat",
        "client_id": "alice-raw",
        "error": "GROUP_AUTHORIZATION_FAILED",
        "principal": "User:alice",
    }
    (denied,) = events_of(cluster, "access_denied", "alice-raw")
    assert (denied.principal, denied.operation, denied.resource_type, denied.resource, denied.api) == (
        "User:alice",
        "READ",
        "GROUP",
        "g",
        "Heartbeat",
    )
    assert denied.seq < error.seq and denied.broker == 0 and denied.group == "g"


def test_a_fault_and_the_connection_it_closes_name_the_principal(cluster):
    rule = cluster.faults.add(api="Metadata", client_id="admin-raw", action="drop", times=1)
    try:
        with RawClient(cluster.servers[0].port, client_id="admin-raw") as client:
            client.login("PLAIN", "admin", "admin-secret")
            client.send(METADATA, 12, {"topics": None})
            with pytest.raises((ConnectionError, OSError)):
                client.receive_payload()
    finally:
        cluster.faults.remove(rule)
    (fired,) = events_of(cluster, "fault_fired", "admin-raw")
    assert fired.details["principal"] == "User:admin"
    (closed,) = events_of(cluster, "connection_closed", "admin-raw")
    assert closed.details["principal"] == "User:admin"
    assert events_of(cluster, "access_denied", "admin-raw") == []  # a super user


def test_an_anonymous_connection_adds_no_principal():
    with FakeCluster().run_in_thread() as plain:
        with RawClient(plain.servers[0].port, client_id="anon") as client:
            assert client.request(HEARTBEAT, 4, UNKNOWN_MEMBER).error_code != ErrorCode.NONE
        (error,) = events_of(plain, "request_error", "anon")
        assert "principal" not in error.details and error.principal is None
