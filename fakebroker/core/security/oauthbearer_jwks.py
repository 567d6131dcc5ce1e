"""Kafka's secured OAUTHBEARER validator, as Kafka 4.4's broker runs it when its
``OAuthBearerValidatorCallbackHandler`` is given ``sasl.oauthbearer.jwks.endpoint.url``
(``BrokerJwtValidator``, jose4j's ``JwtConsumer`` with the keys of a JWKS), without IO: the JWKS
comes in as parsed JSON, the time as ``now_ms``. Fetching the JWKS and refreshing it is the
edge's (``fakebroker/cluster/jwks.py``).

A token is checked in Kafka's order:

1. its shape (``SerializedJwt``): three dot-separated sections, none blank, so an unsigned token
   (``alg`` ``none``, the signature empty) fails here already;
2. its header: a JSON object (member names unique) with a known ``alg``; ``none`` is the one
   algorithm refused outright (jose4j's ``DISALLOW_NONE``); ``crit`` naming a header jose4j does
   not know fails;
3. its key, as jose4j's ``VerificationJwkSelector`` picks it from the JWKS: the ``kid`` of the
   header if it has one, the key type of the algorithm, ``use`` ``sig`` and ``key_ops``
   ``verify`` (or absent); among several, those of the same ``alg``, then of the algorithm's
   curve. No key: :class:`UnresolvableKey`, which carries the ``kid`` so that the edge can
   re-fetch the JWKS as Kafka's ``RefreshingHttpsJwks`` does (:class:`MissingKeyIds`);
4. the signature, with jose4j's key rules (RSA keys of 2048 bits or more, HMAC keys at least as
   long as the hash, an EC key on the algorithm's curve), through PyJWT's algorithms;
5. the claims (jose4j's validators, every failure collected): ``exp`` and ``iat`` present,
   ``now`` (in whole seconds) minus ``sasl.oauthbearer.clock.skew.seconds`` before ``exp``,
   ``exp`` not before ``iat`` nor ``nbf``, ``nbf`` not after ``now`` plus the skew, ``aud`` (a
   text or a list) naming one of ``sasl.oauthbearer.expected.audience``, ``iss`` equal to
   ``sasl.oauthbearer.expected.issuer``; ``sub``, ``iss`` and ``jti`` texts and the dates
   numbers when present. ``iat`` may be in the future: Kafka sets no bound on it;
6. Kafka's own reading: the scopes from ``sasl.oauthbearer.scope.claim.name`` (a text is one
   scope, a list several; blank or repeated ones refuse the token), the principal from
   ``sasl.oauthbearer.sub.claim.name`` (a non-blank text, trimmed), the session ending at
   ``exp`` (whole seconds, as jose4j's ``NumericDate`` keeps them).

Every refusal is ``invalid_token`` for the client (``OAuthBearerValidatorCallbackHandler`` sets
no other status); the reason, which Kafka only logs, follows jose4j's and Kafka's wording
(without jose4j's date formatting).

Kafka 4.4 refuses to start a secured validator that checks no audience or no issuer unless told
to accept any (``sasl.oauthbearer.allow.unverified.audience`` / ``...issuer``):
:meth:`SecuredSettings.from_config` raises its ``ConfigException`` text.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ...lazy_dataclasses import dataclass
from .oauthbearer import JWKS_ENDPOINT_URL as JWKS_ENDPOINT_URL  # defined there, read by a cluster at every start
from .oauthbearer import InvalidOAuthToken, OAuthToken

# the broker settings Kafka's secured validator reads (SaslConfigs), with Kafka's defaults
JWKS_REFRESH_MS = "sasl.oauthbearer.jwks.endpoint.refresh.ms"
JWKS_RETRY_BACKOFF_MS = "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms"
JWKS_RETRY_BACKOFF_MAX_MS = "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms"
CLOCK_SKEW_SECONDS = "sasl.oauthbearer.clock.skew.seconds"
EXPECTED_AUDIENCE = "sasl.oauthbearer.expected.audience"
EXPECTED_ISSUER = "sasl.oauthbearer.expected.issuer"
ALLOW_UNVERIFIED_AUDIENCE = "sasl.oauthbearer.allow.unverified.audience"
ALLOW_UNVERIFIED_ISSUER = "sasl.oauthbearer.allow.unverified.issuer"
SCOPE_CLAIM_NAME = "sasl.oauthbearer.scope.claim.name"
SUB_CLAIM_NAME = "sasl.oauthbearer.sub.claim.name"
DEFAULTS: dict[str, object] = {
    JWKS_REFRESH_MS: 3_600_000,
    JWKS_RETRY_BACKOFF_MS: 100,
    JWKS_RETRY_BACKOFF_MAX_MS: 10_000,
    CLOCK_SKEW_SECONDS: 30,
    SCOPE_CLAIM_NAME: "scope",
    SUB_CLAIM_NAME: "sub",
}
SECURED_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"

# alg -> (kty, the curves it takes, its hash's size in bits); jose4j's signature algorithms
ALGORITHMS: dict[str, tuple[str, tuple[str, ...], int]] = {
    "HS256": ("oct", (), 256),
    "HS384": ("oct", (), 384),
    "HS512": ("oct", (), 512),
    "RS256": ("RSA", (), 256),
    "RS384": ("RSA", (), 384),
    "RS512": ("RSA", (), 512),
    "PS256": ("RSA", (), 256),
    "PS384": ("RSA", (), 384),
    "PS512": ("RSA", (), 512),
    "ES256": ("EC", ("P-256",), 256),
    "ES384": ("EC", ("P-384",), 384),
    "ES512": ("EC", ("P-521",), 512),
    "ES256K": ("EC", ("secp256k1",), 256),
    "EdDSA": ("OKP", ("Ed25519", "Ed448"), 0),
}
MIN_RSA_BITS = 2048
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")
_JAVA_WHITESPACE = "".join(chr(c) for c in range(0x21))  # what String.trim() removes
_LONG_MAX = 2**63 - 1


class InvalidJwks(ValueError):
    """A JWKS document jose4j's ``JsonWebKeySet`` refuses (not JSON, no ``keys`` member)."""


