"""Cross-check our codec against kio, an independent implementation of the same specs.

kio (PyPI ``kio``, pinned to 0.6.5 in the ``test`` extra) generates one frozen dataclass
per message, version and struct (``kio.schema.<api>.v<N>.request|response``) from Kafka's
JSON specs, and ships its own writer (``kio.serial.entity_writer``, Python) and reader
(``kio.serial.entity_reader``, Rust). Its 0.6.5 schemas have exactly the versions of the
Kafka 4.3.1 specs we ship, with the same field layouts; it has none of the versions that
only our 3.9.2 specs define (dropped in Kafka 4.x).

For every message and version both know (request and response bodies, the request and
response headers, and the ``data`` messages such as ConsumerProtocolAssignment):

* ``test_kio_to_ours``: a random kio entity is serialized by kio to bytes B; ours decodes
  B (strict) to the same field values (and the fields the version lacks to their
  defaults), and re-encodes the decoded message to exactly B.
* ``test_ours_to_kio``: the values of a random kio entity, plus random junk in every field
  of our message class that this version does *not* carry, are encoded by ours to bytes B;
  kio reads B (consuming all of it) to the same values, and re-serializes them to exactly B.

Random kio entities are built like ``st.from_type`` does (leaves from the strategies kio
registers for its types) but with arrays of at most ``MAX_ITEMS`` elements, to keep the
~1250 cases fast. ``KIO_CROSSCHECK_EXAMPLES=200 pytest ...`` makes a deeper run.

kio's field layout is checked against our spec for each version first (names, order,
types, array-ness, nullability, tags, flexibility); a version where they differ, or which
only one side knows, is reported as not comparable instead of failing. The list, and the
number of compared (message, version, direction) cases, is printed at the end of the run
by ``pytest_terminal_summary`` in ``tests/protocol/conftest.py``.

kio's representation is bridged by a converter to our ``to_dict()`` form:

* names: kio drops ``_ms`` from fields it types as timedelta/datetime (``throttle_time``
  for ThrottleTimeMs) and appends ``_`` to Python builtins (``type_``, ``id_``); fields
  are paired by position and the names checked;
* ``error_code`` -> the ``ErrorCode`` enum's int; ``timedelta_i32/i64`` -> milliseconds;
  ``datetime_i64`` -> epoch milliseconds, with kio's ``None`` = -1 for the non-nullable
  ProduceResponse LogAppendTime;
* uuid: kio's ``None`` = the all-zero UUID (which kio's reader returns as ``None``, also
  inside ``[]uuid`` arrays);
* ``records``: kio registers no hypothesis strategy for ``Records``; our codec treats
  records as opaque bytes, so they are random binary here;
* tuples -> lists, kio's int/str phantom types -> int/str.

kio quirk worked around (see ``Case.kio_reads_back``): its reader cannot read the large
timedelta_i64 values its own strategy and writer produce; such entities are only used
kio -> ours.
"""

from __future__ import annotations

import dataclasses
import io
import os
import types
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Union, get_args, get_origin

import kio  # noqa: E402
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kio.index import load_entity_schema  # noqa: E402
from kio.schema.index import schema_name_map  # noqa: E402
from kio.serial import entity_reader, entity_writer  # noqa: E402
from kio.serial._introspect import (  # noqa: E402  (what kio itself encodes by)
    EntityField,
    EntityTupleField,
    classify_field,
    get_field_tag,
)
from kio.static.constants import EntityType  # noqa: E402
from kio.static.primitive import Records  # noqa: E402

from fakebroker.protocol import messages as m  # noqa: E402
from fakebroker.protocol.schema import Message, snake_case  # noqa: E402
from fakebroker.protocol.specs import VersionRange  # noqa: E402

MAX_EXAMPLES = int(os.environ.get("KIO_CROSSCHECK_EXAMPLES", "10"))  # more for a deep run
CROSSCHECK_SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,  # only `request`, to record the case as compared
    ],
)

ZERO_UUID = uuid.UUID(int=0)
KIO_VERSION = kio.__version__

# kio's semantic kafka_type -> the spec type it stands for.
_KIO_SEMANTIC = {"error_code": "int16", "timedelta_i32": "int32", "timedelta_i64": "int64", "datetime_i64": "int64"}
_INTS = {"int8", "int16", "int32", "int64", "uint16", "uint32"}
_KIND = {"bool": "bool", "float64": "float", "string": "str", "bytes": "bytes", "records": "bytes", "uuid": "uuid"}
_KIO_KIND = {
    "error_code": "error_code",
    "timedelta_i32": "timedelta",
    "timedelta_i64": "timedelta",
    "datetime_i64": "datetime",
}

