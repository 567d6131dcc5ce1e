"""One connection's SASL authentication, as Kafka's ``SaslServerAuthenticator`` walks it.

Before a connection of a SASL listener is authenticated, it may send an ApiVersions (once),
then a SaslHandshake naming its mechanism, then SaslAuthenticate requests carrying the
mechanism's tokens (or, after a v0 handshake, the raw tokens themselves, each a frame without
a request header). Anything else closes the connection at once, unanswered. A failure is
answered (SASL_AUTHENTICATION_FAILED with Kafka's text, UNSUPPORTED_SASL_MECHANISM with the
enabled list), and the connection closes ``connection.failed.authentication.delay.ms`` later;
a mechanism's unexpected error (Kafka's runtime exceptions) closes it at once, unanswered.
Once authenticated, a session with an end (``connections.max.reauth.ms``, or a credential's
own expiry) is closed at its first request after that end, unless the client has started a
re-authentication: a SaslHandshake on the authenticated connection, at most one a second,
with the same mechanism and then the same principal.

Pure: the edge (``server/sasl_stage.py``) decodes and answers; this decides.
"""

from __future__ import annotations

import enum
import secrets
import string
from collections.abc import Callable, Sequence

from ...lazy_dataclasses import dataclass
from ...protocol.error_codes import ErrorCode
from .mechanisms import MECHANISMS, SaslFailure, SaslServer, new_server
from .oauthbearer import OAuthBearerServer, TokenValidator, UnexpectedServerError
from .users import Users

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
MIN_REAUTH_INTERVAL_MS = 1000  # Kafka's KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS
_NONCE_ALPHABET = string.digits + string.ascii_lowercase


def random_nonce() -> str:
    """A server nonce as Kafka makes one: a random 130-bit number in base 36."""
    n = secrets.randbits(130)
    digits = []
    while n:
        n, d = divmod(n, 36)
        digits.append(_NONCE_ALPHABET[d])
    return "".join(reversed(digits)) or "0"


