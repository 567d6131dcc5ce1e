"""Delegation tokens (core/security/tokens.py) as Kafka 4.4's broker (KafkaApis.handle*Token*)
and controller (DelegationTokenControlManager) answer them: the listener gate, the
authorizer's checks, the secret key and metadata.version, the lifetimes, the lookups by HMAC,
who may renew, expire and describe, the sweep, the events; and a token's SCRAM login
(``tokenauth=true``): the owner's principal, the token-authenticated flag, the session ending at
the token's expiry."""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools

import pytest

from fakebroker.core.configs import BrokerConfig
from fakebroker.core.events import EventLog
from fakebroker.core.security.acls import Operation, ResourceType
from fakebroker.core.security.authenticator import Authenticator, Route
from fakebroker.core.security.sasl import SaslFailure
from fakebroker.core.security.scram import ScramServer
from fakebroker.core.security.tokens import (
    Changed,
    Created,
    DelegationTokens,
    Principal,
    TokenRequester,
    concurrent_hash_map_order,
)
from fakebroker.core.security.users import Users
from fakebroker.protocol.error_codes import ErrorCode as E

from .scram_client import Client

SECRET = "s3cret-key"
DAY, WEEK = 86_400_000, 7 * 86_400_000
ALICE, BOB, CAROL = "User:alice", "User:bob", "User:carol"
NONCE = "3rfcnhpuu2fffh3xzvwn44ce0"


def store(config: dict | None = None, *, mv: int = 33, events: EventLog | None = None) -> DelegationTokens:
    ids = (f"token-{i}" for i in itertools.count())
    settings = {"delegation.token.secret.key": SECRET, **(config or {})}
    return DelegationTokens(BrokerConfig(settings), events, metadata_version=lambda: mv, new_token_id=lambda: next(ids))


def who(principal: str = ALICE, protocol: str = "SASL_SSL", *, token: bool = False, grants=None) -> TokenRequester:
    """A requester; ``grants``: the (operation, resource type, name) the authorizer allows (None:
    no authorizer, everything)."""
    if grants is None:
        return TokenRequester(principal, protocol, token)
    return TokenRequester(principal, protocol, token, lambda op, rt, name: (op, rt, name) in grants)


def expected_hmac(token_id: str, secret: str = SECRET) -> bytes:
    return hmac.new(secret.encode(), token_id.encode(), hashlib.sha512).digest()


# -- create --------------------------------------------------------------------------------------------
def test_create_makes_a_token_with_kafkas_hmac_and_lifetimes():
    tokens = store()
    created = tokens.create(who(), 1_000, renewers=[("User", "bob")])
    assert created == Created(
        E.NONE, Principal("User", "alice"), Principal("User", "alice"), 1_000, 1_000 + DAY, 1_000 + WEEK, "token-0",
        expected_hmac("token-0"),
    )  # fmt: skip
    token = tokens.get("token-0")
    assert token is not None and token.renewers == (Principal("User", "bob"),)
    assert token.password == base64.b64encode(expected_hmac("token-0")).decode()


def test_a_real_token_id_is_a_random_uuid():
    tokens = DelegationTokens(BrokerConfig({"delegation.token.secret.key": SECRET}))
    a, b = tokens.create(who(), 0), tokens.create(who(), 0)
    assert a.token_id != b.token_id and len(a.token_id) == 36 and a.token_id.count("-") == 4
    assert a.hmac == expected_hmac(a.token_id)


@pytest.mark.parametrize(
    ("config", "asked", "expiry", "max_ms"),
    [
        ({}, -1, DAY, WEEK),
        ({}, 0, DAY, WEEK),
        ({}, 3_600_000, 3_600_000, 3_600_000),  # a max lifetime below the renew interval caps both
        ({}, 30 * DAY, DAY, WEEK),  # never beyond the broker's max
        ({"delegation.token.max.lifetime.ms": 5_000, "delegation.token.expiry.time.ms": 2_000}, -1, 2_000, 5_000),
    ],
)
def test_lifetimes(config, asked, expiry, max_ms):
    created = store(config).create(who(), 10, max_lifetime_ms=asked)
    assert (created.issue_ms, created.expiry_ms, created.max_ms) == (10, 10 + expiry, 10 + max_ms)


