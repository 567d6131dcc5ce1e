"""scripts/event_kinds_doc.py, the generated reference of the event kinds: every kind the
cluster can record has its section, with every field it carries, and kinds whose details are
not their fields say what they are instead."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

from fakebroker.core.events import Event, detail_fields

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "event_kinds_doc.py"


def _script():
    spec = importlib.util.spec_from_file_location("event_kinds_doc", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sections(page: str) -> dict[str, str]:
    parts = re.split(r"^### `([a-z_]+)`\n", page, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_every_kind_has_its_section_with_every_field():
    doc = _script()
    kinds = doc.all_kinds()
    page = doc.markdown()
    sections = _sections(page)
    assert list(sections) == [k for _, _, modules in doc.SECTIONS for k, c in kinds.items() if c.__module__ in modules]
    assert set(sections) == set(kinds) and len(kinds) > 60
    for kind, cls in kinds.items():
        body = sections[kind].split("\n## ")[0]
        for field in detail_fields(cls):
            assert f"| `{field.name}` |" in body, (kind, field.name)
        if not detail_fields(cls):
            assert "No fields of its own." in body, kind
        assert f"[`{kind}`](#{kind})" in page  # the section's index links to it


def test_kinds_whose_details_are_not_their_fields_say_so():
    doc = _script()
    computed = {k for k, c in doc.all_kinds().items() if c.details is not Event.details}
    assert computed == set(doc.DETAILS_NOTES) == {"fault_added"}
    assert doc.DETAILS_NOTES["fault_added"] in _sections(doc.markdown())["fault_added"]


def test_the_script_prints_the_page():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("# Event kinds\n") and "### `member_joined`" in done.stdout
    assert "| `instance` | `str` or `None` | always (may be null) |" in done.stdout
    assert "| `restarted` | `bool` | when set |" in done.stdout
