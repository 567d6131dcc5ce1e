"""One module per API family: each declares its API key, versions and handler with
``registry.api(...)``, and the few facts about it the server acts on (acks=0 gets no answer,
cheap to decode on the loop, the answer to a version too new, the byte-rate quota it counts
against); importing this package imports them all into ``REGISTRY``.

A handler gets a typed request and a :class:`RequestContext`, calls the core, and returns a
typed response (or a Wait/Parked for answers that come later). Handlers import the core and
the protocol, never the server.
"""

from __future__ import annotations

from . import (  # noqa: F401
    acls,
    add_offsets_to_txn,
    add_partitions_to_txn,
    api_versions,
    client_quotas,
    configs,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_partitions,
    create_topics,
    delegation_tokens,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_log_dirs,
    describe_quorum,
    describe_topic_partitions,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    group_admin,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_config_resources,
    list_offsets,
    metadata,
    offset_commit,
    offset_fetch,
    offset_for_leader_epoch,
    partition_reassignments,
    produce,
    sasl,
    scram_credentials,
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
    share_group_offsets,
    share_group_state,
    streams_group_describe,
    streams_group_heartbeat,
    streams_group_topology_description,
    sync_group,
    transaction_admin,
    txn_offset_commit,
    update_features,
    write_txn_markers,
)
from .context import NO_RESPONSE, Handler, RequestContext, Wait
from .registry import REGISTRY, Api, dispatch

HANDLERS: dict[int, Handler] = {key: declared.handle for key, declared in sorted(REGISTRY.items())}
SUPPORTED: dict[int, tuple[int, int]] = {key: (a.min_version, a.max_version) for key, a in sorted(REGISTRY.items())}

__all__ = ["Api", "HANDLERS", "NO_RESPONSE", "REGISTRY", "RequestContext", "SUPPORTED", "Wait", "dispatch"]