def test_another_owner_needs_create_tokens_on_that_user():
    grant = {(Operation.CREATE_TOKENS, ResourceType.USER, "User:bob")}
    refused = store().create(who(grants=set()), 0, owner_type="User", owner_name="bob")
    assert refused == Created(
        E.DELEGATION_TOKEN_AUTHORIZATION_FAILED, Principal("User", "bob"), Principal("User", "alice"), -1, -1, -1, "",
        b"",
    )  # fmt: skip
    created = store().create(who(grants=grant), 0, owner_type="User", owner_name="bob")
    assert (created.error_code, created.owner, created.requester) == (E.NONE, ("User", "bob"), ("User", "alice"))
    # naming oneself needs nothing
    assert store().create(who(grants=set()), 0, owner_type="User", owner_name="alice").error_code == E.NONE


def test_an_owner_named_without_a_type_is_the_requests_error_answer():
    refused = store().create(who(), 0, owner_type=None, owner_name="bob")
    assert refused == Created(E.UNKNOWN_SERVER_ERROR, ("User", "ANONYMOUS"), ("User", "ANONYMOUS"), -1, -1, -1, "", b"")


def test_renewers_must_be_users():
    refused = store().create(who(), 0, renewers=[("User", "bob"), ("Group", "ops")])
    assert (refused.error_code, refused.issue_ms, refused.token_id) == (E.INVALID_PRINCIPAL_TYPE, -1, "")


@pytest.mark.parametrize(
    ("principal", "protocol", "token", "allowed"),
    [
        (ALICE, "SASL_SSL", False, True),
        (ALICE, "SASL_PLAINTEXT", False, True),
        ("User:ANONYMOUS", "PLAINTEXT", False, False),
        ("User:ANONYMOUS", "SSL", False, False),  # 1-way TLS
        ("User:CN=alice", "SSL", False, True),  # a client certificate
        (ALICE, "SASL_SSL", True, False),  # logged in with a token
    ],
)
def test_the_listener_gate(principal, protocol, token, allowed):
    tokens = store()
    requester = who(principal, protocol, token=token)
    assert requester.may_request is allowed
    created = tokens.create(requester, 0)
    refused = E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    assert created.error_code == (E.NONE if allowed else refused)
    if not allowed:
        assert (created.issue_ms, created.expiry_ms, created.max_ms) == (-1, -1, -1)  # the broker's refusal
        assert tokens.renew(requester, b"x", 0, 0) == Changed(refused, -1)
        assert tokens.expire(requester, b"x", 0, 0) == Changed(refused, -1)
        assert tokens.describe(requester, None) == (refused, [])


def test_the_gate_comes_before_the_authorizer_and_the_authorizer_before_the_renewers():
    tokens = store()
    got = tokens.create(who(protocol="PLAINTEXT", grants=set()), 0, owner_type="User", owner_name="bob")
    assert got.error_code == E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    got = tokens.create(who(grants=set()), 0, owner_type="User", owner_name="bob", renewers=[("Group", "g")])
    assert got.error_code == E.DELEGATION_TOKEN_AUTHORIZATION_FAILED


@pytest.mark.parametrize("secret", [None, ""])
def test_without_a_secret_key_tokens_are_disabled(secret):
    config = BrokerConfig({} if secret is None else {"delegation.token.secret.key": secret})
    tokens = DelegationTokens(config)
    assert not tokens.enabled
    created = tokens.create(who(), 5)
    assert created == Created(E.DELEGATION_TOKEN_AUTH_DISABLED, ("User", "alice"), ("User", "alice"), 0, 0, 0, "", b"")
    assert tokens.renew(who(), b"x", 0, 0) == Changed(E.DELEGATION_TOKEN_AUTH_DISABLED, 0)
    assert tokens.expire(who(), b"x", 0, 0) == Changed(E.DELEGATION_TOKEN_AUTH_DISABLED, 0)
    assert tokens.describe(who(), None) == (E.DELEGATION_TOKEN_AUTH_DISABLED, [])
    # the broker's checks come first: a bad renewer is refused by the broker
    assert tokens.create(who(), 0, renewers=[("Group", "g")]).error_code == E.INVALID_PRINCIPAL_TYPE


