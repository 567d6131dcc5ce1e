"""The shipped JSON specs, and the parsed form of them shipped beside them.

Kafka's spec files carry ``//`` comments, so each has to be stripped before ``json`` can read
it: about 30 ms for the ~300 files, once the largest part of importing fakebroker.
``specs/parsed.json`` holds every shipped set already parsed (comments gone, one line per
file) and reads in about 5 ms, on any machine and Python, with nothing written anywhere. The
specs' ``about`` texts are left out of the parsed form: nothing reads them, and they were two
fifths of the file (a new process read it in ~5.9 ms with them).

It is generated from the spec files: after changing one, run
``python scripts/parsed_specs.py`` to rewrite it (``--check`` only compares); a test fails
while the two differ. Where it is missing or unreadable, the spec files are parsed.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

SPEC_SETS = ("message-4.4", "message", "message-3.9")  # newest first: it wins where several define a version
FORMAT = 2  # bump when what is stored changes (2: without the ``about`` texts)
PARSED = "parsed.json"
_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*')

Raw = dict[str, dict[str, dict[str, Any]]]  # folder -> file name -> parsed JSON


def strip_comments(text: str) -> str:
    """Drop ``//`` comments outside string literals (several ``about`` texts hold URLs)."""
    return _COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)


def spec_root() -> Any:
    return resources.files("fakebroker.protocol") / "specs"


def parse_folders(folders: tuple[str, ...]) -> Raw:
    """Every ``.json`` file of each folder, comments stripped and parsed (the slow path)."""
    root = spec_root()
    out: Raw = {}
    for folder in folders:
        files = out[folder] = {}
        for entry in sorted((root / folder).iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".json"):
                files[entry.name] = _without_about(json.loads(strip_comments(entry.read_text(encoding="utf-8"))))
    return out


def _without_about(node: Any) -> Any:
    """``node`` without its ``about`` texts, at any depth (the specs' prose for humans)."""
    if isinstance(node, dict):
        return {key: _without_about(value) for key, value in node.items() if key != "about"}
    if isinstance(node, list):
        return [_without_about(item) for item in node]
    return node


def parsed_file() -> Any:
    return spec_root() / PARSED


def load(folders: tuple[str, ...]) -> Raw:
    """The parsed specs of ``folders``: from the shipped parsed file when it holds them all,
    else parsed from the spec files."""
    try:
        data = json.loads(parsed_file().read_bytes())
        if data["format"] == FORMAT and all(folder in data["specs"] for folder in folders):
            return {folder: data["specs"][folder] for folder in folders}
    except (OSError, ValueError, KeyError, TypeError):
        pass  # missing or damaged: the spec files are the source
    return parse_folders(folders)


def render(raw: Raw) -> str:
    """The parsed file's text: compact, one line per spec file, so a change diffs as lines."""
    lines = [f'{{"format": {FORMAT}, "specs": {{']
    for i, (folder, files) in enumerate(raw.items()):
        lines.append(("," if i else "") + json.dumps(folder) + ": {")
        for j, (name, spec) in enumerate(files.items()):
            body = json.dumps(spec, separators=(",", ":"), ensure_ascii=False)
            lines.append(("," if j else "") + f"{json.dumps(name)}: {body}")
        lines.append("}")
    lines.append("}}")
    return "\n".join(lines) + "\n"
