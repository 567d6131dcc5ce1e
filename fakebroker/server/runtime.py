"""State shared by every broker of one running cluster: the core state, the clock, event
listeners, and a signal for requests that wait for new data."""

from __future__ import annotations

import fnmatch
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import anyio

from ..clock import Clock
from ..core.cluster_state import ClusterState
from ..faults import Faults
from ..protocol.framing import DEFAULT_MAX_FRAME_SIZE

log = logging.getLogger("fakebroker")


@dataclass
class Event:
    """Something notable that happened, for logs, the CLI and tests.

    Every event of a cluster lands in one ordered log: ``seq`` is its place, ``time_ms`` the
    cluster clock's time (virtual when the clock is), ``wall`` the real time. ``group`` and
    ``client_id`` are filled when the event concerns one (a member's client id is looked up).
    """

    kind: str
    broker: int | None
    details: dict[str, Any] = field(default_factory=dict)
    time_ms: int = 0
    seq: int = 0
    wall: float = 0.0

    @property
    def group(self) -> str | None:
        return self.details.get("group")

    @property
    def client_id(self) -> str | None:
        return self.details.get("client_id")

    def describe(self) -> str:
        inner = " ".join(f"{k}={v}" for k, v in self.details.items())
        where = f"broker {self.broker}: " if self.broker is not None else ""
        return f"{where}{self.kind} {inner}".rstrip()

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (the control endpoint's ``GET /events``)."""
        return {"seq": self.seq, "time_ms": self.time_ms, "wall": self.wall, "kind": self.kind, "broker": self.broker,
                "group": self.group, "client_id": self.client_id,
                "details": {k: v if isinstance(v, (int, float, str, bool, type(None), list, dict)) else str(v)
                            for k, v in self.details.items()}}


class Runtime:
    def __init__(self, state: ClusterState, clock: Clock, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE):
        self.state = state
        self.clock = clock
        self.max_frame_size = max_frame_size
        self.listeners: list[Callable[[Event], None]] = []
        self.events: list[Event] = []
        self._changed = anyio.Event()
        self._event_added = anyio.Event()
        self._member_clients: dict[str, str] = {}  # member id -> client id, kept after it leaves
        self.faults = Faults()
        self.cuts: set[tuple[str, int | None]] = set()  # (client id glob, broker or None for all)

    def is_cut_off(self, client_id: str | None, broker: int) -> bool:
        """Whether a network partition separates this client from this broker."""
        return bool(self.cuts) and any(b in (None, broker) and fnmatch.fnmatchcase(client_id or "", pattern)
                                       for pattern, b in self.cuts)

    def emit(self, kind: str, broker: int | None = None, **details: Any) -> None:
        if kind == "member_joined" and details.get("client_id") is not None:
            self._member_clients[details["member"]] = details["client_id"]
        if "member" in details and "client_id" not in details:
            client = self._client_of(details.get("group"), details["member"])
            if client is not None:
                details["client_id"] = client
        event = Event(kind, broker, details, self.clock.now_ms(), len(self.events) + 1, time.time())
        self.events.append(event)
        log.debug("%s", event.describe())
        for listener in list(self.listeners):
            listener(event)
        self._event_added.set()
        self._event_added = anyio.Event()

    def _client_of(self, group_id: str | None, member_id: str) -> str | None:
        if member_id in self._member_clients:
            return self._member_clients[member_id]
        group = self.state.groups.groups.get(group_id) if group_id else None
        member = group.members.get(member_id) if group is not None else None
        if member is not None:
            return member.client_id
        # A member id is "<client id>-<uuid>" (or "<instance id>-<uuid>" for static members).
        head, sep, tail = str(member_id).rpartition("-")
        return head if sep and len(tail) == 36 else None

    async def wait_event(self, timeout: float) -> None:
        """Until the next event or ``timeout`` seconds."""
        with anyio.move_on_after(timeout):
            await self._event_added.wait()

    def data_changed(self) -> None:
        """Wake every request waiting for data (Fetch long polls)."""
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_changed(self, deadline: float) -> None:
        """Until data changes or the loop's clock reaches ``deadline`` (anyio.current_time())."""
        with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
            await self._changed.wait()