def test_a_metadata_version_before_3_6_iv2_has_no_tokens():
    old = store(mv=13)
    assert old.create(who(), 0).error_code == E.UNSUPPORTED_VERSION
    assert old.renew(who(), b"x", 0, 0) == Changed(E.UNSUPPORTED_VERSION, 0)
    assert old.describe(who(), None).error_code == E.NONE  # the broker answers Describe itself
    assert store(mv=14).create(who(), 0).error_code == E.NONE


# -- renew and expire ----------------------------------------------------------------------------------
def test_renew_moves_the_expiry_within_the_interval_and_the_max():
    tokens = store({"delegation.token.max.lifetime.ms": 10_000, "delegation.token.expiry.time.ms": 4_000})
    created = tokens.create(who(), 0, renewers=[("User", "bob")])
    assert created.expiry_ms == 4_000
    assert tokens.renew(who(BOB), created.hmac, -1, 1_000) == Changed(E.NONE, 5_000)  # the interval
    assert tokens.renew(who(), created.hmac, 500, 2_000) == Changed(E.NONE, 2_500)  # a shorter period asked
    assert tokens.renew(who(), created.hmac, 99_000, 2_000) == Changed(E.NONE, 6_000)  # never beyond the interval
    assert tokens.renew(who(), created.hmac, 0, 5_500) == Changed(E.NONE, 9_500)
    assert tokens.renew(who(), created.hmac, 0, 9_000) == Changed(E.NONE, 10_000)  # nor the max
    assert tokens.get(created.token_id).expiry_ms == 10_000


def test_renew_refusals_in_kafkas_order():
    tokens = store({"delegation.token.expiry.time.ms": 1_000})
    created = tokens.create(who(), 0)
    assert tokens.renew(who(), b"not a token", 0, 0) == Changed(E.DELEGATION_TOKEN_NOT_FOUND, 0)
    assert tokens.renew(who(), b"", 0, 0) == Changed(E.DELEGATION_TOKEN_NOT_FOUND, 0)
    assert tokens.renew(who(CAROL), created.hmac, 0, 500) == Changed(E.DELEGATION_TOKEN_OWNER_MISMATCH, 0)
    assert tokens.renew(who(), created.hmac, 0, 1_000) == Changed(E.NONE, 2_000)  # at its expiry: still valid
    # expired is checked before who asks
    assert tokens.renew(who(CAROL), created.hmac, 0, 2_001) == Changed(E.DELEGATION_TOKEN_EXPIRED, 0)
    assert tokens.renew(who(), created.hmac, 0, 2_001) == Changed(E.DELEGATION_TOKEN_EXPIRED, 0)


def test_the_requester_of_a_token_for_another_owner_may_not_renew_it():
    tokens = store()
    created = tokens.create(who(), 0, owner_type="User", owner_name="bob")
    assert tokens.renew(who(), created.hmac, 0, 0).error_code == E.DELEGATION_TOKEN_OWNER_MISMATCH
    assert tokens.renew(who(BOB), created.hmac, 0, 0).error_code == E.NONE


def test_the_token_authenticated_flag_does_not_change_who_a_principal_is():
    requester = Principal.parse("User:alice")
    assert requester == ("User", "alice") and str(requester) == "User:alice"
    assert Principal.parse("User:CN=a:b,O=x") == ("User", "CN=a:b,O=x")


