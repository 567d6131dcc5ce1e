"""Scenario scripts: play a scripted bad day against the user's own program.

A scenario is a Python file (or an async function) that steers a running ``FakeCluster``
through the same API tests use, while the user's command (their application, or its test
suite) runs against that cluster::

    # rebalance_storm.py
    CLUSTER = {"brokers": 3, "topics": {"orders": 6}}   # FakeCluster keyword arguments (optional)
    TIMEOUT = 60                                       # bound on the whole run, seconds (optional)

    async def scenario(cluster, proc):                 # or ``scenario(cluster)``
        await cluster.wait_for(...)
        cluster.faults.add(api="Heartbeat", error="REBALANCE_IN_PROGRESS", times=2)

``fakebroker run rebalance_storm.py -- python app.py`` (or ``await play(...)`` from Python)
starts the cluster, starts the command with the bootstrap address in its environment, runs
the scenario next to it, and ends when the command ends. The outcome:

- the command's exit status, if the scenario finished (or was still running: it is then
  cancelled, and the result says so, unless it was awaiting ``proc.wait()``: such a
  scenario runs on after the command's exit to check the outcome);
- ``SCENARIO_FAILED`` (3) if the scenario raised: the command is stopped (SIGTERM, then
  SIGKILL after a grace period) and the traceback is kept;
- ``TIMED_OUT`` (124, as coreutils ``timeout``) if the run outlived ``TIMEOUT``.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

from .. import timeline
from ..cluster import FakeCluster
from ..http import ControlEndpoint

SCENARIO_FAILED = 3
TIMED_OUT = 124
COMMAND_NOT_FOUND = 127
STOP_GRACE_SECONDS = 5.0

ScenarioFn = Callable[..., Awaitable[Any]]


class ScenarioError(Exception):
    """A scenario file that cannot be used (missing ``scenario``, bad ``CLUSTER``, ...)."""


@dataclass
class Scenario:
    """A loaded scenario: the async function, the cluster it wants, and its time bound."""

    fn: ScenarioFn
    cluster_options: dict[str, Any] = field(default_factory=dict)
    timeout: float | None = None
    name: str = "scenario"

    @classmethod
    def from_function(
        cls, fn: ScenarioFn, cluster_options: Mapping[str, Any] | None = None, timeout: float | None = None
    ) -> Scenario:
        if not inspect.iscoroutinefunction(fn):
            raise ScenarioError(
                f"{getattr(fn, '__name__', fn)!r} must be an async function (`async def scenario(cluster, proc)`)"
            )
        return cls(fn, dict(cluster_options or {}), timeout, getattr(fn, "__qualname__", "scenario"))


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Import a scenario file by path. It must define ``async def scenario(cluster[, proc])``
    and may define ``CLUSTER`` (a dict of ``FakeCluster`` keyword arguments) and ``TIMEOUT``."""
    path = Path(path)
    if not path.is_file():
        raise ScenarioError(f"{path}: no such file")
    # A module name of its own, so two scenario files never share a sys.modules slot.
    module_name = f"fakebroker_scenario_{abs(hash(str(path.resolve())))}_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ScenarioError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up by name
    spec.loader.exec_module(module)
    fn = getattr(module, "scenario", None)
    if fn is None:
        raise ScenarioError(f"{path}: defines no `async def scenario(cluster, proc)`")
    options = getattr(module, "CLUSTER", None) or {}
    if not isinstance(options, Mapping):
        raise ScenarioError(
            f"{path}: CLUSTER must be a dict of FakeCluster keyword arguments, not {type(options).__name__}"
        )
    timeout = getattr(module, "TIMEOUT", None)
    if timeout is not None and not isinstance(timeout, (int, float)):
        raise ScenarioError(f"{path}: TIMEOUT must be a number of seconds")
    scenario = Scenario.from_function(fn, options, timeout)
    scenario.name = str(path)
    return scenario