# Cases excluded although both schemas agree, because kio (not ours) departs from Kafka.
# key: (message name, version) -> reason. Empty: no such kio quirk was found.
KIO_QUIRKS: dict[tuple[str, int], str] = {}


# --------------------------------------------------------------------------- layouts


@dataclass
class FieldMap:
    """One field of one struct at one version: our attribute <-> kio's attribute."""

    attr: str
    kio: str
    kind: str  # int bool float str bytes uuid error_code timedelta datetime struct
    array: bool
    nullable: bool  # per our spec, at this version
    sub: Layout | None = None


@dataclass
class Layout:
    """The fields one version carries of one struct, in wire order, and our class for it."""

    cls: type[Message]
    fields: list[FieldMap]


def kio_nullable(f: dataclasses.Field) -> bool:
    """Whether kio lets the field itself (not its array elements) be None."""
    return get_origin(f.type) in (types.UnionType, Union) and type(None) in get_args(f.type)


def _carried(field_json: dict[str, Any], version: int) -> bool:
    return version in VersionRange.parse(field_json.get("versions") or field_json.get("taggedVersions"))


def _build_layout(
    kcls: type,
    cls: type[Message],
    fields: list[dict[str, Any]],
    common: dict[str, list],
    version: int,
    flexible: bool,
    path: str,
    diffs: list[str],
) -> Layout:
    """Pair our spec's fields with kio's dataclass fields; note every disagreement in ``diffs``."""
    carried = [f for f in fields if _carried(f, version)]
    kfields = dataclasses.fields(kcls)
    if getattr(kcls, "__flexible__", flexible) != flexible:
        diffs.append(f"{path}: flexible {flexible} here, {kcls.__flexible__} in kio")
    if len(carried) != len(kfields):
        diffs.append(
            f"{path}: fields {[snake_case(f['name']) for f in carried]} here, {[k.name for k in kfields]} in kio"
        )
        return Layout(cls, [])
    layout = Layout(cls, [])
    for f, k in zip(carried, kfields):
        attr = snake_case(f["name"])
        where = f"{path}.{attr}"
        kio_type = k.metadata.get("kafka_type")
        if not (k.name == attr or k.name == attr + "_" or (kio_type in _KIO_KIND and k.name + "_ms" == attr)):
            diffs.append(f"{where}: named {k.name!r} in kio")
            continue
        shape = classify_field(k)
        array = f["type"].startswith("[]")
        base = f["type"].removeprefix("[]")
        if shape.is_array != array:
            diffs.append(f"{where}: array={array} here, {shape.is_array} in kio")
            continue
        nullable = version in VersionRange.parse(f.get("nullableVersions"))
        tagged = flexible and version in VersionRange.parse(f.get("taggedVersions"))
        tag = get_field_tag(k)
        if tagged != (tag is not None) or (tagged and int(f["tag"]) != tag):
            diffs.append(f"{where}: tag {f.get('tag') if tagged else None} here, {tag} in kio")
        if "flexibleVersions" in f and not (kcls.__name__ == "RequestHeader" and k.name == "client_id"):
            diffs.append(f"{where}: has its own flexibleVersions, which kio only honours for RequestHeader.ClientId")
        if kio_nullable(k) != nullable:
            # kio writes None as a sentinel where Kafka has one: the zero UUID, and -1 for
            # ProduceResponse's LogAppendTime. Anything else is a real difference.
            if nullable or array or kio_type not in ("uuid", "datetime_i64"):
                diffs.append(f"{where}: nullable={nullable} here, {kio_nullable(k)} in kio")
        if isinstance(shape, (EntityField, EntityTupleField)):
            sub_cls = cls._by_attr[attr].struct
            sub = _build_layout(
                shape.type_, sub_cls, f.get("fields") or common[base], common, version, flexible, where, diffs
            )
            layout.fields.append(FieldMap(attr, k.name, "struct", array, nullable, sub))
            continue
        if _KIO_SEMANTIC.get(kio_type, kio_type) != base:
            diffs.append(f"{where}: type {base} here, {kio_type} in kio")
            continue
        kind = _KIO_KIND.get(kio_type) or ("int" if base in _INTS else _KIND[base])
        layout.fields.append(FieldMap(attr, k.name, kind, array, nullable))
    return layout