def test_expire_with_a_negative_period_removes_the_token_even_when_expired():
    events = EventLog(lambda: 0, lambda: 0.0)
    tokens = store({"delegation.token.expiry.time.ms": 1_000}, events=events)
    created = tokens.create(who(), 0, renewers=[("User", "bob")])
    assert tokens.expire(who(CAROL), created.hmac, -1, 50) == Changed(E.DELEGATION_TOKEN_OWNER_MISMATCH, 0)
    assert tokens.expire(who(BOB), created.hmac, -1, 5_000) == Changed(E.NONE, 5_000)
    assert tokens.get(created.token_id) is None and len(tokens) == 0
    assert tokens.expire(who(), created.hmac, -1, 5_000) == Changed(E.DELEGATION_TOKEN_NOT_FOUND, 0)
    assert tokens.login(created.token_id, "SCRAM-SHA-512") is None
    (gone,) = [e for e in events if e.kind == "token_expired"]
    assert (gone.token_id, gone.owner, gone.expiry_ms, gone.removed, gone.requester) == (
        "token-0", ALICE, 5_000, True, BOB
    )  # fmt: skip


def test_expire_with_a_period_sets_the_expiry():
    tokens = store({"delegation.token.max.lifetime.ms": 10_000, "delegation.token.expiry.time.ms": 4_000})
    created = tokens.create(who(), 0)
    assert tokens.expire(who(), created.hmac, 100_000, 1_000) == Changed(E.NONE, 10_000)  # capped by the max
    assert tokens.expire(who(), created.hmac, 0, 1_000) == Changed(E.NONE, 1_000)  # now: expires at once
    assert tokens.get(created.token_id) is not None  # until the sweep
    assert tokens.expire(who(), created.hmac, 10, 1_001) == Changed(E.DELEGATION_TOKEN_EXPIRED, 0)
    assert tokens.renew(who(), created.hmac, 0, 1_001) == Changed(E.DELEGATION_TOKEN_EXPIRED, 0)


# -- describe ------------------------------------------------------------------------------------------
def describe_ids(tokens: DelegationTokens, requester: TokenRequester, owners=None) -> set[str]:
    described = tokens.describe(requester, owners)
    assert described.error_code == E.NONE
    return {t.token_id for t in described.tokens}


def three_tokens() -> DelegationTokens:
    tokens = store()
    tokens.create(who(), 0, renewers=[("User", "bob")])  # token-0: alice's, bob renews
    tokens.create(who(BOB), 0)  # token-1: bob's
    tokens.create(who(CAROL), 0, owner_type="User", owner_name="dave")  # token-2: dave's, carol asked
    return tokens


def test_describe_shows_owners_requesters_and_renewers_their_tokens_and_the_rest_by_acl():
    tokens = three_tokens()
    nothing = set()
    assert describe_ids(tokens, who(grants=nothing)) == {"token-0"}
    assert describe_ids(tokens, who(BOB, grants=nothing)) == {"token-0", "token-1"}
    assert describe_ids(tokens, who(CAROL, grants=nothing)) == {"token-2"}  # the requester sees it too
    assert describe_ids(tokens, who("User:dave", grants=nothing)) == {"token-2"}
    by_id = {(Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, "token-1")}
    assert describe_ids(tokens, who(grants=by_id)) == {"token-0", "token-1"}
    by_owner = {(Operation.DESCRIBE_TOKENS, ResourceType.USER, "User:dave")}
    assert describe_ids(tokens, who(grants=by_owner)) == {"token-0", "token-2"}
    assert describe_ids(tokens, who()) == {"token-0", "token-1", "token-2"}  # no authorizer


def test_describe_owners_filter():
    tokens = three_tokens()
    assert tokens.describe(who(), []) == (E.NONE, [])  # an empty list: nothing
    assert describe_ids(tokens, who(), [("User", "bob")]) == {"token-0", "token-1"}  # bob renews token-0
    assert describe_ids(tokens, who(), [("User", "carol")]) == {"token-2"}  # carol asked for token-2
    assert describe_ids(tokens, who(), [("User", "nobody")]) == set()
    assert describe_ids(tokens, who(grants=set()), [("User", "bob")]) == {"token-0"}  # and still the ACLs
    described = tokens.describe(who(), [("User", "alice")]).tokens[0]
    assert described.hmac == expected_hmac("token-0") and described.renewers == (("User", "bob"),)


