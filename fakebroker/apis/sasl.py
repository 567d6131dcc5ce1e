"""SaslHandshake (key 17) and SaslAuthenticate (key 36) where no authentication is under way:
on a PLAINTEXT or SSL listener, or on a connection already authenticated. A SASL listener's
connections are authenticated before their requests reach a handler (``server/sasl_stage.py``
and ``core/security/authenticator.py``); what gets here is answered as Kafka's KafkaApis
answers it: ILLEGAL_SASL_STATE, the connection kept."""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .context import RequestContext
from .registry import api

AFTER_AUTHENTICATION = "SaslAuthenticate request received after successful authentication"


def handshake(ctx: RequestContext, request: Message) -> Message:
    return ctx.response(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])


def authenticate(ctx: RequestContext, request: Message) -> Message:
    return ctx.response(
        error_code=ErrorCode.ILLEGAL_SASL_STATE,
        error_message=AFTER_AUTHENTICATION,
        auth_bytes=b"",
        session_lifetime_ms=0,
    )


APIS = (
    api(ApiKey.SASL_HANDSHAKE, (0, 1), handshake),
    api(ApiKey.SASL_AUTHENTICATE, (0, 2), authenticate),
)
