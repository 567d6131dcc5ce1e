"""Online migration between the group protocols (``group.consumer.migration.policy``): a
classic group becomes a consumer group when a KIP-848 member joins it, and back when only
classic members are left (GroupMetadataManager convertToConsumerGroup / convertToClassicGroup)."""

from __future__ import annotations

from ...protocol import data
from ...protocol.errors import DecodeError
from ..configs import BrokerConfig
from .classic.coordinator import GroupCoordinator
from .classic.model import GroupState, Member
from .consumer.coordinator import ConsumerCoordinator
from .consumer.model import ConsumerGroup, ConsumerMember


def upgrade(classic_groups: GroupCoordinator, consumer_groups: ConsumerCoordinator, group_id: str, now_ms: int) -> bool:
    """A KIP-848 member joins a classic group: a Stable ``consumer`` group becomes a consumer
    group whose members are classic members keeping their assignments. False when the policy
    or the group's state does not allow it."""
    classic = classic_groups.groups.get(group_id)
    if (
        classic is None
        or not consumer_groups.migration_allows("upgrade")
        or classic.protocol_type != "consumer"
        or classic.state != GroupState.STABLE
    ):
        return False
    members = []
    for m in classic.members.values():
        try:
            version, subscription = data.decode_versioned(data.SUBSCRIPTION, m.metadata(classic.protocol_name))
            assigned = {t: set(ps) for t, ps in data.assignment_dict(m.assignment).items()}
        except (DecodeError, ValueError):
            return False  # a member that does not speak the consumer protocol: no upgrade
        member = ConsumerMember(
            m.member_id,
            m.group_instance_id,
            None,
            m.client_id,
            m.client_host,
            m.rebalance_timeout_ms,
            tuple(sorted(subscription.topics)),
            classic_protocols=list(m.protocols),
            session_timeout_ms=m.session_timeout_ms,
            classic_version=version,
        )
        members.append((member, assigned))
    classic_groups.hand_over(group_id)
    consumer_groups.adopt_classic(now_ms, group_id, classic.generation_id, members)
    return True


def downgrade(
    classic_groups: GroupCoordinator,
    consumer_groups: ConsumerCoordinator,
    config: BrokerConfig,
    group: ConsumerGroup,
    now_ms: int,
) -> None:
    """Only classic members are left in a consumer group: it becomes a classic group again and
    rebalances, if the policy allows."""
    if not consumer_groups.migration_allows("downgrade"):
        return
    consumer_groups.release(group.group_id, now_ms)
    members = [
        Member(
            m.member_id,
            m.instance_id,
            m.client_id,
            m.client_host,
            m.rebalance_timeout_ms,
            m.session_timeout_ms or consumer_groups.session_timeout_ms(group.group_id),
            "consumer",
            list(m.classic_protocols or []),
            assignment=data.encode_assignment(
                {t: sorted(ps) for t, ps in m.assigned.items()}, version=min(m.classic_version, 3)
            ),
        )
        for m in group.members.values()
    ]
    classic_groups.adopt(group.group_id, members, group.group_epoch, None, now_ms)