class UnresolvableKey(InvalidOAuthToken):
    """No key of the JWKS verifies the token: its ``kid`` (None without one) tells the edge what
    to look for in a fresh JWKS."""

    def __init__(self, reason: str, kid: str | None):
        super().__init__(reason)
        self.kid = kid


# -- the JWKS ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class JsonWebKey:
    """One usable key of a JWKS: its parameters and the key PyJWT made of them."""

    params: Mapping[str, Any]
    key: Any

    @property
    def kid(self) -> str | None:
        kid = self.params.get("kid")
        return kid if isinstance(kid, str) else None

    def describe(self) -> str:
        """jose4j's ``toString`` of a JWK: its public parameters."""
        shown = {k: v for k, v in self.params.items() if k in ("kty", "kid", "use", "alg", "crv", "key_ops")}
        return f"{type(self).__name__}{shown}"


@dataclass(frozen=True)
class JsonWebKeySet:
    """A JWKS read as jose4j's ``JsonWebKeySet`` reads it: a JSON object with a ``keys`` array;
    a key that cannot be used (an unknown ``kty``, bad parameters) is left out, its reason in
    ``skipped`` (jose4j logs and ignores it)."""

    keys: tuple[JsonWebKey, ...]
    skipped: tuple[tuple[Mapping[str, Any], str], ...] = ()

    @classmethod
    def from_json(cls, document: object) -> JsonWebKeySet:
        """From the JSON document (parsed); :class:`InvalidJwks` for one jose4j refuses."""
        if not isinstance(document, Mapping):
            raise InvalidJwks("Unable to parse the JWKS: a JSON object is expected")
        entries = document.get("keys")
        if not isinstance(entries, list):
            raise InvalidJwks("The JSON JWKS content does not include the keys member.")
        keys: list[JsonWebKey] = []
        skipped: list[tuple[Mapping[str, Any], str]] = []
        for entry in entries:
            if not isinstance(entry, Mapping):
                skipped.append(({}, f"not a JSON object: {entry!r}"))
                continue
            try:
                keys.append(JsonWebKey(dict(entry), _make_key(entry)))
            except Exception as exc:  # PyJWT's InvalidKeyError, a base64 or a value error
                skipped.append((dict(entry), f"{type(exc).__name__}: {exc}"))
        return cls(tuple(keys), tuple(skipped))

    @property
    def kids(self) -> list[str]:
        return [key.kid for key in self.keys if key.kid is not None]

    def describe(self) -> str:
        return "[" + ", ".join(key.describe() for key in self.keys) + "]"

    def select(self, header: Mapping[str, Any]) -> JsonWebKey | None:
        """The key jose4j's ``VerificationJwkSelector.select`` picks for a JWS with this header."""
        alg = header.get("alg")
        kty, curves, _ = ALGORITHMS[str(alg)]
        kid = header.get("kid")
        found = [
            key
            for key in self.keys
            if (kid is None or key.params.get("kid") == kid)
            and key.params.get("kty") == kty
            and key.params.get("use", "sig") == "sig"
            and _allows_verify(key.params.get("key_ops"))
        ]
        if len(found) > 1:
            found = [key for key in found if key.params.get("alg", alg) == alg]
        if len(found) > 1 and curves:
            found = [key for key in found if key.params.get("crv") in curves]
        return found[0] if found else None


