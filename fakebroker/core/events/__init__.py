"""What happened, as typed events in one ordered log.

``base.py`` holds what every event shares, ``cluster.py``, ``groups.py`` and
``transactions.py`` the kinds by what they are about, ``log.py`` the log, ``emitters.py`` the
stamps the group and transaction coordinators add, ``ring.py`` the bounded store under the log
and ``index.py`` the waits filed by the events that can answer them.

Every event kind is a frozen dataclass with its own fields; ``kind`` names it in snake case
(``member_joined``) for logs, the control endpoint and timelines. The core appends to one
:class:`EventLog` per cluster; the server, the console, the timeline, the control endpoint
and the pytest plugin all read that one log. The log stamps each event with its place
(``seq``), the cluster clock's time (``time_ms``) and the real time (``wall``); the group
coordinators place group events on the broker that coordinates their group and name the
client of a member, the transaction coordinator does the same for transactional ids.

Appending never calls out: whoever changes the core (the server after a request or a timer,
the facade after an action) tells listeners afterwards with :meth:`EventLog.take_new`.

>>> log = EventLog(now_ms=lambda: 5)
>>> e = log.append(MemberJoined(group="g", member="svc-0e9080ea-1111-4222-8333-444455556666", client_id="svc"))
>>> (e.seq, e.time_ms, e.kind, e.client_id)
(1, 5, 'member_joined', 'svc')
>>> e.describe()
'member_joined group=g member=svc-0e9080ea-1111-4222-8333-444455556666 instance=None client_id=svc'
"""

from __future__ import annotations

import copy

from .base import (
    KINDS,
    Event,
    detail_fields,
    event_kinds,
)
from .cluster import (
    BrokerStarted,
    BrokerStopped,
    ClientConnected,
    ClockAdvanced,
    ConfigsAltered,
    ConnectionClosed,
    FaultAdded,
    FaultFired,
    FaultRemoved,
    FaultsCleared,
    GroupConfigsAltered,
    HandlerError,
    LeaderMoved,
    NetworkCut,
    NetworkHealed,
    OffsetsExpired,
    PartitionsCreated,
    ProduceRejected,
    ProducerId,
    RecordsDeleted,
    RequestError,
    RetentionApplied,
    ScramCredentialsAltered,
    SegmentsDeleted,
    TopicCreated,
    TopicDeleted,
    TopicRestored,
)
from .emitters import EventSink, GroupEvents, TxnEvents
from .groups import (
    AssignmentDelivered,
    GenerationStarted,
    GroupConverted,
    GroupCreated,
    GroupDeleted,
    GroupEpochBumped,
    GroupEvent,
    GroupForgotten,
    GroupLoaded,
    GroupStateChanged,
    GroupUnloaded,
    LeaderAssigned,
    MemberEvent,
    MemberExpired,
    MemberFenced,
    MemberIdRequired,
    MemberJoined,
    MemberLeft,
    MemberReconciled,
    MemberRemoved,
    OffsetCommitted,
    OffsetDeleted,
    RebalanceStarted,
    StaticMemberRejoined,
    TargetAssignmentComputed,
)
from .log import (
    EventLog,
    make,
)
from .security import (
    AccessDenied,
    AclsCreated,
    AclsDeleted,
    AuthenticationFailed,
    ClientAuthenticated,
    TokenCreated,
    TokenExpired,
    TokenRenewed,
)
from .share import (
    ShareOffsetsDeleted,
    ShareOffsetsReset,
    ShareRecordsAcknowledged,
    ShareRecordsAcquired,
    ShareRecordsArchived,
    ShareRecordsReleased,
)
from .transactions import (
    TxnAborted,
    TxnBegan,
    TxnCommitted,
    TxnEvent,
    TxnExpired,
    TxnFenced,
    TxnForgotten,
    TxnOffsetsAdded,
    TxnPartitionsAdded,
    TxnPrepared,
    TxnTimedOut,
)

# Every kind says it is frozen, as Event's __setattr__ makes it (dataclass made them without
# that flag, which it would check against their bases): a frozen dataclass may subclass one.
_FROZEN = copy.copy(Event.__dataclass_params__)  # type: ignore[attr-defined]  # dataclasses' private flags: not typed
_FROZEN.frozen = True
for _cls in (Event, *KINDS.values()):
    _cls.__dataclass_params__ = _FROZEN  # type: ignore[attr-defined]  # dataclasses' private flags: not typed

__all__ = [
    "AccessDenied",
    "AclsCreated",
    "AclsDeleted",
    "AuthenticationFailed",
    "ClientAuthenticated",
    "ShareOffsetsDeleted",
    "ShareOffsetsReset",
    "ShareRecordsAcknowledged",
    "ShareRecordsAcquired",
    "ShareRecordsArchived",
    "ShareRecordsReleased",
    "EventSink",
    "GroupEvents",
    "TxnEvents",
    "AssignmentDelivered",
    "BrokerStarted",
    "BrokerStopped",
    "ClientConnected",
    "ClockAdvanced",
    "ConfigsAltered",
    "ConnectionClosed",
    "Event",
    "EventLog",
    "FaultAdded",
    "FaultFired",
    "FaultRemoved",
    "FaultsCleared",
    "GenerationStarted",
    "GroupConfigsAltered",
    "GroupConverted",
    "GroupCreated",
    "GroupDeleted",
    "GroupEpochBumped",
    "GroupEvent",
    "GroupForgotten",
    "GroupLoaded",
    "GroupStateChanged",
    "GroupUnloaded",
    "HandlerError",
    "KINDS",
    "LeaderAssigned",
    "LeaderMoved",
    "MemberEvent",
    "MemberExpired",
    "MemberFenced",
    "MemberIdRequired",
    "MemberJoined",
    "MemberLeft",
    "MemberReconciled",
    "MemberRemoved",
    "NetworkCut",
    "NetworkHealed",
    "OffsetCommitted",
    "OffsetDeleted",
    "OffsetsExpired",
    "PartitionsCreated",
    "ProduceRejected",
    "ProducerId",
    "RebalanceStarted",
    "RecordsDeleted",
    "RequestError",
    "RetentionApplied",
    "ScramCredentialsAltered",
    "SegmentsDeleted",
    "StaticMemberRejoined",
    "TargetAssignmentComputed",
    "TopicCreated",
    "TopicDeleted",
    "TokenCreated",
    "TokenExpired",
    "TokenRenewed",
    "TopicRestored",
    "TxnAborted",
    "TxnBegan",
    "TxnCommitted",
    "TxnEvent",
    "TxnFenced",
    "TxnExpired",
    "TxnForgotten",
    "TxnOffsetsAdded",
    "TxnPartitionsAdded",
    "TxnPrepared",
    "TxnTimedOut",
    "detail_fields",
    "event_kinds",
    "make",
]
