"""CreateDelegationToken (38), RenewDelegationToken (39), ExpireDelegationToken (40) and
DescribeDelegationToken (41) through their handlers: the versions served and advertised, each
answer's shape at each version (the requester's fields from v3), the request's facts reaching
the core (principal, listener, token login, the authorizer's ACLs), the metadata.version, and
the expiry sweep as a cluster timer. The rules themselves are tested in
tests/core/test_security_tokens.py."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest

from fakebroker.apis import REGISTRY, RequestContext, dispatch
from fakebroker.apis.registry import served
from fakebroker.core.cluster_state import TOKEN_EXPIRY_CHECK
from fakebroker.core.configs import STANDARD_AUTHORIZER
from fakebroker.core.security.acls import Acl, PatternType, Permission
from fakebroker.core.security.acls import Operation as O  # noqa: N817
from fakebroker.core.security.acls import ResourceType as R  # noqa: N817
from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.protocol.messages import Message, request_type

from .support import call, cluster, encodes, kinds_after

API_VERSIONS, CREATE, RENEW, EXPIRE, DESCRIBE = 18, 38, 39, 40, 41
SECRET = {"delegation.token.secret.key": "s3cret"}
ALICE, BOB = "User:alice", "User:bob"


def as_client(
    state,
    api_key: int,
    version: int,
    principal: str = ALICE,
    protocol: str = "SASL_SSL",
    *,
    token: bool = False,
    now_ms: int = 1_000,
    **fields: Any,
) -> Message:
    """One request from ``principal`` on a ``protocol`` listener, its answer encoded at ``version``."""
    kind = request_type(api_key)
    request = kind.decode(kind.encode(kind.new(**fields), version), version)
    ctx = RequestContext(
        state, 0, api_key, version, 7, "tester", now_ms, principal=principal, security_protocol=protocol,
        token_authenticated=token,
    )  # fmt: skip
    answer = dispatch(ctx, request)
    assert isinstance(answer, Message)
    encodes(api_key, version, answer)
    return answer


def create(state, version: int = 3, **fields: Any) -> Message:
    fields = {"renewers": [], "max_lifetime_ms": -1, **fields}
    return as_client(state, CREATE, version, **fields)


# -- versions --------------------------------------------------------------------------------------
def test_served_windows_and_apiversions():
    declared = {k: (REGISTRY[k].min_version, REGISTRY[k].max_version) for k in (CREATE, RENEW, EXPIRE, DESCRIBE)}
    assert declared == {38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3)}
    for release in ("4.4", "4.3"):
        assert {k: served(release)[k] for k in declared} == {38: (1, 3), 39: (1, 2), 40: (1, 2), 41: (1, 3)}
    assert {k: served("3.9")[k] for k in declared} == declared
    versions, _ = call(cluster(), API_VERSIONS, 3, client_software_name="t", client_software_version="1")
    advertised = {(k.api_key, k.min_version, k.max_version) for k in versions.api_keys}
    assert advertised >= {(38, 1, 3), (39, 1, 2), (40, 1, 2), (41, 1, 3)}


# -- create ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_create_at_every_version(version):
    state = cluster(config=SECRET)
    mark = len(state.events)
    got = create(state, version, renewers=[{"principal_type": "User", "principal_name": "bob"}])
    assert (got.error_code, got.principal_type, got.principal_name) == (E.NONE, "User", "alice")
    assert (got.issue_timestamp_ms, got.expiry_timestamp_ms, got.max_timestamp_ms) == (
        1_000, 1_000 + 86_400_000, 1_000 + 7 * 86_400_000
    )  # fmt: skip
    assert got.hmac == hmac.new(b"s3cret", got.token_id.encode(), hashlib.sha512).digest()
    assert got.throttle_time_ms == 0
    if version >= 3:
        assert (got.token_requester_principal_type, got.token_requester_principal_name) == ("User", "alice")
    assert kinds_after(state, mark) == ["token_created"]
    assert state.tokens.get(got.token_id).renewers == (("User", "bob"),)


def test_create_for_another_owner_at_v3():
    state = cluster(config=SECRET)
    got = create(state, owner_principal_type="User", owner_principal_name="bob")
    assert (got.error_code, got.principal_name, got.token_requester_principal_name) == (E.NONE, "bob", "alice")


@pytest.mark.parametrize(
    ("protocol", "principal", "token"),
    [("PLAINTEXT", "User:ANONYMOUS", False), ("SSL", "User:ANONYMOUS", False), ("SASL_SSL", ALICE, True)],
)
def test_refused_on_plaintext_on_one_way_tls_and_with_a_token_login(protocol, principal, token):
    state = cluster(config=SECRET)
    got = as_client(state, CREATE, 3, principal, protocol, token=token, renewers=[], max_lifetime_ms=-1)
    assert (got.error_code, got.issue_timestamp_ms, got.expiry_timestamp_ms, got.max_timestamp_ms) == (
        E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1, -1, -1
    )  # fmt: skip
    assert (got.principal_name, got.token_id, got.hmac) == (principal.split(":")[1], "", b"")
    renewed = as_client(state, RENEW, 2, principal, protocol, token=token, hmac=b"x", renew_period_ms=0)
    assert (renewed.error_code, renewed.expiry_timestamp_ms) == (E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1)
    expired = as_client(state, EXPIRE, 2, principal, protocol, token=token, hmac=b"x", expiry_time_period_ms=0)
    assert (expired.error_code, expired.expiry_timestamp_ms) == (E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1)
    described = as_client(state, DESCRIBE, 3, principal, protocol, token=token, owners=None)
    assert (described.error_code, described.tokens) == (E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, [])


def test_an_ssl_client_certificate_may_ask():
    got = as_client(cluster(config=SECRET), CREATE, 3, "User:CN=alice", "SSL", renewers=[], max_lifetime_ms=-1)
    assert (got.error_code, got.principal_name) == (E.NONE, "CN=alice")


def test_disabled_without_the_secret_key():
    state = cluster()
    got = create(state)
    assert (got.error_code, got.issue_timestamp_ms, got.principal_name) == (
        E.DELEGATION_TOKEN_AUTH_DISABLED,
        0,
        "alice",
    )
    assert as_client(state, DESCRIBE, 3, owners=None).error_code == E.DELEGATION_TOKEN_AUTH_DISABLED
    renewed = as_client(state, RENEW, 2, hmac=b"x", renew_period_ms=0)
    assert (renewed.error_code, renewed.expiry_timestamp_ms) == (E.DELEGATION_TOKEN_AUTH_DISABLED, 0)


def test_metadata_version_before_3_6_iv2():
    state = cluster(config=SECRET)
    state.features.finalized["metadata.version"] = 13
    assert create(state).error_code == E.UNSUPPORTED_VERSION
    state.features.finalized["metadata.version"] = 14
    assert create(state).error_code == E.NONE


# -- renew, expire, describe -------------------------------------------------------------------------
@pytest.mark.parametrize("version", [0, 1, 2])
def test_renew_and_expire_at_every_version(version):
    state = cluster(config=SECRET)
    token = create(state, renewers=[{"principal_type": "User", "principal_name": "bob"}])
    renewed = as_client(state, RENEW, version, BOB, now_ms=2_000, hmac=token.hmac, renew_period_ms=60_000)
    assert (renewed.error_code, renewed.expiry_timestamp_ms) == (E.NONE, 62_000)
    missing = as_client(state, RENEW, version, hmac=b"nope", renew_period_ms=0)
    assert (missing.error_code, missing.expiry_timestamp_ms) == (E.DELEGATION_TOKEN_NOT_FOUND, 0)
    stranger = as_client(state, EXPIRE, version, "User:carol", hmac=token.hmac, expiry_time_period_ms=-1)
    assert stranger.error_code == E.DELEGATION_TOKEN_OWNER_MISMATCH
    expired = as_client(state, EXPIRE, version, now_ms=3_000, hmac=token.hmac, expiry_time_period_ms=-1)
    assert (expired.error_code, expired.expiry_timestamp_ms) == (E.NONE, 3_000)
    assert len(state.tokens) == 0


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_describe_at_every_version(version):
    state = cluster(config=SECRET)
    token = create(state, renewers=[{"principal_type": "User", "principal_name": "bob"}])
    create(state, owner_principal_type="User", owner_principal_name="dave")
    got = as_client(state, DESCRIBE, version, owners=[{"principal_type": "User", "principal_name": "bob"}])
    assert got.error_code == E.NONE
    (one,) = got.tokens
    assert (one.token_id, one.hmac, one.principal_type, one.principal_name) == (
        token.token_id,
        token.hmac,
        "User",
        "alice",
    )
    assert (one.issue_timestamp, one.expiry_timestamp, one.max_timestamp) == (
        token.issue_timestamp_ms, token.expiry_timestamp_ms, token.max_timestamp_ms
    )  # fmt: skip
    assert [(r.principal_type, r.principal_name) for r in one.renewers] == [("User", "bob")]
    if version >= 3:
        assert (one.token_requester_principal_type, one.token_requester_principal_name) == ("User", "alice")
    assert len(as_client(state, DESCRIBE, version, owners=None).tokens) == 2
    assert as_client(state, DESCRIBE, version, owners=[]).tokens == []


# -- the authorizer -----------------------------------------------------------------------------------
def with_authorizer(*acls: tuple) -> Any:
    state = cluster(config={**SECRET, "authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"})
    made = [Acl(rt, name, PatternType.LITERAL, who, "*", op, Permission.ALLOW) for who, op, rt, name in acls]
    assert all(code == E.NONE for code, _ in state.authorizer.create(made, 0))
    return state


def test_creating_for_another_owner_needs_create_tokens_on_that_user():
    state = with_authorizer()
    refused = create(state, owner_principal_type="User", owner_principal_name="bob")
    assert (refused.error_code, refused.issue_timestamp_ms) == (E.DELEGATION_TOKEN_AUTHORIZATION_FAILED, -1)
    assert create(state).error_code == E.NONE  # for oneself: no ACL needed
    state = with_authorizer((ALICE, O.CREATE_TOKENS, R.USER, "User:bob"))
    assert create(state, owner_principal_type="User", owner_principal_name="bob").error_code == E.NONE


def test_describing_others_tokens_needs_describe_on_the_token_or_describe_tokens_on_its_owner():
    state = with_authorizer()
    bobs = as_client(state, CREATE, 3, BOB, renewers=[], max_lifetime_ms=-1)
    assert as_client(state, DESCRIBE, 3, owners=None).tokens == []
    assert len(as_client(state, DESCRIBE, 3, "User:admin", owners=None).tokens) == 1  # a super user
    grant = Acl(R.DELEGATION_TOKEN, bobs.token_id, PatternType.LITERAL, ALICE, "*", O.DESCRIBE, Permission.ALLOW)
    state.authorizer.create([grant], 0)
    assert [t.token_id for t in as_client(state, DESCRIBE, 3, owners=None).tokens] == [bobs.token_id]
    state = with_authorizer((ALICE, O.DESCRIBE_TOKENS, R.USER, BOB))
    as_client(state, CREATE, 3, BOB, renewers=[], max_lifetime_ms=-1)
    assert [t.principal_name for t in as_client(state, DESCRIBE, 3, owners=None).tokens] == ["bob"]


# -- the sweep ---------------------------------------------------------------------------------------------
def test_the_sweep_runs_every_check_interval_on_the_cluster_clock():
    state = cluster(config={**SECRET, "delegation.token.expiry.time.ms": 1_000})
    state.start_periodic_checks(0)
    token = create(state, now_ms=0)
    assert state.timers.next_deadline() is not None
    state.tick(1_000)
    assert state.tokens.get(token.token_id) is not None
    mark = len(state.events)
    state.tick(3_600_000)  # delegation.token.expiry.check.interval.ms, Kafka's hour
    assert state.tokens.get(token.token_id) is None and "token_expired" in kinds_after(state, mark)
    assert TOKEN_EXPIRY_CHECK == ("delegation-token-expiry",)
    # a virtual-time jump runs it too
    token = create(state, now_ms=3_600_000)
    state.run_periodic_checks(3_700_000)
    assert state.tokens.get(token.token_id) is None