def _allows_verify(ops: object) -> bool:
    return ops is None or (isinstance(ops, list) and "verify" in ops)


def _make_key(params: Mapping[str, Any]) -> Any:
    """The verification key of a JWK, PyJWT's reading of it (a private key's public half)."""
    from jwt.algorithms import ECAlgorithm, HMACAlgorithm, OKPAlgorithm, RSAAlgorithm

    makers: dict[str, Callable[[Any], Any]] = {
        "RSA": RSAAlgorithm.from_jwk,
        "EC": ECAlgorithm.from_jwk,
        "oct": HMACAlgorithm.from_jwk,
        "OKP": OKPAlgorithm.from_jwk,
    }
    kty = params.get("kty")
    if not isinstance(kty, str) or kty not in makers:
        raise ValueError(f"Unknown key type algorithm: '{kty}'")
    key = makers[kty](dict(params))
    public = getattr(key, "public_key", None)
    return public() if callable(public) else key


# -- the settings -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SecuredSettings:
    """What ``BrokerJwtValidator.configure`` reads from the broker settings."""

    expected_audience: frozenset[str] = frozenset()
    expected_issuer: str | None = None
    clock_skew_seconds: int = 30
    scope_claim: str = "scope"
    sub_claim: str = "sub"

    @classmethod
    def from_config(cls, get: Callable[[str], object]) -> SecuredSettings:
        """From the broker settings (``get(name)``, None when unset); ValueError with Kafka's
        ``ConfigException`` text for a validator Kafka 4.4 would not start."""
        audience = frozenset(_list(get(EXPECTED_AUDIENCE)))
        issuer_value = get(EXPECTED_ISSUER)
        issuer = None if issuer_value is None else str(issuer_value).strip() or None
        if not audience and not _true(get(ALLOW_UNVERIFIED_AUDIENCE)):
            raise ValueError(
                f'The OAuth validator for the broker requires "{EXPECTED_AUDIENCE}" to be configured so that the '
                f'token\'s audience ("aud") claim can be verified, but it was not set. Set "{EXPECTED_AUDIENCE}" '
                f'to the audience(s) that identify this cluster, or set "{ALLOW_UNVERIFIED_AUDIENCE}" to true to '
                "accept tokens regardless of their audience."
            )
        if issuer is None and not _true(get(ALLOW_UNVERIFIED_ISSUER)):
            raise ValueError(
                f'The OAuth validator for the broker requires "{EXPECTED_ISSUER}" to be configured so that the '
                f'token\'s issuer ("iss") claim can be verified, but it was not set. Set "{EXPECTED_ISSUER}" to '
                f'the issuer URL of the OAuth/OIDC provider that signs the tokens, or set "{ALLOW_UNVERIFIED_ISSUER}" '
                "to true to accept tokens regardless of their issuer."
            )
        skew = setting_int(get, CLOCK_SKEW_SECONDS)
        return cls(
            expected_audience=audience,
            expected_issuer=issuer,
            clock_skew_seconds=skew,
            scope_claim=_claim_name(get, SCOPE_CLAIM_NAME),
            sub_claim=_claim_name(get, SUB_CLAIM_NAME),
        )


