"""The public facade: :class:`FakeCluster` and what tests use with it.

``facade.py`` composes the parts, each reaching the running cluster through one thread-safe
``proxy.py`` (which refuses calls before the start and after the stop with ``errors.py``'s
``ClusterNotRunning``): ``actions.py`` (brokers, leaders, coordinators, network cuts),
``topics.py``, ``clock.py`` (``cluster.clock``), ``faults.py`` (``cluster.faults``),
``views.py`` (group snapshots), ``shares.py`` (share group snapshots: members and records in
flight),
``conditions.py`` and ``waiting.py`` (``wait_for``). It uses the server and the
core below it and none of its faces (``http``, ``timeline``, ``cli``, ``testing``, the pytest
plugin).

This package is all a face may import of fakebroker: the names below (the cluster, the views
and events it hands out, the errors it raises), ``conditions`` (what ``wait_for`` waits on)
and ``settings`` (what a cluster can be given, checked before it starts).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..core.cluster_state import TopicError
from ..core.events import Event
from ..protocol.error_codes import ErrorCode
from .errors import ClusterNotRunning, ClusterUsageError
from .facade import FakeCluster
from .waiting import WaitTimeout

if TYPE_CHECKING:
    from ..storage import DataDirError
    from . import conditions, settings
    from .shares import InFlightView, ShareGroupView, ShareMemberView, SharePartitionView
    from .views import GroupView, MemberView, TopicView

# Imported on first use (a cluster that is only started needs none of them): name -> module.
_LAZY = {
    "DataDirError": "..storage",
    "InFlightView": ".shares",
    "ShareGroupView": ".shares",
    "ShareMemberView": ".shares",
    "SharePartitionView": ".shares",
    "GroupView": ".views",
    "MemberView": ".views",
    "TopicView": ".views",
}

__all__ = [
    "ClusterNotRunning",
    "ClusterUsageError",
    "DataDirError",
    "ErrorCode",
    "Event",
    "FakeCluster",
    "GroupView",
    "InFlightView",
    "MemberView",
    "ShareGroupView",
    "ShareMemberView",
    "SharePartitionView",
    "TopicError",
    "TopicView",
    "WaitTimeout",
    "conditions",
    "settings",
]


def __getattr__(name: str) -> Any:
    if name in ("conditions", "settings"):
        return importlib.import_module(f".{name}", __name__)
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
