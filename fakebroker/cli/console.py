"""How ``fakebroker serve`` prints events: aligned, coloured lines through rich, or one JSON
object per line (``--json-logs``) for log shippers and scripts.

Printing never holds the broker up: events go into a bounded queue that a writer thread
empties into the stream, a burst at a time: the broker wakes the writer only when the queue
was empty, and the writer gathers a burst for ``BURST_S`` between two rounds (waking it for
every event cost the broker ~80 µs of thread switching an event, more than the line).
When nobody reads the stream fast enough (a pipe nobody reads), the queue fills and further
events are dropped and counted (a line says how many once writing resumes); when the reader
goes away (EPIPE), printing stops and the broker keeps serving.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, TextIO

from ..cluster import Event

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

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


@functools.cache
def style_of(kind: str) -> str:
    for prefix, style in STYLES.items():
        if kind.startswith(prefix):
            return style
    return "white"


QUEUE_SIZE = 10000  # event lines waiting for the writer thread before events are dropped
BURST_S = 0.02  # the writer's pause between two rounds, while events gather
_STOP = object()


class EventPrinter:
    """Print events as they happen; ``json_lines`` switches to machine-readable output.

    Calls return at once; a writer thread does the writing (see the module's docstring).
    """

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
        self.color = color
        self._console: Console | None = None  # rich (~90 ms to import) only when a line needs it
        self._plain = _uncoloured(self.stream, color)
        self._start_ms: int | None = None
        self._codes: dict[str, tuple[str, str]] = {}  # style -> escape codes before and after
        self._queue: deque[Any] = deque()  # appends and pops are atomic: no lock
        self._wake = threading.Event()  # set when the queue gets an item while the writer rests
        self.dropped = 0  # events not printed because the queue was full
        self._reported = 0  # of them, how many a line has told about
        self.broken = False  # the reader went away (EPIPE): nothing more is printed
        self._thread = threading.Thread(target=self._write_loop, name="fakebroker-stdout", daemon=True)
        self._thread.start()

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(
                file=self.stream,
                highlight=False,
                soft_wrap=True,
                force_terminal=self.color,
                no_color=self.color is False,
            )
        return self._console

    def plain(self, line: str) -> None:
        """A line scripts parse (``bootstrap: ...``): never styled, never dropped."""
        self._put(("plain", line))

    def __call__(self, event: Event) -> None:
        if event.kind in self.quiet or self.broken:
            return
        if len(self._queue) >= QUEUE_SIZE:
            self.dropped += 1
            return
        self._put(("event", event))

    def _put(self, item: Any) -> None:
        self._queue.append(item)  # before looking at the flag: the writer clears it before it drains
        if not self._wake.is_set():
            self._wake.set()

    def close(self, timeout: float = 1.0) -> bool:
        """Write what is queued, for at most ``timeout`` seconds; False when the writer is
        stuck (a full pipe nobody reads)."""
        self._put(_STOP)
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _write_loop(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            while self._queue:
                item = self._queue.popleft()
                if item is _STOP:
                    return
                self._write(*item)
            if not self.broken:
                try:
                    self.stream.flush()  # one flush per burst, not per line
                except OSError:  # pragma: no cover - the reader left between two rounds
                    self._gone()
            time.sleep(BURST_S)

    def _write(self, kind: str, value: Any) -> None:
        if self.broken:
            return
        try:
            if kind == "plain":
                print(value, file=self.stream, flush=True)
            else:
                self._report_dropped()
                self._print(value)
        except BrokenPipeError:
            self._gone()
        except OSError:  # pragma: no cover - e.g. a full disk: stop printing, keep serving
            self._gone()

    def _report_dropped(self) -> None:
        dropped = self.dropped
        if dropped > self._reported:
            print(
                f"fakebroker: {dropped - self._reported} events not printed (the output was not read fast enough)",
                file=self.stream,
                flush=True,
            )
            self._reported = dropped

    def _gone(self) -> None:
        """The reader went away: print nothing more, and point the descriptor at /dev/null so
        that flushing it at exit does not fail either."""
        self.broken = True
        try:
            fd = self.stream.fileno()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)
        except (OSError, ValueError, AttributeError):  # pragma: no cover - not a real file
            pass

    def _print(self, event: Event) -> None:
        if self.json_lines:
            self.stream.write(json.dumps(event.to_dict(), default=str) + "\n")
            return
        if self._start_ms is None:
            self._start_ms = event.time_ms
        line = self.line(event)
        if line is None:
            self.console.print(self.render(event))
        else:
            self.stream.write(line)

    def _parts(self, event: Event) -> list[tuple[str, str]]:
        """The line as (text, style) pieces: one source for ``render`` and ``line``."""
        elapsed = (event.time_ms - (self._start_ms or event.time_ms)) / 1000
        details = " ".join(f"{k}={_short(v)}" for k, v in event.details.items() if k not in ("group", "client_id"))
        parts = [
            (f"{elapsed:+9.3f}s ", "dim"),
            (f"{'b' + str(event.broker) if event.broker is not None else '-':>3} ", "dim"),
            (f"{event.kind:<22}", style_of(event.kind)),
            (f" {event.group or '-':<14}", "cyan" if event.group else "dim"),
            (f" {event.client_id or '-':<16}", "white" if event.client_id else "dim"),
        ]
        if details:
            parts.append((" " + details, ""))
        return parts

    def render(self, event: Event) -> Text:
        from rich.text import Text

        line = Text()
        for text, style in self._parts(event):
            line.append(text, style=style or None)
        return line

    def line(self, event: Event) -> str | None:
        """Exactly what ``console.print(render(event))`` writes, without rich's rendering
        pipeline: that costs ~300 µs an event, and the GIL makes the broker pay it. Each
        style's escape codes are asked of rich once. None (rich prints it) for text rich
        might transform: tabs, control characters, anything not ASCII."""
        parts = self._parts(event)
        whole = "".join(text for text, _ in parts)
        if not (whole.isascii() and whole.isprintable()):
            return None
        if self._plain:
            return whole + "\n"
        return "".join(self._styled(text, style) for text, style in parts) + "\n"

    def _styled(self, text: str, style: str) -> str:
        if self._plain:
            return text
        codes = self._codes.get(style)
        if codes is None:
            from rich.text import Text

            with self.console.capture() as capture:
                self.console.print(Text("X", style=style), end="")
            before, _, after = capture.get().partition("X")
            codes = self._codes[style] = (before, after)
        return codes[0] + text + codes[1]


def _uncoloured(stream: TextIO, color: bool | None) -> bool:
    """Whether rich would write no escape codes: colour off, or (rich's own test) no
    ``TTY_COMPATIBLE``/``FORCE_COLOR`` and a stream that is not a terminal. Unsure: False."""
    if color is not None:
        return not color
    if "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ:
        return False
    try:
        return not stream.isatty()
    except (ValueError, AttributeError):
        return False


def _short(value: Any) -> str:
    text = str(value)
    return f'"{text}"' if " " in text else text
