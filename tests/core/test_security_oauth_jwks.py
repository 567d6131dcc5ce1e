"""Kafka's secured OAUTHBEARER validator (core/security/oauthbearer_jwks.py) as Kafka 4.4's
BrokerJwtValidator checks a token against a JWKS (jose4j's JwtConsumer, DISALLOW_NONE, exp and
iat required, the clock skew, the expected audience and issuer), then reads it (the scopes, the
principal from the sub claim, the session ending at exp). Every refusal reaches the client as
Kafka's ``{"status":"invalid_token"}``, after the SASL exchange's two round trips; the reason
(which Kafka only logs) follows jose4j's and Kafka's wording. The keys are made here; no IO."""

from __future__ import annotations

import base64
import json

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, HMACAlgorithm, OKPAlgorithm, RSAAlgorithm

from fakebroker.core.security import SaslFailure, Users, new_server
from fakebroker.core.security.oauthbearer import InvalidOAuthToken, OAuthBearerServer, OAuthToken
from fakebroker.core.security.oauthbearer_jwks import (
    InvalidJwks,
    JsonWebKeySet,
    MissingKeyIds,
    SecuredJwtValidator,
    SecuredSettings,
    UnresolvableKey,
)

NOW_S = 1_800_000_000
NOW = NOW_S * 1000 + 250  # ms; jose4j compares whole seconds
INVALID = b'{"status":"invalid_token"}'
AUDIENCE, ISSUER = "kafka-cluster", "https://issuer.example"
SETTINGS = SecuredSettings(expected_audience=frozenset({AUDIENCE}), expected_issuer=ISSUER)


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def jwk(public_key: object, kid: str, **extra: object) -> dict:
    algorithm = {
        rsa.RSAPublicKey: RSAAlgorithm,
        ec.EllipticCurvePublicKey: ECAlgorithm,
        ed25519.Ed25519PublicKey: OKPAlgorithm,
    }
    maker = next(a for kind, a in algorithm.items() if isinstance(public_key, kind))
    return {**json.loads(maker.to_jwk(public_key)), "kid": kid, **extra}


@pytest.fixture(scope="module")
def jwks(rsa_key, ec_key) -> dict:
    return {"keys": [jwk(rsa_key.public_key(), "rsa-1", use="sig"), jwk(ec_key.public_key(), "ec-1")]}


@pytest.fixture
def validator(jwks) -> SecuredJwtValidator:
    return SecuredJwtValidator(SETTINGS, JsonWebKeySet.from_json(jwks), "file:///keys.json")


def claims(**changes: object) -> dict:
    out: dict = {"sub": "alice", "iat": NOW_S - 5, "exp": NOW_S + 60, "aud": AUDIENCE, "iss": ISSUER}
    out.update(changes)
    return {k: v for k, v in out.items() if v is not None}


def signed(key: object, alg: str = "RS256", kid: str | None = "rsa-1", **changes: object) -> str:
    headers = {"kid": kid} if kid is not None else {}
    return jwt.encode(claims(**changes), key, algorithm=alg, headers=headers)


