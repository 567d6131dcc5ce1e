"""Delegation tokens (KIP-48) as Kafka 4.4 keeps and checks them: what CreateDelegationToken
(38), RenewDelegationToken (39), ExpireDelegationToken (40) and DescribeDelegationToken (41)
do, the expiry sweep, and the SCRAM credential a token logs in with.

A token is a random UUID (its id) and ``HMAC-SHA512(delegation.token.secret.key, id)`` (its
password, base64 on the wire of SCRAM); it belongs to an owner, names who asked for it and who
may renew it, and ends at its expiry (renewable up to its max timestamp). Without
``delegation.token.secret.key`` the feature is off (DELEGATION_TOKEN_AUTH_DISABLED).

The checks follow Kafka's split between the broker (``KafkaApis.handle*Token*``: the listener
gate, the authorizer, the renewers' principal type) and the controller
(``DelegationTokenControlManager``: the secret key, the metadata.version, the token's state), in
that order, with each side's answer shape: the broker's refusals carry timestamps of -1, the
controller's of 0. Tokens are looked up by their HMAC for renew and expire, as Kafka does.

Time is the cluster clock's (virtual time moves token expiry); each change records an event
(``token_created``, ``token_renewed``, ``token_expired``), never the HMAC.
"""

from __future__ import annotations

import base64
import hmac
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, NamedTuple

from ...lazy_dataclasses import dataclass
from ...protocol.error_codes import ErrorCode
from ..events import TokenCreated, TokenExpired, TokenRenewed
from ..groups.placement import java_string_hash
from .acls import ANONYMOUS, Operation, ResourceType
from .scram import HASHES, MIN_ITERATIONS, ScramCredential, make_credential

if TYPE_CHECKING:
    from ..configs import BrokerConfig
    from ..events import EventLog

SECRET_KEY = "delegation.token.secret.key"
MAX_LIFETIME = "delegation.token.max.lifetime.ms"
EXPIRY_TIME = "delegation.token.expiry.time.ms"  # the renew interval
ERROR_TIMESTAMP = -1  # DelegationTokenManager.ERROR_TIMESTAMP: the broker's refusals
TOKENS_METADATA_VERSION = 14  # MetadataVersion.IBP_3_6_IV2: isDelegationTokenSupported
USER_TYPE = "User"
_LONG_MAX = 2**63 - 1


class Principal(NamedTuple):
    """A Kafka principal: ``type`` and ``name``; ``str()`` is Kafka's ``User:alice``. Equal when
    both are (Kafka's ``KafkaPrincipal.equals``: the token-authenticated flag does not count)."""

    type: str
    name: str

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> Principal:
        """``User:alice`` -> (User, alice); the name may hold further colons."""
        kind, _, name = text.partition(":")
        return cls(kind, name)


_ANONYMOUS = Principal.parse(ANONYMOUS)


@dataclass(frozen=True)
class TokenRequester:
    """Who sends a token request, and over what: the connection's principal (``User:alice``),
    its listener's security protocol, whether it logged in with a delegation token, and the
    authorizer's answer for it (``allowed(operation, resource type, name)``; always yes without
    an authorizer)."""

    principal: str
    security_protocol: str
    token_authenticated: bool = False
    allowed: Callable[[Operation, ResourceType, str], bool] = lambda operation, resource_type, name: True

    @property
    def may_request(self) -> bool:
        """Kafka's ``allowTokenRequests``: not over PLAINTEXT, not over SSL without a client
        certificate (``User:ANONYMOUS``), and not with a token's own login."""
        if self.token_authenticated or self.security_protocol == "PLAINTEXT":
            return False
        return not (self.security_protocol == "SSL" and self.principal == ANONYMOUS)


@dataclass
class DelegationToken:
    """One token (Kafka's ``TokenInformation`` and its HMAC); ``credentials``: the SCRAM
    credential of each mechanism its login is checked with (password: the base64 HMAC)."""

    token_id: str
    hmac: bytes
    owner: Principal
    requester: Principal
    renewers: tuple[Principal, ...]
    issue_ms: int
    max_ms: int
    expiry_ms: int
    credentials: dict[str, ScramCredential] = field(default_factory=dict, repr=False)

    @property
    def password(self) -> str:
        """What a client logs in with: the HMAC in base64 (``DelegationToken.hmacAsBase64String``)."""
        return base64.b64encode(self.hmac).decode("ascii")

    def expired(self, now_ms: int) -> bool:
        return self.max_ms < now_ms or self.expiry_ms < now_ms

    def may_renew(self, principal: Principal) -> bool:
        """Renew and expire: the owner or a renewer (``allowedToRenew``)."""
        return principal == self.owner or principal in self.renewers

    def owner_or_renewer(self, principal: Principal) -> bool:
        """Describe: the owner, the requester or a renewer (``TokenInformation.ownerOrRenewer``)."""
        return principal in (self.owner, self.requester) or principal in self.renewers


