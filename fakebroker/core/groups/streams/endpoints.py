"""Interactive queries: which partitions each member's endpoint (``application.server``) serves,
as the heartbeat's PartitionsByUserEndpoint tells every member."""

from __future__ import annotations

from .heartbeat import Endpoint
from .model import StreamsGroup, Task


def endpoints(group: StreamsGroup, requester: str, existing: dict[str, int]) -> tuple[Endpoint, ...]:
    """``buildEndpointToPartitions``: one entry per member with an endpoint, the requester last."""
    ordered = [m for m in group.members.values() if m.member_id != requester]
    if requester in group.members:
        ordered.append(group.members[requester])
    out = []
    for m in ordered:
        if m.user_endpoint is None:
            continue
        active = partitions(group, existing, m.assigned.active)
        standby = partitions(group, existing, m.assigned.standby | m.assigned.warmup)
        out.append((m.user_endpoint, active, standby))
    return tuple(out)


def partitions(group: StreamsGroup, existing: dict[str, int], tasks: frozenset[Task]) -> dict[str, list[int]]:
    """The source and repartition-source partitions ``tasks`` read (``existing``: topic -> partitions)."""
    if group.topology is None:
        return {}
    subs = group.topology.by_id()
    decided = group.configured.internal_counts if group.configured is not None else {}
    out: dict[str, set[int]] = {}
    for sub_id, p in tasks:
        sub = subs.get(sub_id)
        if sub is None:
            continue
        for topic in list(sub.source_topics) + [t.name for t in sub.repartition_source_topics]:
            count = existing.get(topic, decided.get(topic, 0))
            if p < count:
                out.setdefault(topic, set()).add(p)
    return {t: sorted(ps) for t, ps in sorted(out.items())}
