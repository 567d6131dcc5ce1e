"""Client quotas (KIP-546 DescribeClientQuotas/AlterClientQuotas) and the byte-rate throttle
they produce, as a Kafka 4.4 KRaft broker keeps and applies them.

Stored: quotas per entity, an entity being a mapping of ``user``, ``client-id`` or ``ip`` to a
name (``None`` for the default entity), with Kafka's validation (keys per entity kind, values
above 0, integral values for the byte rates, no ``ip`` next to ``user``/``client-id``).

Applied: ``producer_byte_rate`` and ``consumer_byte_rate`` only, as Kafka's
``ClientQuotaManager`` does: the quota that applies to a (user, client id) is looked up in
Kafka's order (``/users/<u>/clients/<c>`` ... ``/clients/<default>``); bytes are recorded in a
sampled rate of 11 one-second windows, and a request that brings the rate above the bound
gets ``(rate - bound) / bound * window`` ms of throttle, the window being at least 10 s
(Kafka's ``Rate.windowSize``). Time is the cluster clock's (virtual time works).
``request_percentage``, ``controller_mutation_rate`` and ``connection_creation_rate`` are
stored and described but not enforced. Without authentication every client is the user
``ANONYMOUS``, as on a Kafka PLAINTEXT listener.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import field

from ..lazy_dataclasses import dataclass
from ..protocol.error_codes import ErrorCode

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ANONYMOUS = "ANONYMOUS"
PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE = "producer_byte_rate", "consumer_byte_rate"
# the keys each entity kind takes, with their config type (Kafka's QuotaConfig)
USER_CLIENT_KEYS = {
    PRODUCER_BYTE_RATE: "LONG",
    CONSUMER_BYTE_RATE: "LONG",
    "request_percentage": "DOUBLE",
    "controller_mutation_rate": "DOUBLE",
}
IP_KEYS = {"connection_creation_rate": "INT"}
INTEGRAL_MAX = {"INT": 2**31 - 1, "LONG": 2**63 - 1}
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
# Kafka's quota.window.num and quota.window.size.seconds
SAMPLES, WINDOW_MS = 11, 1000

Entity = tuple[tuple[str, str | None], ...]  # sorted (type, name) pairs; name None = the default


def entity_of(pairs: list[tuple[str, str | None]]) -> Entity:
    """The entity a request names (a later component of the same type wins, as in Kafka's map)."""
    return tuple(sorted(dict(pairs).items()))


def _java_hash(text: str) -> int:
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h


def java_map_order(types: list[str]) -> list[str]:
    """Entity types in the order a Java HashMap of capacity 4 iterates them (Kafka keeps an
    entity as such a map): client-id, user, ip."""

    def bucket(t: str) -> int:
        h = _java_hash(t)
        return (h ^ (h >> 16)) & 3

    return sorted(types, key=bucket)


def entity_text(entity: Entity) -> str:
    """Java's ``ClientQuotaEntity.toString()``, as Kafka's messages quote it."""
    names = dict(entity)
    inner = ", ".join(f"{t}={'null' if names[t] is None else names[t]}" for t in java_map_order(list(names)))
    return f"ClientQuotaEntity(entries={{{inner}}})"


@dataclass
class Alteration:
    entity: Entity
    ops: list[tuple[str, float, bool]]  # (key, value, remove)


@dataclass
class SampledRate:
    """Kafka's ``Rate`` over a ``SampledStat``: samples of ``WINDOW_MS``, ``SAMPLES`` of them
    kept (plus the one overlapping the window)."""

    samples: list[list[float]] = field(default_factory=list)  # [start_ms, value, last_event_ms]
    current: int = 0

    def _purge(self, now: int) -> None:
        for s in self.samples:
            if now - s[2] >= SAMPLES * WINDOW_MS:
                s[0], s[1], s[2] = now, 0.0, now

    def record(self, value: float, now: int) -> None:
        if not self.samples:
            self.samples.append([now, 0.0, now])
        sample = self.samples[self.current]
        if now - sample[0] >= WINDOW_MS:
            self.current = (self.current + 1) % (SAMPLES + 1)
            if self.current >= len(self.samples):
                self.samples.append([now, 0.0, now])
            else:
                self.samples[self.current][:] = [now, 0.0, now]
            sample = self.samples[self.current]
        sample[1] += value
        sample[2] = now

    def window_ms(self, now: int) -> int:
        self._purge(now)
        if not self.samples:
            self.samples.append([now, 0.0, now])
        elapsed = now - min(s[0] for s in self.samples)
        full = int(elapsed // WINDOW_MS)
        if full < SAMPLES - 1:
            elapsed += (SAMPLES - 1 - full) * WINDOW_MS
        return max(int(elapsed), 1)

    def rate(self, now: int) -> float:
        """Bytes per second over the retained samples."""
        window = self.window_ms(now)
        return sum(s[1] for s in self.samples) / (window / 1000)


@dataclass
class ClientQuotas:
    entries: dict[Entity, dict[str, float]] = field(default_factory=dict)
    rates: dict[tuple[str, str, str], SampledRate] = field(default_factory=dict)

    # -- AlterClientQuotas ---------------------------------------------------------------------
    def alter(self, alterations: list[Alteration], validate_only: bool) -> dict[Entity, tuple[int, str | None]]:
        """Validate and (unless ``validate_only``) apply; the result per distinct entity, as
        Kafka's controller answers (a repeated entity or key fails that entity)."""
        results: dict[Entity, tuple[int, str | None]] = {}
        changes: list[tuple[Entity, dict[str, float | None]]] = []
        for alt in alterations:
            ops: dict[str, float | None] = {}
            duplicate = False
            for key, value, remove in alt.ops:
                if key in ops:
                    duplicate = True
                else:
                    ops[key] = None if remove else value
            if duplicate or alt.entity in results:
                message = f"Ignoring duplicate entity {entity_text(alt.entity)}"
                results[alt.entity] = (ErrorCode.INVALID_REQUEST, message)
                continue
            error = self._check(alt.entity, ops)
            results[alt.entity] = (ErrorCode.INVALID_REQUEST, error) if error else (ErrorCode.NONE, None)
            if not error:
                changes.append((alt.entity, ops))
        if not validate_only:
            # what passed validation is applied even when a later repeat of its entity turns
            # the answer into an error, as Kafka's controller writes its records
            for entity, ops in changes:
                values = self.entries.setdefault(entity, {})
                for key, op in ops.items():
                    if op is None:
                        values.pop(key, None)
                    else:
                        values[key] = op
                if not values:
                    del self.entries[entity]
        return results

    @staticmethod
    def _check(entity: Entity, ops: dict[str, float | None]) -> str | None:
        if not entity:
            return "Invalid empty client quota entity"
        for kind, name in entity:
            if kind not in (USER, CLIENT_ID, IP):
                return f"Unhandled client quota entity type: {kind}"
            if name == "":
                return f"Empty {kind} not supported"
        kinds = dict(entity)
        if IP in kinds:
            if USER in kinds or CLIENT_ID in kinds:
                return "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
            ip = kinds[IP]
            if ip is not None and not _valid_ip(ip):
                return f"{ip} is not a valid IP or resolvable host."
            keys = IP_KEYS
        else:
            keys = USER_CLIENT_KEYS
        for key, value in ops.items():
            if value is None:
                continue
            kind_of = keys.get(key)
            if kind_of is None:
                return f"Invalid configuration key {key}"
            if value <= 0.0:
                return f"Quota {key} must be greater than 0"
            if kind_of in INTEGRAL_MAX:
                if value > INTEGRAL_MAX[kind_of]:
                    return f"Proposed value for {key} is too large for {'an' if kind_of == 'INT' else 'a'} {kind_of}."
                if value != math.floor(value):
                    return f"{key} cannot be a fractional value."
        return None

    # -- DescribeClientQuotas ------------------------------------------------------------------
    def describe(
        self, components: list[tuple[str, int, str | None]], strict: bool
    ) -> tuple[int, str | None, list[tuple[Entity, dict[str, float]]] | None]:
        """(error code, message, matching entries) for a filter, as Kafka's ClientQuotasImage."""
        exact: dict[str, str | None] = {}
        typed: set[str] = set()
        for kind, match_type, match in components:
            if kind == "":
                return ErrorCode.INVALID_REQUEST, "Invalid empty entity type.", None
            if kind in exact or kind in typed:
                message = f"Entity type {kind} cannot appear more than once in the filter."
                return ErrorCode.INVALID_REQUEST, message, None
            if kind not in (USER, CLIENT_ID, IP):
                return ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {kind}", None
            if match_type == MATCH_EXACT:
                if match is None:
                    return (
                        ErrorCode.INVALID_REQUEST,
                        "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                        None,
                    )
                exact[kind] = match
            elif match_type == MATCH_DEFAULT:
                if match is not None:
                    return (
                        ErrorCode.INVALID_REQUEST,
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                        None,
                    )
                exact[kind] = None
            elif match_type == MATCH_SPECIFIED:
                if match is not None:
                    return (
                        ErrorCode.INVALID_REQUEST,
                        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                        None,
                    )
                typed.add(kind)
            else:
                return ErrorCode.INVALID_REQUEST, f"Unknown match type {match_type}", None
        named = set(exact) | typed
        if IP in named and (USER in named or CLIENT_ID in named):
            return (
                ErrorCode.INVALID_REQUEST,
                "Invalid entity filter component combination. IP filter component should not be used with "
                "user or clientId filter component.",
                None,
            )
        out = []
        for entity, values in self.entries.items():
            kinds = dict(entity)
            if not exact and not typed:
                if strict:
                    continue
            else:
                if any(k not in kinds or kinds[k] != name for k, name in exact.items()):
                    continue
                if any(k not in kinds for k in typed):
                    continue
                if strict and len(kinds) != len(exact) + len(typed):
                    continue
            out.append((entity, dict(sorted(values.items()))))
        return ErrorCode.NONE, None, out

    # -- enforcement ---------------------------------------------------------------------------
    def bound(self, key: str, user: str, client_id: str) -> tuple[float, tuple[str, str]] | None:
        """The quota ``key`` that applies to a client, and the metric tags (user, client id) its
        rate is kept under, in Kafka's lookup order; None without one."""
        if not self.entries:
            return None

        def get(*pairs: tuple[str, str | None]) -> float | None:
            return self.entries.get(tuple(sorted(pairs)), {}).get(key)

        candidates: list[tuple[tuple[tuple[str, str | None], ...], tuple[str, str]]] = []
        if user and client_id:
            candidates += [
                (((USER, user), (CLIENT_ID, client_id)), (user, client_id)),
                (((USER, user), (CLIENT_ID, None)), (user, client_id)),
                (((USER, None), (CLIENT_ID, client_id)), (user, client_id)),
                (((USER, None), (CLIENT_ID, None)), (user, client_id)),
            ]
        if user:
            candidates += [(((USER, user),), (user, "")), (((USER, None),), (user, ""))]
        if client_id:
            candidates += [(((CLIENT_ID, client_id),), ("", client_id)), (((CLIENT_ID, None),), ("", client_id))]
        for pairs, tags in candidates:
            value = get(*pairs)
            if value is not None:
                return value, tags
        return None

    def record(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record ``value`` bytes against the quota ``key`` that applies; the throttle time (ms)."""
        found = self.bound(key, user, client_id)
        if found is None:
            return 0
        limit, tags = found
        rate = self.rates.setdefault((key, *tags), SampledRate())
        rate.record(value, now_ms)
        measured = rate.rate(now_ms)
        if measured <= limit:
            return 0
        return round((measured - limit) / limit * rate.window_ms(now_ms))

    def unrecord(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back what :meth:`record` counted (Kafka does for a throttled Fetch's answer)."""
        found = self.bound(key, user, client_id)
        if found is not None:
            self.rates.setdefault((key, *found[1]), SampledRate()).record(-value, now_ms)


def _valid_ip(text: str) -> bool:
    """An IP literal or ``localhost`` (Kafka also resolves host names; fakebroker does not look
    names up)."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return text == "localhost"
    return True
