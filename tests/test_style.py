"""The style and the types hold: ruff's lint rules and formatter, and mypy, as configured in
pyproject.toml (mypy: strict on ``core/`` and ``protocol/``, the rest of the package and the pytest
plugin checked)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]], ids=["lint", "format"])
def test_ruff_is_clean(command):
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean():
    # What it checks is pyproject's [tool.mypy] (`packages`), so a bare `mypy` run by hand is the
    # same run. Its cache (.mypy_cache, git-ignored) makes a run after a small change take seconds.
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=280)
    assert result.returncode == 0, result.stdout + result.stderr
