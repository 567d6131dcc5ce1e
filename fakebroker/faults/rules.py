"""Fault rules: which requests a rule hits, how often it fires, and what it does.

A rule matches on any combination of API (name or key), version range, broker, client id,
group, topic/partition and transactional id; it fires on the nth match, the next k, or
every one, optionally with a probability drawn from a seeded generator. Rules are plain
data, read by the server between decoding a request and handling it.

>>> faults = Faults()
>>> rule = faults.add(api="Heartbeat", group="orders", error="REBALANCE_IN_PROGRESS", times=3)
>>> rule.action, rule.error, rule.times
('error', 27, 3)
>>> faults.add(api="Hartbeat", error=27)  # doctest: +ELLIPSIS
Traceback (most recent call last):
fakebroker.faults.rules.FaultRuleError: unknown API 'Hartbeat'. Did you mean Heartbeat, BrokerHeartbeat? (...)
>>> faults.add(api="Heartbeat", action="drop", error="NOT_COORDINATOR")  # doctest: +ELLIPSIS
Traceback (most recent call last):
fakebroker.faults.rules.FaultRuleError: error= is not used by the action 'drop', which takes no arguments of its own...
"""

from __future__ import annotations

import builtins
import fnmatch
import inspect
import itertools
import random
import threading
from collections.abc import Callable, Iterable
from dataclasses import field
from typing import Any

from ..lazy_dataclasses import dataclass
from ..protocol.error_codes import ErrorCode, error_code
from ..protocol.messages import api_keys
from ..protocol.suggest import close_matches
from .request_view import Leaf, RequestView

ACTIONS = {
    "error": "answer with the error without handling the request",
    "replace_error": "handle the request, then replace the answer's error codes",
    "delay": "handle the request and hold the answer for `delay` seconds",
    "drop": "close the connection before handling the request",
    "drop_after": "handle the request, then close the connection instead of answering",
    "blackhole": "swallow the request and stop reading the connection for `duration` seconds "
    "(None: until the rule is removed)",
    "throttle": "handle the request and fill throttle_time_ms with `throttle_ms`",
}
# the arguments each action takes besides the matching and counting ones (which every rule takes);
# an action given an argument it would ignore is refused, naming these
ACTION_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "error": ("error", "delay"),
    "replace_error": ("error", "delay"),
    "delay": ("delay",),
    "drop": (),
    "drop_after": ("delay",),
    "blackhole": ("duration",),
    "throttle": ("throttle_ms", "delay"),
}


class FaultRuleError(ValueError):
    """A fault rule that cannot be added: a misspelt keyword, API, error name or action, a number
    out of its domain, a missing action, or an argument the chosen action would ignore. The
    message names what is valid. A ``ValueError`` (the control endpoint answers it with 400)."""


def api_key_of(api: str | int) -> int:
    """An API key from its Kafka name (``"JoinGroup"``, case and a ``Request`` suffix ignored) or number."""
    names = api_keys()
    if isinstance(api, int) and not isinstance(api, bool):
        if api not in names:
            raise FaultRuleError(f"unknown API key {api}; valid keys: {sorted(names)}")
        return api
    wanted = str(api).strip()
    by_name = {name.lower(): key for key, name in names.items()}
    for candidate in (wanted.lower(), wanted.lower().removesuffix("request")):
        if candidate in by_name:
            return by_name[candidate]
    if wanted.isdigit():
        return api_key_of(int(wanted))
    close = close_matches(wanted, list(names.values()), n=3)
    if close:  # the near names only; the whole list is one command away
        raise FaultRuleError(
            f"unknown API {wanted!r}. Did you mean {', '.join(close)}? (`fakebroker apis` lists all {len(names)})"
        )
    raise FaultRuleError(f"unknown API {wanted!r}. Valid APIs: {', '.join(sorted(names.values()))}")


def _as_set(value: Any) -> frozenset | None:
    if value is None:
        return None
    if isinstance(value, (str, int)):
        return frozenset([value])
    return frozenset(value)


INT32_MAX = 2**31 - 1
#: The longest ``delay`` or ``duration`` a rule may have (one day), in seconds.
MAX_SECONDS = 86_400.0


