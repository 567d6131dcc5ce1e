"""OAUTHBEARER's server side (core/security/oauthbearer.py) as Kafka 4.4's OAuthBearerSaslServer and
its default validator, OAuthBearerUnsecuredValidatorCallbackHandler, answer: the client's message
(RFC 7628) read with Kafka's patterns, the unsecured JWS checks in Kafka's order with Kafka's
comparisons, a refusal in two round trips (the JSON status as a successful challenge, then after
the client's 0x01 as SASL_AUTHENTICATION_FAILED), the authorization id, the session ending at
the token's exp, and a validator of the test's own."""

from __future__ import annotations

import base64
import json

import pytest

from fakebroker.core.security import SaslFailure, Users, new_server
from fakebroker.core.security.authenticator import Authenticator, State
from fakebroker.core.security.oauthbearer import (
    InvalidOAuthToken,
    OAuthBearerServer,
    OAuthToken,
    UnexpectedServerError,
    UnsecuredJwsValidator,
    parse_client_initial_response,
)
from fakebroker.protocol.error_codes import ErrorCode

NOW = 1_800_000_000_000  # ms
INVALID = b'{"status":"invalid_token"}'
NAN_EXP = '{"exp": NaN, "sub": "alice"}'  # Jackson refuses NaN
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"


def part(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


def jws(claims: object, header: object = None, signature: str = "") -> str:
    return f"{part({'alg': 'none'} if header is None else header)}.{part(claims)}.{signature}"


def claims(**extra: object) -> dict[str, object]:
    return {"sub": "alice", "iat": NOW / 1000, "exp": NOW / 1000 + 60, **extra}


def message(token: str, authzid: str = "", extensions: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {token}\x01{extensions}\x01".encode()


def server(validator=None, now_ms: int = NOW) -> OAuthBearerServer:
    made = new_server("OAUTHBEARER", Users(), now_ms, lambda: "unused", oauth=validator)
    assert isinstance(made, OAuthBearerServer) and made.mechanism == "OAUTHBEARER"
    return made


def refusal(token: str, validator=None, now_ms: int = NOW) -> bytes:
    """The first round's answer to a refused token (checked to be refused: not complete, and
    the client's 0x01 then fails with that JSON)."""
    srv = server(validator, now_ms)
    answer = srv.evaluate(message(token))
    assert not srv.complete and answer.startswith(b'{"status":')
    with pytest.raises(SaslFailure) as caught:
        srv.evaluate(b"\x01")
    assert caught.value.passthrough and str(caught.value) == answer.decode()
    return answer


# -- the client's message ---------------------------------------------------------------------


def test_librdkafkas_and_javas_messages_parse():
    parsed = parse_client_initial_response(b"n,,\x01auth=Bearer abc.def.\x01\x01")
    assert (parsed.token, parsed.authorization_id, parsed.extensions) == ("abc.def.", "", {})
    parsed = parse_client_initial_response(b"n,a=alice,\x01auth=bearer a-_~+/.9==\x01traceId=x=1 2\x01\x01")
    assert (parsed.token, parsed.authorization_id, parsed.extensions) == ("a-_~+/.9==", "alice", {"traceId": "x=1 2"})
    parsed = parse_client_initial_response(b"n,,\x01k=1\x01auth=Bearer t\x01k=2\x01\x01")  # the last of a key wins
    assert (parsed.token, parsed.extensions) == ("t", {"k": "2"})


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x01",
        b"n,,\x01\x01",  # no auth
        b"n,,\x01auth=Bearer t\x01",  # no final separator
        b"y,,\x01auth=Bearer t\x01\x01",  # channel binding
        b"n,a=al,ce,\x01auth=Bearer t\x01\x01",  # a comma in the authzid
        b"n,,\x01auth=Bearer\tt\x01\x01",  # a tab between scheme and token
        b"n,,\x01auth=Bearer t t\x01\x01",  # two tokens
        b"n,,\x01auth=Bearer t=x\x01\x01",  # = inside the token
        b"n,,\x01auth=Bearer \x01\x01",  # no token
        b"n,,\x01au th=Bearer t\x01\x01",  # a key of letters only
        b"n,,\x01auth=Bearer t\x01k=\x01\x01",  # an empty value
        "n,,\x01auth=Bearer t\x01k=é\x01\x01".encode(),  # a value outside ASCII
    ],
)
def test_a_message_of_another_shape_fails_with_the_generic_text(raw):
    srv = server()
    with pytest.raises(SaslFailure) as caught:
        srv.evaluate(raw)
    assert caught.value.passthrough is False and not srv.complete
    authenticator = authenticated_connection()[0]
    answer = authenticator.authenticate(raw, NOW)
    assert (answer.error_code, answer.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED, GENERIC)
    assert answer.close_after and not answer.close_now


