"""The wheels the packaging tests install into fresh virtual environments, downloaded once by
``scripts/setup.sh`` (``python3 tests/packaging/wheelhouse.py``) so the tests themselves read
no package index: a slow or unreachable index fails setup, never stalls a test.

One folder per interpreter: this one (the wheels' runtime dependencies, the ``charts`` extra,
what the user suite and the type check need, and setuptools for building), and the oldest
supported Python (the runtime dependencies and what the fast suite needs). Downloaded again only
when the list changes.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the setup runs on the project's own Python
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
HOME = Path(os.environ.get("FAKEBROKER_WHEELHOUSE", Path.home() / ".cache" / "fakebroker" / "wheelhouse"))
BUILD = ["setuptools>=77", "wheel"]  # the build backend, for `python -m build` without an index
USER_SUITE = ["confluent-kafka", "mypy", "sniffio"]
FAST_SUITE = ["pytest>=8", "pytest-trio", "pytest-timeout", "hypothesis>=6.100"]


def runtime() -> list[str]:
    """fakebroker's dependencies, its ``charts`` extra and pytest (pytest-fakebroker's)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["charts"], "pytest>=8"]


def oldest_python() -> str | None:
    """Python 3.10, the oldest ``requires-python`` allows: installed by pyenv, or on PATH (not
    pyenv's shim, which refuses unless 3.10 is selected)."""
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.10*/bin/python3.10")))
    if candidates:
        return candidates[-1]
    found = shutil.which("python3.10")
    return found if found and "/shims/" not in found else None


def plan() -> dict[str, tuple[str, list[str]]]:
    """folder name -> (interpreter, requirements)."""
    out = {"current": (sys.executable, [*runtime(), *USER_SUITE, *BUILD])}
    oldest = oldest_python()
    if oldest is not None:
        out["oldest"] = (oldest, [*runtime(), *FAST_SUITE])
    return out


def folder(name: str) -> Path:
    return HOME / name


def _stamp(python: str, requirements: list[str]) -> str:
    return hashlib.sha256("\n".join([python, *requirements]).encode()).hexdigest()


def ready(name: str) -> bool:
    python, requirements = plan()[name]
    stamp = folder(name) / ".stamp"
    return stamp.exists() and stamp.read_text() == _stamp(python, requirements)


def download() -> None:
    for name, (python, requirements) in plan().items():
        if ready(name):
            continue
        dest = folder(name)
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        subprocess.run(
            [python, "-m", "pip", "download", "-q", "--prefer-binary", "-d", str(dest), *requirements],
            check=True,
            timeout=1200,
        )
        (dest / ".stamp").write_text(_stamp(python, requirements))
        print(f"wheelhouse {name}: {len(list(dest.glob('*')))} files for {Path(python).name}")


if __name__ == "__main__":
    download()
