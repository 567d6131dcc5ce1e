"""What the share-group APIs (keys 76-79, 83-87, 90-92) share: the ``share.version`` gate and
the member id check Kafka's request handler makes before anything else."""

from __future__ import annotations

from ..core.cluster_state import ClusterState


def share_enabled(cluster: ClusterState) -> bool:
    """Share groups are on from ``share.version`` 1 (Kafka 4.4 finalizes 2 on a new cluster)."""
    return cluster.features.finalized.get("share.version", 0) >= 1


def member_id_valid(member_id: str | None) -> bool:
    """Apis ``isMemberIdValid``: set, not empty, at most 36 characters."""
    return member_id is not None and 0 < len(member_id) <= 36


# Kafka's default messages (``Errors``) that share-group answers carry with their codes
UNKNOWN_TOPIC_OR_PARTITION_MESSAGE = "This server does not host this topic-partition."
INVALID_GROUP_ID_MESSAGE = "The group id is invalid."
UNKNOWN_SERVER_ERROR_MESSAGE = "The server experienced an unexpected error when processing the request."