class Created(NamedTuple):
    """CreateDelegationToken's answer (the token's fields; -1s or 0s and no token on errors)."""

    error_code: int
    owner: Principal
    requester: Principal
    issue_ms: int
    expiry_ms: int
    max_ms: int
    token_id: str
    hmac: bytes


class Changed(NamedTuple):
    """RenewDelegationToken's or ExpireDelegationToken's answer: the token's new expiry."""

    error_code: int
    expiry_ms: int


class Described(NamedTuple):
    """DescribeDelegationToken's answer: the tokens the requester may see."""

    error_code: int
    tokens: list[DelegationToken]


class TokenLogin(NamedTuple):
    """What a SCRAM login with ``tokenauth=true`` reads of a token: its credential for the
    mechanism, its owner's name (the session's principal is ``User:<that name>``) and its
    expiry (where the session ends)."""

    credential: ScramCredential
    owner_name: str
    expiry_ms: int


def _sum(now_ms: int, duration_ms: int) -> int:
    """``now + duration`` capped at Long.MAX_VALUE, as the controller's ``sum``."""
    return _LONG_MAX if now_ms > _LONG_MAX - duration_ms else now_ms + duration_ms


def concurrent_hash_map_order(keys: Iterable[str], peak: int) -> list[str]:
    """``keys`` as a ``java.util.concurrent.ConcurrentHashMap`` iterates them (Kafka's token
    cache): by bucket of the spread ``String.hashCode``, insertion order within. The table
    starts at 16 and doubles once it holds 3/4 of it; it never shrinks (``peak``: the most it
    held)."""
    found = list(keys)
    capacity = 16
    while max(peak, len(found)) >= capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return ((h ^ (h >> 16)) & 0x7FFFFFFF) & (capacity - 1)

    return sorted(found, key=bucket)


