"""hypothesis strategies that build random, valid messages of any spec at any version.

Only the fields the version carries get random values; the rest keep their defaults, so
``decode(encode(m)) == m`` is exactly the round-trip property.
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from fakebroker.protocol.messages import MessageType
from fakebroker.protocol.schema import snake_case
from fakebroker.protocol.specs import VersionRange

_INTS = {
    "int8": st.integers(-(2**7), 2**7 - 1),
    "int16": st.integers(-(2**15), 2**15 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "uint16": st.integers(0, 2**16 - 1),
    "uint32": st.integers(0, 2**32 - 1),
}
_TEXT = st.text(max_size=12)
_BYTES = st.binary(max_size=24)
_UUID = st.builds(lambda n: uuid.UUID(int=n), st.integers(0, 2**128 - 1))


def _scalar(t: str) -> st.SearchStrategy[Any]:
    if t in _INTS:
        return _INTS[t]
    return {
        "bool": st.booleans(),
        "float64": st.floats(allow_nan=False),
        "string": _TEXT,
        "bytes": _BYTES,
        "records": _BYTES,
        "uuid": _UUID,
    }[t]


def message_strategy(mt: MessageType, version: int) -> st.SearchStrategy[Any]:
    spec = mt.family.spec(version)
    flexible = version in spec.flexible_versions
    classes = mt.structs

    def struct(name: str, fields: list[dict[str, Any]], depth: int) -> st.SearchStrategy[Any]:
        cls = classes[name]
        parts: dict[str, st.SearchStrategy[Any]] = {}
        known_tags = set()
        for f in fields:
            if version not in VersionRange.parse(f.get("versions") or f.get("taggedVersions")):
                continue
            if "tag" in f:
                known_tags.add(int(f["tag"]))
            parts[snake_case(f["name"])] = value(f, depth)
        if flexible:
            unknown_tag = st.integers(0, 40).filter(lambda t: t not in known_tags)
            parts["_unknown_tagged_fields"] = st.dictionaries(unknown_tag, _BYTES, max_size=2)
        return st.fixed_dictionaries(parts).map(lambda d: cls(**d))

    def value(f: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
        t = f["type"]
        nullable = version in VersionRange.parse(f.get("nullableVersions"))
        if t.startswith("[]"):
            inner = t[2:]
            element = (
                _scalar(inner)
                if inner in _SCALARS
                else struct(inner, f.get("fields") or spec.common_structs[inner], depth + 1)
            )
            base = st.lists(element, max_size=3 if depth < 2 else 1)
        elif t in _SCALARS:
            base = _scalar(t)
        else:
            base = struct(t, f.get("fields") or spec.common_structs[t], depth + 1)
        return st.one_of(st.none(), base) if nullable else base

    return struct(mt.name, spec.fields, 0)


_SCALARS = set(_INTS) | {"bool", "float64", "string", "bytes", "records", "uuid"}
