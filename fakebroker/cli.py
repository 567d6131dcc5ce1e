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
def serve(brokers: int, port: int, host: str, topics: tuple[str, ...], settings: tuple[str, ...]) -> None:
    """Run a fake Kafka cluster until Ctrl-C or SIGTERM."""
    topic_map = dict(_parse_topic(t) for t in topics)
    config = dict(_parse_setting(s) for s in settings)
    try:
        anyio.run(_serve, brokers, port, host, topic_map, config, backend="trio")
    except OSError as exc:
        click.echo(f"fakebroker: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
        sys.exit(2)


async def _serve(brokers: int, port: int, host: str, topics: dict[str, int], config: dict[str, Any]) -> None:
    cluster = FakeCluster(brokers, host=host, port=port, topics=topics, config=config)
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with cluster:
            print(f"bootstrap: {cluster.bootstrap_servers}", flush=True)
            for event in cluster.events:
                _print_event(event)
            cluster.on_event(_print_event)
            async for signum in signals:
                print(f"stopping ({signal.Signals(signum).name})", flush=True)
                break


def _print_event(event: Event) -> None:
    if event.kind not in QUIET_EVENTS:
        print(event.describe(), flush=True)


if __name__ == "__main__":  # pragma: no cover
    main()