def test_a_scheme_other_than_bearer_escapes_as_kafkas_runtime_error():
    # Kafka formats its message with a regex group of the wrong matcher: IllegalArgumentException
    with pytest.raises(UnexpectedServerError):
        server().evaluate(b"n,,\x01auth=Basic dXNlcjpwYXNz\x01\x01")


# -- the unsecured validator --------------------------------------------------------------------


def test_an_unsecured_token_is_accepted_and_its_exp_ends_the_session():
    srv = server()
    assert srv.evaluate(message(jws(claims(scope=["a", " b "])))) == b""
    assert srv.complete and srv.principal == "User:alice"
    assert srv.expiry_ms == NOW + 60_000
    assert srv.token == OAuthToken("alice", NOW + 60_000, frozenset({"a", "b"}))


def test_librdkafkas_float_times_are_rounded_as_javas_math_round():
    # librdkafka writes iat and exp with "%.3f"
    srv = server()
    srv.evaluate(message(jws({"sub": "alice", "iat": 1799999999.5, "exp": 1800000060.1235})))
    assert srv.expiry_ms == 1_800_000_060_124
    srv = server()
    srv.evaluate(message(jws({"sub": "alice", "exp": 1800000060})))  # iat is optional
    assert srv.expiry_ms == 1_800_000_060_000


@pytest.mark.parametrize(
    "token",
    [
        jws(claims(), header={"alg": "HS256"}),  # signed
        jws(claims(), header={"alg": "NONE"}),
        jws(claims(), header={"alg": ["none"]}),
        jws(claims(), header={"alg": None}),  # Jackson's text of null: "null"
        jws(claims(), signature="c2ln"),  # a signature
        jws(claims()) + ".",  # four parts
        jws(claims())[:-1],  # two parts
        part({"alg": "none"}) + ".." + part(claims()),  # '..' anywhere
        f"{part({'alg': 'none'})}.{part(claims())[:-1]}+.",  # outside base64url
        f"{part({'alg': 'none'})}.{part(claims()) + 'A' * ((1 - len(part(claims()))) % 4)}.",  # a length of 4k+1
        f"{part({'alg': 'none'})}.{part('{not json')}.",
        f"{part({'alg': 'none'})}.{part(NAN_EXP)}.",
        jws(claims(exp=None)),  # exp is required: Jackson's null is the text "null"
        jws({"sub": "alice"}),
        jws(claims(exp="1800000060")),  # a number, not a text
        jws(claims(sub=5)),  # the principal claim must be a text
        jws({k: v for k, v in claims().items() if k != "sub"}),
        jws(claims(sub=" \t")),  # and not blank
        jws(claims(sub={})),  # an object's text is ""
        jws(claims(iat="now")),
        jws(claims(scope=5)),  # scope: a text or a list
        jws(claims(exp=NOW / 1000)),  # expired: exp must be after now
        jws(claims(exp=NOW / 1000 - 1)),
        jws(claims(iat=NOW / 1000 + 0.001)),  # issued in the future
        jws(claims(iat=NOW / 1000 + 60)),  # exp not after iat (and iat in the future)
        jws([1, 2]),  # claims that are not an object have no members: no exp
        f"{part({'alg': 'none'})}.{part('')}.",
    ],
)
def test_kafkas_unsecured_validator_refuses_with_invalid_token(token):
    assert refusal(token) == INVALID


def test_jacksons_reading_of_the_claims():
    accepted = server()
    # a boolean principal is its text; members after the JSON object are ignored, as Jackson's readTree does
    accepted.evaluate(message(f"{part({'alg': 'none'})}.{part(json.dumps(claims(sub=True)) + ' trailing')}."))
    assert accepted.principal == "User:true"
    accepted = server()
    accepted.evaluate(message(f"{part(' ' + json.dumps({'alg': 'none'}))}.{part(claims())}."))  # leading white space
    assert accepted.complete


@pytest.mark.parametrize(
    "header",
    [{"typ": "JWT"}, "", "[1]", "5"],  # no alg: Kafka's NullPointerException
)
def test_a_header_without_alg_escapes_as_kafkas_runtime_error(header):
    with pytest.raises(UnexpectedServerError):
        server().evaluate(message(f"{part(header)}.{part(claims())}."))


def test_a_header_without_alg_but_malformed_claims_is_an_invalid_token():
    # the claims are read before alg is looked at
    assert refusal(f"{part({'typ': 'JWT'})}.{part('{')}.") == INVALID


