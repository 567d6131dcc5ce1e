"""Timelines of a cluster's event log: a text one for logs and failure messages, and a
swim-lane picture of a group's members, generations and assignments over time.

Both are pure functions over a list of :class:`~fakebroker.cluster.Event` (anything
with ``kind``, ``broker``, ``details``, ``time_ms``, ``seq``, ``wall``, ``group`` and
``client_id``), so they work on a live cluster's ``cluster.events`` and on events read back
from the control endpoint alike. Drawing needs matplotlib (``pip install fakebroker[charts]``),
imported only when a picture is asked for.

>>> from fakebroker.core.events import make
>>> events = [make("member_joined", 1, group="g", member="c1-1", instance=None, client_id="c1", time_ms=1000, seq=1),
...           make("generation_started", 1, group="g", generation=1, members=1, time_ms=1250, seq=2)]
>>> print(timeline_text(events))
   time  broker  event               group  client  details
+0.000s  b1      member_joined       g      c1      member=c1-1
+0.250s  b1      generation_started  g      -       generation=1 members=1
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .drawing import CHARTS_MISSING, draw_timeline
from .lanes import Lane, Marker, Segment, Swimlanes, swimlanes
from .text import CLUSTER_WIDE, NOISE, format_assignment, select_events, timeline_text

if TYPE_CHECKING:  # the events' type only: a timeline needs no running cluster
    from ..cluster import Event

__all__ = [
    "CHARTS_MISSING",
    "CLUSTER_WIDE",
    "NOISE",
    "Lane",
    "Marker",
    "Segment",
    "Swimlanes",
    "draw_timeline",
    "format_assignment",
    "select_events",
    "swimlanes",
    "timeline",
    "timeline_text",
    "write_timeline",
]


def _events_of(source: Any) -> list[Event]:
    """A cluster (anything with ``events``) or the events themselves."""
    events = getattr(source, "events", source)
    return list(events)


def _dropped_note(source: Any) -> str:
    """A first line saying how many older events a cluster's bounded log dropped, if any."""
    dropped = getattr(source, "events_dropped", 0)
    return f"({dropped} earlier events dropped: the event log keeps the newest only)\n" if dropped else ""


def timeline(
    source: Any,
    group: str | None = None,
    *,
    kinds: Collection[str] | None = None,
    include_noise: bool = False,
    ledger: Any = None,
) -> str:
    """The text timeline of a cluster's events so far (or of one group's story); with a
    :class:`~fakebroker.testing.ledger.DeliveryLedger`, a ``processed_again`` line where its
    duplicates were re-read."""
    rereads = ledger.rereads() if ledger is not None else ()
    text = timeline_text(_events_of(source), group=group, kinds=kinds, include_noise=include_noise, rereads=rereads)
    return _dropped_note(source) + text


def write_timeline(
    source: Any, path: str | os.PathLike[str], group: str | None = None, *, title: str | None = None, ledger: Any = None
) -> Path:
    """Write a cluster's (or a list of events') timeline to ``path``: text for ``.txt``/``.log``,
    the swim-lane chart for ``.svg``/``.png``/``.pdf`` (needs ``fakebroker[charts]``); with a
    ledger, its duplicates marked where they were re-read. Returns the path."""
    path = Path(path)
    events: Iterable[Event] = _events_of(source)
    if path.suffix.lower() in (".svg", ".png", ".pdf"):
        return draw_timeline(events, path, group=group, title=title, until=time.time(), ledger=ledger)
    path.parent.mkdir(parents=True, exist_ok=True)
    rereads = ledger.rereads() if ledger is not None else ()
    path.write_text(_dropped_note(source) + timeline_text(events, group=group, rereads=rereads) + "\n")
    return path