class DelegationTokens:
    """The cluster's delegation tokens. ``config``: the brokers' settings (the secret key and
    the lifetimes, read at each request); ``events``: where changes are recorded;
    ``metadata_version``: the finalized metadata.version level (tokens need 14, 3.6-IV2);
    ``new_token_id``: makes a token id (a random UUID's text)."""

    def __init__(
        self,
        config: BrokerConfig,
        events: EventLog | None = None,
        *,
        metadata_version: Callable[[], int] = lambda: TOKENS_METADATA_VERSION,
        new_token_id: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        self._config = config
        self._events = events
        self._metadata_version = metadata_version
        self._new_token_id = new_token_id
        self._tokens: dict[str, DelegationToken] = {}
        self._by_hmac: dict[bytes, str] = {}
        self._peak = 0

    # -- settings ---------------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        """``delegation.token.secret.key`` is set (and not empty)."""
        return bool(self._config.get(SECRET_KEY))

    def hmac_of(self, token_id: str) -> bytes:
        """HMAC-SHA512 of the token id's UTF-8 under the secret key's UTF-8."""
        return hmac.digest(self._config.get(SECRET_KEY).encode("utf-8"), token_id.encode("utf-8"), "sha512")

    # -- reading ----------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._tokens)

    def get(self, token_id: str) -> DelegationToken | None:
        return self._tokens.get(token_id)

    def tokens(self) -> list[DelegationToken]:
        """Every token (expired ones the sweep has not removed yet included), in Kafka's order."""
        return [self._tokens[t] for t in concurrent_hash_map_order(self._tokens, self._peak)]

    def login(self, token_id: str, mechanism: str) -> TokenLogin | None:
        """What a SCRAM ``tokenauth`` login as ``token_id`` is checked with (None: no such
        token). An expired token the sweep has not removed yet still logs in, as in Kafka: its
        session ends at once."""
        token = self._tokens.get(token_id)
        credential = token.credentials.get(mechanism) if token is not None else None
        if token is None or credential is None:
            return None
        return TokenLogin(credential, token.owner.name, token.expiry_ms)

    # -- the four APIs ----------------------------------------------------------------------------------
    def create(
        self,
        who: TokenRequester,
        now_ms: int,
        *,
        owner_type: str | None = "",
        owner_name: str | None = "",
        renewers: Sequence[tuple[str, str]] = (),
        max_lifetime_ms: int = -1,
    ) -> Created:
        """CreateDelegationToken: a token owned by the named owner (by the requester when no
        owner is named), renewable by ``renewers`` (``(type, name)``, each a ``User``)."""
        requester = Principal.parse(who.principal)
        if owner_name:
            if owner_type is None:  # KafkaPrincipal refuses a null type: the request's error answer
                return Created(ErrorCode.UNKNOWN_SERVER_ERROR, _ANONYMOUS, _ANONYMOUS, -1, -1, -1, "", b"")
            owner = Principal(owner_type, owner_name)
        else:
            owner = requester

        def refused(code: int, stamp: int = ERROR_TIMESTAMP) -> Created:
            return Created(code, owner, requester, stamp, stamp, stamp, "", b"")

        # the broker's checks
        if not who.may_request:
            return refused(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
        if owner != requester and not who.allowed(Operation.CREATE_TOKENS, ResourceType.USER, str(owner)):
            return refused(ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
        if any(kind != USER_TYPE for kind, _ in renewers):
            return refused(ErrorCode.INVALID_PRINCIPAL_TYPE)
        # the controller's
        if not self.enabled:
            return refused(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0)
        if self._metadata_version() < TOKENS_METADATA_VERSION:
            return refused(ErrorCode.UNSUPPORTED_VERSION, 0)
        max_lifetime = self._config.get_int(MAX_LIFETIME)
        if max_lifetime_ms > 0:
            max_lifetime = min(max_lifetime, max_lifetime_ms)
        max_ms = _sum(now_ms, max_lifetime)
        expiry_ms = min(max_ms, _sum(now_ms, self._config.get_int(EXPIRY_TIME)))
        token_id = self._new_token_id()
        token = DelegationToken(
            token_id,
            self.hmac_of(token_id),
            owner,
            requester,
            tuple(Principal(kind, name) for kind, name in renewers),
            now_ms,
            max_ms,
            expiry_ms,
        )
        self._add(token)
        self._record(
            TokenCreated(
                token_id=token_id,
                owner=str(owner),
                requester=str(requester),
                renewers=[str(r) for r in token.renewers],
                expiry_ms=expiry_ms,
                max_ms=max_ms,
            ),
            now_ms,
        )
        return Created(ErrorCode.NONE, owner, requester, now_ms, expiry_ms, max_ms, token_id, token.hmac)

    def renew(self, who: TokenRequester, hmac_bytes: bytes, renew_period_ms: int, now_ms: int) -> Changed:
        """RenewDelegationToken: the token's expiry moved to ``now + min(renew interval,
        renew_period_ms if > 0)``, never past its max timestamp."""
        found = self._controller_lookup(who, hmac_bytes)
        if isinstance(found, Changed):
            return found
        if found.expired(now_ms):
            return Changed(ErrorCode.DELEGATION_TOKEN_EXPIRED, 0)
        renewer = Principal.parse(who.principal)
        if not found.may_renew(renewer):
            return Changed(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0)
        interval = self._config.get_int(EXPIRY_TIME)
        if renew_period_ms > 0:
            interval = min(interval, renew_period_ms)
        found.expiry_ms = min(found.max_ms, now_ms + interval)
        self._record(
            TokenRenewed(
                token_id=found.token_id, owner=str(found.owner), renewer=str(renewer), expiry_ms=found.expiry_ms
            ),
            now_ms,
        )
        return Changed(ErrorCode.NONE, found.expiry_ms)

    def expire(self, who: TokenRequester, hmac_bytes: bytes, expiry_period_ms: int, now_ms: int) -> Changed:
        """ExpireDelegationToken: a negative period removes the token now; any other sets its
        expiry to ``now + period`` (never past its max timestamp), an expired token excepted."""
        found = self._controller_lookup(who, hmac_bytes)
        if isinstance(found, Changed):
            return found
        requester = Principal.parse(who.principal)
        if not found.may_renew(requester):
            return Changed(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0)
        if expiry_period_ms < 0:  # expire immediately
            self._remove(found.token_id)
            self._expired(found, now_ms, True, str(requester), now_ms)
            return Changed(ErrorCode.NONE, now_ms)
        if found.expired(now_ms):
            return Changed(ErrorCode.DELEGATION_TOKEN_EXPIRED, 0)
        found.expiry_ms = min(found.max_ms, _sum(now_ms, expiry_period_ms))
        self._expired(found, found.expiry_ms, False, str(requester), now_ms)
        return Changed(ErrorCode.NONE, found.expiry_ms)

    def describe(self, who: TokenRequester, owners: Sequence[tuple[str, str]] | None) -> Described:
        """DescribeDelegationToken: the tokens of ``owners`` (``(type, name)``; a token counts
        for its owner, requester and renewers; None: every token; empty: none) the requester may
        see: its own (as owner, requester or renewer), those it may DESCRIBE as
        DELEGATION_TOKEN resources, and those of owners it may DESCRIBE_TOKENS of as USER."""
        if not who.may_request:
            return Described(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, [])
        if not self.enabled:
            return Described(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, [])
        if owners is not None and not owners:
            return Described(ErrorCode.NONE, [])
        wanted = None if owners is None else [Principal(kind, name) for kind, name in owners]
        requester = Principal.parse(who.principal)

        def eligible(token: DelegationToken) -> bool:  # DelegationTokenManager.filterToken
            if wanted is not None and not any(token.owner_or_renewer(p) for p in wanted):
                return False
            if token.owner_or_renewer(requester):
                return True
            return who.allowed(Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id) or who.allowed(
                Operation.DESCRIBE_TOKENS, ResourceType.USER, str(token.owner)
            )

        return Described(ErrorCode.NONE, [t for t in self.tokens() if eligible(t)])

    # -- the sweep ----------------------------------------------------------------------------------------
    def sweep(self, now_ms: int) -> int:
        """Remove every token past its expiry or max timestamp (the controller's
        ``sweepExpiredDelegationTokens``, every ``delegation.token.expiry.check.interval.ms``);
        how many went."""
        gone = [t for t in self.tokens() if t.expired(now_ms)]
        for token in gone:
            self._remove(token.token_id)
            self._expired(token, token.expiry_ms, True, None, now_ms)
        return len(gone)

    # -- inside ---------------------------------------------------------------------------------------------
    def _controller_lookup(self, who: TokenRequester, hmac_bytes: bytes) -> DelegationToken | Changed:
        """Renew's and expire's common checks, the broker's then the controller's: the token, or
        the refusal."""
        if not who.may_request:
            return Changed(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, ERROR_TIMESTAMP)
        if not self.enabled:
            return Changed(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0)
        if self._metadata_version() < TOKENS_METADATA_VERSION:
            return Changed(ErrorCode.UNSUPPORTED_VERSION, 0)
        token_id = self._by_hmac.get(bytes(hmac_bytes or b""))
        token = self._tokens.get(token_id) if token_id is not None else None
        if token is None:
            return Changed(ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)
        return token

    def restore(self, token: DelegationToken) -> None:
        """A token kept in a data directory, back (its login credentials made again)."""
        self._add(token)

    def _add(self, token: DelegationToken) -> None:
        # DelegationTokenManager.prepareScramCredentials: both mechanisms, the minimum iterations
        token.credentials = {m: make_credential(token.password, m, MIN_ITERATIONS) for m in HASHES}
        self._tokens[token.token_id] = token
        self._by_hmac[token.hmac] = token.token_id
        self._peak = max(self._peak, len(self._tokens))

    def _remove(self, token_id: str) -> None:
        token = self._tokens.pop(token_id, None)
        if token is not None:
            self._by_hmac.pop(token.hmac, None)

    def _expired(self, token: DelegationToken, expiry: int, removed: bool, requester: str | None, now: int) -> None:
        event = TokenExpired(
            token_id=token.token_id, owner=str(token.owner), expiry_ms=expiry, removed=removed, requester=requester
        )
        self._record(event, now)

    def _record(self, event: TokenCreated | TokenRenewed | TokenExpired, now_ms: int) -> None:
        if self._events is not None:
            self._events.append(event, now_ms)


__all__ = [
    "Changed",
    "Created",
    "DelegationToken",
    "DelegationTokens",
    "Described",
    "Principal",
    "TokenLogin",
    "TokenRequester",
]
