"""Every ```python block of the README runs as written (from the repository root)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def python_blocks(path: Path) -> list[str]:
    """The ```python blocks of a Markdown file, in order."""
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


BLOCKS = python_blocks(ROOT / "README.md")


def test_readme_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example(index, monkeypatch):
    monkeypatch.chdir(ROOT)
    exec(compile(BLOCKS[index], f"README.md example {index + 1}", "exec"), {"__name__": f"readme_{index}"})


DOC_BLOCKS = [
    (path.name, i, block)
    for path in sorted((ROOT / "docs").glob("*.md"))
    for i, block in enumerate(python_blocks(path))
]


@pytest.mark.parametrize("name, index, block", DOC_BLOCKS, ids=[f"{n}-{i + 1}" for n, i, _ in DOC_BLOCKS])
def test_docs_example(name, index, block, monkeypatch):
    """Every ```python block of the pages in docs/ runs as written too."""
    monkeypatch.chdir(ROOT)
    exec(compile(block, f"docs/{name} example {index + 1}", "exec"), {"__name__": f"docs_{index}"})


def test_pytest_plugin_example_is_the_tested_file():
    example = (ROOT / "examples" / "pytest_plugin" / "test_plugin_example.py").read_text()
    assert example in BLOCKS


def test_the_plugin_readme_example_passes(pytester):
    """pytest_plugin/README.md's example, run as a test file by an inner pytest session."""
    (example,) = python_blocks(ROOT / "pytest_plugin" / "README.md")
    pytester.makepyfile(test_plugin_readme=example)
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