def part(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def message(token: str) -> bytes:
    return f"n,,\x01auth=Bearer {token}\x01\x01".encode()


def refused(validator: SecuredJwtValidator, token: str, now_ms: int = NOW) -> str:
    """Refused as Kafka's broker refuses: the JSON status first, then after the client's 0x01
    SASL_AUTHENTICATION_FAILED with it; returns the reason (Kafka's log line)."""
    server = new_server("OAUTHBEARER", Users(), now_ms, lambda: "unused", oauth=validator)
    assert isinstance(server, OAuthBearerServer)
    assert server.evaluate(message(token)) == INVALID and not server.complete
    with pytest.raises(SaslFailure) as failed:
        server.evaluate(b"\x01")
    assert str(failed.value) == INVALID.decode()
    with pytest.raises(InvalidOAuthToken) as caught:
        validator.validate(token, now_ms)
    assert caught.value.status == "invalid_token" and caught.value.json_status() == INVALID.decode()
    return str(caught.value)


# -- accepted ---------------------------------------------------------------------------------


def test_an_rs256_token_is_accepted_its_sub_the_principal_and_its_exp_the_session_end(validator, rsa_key):
    server = new_server("OAUTHBEARER", Users(), NOW, lambda: "unused", oauth=validator)
    token = signed(rsa_key, scope=["orders.read", " orders.write "])
    assert server.evaluate(message(token)) == b""
    assert server.complete and server.principal == "User:alice"
    assert server.expiry_ms == (NOW_S + 60) * 1000
    assert server.token == OAuthToken("alice", (NOW_S + 60) * 1000, frozenset({"orders.read", "orders.write"}))


def test_an_es256_token_is_accepted(validator, ec_key):
    token = signed(ec_key, "ES256", "ec-1", sub=" svc-billing ", scope="kafka")
    assert validator.validate(token, NOW) == OAuthToken("svc-billing", (NOW_S + 60) * 1000, frozenset({"kafka"}))


@pytest.mark.parametrize("alg", ["RS384", "RS512", "PS256", "PS384", "PS512"])
def test_every_rsa_algorithm_verifies_with_the_rsa_key(validator, rsa_key, alg):
    assert validator.validate(signed(rsa_key, alg), NOW).principal == "alice"


@pytest.mark.parametrize(("curve", "alg"), [(ec.SECP384R1(), "ES384"), (ec.SECP521R1(), "ES512")])
def test_es384_and_es512_verify_with_keys_on_their_curves(curve, alg):
    key = ec.generate_private_key(curve)
    keys = JsonWebKeySet.from_json({"keys": [jwk(key.public_key(), "k")]})
    validator = SecuredJwtValidator(SETTINGS, keys)
    assert validator.validate(signed(key, alg, "k"), NOW).principal == "alice"


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")  # the test's HS512 with a short key
def test_eddsa_and_an_hmac_key_of_the_jwks_verify_too():
    ed = ed25519.Ed25519PrivateKey.generate()
    secret = b"s" * 32
    oct_jwk = {**json.loads(HMACAlgorithm.to_jwk(secret)), "kid": "hmac"}
    keys = JsonWebKeySet.from_json({"keys": [jwk(ed.public_key(), "ed"), oct_jwk]})
    validator = SecuredJwtValidator(SETTINGS, keys)
    assert validator.validate(signed(ed, "EdDSA", "ed"), NOW).principal == "alice"
    assert validator.validate(signed(secret, "HS256", "hmac"), NOW).principal == "alice"
    # jose4j's key rule: an HMAC key at least as long as the hash
    assert "HMAC SHA algorithms but this key is only 256 bits" in refused(validator, signed(secret, "HS512", "hmac"))


def test_a_token_without_kid_takes_the_key_of_its_type(validator, ec_key):
    assert validator.validate(signed(ec_key, "ES256", kid=None), NOW).principal == "alice"


def test_iat_in_the_future_is_accepted_as_kafka_sets_no_bound(validator, rsa_key):
    assert validator.validate(signed(rsa_key, iat=NOW_S + 30), NOW).principal == "alice"


def test_the_clock_skew_lets_a_just_expired_token_in(validator, rsa_key):
    # jose4j: refused when now (whole seconds) - skew >= exp; Kafka's default skew is 30 s
    assert validator.validate(signed(rsa_key, exp=NOW_S - 29, iat=NOW_S - 100), NOW).principal == "alice"
    reason = refused(validator, signed(rsa_key, exp=NOW_S - 30, iat=NOW_S - 100))
    assert (
        f"[1] The JWT is no longer valid - the evaluation time {NOW_S} is on or after the Expiration Time "
        f"(exp={NOW_S - 30}) claim value (even when providing 30 seconds of leeway to account for clock skew)."
    ) in reason
    strict = SecuredJwtValidator(SecuredSettings(frozenset({AUDIENCE}), ISSUER, clock_skew_seconds=0), validator.keys)
    assert "exp=" in refused(strict, signed(rsa_key, exp=NOW_S))


def test_the_claim_names_are_the_settings(jwks, rsa_key):
    settings = SecuredSettings(frozenset({AUDIENCE}), ISSUER, scope_claim="scp", sub_claim="client_id")
    validator = SecuredJwtValidator(settings, JsonWebKeySet.from_json(jwks))
    token = signed(rsa_key, client_id="svc-orders", scp=["a", "b"], scope="ignored")
    assert validator.validate(token, NOW) == OAuthToken("svc-orders", (NOW_S + 60) * 1000, frozenset({"a", "b"}))
    assert refused(validator, signed(rsa_key)) == "client_id value must be non-null"


def test_any_of_the_expected_audiences_will_do(jwks, rsa_key):
    settings = SecuredSettings(frozenset({"a", "b"}), ISSUER)
    validator = SecuredJwtValidator(settings, JsonWebKeySet.from_json(jwks))
    assert validator.validate(signed(rsa_key, aud=["x", "b"]), NOW).principal == "alice"
    assert "Expected one of [a, b] as an aud value." in refused(validator, signed(rsa_key, aud=["x"]))


def test_unverified_audience_and_issuer_accept_any_or_none():
    settings = SecuredSettings.from_config(
        {"sasl.oauthbearer.allow.unverified.audience": "true", "sasl.oauthbearer.allow.unverified.issuer": True}.get
    )
    assert (settings.expected_audience, settings.expected_issuer, settings.clock_skew_seconds) == (
        frozenset(),
        None,
        30,
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    validator = SecuredJwtValidator(settings, JsonWebKeySet.from_json({"keys": [jwk(key.public_key(), "rsa-1")]}))
    assert validator.validate(signed(key, aud="anyone", iss=None), NOW).principal == "alice"


# -- refused ----------------------------------------------------------------------------------


def test_a_bad_signature_is_refused(validator, rsa_key):
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    reason = refused(validator, signed(other))  # same kid, another key
    assert reason.startswith("Could not validate the access token: JWT rejected due to invalid signature.")
    header, payload, signature = signed(rsa_key).split(".")
    tampered = f"{header}.{part(claims(sub='mallory'))}.{signature}"
    assert "invalid signature" in refused(validator, tampered)


def test_an_unknown_kid_is_refused_naming_the_kid_for_a_refresh(validator, rsa_key):
    with pytest.raises(UnresolvableKey) as caught:
        validator.validate(signed(rsa_key, kid="rsa-2"), NOW)
    assert caught.value.kid == "rsa-2"
    assert str(caught.value).startswith(
        'Could not validate the access token: Unable to find a suitable verification key for JWS w/ header {"alg":'
    )
    assert "obtained from file:///keys.json" in str(caught.value)
    refused(validator, signed(rsa_key, kid="rsa-2"))


def test_a_key_of_another_use_or_type_is_not_used(rsa_key):
    keys = JsonWebKeySet.from_json({"keys": [jwk(rsa_key.public_key(), "rsa-1", use="enc")]})
    with pytest.raises(UnresolvableKey):
        SecuredJwtValidator(SETTINGS, keys).validate(signed(rsa_key), NOW)
    ec_token = signed(ec.generate_private_key(ec.SECP256R1()), "ES256", kid="rsa-1")  # an EC token naming an RSA kid
    with pytest.raises(UnresolvableKey):
        SecuredJwtValidator(SETTINGS, JsonWebKeySet.from_json({"keys": [jwk(rsa_key.public_key(), "rsa-1")]})).validate(
            ec_token, NOW
        )


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")  # the point of the test
def test_an_rsa_key_under_2048_bits_is_refused_as_jose4j_refuses_it():
    small = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    validator = SecuredJwtValidator(SETTINGS, JsonWebKeySet.from_json({"keys": [jwk(small.public_key(), "rsa-1")]}))
    assert "An RSA key of size 2048 bits or larger MUST be used" in refused(validator, signed(small))


@pytest.mark.parametrize(
    ("change", "text"),
    [
        ({"exp": NOW_S - 100}, "[1] The JWT is no longer valid"),
        ({"exp": None}, "[2] No Expiration Time (exp) claim present."),
        ({"iat": None}, "[3] No Issued At (iat) claim present."),
        ({"nbf": NOW_S + 40}, f"[6] The JWT is not yet valid as the evaluation time {NOW_S} is before the Not Before"),
        ({"aud": None}, "[7] No Audience (aud) claim present."),
        ({"aud": "other"}, "[8] Audience (aud) claim [other] doesn't contain an acceptable identifier. Expected"),
        ({"iss": None}, "[11] No Issuer (iss) claim present."),
        (
            {"iss": "https://evil"},
            f"[12] Issuer (iss) claim value (https://evil) doesn't match expected value of {ISSUER}",
        ),
        (
            {"iat": NOW_S + 120},
            f"[17] The Expiration Time (exp={NOW_S + 60}) claim value cannot be before the Issued At",
        ),
        ({"exp": "soon"}, "[18] Invalid claim value: The value of the 'exp' claim is not the expected type"),
        ({"sub": 7}, "[18] Invalid claim value: The value of the 'sub' claim is not the expected type"),
    ],
)
def test_jose4js_claim_checks_refuse_the_token(validator, rsa_key, change, text):
    reason = refused(validator, signed(rsa_key, **change))
    assert reason.startswith("Could not validate the access token: JWT (claims->{")
    assert "rejected due to invalid claims or other invalid content. Additional details: [" in reason
    assert text in reason, reason


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"sub": None}, "sub value must be non-null"),
        ({"sub": ""}, "sub value must be non-empty"),
        ({"sub": "  "}, "sub value must not contain only whitespace"),
        ({"scope": ["a", " a"]}, "scope value must not contain duplicates - a already present"),
        ({"scope": ["a", ""]}, "scope value must be non-empty"),
        ({"exp": -5, "iat": -10}, 'exp value must be non-negative; value given was "-5000"'),
    ],
)
def test_kafkas_own_claim_checks_refuse_the_token(jwks, rsa_key, change, reason):
    lenient = SecuredSettings(frozenset({AUDIENCE}), ISSUER, clock_skew_seconds=2**31 - 1)  # exp=-5 not expired
    validator = SecuredJwtValidator(lenient, JsonWebKeySet.from_json(jwks))
    assert refused(validator, signed(rsa_key, **change)) == reason