def test_the_clock_skew_option_moves_both_ends():
    lenient = UnsecuredJwsValidator(allowable_clock_skew_ms=1000)
    srv = server(lenient)
    srv.evaluate(message(jws(claims(exp=NOW / 1000 - 0.999, iat=NOW / 1000 - 60))))
    assert srv.complete
    srv = server(lenient)
    srv.evaluate(message(jws(claims(iat=NOW / 1000 + 1))))
    assert srv.complete
    assert refusal(jws(claims(exp=NOW / 1000 - 1, iat=NOW / 1000 - 60)), lenient) == INVALID
    assert refusal(jws(claims(iat=NOW / 1000 + 1.001)), lenient) == INVALID


def test_the_principal_claim_option():
    validator = UnsecuredJwsValidator.from_options({"unsecuredValidatorPrincipalClaimName": " client_id "})
    srv = server(validator)
    srv.evaluate(message(jws(claims(client_id="svc-billing"))))
    assert srv.principal == "User:svc-billing"
    assert refusal(jws(claims()), validator) == INVALID  # a sub is not enough any more


def test_required_scopes_refuse_with_insufficient_scope_and_the_scopes_as_a_java_list():
    validator = UnsecuredJwsValidator.from_options({"unsecuredValidatorRequiredScope": "kafka  write"})
    assert validator.required_scope == ["kafka", "write"]
    expected = b'{"status":"insufficient_scope", "scope":"[kafka, write]"}'
    assert refusal(jws(claims()), validator) == expected
    assert refusal(jws(claims(scope=["kafka"])), validator) == expected
    assert refusal(jws(claims(scope="kafka write")), validator) == expected  # a text is ONE scope
    srv = server(validator)
    srv.evaluate(message(jws(claims(scope=["write", "kafka", "other"]))))
    assert srv.complete
    renamed = UnsecuredJwsValidator.from_options(
        {"unsecuredValidatorRequiredScope": "kafka", "unsecuredValidatorScopeClaimName": "scp"}
    )
    srv = server(renamed)
    srv.evaluate(message(jws(claims(scp="kafka"))))
    assert srv.complete
    # the other checks come first: an expired token without the scope is an invalid one
    assert refusal(jws(claims(exp=NOW / 1000 - 1, iat=NOW / 1000 - 60)), validator) == INVALID


@pytest.mark.parametrize(
    ("options", "text"),
    [
        ({"unsecuredValidatorPrincipalClaim": "x"}, "unknown option 'unsecuredValidatorPrincipalClaim'"),
        ({"unsecuredValidatorAllowableClockSkewMs": "soon"}, "unsecuredValidatorAllowableClockSkewMs='soon'"),
        ({"unsecuredValidatorAllowableClockSkewMs": -1}, "must not be negative"),
        ({"unsecuredValidatorRequiredScope": 'a "b"'}, 'Invalid scope value: "b"'),
    ],
)
def test_bad_options_are_named(options, text):
    with pytest.raises(ValueError, match=text):
        UnsecuredJwsValidator.from_options(options)


def test_blank_options_are_kafkas_defaults():
    validator = UnsecuredJwsValidator.from_options(
        {"unsecuredValidatorPrincipalClaimName": " ", "unsecuredValidatorAllowableClockSkewMs": ""}
    )
    assert (validator.principal_claim, validator.scope_claim, validator.allowable_clock_skew_ms) == ("sub", "scope", 0)


# -- the exchange ---------------------------------------------------------------------------------


def test_the_control_a_byte_without_a_refusal_before_is_a_malformed_message():
    srv = server()
    with pytest.raises(SaslFailure) as caught:
        srv.evaluate(b"\x01")
    assert caught.value.passthrough is False


def test_after_a_refusal_another_message_is_read_as_a_new_first_message():
    srv = server()
    assert srv.evaluate(message(jws(claims(exp=1)))) == INVALID
    assert srv.evaluate(message(jws(claims()))) == b"" and srv.complete


def test_an_authorization_id_must_be_the_tokens_principal():
    srv = server()
    assert srv.evaluate(message(jws(claims()), authzid="alice")) == b""
    srv = server()
    with pytest.raises(SaslFailure) as caught:
        srv.evaluate(message(jws(claims()), authzid="bob"))
    assert caught.value.passthrough and str(caught.value) == (
        "Authentication failed: Client requested an authorization id (bob) that is different from the token's "
        "principal name (alice)"
    )


def test_extensions_are_all_accepted():
    srv = server()
    srv.evaluate(message(jws(claims()), extensions="logicalCluster=lkc-1\x01identityPoolId=pool\x01"))
    assert srv.extensions == {"logicalCluster": "lkc-1", "identityPoolId": "pool"}


