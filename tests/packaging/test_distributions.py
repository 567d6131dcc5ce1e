"""Both distributions as a user gets them: wheels and sdists built from this tree, checked with
``twine check``, installed into fresh virtual environments (no editable install, no dev extra),
and a user's small test suite run with them; the oldest supported Python runs the fast suite.

Slow: about two and a half minutes. Offline: every wheel comes from the wheelhouse that
``scripts/setup.sh`` downloads (tests/packaging/wheelhouse.py), never from a package index.
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from subprocess import PIPE

import pytest

from . import wheelhouse

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

USER_SUITE = {
    # the README's quick start, as a user copies it
    "test_quickstart.py": (ROOT / "examples" / "pytest_plugin" / "test_plugin_example.py").read_text(),
    # an asyncio project's anyio test: run once, on asyncio, although fakebroker brings trio
    "test_anyio.py": """
import sniffio
import pytest


@pytest.mark.anyio
async def test_on_asyncio_only():
    assert sniffio.current_async_library() == "asyncio"
""",
    # a failing test: its report carries the timeline, its picture goes under basetemp
    "test_fails.py": """
def test_fails(fakebroker):
    fakebroker.create_topic("orders", 3)
    assert fakebroker.topics() == {}
""",
}


def wheels(name: str) -> Path:
    """A wheelhouse folder, ready for this tree's requirements (else the test says how to get it)."""
    if not wheelhouse.ready(name):
        pytest.fail(
            f"the packaging tests' wheels are not downloaded: run {wheelhouse.__file__} (scripts/setup.sh does)"
        )
    return wheelhouse.folder(name)


