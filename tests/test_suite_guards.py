"""The suite's own guards (the repository's conftest.py): a worker that dies is replaced and
the run still ends, a test stuck in C code is ended, and a session past its limit stops with
the names of the tests still running. Each runs an inner pytest over a few tiny files."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CRASHING = {
    "test_1_crash.py": "import os\ndef test_a(): pass\ndef test_crash():\n    os._exit(1)\ndef test_after(): pass\n",
    "test_2_ok.py": "def test_fn(): pass\n",
    "test_3_crash.py": "import os\ndef test_fn():\n    os._exit(1)\n",
    "test_4_ok.py": "import time\ndef test_x(): time.sleep(0.5)\ndef test_y(): pass\n",
}
STUCK_IN_C = (
    "import signal, time\n"
    "def test_stuck():\n"
    "    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # pytest-timeout's signal never lands\n"
    "    time.sleep(120)\n"
    "def test_ok(): pass\n"
)


def inner_run(tmp_path: Path, files: dict[str, str], *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    ini = "[pytest]\naddopts = -p no:cacheprovider\ntimeout = 2\ntimeout_method = signal\n"
    (tmp_path / "pytest.ini").write_text(ini)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    environ = {k: v for k, v in os.environ.items() if k not in ("FAKEBROKER_HANG_DUMPS", "PYTEST_XDIST_WORKER")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *args],
        cwd=tmp_path,
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=90,  # the run under test must end by itself well before this
    )


def test_a_run_with_crashing_workers_under_loadfile_still_ends(tmp_path):
    result = inner_run(tmp_path, CRASHING, "-n", "2", "--dist", "loadfile")
    tail = result.stdout.strip().splitlines()[-1]
    # each crash is reported once by xdist and once more when its test comes round again
    assert "2 failed, 5 passed, 2 errors" in tail, result.stdout[-3000:]
    assert result.stdout.count("node down") == 2


def test_a_test_stuck_in_c_code_is_ended_and_its_stacks_reported(tmp_path):
    result = inner_run(tmp_path, {"test_stuck.py": STUCK_IN_C}, "-n", "1", FAKEBROKER_HARD_MARGIN_S="1")
    assert result.returncode == 1
    assert "1 failed, 1 passed" in result.stdout.strip().splitlines()[-1], result.stdout[-3000:]
    assert "hung test: test_stuck.py_test_stuck.txt" in result.stdout
    assert "ended past 3 s with every thread's stack" in result.stdout
    assert "in test_stuck" in result.stdout  # the stack names the test's own frame


def test_a_session_past_its_limit_stops_and_names_what_was_running(tmp_path):
    files = {"test_slow.py": "import time, pytest\n@pytest.mark.timeout(0)\ndef test_slow():\n    time.sleep(60)\n"}
    result = inner_run(tmp_path, files, FAKEBROKER_SESSION_LIMIT_S="3")
    assert result.returncode == 2  # interrupted
    assert "the session ran over 3 s (FAKEBROKER_SESSION_LIMIT_S); running now:" in result.stdout
    assert "test_slow.py::test_slow (started" in result.stdout


def test_dumps_left_in_a_reused_folder_by_an_earlier_run_are_not_this_runs(tmp_path):
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    stale = dumps / "test_ok.py_test_fn.txt"
    stale.write_text("test_ok.py::test_fn (started 05:09:16 on gw1; ended past 360 s with every thread's stack):\n")
    os.utime(stale, (1_000_000, 1_000_000))  # long before this run
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    result = inner_run(run_dir, {"test_ok.py": "def test_fn(): pass\n"}, "-n", "1", FAKEBROKER_HANG_DUMPS=str(dumps))
    assert result.returncode == 0, result.stdout[-3000:]
    assert "1 passed" in result.stdout.strip().splitlines()[-1]
    assert "hung test" not in result.stdout and "worker died" not in result.stdout


class _Config:
    """What the crash-safe scheduler reads of pytest's config: ``--dist loadfile``, two workers."""

    option = type("Option", (), {"loadscopereorder": True})()

    def getvalue(self, name: str) -> object:
        return {"dist": "loadfile", "tx": ["2*popen"]}[name]


class _Worker:
    def __init__(self, name: str):
        self.gateway = type("Gateway", (), {"id": name})()
        self.shutting_down = False
        self.sent: list[list[int]] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.append(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def test_a_replacement_still_collecting_gets_no_files_until_its_collection_ends():
    # seen once in a full run with four workers: a second replacement's collection ended while
    # the first was still collecting, and handing the first a file raised KeyError inside xdist
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    scheduler = module.pytest_xdist_make_scheduler(_Config(), None)
    collection = [f"test_{n}.py::test_{i}" for n in range(6) for i in range(3)]
    first, second = _Worker("gw0"), _Worker("gw1")
    for worker in (first, second):
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, collection)
    scheduler.schedule()
    scheduler.remove_node(second)  # it died: a replacement is started
    late, later = _Worker("gw2"), _Worker("gw3")
    scheduler.add_node(late)
    scheduler.add_node(later)
    scheduler.add_node_collection(later, collection)  # the later one's collection ends first
    scheduler.schedule()
    assert late.sent == [] and later.sent  # nothing for the one still collecting
    scheduler.add_node_collection(late, collection)
    scheduler.schedule()
    assert late.sent  # files were left for it: six, of which the others hold two
