"""The parsed-spec cache: the same specs and schemas as parsing the JSON files, safe when
processes start at once, and never required (unwritable, damaged or turned off)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakebroker.protocol import spec_cache
from fakebroker.protocol.specs import SPEC_SETS

ROOT = Path(__file__).resolve().parents[2]


def env(cache: str) -> dict[str, str]:
    return {**os.environ, "FAKEBROKER_CACHE_DIR": cache, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}


def cache_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_the_cache_holds_what_parsing_gives(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKEBROKER_CACHE_DIR", str(tmp_path))
    parsed = spec_cache.parse_folders(SPEC_SETS)
    assert spec_cache.load(SPEC_SETS) == parsed  # parsed, then written
    [name] = cache_files(tmp_path)
    assert name.startswith("specs-") and name.endswith(".marshal")
    assert spec_cache.load(SPEC_SETS) == parsed  # read back


# Encodes, for every message and version, one message with every field set (non-default
# values, one element per array): a hash per (message, version), printed as JSON.
ENCODINGS = """
import hashlib, json, uuid
from fakebroker.protocol import messages
from fakebroker.protocol.schema import PRIMITIVES

VALUES = {"bool": True, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint16": 5, "uint32": 6,
          "float64": 1.5, "string": "s", "bytes": b"b", "records": b"r", "uuid": uuid.UUID(int=7)}

def sample(cls):
    values = {}
    for f in cls._fields:
        base = f.type[2:] if f.is_array else f.type
        one = sample(f.struct) if f.struct is not None else VALUES[base]
        values[f.attr] = [one] if f.is_array else one
    return cls(**values)

out = {}
for name in messages.all_message_names():
    mt = messages.message_type(name)
    for version in mt.versions:
        try:
            data = mt.encode(sample(mt.cls), version)
            out[f"{name} v{version}"] = hashlib.sha256(data).hexdigest()
        except Exception as exc:
            out[f"{name} v{version}"] = type(exc).__name__
print(json.dumps(out))
"""


def encodings(cache: str) -> dict[str, str]:
    run = subprocess.run([sys.executable, "-c", ENCODINGS], env=env(cache), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_every_api_and_version_encodes_the_same_from_the_cache_as_from_the_json_files(tmp_path):
    generic = encodings("")  # no cache: the JSON files parsed
    assert encodings(str(tmp_path)) == generic  # parsed, cache written
    assert cache_files(tmp_path)
    cached = encodings(str(tmp_path))  # read from the cache
    assert cached == generic
    assert len(cached) >= 750 and all(len(v) == 64 for v in cached.values())  # every one encoded


def test_processes_starting_at_once_share_one_cache_file(tmp_path):
    code = "from fakebroker.protocol import messages; print(len(messages.all_message_names()))"
    children = [
        subprocess.Popen([sys.executable, "-c", code], env=env(str(tmp_path)), stdout=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    counts = {child.communicate(timeout=120)[0].strip() for child in children}
    assert all(child.returncode == 0 for child in children)
    assert len(counts) == 1
    [name] = cache_files(tmp_path)  # one whole file, no temporary left behind
    with pytest.MonkeyPatch.context() as mp:  # and it reads back as the parsed specs
        mp.setenv("FAKEBROKER_CACHE_DIR", str(tmp_path))
        assert spec_cache.load(SPEC_SETS) == spec_cache.parse_folders(SPEC_SETS)
    assert cache_files(tmp_path) == [name]


def test_an_unwritable_cache_directory_falls_back_to_parsing(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("FAKEBROKER_CACHE_DIR", str(blocker / "cache"))  # mkdir fails, even as root
    assert spec_cache.load(SPEC_SETS) == spec_cache.parse_folders(SPEC_SETS)
    assert blocker.read_text() == "not a directory"


def test_a_damaged_cache_file_is_parsed_past_and_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKEBROKER_CACHE_DIR", str(tmp_path))
    parsed = spec_cache.load(SPEC_SETS)
    [name] = cache_files(tmp_path)
    (tmp_path / name).write_bytes(b"\x00garbage")
    assert spec_cache.load(SPEC_SETS) == parsed
    (tmp_path / name).write_bytes((tmp_path / name).read_bytes()[:1000])  # cut short
    assert spec_cache.load(SPEC_SETS) == parsed
    assert spec_cache.load(SPEC_SETS) == parsed and cache_files(tmp_path) == [name]


def test_an_empty_setting_turns_the_cache_off(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKEBROKER_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert spec_cache.load(SPEC_SETS) == spec_cache.parse_folders(SPEC_SETS)
    assert cache_files(tmp_path) == []


def test_writing_a_new_file_removes_week_old_ones_of_other_versions(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKEBROKER_CACHE_DIR", str(tmp_path))
    old, recent = tmp_path / "specs-old.marshal", tmp_path / "specs-recent.marshal"
    for path in (old, recent):
        path.write_bytes(b"")
    week = spec_cache.STALE_S + 60
    os.utime(old, (old.stat().st_atime - week, old.stat().st_mtime - week))
    spec_cache.load(SPEC_SETS)
    names = cache_files(tmp_path)
    assert "specs-old.marshal" not in names and "specs-recent.marshal" in names and len(names) == 2
