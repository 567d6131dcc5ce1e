"""Who records an event stamps what it is about, as only it knows: the group coordinators
place a group's events on the broker that coordinates the group and name a member's client,
the transaction coordinator places a transactional id's events on its coordinator. Each
emitter hands the log one copy with its stamps (``EventLog.append``), so the log itself needs
no way back into the cluster's state.

>>> log = EventLog(now_ms=lambda: 5)
>>> groups = GroupEvents(log, coordinator_of=lambda group: 1)
>>> e = groups.append(MemberJoined(group="g", member="svc-0e9080ea-1111-4222-8333-444455556666", instance=None))
>>> (e.seq, e.time_ms, e.broker, e.client_id)
(1, 5, 1, 'svc')
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

from .base import _MEMBER_ID, Event
from .groups import GroupEvent, MemberEvent, MemberJoined
from .log import EventLog
from .transactions import TxnEvent

T = TypeVar("T")


class EventSink(Protocol):
    """What a coordinator records its events into: the log, or an emitter in front of it."""

    def append(self, event: Event, now_ms: int | None = None) -> Event: ...


class GroupEvents:
    """Where the group coordinators record events (in place of the log itself).

    :param coordinator_of: the broker coordinating a group, -1 when none is placed yet.
    :param member_client: a live member's client id, if it has one.
    """

    def __init__(
        self,
        log: EventLog,
        coordinator_of: Callable[[str], int] = lambda group: -1,
        member_client: Callable[[str, str], str | None] = lambda group, member: None,
    ):
        self.log = log
        self._coordinator_of = coordinator_of
        self._member_client = member_client
        # member id -> client id, kept after it leaves; as many as the log keeps events, the oldest
        # joins dropped first (issue 33: each member that ever joined stayed)
        self._member_clients: dict[str, str] = {}
        self._clients_renewed = True  # no member joined since the last renew()

    def append(self, event: Event, now_ms: int | None = None) -> Event:
        stamps: dict[str, Any] = {}
        if isinstance(event, GroupEvent) and event.broker is None:
            broker = self._coordinator_of(event.group)
            if broker >= 0:
                stamps["broker"] = broker
        if isinstance(event, MemberEvent):
            client = event.client_id
            if isinstance(event, MemberJoined) and client is not None:
                clients = self._member_clients
                clients[event.member] = client
                self._clients_renewed = False
                capacity = self.log.capacity
                if capacity is not None and len(clients) > capacity:
                    del clients[next(iter(clients))]  # the oldest join, older than every event kept
            elif client is None and "client_id" in event.__dataclass_fields__:
                found = self.client_of(event.group, event.member)
                if found is not None:
                    stamps["client_id"] = found
        return self.log.append(event, now_ms, stamps)

    def renew(self, between: Callable[[], T]) -> T:
        """Make the member -> client ids kept again, as ``EventLog.renew`` makes its events:
        pickled, dropped, ``between()`` called (its answer returned), unpickled. The members
        of a burst of joins left theirs (a hundred with a small log), made among the burst's
        objects."""
        if self._clients_renewed:
            return between()
        self._clients_renewed = True
        blob = pickle.dumps(self._member_clients, pickle.HIGHEST_PROTOCOL)  # strings only
        self._member_clients = {}
        try:
            return between()
        finally:
            joined = self._member_clients  # meanwhile (none, unless between records events)
            clients: dict[str, str] = pickle.loads(blob)
            del blob
            names: dict[str, str] = {}  # a client id once, whatever its members
            self._member_clients = {member: names.setdefault(client, client) for member, client in clients.items()}
            self._member_clients.update(joined)

    def client_of(self, group_id: str, member_id: str) -> str | None:
        if member_id in self._member_clients:
            return self._member_clients[member_id]
        found = self._member_client(group_id, member_id)
        if found is not None:
            return found
        # A member id is "<client id>-<uuid>" (or "<instance id>-<uuid>" for static members).
        match = _MEMBER_ID.match(member_id)
        return match.group(1) if match else None

    def __iter__(self) -> Iterator[Event]:
        return iter(self.log)


class TxnEvents:
    """Where the transaction coordinator records events: a transactional id's are placed on the
    broker coordinating it (``coordinator_of``: -1 when none is placed yet)."""

    def __init__(self, log: EventLog, coordinator_of: Callable[[str], int] = lambda tid: -1):
        self.log = log
        self._coordinator_of = coordinator_of

    def append(self, event: Event, now_ms: int | None = None) -> Event:
        if isinstance(event, TxnEvent) and event.broker is None:
            broker = self._coordinator_of(event.transactional_id)
            if broker >= 0:
                return self.log.append(event, now_ms, {"broker": broker})
        return self.log.append(event, now_ms)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.log)