# --------------------------------------------------------------------------- converters


def kio_to_ours(layout: Layout, entity: Any) -> dict[str, Any]:
    """A kio entity as our ``to_dict()`` would show it, restricted to the carried fields."""
    return {fm.attr: _value(fm, getattr(entity, fm.kio)) for fm in layout.fields}


def _value(fm: FieldMap, value: Any) -> Any:
    if value is None:
        if fm.array:
            return None
        if fm.kind == "uuid":
            return ZERO_UUID
        if fm.kind == "datetime" and not fm.nullable:
            return -1
        return None
    if fm.array:
        return [_item(fm, v) for v in value]
    return _item(fm, value)


def _item(fm: FieldMap, v: Any) -> Any:
    kind = fm.kind
    if kind == "struct":
        return kio_to_ours(fm.sub, v)
    if kind == "int":
        return int(v)
    if kind == "error_code":
        return int(v.value)
    if kind == "timedelta":  # what kio's writer puts on the wire
        return round(v.total_seconds() * 1000)
    if kind == "datetime":
        return round(v.timestamp() * 1000)
    if kind == "bool":
        return bool(v)
    if kind == "float":
        return float(v)
    if kind == "str":
        return str(v)
    if kind == "bytes":
        return bytes(v)
    if kind == "uuid":
        return ZERO_UUID if v is None else v
    raise AssertionError(kind)


def project(layout: Layout, values: dict[str, Any]) -> dict[str, Any]:
    """Our ``to_dict()`` output restricted to the fields this version carries (unknown tags kept)."""
    out = {}
    for fm in layout.fields:
        v = values[fm.attr]
        if fm.kind == "struct" and v is not None:
            v = [project(fm.sub, x) for x in v] if fm.array else project(fm.sub, v)
        out[fm.attr] = v
    if values.get("_unknown_tagged_fields"):
        out["_unknown_tagged_fields"] = values["_unknown_tagged_fields"]
    return out


