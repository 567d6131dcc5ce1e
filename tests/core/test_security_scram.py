"""SCRAM-SHA-256/512's server side (core/security/scram.py) as Kafka's ScramSaslServer answers:
RFC 7677's exchange byte for byte, a round trip against a client written here, an unknown user
failing at the first round and a wrong password at the second, Kafka's message patterns,
the saslname escapes and the authorization id, ``tokenauth``, and the stored credential."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from fakebroker.core.security import SaslFailure, Users, new_server
from fakebroker.core.security.scram import (
    ScramCredential,
    ScramServer,
    credential_from_salted,
    make_credential,
    salted_password,
    saslname,
    username,
)

from .scram_client import DIGESTS, Client

# RFC 7677, section 3
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
SERVER_NONCE = "3rfcnhpuu2fffh3xzvwn44ce0"  # Kafka's shape: base 36


def users_with(name="user", password="pencil", mechanisms=("SCRAM-SHA-256", "SCRAM-SHA-512"), **kw) -> Users:
    users = Users()
    users.add(name, password, mechanisms, **kw)
    return users


def server(users: Users, mechanism="SCRAM-SHA-256", nonce=SERVER_NONCE) -> ScramServer:
    made = new_server(mechanism, users, 0, lambda: nonce)
    assert isinstance(made, ScramServer)
    return made


def fails(srv: ScramServer, token: bytes) -> SaslFailure:
    with pytest.raises(SaslFailure) as caught:
        srv.evaluate(token)
    assert not srv.complete
    return caught.value


def log_in(mechanism: str, users: Users, client: Client) -> ScramServer:
    srv = server(users, mechanism)
    first = srv.evaluate(client.first())
    assert not srv.complete
    assert client.verify(srv.evaluate(client.final(first)))
    assert srv.complete
    return srv


# -- RFC 7677 ------------------------------------------------------------------------------------------
def test_rfc_7677_exchange_byte_for_byte():
    users = Users()
    users.set_scram("user", "SCRAM-SHA-256", make_credential("pencil", "SCRAM-SHA-256", 4096, RFC_SALT))
    srv = server(users, nonce=RFC_SERVER_NONCE)
    assert srv.evaluate(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert not srv.complete
    assert srv.evaluate(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert srv.complete and srv.principal == "User:user" and srv.expiry_ms is None


def test_rfc_7677_client_here_computes_the_rfc_messages():
    client = Client("SCRAM-SHA-256", "user", "pencil", nonce=RFC_CLIENT_NONCE)
    assert client.first() == RFC_CLIENT_FIRST
    assert client.final(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL and client.verify(RFC_SERVER_FINAL)


# -- round trips -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_round_trip(mechanism):
    srv = log_in(mechanism, users_with("alice", "s3cret"), Client(mechanism, "alice", "s3cret"))
    assert srv.principal == "User:alice" and srv.mechanism == mechanism and not srv.token_authenticated


def test_server_first_carries_client_nonce_then_server_nonce_salt_and_iterations():
    users = users_with("alice", "pw", ["SCRAM-SHA-512"], iterations=8192)
    credential = users.scram_credential("alice", "SCRAM-SHA-512")
    assert credential is not None
    first = server(users, "SCRAM-SHA-512").evaluate(b"n,,n=alice,r=abc")
    assert first == f"r=abc{SERVER_NONCE},s={base64.b64encode(credential.salt).decode()},i=8192".encode()


def test_password_is_not_normalised():
    users = users_with("alice", "\u2168")  # ROMAN NUMERAL NINE: SASLprep would make it "IX"
    log_in("SCRAM-SHA-512", users, Client("SCRAM-SHA-512", "alice", "\u2168"))
    srv = server(users, "SCRAM-SHA-512")
    client = Client("SCRAM-SHA-512", "alice", "IX")
    assert fails(srv, client.final(srv.evaluate(client.first()))).passthrough is False


# -- failures: which round, and never Kafka's own text ---------------------------------------------------
def test_wrong_password_fails_at_the_second_round():
    srv = server(users_with())
    client = Client("SCRAM-SHA-256", "user", "pencils")
    first = srv.evaluate(client.first())  # the first round cannot tell
    assert first.startswith(b"r=fyko+d2lbbFgONRv9qkxdawL" + SERVER_NONCE.encode())
    failure = fails(srv, client.final(first))
    assert (str(failure), failure.passthrough) == ("Invalid client credentials", False)
    assert "Unexpected challenge" in str(fails(srv, client.final(first)))  # it stays failed


def test_unknown_user_fails_at_the_first_round_without_a_nonce():
    def no_nonce() -> str:
        raise AssertionError("no server-first for an unknown user")

    srv = new_server("SCRAM-SHA-256", users_with(), 0, no_nonce)
    assert isinstance(srv, ScramServer)
    failure = fails(srv, b"n,,n=bob,r=abc")
    assert (str(failure), failure.passthrough) == ("Authentication failed: Invalid user credentials", False)


def test_a_credential_of_the_other_mechanism_does_not_count():
    users = users_with(mechanisms=["SCRAM-SHA-256", "PLAIN"])
    assert fails(server(users, "SCRAM-SHA-512"), b"n,,n=user,r=abc").passthrough is False


def test_stored_iterations_below_4096_fail_at_the_first_round():
    users = Users()
    users.set_scram("user", "SCRAM-SHA-256", make_credential("pencil", "SCRAM-SHA-256", 4095))
    failure = fails(server(users), b"n,,n=user,r=abc")
    assert (str(failure), failure.passthrough) == (
        "Iterations 4095 is less than the minimum 4096 for SCRAM-SHA-256",
        False,
    )


@pytest.mark.parametrize(
    "token",
    [
        b"",
        b"garbage",
        b"y,,n=user,r=abc",  # gs2 header: only "n," (no channel binding)
        b"p=tls-unique,,n=user,r=abc",
        b"n,n=user,r=abc",
        b"n,,n=user",
        b"n,,r=abc,n=user",
        b"n,,n=,r=abc",
        b"n,,n=us=er,r=abc",  # a bare "="
        b"n,,n=us=2Xer,r=abc",
        b"n,,n=us\xc3\xa9r,r=abc",  # names are ASCII
        b"n,,n=user,r=a b",  # nonce: printable, no space
        b"n,,n=user,r=",
        b"n,,n=user,r=abc,",
        b"n,,n=user,r=abc,1x=y",  # extension names are letters
        b"n,,n=user,r=abc,x",
        b"n,,n=user,r=abc\xff",
        b"n,,n=user\x00,r=abc" + b"\x80",
    ],
)
def test_malformed_client_first(token):
    failure = fails(server(users_with()), token)
    assert failure.passthrough is False


def test_reserved_m_field_is_accepted():
    srv = server(users_with())
    assert srv.evaluate(b"n,,m=ext,n=user,r=abc").startswith(b"r=abc")


def first_round(users=None):
    srv = server(users or users_with())
    client = Client("SCRAM-SHA-256", "user", "pencil")
    return srv, client, srv.evaluate(client.first())


def test_client_final_with_another_nonce_fails():
    srv, client, first = first_round()
    final = client.final(first).replace(SERVER_NONCE.encode(), b"forged")
    assert str(fails(srv, final)) == "Invalid client nonce in the final client message."


@pytest.mark.parametrize(
    "mangle",
    [
        lambda f: f.split(b",p=")[0],  # no proof
        lambda f: f.replace(b"c=biws", b"c=biw"),  # not base64
        lambda f: f.replace(b",p=", b",p=*"),
        lambda f: b"r=" + f.split(b",r=")[1],  # no channel binding
        lambda f: f.replace(b"c=biws,", b"") + b",c=biws",  # out of order
        lambda f: f.split(b",p=")[0] + b",p=AAAA",  # a proof of the wrong length
        lambda f: f + b"\xff",
    ],
)
def test_malformed_client_final(mangle):
    srv, client, first = first_round()
    assert fails(srv, mangle(client.final(first))).passthrough is False


def test_channel_binding_is_not_checked():
    srv, client, first = first_round()
    client.gs2 = "y,,"  # a client that says it supports channel binding: Kafka compares nothing
    assert client.verify(srv.evaluate(client.final(first)))


def test_client_final_extensions_are_accepted_and_left_out_of_the_auth_message():
    srv, client, first = first_round()
    nonce = first.decode().split(",")[0][2:]
    final = client.final(first, extensions=",x=y", proof_over=f"c=biws,r={nonce}")
    assert client.verify(srv.evaluate(final))


# -- names and the authorization id ------------------------------------------------------------------------
def test_saslname_escapes():
    assert saslname("a,b=c") == "a=2Cb=3Dc" and username("a=2Cb=3Dc") == "a,b=c"
    assert username("=3D2C") == "=2C"  # "=2C" is read first, then "=3D"
    with pytest.raises(ValueError, match="Invalid username: a=b"):
        username("a=b")


def test_escaped_name_logs_in_as_the_unescaped_user():
    users = users_with("a,b=c", "pw")
    client = Client("SCRAM-SHA-512", "a,b=c", "pw")
    assert client.first() == b"n,,n=a=2Cb=3Dc,r=fyko+d2lbbFgONRv9qkxdawL"
    assert log_in("SCRAM-SHA-512", users, client).principal == "User:a,b=c"


def test_authzid_equal_to_the_name_is_accepted():
    srv = log_in("SCRAM-SHA-256", users_with(), Client("SCRAM-SHA-256", "user", "pencil", authzid="user"))
    assert srv.principal == "User:user"


def test_authzid_other_than_the_name_passes_its_text_through():
    failure = fails(server(users_with()), b"n,a=admin,n=user,r=abc")
    assert str(failure) == "Authentication failed: Client requested an authorization id that is different from username"
    assert failure.passthrough is True


def test_authzid_is_compared_as_sent_with_the_unescaped_name():
    # Kafka compares the escaped authzid with the unescaped name: "a=2Cb" is not "a,b"
    failure = fails(server(users_with("a,b", "pw"), "SCRAM-SHA-512"), b"n,a=a=2Cb,n=a=2Cb,r=abc")
    assert failure.passthrough is True


def test_unknown_user_fails_before_the_authzid_is_looked_at():
    assert fails(server(users_with()), b"n,a=admin,n=bob,r=abc").passthrough is False


# -- extensions ---------------------------------------------------------------------------------------------
def test_tokenauth_is_recorded_and_fails_as_an_unknown_token():
    srv = server(users_with())
    failure = fails(srv, b"n,,n=user,r=abc,tokenauth=TRUE")
    assert (str(failure), failure.passthrough) == ("Token Authentication failed: Invalid tokenId : user", False)
    assert srv.extensions == {"tokenauth": "TRUE"} and srv.token_authenticated


def test_tokenauth_false_and_unknown_extensions_log_in_and_stay_in_the_auth_message():
    client = Client("SCRAM-SHA-256", "user", "pencil", extensions=",tokenauth=false,color=blue")
    srv = log_in("SCRAM-SHA-256", users_with(), client)
    assert srv.extensions == {"tokenauth": "false", "color": "blue"} and not srv.token_authenticated


def test_an_extension_sent_twice_counts_once_in_the_auth_message():
    # Kafka rebuilds client-first-bare from a map: the client's proof over both copies fails
    client = Client("SCRAM-SHA-256", "user", "pencil", extensions=",x=1,x=2")
    srv = server(users_with())
    first = srv.evaluate(client.first())
    assert srv.extensions == {"x": "2"}
    fails(srv, client.final(first))


# -- the exchange's state --------------------------------------------------------------------------------------
def test_principal_before_completion_is_an_error():
    srv, _, _ = first_round()
    with pytest.raises(RuntimeError):
        _ = srv.principal


def test_a_token_after_completion_fails():
    srv = log_in("SCRAM-SHA-256", users_with(), Client("SCRAM-SHA-256", "user", "pencil"))
    with pytest.raises(SaslFailure, match="Unexpected challenge in Sasl server state COMPLETE"):
        srv.evaluate(b"n,,n=user,r=abc")


def test_new_credentials_count_from_the_next_exchange():
    users = users_with()
    srv, client, first = first_round(users)
    users.add("user", "changed", ["SCRAM-SHA-256"])
    assert client.verify(srv.evaluate(client.final(first)))  # the credential read at the first round
    log_in("SCRAM-SHA-256", users, Client("SCRAM-SHA-256", "user", "changed"))


# -- the stored credential ------------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_credential_keys(mechanism):
    digest = DIGESTS[mechanism]
    credential = make_credential("pencil", mechanism, 4096, b"salt")
    salted = hashlib.pbkdf2_hmac(digest, b"pencil", b"salt", 4096)
    assert salted_password(mechanism, "pencil", b"salt", 4096) == salted
    assert credential == ScramCredential(
        b"salt",
        hashlib.new(digest, hmac.digest(salted, b"Client Key", digest)).digest(),
        hmac.digest(salted, b"Server Key", digest),
        4096,
    )
    assert credential_from_salted(mechanism, b"salt", salted, 4096) == credential


def test_random_salts_differ():
    a, b = make_credential("pw", "SCRAM-SHA-256"), make_credential("pw", "SCRAM-SHA-256")
    assert a.salt != b.salt and len(a.salt) == 16 and a.iterations == 4096


def test_unknown_mechanisms_are_refused():
    with pytest.raises(ValueError):
        make_credential("pw", "SCRAM-SHA-1")
    with pytest.raises(ValueError):
        new_server("SCRAM-SHA-1", Users(), 0, lambda: "n")


def test_a_failing_credential_lookup_is_a_generic_failure():
    class Broken(Users):
        def scram_credential(self, name, mechanism):
            raise OSError("the credential store is gone")

    failure = fails(server(Broken()), b"n,,n=user,r=abc")
    assert (str(failure), failure.passthrough) == ("Authentication failed: Credentials could not be obtained", False)
