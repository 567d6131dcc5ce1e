"""The coordinator's live state as the subprocess-driven group tests (Java, kafkajs,
franz-go) read it: snapshots taken on the cluster's own thread."""

from __future__ import annotations

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import data as consumer_protocol


def group_off_first_broker(cluster: FakeCluster, prefix: str) -> str:
    """A group id whose coordinator is a broker other than 0 (the first bootstrap server)."""
    for i in range(100):
        gid = f"{prefix}-{i}"
        if cluster.coordinator(gid) > 0:
            return gid
    raise AssertionError("no group id lands off broker 0")


def live_group(cluster: FakeCluster, gid: str) -> dict | None:
    """A consistent snapshot of the group (taken on the cluster's thread)."""

    def read():
        g = cluster.state.groups.classic.groups.get(gid)
        if g is None:
            return None
        return {
            "state": g.state.value,
            "generation": g.generation_id,
            "protocol_type": g.protocol_type,
            "protocol": g.protocol_name,
            "leader": g.leader_id,
            "static": dict(g.static_members),
            "members": {
                m.member_id: {
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "instance": m.group_instance_id,
                    "assignment": consumer_protocol.assignment_dict(m.assignment) if m.assignment else {},
                }
                for m in g.members.values()
            },
        }

    return cluster.call(read)


def live_offsets(cluster: FakeCluster, gid: str, topic: str = "orders") -> dict[int, int]:
    """Committed offsets of ``topic`` by partition."""
    return cluster.call(
        lambda: {p: o.offset for (t, p), o in cluster.state.groups.offsets.offsets.get(gid, {}).items() if t == topic}
    )


def events(cluster: FakeCluster, kind: str, gid: str) -> list[dict]:
    """Details of every ``kind`` event of group ``gid``."""
    return [e.details for e in cluster.events if e.kind == kind and e.details.get("group") == gid]