def java_hash_set_order(names: Sequence[str]) -> list[str]:
    """``names`` in the order a ``java.util.HashSet`` of them iterates (Kafka answers the enabled
    mechanisms from one): by bucket of the spread ``String.hashCode``, insertion order within."""
    table = 16
    while len(names) > table * 3 // 4:
        table *= 2

    def bucket(name: str) -> int:
        h = 0
        for ch in name:
            h = (31 * h + ord(ch)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (table - 1)

    return sorted(dict.fromkeys(names), key=bucket)


class State(enum.Enum):
    INITIAL = "initial"  # nothing received yet: ApiVersions or SaslHandshake
    HANDSHAKE = "handshake"  # after one ApiVersions: only SaslHandshake
    AUTHENTICATE = "authenticate"  # tokens in SaslAuthenticate requests (a v1 handshake)
    RAW = "raw"  # raw tokens, one a frame (a v0 handshake)
    COMPLETE = "complete"
    FAILED = "failed"


class Route(enum.Enum):
    """What the edge does with a request."""

    PROCEED = "proceed"  # the ordinary pipeline (ApiVersions before, everything after, authentication)
    HANDSHAKE = "handshake"  # answer with :meth:`Authenticator.handshake`
    AUTHENTICATE = "authenticate"  # answer with :meth:`Authenticator.authenticate`
    ILLEGAL = "illegal"  # its own error answer with ILLEGAL_SASL_STATE, then close after the delay
    CLOSE = "close"  # close now, unanswered (a protocol violation, an expired session)


@dataclass
class HandshakeAnswer:
    error_code: int
    mechanisms: list[str]
    close_after: bool  # close once answered (after the failed-authentication delay)


@dataclass
class AuthenticateAnswer:
    error_code: int
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: int
    close_after: bool
    completed: bool = False  # this answer completes the exchange: the connection is authenticated
    # no answer: close the connection at once (the mechanism failed unexpectedly; error_message says how)
    close_now: bool = False


class Authenticator:
    """The SASL state of one connection of a SASL listener."""

    def __init__(
        self,
        mechanisms: Sequence[str],
        users: Users,
        *,
        reauth_ms: int = 0,
        nonce: Callable[[], str] = random_nonce,
        scram_nonce_may_repeat: bool = False,
        oauth: TokenValidator | None = None,
    ):
        unknown = [m for m in mechanisms if m not in MECHANISMS]
        if unknown or not mechanisms:
            raise ValueError(f"SASL mechanisms {list(mechanisms)}: the mechanisms served are {', '.join(MECHANISMS)}")
        self.mechanisms = list(mechanisms)
        self.users = users
        self.reauth_ms = reauth_ms
        self._nonce = nonce
        self._nonce_may_repeat = scram_nonce_may_repeat  # a Kafka 3.8-3.9 broker's SCRAM (ScramServer)
        self._oauth = oauth  # OAUTHBEARER's token validator (None: Kafka's default, the unsecured one)
        self.state = State.INITIAL
        self.mechanism: str | None = None
        self.principal: str | None = None  # "User:<name>" once authenticated
        self.token_authenticated = False  # logged in with a delegation token (SCRAM tokenauth)
        self.session_end_ms: int | None = None  # None: the session does not end
        self._server: SaslServer | None = None
        self._reauthenticating = False
        self._reauth_started_ms: int | None = None
        self._previous_principal: str | None = None
        self._reauth_mechanism: str | None = None  # what a re-authentication's handshake asked for
        self._credential_expiry_ms: int | None = None

    # -- routing -----------------------------------------------------------------------------
    @property
    def authenticated(self) -> bool:
        return self.state is State.COMPLETE and not self._reauthenticating

    @property
    def expects_raw_token(self) -> bool:
        """The next frame is a raw token (after a v0 handshake), not a request."""
        return self.state is State.RAW

    def route(self, api_key: int, now_ms: int) -> Route:
        state = self.state
        if state is State.COMPLETE and not self._reauthenticating:
            if api_key == SASL_HANDSHAKE and self._may_reauthenticate(now_ms):
                return Route.HANDSHAKE
            if self.session_end_ms is not None and now_ms >= self.session_end_ms:
                return Route.CLOSE  # Kafka closes an expired session at its next request, unanswered
            return Route.PROCEED  # a SaslHandshake or SaslAuthenticate now gets its API's own answer
        if state is State.INITIAL:
            if api_key == API_VERSIONS:
                return Route.PROCEED
            return Route.HANDSHAKE if api_key == SASL_HANDSHAKE else Route.CLOSE
        if state is State.HANDSHAKE:
            return Route.HANDSHAKE if api_key == SASL_HANDSHAKE else Route.CLOSE
        if state is State.AUTHENTICATE or (state is State.COMPLETE and self._reauthenticating):
            return Route.AUTHENTICATE if api_key == SASL_AUTHENTICATE else Route.ILLEGAL
        return Route.CLOSE

    def api_versions_answered(self, ok: bool) -> None:
        """An ApiVersions before the handshake was answered; only a good one counts (a client
        refused a version may ask again)."""
        if ok and self.state is State.INITIAL:
            self.state = State.HANDSHAKE

    def _may_reauthenticate(self, now_ms: int) -> bool:
        if self.session_end_ms is None:
            return False  # a session without an end is never re-authenticated
        started = self._reauth_started_ms
        return started is None or now_ms - started >= MIN_REAUTH_INTERVAL_MS

    # -- the exchange --------------------------------------------------------------------------
    def handshake(self, mechanism: str, version: int, now_ms: int) -> HandshakeAnswer:
        enabled = java_hash_set_order(self.mechanisms)
        if self.state is State.COMPLETE:  # a re-authentication starts
            if mechanism not in self.mechanisms:
                self.state = State.FAILED
                return HandshakeAnswer(ErrorCode.UNSUPPORTED_SASL_MECHANISM, enabled, close_after=True)
            self._reauthenticating = True
            self._reauth_started_ms = now_ms
            self._previous_principal = self.principal
            self._reauth_mechanism = mechanism
            if mechanism != self.mechanism:  # answered, then the next token fails (Kafka's REAUTH_BAD_MECHANISM)
                self._server = None
                return HandshakeAnswer(ErrorCode.NONE, enabled, close_after=False)
            self._server = self._new_server(mechanism, now_ms)
            return HandshakeAnswer(ErrorCode.NONE, enabled, close_after=False)
        if mechanism not in self.mechanisms:
            self.state = State.FAILED
            return HandshakeAnswer(ErrorCode.UNSUPPORTED_SASL_MECHANISM, enabled, close_after=True)
        self.mechanism = mechanism
        self._server = self._new_server(mechanism, now_ms)
        self.state = State.AUTHENTICATE if version >= 1 else State.RAW
        return HandshakeAnswer(ErrorCode.NONE, enabled, close_after=False)

    def _new_server(self, mechanism: str, now_ms: int) -> SaslServer:
        return new_server(
            mechanism, self.users, now_ms, self._nonce, nonce_may_repeat=self._nonce_may_repeat, oauth=self._oauth
        )

    def authenticate(self, token: bytes, now_ms: int) -> AuthenticateAnswer:
        """The answer to a SaslAuthenticate carrying ``token``."""
        was_complete = self.state is State.COMPLETE and not self._reauthenticating
        try:
            reply, failure = self._evaluate(token, now_ms)
        except UnexpectedServerError as error:
            return AuthenticateAnswer(ErrorCode.NONE, str(error), b"", 0, close_after=True, close_now=True)
        if failure is not None:
            return AuthenticateAnswer(ErrorCode.SASL_AUTHENTICATION_FAILED, failure, b"", 0, close_after=True)
        done_now = not was_complete and self.authenticated
        # the session's lifetime goes with the answer that completes the exchange only
        lifetime = self.session_end_ms - now_ms if done_now and self.session_end_ms is not None else 0
        # Kafka's answer leaves the message at its default, "" (not null), in every version
        return AuthenticateAnswer(ErrorCode.NONE, "", reply, lifetime, close_after=False, completed=done_now)

    def raw_token(self, token: bytes, now_ms: int) -> bytes | None:
        """The raw answer to a raw token (after a v0 handshake); None: fail, close."""
        try:
            reply, failure = self._evaluate(token, now_ms)
        except UnexpectedServerError:
            return None
        return None if failure is not None else reply

    def _evaluate(self, token: bytes, now_ms: int) -> tuple[bytes, str | None]:
        reauth = self._reauthenticating
        server = self._server
        mechanism = self.mechanism or "?"
        if server is None:  # a re-authentication asked for another mechanism
            self.state = State.FAILED
            return b"", (
                f"SASL mechanism '{self._reauth_mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{mechanism}'"
            )
        if isinstance(server, OAuthBearerServer):
            server.now_ms = now_ms  # tokens are checked when they arrive
        try:
            reply = server.evaluate(token)
        except UnexpectedServerError:
            self.state = State.FAILED
            raise
        except SaslFailure as failure:
            self.state = State.FAILED
            if failure.passthrough:
                return b"", str(failure)
            during = "re-authentication" if reauth else "authentication"
            return b"", (
                f"Authentication failed during {during} due to invalid credentials with SASL mechanism {mechanism}"
            )
        if server.complete:
            principal = server.principal
            if reauth and principal != self._previous_principal:
                self.state = State.FAILED
                before = (self._previous_principal or "").replace(":", ".", 1)
                after = principal.replace(":", ".", 1)
                return b"", f"Cannot change principals during re-authentication from {before}: {after}"
            self.principal = principal
            self.token_authenticated = bool(getattr(server, "token_authenticated", False))
            self.state = State.COMPLETE
            self._reauthenticating = False
            self._server = None
            self._credential_expiry_ms = server.expiry_ms
            lifetime = self._session_lifetime_ms(now_ms)
            self.session_end_ms = now_ms + lifetime if lifetime > 0 or server.expiry_ms is not None else None
        return reply, None

    def _session_lifetime_ms(self, now_ms: int) -> int:
        """Kafka's rule: the shorter of ``connections.max.reauth.ms`` and what the credential has
        left; 0 when neither ends."""
        expiry = self._credential_expiry_ms
        if expiry is None:
            return max(self.reauth_ms, 0)
        left = max(expiry - now_ms, 0)
        return left if self.reauth_ms <= 0 else min(left, self.reauth_ms)
