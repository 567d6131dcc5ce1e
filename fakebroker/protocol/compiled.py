"""Straight-line read and write functions for one :class:`~.schema.StructCodec`.

The generic codec walks its field list for every message; these functions are generated
once per struct and version with the fields written out: runs of fixed-width numbers read
or written by one ``struct`` call, the lengths of strings, bytes and arrays inline, and
nested structs through their own generated functions. They are only a fast path: on any
exception (the code raises ``_Short`` at anything unusual: a truncated field, a null where
none may be, a long array) the stream goes back to where the struct began and the generic
codec does the work again, so what is read, written and raised (with its field path) is the
generic codec's, byte for byte.

Each direction is compiled at its first use: a broker reads requests and writes answers, so
half of what could be compiled never runs, and compiling is what a process's first requests
wait for (about 0.5 ms a struct).
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from typing import Any

from .primitives import ONE_BYTE, EncodedOnce, KArray, KBytes, KNumber, KString, read_uvarint, remaining, uvarint_bytes


class _Short(Exception):
    """Anything the generic codec should read or write instead (it says which field and why)."""


_i16 = struct.Struct(">h").unpack
_i32 = struct.Struct(">i").unpack
_p16 = struct.Struct(">h").pack
_p32 = struct.Struct(">i").pack


# -- writing ------------------------------------------------------------------------------------
def _write16(write: Any, n: int | None) -> None:
    if n is not None and n > 0x7FFF:
        raise _Short
    write(_p16(-1 if n is None else n))


def _write32(write: Any, n: int | None) -> None:
    write(_p32(-1 if n is None else n))


def _read_length(width: str) -> list[str]:
    """Lines that leave a string's, bytes' or array's length (None for null) in ``n``, written
    out rather than called: a request reads five or more."""
    if width == "compact":
        return [
            "        n = stream.read(1)",
            "        if not n:",
            "            raise _Short",
            "        n = n[0]",
            "        if n >= 0x80:  # more than one byte (127 or more)",
            "            stream.seek(-1, 1)",
            "            n = _uvarint(stream)",
            "        n = None if n == 0 else n - 1",
        ]
    size, unpack = (4, "_i32") if width == "wide" else (2, "_i16")
    return [
        f"        n = stream.read({size})",
        f"        if len(n) != {size}:",
        "            raise _Short",
        f"        n, = {unpack}(n)",
        "        if n < 0:",
        "            if n != -1:",
        "                raise _Short",
        "            n = None",
    ]


def _write_length(width: str, value: str) -> list[str]:
    """Lines that write the length ``value`` (an expression; None for null)."""
    if width == "compact":
        return [
            f"        n = {value}",
            "        if n is None:",
            "            write(b'\\x00')",
            "        elif n < 0x7F:",
            "            write(_one[n + 1])",
            "        else:",
            "            write(_uvarint_bytes(n + 1))",
        ]
    return [f"        {_LENGTH_WRITERS[width]}(write, {value})"]


_LENGTH_WRITERS = {"wide": "_write32", "short": "_write16"}


def _width(sub: Any) -> str:
    return "compact" if sub.compact else "wide" if sub.wide else "short"


def _runs(fixed: list[tuple[str, Any]]) -> list[tuple[list[str], Any]]:
    """Consecutive fields as runs: (attrs, struct.Struct) for fixed-width numbers, ([attr], codec) else."""
    out: list[tuple[list[str], Any]] = []
    for attr, sub in fixed:
        if isinstance(sub, KNumber):
            if out and isinstance(out[-1][1], str):
                out[-1][0].append(attr)
                out[-1] = (out[-1][0], out[-1][1] + sub.packer.format[1:])
            else:
                out.append(([attr], ">" + sub.packer.format[1:]))
        else:
            out.append(([attr], sub))
    return [(attrs, struct.Struct(kind) if isinstance(kind, str) else kind) for attrs, kind in out]


class CompiledStruct:
    """The source of a struct's parse and build functions, each compiled at its first use
    (nested structs' functions are bound then, compiled first if need be)."""

    def __init__(self, env: dict[str, Any], parse: list[str], build: list[str], nested: list[tuple[str, Any, str]]):
        self._env = env
        self._source = {"parse": parse, "build": build}
        self._nested = nested  # (name in env, nested StructCodec, "parse" or "build")
        self._made: dict[str, Callable[..., Any]] = {}

    def function(self, direction: str) -> Callable[..., Any]:
        made = self._made.get(direction)
        if made is None:
            env = dict(self._env)
            for name, sub, way in self._nested:
                if way == direction:
                    env[name] = sub.compiled.function(direction)
            exec("\n".join(self._source[direction]) + "\n", env)  # noqa: S102 - field names from the specs
            made = self._made[direction] = env[direction]
        return made


def compile_struct(codec: Any) -> CompiledStruct:
    """The parse and build functions of ``codec`` (a ``schema.StructCodec``), with the generic
    ones behind them, written out now and compiled when first used."""
    nested: list[tuple[str, Any, str]] = []
    env: dict[str, Any] = {
        "_cls": codec.cls,
        "_new": object.__new__,
        "_Short": _Short,
        "_codec": codec,
        "_io": io,
        "_i16": _i16,
        "_i32": _i32,
        "_uvarint": read_uvarint,
        "_uvarint_bytes": uvarint_bytes,
        "_one": ONE_BYTE,
        "_Once": EncodedOnce,
        "_remaining": remaining,
        **{name: globals()[name] for name in _LENGTH_WRITERS.values()},
    }
    parse = ["def parse(stream, context, path):", "    start = stream.tell()", "    try:", "        obj = _new(_cls)"]
    build = [
        "def build(obj, stream, context, path):",
        "    if obj.__class__ is not _cls:",
        "        return _codec._build_generic(obj, stream, context, path)",
        "    start = stream.tell()",
        "    write = stream.write",
        "    try:",
    ]
    for i, (attr, default) in enumerate(codec.defaults):
        env[f"_d{i}"] = default
        parse.append(f"        obj.{attr} = _d{i}()")
    for i, (attrs, kind) in enumerate(_runs(codec.fixed)):
        if isinstance(kind, struct.Struct):
            env[f"_s{i}"] = kind
            targets = ", ".join(f"obj.{a}" for a in attrs)
            parse += [
                f"        data = stream.read({kind.size})",
                f"        if len(data) != {kind.size}:",
                "            raise _Short",
                f"        {targets}, = _s{i}.unpack(data)",
            ]
            build.append(f"        write(_s{i}.pack({targets}))")
        else:
            field_parse, field_build = _field_code(env, nested, i, attrs[0], kind)
            parse += field_parse
            build += field_build
    if codec.flexible:
        # an empty tagged section (one zero byte) is nearly every struct's: read inline
        parse += [
            "        tags = stream.read(1)",
            "        if tags == b'\\x00':",
            "            obj._unknown_tagged_fields = {}",
            "        else:",
            "            stream.seek(-len(tags), 1)",
            "            obj._unknown_tagged_fields = _codec._parse_tagged(obj, stream, context, path)",
        ]
        if codec.tagged:
            build.append("        _codec._build_tagged(obj, stream, context, path)")
        else:
            build += [
                "        if obj._unknown_tagged_fields:",
                "            _codec._build_tagged(obj, stream, context, path)",
                "        else:",
                "            write(b'\\x00')",
            ]
    else:
        parse.append("        obj._unknown_tagged_fields = {}")
    parse += [
        "        return obj",
        "    except Exception:",
        "        stream.seek(start)",
        "        return _codec._parse_generic(stream, context, path)",
    ]
    build += [
        "        return obj",
        "    except Exception:",
        "        stream.seek(start)",
        "        stream.truncate()",
        "        return _codec._build_generic(obj, stream, context, path)",
    ]
    return CompiledStruct(env, parse, build, nested)


def _field_code(
    env: dict[str, Any], nested: list[tuple[str, Any, str]], i: int, attr: str, sub: Any
) -> tuple[list[str], list[str]]:
    """The lines that read and write one field that is not a fixed-width number."""
    value = f"obj.{attr}"
    if isinstance(sub, (KString, KBytes)) or (isinstance(sub, KArray) and _is_struct(sub.element)):
        width = _width(sub)
        parse = _read_length(width)
        build = [f"        v = {value}"]
        if not sub.nullable:
            build.append("        if v is None:\n            raise _Short")
        if isinstance(sub, KArray):
            nested += [(f"_e{i}", sub.element, "parse"), (f"_w{i}", sub.element, "build")]
            parse += [
                "        if n is not None and n > 64 and n > _remaining(stream):",
                "            raise _Short  # an array longer than the bytes left: the generic codec refuses it",
                f"        {value} = None if n is None else [_e{i}(stream, context, path) for _ in range(n)]",
            ]
            build += _write_length(width, "None if v is None else len(v)")
            build += [
                "        if v.__class__ is _Once:",
                f"            write(v.encoded(_w{i}, context, path))",
                "        elif v:",
                f"            for item in v:\n                _w{i}(item, stream, context, path)",
            ]
        else:
            decode = ".decode('utf-8')" if isinstance(sub, KString) else ""
            parse += [
                "        if n is None:",
                f"            {value} = None",
                "        else:",
                "            v = stream.read(n)",
                "            if len(v) != n:",
                "                raise _Short",
                f"            {value} = v{decode}",
            ]
            if isinstance(sub, KString):
                build.append("        v = None if v is None else v.encode('utf-8')")
            build += _write_length(width, "None if v is None else len(v)")
            build.append("        if v:\n            write(v)")
        if not sub.nullable:
            parse.append(f"        if {value} is None:\n            raise _Short")
        return parse, build
    if _is_struct(sub):
        nested += [(f"_p{i}", sub, "parse"), (f"_b{i}", sub, "build")]
    else:
        env[f"_p{i}"], env[f"_b{i}"] = sub._parse, sub._build
    return [f"        {value} = _p{i}(stream, context, path)"], [f"        _b{i}({value}, stream, context, path)"]


def _is_struct(sub: Any) -> bool:
    """A ``schema.StructCodec`` (which builds this module's functions, so is not imported here)."""
    return isinstance(getattr(sub, "compiled", None), CompiledStruct)