def setting_int(get: Callable[[str], object], name: str) -> int:
    """A whole-number setting, Kafka's default when unset."""
    value = get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        value = DEFAULTS[name]
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValueError(f"The OAuth configuration option {name} value must be a whole number, not {value!r}") from None


def _claim_name(get: Callable[[str], object], name: str) -> str:
    value = get(name)
    text = str(DEFAULTS[name] if value is None else value).strip()
    if not text:
        raise ValueError(f"The OAuth configuration option {name} value is required")
    return text


def _list(value: object) -> list[str]:
    """A LIST setting: a comma-separated text (blank: none) or a list."""
    if value is None:
        return []
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return [str(item).strip() for item in items if str(item).strip()]


def _true(value: object) -> bool:
    return value is True or str(value).strip().lower() == "true"


# -- the missing kids -------------------------------------------------------------------------


class MissingKeyIds:
    """``RefreshingHttpsJwks.maybeExpediteRefresh``'s memory: a ``kid`` no key has brings the
    JWKS refreshed at once, and again only 60 s later while it stays missing; the 16 most recently
    asked about are remembered; a ``kid`` over 1,000 characters brings no refresh. ``now_ms`` is
    the edge's monotonic time."""

    IN_FLIGHT_MS = 60_000
    MAX_ENTRIES = 16
    MAX_KEY_LENGTH = 1000

    def __init__(self) -> None:
        self._next_check: OrderedDict[str, int] = OrderedDict()

    def should_refresh(self, kid: str | None, now_ms: int) -> bool:
        """Whether a token with this unknown ``kid`` brings a refresh now (and note it)."""
        if kid is None or len(kid) > self.MAX_KEY_LENGTH:
            return False
        next_check = self._next_check.get(kid)
        if next_check is not None:
            self._next_check.move_to_end(kid)  # an access-ordered LinkedHashMap
        if next_check is not None and next_check > now_ms:
            return False
        self._next_check[kid] = now_ms + self.IN_FLIGHT_MS
        self._next_check.move_to_end(kid)
        while len(self._next_check) > self.MAX_ENTRIES:
            self._next_check.popitem(last=False)
        return True

    def found(self, kids: Iterable[str]) -> None:
        """A refresh brought these: they are missing no more."""
        for kid in kids:
            self._next_check.pop(kid, None)


# -- the validator ----------------------------------------------------------------------------


