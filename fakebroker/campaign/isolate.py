"""A run in a process of its own: ``python -m fakebroker.campaign.isolate`` reads a job (JSON)
on stdin and prints its row (JSON) as its last line. The parent gives it the run's time and
kills its whole process group past it; a child that dies (a client library's segfault, an
``os._exit``) or overruns is still a row, ``crashed`` or ``stuck``, with the tail of what it
printed. One process per run also keeps client libraries' global state (threads, loggers,
librdkafka's handles) from leaking from one run into the next."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from .runs import DEFAULT_TIMEOUT, Job, run_job

ROW_MARK = "fakebroker-campaign-row: "
OUTPUT_TAIL = 4000  # characters of a run's output kept in its row
GRACE_S = 10.0  # at most, beyond the run's own timeout: the cluster's start and stop, the imports


def run_isolated(job: Job) -> dict[str, Any]:
    """Run ``job`` in a child process; its row, whatever happens to the child."""
    timeout = job.timeout or DEFAULT_TIMEOUT
    env = dict(os.environ)
    # the parent's import path, so a campaign module shipped with addPyFile is found there too
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fakebroker.campaign.isolate"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,  # its own process group: killed whole, client threads and all
    )
    try:
        grace = min(GRACE_S, max(2.0, timeout))
        out, _ = proc.communicate(json.dumps(job.to_json()).encode(), timeout=timeout + grace)
        stuck = False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, _ = proc.communicate()
        stuck = True
    text = out.decode(errors="replace")
    row = None
    for line in reversed(text.splitlines()):
        if line.startswith(ROW_MARK):
            row = json.loads(line[len(ROW_MARK) :])
            break
    output = "\n".join(line for line in text.splitlines() if not line.startswith(ROW_MARK))
    if row is None:
        row = {
            **job.to_json(),
            "verdict": "stuck" if stuck else "crashed",
            "error": f"the run overran {timeout:g} s" if stuck else f"the run's process exited {proc.returncode}",
            "seconds": round(time.monotonic() - started, 3),
        }
    row["output"] = output[-OUTPUT_TAIL:]
    return row


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _orphaned_exit(parent: int, every_s: float = 0.5) -> None:
    """End this run (its process group: the child and what it started) once its parent is gone:
    a Spark task killed with its Python worker leaves no run behind, holding cores and ports."""
    while os.getppid() == parent:
        time.sleep(every_s)
    os.killpg(os.getpgrp(), signal.SIGKILL)


def main() -> None:
    threading.Thread(target=_orphaned_exit, args=(os.getppid(),), name="orphan-watch", daemon=True).start()
    job = Job.from_json(json.loads(sys.stdin.read()))
    row = run_job(job)  # a module that cannot be loaded raises: the parent's row says "crashed"
    sys.stdout.flush()
    print(ROW_MARK + json.dumps(row, default=str), flush=True)
    os._exit(0)  # client threads left behind by the scenario must not hold the exit


if __name__ == "__main__":
    main()