def run(
    *args: str | Path, cwd: Path | None = None, timeout: float = 600, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    # An inner pytest run keeps its hang dumps apart (conftest.py): sharing the outer run's
    # folder, it took the outer run's in-progress dump of a test both were running for a hang.
    unwanted = ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "FAKEBROKER_HANG_DUMPS")
    env = {k: v for k, v in os.environ.items() if k not in unwanted}
    env.update(env_extra or {})
    # pip (and the build's isolated environment) install from the wheelhouse only
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels("current")))
    # its own process group, ended whole on timeout: pip's and pytest's children go with it
    with subprocess.Popen(
        [str(a) for a in args], cwd=cwd, env=env, stdout=PIPE, stderr=PIPE, text=True, start_new_session=True
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            pytest.fail(f"{' '.join(map(str, args))} ran over {timeout} s\n{out[-4000:]}\n{err[-4000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def checked(*args: str | Path, cwd: Path | None = None, timeout: float = 600) -> str:
    result = run(*args, cwd=cwd, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(map(str, args))}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    for project in (ROOT, ROOT / "pytest_plugin"):
        checked(sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", out, project)
    return out


def wheel(dists: Path, name: str) -> str:
    (found,) = glob.glob(str(dists / f"{name}-*.whl"))
    return found


def venv(path: Path, python: str = sys.executable) -> Path:
    checked(python, "-m", "venv", path)
    return path / "bin" / "python"


def test_both_distributions_pass_twine_check(dists):
    files = sorted(p.name for p in dists.iterdir())
    assert files == [
        "fakebroker-0.1.0-py3-none-any.whl",
        "fakebroker-0.1.0.tar.gz",
        "pytest_fakebroker-0.1.0-py3-none-any.whl",
        "pytest_fakebroker-0.1.0.tar.gz",
    ]
    out = checked(sys.executable, "-m", "twine", "check", "--strict", *sorted(dists.iterdir()))
    assert out.count("PASSED") == 4
    shipped = [
        "fakebroker/protocol/specs/parsed.json",
        # the console's page, code and vendored libraries: it must work offline
        "fakebroker/http/static/index.html",
        "fakebroker/http/static/app.js",
        "fakebroker/http/static/vendor/preact.mjs",
        "fakebroker/http/static/vendor/LICENSE-htm",
    ]
    with zipfile.ZipFile(dists / "fakebroker-0.1.0-py3-none-any.whl") as whl:
        assert set(shipped) <= set(whl.namelist())
    with tarfile.open(dists / "fakebroker-0.1.0.tar.gz") as sdist:
        assert {f"fakebroker-0.1.0/{name}" for name in shipped} <= set(sdist.getnames())


def test_a_users_suite_runs_from_the_wheels_in_a_fresh_venv(dists, tmp_path):
    python = venv(tmp_path / "venv")
    core = wheel(dists, "fakebroker")
    checked(
        python, "-m", "pip", "install", "-q", f"fakebroker[charts] @ file://{core}", wheel(dists, "pytest_fakebroker")
    )
    checked(python, "-m", "pip", "install", "-q", *wheelhouse.USER_SUITE)
    project = tmp_path / "project"
    project.mkdir()
    for name, text in USER_SUITE.items():
        (project / name).write_text(text)
    result = run(python, "-m", "pytest", "-p", "no:cacheprovider", "--basetemp", tmp_path / "base", cwd=project)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    # the quick start's two tests, the anyio test once (not on trio too), the failing one
    assert "1 failed, 3 passed" in out and "warning" not in out, out
    assert "fakebroker timeline" in out and "topic_created" in out, out
    pictures = list((tmp_path / "base" / "fakebroker-timelines").glob("*.svg"))
    assert [p.name for p in pictures] == ["test_fails.py_test_fails.svg"], out
    # installed, not editable: the venv's fakebroker is the wheel's
    where = checked(python, "-c", "import fakebroker, pytest_fakebroker; print(fakebroker.__file__)", cwd=project)
    assert str(tmp_path / "venv") in where
    # the specs are read parsed from the wheel, not parsed from the spec files at every start
    shipped = (
        "from fakebroker.protocol import spec_files as f\n"
        "f.parse_folders = None  # a fallback to parsing would fail here\n"
        "from fakebroker.protocol import messages\n"
        "print(f.parsed_file().is_file(), len(messages.all_message_names()) > 80)"
    )
    assert checked(python, "-c", shipped, cwd=project) == "True True\n"
    assert checked(tmp_path / "venv" / "bin" / "fakebroker", "--version", cwd=project) == "fakebroker 0.1.0\n"
    # typed: a type checker sees FakeCluster's real signature through the lazy top-level name
    (project / "typed.py").write_text(
        "from fakebroker import FakeCluster\n"
        "cluster = FakeCluster(brokers=3)\n"
        "reveal_type(cluster)\n"
        "reveal_type(cluster.committed('g'))\n"
        "FakeCluster(brokers='3')\n"
    )
    typed = run(python, "-m", "mypy", "typed.py", cwd=project)
    assert 'Revealed type is "fakebroker.cluster.facade.FakeCluster"' in typed.stdout, typed.stdout
    assert 'Revealed type is "dict[tuple[str, int], int]"' in typed.stdout, typed.stdout
    assert 'Argument "brokers" to "FakeCluster" has incompatible type "str"; expected "int"' in typed.stdout


@pytest.mark.timeout(600)  # the fast suite on one core, beside the rest of the run
def test_the_fast_suite_passes_on_the_oldest_supported_python(dists, tmp_path):
    python310 = wheelhouse.oldest_python()
    if python310 is None:
        pytest.fail(
            "Python 3.10 (the oldest supported) is not installed: pyenv install 3.10 (or put python3.10 on PATH)"
        )
    python = venv(tmp_path / "venv310", python310)
    offline = ("--find-links", wheels("oldest"))
    checked(
        python, "-m", "pip", "install", "-q", *offline, wheel(dists, "fakebroker"), wheel(dists, "pytest_fakebroker")
    )
    checked(python, "-m", "pip", "install", "-q", *offline, *wheelhouse.FAST_SUITE)
    assert checked(python, "-c", "import sys; print(sys.version_info[:2])").strip() == "(3, 10)"
    result = run(
        python,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        "tests/core",
        "tests/faults",
        "tests/apis",
        "tests/protocol",
        "--ignore=tests/protocol/test_kio_crosscheck.py",  # kio needs Python 3.11
        # 1,500 codec properties per API and version (200 s of one core here): the main run has
        # them; under 3.10 the handlers' tests (tests/apis) drive the same codecs
        "--ignore=tests/protocol/test_roundtrip.py",
        "--ignore=tests/protocol/test_fast_paths.py",
        "-o",
        "addopts=-p pytester",  # no xdist in this venv
        cwd=ROOT,
        timeout=480,  # inside this test's 600 s
        # it checks Python 3.10, not the properties' depth (the main run has the CI profile):
        # the property tests' 100 examples each made this serial run 250 s of a 2-core CI
        env_extra={"HYPOTHESIS_PROFILE": "dev"},
    )
    tail = result.stdout.strip().splitlines()[-1:] or [""]
    print(f"Python 3.10 fast suite: {tail[0]}")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
