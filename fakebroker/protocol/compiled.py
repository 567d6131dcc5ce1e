"""Straight-line read and write functions for one :class:`~.schema.StructCodec`.

The generic codec walks its field list for every message; these functions are generated
once per struct and version with the fields written out, and runs of fixed-width numbers
read or written by one ``struct`` call. They are only a fast path: on any exception the
stream goes back to where the struct began and the generic codec does the work again, so
what is read, written and raised (with its field path) is the generic codec's, byte for byte.
"""

from __future__ import annotations

import io
import struct
from typing import Any

from .primitives import KNumber


class _Short(Exception):
    """Fewer bytes left than a run of numbers needs (the generic codec says which field)."""


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


def compile_struct(codec: Any) -> tuple[Any, Any]:
    """(parse, build) for ``codec`` (a ``schema.StructCodec``), with the generic ones behind them."""
    env: dict[str, Any] = {
        "_cls": codec.cls,
        "_new": object.__new__,
        "_Short": _Short,
        "_codec": codec,
        "_io": io,
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
            env[f"_p{i}"], env[f"_b{i}"] = kind._parse, kind._build
            parse.append(f"        obj.{attrs[0]} = _p{i}(stream, context, path)")
            build.append(f"        _b{i}(obj.{attrs[0]}, stream, context, path)")
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
    exec("\n".join(parse) + "\n\n" + "\n".join(build) + "\n", env)  # noqa: S102 - field names from the specs
    return env["parse"], env["build"]