class SecuredJwtValidator:
    """Kafka's ``BrokerJwtValidator`` over the keys of ``keys`` (the edge replaces them after a
    refresh: :meth:`replace_keys`); ``location`` names where they came from, for the reasons."""

    def __init__(self, settings: SecuredSettings, keys: JsonWebKeySet, location: str = "the JWKS"):
        self.settings = settings
        self.keys = keys
        self.location = location

    def replace_keys(self, keys: JsonWebKeySet) -> None:
        self.keys = keys  # one reference swapped: a token being checked keeps the set it started with

    def validate(self, token: str, now_ms: int) -> OAuthToken:
        keys = self.keys
        sections = _java_split(token.strip(_JAVA_WHITESPACE), ".")  # SerializedJwt, before jose4j
        if len(sections) != 3 or any(not s.strip(_JAVA_WHITESPACE) for s in sections):
            raise InvalidOAuthToken("Malformed JWT provided; expected three sections (header, payload, and signature)")
        try:
            header, claims = self._verify(sections, keys)
        except UnresolvableKey:
            raise
        except InvalidOAuthToken as refused:
            raise InvalidOAuthToken(f"Could not validate the access token: {refused}") from None
        errors = _claim_errors(claims, self.settings, now_ms)
        if errors:
            raise InvalidOAuthToken(
                f"Could not validate the access token: JWT (claims->{json.dumps(claims, separators=(',', ':'))}) "
                f"rejected due to invalid claims or other invalid content. Additional details: [{', '.join(errors)}]"
            )
        return _kafkas_token(claims, self.settings)

    def _verify(self, sections: list[str], keys: JsonWebKeySet) -> tuple[dict[str, Any], dict[str, Any]]:
        """The header and claims of a token whose signature a key of ``keys`` verifies."""
        header = _json_object(_base64url(sections[0]), "JOSE Header")
        alg = header.get("alg")
        if alg is None:
            raise InvalidOAuthToken("Signature algorithm header (alg) not set.")
        if alg == "none":
            raise InvalidOAuthToken("'none' is a blocked algorithm.")
        if not isinstance(alg, str) or alg not in ALGORITHMS:
            raise InvalidOAuthToken(f"{alg} is an unknown, unsupported or unavailable alg algorithm")
        crit = header.get("crit")
        for name in crit if isinstance(crit, list) else ([] if crit is None else [crit]):
            if name != "b64":
                raise InvalidOAuthToken(f"Unrecognized header '{name}' marked as critical.")
        kid = header.get("kid")
        jwk = keys.select(header)
        if jwk is None:
            shown = json.dumps(header, separators=(",", ":"))
            raise UnresolvableKey(
                f"Could not validate the access token: Unable to find a suitable verification key for JWS w/ header "
                f"{shown} from JWKs {keys.describe()} obtained from {self.location}",
                kid if isinstance(kid, str) else None,
            )
        _check_key(alg, jwk)
        signing_input = f"{sections[0]}.{sections[1]}".encode("ascii")
        if not _verify_signature(alg, jwk.key, signing_input, _base64url(sections[2])):
            raise InvalidOAuthToken(f"JWT rejected due to invalid signature. Invalid JWS Signature: kid={kid!r}")
        return header, _json_object(_base64url(sections[1]), "JWT Claim Set")


def _java_split(text: str, separator: str) -> list[str]:
    """``String.split``: trailing empty strings dropped."""
    parts = text.split(separator)
    while parts and not parts[-1]:
        parts.pop()
    return parts


def _base64url(section: str) -> bytes:
    section = section.strip(_JAVA_WHITESPACE).rstrip("=")
    if not _BASE64URL.fullmatch(section) or len(section) % 4 == 1:
        raise InvalidOAuthToken("Invalid JOSE Compact Serialization: not base64url")
    try:
        return base64.urlsafe_b64decode(section + "=" * (-len(section) % 4))
    except (binascii.Error, ValueError):
        raise InvalidOAuthToken("Invalid JOSE Compact Serialization: not base64url") from None


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"An entry for '{key}' already exists. Names must be unique.")
        out[key] = value
    return out


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


_JSON = json.JSONDecoder(object_pairs_hook=_unique, parse_constant=_no_constant)


