"""What a cluster can be given, for the faces that check it before one starts (the ``serve`` and
``run`` commands, their config file, the control endpoint): the Kafka releases it can pose as,
feature levels, broker and topic settings, topic names, fault rules and the names they use,
each checked as :class:`FakeCluster` checks it, so a face refuses in its own words what the
cluster would refuse. The names come from the layers below the facade; a face imports them
from here and nothing below ``fakebroker.cluster``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.configs import start_setting_error
from ..core.events.ring import DEFAULT_CAPACITY
from ..core.features import FeatureError, Features
from ..core.releases import DEFAULT_RELEASE, RELEASES, Release, UnknownRelease, release
from ..core.topics import MAX_PARTITIONS_PER_REQUEST, topic_name_error
from ..faults import ACTIONS, Faults
from ..protocol.messages import api_keys
from ..protocol.suggest import close_matches
from ..server.broker import advertised_for
from ..server.security import PROTOCOLS
from .checks import PARTITIONS_RULE, TOPIC_NAME_RULE, check_options
from .listeners import listener_specs
from .security import check_security

DEFAULT_EVENT_LOG_SIZE = DEFAULT_CAPACITY  # events a cluster's log keeps (``event_log_size``)
FAULT_ACTIONS = ACTIONS  # what a fault rule can do (``action=``) -> what that does

__all__ = [
    "listener_specs",
    "DEFAULT_EVENT_LOG_SIZE",
    "DEFAULT_RELEASE",
    "FAULT_ACTIONS",
    "MAX_PARTITIONS_PER_REQUEST",
    "PARTITIONS_RULE",
    "PROTOCOLS",
    "RELEASES",
    "TOPIC_NAME_RULE",
    "FeatureError",
    "Release",
    "UnknownRelease",
    "advertised_for",
    "api_keys",
    "check_fault_rule",
    "check_feature",
    "check_options",
    "check_security",
    "close_matches",
    "release",
    "start_setting_error",
    "topic_name_error",
]


def check_feature(name: str, level: int, kafka_version: str = DEFAULT_RELEASE) -> None:
    """A finalized feature level (``features={name: level}``) that a broker of this release
    supports; :class:`FeatureError` naming the known features or the valid levels otherwise."""
    posed = release(kafka_version)
    Features(dict(posed.supported), dict(posed.finalized)).set(name, level)


def check_fault_rule(rule: Mapping[str, Any]) -> None:
    """A fault rule given as the keyword arguments of ``cluster.faults.add``: ``TypeError`` or
    ``ValueError`` naming what is misspelt or out of range, before any cluster runs."""
    Faults().add(**rule)
