"""The first stage of a request on a SASL listener: its connection's authentication.

The decisions are the core's (``core/security/authenticator.py``); this stage answers them:
SaslHandshake and SaslAuthenticate during authentication, ILLEGAL_SASL_STATE in the shape of
the request's own answer, a closed connection for a request not allowed yet. The exchange's
own requests go through the fault rules (``api="SaslAuthenticate", error=..., times=N`` fails
the next N authentications as the broker would answer them). A failed
authentication is answered ``connection.failed.authentication.delay.ms`` late (Kafka's default
100 ms: a client retrying a wrong password is slowed down), and its connection then closes.
"""

from __future__ import annotations

from collections.abc import Awaitable

import anyio

from ..core import events as ev
from ..core.security.authenticator import SASL_AUTHENTICATE, Authenticator, Route, State
from ..faults.responses import error_response
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message, response_type
from .exchange import Answer, CloseConnection, Exchange, Proceed
from .fault_stage import FaultStage
from .runtime import Runtime


def failed_delay_s(runtime: Runtime) -> float:
    try:
        return max(runtime.state.config.get_int("connection.failed.authentication.delay.ms"), 0) / 1000
    except (KeyError, ValueError):  # pragma: no cover - validated settings
        return 0.1


class SaslStage:
    """Authenticates a SASL listener's connections; every other request passes through."""

    def __init__(self, runtime: Runtime, broker_id: int):
        self.runtime = runtime
        self.broker_id = broker_id
        self._faults = FaultStage(runtime, broker_id)

    def __call__(self, exchange: Exchange, body: Message, proceed: Proceed) -> Awaitable[Answer]:
        auth = exchange.auth
        if auth is None or (auth.authenticated and auth.session_end_ms is None):
            return proceed(exchange, body)  # not a SASL listener, or a session that never ends
        return self._authenticate(auth, exchange, body, proceed)

    async def _authenticate(self, auth: Authenticator, exchange: Exchange, body: Message, proceed: Proceed) -> Answer:
        now = self.runtime.clock.now_ms()
        route = auth.route(exchange.api_key, now)
        if route is Route.PROCEED:
            answer = await proceed(exchange, body)
            if not auth.authenticated:  # an ApiVersions before the handshake
                auth.api_versions_answered(getattr(answer, "error_code", ErrorCode.NONE) == ErrorCode.NONE)
            return answer
        if route is Route.CLOSE:
            reason = (
                "SASL session expired (connections.max.reauth.ms or its credential's expiry)"
                if auth.state is State.COMPLETE
                else f"Unexpected Kafka request of type {exchange.api_name} during SASL handshake"
            )
            raise CloseConnection(reason)
        if route is Route.ILLEGAL:
            auth.state = State.FAILED
            unexpected = f"Unexpected Kafka request of type {exchange.api_name} during SASL authentication"
            await self._failed(exchange, auth, unexpected)
            refusal = error_response(exchange.api_key, body, ErrorCode.ILLEGAL_SASL_STATE)
            if hasattr(refusal, "error_message"):
                refusal.error_message = unexpected
            return refusal
        # the exchange itself goes through the fault rules: a test can fail the next handshakes
        # or authentications, delay or drop them, as any other request's
        answer = await self._faults(exchange, body, self._exchange)
        if auth.state is not State.FAILED and getattr(answer, "error_code", ErrorCode.NONE) != ErrorCode.NONE:
            auth.state = State.FAILED  # a fault's error: the connection closes after it, as after any failure
        return answer

    async def _exchange(self, exchange: Exchange, body: Message) -> Answer:
        """The answer to a SaslHandshake or SaslAuthenticate while authenticating."""
        auth = exchange.auth
        assert auth is not None
        now = self.runtime.clock.now_ms()
        if exchange.api_key != SASL_AUTHENTICATE:
            shake = auth.handshake(body.mechanism, exchange.api_version, now)
            if shake.close_after:
                await self._failed(exchange, auth, f"Unsupported SASL mechanism {body.mechanism}")
            return response_type(exchange.api_key).new(error_code=shake.error_code, mechanisms=shake.mechanisms)
        result = auth.authenticate(bytes(body.auth_bytes), now)
        if result.close_now:  # the mechanism failed unexpectedly: Kafka closes at once, unanswered
            self._emit_failed(exchange, auth, result.error_message or "")
            raise CloseConnection(f"SASL authentication failed: {result.error_message}")
        if result.close_after:
            await self._failed(exchange, auth, result.error_message or "")
        elif result.completed:
            self._authenticated(exchange, auth, result.session_lifetime_ms)
        return response_type(exchange.api_key).new(
            error_code=result.error_code,
            error_message=result.error_message,
            auth_bytes=result.auth_bytes,
            session_lifetime_ms=result.session_lifetime_ms,
        )

    async def _failed(self, exchange: Exchange, auth: Authenticator, reason: str) -> None:
        self._emit_failed(exchange, auth, reason)
        await anyio.sleep(failed_delay_s(self.runtime))  # then answered; the connection closes after it

    def _emit_failed(self, exchange: Exchange, auth: Authenticator, reason: str) -> None:
        self.runtime.emit(
            ev.AuthenticationFailed(
                broker=self.broker_id,
                peer=exchange.peer,
                client_id=exchange.client_id,
                mechanism=auth.mechanism,
                reason=reason,
            )
        )

    def _authenticated(self, exchange: Exchange, auth: Authenticator, lifetime_ms: int) -> None:
        self.runtime.emit(
            ev.ClientAuthenticated(
                broker=self.broker_id,
                peer=exchange.peer,
                client_id=exchange.client_id,
                principal=auth.principal or "",
                mechanism=auth.mechanism or "",
                session_lifetime_ms=lifetime_ms,
            )
        )


def raw_token_answer(
    runtime: Runtime, broker_id: int, auth: Authenticator, peer: str, client_id: str | None, token: bytes
) -> bytes:
    """The raw answer to a raw token (a frame after a v0 SaslHandshake) from ``peer``; a failure
    closes the connection unanswered, as Kafka closes it."""
    reply = auth.raw_token(token, runtime.clock.now_ms())
    if reply is None:
        runtime.emit(
            ev.AuthenticationFailed(
                broker=broker_id,
                peer=peer,
                client_id=client_id,
                mechanism=auth.mechanism,
                reason="authentication failed (raw SASL tokens after a v0 SaslHandshake)",
            )
        )
        raise CloseConnection("SASL authentication failed")
    if auth.authenticated:
        runtime.emit(
            ev.ClientAuthenticated(
                broker=broker_id,
                peer=peer,
                client_id=client_id,
                principal=auth.principal or "",
                mechanism=auth.mechanism or "",
            )
        )
    return reply