def test_describe_lists_in_concurrent_hash_map_order():
    tokens = store()
    for _ in range(20):
        tokens.create(who(), 0)
    listed = [t.token_id for t in tokens.describe(who(), None).tokens]
    assert sorted(listed) == sorted(f"token-{i}" for i in range(20))
    assert listed == concurrent_hash_map_order([f"token-{i}" for i in range(20)], 20)


def test_concurrent_hash_map_order_grows_its_table_at_three_quarters():
    # String.hashCode: "a"=97, "q"=113: one bucket of 16, two of 32 (resized when 12 are held)
    assert concurrent_hash_map_order(["q", "a"], 2) == ["q", "a"]
    assert concurrent_hash_map_order(["q", "a"], 12) == ["a", "q"]


# -- the sweep ------------------------------------------------------------------------------------------
def test_the_sweep_removes_tokens_past_their_expiry_or_max():
    events = EventLog(lambda: 0, lambda: 0.0)
    tokens = store({"delegation.token.expiry.time.ms": 1_000}, events=events)
    short = tokens.create(who(), 0)
    longer = tokens.create(who(), 500)
    assert tokens.sweep(1_000) == 0  # at its expiry a token still stands
    assert tokens.sweep(1_001) == 1 and tokens.get(short.token_id) is None and tokens.get(longer.token_id)
    assert tokens.renew(who(), short.hmac, 0, 1_001) == Changed(E.DELEGATION_TOKEN_NOT_FOUND, 0)
    assert [e.kind for e in events] == ["token_created", "token_created", "token_expired"]
    swept = list(events)[-1]
    assert (swept.token_id, swept.expiry_ms, swept.removed, swept.requester) == (short.token_id, 1_000, True, None)


def test_events_never_carry_the_hmac():
    events = EventLog(lambda: 0, lambda: 0.0)
    tokens = store(events=events)
    created = tokens.create(who(), 0, renewers=[("User", "bob")])
    tokens.renew(who(BOB), created.hmac, 10, 5)
    tokens.expire(who(), created.hmac, 100, 6)
    described = [e.describe() for e in events]
    assert described == [
        f"token_created token_id=token-0 owner=User:alice requester=User:alice renewers=['User:bob'] "
        f"expiry_ms={DAY} max_ms={WEEK}",
        "token_renewed token_id=token-0 owner=User:alice renewer=User:bob expiry_ms=15",
        "token_expired token_id=token-0 owner=User:alice expiry_ms=106 removed=False requester=User:alice",
    ]
    assert not any(base64.b64encode(created.hmac).decode() in d for d in described)


# -- logging in with a token -------------------------------------------------------------------------------
def password_of(created: Created) -> str:
    return base64.b64encode(created.hmac).decode()


def token_client(created: Created, mechanism: str = "SCRAM-SHA-512", **kw) -> Client:
    """A SCRAM client logging in with the token (``tokenauth=true``), as the Java client does."""
    return Client(mechanism, created.token_id, password_of(created), extensions=",tokenauth=true", **kw)


def token_users(**config) -> tuple[Users, DelegationTokens, Created]:
    tokens = store(config)
    created = tokens.create(who(), 1_000)
    return Users(tokens=tokens), tokens, created


def scram(users: Users, mechanism: str = "SCRAM-SHA-512") -> ScramServer:
    return ScramServer(mechanism, users, lambda: NONCE)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_token_logs_in_as_its_owner_with_its_expiry(mechanism):
    users, tokens, created = token_users()
    login = tokens.login(created.token_id, mechanism)
    assert login is not None and login.credential.iterations == 4096 and login.owner_name == "alice"
    client, srv = token_client(created, mechanism), scram(users, mechanism)
    assert client.verify(srv.evaluate(client.final(srv.evaluate(client.first()))))
    assert srv.complete and srv.principal == "User:alice" and srv.token_authenticated
    assert srv.expiry_ms == created.expiry_ms