def _seconds(name: str, value: object) -> float:
    """A rule's time in seconds: a finite number in [0, one day]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_SECONDS:
        # NaN fails the comparison too, and infinity is above a day
        raise FaultRuleError(f"{name} must be a number of seconds in 0..{MAX_SECONDS:g} (one day), not {value!r}")
    return float(value)


def _whole(name: str, value: object, low: int, high: int | None, valid: str) -> int:
    """A rule's whole-number field within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        raise FaultRuleError(f"{name} must be {valid}, not {value!r}")
    return value


@dataclass
class FaultRule:
    """One rule. ``matched`` counts requests it matched, ``fired`` the times it acted."""

    id: int
    action: str
    apis: frozenset[int] | None = None
    versions: tuple[int, int] | None = None
    brokers: frozenset[int] | None = None
    client_id: str | None = None  # exact, or a glob such as "svc-*"
    groups: frozenset[str] | None = None
    topics: frozenset[str] | None = None
    partitions: frozenset[int] | None = None
    transactional_id: str | None = None
    error: int | None = None
    delay: float = 0.0
    duration: float | None = None
    throttle_ms: int = 0
    nth: int | None = None
    after: int = 0
    times: int | None = None
    probability: float = 1.0
    seed: int | None = None
    matched: int = 0
    fired: int = 0
    removed: bool = False  # set by remove/clear; ends the black holes this rule opened
    _random: random.Random = field(default_factory=random.Random, repr=False)

    @property
    def active(self) -> bool:
        """False once a ``times`` or ``nth`` rule can fire no more."""
        if self.times is not None and self.fired >= self.times:
            return False
        return not (self.nth is not None and self.matched >= self.nth)

    @property
    def filters_items(self) -> bool:
        return self.topics is not None or self.partitions is not None

    def hits_leaf(self, leaf: Leaf) -> bool:
        if self.topics is not None and leaf.topic not in self.topics:
            return False
        if self.partitions is not None and leaf.partition not in self.partitions:
            return False
        return not (self.groups is not None and leaf.group is not None and leaf.group not in self.groups)

    @property
    def needs_view(self) -> bool:
        """Whether matching has to look inside the request (groups, topics, transactional ids)."""
        return self.groups is not None or self.transactional_id is not None or self.filters_items

    def matches_header(self, broker: int, api_key: int, version: int, client_id: str | None) -> bool:
        """The cheap part of matching: what the request header says."""
        if self.apis is not None and api_key not in self.apis:
            return False
        if self.versions is not None and not self.versions[0] <= version <= self.versions[1]:
            return False
        if self.brokers is not None and broker not in self.brokers:
            return False
        return self.client_id is None or fnmatch.fnmatchcase(client_id or "", self.client_id)

    def matches_view(self, view: RequestView) -> bool:
        if self.groups is not None and not (view.groups & self.groups):
            return False
        if self.transactional_id is not None and self.transactional_id not in view.transactional_ids:
            return False
        return not (self.filters_items and not any(self.hits_leaf(leaf) for leaf in view.leaves))

    def matches(self, broker: int, api_key: int, version: int, client_id: str | None, view: RequestView) -> bool:
        return self.matches_header(broker, api_key, version, client_id) and (
            not self.needs_view or self.matches_view(view)
        )

    def roll(self) -> bool:
        """Count a match and decide whether the rule fires on it."""
        self.matched += 1
        if self.matched <= self.after:
            return False
        if self.nth is not None and self.matched != self.nth:
            return False
        if self.times is not None and self.fired >= self.times:
            return False
        if self.probability < 1.0 and self._random.random() >= self.probability:
            return False
        self.fired += 1
        return True

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (the control endpoint lists rules with it)."""
        names = api_keys()
        out: dict[str, Any] = {
            "id": self.id,
            "action": self.action,
            "matched": self.matched,
            "fired": self.fired,
            "active": self.active,
        }
        if self.apis is not None:
            out["api"] = sorted(names.get(k, str(k)) for k in self.apis)
        for key in ("versions", "client_id", "transactional_id", "duration", "nth", "times", "seed"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        for key in ("brokers", "groups", "topics", "partitions"):
            if getattr(self, key) is not None:
                out[key] = sorted(getattr(self, key))
        if self.error is not None:
            out["error"] = error_code(self.error).name
        for key, default in (("delay", 0.0), ("throttle_ms", 0), ("after", 0), ("probability", 1.0)):
            if getattr(self, key) != default:
                out[key] = getattr(self, key)
        return out


class Faults:
    """The rules of one cluster, in the order they were added (the first terminal one wins)."""

    def __init__(self) -> None:
        self._rules: list[FaultRule] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # rules are added from test threads, read on the loop
        self._by_api: dict[int, list[FaultRule]] = {}  # api key -> rules that can match it, in order

    def add(
        self,
        *,
        api: str | int | Iterable[str | int] | None = None,
        version: int | tuple[int, int] | None = None,
        broker: int | Iterable[int] | None = None,
        client_id: str | None = None,
        group: str | Iterable[str] | None = None,
        topic: str | Iterable[str] | None = None,
        partition: int | Iterable[int] | None = None,
        transactional_id: str | None = None,
        error: str | int | None = None,
        action: str | None = None,
        delay: float = 0.0,
        duration: float | None = None,
        throttle_ms: int = 0,
        nth: int | None = None,
        after: int = 0,
        times: int | None = None,
        probability: float = 1.0,
        seed: int | None = None,
        **misspelt: Any,
    ) -> FaultRule:
        """Add a rule; see the fault rules reference (docs/reference/fault-rules.md). A misspelt
        keyword, API, error or action, and an argument the action would ignore, are refused
        with :class:`FaultRuleError`."""
        if misspelt:
            raise FaultRuleError(_unknown_keywords(misspelt))
        action = _action_of(action, error=error, delay=delay, duration=duration, throttle_ms=throttle_ms)
        if action in ("error", "replace_error") and error is None:
            raise FaultRuleError(
                f"action {action!r} needs error= (a Kafka error name such as NOT_COORDINATOR, or a code)"
            )
        delay = _seconds("delay", delay)
        duration = None if duration is None else _seconds("duration", duration)
        throttle_ms = _whole(
            "throttle_ms", throttle_ms, 0, INT32_MAX, "0..2147483647 ms (Kafka's int32 throttle_time_ms)"
        )
        if action == "throttle" and throttle_ms <= 0:
            raise FaultRuleError("action 'throttle' needs throttle_ms > 0")
        if isinstance(probability, bool) or not isinstance(probability, (int, float)) or not 0.0 <= probability <= 1.0:
            raise FaultRuleError(f"probability must be a number between 0 and 1, not {probability!r}")
        nth = None if nth is None else _whole("nth", nth, 1, None, "a whole number >= 1 (the first match is 1)")
        after = _whole("after", after, 0, None, "a whole number >= 0")
        times = None if times is None else _whole("times", times, 0, None, "a whole number >= 0")
        versions = _versions(version)
        code = None if error is None else _error_of(error)
        apis = None
        if api is not None:
            apis = frozenset(api_key_of(a) for a in ([api] if isinstance(api, (str, int)) else api))
        rule = FaultRule(
            id=next(self._ids),
            action=action,
            apis=apis,
            versions=versions,
            brokers=_as_set(broker),
            client_id=client_id,
            groups=_as_set(group),
            topics=_as_set(topic),
            partitions=_as_set(partition),
            transactional_id=transactional_id,
            error=code,
            delay=float(delay),
            duration=None if duration is None else float(duration),
            throttle_ms=int(throttle_ms),
            nth=nth,
            after=after,
            times=times,
            probability=probability,
            seed=seed,
            _random=random.Random(seed),
        )
        with self._lock:
            self._rules = self._rules + [rule]
            self._by_api = {}
        return rule

    def list(self) -> list[FaultRule]:
        return list(self._rules)

    def get(self, rule_id: int) -> FaultRule:
        for rule in self._rules:
            if rule.id == rule_id:
                return rule
        raise KeyError(f"no fault rule {rule_id}; rules: {[r.id for r in self._rules] or 'none'}")

    def remove(self, rule: FaultRule | int) -> None:
        rule_id = rule if isinstance(rule, int) else rule.id
        with self._lock:
            kept = [r for r in self._rules if r.id != rule_id]
            if len(kept) == len(self._rules):
                raise KeyError(f"no fault rule {rule_id}; rules: {[r.id for r in self._rules] or 'none'}")
            for r in self._rules:
                r.removed = r.removed or r.id == rule_id
            self._rules = kept
            self._by_api = {}

    def clear(self) -> None:
        with self._lock:
            for r in self._rules:
                r.removed = True
            self._rules = []
            self._by_api = {}

    def __len__(self) -> int:
        return len(self._rules)

    def __iter__(self):
        return iter(list(self._rules))

    def fire(
        self,
        broker: int,
        api_key: int,
        version: int,
        client_id: str | None,
        view: RequestView | Callable[[], RequestView],
    ) -> builtins.list[FaultRule]:  # builtins: ``list`` here is the method above
        """The rules that fire for this request, counting matches as it goes. ``view`` may be
        a function: the request is then looked into only if a rule's header match needs it."""
        fired = []
        cached: RequestView | None = view if isinstance(view, RequestView) else None
        by_api = self._by_api  # a change replaces the dict, so a stale list never lands in the new one
        candidates = by_api.get(api_key)
        if candidates is None:
            candidates = by_api[api_key] = [r for r in self._rules if r.apis is None or api_key in r.apis]
        for rule in candidates:
            if not rule.active or not rule.matches_header(broker, api_key, version, client_id):
                continue
            if rule.needs_view:
                if cached is None:
                    cached = view if isinstance(view, RequestView) else view()
                if not rule.matches_view(cached):
                    continue
            if rule.roll():
                fired.append(rule)
        return fired