def test_alg_none_and_unknown_algorithms_are_refused(validator, rsa_key):
    unsigned = f"{part({'alg': 'none', 'kid': 'rsa-1'})}.{part(claims())}."
    # no signature: Kafka's SerializedJwt finds two sections
    assert (
        refused(validator, unsigned)
        == "Malformed JWT provided; expected three sections (header, payload, and signature)"
    )
    signature = signed(rsa_key).split(".")[2]
    assert refused(validator, f"{part({'alg': 'none'})}.{part(claims())}.{signature}").endswith(
        "'none' is a blocked algorithm."
    )
    assert "unknown, unsupported or unavailable alg algorithm" in refused(
        validator, f"{part({'alg': 'XS256'})}.{part(claims())}.{signature}"
    )
    assert "Signature algorithm header (alg) not set." in refused(validator, f"{part({})}.{part(claims())}.{signature}")


@pytest.mark.parametrize(
    "token",
    ["opaque-token", "a.b", "a.b.c.d", "e30.e30.", "a+b.e30.sig", "e30.e30.sig"],
    ids=["opaque", "two", "four", "empty signature", "not base64url", "empty header"],
)
def test_a_token_of_another_shape_is_refused(validator, token):
    assert refused(validator, token)


def test_duplicate_member_names_and_a_crit_header_are_refused(validator, rsa_key):
    header, payload, signature = signed(rsa_key).split(".")
    duplicate = base64.urlsafe_b64encode(b'{"alg":"RS256","alg":"RS256","kid":"rsa-1"}').rstrip(b"=").decode()
    assert "Names must be unique" in refused(validator, f"{duplicate}.{payload}.{signature}")
    token = jwt.encode(claims(), rsa_key, algorithm="RS256", headers={"kid": "rsa-1", "crit": ["exp"], "exp": 1})
    assert "Unrecognized header 'exp' marked as critical." in refused(validator, token)


