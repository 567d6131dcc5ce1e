"""A node process running one of the kafkajs command drivers (``js/groups.js``,
``js/transactions.js``), driven line by line with JSON commands."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from fakebroker.cluster import FakeCluster

from .driver import LineDriver

JS_DIR = Path(__file__).parent / "js"


class NodeDriver(LineDriver):
    """Starts ``node js/<script> <bootstrap>`` with kafkajs's log level and the script's watchdog."""

    script = ""  # a file of js/, set by each driver
    process_timeout = 100  # seconds: the script's own watchdog; each command has a shorter reply timeout
    log_name = "kafkajs"
    stderr_lines = 300
    stderr_tail = 80

    def __init__(self, node: str, cluster: FakeCluster):
        env = {
            **os.environ,
            "KAFKAJS_LOG_LEVEL": os.environ.get("KAFKAJS_LOG_LEVEL", "WARN"),
            "SCENARIO_TIMEOUT_MS": str(self.process_timeout * 1000),
        }
        argv = [node, str(JS_DIR / self.script), cluster.bootstrap_servers]
        super().__init__(argv, cluster, cwd=JS_DIR, env=env)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.call("exit", timeout=20)
            finally:
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.kill()

    def __enter__(self) -> NodeDriver:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
