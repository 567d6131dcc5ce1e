"""The public facade: :class:`FakeCluster` and what tests use with it.

``facade.py`` composes the parts, each reaching the running cluster through one thread-safe
``proxy.py``: ``actions.py`` (brokers, leaders, coordinators, network cuts), ``topics.py``,
``clock.py`` (``cluster.clock``), ``faults.py`` (``cluster.faults``), ``views.py`` (group
snapshots), ``conditions.py`` and ``waiting.py`` (``wait_for``). It uses the server and the
core below it and none of its faces (``http``, ``timeline``, ``cli``, the pytest plugin).
"""

from __future__ import annotations

from . import conditions
from .actions import ClusterUsageError
from .facade import FakeCluster
from .views import GroupView, MemberView
from .waiting import WaitTimeout

__all__ = ["ClusterUsageError", "FakeCluster", "GroupView", "MemberView", "WaitTimeout", "conditions"]
