"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51) through their handlers:
what Kafka 4.4 answers (every answer encoded at v0, the one version), the credentials an
upsertion leaves (a client logs in with them), and the events the changes record. The rules
themselves are tested in tests/core/test_security_users.py."""

from __future__ import annotations

import hashlib

from fakebroker.apis import REGISTRY
from fakebroker.apis.registry import served
from fakebroker.core.security import new_server
from fakebroker.protocol.error_codes import ErrorCode as E

from ..core.scram_client import Client
from .support import call, cluster, events_after

API_VERSIONS, DESCRIBE, ALTER = 18, 50, 51
SHA256, SHA512 = 1, 2


def upsertion(name, mechanism=SHA512, password="pw", iterations=4096, salt=b"NaCl"):
    digest = "sha512" if mechanism == SHA512 else "sha256"
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": salt, "salted_password": salted}


def alter(state, deletions=(), upsertions=(), now_ms=0):
    response, _ = call(state, ALTER, 0, now_ms=now_ms, deletions=list(deletions), upsertions=list(upsertions))
    assert response.throttle_time_ms == 0
    return [(r.user, r.error_code, r.error_message) for r in response.results]


def describe(state, *names, users=...):
    asked = [{"name": n} for n in names] if users is ... else users
    response, _ = call(state, DESCRIBE, 0, users=asked)
    assert (response.error_code, response.error_message) == (E.NONE, "")
    return [
        (r.user, r.error_code, r.error_message, [(c.mechanism, c.iterations) for c in r.credential_infos])
        for r in response.results
    ]


def test_both_are_served_at_v0_and_advertised():
    assert {k: (REGISTRY[k].min_version, REGISTRY[k].max_version) for k in (DESCRIBE, ALTER)} == {
        50: (0, 0),
        51: (0, 0),
    }
    for release in ("4.4", "4.3", "3.9"):
        assert served(release)[ALTER] == (0, 0) and served(release)[DESCRIBE] == (0, 0)
    versions, _ = call(cluster(), API_VERSIONS, 3, client_software_name="t", client_software_version="1")
    assert {(k.api_key, k.min_version, k.max_version) for k in versions.api_keys} >= {(50, 0, 0), (51, 0, 0)}


def test_upsert_describe_delete():
    state = cluster()
    assert alter(state, upsertions=[upsertion("alice", iterations=8192)]) == [("alice", E.NONE, None)]
    assert alter(state, upsertions=[upsertion("alice", SHA256)]) == [("alice", E.NONE, None)]
    assert describe(state, "alice") == [("alice", E.NONE, "", [(SHA256, 4096), (SHA512, 8192)])]
    assert alter(state, deletions=[{"name": "alice", "mechanism": SHA256}]) == [("alice", E.NONE, None)]
    assert describe(state, users=None) == [("alice", E.NONE, "", [(SHA512, 8192)])]
    assert alter(state, deletions=[{"name": "alice", "mechanism": SHA512}]) == [("alice", E.NONE, None)]
    assert describe(state, users=[]) == []
    assert describe(state, "alice") == [
        ("alice", E.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: alice", [])
    ]


def test_refusals_are_per_user():
    state = cluster()
    state.users.add("bob", "pw")
    got = alter(
        state,
        deletions=[{"name": "ghost", "mechanism": SHA256}, {"name": "bob", "mechanism": 9}],
        upsertions=[upsertion("carol", iterations=100), upsertion("dave"), upsertion("dave", SHA256)],
    )
    assert sorted(got) == [
        ("bob", E.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        ("carol", E.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ("dave", E.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
        ("ghost", E.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
    ]
    assert describe(state, users=None) == [("bob", E.NONE, "", [(SHA256, 4096), (SHA512, 4096)])]


def test_describe_the_same_user_twice():
    state = cluster()
    state.users.add("a", "pw", ["SCRAM-SHA-256"])
    assert describe(state, "b", "a", "b") == [
        ("a", E.NONE, "", [(SHA256, 4096)]),
        (
            "b",
            E.DUPLICATE_RESOURCE,
            "Cannot describe SCRAM credentials for the same user twice in a single request: b",
            [],
        ),
    ]


def test_an_upserted_credential_logs_in():
    state = cluster()
    alter(state, upsertions=[upsertion("alice", SHA512, "s3cret", 4096, b"random salt")])
    client = Client("SCRAM-SHA-512", "alice", "s3cret")
    srv = new_server("SCRAM-SHA-512", state.users, 0, lambda: "servernonce")
    first = srv.evaluate(client.first())
    assert b",s=cmFuZG9tIHNhbHQ=,i=4096" in first  # the client's salt, as sent
    assert client.verify(srv.evaluate(client.final(first))) and srv.principal == "User:alice"


def test_each_change_records_an_event_at_the_request_time():
    state = cluster()
    state.users.add("bob", "pw")
    mark = len(state.events)
    alter(
        state,
        deletions=[{"name": "bob", "mechanism": SHA256}],
        upsertions=[upsertion("alice"), upsertion("", SHA256)],
        now_ms=1234,
    )
    got = [(e.kind, e.time_ms, e.user, e.mechanism, e.change) for e in events_after(state, mark)]
    assert got == [
        ("scram_credentials_altered", 1234, "bob", "SCRAM-SHA-256", "deleted"),
        ("scram_credentials_altered", 1234, "alice", "SCRAM-SHA-512", "upserted"),
    ]
