"""The event printer's own line builder writes exactly what rich would print for the same
line, in every style, with and without colour; text rich might transform goes to rich."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from fakebroker.cli.console import STYLES, EventPrinter


def fake_event(kind: str, **details: object) -> SimpleNamespace:
    return SimpleNamespace(
        kind=kind, time_ms=1234, broker=1, group="g", client_id="svc", details={"member": "m-1", **details}
    )


def rich_line(printer: EventPrinter, event: SimpleNamespace) -> str:
    with printer.console.capture() as capture:
        printer.console.print(printer.render(event))  # type: ignore[arg-type]
    return capture.get()


@pytest.mark.parametrize("color", [True, False, None])
def test_lines_equal_richs_in_every_style(color: bool | None) -> None:
    printer = EventPrinter(stream=io.StringIO(), color=color)
    printer._start_ms = 1000
    kinds = [*STYLES, "something_else"]
    events = [fake_event(k) for k in kinds] + [fake_event("member_joined", reason="a b c", n=3)]
    events.append(
        SimpleNamespace(kind="broker_started", time_ms=1000, broker=None, group=None, client_id=None, details={})
    )
    for e in events:
        assert printer.line(e) == rich_line(printer, e)  # type: ignore[arg-type]
    printer.close()


@pytest.mark.parametrize("odd", ["tab\there", "new\nline", "ünïcode", "\x1b[31mred", "emoji 🎉"])
def test_text_rich_might_transform_is_left_to_rich(odd: str) -> None:
    stream = io.StringIO()
    printer = EventPrinter(stream=stream, color=False)
    event = fake_event("member_joined", reason=odd)
    assert printer.line(event) is None  # type: ignore[arg-type]
    printer(event)  # type: ignore[arg-type]
    assert printer.close(5)
    assert stream.getvalue() == rich_line(printer, event)