def test_a_validator_of_ones_own():
    class SvcOnly:
        def validate(self, token: str, now_ms: int) -> OAuthToken:
            if not token.startswith("svc-"):
                raise InvalidOAuthToken("not a service", status="invalid_request", scope=["svc"])
            return OAuthToken(token, now_ms + 5000, {"kafka"})

    srv = server(SvcOnly())
    assert srv.evaluate(message("svc-billing")) == b""
    assert (srv.principal, srv.expiry_ms) == ("User:svc-billing", NOW + 5000)
    assert refusal("bob", SvcOnly()) == b'{"status":"invalid_request", "scope":"[svc]"}'


def test_the_json_status_as_kafka_writes_it():
    refused = InvalidOAuthToken(scope="a b", openid_configuration="https://idp/.well-known/openid-configuration")
    assert refused.json_status() == (
        '{"status":"invalid_token", "scope":"a b", '
        '"openid-configuration":"https://idp/.well-known/openid-configuration"}'
    )


# -- in the authenticator -------------------------------------------------------------------------


def authenticated_connection(reauth_ms: int = 0, validator=None) -> tuple[Authenticator, object]:
    auth = Authenticator(["PLAIN", "OAUTHBEARER"], Users(), reauth_ms=reauth_ms, oauth=validator)
    shake = auth.handshake("OAUTHBEARER", 1, NOW)
    assert shake.error_code == 0 and shake.mechanisms == ["PLAIN", "OAUTHBEARER"]
    return auth, shake


@pytest.mark.parametrize(("reauth_ms", "lifetime"), [(0, 60_000), (10_000, 10_000), (120_000, 60_000)])
def test_the_session_ends_at_the_tokens_exp_even_without_connections_max_reauth_ms(reauth_ms, lifetime):
    auth, _ = authenticated_connection(reauth_ms)
    done = auth.authenticate(message(jws(claims())), NOW)
    assert (done.error_code, done.session_lifetime_ms, done.completed) == (0, lifetime, True)
    assert auth.principal == "User:alice" and auth.session_end_ms == NOW + lifetime


def test_two_round_trips_to_a_refusal_then_a_close_after_the_delay():
    auth, _ = authenticated_connection()
    first = auth.authenticate(message(jws(claims(exp=1))), NOW)
    assert (first.error_code, first.error_message, first.auth_bytes, first.session_lifetime_ms) == (0, "", INVALID, 0)
    assert not first.close_after and not first.completed and auth.state is State.AUTHENTICATE
    second = auth.authenticate(b"\x01", NOW)
    assert (second.error_code, second.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED, INVALID.decode())
    assert second.close_after and not second.close_now and auth.state is State.FAILED


def test_tokens_are_checked_at_the_time_they_arrive():
    auth = Authenticator(["OAUTHBEARER"], Users())
    auth.handshake("OAUTHBEARER", 1, NOW - 120_000)  # the token had not expired at the handshake
    answer = auth.authenticate(message(jws(claims(exp=NOW / 1000, iat=NOW / 1000 - 600))), NOW)
    assert answer.auth_bytes == INVALID


def test_a_runtime_error_closes_at_once_unanswered():
    auth, _ = authenticated_connection()
    answer = auth.authenticate(message(f"{part({'typ': 'JWT'})}.{part(claims())}."), NOW)
    assert answer.close_now and auth.state is State.FAILED
    raw = Authenticator(["OAUTHBEARER"], Users())
    raw.handshake("OAUTHBEARER", 0, NOW)  # raw tokens after a v0 handshake: the same close
    assert raw.raw_token(b"n,,\x01auth=Basic x\x01\x01", NOW) is None


def test_re_authentication_with_a_fresh_token_and_the_same_principal():
    auth, _ = authenticated_connection()
    auth.authenticate(message(jws(claims())), NOW)
    later = NOW + 55_000
    assert auth.handshake("OAUTHBEARER", 1, later).error_code == 0
    fresh = claims(iat=later / 1000, exp=later / 1000 + 60)
    again = auth.authenticate(message(jws(fresh)), later)
    assert (again.error_code, again.session_lifetime_ms, again.completed) == (0, 60_000, True)
    assert auth.session_end_ms == later + 60_000
    auth.handshake("OAUTHBEARER", 1, later + 2000)
    other = auth.authenticate(message(jws(fresh | {"sub": "bob"})), later + 2000)
    assert (other.error_code, other.error_message) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED,
        "Cannot change principals during re-authentication from User.alice: User.bob",
    )


def test_a_refused_re_authentication_passes_the_json_through():
    auth, _ = authenticated_connection()
    auth.authenticate(message(jws(claims())), NOW)
    auth.handshake("OAUTHBEARER", 1, NOW + 50_000)
    first = auth.authenticate(message(jws(claims(exp=1))), NOW + 50_000)
    assert first.auth_bytes == INVALID and first.error_code == 0
    second = auth.authenticate(b"\x01", NOW + 50_000)
    assert (second.error_code, second.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED, INVALID.decode())
