"""The parsed specs shipped in ``specs/parsed.json``: what parsing the spec files gives, line
for line; the spec files still read where it is missing or damaged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fakebroker.protocol import spec_files
from fakebroker.protocol.specs import SPEC_SETS

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = Path(str(spec_files.parsed_file()))


def test_the_shipped_file_is_what_parsing_the_spec_files_gives():
    expected = spec_files.render(spec_files.parse_folders(SPEC_SETS))
    assert SHIPPED.read_text(encoding="utf-8") == expected, "run: python scripts/parsed_specs.py"


def test_loading_gives_every_set_as_parsed_in_the_same_order():
    loaded, parsed = spec_files.load(SPEC_SETS), spec_files.parse_folders(SPEC_SETS)
    assert loaded == parsed
    assert [list(files) for files in loaded.values()] == [list(files) for files in parsed.values()]
    assert sum(len(files) for files in loaded.values()) >= 290
    assert spec_files.load(("message-3.9",)) == {"message-3.9": parsed["message-3.9"]}


@pytest.mark.parametrize(
    "damage",
    [None, b"", b"\x00garbage", b'{"format": 99, "specs": {}}', b'{"format": 1, "specs": {}}', b"[1, 2]"],
    ids=["missing", "empty", "garbage", "another-format", "no-sets", "not-an-object"],
)
def test_a_missing_or_damaged_file_falls_back_to_the_spec_files(tmp_path, monkeypatch, damage):
    if damage is not None:
        (tmp_path / "damaged.json").write_bytes(damage)
    monkeypatch.setattr(spec_files, "parsed_file", lambda: tmp_path / "damaged.json")
    assert spec_files.load(SPEC_SETS) == spec_files.parse_folders(SPEC_SETS)


def test_a_cut_short_file_falls_back_to_the_spec_files(tmp_path, monkeypatch):
    (tmp_path / "cut.json").write_bytes(SHIPPED.read_bytes()[:100_000])
    monkeypatch.setattr(spec_files, "parsed_file", lambda: tmp_path / "cut.json")
    assert spec_files.load(SPEC_SETS) == spec_files.parse_folders(SPEC_SETS)


def test_the_script_checks_the_file_and_refuses_an_unknown_flag():
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "parsed_specs.py"), "--check"], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "matches the spec files" in run.stdout
    wrong = subprocess.run([sys.executable, str(ROOT / "scripts" / "parsed_specs.py"), "--nope"], capture_output=True)
    assert wrong.returncode == 2 and b"--check" in wrong.stderr
