"""Every ```python block of the README and of the docs runs as written (from the repository root),
and the docs site builds with ``mkdocs build --strict``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def python_blocks(path: Path) -> list[str]:
    """The ```python blocks of a Markdown file, in order."""
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


BLOCKS = python_blocks(ROOT / "README.md")


def test_readme_has_examples():
    assert len(BLOCKS) >= 1


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example(index, monkeypatch):
    monkeypatch.chdir(ROOT)
    exec(compile(BLOCKS[index], f"README.md example {index + 1}", "exec"), {"__name__": f"readme_{index}"})


DOC_BLOCKS = [
    (path.relative_to(ROOT / "docs").as_posix(), i, block)
    for path in sorted((ROOT / "docs").rglob("*.md"))
    for i, block in enumerate(python_blocks(path))
]


@pytest.mark.parametrize("name, index, block", DOC_BLOCKS, ids=[f"{n}-{i + 1}" for n, i, _ in DOC_BLOCKS])
def test_docs_example(name, index, block, monkeypatch):
    """Every ```python block of the pages in docs/ runs as written too."""
    monkeypatch.chdir(ROOT)
    exec(compile(block, f"docs/{name} example {index + 1}", "exec"), {"__name__": f"docs_{index}"})


def test_pytest_plugin_example_is_the_tested_file():
    example = (ROOT / "examples" / "pytest_plugin" / "test_plugin_example.py").read_text()
    assert example in python_blocks(ROOT / "docs" / "getting-started.md")


def test_the_plugin_readme_example_passes(pytester):
    """pytest_plugin/README.md's example, run as a test file by an inner pytest session."""
    (example,) = python_blocks(ROOT / "pytest_plugin" / "README.md")
    pytester.makepyfile(test_plugin_readme=example)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")  # pytest-asyncio's warning
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_the_readme_stays_a_front_page():
    """The README is short (issue 36): what users read first, with the rest in docs/."""
    assert len((ROOT / "README.md").read_text().splitlines()) <= 300


def test_the_generated_reference_pages_match_the_code():
    """docs/reference's generated pages (HTTP API, configs, fault rules, event kinds) are what
    scripts/reference_docs.py writes from the code now."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "reference_docs.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_docs_site_builds_strict(tmp_path):
    """``mkdocs build --strict``: every page in the nav, every link and anchor resolves, every
    API reference is found in the docstrings."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