# Junk for the fields of our (all-versions) class that a version does not carry.
_JUNK = {
    "int8": st.integers(-(2**7), 2**7 - 1),
    "int16": st.integers(-(2**15), 2**15 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "uint16": st.integers(0, 2**16 - 1),
    "uint32": st.integers(0, 2**32 - 1),
    "float64": st.floats(allow_nan=False),
    "bool": st.booleans(),
    "string": st.text(max_size=8),
    "bytes": st.binary(max_size=8),
    "records": st.binary(max_size=8),
    "uuid": st.uuids(),
    "[]int32": st.lists(st.integers(-(2**31), 2**31 - 1), max_size=3),
    "[]string": st.lists(st.text(max_size=4), max_size=3),
}


def with_junk(layout: Layout, values: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    out = dict(values)
    for fm in layout.fields:
        v = values[fm.attr]
        if fm.kind == "struct" and v is not None:
            out[fm.attr] = [with_junk(fm.sub, x, data) for x in v] if fm.array else with_junk(fm.sub, v, data)
    carried = {fm.attr for fm in layout.fields}
    for info in layout.cls._fields:
        if info.attr not in carried and info.type in _JUNK:
            out[info.attr] = data.draw(_JUNK[info.type], label=f"junk {layout.cls.__name__}.{info.attr}")
    return out


# --------------------------------------------------------------------------- kio entities


def kio_strategy(kcls: type) -> st.SearchStrategy:
    """Random instances of a kio dataclass, like ``st.from_type`` but with short arrays.

    Leaves come from ``st.from_type`` and so from the strategies kio registers for its
    types (i32, i32Timedelta, TZAware, ErrorCode, ...). Fields with a default take it half
    of the time, so tagged fields are often left out of the wire (and must be).
    """
    strategy = _KIO_STRATEGIES.get(kcls)
    if strategy is None:
        kwargs = {}
        for f in dataclasses.fields(kcls):
            s = _kio_field_strategy(f)
            if f.default is not dataclasses.MISSING:
                s = st.just(f.default) | s
            kwargs[f.name] = s
        strategy = _KIO_STRATEGIES[kcls] = st.fixed_dictionaries(kwargs).map(lambda kw: kcls(**kw))
    return strategy


_KIO_STRATEGIES: dict[type, st.SearchStrategy] = {}
MAX_ITEMS = 3


def _kio_field_strategy(f: dataclasses.Field) -> st.SearchStrategy:
    shape = classify_field(f)
    if isinstance(shape, (EntityField, EntityTupleField)):
        s = st.deferred(lambda: kio_strategy(shape.type_))
    elif shape.type_ is Records:  # kio registers no strategy for it; we treat records as opaque bytes
        s = st.binary(max_size=64)
    else:
        s = st.from_type(shape.type_)
    if shape.is_array:
        s = st.lists(s, max_size=MAX_ITEMS).map(tuple)
    if kio_nullable(f):
        s = st.none() | s
    return s


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    name: str  # our message name, e.g. "FetchResponse"
    version: int
    kio_name: str  # kio's schema name, e.g. "fetch"
    entity_type: EntityType = field(compare=False)

    def __str__(self) -> str:
        return f"{self.name}-v{self.version}"

    @property
    def mt(self) -> m.MessageType:
        return m.message_type(self.name)

    @cached_property
    def kcls(self) -> type:
        return load_entity_schema(self.kio_name, self.version, self.entity_type)

    @cached_property
    def layout_and_diffs(self) -> tuple[Layout, list[str]]:
        spec = self.mt.family.spec(self.version)
        diffs: list[str] = []
        layout = _build_layout(
            self.kcls,
            self.mt.cls,
            spec.fields,
            spec.common_structs,
            self.version,
            self.version in spec.flexible_versions,
            self.name,
            diffs,
        )
        return layout, diffs

    @property
    def layout(self) -> Layout:
        return self.layout_and_diffs[0]

    @cached_property
    def strategy(self) -> st.SearchStrategy:
        return kio_strategy(self.kcls)

    @cached_property
    def read(self):
        return entity_reader(self.kcls)

    def write(self, entity: Any) -> bytes:
        buf = io.BytesIO()
        entity_writer(self.kcls)(buf, entity)
        return buf.getvalue()

    @cached_property
    def has_i64_timedelta(self) -> bool:
        def walk(kcls: type) -> bool:
            for f in dataclasses.fields(kcls):
                shape = classify_field(f)
                if isinstance(shape, (EntityField, EntityTupleField)):
                    if walk(shape.type_):
                        return True
                elif f.metadata.get("kafka_type") == "timedelta_i64":
                    return True
            return False

        return walk(self.kcls)

    def kio_reads_back(self, entity: Any) -> bool:
        """False for the entities kio itself cannot read back (a kio 0.6.5 quirk).

        kio's strategy and writer take timedelta_i64 values up to ~8.6e16 ms, but its
        (Rust) reader turns milliseconds into microseconds in an i64 and raises
        ``ValueError: timedelta milliseconds overflow`` from |ms| >= 2**63 // 1000.
        Such entities are still compared kio -> ours (we read any int64); ours -> kio
        they cannot be.
        """
        if not self.has_i64_timedelta:
            return True
        try:
            self.read(self.write(entity), 0)
        except ValueError as exc:
            if "timedelta milliseconds overflow" in str(exc):
                return False
            raise
        return True


def _our_name(kio_name: str) -> str:
    """Header and data schemas: ``k_raft_version_record`` -> ``KRaftVersionRecord``."""
    return "".join(part.capitalize() for part in kio_name.split("_"))


def _enumerate() -> tuple[list[Case], list[tuple[str, int, str]]]:
    comparable: list[Case] = []
    not_comparable: list[tuple[str, int, str]] = []  # (message, version, reason)
    kio_has: dict[str, set[int]] = defaultdict(set)
    for kio_name, by_version in schema_name_map.items():
        for version, by_type in by_version.items():
            for entity_type in by_type:
                if entity_type == EntityType.request:
                    name = m.request_type(load_entity_schema(kio_name, version, entity_type).__api_key__).name
                elif entity_type == EntityType.response:
                    name = m.response_type(load_entity_schema(kio_name, version, entity_type).__api_key__).name
                else:
                    name = _our_name(kio_name)
                    if name not in m.all_message_names():
                        not_comparable.append((f"kio:{kio_name}", version, "we have no such message"))
                        continue
                kio_has[name].add(version)
                case = Case(name, version, kio_name, entity_type)
                if version not in case.mt.versions:
                    not_comparable.append((name, version, f"we do not know this version (kio {KIO_VERSION} does)"))
                    continue
                diffs = case.layout_and_diffs[1]
                if diffs:
                    not_comparable.append((name, version, "schemas differ: " + "; ".join(diffs)))
                elif (name, version) in KIO_QUIRKS:
                    not_comparable.append((name, version, "excluded, kio quirk: " + KIO_QUIRKS[name, version]))
                else:
                    comparable.append(case)
    for name in m.all_message_names():
        mt = m.message_type(name)
        for version in mt.versions:
            if version in kio_has.get(name, ()):
                continue
            source = mt.family.spec(version).source
            if source.startswith("message-3.9/"):
                reason = f"kio {KIO_VERSION} lacks it (only our 3.9.2 specs define it; Kafka 4.x dropped it)"
            else:
                reason = f"kio {KIO_VERSION} lacks it (defined by our {source})"
            not_comparable.append((name, version, reason))
    comparable.sort(key=lambda c: (c.name, c.version))
    not_comparable.sort()
    return comparable, not_comparable


COMPARABLE, NOT_COMPARABLE = _enumerate()


def not_comparable_lines() -> list[str]:
    """The not-comparable cases grouped by reason, versions folded into ranges (``FetchRequest v0-3``)."""
    by_reason: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for name, version, reason in NOT_COMPARABLE:
        by_reason[reason][name].append(version)
    lines = []
    for reason, messages in sorted(by_reason.items()):
        items = []
        for name, versions in sorted(messages.items()):
            runs: list[list[int]] = []
            for v in sorted(versions):
                if runs and v == runs[-1][-1] + 1:
                    runs[-1].append(v)
                else:
                    runs.append([v])
            items.append(name + " " + ",".join(f"v{r[0]}" if len(r) == 1 else f"v{r[0]}-{r[-1]}" for r in runs))
        count = sum(len(v) for v in messages.values())
        lines.append(f"{count} message versions: {reason}:")
        line = "   "
        for item in items:  # wrap between items only
            if len(line) + len(item) > 100:
                lines.append(line)
                line = "   "
            line += f" {item},"
        lines.append(line.rstrip(","))
    return lines


# --------------------------------------------------------------------------- tests


def test_crosscheck_coverage(request: pytest.FixtureRequest) -> None:
    """Lists what could not be compared (printed in the terminal summary) and checks coverage."""
    request.node.user_properties.append(("kio_not_comparable", not_comparable_lines()))
    names = {c.name for c in COMPARABLE}
    for api_key in (0, 1, 3, 11, 14, 18):  # the APIs every client uses must be compared
        assert m.request_type(api_key).name in names and m.response_type(api_key).name in names
    assert {"RequestHeader", "ResponseHeader"} <= names
    assert len(COMPARABLE) > 500


@pytest.mark.parametrize("case", COMPARABLE, ids=str)
@CROSSCHECK_SETTINGS
@given(data=st.data())
def test_kio_to_ours(case: Case, data: st.DataObject, request: pytest.FixtureRequest) -> None:
    entity = data.draw(case.strategy, label="kio entity")
    wire = case.write(entity)
    decoded = case.mt.decode(wire, case.version, strict=True)
    values = kio_to_ours(case.layout, entity)
    assert project(case.layout, decoded.to_dict()) == values, wire.hex()
    assert decoded == case.mt.cls.from_dict(values)  # and the fields this version lacks at their defaults
    assert case.mt.encode(decoded, case.version) == wire
    request.node.user_properties.append(("kio_compared", (case.name, case.version, "kio->ours")))


@pytest.mark.parametrize("case", COMPARABLE, ids=str)
@CROSSCHECK_SETTINGS
@given(data=st.data())
def test_ours_to_kio(case: Case, data: st.DataObject, request: pytest.FixtureRequest) -> None:
    entity = data.draw(case.strategy, label="kio entity")
    assume(case.kio_reads_back(entity))
    values = kio_to_ours(case.layout, entity)
    message = case.mt.cls.from_dict(with_junk(case.layout, values, data))
    wire = case.mt.encode(message, case.version)
    decoded, size = case.read(wire, 0)
    assert size == len(wire), f"kio read {size} of {len(wire)} bytes: {wire.hex()}"
    assert kio_to_ours(case.layout, decoded) == values, wire.hex()
    assert case.write(decoded) == wire
    request.node.user_properties.append(("kio_compared", (case.name, case.version, "ours->kio")))
