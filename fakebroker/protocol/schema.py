"""Turn a message spec into typed message classes and, per version, a construct codec.

For each message (``ProduceRequest``, ``ConsumerProtocolAssignment``, ...) there is one
Python class per struct, holding the union of the fields of every version, with
snake_case attribute names and the spec's defaults. For each version there is one
:class:`StructCodec` tree: a construct that reads and writes exactly the fields that
version carries, in wire order, followed by the tagged-field section in flexible versions.
"""

from __future__ import annotations

import builtins
import functools
import io
import re
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import construct as c

from ..lazy_dataclasses import dataclass
from . import primitives as p
from .compiled import compile_struct
from .specs import Spec, SpecFamily, VersionRange

PRIMITIVES = {
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "float64",
    "string",
    "bytes",
    "uuid",
    "records",
}
_FIXED = {
    "int8": p.Int8,
    "int16": p.Int16,
    "int32": p.Int32,
    "int64": p.Int64,
    "uint16": p.UInt16,
    "uint32": p.UInt32,
    "float64": p.Float64,
    "bool": p.KBool(),
    "uuid": p.KUuid(),
}

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(name: str) -> str:
    """``ThrottleTimeMs`` -> ``throttle_time_ms``; ``TopicID``-style runs stay one word."""
    return _CAMEL.sub("_", name).lower()


@dataclass
class FieldInfo:
    """A field of a message class: the union of what every version says about it."""

    name: str  # the spec's CamelCase name
    attr: str  # snake_case attribute
    type: str  # spec type, e.g. "int32", "[]string", "[]TopicData", "Assignment"
    struct: builtins.type[Message] | None  # the class of struct / struct-array elements
    default: Callable[[], Any]

    @functools.cached_property
    def is_array(self) -> bool:  # cached: read for every field of every message typed
        return self.type.startswith("[]")


