"""CreateDelegationToken (38), RenewDelegationToken (39), ExpireDelegationToken (40) and
DescribeDelegationToken (41): KIP-48's delegation tokens (the admin clients'
``createDelegationToken`` and friends, ``kafka-delegation-tokens.sh``). The core
(``core/security/tokens.py``) keeps the tokens and checks each request as Kafka 4.4's broker and
controller do; here the request's facts go in (its principal, its listener's security protocol,
whether it logged in with a token, the authorizer's answers) and the answer comes out in the
shape of each version (the token requester's fields from v3 of Create and Describe).

A token logs in over SCRAM with ``tokenauth=true`` (username: the token id, password: the HMAC
in base64); such a connection may not use these four APIs, nor may a PLAINTEXT listener's or an
SSL listener's without a client certificate (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..protocol.messages import ApiKey, Message
from .context import RequestContext
from .registry import api

if TYPE_CHECKING:
    from ..core.security.tokens import DelegationToken, TokenRequester


def _requester(ctx: RequestContext) -> TokenRequester:
    # imported at the first token request: a cluster that never sees one does not need the tokens core
    from ..core.security.tokens import TokenRequester

    return TokenRequester(ctx.principal, ctx.security_protocol, ctx.token_authenticated, ctx.allowed)


def create_delegation_token(ctx: RequestContext, request: Message) -> Message:
    created = ctx.cluster.tokens.create(
        _requester(ctx),
        ctx.now_ms,
        owner_type=request.owner_principal_type,
        owner_name=request.owner_principal_name,
        renewers=[(r.principal_type, r.principal_name) for r in request.renewers],
        max_lifetime_ms=request.max_lifetime_ms,
    )
    return ctx.response(
        error_code=created.error_code,
        principal_type=created.owner.type,
        principal_name=created.owner.name,
        token_requester_principal_type=created.requester.type,
        token_requester_principal_name=created.requester.name,
        issue_timestamp_ms=created.issue_ms,
        expiry_timestamp_ms=created.expiry_ms,
        max_timestamp_ms=created.max_ms,
        token_id=created.token_id,
        hmac=created.hmac,
        throttle_time_ms=0,
    )


def renew_delegation_token(ctx: RequestContext, request: Message) -> Message:
    renewed = ctx.cluster.tokens.renew(_requester(ctx), request.hmac, request.renew_period_ms, ctx.now_ms)
    return ctx.response(error_code=renewed.error_code, expiry_timestamp_ms=renewed.expiry_ms, throttle_time_ms=0)


def expire_delegation_token(ctx: RequestContext, request: Message) -> Message:
    expired = ctx.cluster.tokens.expire(_requester(ctx), request.hmac, request.expiry_time_period_ms, ctx.now_ms)
    return ctx.response(error_code=expired.error_code, expiry_timestamp_ms=expired.expiry_ms, throttle_time_ms=0)


def _described(token: DelegationToken) -> dict[str, object]:
    return {
        "principal_type": token.owner.type,
        "principal_name": token.owner.name,
        "token_requester_principal_type": token.requester.type,
        "token_requester_principal_name": token.requester.name,
        "issue_timestamp": token.issue_ms,
        "expiry_timestamp": token.expiry_ms,
        "max_timestamp": token.max_ms,
        "token_id": token.token_id,
        "hmac": token.hmac,
        "renewers": [{"principal_type": r.type, "principal_name": r.name} for r in token.renewers],
    }


def describe_delegation_token(ctx: RequestContext, request: Message) -> Message:
    owners = None if request.owners is None else [(o.principal_type, o.principal_name) for o in request.owners]
    described = ctx.cluster.tokens.describe(_requester(ctx), owners)
    return ctx.response(
        error_code=described.error_code, tokens=[_described(t) for t in described.tokens], throttle_time_ms=0
    )


# v0 is Kafka 3.9's (a broker posing as 4.x serves from v1, as KIP-896 left them)
APIS = (
    api(ApiKey.CREATE_DELEGATION_TOKEN, (0, 3), create_delegation_token),
    api(ApiKey.RENEW_DELEGATION_TOKEN, (0, 2), renew_delegation_token),
    api(ApiKey.EXPIRE_DELEGATION_TOKEN, (0, 2), expire_delegation_token),
    api(ApiKey.DESCRIBE_DELEGATION_TOKEN, (0, 3), describe_delegation_token),
)