#: Every keyword of ``Faults.add`` (and field of ``POST /faults``).
KEYWORDS: tuple[str, ...] = tuple(
    name for name, p in inspect.signature(Faults.add).parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY
)
_IGNORED_WHEN_DEFAULT = {"error": None, "delay": 0.0, "duration": None, "throttle_ms": 0}


def _unknown_keywords(given: dict[str, Any]) -> str:
    parts = []
    for name in sorted(given):
        close = close_matches(name, KEYWORDS, n=2, cutoff=0.6)
        parts.append(f"{name!r}" + (f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""))
    return f"unknown fault rule keyword(s) {', '.join(parts)}; valid keywords: {', '.join(KEYWORDS)}"


def _action_of(action: Any, **arguments: Any) -> str:
    """The rule's action (given, or implied by error=, throttle_ms= or delay=), checked against the
    action's own arguments: one it would ignore is refused."""
    given = [name for name, default in _IGNORED_WHEN_DEFAULT.items() if arguments[name] != default]
    if action is None:
        implied = "error" if "error" in given else "throttle" if "throttle_ms" in given else "delay"
        if implied not in ("error", "throttle") and "delay" not in given:
            raise FaultRuleError(
                "a fault rule needs an action: give error=NAME (answer with that error), delay=SECONDS, "
                f"throttle_ms=MS, or action= one of {', '.join(ACTIONS)}"
            )
        action = implied
    if action not in ACTIONS:
        close = close_matches(str(action), ACTIONS, n=2)
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        raise FaultRuleError(
            f"unknown action {action!r}{hint}; valid actions: " + "; ".join(f"{a}: {d}" for a, d in ACTIONS.items())
        )
    takes = ACTION_ARGUMENTS[action]
    for name in given:
        if name not in takes:
            own = f"takes {', '.join(f'{t}=' for t in takes)}" if takes else "takes no arguments of its own"
            users = [a for a, args in ACTION_ARGUMENTS.items() if name in args]
            raise FaultRuleError(
                f"{name}= is not used by the action {action!r}, which {own} (besides the matching and counting "
                f"ones); leave {name}= out, or pick an action that uses it: {', '.join(users)}"
            )
    return action


def _error_of(error: Any) -> int:
    """An error code from a Kafka error name or number; a misspelt name lists the near ones only."""
    try:
        return int(error_code(error))
    except (TypeError, ValueError) as exc:
        if not isinstance(error, str) or error.strip().lstrip("-").isdigit():
            raise FaultRuleError(f"error= {exc}") from None
    key = error.strip().upper().replace("-", "_").replace(" ", "_")
    close = close_matches(key, ErrorCode.__members__, n=3)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise FaultRuleError(
        f"unknown Kafka error name {error!r}.{hint} (`fakebroker errors` lists all {len(ErrorCode)} names)"
    )


def _versions(version: Any) -> tuple[int, int] | None:
    if version is None:
        return None
    if isinstance(version, int) and not isinstance(version, bool) and version >= 0:
        return (version, version)
    pair = tuple(version) if isinstance(version, (list, tuple)) else ()
    if (
        len(pair) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in pair)
        and pair[0] <= pair[1]
    ):
        return (pair[0], pair[1])
    raise FaultRuleError(f"version must be a version number >= 0 or a (lowest, highest) pair, not {version!r}")