class Message:
    """Base of every generated message and struct class.

    Attributes are the spec's field names in snake_case; every field of every version
    exists, set to the spec default where a version does not carry it.
    ``_unknown_tagged_fields`` maps tag -> raw bytes of tagged fields this spec does not
    know, so they survive a decode/encode round trip.
    """

    __slots__ = ("_unknown_tagged_fields",)
    _unknown_tagged_fields: dict[int, bytes]
    _fields: ClassVar[tuple[FieldInfo, ...]] = ()
    _by_attr: ClassVar[dict[str, FieldInfo]] = {}
    _family: ClassVar[str] = ""

    # No __init__ here: every generated class has its own, written out by _make_init.

    if TYPE_CHECKING:  # a class's fields come from its spec at run time: a checker sees them as Any

        def __init__(self, **fields: Any) -> None: ...
        def __getattr__(self, attr: str) -> Any: ...
        def __setattr__(self, attr: str, value: Any) -> None: ...

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dicts and lists (UUIDs stay ``uuid.UUID``, bytes stay bytes)."""
        out: dict[str, Any] = {}
        for f in self._fields:
            value = getattr(self, f.attr)
            if isinstance(value, Message):
                value = value.to_dict()
            elif isinstance(value, list) and f.struct is not None:
                value = [v.to_dict() if isinstance(v, Message) else v for v in value]
            out[f.attr] = value
        if self._unknown_tagged_fields:
            out["_unknown_tagged_fields"] = dict(self._unknown_tagged_fields)
        return out

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f.attr) == getattr(other, f.attr) for f in self._fields) and (
            self._unknown_tagged_fields == other._unknown_tagged_fields
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, so unhashable (object's __hash__ is a method)

    def __repr__(self) -> str:
        inner = ", ".join(f"{f.attr}={getattr(self, f.attr)!r}" for f in self._fields)
        if self._unknown_tagged_fields:
            inner += f", _unknown_tagged_fields={self._unknown_tagged_fields!r}"
        return f"{type(self).__name__}({inner})"


_MISSING = object()


def _make_init(infos: list[FieldInfo]) -> Callable[..., None]:
    """A class's own ``__init__``, written out field by field: the generic loop over
    ``_fields`` cost a handler ~1 us per field for every answer it built (same behaviour:
    given values coerced, spec defaults for the rest, unknown names refused)."""
    env: dict[str, Any] = {"_M": _MISSING, "_bad": _bad_fields}
    params, body = [], []
    for i, info in enumerate(infos):
        params.append(f"{info.attr}=_M")
        if info.struct is None and not info.is_array:  # an immutable primitive: its default once
            env[f"_c{i}"] = info.default()
            fallback = f"_c{i}"
        else:
            env[f"_d{i}"] = info.default
            fallback = f"_d{i}()"
        a = info.attr
        if info.struct is not None:  # plain dicts accepted where a struct belongs: messages as literals
            env[f"_f{i}"] = info.struct.from_dict
            if info.is_array:
                items = f"[_f{i}(v) if isinstance(v, dict) else v for v in {a}]"
                given = f"(None if {a} is None else {items} if {a} else [])"
            else:
                given = f"(_f{i}({a}) if isinstance({a}, dict) else {a})"
        else:
            given = a
        body.append(f"    self.{info.attr} = {fallback} if {info.attr} is _M else {given}")
    params.append("_unknown_tagged_fields=None")
    body.append("    self._unknown_tagged_fields = dict(_unknown_tagged_fields) if _unknown_tagged_fields else {}")
    body.append("    if extra:\n        _bad(self, extra)")
    source = f"def __init__(self, *, {', '.join(params)}, **extra):\n" + "\n".join(body) + "\n"
    exec(source, env)  # noqa: S102 - generated from the spec's field names only
    init: Callable[..., None] = env["__init__"]
    return init


def _bad_fields(msg: Message, extra: dict[str, Any]) -> None:
    valid = ", ".join(f.attr for f in msg._fields)
    raise TypeError(f"{type(msg).__name__} has no field(s) {', '.join(sorted(extra))}; fields are: {valid}")


def _default_factory(field: dict[str, Any], struct: type[Message] | None) -> Callable[[], Any]:
    t = field["type"]
    raw = field.get("default")
    if t.startswith("[]"):
        return (lambda: None) if raw == "null" else list
    if struct is not None:
        return (lambda: None) if raw == "null" else struct
    value: object
    if t in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        value = int(str(raw), 0) if raw not in (None, "") else 0
    elif t == "float64":
        value = float(raw) if raw not in (None, "") else 0.0
    elif t == "bool":
        value = str(raw).lower() == "true"
    elif t == "string":
        value = None if raw == "null" else (raw or "")
    elif t == "bytes":
        value = None if raw == "null" else b""
    elif t == "records":
        value = None
    elif t == "uuid":
        value = p.ZERO_UUID
    else:
        raise ValueError(f"unknown primitive type {t!r} in field {field['name']}")
    return lambda: value


def _struct_name(field: dict[str, Any], common: dict[str, list[dict[str, Any]]]) -> str | None:
    base: str = field["type"][2:] if field["type"].startswith("[]") else field["type"]
    if base in PRIMITIVES:
        return None
    if "fields" not in field and base not in common:
        raise ValueError(f"struct type {base!r} of field {field['name']} is defined nowhere")
    return base


class ClassBuilder:
    """Builds the message classes of one spec family (all its files, all versions)."""

    def __init__(self, family: SpecFamily) -> None:
        self.family = family
        self.struct_fields: dict[str, dict[str, dict[str, Any]]] = {}  # struct -> field name -> json
        self.classes: dict[str, type[Message]] = {}
        for spec in family.specs:  # newest first: its definitions win
            self._collect(family.name, spec.fields, spec.common_structs)

    def _collect(self, struct: str, fields: list[dict[str, Any]], common: dict[str, list[dict[str, Any]]]) -> None:
        merged = self.struct_fields.setdefault(struct, {})
        for field in fields:
            merged.setdefault(field["name"], field)
            name = _struct_name(field, common)
            if name is not None:
                self._collect(name, field.get("fields") or common[name], common)

    def message_class(self, struct: str) -> type[Message]:
        """The class of one struct; nested struct classes are made first (specs never recurse)."""
        if struct in self.classes:
            return self.classes[struct]
        infos = []
        for field in self.struct_fields[struct].values():
            base = field["type"][2:] if field["type"].startswith("[]") else field["type"]
            sub = self.message_class(base) if base not in PRIMITIVES else None
            infos.append(
                FieldInfo(field["name"], snake_case(field["name"]), field["type"], sub, _default_factory(field, sub))
            )
        attrs = [i.attr for i in infos]
        if len(set(attrs)) != len(attrs):
            raise ValueError(f"snake_case names collide in {self.family.name}.{struct}: {attrs}")
        qualname = struct if struct == self.family.name else f"{self.family.name}.{struct}"
        cls = type(
            struct,
            (Message,),
            {
                "__init__": _make_init(infos),
                "__slots__": tuple(attrs),
                "_fields": tuple(infos),
                "_by_attr": {i.attr: i for i in infos},
                "_family": self.family.name,
                "__module__": "fakebroker.protocol.messages",
                "__qualname__": qualname,
            },
        )
        self.classes[struct] = cls
        return cls


def _present(field: dict[str, Any], version: int) -> bool:
    versions = field.get("versions") or field.get("taggedVersions")
    return version in VersionRange.parse(versions)


class StructCodec(c.Construct):
    """One struct at one version: its fixed fields in order, then (flexible) the tagged section."""

    def __init__(
        self,
        cls: type[Message],
        fixed: list[tuple[str, c.Construct]],
        tagged: dict[int, tuple[str, c.Construct, Any]],
        flexible: bool,
    ) -> None:
        super().__init__()
        self.cls = cls
        self.fixed = fixed
        self.tagged = tagged
        self.flexible = flexible
        carried = {attr for attr, _ in fixed} | {attr for attr, _, _ in tagged.values()}
        # Fields this version lacks; tagged ones may also be absent on the wire, so they
        # start at their default too and are overwritten when present.
        self.defaults = [
            (f.attr, f.default)
            for f in cls._fields
            if f.attr not in carried or any(f.attr == a for a, _, _ in tagged.values())
        ]
        self.compiled = compile_struct(self)
        self._fast_parse: Callable[[io.BytesIO, Any, str], Message] = self._first_parse
        self._fast_build: Callable[[Message | dict[str, Any], io.BytesIO, Any, str], Message] = self._first_build

    def _first_parse(self, stream: io.BytesIO, context: Any, path: str) -> Message:
        parse: Callable[[io.BytesIO, Any, str], Message] = self.compiled.function("parse")
        self._fast_parse = parse
        return parse(stream, context, path)

    def _first_build(self, obj: Message | dict[str, Any], stream: io.BytesIO, context: Any, path: str) -> Message:
        build: Callable[[Message | dict[str, Any], io.BytesIO, Any, str], Message] = self.compiled.function("build")
        self._fast_build = build
        return build(obj, stream, context, path)

    def _parse(self, stream: io.BytesIO, context: Any, path: str) -> Message:
        return self._fast_parse(stream, context, path)

    def _build(self, obj: Message | dict[str, Any], stream: io.BytesIO, context: Any, path: str) -> Message:
        return self._fast_build(obj, stream, context, path)

    def _parse_generic(self, stream: io.BytesIO, context: Any, path: str) -> Message:
        obj = self.cls.__new__(self.cls)
        setter = object.__setattr__
        for attr, default in self.defaults:
            setter(obj, attr, default())
        attr = "(struct)"
        try:
            for attr, sub in self.fixed:
                setter(obj, attr, sub._parse(stream, context, path))
            unknown: dict[int, bytes] = {}
            if self.flexible:
                attr = "(tagged fields)"
                unknown = self._parse_tagged(obj, stream, context, path)
        except c.ConstructError as exc:
            _add_path(exc, f"{self.cls.__name__}.{exc.__dict__.pop('tagged_attr', attr)}")
            raise
        obj._unknown_tagged_fields = unknown
        return obj

    def _parse_tagged(self, obj: Message, stream: io.BytesIO, context: Any, path: str) -> dict[int, bytes]:
        """Read the tagged-field section into ``obj``; the tags this spec does not know."""
        unknown: dict[int, bytes] = {}
        attr = None  # the last known tagged field reached: an error's path names it
        try:
            for _ in range(p.read_uvarint(stream)):
                tag = p.read_uvarint(stream)
                data = p.read(stream, p.read_uvarint(stream))
                known = self.tagged.get(tag)
                if known is None:
                    unknown[tag] = data
                    continue
                attr, sub, _ = known
                inner = io.BytesIO(data)
                object.__setattr__(obj, attr, sub._parse(inner, context, path))
                if inner.tell() != len(data):
                    raise p.KafkaFormatError(
                        f"tagged field {attr} (tag {tag}) has {len(data) - inner.tell()} bytes left over"
                    )
        except c.ConstructError as exc:
            if attr is not None:
                exc.tagged_attr = attr
            raise
        return unknown

    def _build_generic(self, obj: Message | dict[str, Any], stream: io.BytesIO, context: Any, path: str) -> Message:
        if isinstance(obj, dict):
            obj = self.cls.from_dict(obj)
        attr = "(struct)"
        try:
            for attr, sub in self.fixed:
                sub._build(getattr(obj, attr), stream, context, path)
            if self.flexible:
                attr = "(tagged fields)"
                self._build_tagged(obj, stream, context, path)
        except (c.ConstructError, ValueError, TypeError, AttributeError) as exc:
            _add_path(exc, f"{self.cls.__name__}.{attr}")
            raise
        return obj

    def _build_tagged(self, obj: Message, stream: io.BytesIO, context: Any, path: str) -> None:
        if not self.tagged and not obj._unknown_tagged_fields:
            stream.write(b"\x00")  # the common case: an empty tagged-field section
            return
        entries: list[tuple[int, bytes]] = []
        for tag, (attr, sub, default) in self.tagged.items():
            value = getattr(obj, attr)
            if value == default:
                continue  # Kafka omits tagged fields at their default
            buf = io.BytesIO()
            try:
                sub._build(value, buf, context, path)
            except (c.ConstructError, ValueError, TypeError, AttributeError) as exc:
                _add_path(exc, f"{self.cls.__name__}.{attr}")
                raise
            entries.append((tag, buf.getvalue()))
        entries.extend(obj._unknown_tagged_fields.items())
        entries.sort(key=lambda e: e[0])
        p.write_uvarint(stream, len(entries))
        for tag, data in entries:
            p.write_uvarint(stream, tag)
            p.write_uvarint(stream, len(data))
            stream.write(data)


def _add_path(exc: BaseException, where: str) -> None:
    """Record the field path on the way out (innermost first), for the DecodeError text."""
    trail = getattr(exc, "kafka_path", None)
    if trail is None:
        trail = []
        try:
            exc.kafka_path = trail  # type: ignore[attr-defined]  # our own note on any exception (read with getattr)
        except AttributeError:
            return
    trail.append(where)


class CodecBuilder:
    """Builds the construct tree of one message at one version."""

    def __init__(self, spec: Spec, classes: ClassBuilder, version: int) -> None:
        self.spec = spec
        self.classes = classes
        self.version = version
        self.flexible = version in spec.flexible_versions

    def struct(self, name: str, fields: list[dict[str, Any]]) -> StructCodec:
        cls = self.classes.message_class(name)
        fixed: list[tuple[str, c.Construct]] = []
        tagged: dict[int, tuple[str, c.Construct, Any]] = {}
        for field in fields:
            if not _present(field, self.version):
                continue
            attr = snake_case(field["name"])
            sub = self.field(field)
            if self.flexible and self.version in VersionRange.parse(field.get("taggedVersions")):
                tagged[int(field["tag"])] = (attr, sub, cls._by_attr[attr].default())
            else:
                fixed.append((attr, sub))
        return StructCodec(cls, fixed, tagged, self.flexible)

    def field(self, field: dict[str, Any]) -> c.Construct:
        t = field["type"]
        nullable = self.version in VersionRange.parse(field.get("nullableVersions"))
        compact = self.flexible
        if "flexibleVersions" in field:  # only RequestHeader.ClientId overrides it ("none")
            compact = self.version in VersionRange.parse(field["flexibleVersions"])
        if t.startswith("[]"):
            return p.KArray(self.element(field, t[2:]), compact, nullable)
        if t in _FIXED:
            return _FIXED[t]
        if t == "string":
            return p.KString(compact, nullable)
        if t in ("bytes", "records"):
            return p.KBytes(compact, nullable)
        codec = self.struct(t, field.get("fields") or self.spec.common_structs[t])
        return p.NullableStruct(codec) if nullable else codec

    def element(self, field: dict[str, Any], t: str) -> c.Construct:
        if t in _FIXED:
            return _FIXED[t]
        if t == "string":
            return p.KString(self.flexible, nullable=False)
        if t in ("bytes", "records"):
            return p.KBytes(self.flexible, nullable=False)
        return self.struct(t, field.get("fields") or self.spec.common_structs[t])


def build_codec(spec: Spec, classes: ClassBuilder, version: int) -> StructCodec:
    return CodecBuilder(spec, classes, version).struct(classes.family.name, spec.fields)


__all__ = ["Message", "FieldInfo", "StructCodec", "ClassBuilder", "build_codec", "snake_case", "uuid"]
