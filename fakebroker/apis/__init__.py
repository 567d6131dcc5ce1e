"""One module per API family. ``HANDLERS`` maps an API key to its handler and ``SUPPORTED``
to the versions this broker advertises in ApiVersions and accepts.

Ranges follow what a Kafka 4.3 broker advertises, widened downwards where the 3.9 specs let
older clients in (ListOffsets v0, CreateTopics v0-1, ...), and Produce advertised from v0 as
4.x does for old librdkafka (v0-2 are then answered UNSUPPORTED_VERSION per partition).
"""

from __future__ import annotations

from . import (api_versions, configs, create_partitions, create_topics, delete_records, delete_topics, describe_cluster,
               fetch, init_producer_id, list_offsets, metadata, offset_for_leader_epoch, produce)
from .context import NO_RESPONSE, Handler, RequestContext, Wait

HANDLERS: dict[int, Handler] = {
    0: produce.handle,
    1: fetch.handle,
    2: list_offsets.handle,
    3: metadata.handle,
    18: api_versions.handle,
    19: create_topics.handle,
    20: delete_topics.handle,
    21: delete_records.handle,
    22: init_producer_id.handle,
    23: offset_for_leader_epoch.handle,
    32: configs.describe,
    33: configs.alter,
    37: create_partitions.handle,
    44: configs.incremental_alter,
    60: describe_cluster.handle,
}

SUPPORTED: dict[int, tuple[int, int]] = {
    0: (0, 13),
    1: (4, 18),
    2: (0, 11),
    3: (0, 13),
    18: (0, 4),
    19: (0, 7),
    20: (0, 6),
    21: (0, 2),
    22: (0, 5),  # v6 is unstable in 4.3.1 and not advertised by Kafka either
    23: (0, 4),
    32: (0, 4),
    33: (0, 2),
    37: (0, 3),
    44: (0, 1),
    60: (0, 2),
}

__all__ = ["HANDLERS", "SUPPORTED", "NO_RESPONSE", "RequestContext", "Wait"]
