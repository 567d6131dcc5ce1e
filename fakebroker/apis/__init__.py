"""One module per API family. ``HANDLERS`` maps an API key to its handler and ``SUPPORTED``
to the versions this broker advertises in ApiVersions and accepts.

Ranges follow what a Kafka 4.3 broker advertises, widened downwards where the 3.9 specs let
older clients in (ListOffsets v0, CreateTopics v0-1, ...), and Produce advertised from v0 as
4.x does for old librdkafka (v0-2 are then answered UNSUPPORTED_VERSION per partition).
"""

from __future__ import annotations

from . import (api_versions, configs, create_partitions, create_topics, delete_records, delete_topics, describe_cluster,
               fetch, find_coordinator, group_admin, heartbeat, init_producer_id, join_group, leave_group, list_offsets,
               metadata, offset_commit, offset_fetch, offset_for_leader_epoch, produce, sync_group)
from .context import NO_RESPONSE, Handler, RequestContext, Wait

HANDLERS: dict[int, Handler] = {
    0: produce.handle,
    1: fetch.handle,
    2: list_offsets.handle,
    3: metadata.handle,
    8: offset_commit.handle,
    9: offset_fetch.handle,
    10: find_coordinator.handle,
    11: join_group.handle,
    12: heartbeat.handle,
    13: leave_group.handle,
    14: sync_group.handle,
    15: group_admin.describe,
    16: group_admin.list_groups,
    18: api_versions.handle,
    19: create_topics.handle,
    20: delete_topics.handle,
    21: delete_records.handle,
    22: init_producer_id.handle,
    23: offset_for_leader_epoch.handle,
    32: configs.describe,
    33: configs.alter,
    37: create_partitions.handle,
    42: group_admin.delete_groups,
    44: configs.incremental_alter,
    47: group_admin.offset_delete,
    60: describe_cluster.handle,
}

SUPPORTED: dict[int, tuple[int, int]] = {
    0: (0, 13),
    1: (4, 18),
    2: (0, 11),
    3: (0, 13),
    8: (0, 10),  # v10 names topics by id
    9: (0, 10),
    10: (0, 6),
    11: (0, 9),
    12: (0, 4),
    13: (0, 5),
    14: (0, 5),
    15: (0, 6),
    16: (0, 5),
    18: (0, 4),
    19: (0, 7),
    20: (0, 6),
    21: (0, 2),
    22: (0, 5),  # v6 is unstable in 4.3.1 and not advertised by Kafka either
    23: (0, 4),
    32: (0, 4),
    33: (0, 2),
    37: (0, 3),
    42: (0, 2),
    44: (0, 1),
    47: (0, 0),
    60: (0, 2),
}

__all__ = ["HANDLERS", "SUPPORTED", "NO_RESPONSE", "RequestContext", "Wait"]
