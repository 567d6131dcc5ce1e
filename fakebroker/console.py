"""How ``fakebroker serve`` prints events: aligned, coloured lines through rich, or one JSON
object per line (``--json-logs``) for log shippers and scripts."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

from .core.events import Event

QUIET_EVENTS = {"broker_started"}
STYLES = {  # by what an event is about
    "fault": "bold red",
    "request_error": "red",
    "handler_error": "bold red",
    "connection_closed": "magenta",
    "broker": "yellow",
    "leader_moved": "yellow",
    "network": "bold magenta",
    "clock": "blue",
    "member": "cyan",
    "group": "cyan",
    "generation": "bold cyan",
    "rebalance": "cyan",
    "assignment": "cyan",
    "offset": "green",
    "topic": "green",
    "partitions": "green",
    "records": "green",
    "txn_fenced": "bold red",
    "txn_timed_out": "bold red",
    "txn_aborted": "yellow",
    "txn": "green",
}


def style_of(kind: str) -> str:
    for prefix, style in STYLES.items():
        if kind.startswith(prefix):
            return style
    return "white"


class EventPrinter:
    """Print events as they happen; ``json_lines`` switches to machine-readable output."""

    def __init__(
        self,
        *,
        json_lines: bool = False,
        stream: TextIO | None = None,
        color: bool | None = None,
        quiet: set[str] | None = None,
    ):
        self.json_lines = json_lines
        self.stream = stream or sys.stdout
        self.quiet = QUIET_EVENTS if quiet is None else quiet
        self.console = Console(
            file=self.stream, highlight=False, soft_wrap=True, force_terminal=color, no_color=color is False
        )
        self._start_ms: int | None = None

    def plain(self, line: str) -> None:
        """A line scripts parse (``bootstrap: ...``): never styled, flushed at once."""
        print(line, file=self.stream, flush=True)

    def __call__(self, event: Event) -> None:
        if event.kind in self.quiet:
            return
        if self.json_lines:
            print(json.dumps(event.to_dict(), default=str), file=self.stream, flush=True)
            return
        if self._start_ms is None:
            self._start_ms = event.time_ms
        self.console.print(self.render(event))
        self.stream.flush()

    def render(self, event: Event) -> Text:
        elapsed = (event.time_ms - (self._start_ms or event.time_ms)) / 1000
        details = " ".join(f"{k}={_short(v)}" for k, v in event.details.items() if k not in ("group", "client_id"))
        line = Text()
        line.append(f"{elapsed:+9.3f}s ", style="dim")
        line.append(f"{'b' + str(event.broker) if event.broker is not None else '-':>3} ", style="dim")
        line.append(f"{event.kind:<22}", style=style_of(event.kind))
        line.append(f" {event.group or '-':<14}", style="cyan" if event.group else "dim")
        line.append(f" {event.client_id or '-':<16}", style="white" if event.client_id else "dim")
        if details:
            line.append(" " + details)
        return line


def _short(value: Any) -> str:
    text = str(value)
    return f'"{text}"' if " " in text else text
