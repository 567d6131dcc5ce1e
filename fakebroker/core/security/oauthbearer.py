"""OAUTHBEARER (RFC 7628) as Kafka 4.4's broker does it (``OAuthBearerSaslServer``,
``OAuthBearerClientInitialResponse``) with Kafka's default validator, the unsecured JWS one
(``OAuthBearerUnsecuredValidatorCallbackHandler``, ``OAuthBearerUnsecuredJws``,
``OAuthBearerValidationUtils``), or a validator of the test's own.

The client's one message is ``n,[a=<authzid>],`` ``\\x01auth=Bearer <token>\\x01`` then
``key=value\\x01`` extensions and a final ``\\x01``. A message of another shape, or without
``auth``, fails with Kafka's generic text (a ``SaslFailure`` that does not pass through). A
token the validator refuses takes two round trips, as in Kafka: the first answer is a success
(error code 0) whose bytes are the JSON status (``{"status":"invalid_token"}``); the client
answers that with the single byte ``0x01``, and only then does the exchange fail, the JSON as
the error message. A token it accepts ends the exchange with an empty answer; the principal is
``User:`` and the token's principal name (an authorization id, if sent, must be that name), and
the token's expiry bounds the session (``expiry_ms``), with or without
``connections.max.reauth.ms``. Every extension is accepted, as Kafka's validators accept them.

Kafka lets two malformed messages escape its SASL server as runtime errors, and so closes the
connection at once, unanswered: an ``auth`` scheme other than ``Bearer`` (its error message
names a regex group that does not exist) and an unsecured token whose header has no ``alg``.
Both raise :class:`UnexpectedServerError` here for the authenticator to do the same.

The unsecured validator reads the token as Kafka does: three dot-separated base64url parts, no
``..``, the signature empty, the header and claims JSON objects (Jackson's reading: a number
stays a number, an array becomes a list of texts, anything else its text), ``alg`` ``none``,
``exp`` a number, the principal claim (``sub`` unless configured) a non-blank text, ``iat``
a number if present; then, at the cluster clock's ``now``: ``iat`` not after now plus the
allowed skew, ``exp`` after now minus it, ``exp`` after ``iat``, and every required scope in
the token's scope claim (a text is one scope, a list several). A missing scope is
``insufficient_scope`` with the required ones as a Java list (``[a, b]``); every other failure
is ``invalid_token``.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import field
from typing import Protocol

from ...lazy_dataclasses import dataclass
from .sasl import SaslFailure

MECHANISM = "OAUTHBEARER"
CONTROL_A = b"\x01"  # the client's answer to an error status (RFC 7628 section 3.2.3)

# OAuthBearerClientInitialResponse's patterns, in Python's spelling of Java's
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"  # [\x01-\x7F&&[^=,]]|=2C|=3D
_KEY = "[A-Za-z]+"
_VALUE = "[\\x21-\\x7e \\t\\r\\n]+"
_KVPAIRS = rf"(?:{_KEY}={_VALUE}\x01)*"
_CLIENT_INITIAL_RESPONSE = rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>{_KVPAIRS})\x01"
_AUTH = r"(?P<scheme>[A-Za-z0-9_]+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)"
_SCOPE_ITEM = r"[\x23-\x5b\x5d-\x7e\x21]+"  # OAuthBearerScopeUtils
_BASE64URL = r"[A-Za-z0-9_-]*"
_JAVA_WHITESPACE = "".join(chr(c) for c in range(0x21))  # what String.trim() removes
_LONG_MAX, _LONG_MIN = 2**63 - 1, -(2**63)


@functools.cache  # compiled at the first OAUTHBEARER exchange, not at import: a cluster without it needs none
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


# the unsecured validator's options (JAAS options of OAuthBearerLoginModule in Kafka)
PRINCIPAL_CLAIM_OPTION = "unsecuredValidatorPrincipalClaimName"
SCOPE_CLAIM_OPTION = "unsecuredValidatorScopeClaimName"
REQUIRED_SCOPE_OPTION = "unsecuredValidatorRequiredScope"
CLOCK_SKEW_OPTION = "unsecuredValidatorAllowableClockSkewMs"
OPTIONS = (PRINCIPAL_CLAIM_OPTION, SCOPE_CLAIM_OPTION, REQUIRED_SCOPE_OPTION, CLOCK_SKEW_OPTION)

# the broker setting that chooses Kafka's secured validator (``oauthbearer_jwks.py``); here so
# that a cluster can ask whether it is set without importing that validator
JWKS_ENDPOINT_URL = "sasl.oauthbearer.jwks.endpoint.url"


@dataclass(frozen=True)
class OAuthToken:
    """A token a validator accepted: the principal's name (the connection becomes
    ``User:<principal>``), when the token expires (ms since the epoch, the cluster clock's:
    the session ends there) and its scopes."""

    principal: str
    expiry_ms: int
    scopes: Collection[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scopes", frozenset(self.scopes))  # any collection given, kept as a set


class InvalidOAuthToken(Exception):
    """A validator refuses a token. The client is told ``status`` (RFC 6749's error codes:
    ``invalid_token``, ``insufficient_scope``, ...), with ``scope`` and
    ``openid_configuration`` when given, as Kafka's JSON status; ``str()`` is the reason, which
    Kafka only logs."""

    def __init__(
        self,
        reason: str = "",
        *,
        status: str = "invalid_token",
        scope: str | Sequence[str] | None = None,
        openid_configuration: str | None = None,
    ):
        super().__init__(reason)
        self.status = status
        self.scope = scope if scope is None or isinstance(scope, str) else java_list(scope)
        self.openid_configuration = openid_configuration

    def json_status(self) -> str:
        """What the client is sent, exactly as ``OAuthBearerSaslServer.jsonErrorResponse``
        writes it (the space after each comma included)."""
        text = f'{{"status":"{self.status}"'
        if self.scope is not None:
            text += f', "scope":"{self.scope}"'
        if self.openid_configuration is not None:
            text += f', "openid-configuration":"{self.openid_configuration}"'
        return text + "}"


class UnexpectedServerError(Exception):
    """An error Kafka's SASL server lets escape as a runtime exception: Kafka closes the
    connection at once, unanswered."""


class TokenValidator(Protocol):
    """What validates a token (Kafka's ``OAuthBearerValidatorCallback`` handler)."""

    def validate(self, token: str, now_ms: int) -> OAuthToken:
        """The token's principal, expiry and scopes; raises :class:`InvalidOAuthToken`."""
        ...


def java_list(items: Sequence[str]) -> str:
    """``List.toString()``: ``[a, b]``."""
    return "[" + ", ".join(items) + "]"


@dataclass(frozen=True)
class ClientInitialResponse:
    token: str
    authorization_id: str
    extensions: dict[str, str]


def parse_client_initial_response(message: bytes) -> ClientInitialResponse:
    """The client's message as ``OAuthBearerClientInitialResponse`` reads it; a
    :class:`SaslFailure` (Kafka's ``SaslException``: the client gets the generic text) when it
    does not parse, :class:`UnexpectedServerError` for a scheme other than Bearer."""
    text = message.decode("utf-8", "replace")
    matched = _compiled(_CLIENT_INITIAL_RESPONSE).fullmatch(text)
    if matched is None:
        raise SaslFailure("Invalid OAUTHBEARER client first message", passthrough=False)
    properties: dict[str, str] = {}
    for pair in matched["kvpairs"].split("\x01"):
        if pair:  # Java's split drops the trailing empty string
            key, _, value = pair.partition("=")
            properties[key] = value
    auth = properties.pop("auth", None)
    if auth is None:
        raise SaslFailure("Invalid OAUTHBEARER client first message: 'auth' not specified", passthrough=False)
    scheme = _compiled(_AUTH).fullmatch(auth)
    if scheme is None:
        raise SaslFailure("Invalid OAUTHBEARER client first message: invalid 'auth' format", passthrough=False)
    if scheme["scheme"].lower() != "bearer":
        # Kafka formats this message with a group of the wrong matcher: IllegalArgumentException
        raise UnexpectedServerError(f"Invalid scheme in OAUTHBEARER client first message: {scheme['scheme']}")
    return ClientInitialResponse(scheme["token"], matched["authzid"] or "", properties)


class OAuthBearerServer:
    """The server side of one OAUTHBEARER exchange, its tokens checked by ``validator`` at
    ``now_ms`` (the cluster clock's; the authenticator sets it before each token)."""

    mechanism = MECHANISM

    def __init__(self, validator: TokenValidator, now_ms: int):
        self._validator = validator
        self.now_ms = now_ms
        self._error: str | None = None  # the JSON status of the previous round's refusal
        self._token: OAuthToken | None = None
        self.extensions: dict[str, str] = {}

    @property
    def complete(self) -> bool:
        return self._token is not None

    @property
    def principal(self) -> str:
        if self._token is None:
            raise RuntimeError("Authentication exchange has not completed")
        return f"User:{self._token.principal}"

    @property
    def expiry_ms(self) -> int | None:
        return self._token.expiry_ms if self._token is not None else None

    @property
    def token(self) -> OAuthToken | None:
        """The token accepted, once complete."""
        return self._token

    def evaluate(self, token: bytes) -> bytes:
        if token == CONTROL_A and self._error is not None:
            raise SaslFailure(self._error)  # Kafka's SaslAuthenticationException: the JSON reaches the client
        self._error = None
        response = parse_client_initial_response(token)
        try:
            accepted = self._validator.validate(response.token, self.now_ms)
        except InvalidOAuthToken as refused:
            self._error = refused.json_status()
            return self._error.encode("utf-8")
        authzid = response.authorization_id
        if authzid and authzid != accepted.principal:
            raise SaslFailure(
                f"Authentication failed: Client requested an authorization id ({authzid}) that is different "
                f"from the token's principal name ({accepted.principal})"
            )
        self.extensions = response.extensions  # every one valid, as Kafka's validators say
        self._token = accepted
        return b""


# -- Kafka's default validator ---------------------------------------------------------------


class UnsecuredJwsValidator:
    """Kafka's ``OAuthBearerUnsecuredValidatorCallbackHandler``: an unsigned JWS (``alg``
    ``none``) is taken at its word. ``principal_claim`` (default ``sub``), ``scope_claim``
    (``scope``), ``required_scope`` and ``allowable_clock_skew_ms`` (0) are its options
    (``unsecuredValidatorPrincipalClaimName``, ``...ScopeClaimName``, ``...RequiredScope``,
    ``...AllowableClockSkewMs``)."""

    def __init__(
        self,
        principal_claim: str = "sub",
        scope_claim: str = "scope",
        required_scope: Sequence[str] = (),
        allowable_clock_skew_ms: int = 0,
    ):
        self.principal_claim = principal_claim.strip() or "sub"
        self.scope_claim = scope_claim.strip() or "scope"
        self.required_scope = list(required_scope)
        for item in self.required_scope:
            if not _compiled(_SCOPE_ITEM).fullmatch(item):
                raise ValueError(f"Invalid scope value: {item}")
        if allowable_clock_skew_ms < 0:
            raise ValueError(f"Allowable clock skew millis must not be negative: {allowable_clock_skew_ms}")
        self.allowable_clock_skew_ms = allowable_clock_skew_ms

    @classmethod
    def from_options(cls, options: Mapping[str, object]) -> UnsecuredJwsValidator:
        """From the JAAS options Kafka reads (``unsecuredValidator...``), values as text or
        numbers; ValueError naming the options for an unknown one or a bad value."""
        unknown = [name for name in options if name not in OPTIONS]
        if unknown:
            valid = ", ".join(OPTIONS)
            raise ValueError(f"unknown option {unknown[0]!r}: the unsecured validator's options are {valid}")
        text = {name: str(value) for name, value in options.items() if value is not None}
        skew_text = text.get(CLOCK_SKEW_OPTION, "").strip()
        try:
            skew = int(skew_text) if skew_text else 0
        except ValueError:
            raise ValueError(f"{CLOCK_SKEW_OPTION}={skew_text!r}: a whole number of ms") from None
        return cls(
            principal_claim=text.get(PRINCIPAL_CLAIM_OPTION, ""),
            scope_claim=text.get(SCOPE_CLAIM_OPTION, ""),
            required_scope=[item for item in text.get(REQUIRED_SCOPE_OPTION, "").strip().split(" ") if item],
            allowable_clock_skew_ms=skew,
        )

    def validate(self, token: str, now_ms: int) -> OAuthToken:
        jws = UnsecuredJws(token, self.principal_claim, self.scope_claim)
        skew = self.allowable_clock_skew_ms
        iat, exp = jws.issued_at, jws.expiration_time
        if iat is not None and 1000 * iat > now_ms + skew:
            raise InvalidOAuthToken(
                f"The Issued At value ({iat:f} seconds) was after the indicated time ({now_ms} ms) plus allowable "
                f"clock skew ({skew} ms)"
            )
        if now_ms - skew >= 1000 * exp:
            raise InvalidOAuthToken(
                f"The indicated time ({now_ms} ms) minus allowable clock skew ({skew} ms) was on or after the "
                f"Expiration Time value ({exp:f} seconds)"
            )
        if iat is not None and exp <= iat:
            raise InvalidOAuthToken(
                f"The Expiration Time time ({exp:f} seconds) was not after the Issued At time ({iat:f} seconds)"
            )
        for required in self.required_scope:
            if required not in jws.scope:
                raise InvalidOAuthToken(
                    f"The provided scope ({java_list(sorted(jws.scope))}) was missing a required scope ({required}). "
                    f" All required scope elements: {java_list(self.required_scope)}",
                    status="insufficient_scope",
                    scope=self.required_scope,
                )
        return OAuthToken(jws.principal_name, jws.lifetime_ms, frozenset(jws.scope))


def _read_part(part: str) -> dict[str, object]:
    """A header or claims part as ``OAuthBearerUnsecuredJws.toMap`` reads it with Jackson:
    base64url with or without padding, then a JSON object's members (``_convert``ed)."""
    if len(part) % 4 == 1 or not _compiled(_BASE64URL).fullmatch(part):  # what java.util.Base64's URL decoder refuses
        raise InvalidOAuthToken("malformed Base64 URL encoded value")
    data = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    try:
        text = data.decode("utf-8").lstrip(" \t\r\n")
        if not text:  # Jackson reads no content as a MissingNode: no members
            return {}
        value, _ = _JSON.raw_decode(text)  # content after the first value is ignored, as Jackson's readTree does
    except ValueError:
        raise InvalidOAuthToken("malformed JSON") from None
    if not isinstance(value, dict):
        return {}  # a JSON value other than an object has no members
    return {key: _convert(item) for key, item in value.items()}


def _convert(value: object) -> object:
    """Jackson's ``convert``: an array becomes a list of its elements' texts, a number stays a
    number, anything else becomes its text."""
    if isinstance(value, list):
        return [_as_text(item) for item in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return _as_text(value)


def _as_text(value: object) -> str:
    """``JsonNode.asText()`` (a number as Python writes it, where Java's ``Double.toString``
    may differ: only an array element can show it)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    return ""  # an object or an array


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")  # Jackson refuses NaN and Infinity


_JSON = json.JSONDecoder(parse_constant=_no_constant)


def _number(value: object) -> float:
    """``Number.doubleValue()``."""
    assert isinstance(value, (int, float))
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _round_ms(seconds: float) -> int:
    """``Math.round(seconds * 1000)``."""
    ms = seconds * 1000
    if math.isnan(ms):
        return 0
    if math.isinf(ms):
        return _LONG_MAX if ms > 0 else _LONG_MIN
    return max(_LONG_MIN, min(_LONG_MAX, math.floor(ms + 0.5)))


class UnsecuredJws:
    """An unsecured JWS read as ``OAuthBearerUnsecuredJws``'s constructor reads it, in its
    order: :class:`InvalidOAuthToken` for a malformed or incomplete one,
    :class:`UnexpectedServerError` for a header without ``alg`` (Kafka's NullPointerException)."""

    def __init__(self, compact: str, principal_claim: str, scope_claim: str):
        if ".." in compact:
            raise InvalidOAuthToken("Malformed compact serialization contains '..'")
        splits = compact.split(".")
        if len(splits) != 3:
            raise InvalidOAuthToken(
                "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values"
            )
        self.header = _read_part(splits[0])
        self.claims = _read_part(splits[1])
        alg = self.header.get("alg")
        if alg is None:
            raise UnexpectedServerError("JWS header must have an Algorithm value")
        if alg != "none":  # Kafka compares its toString(): only the text none is none
            raise InvalidOAuthToken("Unsecured JWS must have 'none' for an algorithm")
        if splits[2]:
            raise InvalidOAuthToken("Unsecured JWS must not contain a digital signature")
        self.scope = self._scope(scope_claim)
        exp = self._claim("exp", number=True)
        if exp is None:
            raise InvalidOAuthToken("No expiration time in JWT")
        self.expiration_time = _number(exp)
        self.lifetime_ms = _round_ms(self.expiration_time)
        principal = self._claim(principal_claim)
        if not isinstance(principal, str) or not _java_trim(principal):
            raise InvalidOAuthToken(f"No principal name in JWT claim: {principal_claim}")
        self.principal_name = principal
        iat = self._claim("iat", number=True)
        self.issued_at = _number(iat) if iat is not None else None

    def _claim(self, name: str, *, number: bool = False) -> object:
        """A claim of the type asked (a number, or a text), None if absent; a claim of another
        type is refused (Kafka's ClassCastException)."""
        value = self.claims.get(name)
        if value is None:
            return None
        is_number = isinstance(value, (int, float))
        if is_number != number or isinstance(value, list):
            kind = "Number" if number else "String"
            raise InvalidOAuthToken(f"The '{name}' claim was not of type {kind}")
        return value

    def _scope(self, name: str) -> set[str]:
        value = self.claims.get(name)
        if isinstance(value, str):
            return {_java_trim(value)} if _java_trim(value) else set()
        if value is None:
            return set()
        if not isinstance(value, list):
            raise InvalidOAuthToken(f"The '{name}' claim was not of type List")
        return {_java_trim(item) for item in value if _java_trim(item)}


def _java_trim(text: str) -> str:
    """``String.trim()``: every character up to U+0020 off both ends."""
    return text.strip(_JAVA_WHITESPACE)
