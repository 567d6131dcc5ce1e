"""The users' SCRAM credentials (core/security/users.py) as Kafka 4.4's controller alters them
(ScramControlManager.alterCredentials) and its broker describes them (ScramImage.describe):
the checks and their texts, a user named twice, the order of the results, and the event each
change records."""

from __future__ import annotations

import hashlib

from fakebroker.core.events import EventLog
from fakebroker.core.security.scram import credential_from_salted
from fakebroker.core.security.users import Altered, Deletion, Described, Upsertion, Users
from fakebroker.protocol.error_codes import ErrorCode as E

SHA256, SHA512 = 1, 2
TWICE = "A user credential cannot be altered twice in the same request"


def upsertion(name: str, mechanism: int = SHA256, iterations: int = 4096, password: str = "pw") -> Upsertion:
    salt = f"salt-{name}".encode()
    digest = "sha512" if mechanism == SHA512 else "sha256"
    return Upsertion(
        name, mechanism, iterations, salt, hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    )


def test_upsert_derives_the_stored_keys_from_the_salted_password():
    users = Users()
    up = upsertion("alice", SHA512, 8192)
    assert users.alter([], [up]) == [Altered("alice", E.NONE, None)]
    assert users.scram_credential("alice", "SCRAM-SHA-512") == credential_from_salted(
        "SCRAM-SHA-512", up.salt, up.salted_password, 8192
    )
    assert users.scram_credential("alice", "SCRAM-SHA-256") is None


def test_upsert_replaces_and_delete_removes_one_mechanism():
    users = Users()
    users.add("alice", "pw")
    old = users.scram_credential("alice", "SCRAM-SHA-256")
    assert users.alter([], [upsertion("alice", SHA256, 5000)]) == [Altered("alice", E.NONE, None)]
    new = users.scram_credential("alice", "SCRAM-SHA-256")
    assert new is not None and new != old and new.iterations == 5000
    assert users.alter([Deletion("alice", SHA512)], []) == [Altered("alice", E.NONE, None)]
    assert users.scram_credential("alice", "SCRAM-SHA-512") is None
    assert users.describe(["alice"]) == [Described("alice", E.NONE, "", [(SHA256, 5000)])]
    assert users.plain_password("alice") == "pw"  # PLAIN is not SCRAM's business


