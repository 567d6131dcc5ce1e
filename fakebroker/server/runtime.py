"""State shared by every broker of one running cluster: the core state, the clock, event
listeners, and a signal for requests that wait for new data."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable

import anyio

from ..clock import RealClock
from ..core.cluster_state import ClusterState
from ..protocol.framing import DEFAULT_MAX_FRAME_SIZE

log = logging.getLogger("fakebroker")


@dataclass
class Event:
    """Something notable that happened, for logs, the CLI and tests."""

    kind: str
    broker: int | None
    details: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        inner = " ".join(f"{k}={v}" for k, v in self.details.items())
        where = f"broker {self.broker}: " if self.broker is not None else ""
        return f"{where}{self.kind} {inner}".rstrip()


class Runtime:
    def __init__(self, state: ClusterState, clock: RealClock, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE):
        self.state = state
        self.clock = clock
        self.max_frame_size = max_frame_size
        self.listeners: list[Callable[[Event], None]] = []
        self.events: list[Event] = []
        self._changed = anyio.Event()

    def emit(self, kind: str, broker: int | None = None, **details: Any) -> None:
        event = Event(kind, broker, details)
        self.events.append(event)
        log.debug("%s", event.describe())
        for listener in list(self.listeners):
            listener(event)

    def data_changed(self) -> None:
        """Wake every request waiting for data (Fetch long polls)."""
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_changed(self, deadline: float) -> None:
        """Until data changes or the loop's clock reaches ``deadline`` (anyio.current_time())."""
        with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
            await self._changed.wait()
