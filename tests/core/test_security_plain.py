"""PLAIN's server side (core/security/plain.py) as Kafka's PlainSaslServer answers: every text it
sends, in the order it checks, each passed through to the client; the authorization id rule;
and the PLAIN passwords of :class:`Users`."""

from __future__ import annotations

import pytest

from fakebroker.core.security import SaslFailure, Users, new_server
from fakebroker.core.security.plain import PlainServer


def users() -> Users:
    found = Users()
    found.add("alice", "s3cret")
    found.add("bob", "hunter2", ["PLAIN"])
    return found


def server(store: Users | None = None) -> PlainServer:
    made = new_server("PLAIN", store or users(), 0, lambda: "unused")
    assert isinstance(made, PlainServer) and made.mechanism == "PLAIN"
    return made


def failure_of(token: bytes, store: Users | None = None) -> str:
    srv = server(store)
    with pytest.raises(SaslFailure) as caught:
        srv.evaluate(token)
    assert caught.value.passthrough is True and not srv.complete
    return str(caught.value)


@pytest.mark.parametrize(("token", "message"), [
    (b"", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"alice\0s3cret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (b"\0alice\0s3cret\0", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    (b"\0alice\0s3cret\0x\0y\0z", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    (b"\0\0s3cret", "Authentication failed: username not specified"),
    (b"\0\0", "Authentication failed: username not specified"),
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
    (b"\0nobody\0s3cret", "Authentication failed: Invalid username or password"),
    (b"\0alice\0S3CRET", "Authentication failed: Invalid username or password"),
    (b"\0alice\0s3cre", "Authentication failed: Invalid username or password"),
    (b"bob\0alice\0s3cret",
     "Authentication failed: Client requested an authorization id that is different from username"),
])  # fmt: skip
def test_every_failure_text(token, message):
    assert failure_of(token) == message


def test_checks_run_in_kafkas_order():
    # the name before the password, the password before the authorization id
    assert failure_of(b"bob\0\0") == "Authentication failed: username not specified"
    assert failure_of(b"bob\0alice\0") == "Authentication failed: password not specified"
    assert failure_of(b"bob\0alice\0wrong") == "Authentication failed: Invalid username or password"


def test_a_failing_password_check_has_its_own_text():
    class Broken(Users):
        def check_plain(self, name: str, password: str) -> bool:
            raise OSError("the password file is gone")

    message = failure_of(b"\0alice\0s3cret", Broken())
    assert message == "Authentication failed: credentials for user could not be verified"


@pytest.mark.parametrize("authzid", [b"", b"alice"])
def test_success_answers_nothing(authzid):
    srv = server()
    assert srv.evaluate(authzid + b"\0alice\0s3cret") == b""
    assert srv.complete and srv.principal == "User:alice" and srv.expiry_ms is None


def test_principal_before_completion_is_an_error():
    with pytest.raises(RuntimeError):
        _ = server().principal


def test_scram_only_user_has_no_plain_password():
    store = Users()
    store.add("carol", "pw", ["SCRAM-SHA-512"])
    assert failure_of(b"\0carol\0pw", store) == "Authentication failed: Invalid username or password"
    assert store.plain_password("carol") is None


def test_names_and_passwords_are_utf8_and_compared_exactly():
    store = Users()
    store.add("zoë", "pässwörd")
    srv = server(store)
    assert srv.evaluate("\0zoë\0pässwörd".encode()) == b"" and srv.principal == "User:zoë"
    assert failure_of("\0zoë\0passwörd".encode(), store) == "Authentication failed: Invalid username or password"
    assert failure_of(b"\0zo\xc3\0p\xc3\xa4sswo\xcc\x88rd", store).startswith("Authentication failed: Invalid")


def test_users_plain_passwords():
    store = users()
    assert store.plain_password("alice") == "s3cret" and store.check_plain("alice", "s3cret")
    assert not store.check_plain("alice", "s3cre") and not store.check_plain("nobody", "")
    store.add("alice", "new", ["PLAIN"])
    assert store.check_plain("alice", "new") and store.scram_credential("alice", "SCRAM-SHA-256") is not None
    store.remove("alice")
    assert store.plain_password("alice") is None and store.scram_credential("alice", "SCRAM-SHA-256") is None
    with pytest.raises(ValueError, match="GSSAPI"):
        store.add("x", "pw", ["GSSAPI"])
    with pytest.raises(ValueError):
        store.add("", "pw")


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_a_successful_round_is_answered_with_an_empty_message_not_null(mechanism):
    """Kafka 4.4's SaslAuthenticate answers without an error leave the message at its default, ""
    (every version; the secured conformance probes compare it), each round of SCRAM too."""
    from fakebroker.core.security.authenticator import Authenticator

    from .scram_client import Client

    auth = Authenticator(["PLAIN", "SCRAM-SHA-512"], users())
    assert auth.handshake(mechanism, 1, 0).error_code == 0
    if mechanism == "PLAIN":
        answers = [auth.authenticate(b"\0alice\0s3cret", 0)]
    else:
        scram = Client(mechanism, "alice", "s3cret")
        first = auth.authenticate(scram.first(), 0)
        answers = [first, auth.authenticate(scram.final(first.auth_bytes), 0)]
    assert [(a.error_code, a.error_message) for a in answers] == [(0, "")] * len(answers)
    assert answers[-1].completed