def test_each_check_and_its_text():
    users = Users()
    users.add("present", "pw", ["SCRAM-SHA-256"])
    got = users.alter(
        [Deletion("", SHA256), Deletion("d-unknown-mech", 0), Deletion("d-missing", SHA256), Deletion("present", 2)],
        [
            upsertion(""),
            upsertion("u-unknown-mech", 3),
            upsertion("u-few", iterations=4095),
            upsertion("u-many", iterations=16385),
            upsertion("u-max", iterations=16384),
        ],
    )
    assert sorted(got) == sorted(
        [
            Altered("", E.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
            Altered("d-unknown-mech", E.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
            Altered("d-missing", E.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
            Altered("present", E.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
            Altered("u-unknown-mech", E.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
            Altered("u-few", E.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
            Altered("u-many", E.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
            Altered("u-max", E.NONE, None),
        ]
    )
    assert sorted(d.user for d in users.describe()) == ["present", "u-max"]


def test_a_user_named_twice_is_refused_whatever_the_mechanisms():
    users = Users()
    users.add("a", "pw")
    users.add("b", "pw")
    got = users.alter(
        [Deletion("a", SHA256), Deletion("a", SHA512), Deletion("b", SHA256)],
        [upsertion("b", SHA512), upsertion("c", SHA256), upsertion("c", SHA512), upsertion("d")],
    )
    assert got == [
        Altered("d", E.NONE, None),
        Altered("a", E.DUPLICATE_RESOURCE, TWICE),
        Altered("b", E.DUPLICATE_RESOURCE, TWICE),
        Altered("c", E.DUPLICATE_RESOURCE, TWICE),
    ]
    # nothing of a, b or c changed
    assert users.scram_credential("a", "SCRAM-SHA-512") is not None
    assert users.scram_credential("b", "SCRAM-SHA-256") is not None
    assert users.scram_credential("c", "SCRAM-SHA-256") is None


def test_a_user_whose_first_entry_failed_keeps_that_error():
    # Kafka skips every later entry of a user that already has an error: no DUPLICATE_RESOURCE
    got = Users().alter([Deletion("a", SHA256), Deletion("a", SHA256)], [upsertion("a")])
    assert got == [Altered("a", E.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")]


def test_an_empty_salted_password_is_an_unknown_server_error():
    users = Users()
    got = users.alter([], [Upsertion("a", SHA256, 4096, b"salt", b""), upsertion("b")])
    assert got == [Altered("b", E.NONE, None), Altered("a", E.UNKNOWN_SERVER_ERROR, None)]
    assert users.scram_credential("a", "SCRAM-SHA-256") is None


def test_without_scram_in_the_metadata_version_every_entry_is_refused():
    got = Users().alter([Deletion("a", SHA256)], [upsertion("b")], scram_supported=False)
    message = "The current metadata.version does not support SCRAM"
    assert got == [Altered("a", E.UNSUPPORTED_VERSION, message), Altered("b", E.UNSUPPORTED_VERSION, message)]


def test_results_are_deletions_then_upsertions_then_errors_each_in_hash_map_order():
    users = Users()
    for name in "ba":
        users.add(name, "pw")
    got = users.alter(
        [Deletion("b", SHA256), Deletion("a", SHA256), Deletion("z", SHA256)], [upsertion("y"), upsertion("x")]
    )
    assert [(r.user, r.error_code) for r in got] == [
        ("a", 0),
        ("b", 0),
        ("x", 0),
        ("y", 0),
        ("z", E.RESOURCE_NOT_FOUND),
    ]


def test_hash_map_order_remembers_how_large_the_map_grew():
    # 13 deletions grow Kafka's HashMap to 32 buckets; the duplicate "l" then leaves 12 in it,
    # which 32 buckets order a..k, q ("q" is 113: bucket 17 of 32, bucket 1 of 16)
    users = Users()
    names = list("qabcdefghijkl")
    for name in names:
        users.add(name, "pw", ["SCRAM-SHA-256"])
    got = users.alter([Deletion(n, SHA256) for n in names] + [Deletion("l", SHA256)], [])
    assert [r.user for r in got] == [*"abcdefghijk", "q", "l"]
    assert got[-1] == Altered("l", E.DUPLICATE_RESOURCE, TWICE)


def test_describe():
    users = Users()
    users.add("b", "pw")
    users.add("a", "pw", ["SCRAM-SHA-512"], iterations=8192)
    users.add("plain-only", "pw", ["PLAIN"])
    everyone = [
        Described("a", E.NONE, "", [(SHA512, 8192)]),
        Described("b", E.NONE, "", [(SHA256, 4096), (SHA512, 4096)]),
    ]
    assert users.describe() == users.describe([]) == users.describe(None) == everyone
    assert users.describe(["b", "nobody", "a", "a", "plain-only"]) == [
        Described(
            "a",
            E.DUPLICATE_RESOURCE,
            "Cannot describe SCRAM credentials for the same user twice in a single request: a",
            [],
        ),
        Described("b", E.NONE, "", [(SHA256, 4096), (SHA512, 4096)]),
        Described(
            "nobody", E.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: nobody", []
        ),
        Described(
            "plain-only",
            E.RESOURCE_NOT_FOUND,
            "Attempt to describe a user credential that does not exist: plain-only",
            [],
        ),
    ]
    assert Users().describe() == []


def test_each_change_records_an_event_and_set_up_records_none():
    log = EventLog(lambda: 42)
    users = Users(log)
    users.add("alice", "pw")
    assert len(log) == 0
    users.alter([Deletion("alice", SHA512), Deletion("nobody", SHA512)], [upsertion("bob", SHA256, 5000)], now_ms=7)
    assert [(e.kind, e.time_ms, e.details) for e in log] == [
        ("scram_credentials_altered", 7, {"user": "alice", "mechanism": "SCRAM-SHA-512", "change": "deleted"}),
        (
            "scram_credentials_altered",
            7,
            {"user": "bob", "mechanism": "SCRAM-SHA-256", "change": "upserted", "iterations": 5000},
        ),
    ]
    assert (
        list(log)[1].describe()
        == "scram_credentials_altered user=bob mechanism=SCRAM-SHA-256 change=upserted iterations=5000"
    )
    assert users.delete_scram("bob", "SCRAM-SHA-256") and not users.delete_scram("bob", "SCRAM-SHA-256")
    assert len(log) == 3