# -- the JWKS and the settings ----------------------------------------------------------------


def test_a_jwks_without_keys_is_refused_and_unusable_keys_are_left_out(rsa_key):
    with pytest.raises(InvalidJwks, match="The JSON JWKS content does not include the keys member."):
        JsonWebKeySet.from_json({})
    with pytest.raises(InvalidJwks):
        JsonWebKeySet.from_json(["not", "an", "object"])
    keys = JsonWebKeySet.from_json(
        {
            "keys": [
                {"kty": "XYZ", "kid": "odd"},
                {"kty": "RSA", "kid": "broken", "n": "!"},
                jwk(rsa_key.public_key(), "ok"),
            ]
        }
    )
    assert keys.kids == ["ok"] and [params["kid"] for params, _ in keys.skipped] == ["odd", "broken"]
    assert JsonWebKeySet.from_json({"keys": []}).keys == ()


def test_kafka_44_refuses_to_start_without_an_audience_or_an_issuer():
    with pytest.raises(ValueError) as caught:
        SecuredSettings.from_config({"sasl.oauthbearer.expected.issuer": ISSUER}.get)
    assert str(caught.value).startswith(
        'The OAuth validator for the broker requires "sasl.oauthbearer.expected.audience" to be configured'
    )
    assert '"sasl.oauthbearer.allow.unverified.audience" to true' in str(caught.value)
    with pytest.raises(ValueError) as caught:
        SecuredSettings.from_config({"sasl.oauthbearer.expected.audience": "a, b"}.get)
    assert 'requires "sasl.oauthbearer.expected.issuer" to be configured' in str(caught.value)
    settings = SecuredSettings.from_config(
        {
            "sasl.oauthbearer.expected.audience": "a, b",
            "sasl.oauthbearer.expected.issuer": ISSUER,
            "sasl.oauthbearer.clock.skew.seconds": "5",
            "sasl.oauthbearer.sub.claim.name": "client_id",
        }.get
    )
    assert settings == SecuredSettings(frozenset({"a", "b"}), ISSUER, 5, "scope", "client_id")


def test_a_missing_kid_brings_a_refresh_once_a_minute_for_the_16_latest():
    missing = MissingKeyIds()
    assert missing.should_refresh("k1", 0) and not missing.should_refresh("k1", 59_999)
    assert missing.should_refresh("k1", 60_000)  # the minute is over
    assert not missing.should_refresh(None, 0) and not missing.should_refresh("k" * 1001, 0)
    assert missing.should_refresh("k" * 1000, 0)
    missing.found(["k1"])
    assert missing.should_refresh("k1", 60_001)  # found, then missing again: at once
    fresh = MissingKeyIds()
    for i in range(17):  # the 17th pushes the eldest (k0) out
        assert fresh.should_refresh(f"k{i}", 0)
    assert fresh.should_refresh("k0", 1) and not fresh.should_refresh("k16", 1)
