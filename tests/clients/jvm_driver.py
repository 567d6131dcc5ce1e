"""A JVM running one of the Java drivers (``fakebroker.GroupScenarios``, ``fakebroker.TxnScenarios``)
from the test jar, driven line by line: ``ID COMMAND key=value...`` in, JSON lines out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakebroker.cluster import FakeCluster

from .driver import LineDriver
from .test_java_client import KAFKA_CLIENTS_VERSION, java_command


class JvmDriver(LineDriver):
    """Starts ``main_class`` and checks its first line names the kafka-clients version built in."""

    name = "the JVM"
    log_name = "java"
    main_class = ""  # set by each driver
    lifetime = 110.0  # seconds; the JVM is killed after this whatever happens
    exit_timeout = 30.0  # seconds the ``exit`` command may take (closing clients)

    def __init__(self, jar: Path, cluster: FakeCluster):
        cmd = java_command("-cp", str(jar), self.main_class, cluster.bootstrap_servers)
        super().__init__(cmd, cluster, lifetime=self.lifetime)
        version = self.first_line(timeout=20)
        if not (version and version["type"] == "version" and version["kafka_clients"] == KAFKA_CLIENTS_VERSION):
            self.cancel_killer()
            self.kill()
            pytest.fail(f"{self.main_class} did not start: {version}{self.diagnostics()}")

    def encode(self, ident: int, cmd: str, args: dict[str, Any]) -> str:
        """``ID COMMAND key=value...``, a list value joined with commas."""
        return " ".join(
            [str(ident), cmd, *(f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in args.items())]
        )

    def describe(self, cmd: str, args: dict[str, Any], line: str) -> str:
        return repr(line)

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                self.call("exit", timeout=self.exit_timeout)
                self.proc.wait(10)
        finally:
            self.cancel_killer()
            if self.proc.poll() is None:
                self.kill()

    def __enter__(self) -> JvmDriver:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