def _json_object(data: bytes, what: str) -> dict[str, Any]:
    try:
        value = _JSON.decode(data.decode("utf-8"))
    except ValueError as exc:  # a UnicodeDecodeError too
        raise InvalidOAuthToken(f"Unable to parse what was expected to be the {what} JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidOAuthToken(f"Unable to parse what was expected to be the {what} JSON: not an object")
    return value


def _check_key(alg: str, jwk: JsonWebKey) -> None:
    """jose4j's key validation for the algorithm (``relaxVerificationKeyValidation`` is off)."""
    kty, curves, bits = ALGORITHMS[alg]
    key = jwk.key
    if kty == "RSA" and key.key_size < MIN_RSA_BITS:
        raise InvalidOAuthToken(
            f"An RSA key of size {MIN_RSA_BITS} bits or larger MUST be used with the all JOSE RSA algorithms (given "
            f"key was only {key.key_size} bits)."
        )
    if kty == "oct" and len(key) * 8 < bits:
        raise InvalidOAuthToken(
            f"A key of the same size as the hash output (i.e. {bits} bits for {alg}) or larger MUST be used with the "
            f"HMAC SHA algorithms but this key is only {len(key) * 8} bits"
        )
    if kty == "EC" and jwk.params.get("crv") not in curves:
        raise InvalidOAuthToken(f"{alg} requires an EC key on {curves[0]}, not {jwk.params.get('crv')}")


def _verify_signature(alg: str, key: Any, signing_input: bytes, signature: bytes) -> bool:
    from jwt.algorithms import get_default_algorithms

    try:
        return bool(get_default_algorithms()[alg].verify(signing_input, key, signature))
    except Exception:  # a key of another kind, a malformed signature
        return False


# -- the claims -------------------------------------------------------------------------------


class _Malformed(Exception):
    pass


def _numeric_date(claims: Mapping[str, Any], name: str) -> int | None:
    """A date claim as jose4j's ``getNumericDateClaimValue`` reads it: a number, truncated to
    whole seconds (``longValue``); None when absent."""
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Malformed(f"The value of the '{name}' claim is not the expected type ({value!r} is not a Number)")
    if isinstance(value, int) and not -(2**63) <= value <= _LONG_MAX:
        raise _Malformed(f"{value} is unreasonable for a NumericDate")
    seconds = int(value) if abs(value) < 2**63 else (_LONG_MAX if value > 0 else -(2**63))
    if abs(seconds) > _LONG_MAX // 1000:
        raise _Malformed(f"converting {seconds} seconds to milliseconds (x1000) resulted in long integer overflow")
    return seconds


def _text_claim(claims: Mapping[str, Any], name: str) -> str | None:
    value = claims.get(name)
    if value is not None and not isinstance(value, str):
        raise _Malformed(f"The value of the '{name}' claim is not the expected type ({value!r} is not a String)")
    return value


def _audiences(claims: Mapping[str, Any]) -> list[str] | None:
    value = claims.get("aud")
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    raise _Malformed(f"The value of the 'aud' claim is not an array of strings or a single string value: {value!r}")


def _claim_errors(claims: Mapping[str, Any], settings: SecuredSettings, now_ms: int) -> list[str]:
    """What jose4j's claim validators find wrong (all of them, in their order), each as jose4j
    writes it: ``[code] text``."""
    errors: list[str] = []

    def check(validator: Callable[[], tuple[int, str] | None]) -> None:
        try:
            error = validator()
        except _Malformed as exc:
            error = (18, f"Invalid claim value: {exc}")  # ErrorCodes.MALFORMED_CLAIM
        if error:
            errors.append(f"[{error[0]}] {error[1]}")

    def audience() -> tuple[int, str] | None:
        if not settings.expected_audience:
            return None  # Kafka skips the check (sasl.oauthbearer.allow.unverified.audience)
        audiences = _audiences(claims)
        if audiences is None:
            return 7, "No Audience (aud) claim present."
        if any(a in settings.expected_audience for a in audiences):
            return None
        expected = sorted(settings.expected_audience)
        shown = expected[0] if len(expected) == 1 else "one of " + "[" + ", ".join(expected) + "]"
        return 8, (
            f"Audience (aud) claim [{', '.join(audiences)}] doesn't contain an acceptable identifier. Expected "
            f"{shown} as an aud value."
        )

    def issuer() -> tuple[int, str] | None:
        iss = _text_claim(claims, "iss")
        if settings.expected_issuer is None:
            return None
        if iss is None:
            return 11, "No Issuer (iss) claim present."
        if iss != settings.expected_issuer:
            return 12, f"Issuer (iss) claim value ({iss}) doesn't match expected value of {settings.expected_issuer}"
        return None

    def dates() -> tuple[int, str] | None:
        exp, iat, nbf = (_numeric_date(claims, name) for name in ("exp", "iat", "nbf"))
        if exp is None:
            return 2, "No Expiration Time (exp) claim present."
        if iat is None:
            return 3, "No Issued At (iat) claim present."
        now = now_ms // 1000  # NumericDate.now(): whole seconds
        skew = settings.clock_skew_seconds
        leeway = f" (even when providing {skew} seconds of leeway to account for clock skew)." if skew > 0 else "."
        if now - skew >= exp:
            return 1, (
                f"The JWT is no longer valid - the evaluation time {now} is on or after the Expiration Time "
                f"(exp={exp}) claim value{leeway}"
            )
        before = f"The Expiration Time (exp={exp}) claim value cannot be before the"
        if exp < iat:
            return 17, f"{before} Issued At (iat={iat}) claim value."
        if nbf is not None and exp < nbf:
            return 17, f"{before} Not Before (nbf={nbf}) claim value."
        if nbf is not None and now + skew < nbf:
            return 6, (
                f"The JWT is not yet valid as the evaluation time {now} is before the Not Before (nbf={nbf}) claim "
                f"time{leeway}"
            )
        return None

    def texts() -> tuple[int, str] | None:  # jose4j reads sub and jti (no value expected): texts, if there
        _text_claim(claims, "sub")
        _text_claim(claims, "jti")
        return None

    for validator in (audience, issuer, dates, texts):
        check(validator)
    return errors


def _kafkas_token(claims: Mapping[str, Any], settings: SecuredSettings) -> OAuthToken:
    """``BrokerJwtValidator.validate`` after jose4j: the scopes, ``exp``, the principal."""
    scope_name, sub_name = settings.scope_claim, settings.sub_claim
    raw = claims.get(scope_name)
    items = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    scopes: set[str] = set()
    for item in items:
        scope = _valid_string(scope_name, item)
        if scope in scopes:
            raise InvalidOAuthToken(f"{scope_name} value must not contain duplicates - {scope} already present")
        scopes.add(scope)
    exp = _numeric_date(claims, "exp")
    assert exp is not None  # jose4j required it
    if exp < 0:
        raise InvalidOAuthToken(f'exp value must be non-negative; value given was "{exp * 1000}"')
    sub = claims.get(sub_name)
    if sub is not None and not isinstance(sub, str):
        raise InvalidOAuthToken(f"Could not extract the '{sub_name}' claim from the access token")
    principal = _valid_string(sub_name, sub)
    iat = _numeric_date(claims, "iat")
    if iat is not None and iat < 0:
        raise InvalidOAuthToken(f'iat value must be null or non-negative; value given was "{iat * 1000}"')
    return OAuthToken(principal, exp * 1000, frozenset(scopes))


def _valid_string(name: str, value: object) -> str:
    """``ClaimValidationUtils.validateString``: present, not empty, not only whitespace; trimmed."""
    if value is None:
        raise InvalidOAuthToken(f"{name} value must be non-null")
    if not isinstance(value, str):
        raise InvalidOAuthToken(f"{name} value must be a text, not {value!r}")
    if not value:
        raise InvalidOAuthToken(f"{name} value must be non-empty")
    trimmed = value.strip(_JAVA_WHITESPACE)
    if not trimmed:
        raise InvalidOAuthToken(f"{name} value must not contain only whitespace")
    return trimmed
