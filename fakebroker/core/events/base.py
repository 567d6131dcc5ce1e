"""The event base class: what every kind shares (its stamps, details, equality and JSON form),
and ``KINDS``, every kind by name."""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ...lazy_dataclasses import dataclass

if TYPE_CHECKING:  # what a kind is: a frozen dataclass with keyword-only fields
    from typing_extensions import dataclass_transform

    _Kind = TypeVar("_Kind", bound=type)

    @dataclass_transform(kw_only_default=True, frozen_default=True, eq_default=False)
    def _kind(cls: _Kind) -> _Kind: ...
else:
    # What a kind is made with: dataclass compiles no function for it (about 0.25 ms a kind,
    # 15 ms at import), as Event's one __init__, __setattr__ and __delattr__ serve them all.
    _kind = dataclass(init=False, eq=False, repr=False)

_BASE = frozenset({"broker", "seq", "time_ms", "wall"})
_DETAIL_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    found = _FIELD_NAMES.get(cls)
    if found is None:
        found = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return found


def _detail_fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """An event class's own fields as (name, left out when None), worked out once per class
    (the event printer asks for every event's details)."""
    found = _DETAIL_FIELDS.get(cls)
    if found is None:
        found = _DETAIL_FIELDS[cls] = tuple(
            (f.name, f.default is None and not f.metadata.get("shown"))
            for f in dataclasses.fields(cls)
            if f.name not in _BASE
        )
    return found


def _fields_in_dict(cls: type) -> bool:
    """Whether every field of an event class lives in its instances' ``__dict__`` (no class of it
    declares ``__slots__``), so a copy is its ``__dict__`` copied."""
    found = _IN_DICT.get(cls)
    if found is None:
        found = _IN_DICT[cls] = not any("__slots__" in vars(c) for c in cls.__mro__[:-1])
    return found


_IN_DICT: dict[type, bool] = {}
_REQUIRED = object()
_INIT_SPECS: dict[type, tuple[tuple[str, Any, Any], ...]] = {}


def _init_spec(cls: type) -> tuple[tuple[str, Any, Any], ...]:
    """A kind's fields as (name, default, factory), ``_REQUIRED`` for what has none."""
    found = _INIT_SPECS.get(cls)
    if found is None:
        found = _INIT_SPECS[cls] = tuple(
            (
                f.name,
                _REQUIRED if f.default is dataclasses.MISSING else f.default,
                None if f.default_factory is dataclasses.MISSING else f.default_factory,
            )
            for f in dataclasses.fields(cls)
        )
    return found


KINDS: dict[str, type[Event]] = {}  # every class by its kind, the bases of kinds included
_MEMBER_ID = re.compile(r"^(.*)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@_kind
class Event:
    """One thing that happened. Fields without a default always appear in ``details``;
    optional ones (default None) only when set, unless marked ``shown``."""

    kind: ClassVar[str] = "event"
    broker: int | None = None
    seq: int = 0
    time_ms: int = 0
    wall: float = 0.0

    if not TYPE_CHECKING:  # a type checker sees each kind's own keyword __init__ (see _kind)

        def __init__(self, **values: Any) -> None:
            fields = self.__dict__
            for name, default, factory in _init_spec(type(self)):
                if name in values:
                    fields[name] = values.pop(name)
                elif factory is not None:
                    fields[name] = factory()
                elif default is _REQUIRED:
                    raise TypeError(f"{type(self).__name__}() missing keyword argument {name!r}")
                else:
                    fields[name] = default
            if values:
                raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {next(iter(values))!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = "".join(f"_{c.lower()}" if c.isupper() else c for c in cls.__name__).lstrip("_")
        if "kind" not in cls.__dict__:
            cls.kind = name
        KINDS[cls.kind] = cls
        if cls.__doc__ is None:  # else dataclass would work one out with inspect.signature (slow)
            cls.__doc__ = f"{cls.__name__}({', '.join(cls.__dict__.get('__annotations__', ()))})"

    # One __eq__, __hash__ and __repr__ for every kind (the dataclass ones compare and show the
    # same fields): dataclass would otherwise generate and compile three per class at import.
    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in _field_names(type(self)))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in _field_names(type(self)))
        return f"{type(self).__qualname__}({inner})"

    @property
    def details(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, hidden_when_none in _detail_fields(type(self)):
            value = getattr(self, name)
            if value is None and hidden_when_none:
                continue
            out[name] = value
        return out

    def __getattr__(self, name: str) -> Any:
        # Every event answers ``group`` and ``client_id``: None for kinds that have no such field.
        if name in ("group", "client_id"):
            return None
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def describe(self) -> str:
        inner = " ".join(f"{k}={v}" for k, v in self.details.items())
        where = f"broker {self.broker}: " if self.broker is not None else ""
        return f"{where}{self.kind} {inner}".rstrip()

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (the control endpoint's ``GET /events``)."""
        return {
            "seq": self.seq,
            "time_ms": self.time_ms,
            "wall": self.wall,
            "kind": self.kind,
            "broker": self.broker,
            "group": self.group,
            "client_id": self.client_id,
            "details": {
                k: v if isinstance(v, (int, float, str, bool, type(None), list, dict)) else str(v)
                for k, v in self.details.items()
            },
        }


def event_kinds() -> dict[str, type[Event]]:
    """Every kind an event is recorded as, by name in name order: ``KINDS`` without the bases
    that only other kinds derive from (``group_event``, ``member_event``, ``txn_event``), which
    no recorded event has.

    >>> "member_joined" in event_kinds(), "group_event" in event_kinds()
    (True, False)
    """
    return {
        name: cls
        for name, cls in sorted(KINDS.items())
        if not any(issubclass(sub, Event) and sub.kind in KINDS for sub in cls.__subclasses__())
    }


def detail_fields(cls: type[Event]) -> list[dataclasses.Field[Any]]:
    """A kind's own fields, those its ``details`` hold (every event also has ``broker``, ``seq``,
    ``time_ms`` and ``wall``); one with a default of None appears only when set, unless its
    metadata says ``shown``."""
    return [f for f in dataclasses.fields(cls) if f.name not in _BASE]