def test_the_owner_is_the_principal_whatever_its_type():
    tokens = store()
    created = tokens.create(who(), 0, owner_type="Group", owner_name="ops")
    client, srv = token_client(created), scram(Users(tokens=tokens))
    assert client.verify(srv.evaluate(client.final(srv.evaluate(client.first()))))
    assert srv.principal == "User:ops"  # Kafka's token owner name, as a User


def test_an_unknown_token_a_wrong_hmac_and_a_token_without_tokenauth_fail():
    users, _, created = token_users()
    srv = scram(users)
    with pytest.raises(SaslFailure, match="^Token Authentication failed: Invalid tokenId : nope$") as caught:
        srv.evaluate(b"n,,n=nope,r=abc,tokenauth=true")
    assert caught.value.passthrough is False  # the client sees the generic text
    wrong = Client("SCRAM-SHA-512", created.token_id, "AAAA", extensions=",tokenauth=true")
    srv = scram(users)
    first = srv.evaluate(wrong.first())
    with pytest.raises(SaslFailure, match="Invalid client credentials"):
        srv.evaluate(wrong.final(first))
    # the token's credentials as a user's: there is no such user
    with pytest.raises(SaslFailure, match="Invalid user credentials"):
        scram(users).evaluate(Client("SCRAM-SHA-512", created.token_id, password_of(created)).first())


def test_the_authorization_id_must_be_the_token_id():
    users, _, created = token_users()
    with pytest.raises(SaslFailure, match="authorization id that is different from username") as caught:
        scram(users).evaluate(token_client(created, authzid="alice").first())
    assert caught.value.passthrough is True


def authenticate(auth: Authenticator, client: Client, now_ms: int):
    auth.handshake("SCRAM-SHA-512", 1, now_ms)
    first = auth.authenticate(client.first(), now_ms)
    assert first.error_code == E.NONE, first.error_message
    return auth.authenticate(client.final(first.auth_bytes), now_ms)


def test_the_session_ends_at_the_tokens_expiry_and_is_token_authenticated():
    users, _, created = token_users(**{"delegation.token.expiry.time.ms": 60_000})
    auth = Authenticator(["SCRAM-SHA-512"], users, nonce=lambda: NONCE)
    done = authenticate(auth, token_client(created), 11_000)
    assert done.error_code == E.NONE and done.completed
    assert (auth.principal, auth.token_authenticated) == ("User:alice", True)
    assert done.session_lifetime_ms == 61_000 - 11_000 and auth.session_end_ms == 61_000
    # connections.max.reauth.ms shorter than what the token has left: the shorter one
    auth = Authenticator(["SCRAM-SHA-512"], users, reauth_ms=5_000, nonce=lambda: NONCE)
    assert authenticate(auth, token_client(created), 11_000).session_lifetime_ms == 5_000
    # a user's login is not token-authenticated
    users.add("bob", "pw")
    auth = Authenticator(["SCRAM-SHA-512"], users, nonce=lambda: NONCE)
    authenticate(auth, Client("SCRAM-SHA-512", "bob", "pw"), 0)
    assert (auth.principal, auth.token_authenticated, auth.session_end_ms) == ("User:bob", False, None)


def test_an_expired_token_not_swept_yet_logs_in_with_a_session_already_over():
    users, _, created = token_users(**{"delegation.token.expiry.time.ms": 1_000})
    auth = Authenticator(["SCRAM-SHA-512"], users, nonce=lambda: NONCE)
    done = authenticate(auth, token_client(created), 5_000)
    assert done.error_code == E.NONE and done.session_lifetime_ms == 0
    assert auth.route(3, 5_000) is Route.CLOSE  # its first request closes the connection, as in Kafka
