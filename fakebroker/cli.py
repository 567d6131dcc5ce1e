"""``fakebroker serve``: a local dev server. ``python -m fakebroker`` is the same command.

The first line on stdout is exactly ``bootstrap: 127.0.0.1:P1,...`` so scripts can read it;
then one line per notable event. Ctrl-C or SIGTERM stops it cleanly with exit code 0.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

import anyio
import click

from .cluster import FakeCluster
from .server.runtime import Event

QUIET_EVENTS = {"broker_started"}


def _parse_topic(text: str) -> tuple[str, int]:
    name, _, count = text.partition(":")
    if not name:
        raise click.BadParameter(f"{text!r}: expected NAME or NAME:PARTITIONS")
    try:
        return name, int(count) if count else 1
    except ValueError:
        raise click.BadParameter(f"{text!r}: the partition count must be a whole number") from None


def _parse_setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise click.BadParameter(f"{text!r}: expected NAME=VALUE, e.g. auto.create.topics.enable=false")
    return key, value


@click.group()
def main() -> None:
    """fakebroker: an in-process Kafka-compatible broker for tests."""


@main.command()
@click.option("--brokers", default=1, show_default=True, help="Number of brokers.")
@click.option("--port", default=9092, show_default=True, help="Port of the first broker; the others use port+1, ... (0 = free ports).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (loopback by default).")
@click.option("--topic", "topics", multiple=True, help="Create a topic at start: NAME or NAME:PARTITIONS (repeatable).")
@click.option("--set", "settings", multiple=True, help="Broker setting under Kafka's name: NAME=VALUE (repeatable).")
@click.option("--control-port", type=int, default=None,
              help="Serve the HTTP control endpoint on 127.0.0.1:PORT (0 = a free port); off by default.")
@click.option("--control-token", default=None, help="Bearer token of the control endpoint (default: a random one).")
def serve(brokers: int, port: int, host: str, topics: tuple[str, ...], settings: tuple[str, ...],
          control_port: int | None, control_token: str | None) -> None:
    """Run a fake Kafka cluster until Ctrl-C or SIGTERM."""
    topic_map = dict(_parse_topic(t) for t in topics)
    config = dict(_parse_setting(s) for s in settings)
    if control_token is not None and control_port is None:
        raise click.UsageError("--control-token needs --control-port")
    try:
        anyio.run(_serve, brokers, port, host, topic_map, config, control_port, control_token, backend="trio")
    except OSError as exc:
        click.echo(f"fakebroker: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
        sys.exit(2)


async def _serve(brokers: int, port: int, host: str, topics: dict[str, int], config: dict[str, Any],
                 control_port: int | None = None, control_token: str | None = None) -> None:
    cluster = FakeCluster(brokers, host=host, port=port, topics=topics, config=config, control_port=control_port,
                          control_token=control_token)
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with cluster:
            print(f"bootstrap: {cluster.bootstrap_servers}", flush=True)
            if cluster.control_url is not None:
                print(f"control: {cluster.control_url} token={cluster.control_token}", flush=True)
            for event in cluster.events:
                _print_event(event)
            cluster.on_event(_print_event)
            async for signum in signals:
                print(f"stopping ({signal.Signals(signum).name})", flush=True)
                break


def _print_event(event: Event) -> None:
    if event.kind not in QUIET_EVENTS:
        print(event.describe(), flush=True)


@main.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("scenario_file", metavar="SCENARIO.py", type=click.Path(exists=True, dir_okay=False))
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--brokers", type=int, default=None, help="Number of brokers (overrides the scenario's CLUSTER).")
@click.option("--topic", "topics", multiple=True, help="Create a topic at start: NAME or NAME:PARTITIONS (repeatable).")
@click.option("--set", "settings", multiple=True, help="Broker setting under Kafka's name: NAME=VALUE (repeatable).")
@click.option("--timeout", type=float, default=None, help="Stop the command after this many seconds (overrides TIMEOUT).")
@click.option("--timeline", "timeline_file", type=click.Path(dir_okay=False), default=None,
              help="Write the timeline to this file (.txt, or .svg/.png when drawing is available) instead of printing it.")
@click.option("--quiet", is_flag=True, help="Print nothing of fakebroker's own but errors.")
def run(scenario_file: str, command: tuple[str, ...], brokers: int | None, topics: tuple[str, ...],
        settings: tuple[str, ...], timeout: float | None, timeline_file: str | None, quiet: bool) -> None:
    """Run COMMAND against a fresh cluster while SCENARIO.py plays faults on it.

    COMMAND gets the bootstrap address in FAKEBROKER_BOOTSTRAP, KAFKA_BOOTSTRAP_SERVERS and
    BOOTSTRAP_SERVERS. Exits with COMMAND's status; 3 if the scenario failed, 124 on timeout.
    Put `--` before COMMAND: fakebroker run storm.py -- pytest -x tests/
    """
    from .scenario import ScenarioError, load_scenario, play

    try:
        scenario = load_scenario(scenario_file)
    except ScenarioError as exc:
        raise click.UsageError(str(exc)) from None
    options = dict(scenario.cluster_options)
    if brokers is not None:
        options["brokers"] = brokers
    if topics:
        options["topics"] = {**(options.get("topics") or {}), **dict(_parse_topic(t) for t in topics)}
    if settings:
        options["config"] = {**(options.get("config") or {}), **dict(_parse_setting(s) for s in settings)}

    def started(cluster: FakeCluster, proc: Any) -> None:
        if not quiet:
            click.echo(f"fakebroker: bootstrap {cluster.bootstrap_servers}; running {' '.join(command)} (pid {proc.pid})", err=True)

    try:
        result = anyio.run(lambda: play(scenario, list(command), options, timeout=timeout, timeline_file=timeline_file,
                                        forward_signals=True, on_start=started), backend="trio")
    except ScenarioError as exc:
        click.echo(f"fakebroker: {exc}", err=True)
        sys.exit(2)
    if result.scenario_traceback:
        click.echo(f"fakebroker: the scenario {scenario_file} failed:\n{result.scenario_traceback.rstrip()}", err=True)
    if not quiet and result.timeline_file is None:
        click.echo("fakebroker: timeline\n" + result.timeline, err=True)
    if not quiet or result.status != result.command_status:
        where = f" (timeline in {result.timeline_file})" if result.timeline_file else ""
        click.echo(f"fakebroker: {result.summary()}{where}", err=True)
    sys.exit(result.status)


if __name__ == "__main__":  # pragma: no cover
    main()