class CommandHandle:
    """What a scenario sees of the user's command: its pid, its status, and ways to wait
    for it or signal it (e.g. to play a crash of the application itself)."""

    def __init__(self, process: Process, env: Mapping[str, str]):
        self._process = process
        self.env = dict(env)  # the variables fakebroker added to the command's environment
        self.awaited = False  # the scenario waits for the end: let it check the aftermath

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    @property
    def running(self) -> bool:
        return self._process.returncode is None

    async def wait(self) -> int:
        """Wait for the command to exit and return its return code. A scenario that waits
        for this is not cancelled when the command exits: it may go on to check the outcome
        (committed offsets, records, events) until it returns or the run's timeout."""
        self.awaited = True
        return await self._process.wait()

    def send_signal(self, sig: signal.Signals) -> None:
        if self.running:
            self._process.send_signal(sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


@dataclass
class RunResult:
    """How a run ended. ``status`` is what ``fakebroker run`` exits with."""

    status: int
    command_status: int | None
    scenario_completed: bool
    scenario_cancelled: bool = False
    scenario_error: BaseException | None = None
    scenario_traceback: str = ""
    timed_out: bool = False
    timeline: str = ""
    timeline_file: Path | None = None
    bootstrap_servers: str = ""
    command_error: str | None = None

    def summary(self) -> str:
        if self.command_error is not None:
            return self.command_error
        if self.timed_out:
            return "timed out: the command was stopped"
        if self.scenario_error is not None:
            return (
                f"the scenario failed ({type(self.scenario_error).__name__}: {self.scenario_error}); "
                "the command was stopped"
            )
        scenario = "completed" if self.scenario_completed else "cancelled (the command exited first)"
        return f"command exited with status {self.command_status}; scenario {scenario}"


def command_env(cluster: FakeCluster, control: ControlEndpoint | None = None) -> dict[str, str]:
    """The variables the command gets: the bootstrap address under the usual names, and the
    control endpoint's address and token when one runs."""
    env = {
        name: cluster.bootstrap_servers
        for name in ("FAKEBROKER_BOOTSTRAP", "KAFKA_BOOTSTRAP_SERVERS", "BOOTSTRAP_SERVERS")
    }
    if control is not None and control.url:
        env["FAKEBROKER_CONTROL_URL"] = control.url
        if control.token:
            env["FAKEBROKER_CONTROL_TOKEN"] = control.token
    return env


def render_timeline(cluster: FakeCluster) -> str:
    """The cluster's text timeline."""
    return timeline.timeline(cluster)


def check_timeline_path(path: str | os.PathLike[str]) -> None:
    """Refuse a picture format before the run rather than after it, when it cannot be drawn."""
    if Path(path).suffix.lower() in (".svg", ".png") and importlib.util.find_spec("matplotlib") is None:
        raise ScenarioError(f"{path}: {timeline.CHARTS_MISSING}; or use a .txt file")


def write_timeline(cluster: FakeCluster, path: str | os.PathLike[str]) -> Path:
    """Write the timeline to ``path``: text, or a picture for ``.svg``/``.png``."""
    return timeline.write_timeline(cluster, path)


def _exit_status(returncode: int) -> int:
    """A shell's convention for a command killed by a signal: 128 + the signal number."""
    return 128 - returncode if returncode < 0 else returncode


async def _stop(process: Process, grace: float = STOP_GRACE_SECONDS) -> None:
    """SIGTERM, then SIGKILL if the command has not exited after ``grace`` seconds."""
    if process.returncode is not None:
        return
    try:
        process.terminate()
    except ProcessLookupError:
        pass
    with anyio.move_on_after(grace):
        await process.wait()
        return
    try:
        process.kill()
    except ProcessLookupError:
        pass
    with anyio.CancelScope(shield=True):
        await process.wait()


async def _forward_signals(process: Process) -> None:
    """Pass SIGTERM on to the command at once. SIGINT from a terminal reaches the command by
    itself (same process group); pass it on only if the command is still running a second
    later, so one Ctrl-C is not delivered twice."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            if signum == signal.SIGINT:
                await anyio.sleep(1.0)
            if process.returncode is None:
                process.send_signal(signum)


async def play(
    scenario: Scenario | ScenarioFn | str | os.PathLike[str],
    command: str | Sequence[str],
    cluster_options: Mapping[str, Any] | None = None,
    *,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeline_file: str | os.PathLike[str] | None = None,
    forward_signals: bool = False,
    on_start: Callable[[FakeCluster, CommandHandle], None] | None = None,
) -> RunResult:
    """Start a cluster, run ``command`` against it and play ``scenario`` meanwhile.

    ``scenario`` is a loaded ``Scenario``, a path to a scenario file, or an async function
    ``fn(cluster)`` / ``fn(cluster, proc)``. ``cluster_options`` override the scenario's
    ``CLUSTER``; ``timeout`` overrides its ``TIMEOUT``. ``command`` is an argument list (run
    directly) or a string (run by the shell); it inherits stdin, stdout and stderr.
    """
    if not isinstance(scenario, Scenario):
        scenario = (
            load_scenario(scenario) if isinstance(scenario, (str, os.PathLike)) else Scenario.from_function(scenario)
        )
    options = {**scenario.cluster_options, **(cluster_options or {})}
    control_options = {
        k.removeprefix("control_"): options.pop(k) for k in ("control_port", "control_token") if k in options
    }
    timeout = scenario.timeout if timeout is None else timeout
    pass_proc = _takes_proc(scenario.fn)
    if timeline_file is not None:
        check_timeline_path(timeline_file)
    try:
        cluster = FakeCluster(**options)
    except TypeError as exc:
        raise ScenarioError(f"{scenario.name}: bad cluster options {options!r}: {exc}") from None

    async with cluster:
        control = None
        if control_options.get("port") is not None:
            control = await ControlEndpoint(cluster, control_options["port"], control_options.get("token")).__aenter__()
        added = command_env(cluster, control)
        full_env = {**(os.environ if env is None else env), **added}
        try:
            process = await anyio.open_process(command, stdin=None, stdout=None, stderr=None, env=full_env, cwd=cwd)
        except OSError as exc:  # not found, not executable
            return RunResult(
                COMMAND_NOT_FOUND,
                None,
                False,
                command_error=f"cannot start {command!r}: {exc}",
                bootstrap_servers=cluster.bootstrap_servers,
                timeline=render_timeline(cluster),
            )
        handle = CommandHandle(process, added)
        result = RunResult(0, None, False, bootstrap_servers=cluster.bootstrap_servers)
        if on_start is not None:
            on_start(cluster, handle)

        scenario_done = anyio.Event()

        async def run_scenario() -> None:
            try:
                await (scenario.fn(cluster, handle) if pass_proc else scenario.fn(cluster))
            except Exception as exc:  # Cancelled is a BaseException: a cancelled scenario lands below
                result.scenario_error = exc
                result.scenario_traceback = traceback.format_exc()
                await _stop(process)
            else:
                result.scenario_completed = True
            finally:
                scenario_done.set()

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(run_scenario)
                if forward_signals:
                    tg.start_soon(_forward_signals, process)
                with anyio.move_on_after(timeout if timeout is not None else float("inf")) as deadline:
                    await process.wait()
                    if handle.awaited:  # the scenario means to look at the aftermath
                        await scenario_done.wait()
                if deadline.cancelled_caught:
                    result.timed_out = True
                    await _stop(process)
                result.scenario_cancelled = not result.scenario_completed and result.scenario_error is None
                tg.cancel_scope.cancel()
        finally:
            # Never leave the command behind, whatever ended the run (even a Ctrl-C here).
            with anyio.CancelScope(shield=True):
                await _stop(process)

        result.command_status = _exit_status(process.returncode if process.returncode is not None else -signal.SIGKILL)
        if result.timed_out:
            result.status = TIMED_OUT
        elif result.scenario_error is not None:
            result.status = SCENARIO_FAILED
        else:
            result.status = result.command_status
        result.timeline = render_timeline(cluster)
        if timeline_file is not None:
            result.timeline_file = write_timeline(cluster, timeline_file)
    return result


def _takes_proc(fn: ScenarioFn) -> bool:
    """``scenario(cluster, proc)`` or ``scenario(cluster)``: count the positional parameters."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)
