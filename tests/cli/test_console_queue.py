"""The event printer never blocks its caller: a stream that does not take lines makes it
drop and count events; a stream whose reader left (EPIPE) makes it stop printing."""

from __future__ import annotations

import io
import threading
import time

from fakebroker.cli import console
from fakebroker.cli.console import EventPrinter
from fakebroker.core.events import ClientConnected


class StuckStream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.go = threading.Event()

    def write(self, text: str) -> int:
        self.go.wait()
        return super().write(text)


class GoneStream(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def event(i: int) -> ClientConnected:
    return ClientConnected(peer=f"127.0.0.1:{i}", client_id="c")


def test_a_stream_that_takes_nothing_drops_and_counts_events():
    stream = StuckStream()
    printer = EventPrinter(json_lines=True, stream=stream)
    printer.plain("bootstrap: 127.0.0.1:1")
    start = time.monotonic()
    for i in range(console.QUEUE_SIZE + 500):
        printer(event(i))
    assert time.monotonic() - start < 5  # never waited for the stream
    assert 500 <= printer.dropped <= 501
    assert not printer.close(timeout=0.2)  # stuck: close says so instead of hanging
    stream.go.set()
    printer._thread.join(30)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "bootstrap: 127.0.0.1:1"
    assert any("events not printed" in line for line in lines)


def test_a_reader_that_left_stops_printing():
    printer = EventPrinter(json_lines=True, stream=GoneStream())
    printer(event(1))
    assert printer.close(timeout=5)
    assert printer.broken
    printer(event(2))  # nothing more is queued
