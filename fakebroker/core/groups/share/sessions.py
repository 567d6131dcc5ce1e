"""Share sessions (KIP-932's ShareSessionCache): one per (group, member) per broker, with the
epoch checks of ShareFetch and ShareAcknowledge. A session remembers the partitions a member
reads, so a later ShareFetch names only what changed; the connection that opened it is kept,
because closing that connection releases the member's records."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import field

from ....lazy_dataclasses import dataclass
from ....protocol.error_codes import ErrorCode as E

INT32_MAX = 2**31 - 1
OPEN_EPOCH = 0
CLOSE_EPOCH = -1

SessionKey = tuple[str, str]  # group id, member id
SessionPartition = tuple[uuid.UUID, int]  # topic id, partition


def next_epoch(epoch: int) -> int:
    return 1 if epoch == INT32_MAX else epoch + 1


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    connection: str
    epoch: int = 1  # the epoch the next request must carry
    partitions: list[SessionPartition] = field(default_factory=list)  # in the order they were added

    @property
    def key(self) -> SessionKey:
        return (self.group_id, self.member_id)


class ShareSessions:
    """The sessions of one broker (Kafka keeps a cache per broker; the key names the broker)."""

    def __init__(self, max_sessions: Callable[[], int]):
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[int, str, str], ShareSession] = {}

    def get(self, broker: int, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.get((broker, group_id, member_id))

    def for_fetch(
        self,
        broker: int,
        group_id: str,
        member_id: str,
        epoch: int,
        connection: str,
        added: list[SessionPartition],
        forgotten: list[SessionPartition],
        has_acks: bool,
    ) -> tuple[E, ShareSession | None]:
        """ShareFetch's session step (SharePartitionManager ``newContext``)."""
        key = (broker, group_id, member_id)
        session = self.sessions.get(key)
        if epoch == OPEN_EPOCH:
            if has_acks:
                return E.INVALID_REQUEST, None
            if session is None and sum(1 for k in self.sessions if k[0] == broker) >= self.max_sessions():
                return E.SHARE_SESSION_LIMIT_REACHED, None
            # a session of the same key is replaced; its records stay acquired by the member
            session = self.sessions[key] = ShareSession(group_id, member_id, connection)
            session.partitions = list(dict.fromkeys(added))
            return E.NONE, session
        if session is None:
            return E.SHARE_SESSION_NOT_FOUND, None
        if epoch == CLOSE_EPOCH:
            return E.NONE, session
        if epoch != session.epoch:
            return E.INVALID_SHARE_SESSION_EPOCH, None
        gone = set(forgotten)
        kept = [p for p in session.partitions if p not in gone]
        session.partitions = list(dict.fromkeys(kept + [p for p in added if p not in gone]))
        session.epoch = next_epoch(session.epoch)
        return E.NONE, session

    def for_acknowledge(self, broker: int, group_id: str, member_id: str, epoch: int) -> tuple[E, ShareSession | None]:
        """ShareAcknowledge's session step: it cannot open a session."""
        if epoch == OPEN_EPOCH:
            return E.INVALID_SHARE_SESSION_EPOCH, None
        session = self.sessions.get((broker, group_id, member_id))
        if session is None:
            return E.SHARE_SESSION_NOT_FOUND, None
        if epoch == CLOSE_EPOCH:
            return E.NONE, session
        if epoch != session.epoch:
            return E.INVALID_SHARE_SESSION_EPOCH, None
        session.epoch = next_epoch(session.epoch)
        return E.NONE, session

    def close(self, broker: int, session: ShareSession) -> None:
        self.sessions.pop((broker, session.group_id, session.member_id), None)

    def of_connection(self, broker: int, connection: str) -> list[ShareSession]:
        return [s for k, s in self.sessions.items() if k[0] == broker and s.connection == connection]

    def of_group(self, group_id: str) -> list[ShareSession]:
        return [s for s in self.sessions.values() if s.group_id == group_id]
