"""The Kafka releases fakebroker can pose as (``kafka_version``): which feature levels a freshly
formatted single-node KRaft broker of that release supports and finalizes. The API version
window of each release comes from its own message specs (:func:`protocol.specs.release_windows`).

Teams pin the release they run in production, so a client that relies on something newer
fails here as it would there: a 3.9 broker finalizes no ``transaction.version`` (clients use
transaction protocol 1) and no ``group.version``, and serves the versions Kafka 4.0 removed
(KIP-896); a 4.x broker refuses those.

Levels are those real brokers answer in ApiVersions, freshly formatted with default settings:
4.4.0 probed side by side in the conformance suite, 4.3.1 and 3.9.2 (static quorum voters, as
3.9's stock ``server.properties``) probed once from Maven Central's jars. ``share.version``
(KIP-932; level 2 adds the dead-letter queue, KIP-1191) is Kafka's: 4.4 supports 0-2 and
finalizes 2 (probed), 4.3 supports 0-1 and finalizes 1 (from its ``ShareVersion`` and
``Feature.defaultVersion``: level 1 needs metadata.version 4.2-IV0, level 2 came with 4.4), 3.9
has no such feature. ``streams.version`` (KIP-1071) is 4.4's: supported 0-1, finalized 1 (probed);
streams groups are served when it is finalized and ``group.coordinator.rebalance.protocols``
names ``streams``. 4.3 leaves it out here (streams groups are served as 4.4's only).
"""

from __future__ import annotations

from ..lazy_dataclasses import dataclass


@dataclass(frozen=True)
class Release:
    name: str
    supported: dict[str, tuple[int, int]]
    finalized: dict[str, int]


RELEASES: dict[str, Release] = {
    "4.4": Release(
        "4.4",
        supported={
            "metadata.version": (7, 33),
            "kraft.version": (0, 1),
            "transaction.version": (0, 2),
            "group.version": (0, 1),
            "eligible.leader.replicas.version": (0, 1),
            "share.version": (0, 2),
            "streams.version": (0, 1),
        },
        finalized={
            "metadata.version": 33,
            "kraft.version": 1,
            "transaction.version": 2,
            "group.version": 1,
            "eligible.leader.replicas.version": 1,
            "share.version": 2,
            "streams.version": 1,
        },
    ),
    "4.3": Release(
        "4.3",
        supported={
            "metadata.version": (7, 30),
            "kraft.version": (0, 1),
            "transaction.version": (0, 2),
            "group.version": (0, 1),
            "eligible.leader.replicas.version": (0, 1),
            "share.version": (0, 1),
        },
        finalized={
            "metadata.version": 30,
            "kraft.version": 1,
            "transaction.version": 2,
            "group.version": 1,
            "eligible.leader.replicas.version": 1,
            "share.version": 1,
        },
    ),
    "3.9": Release(
        "3.9",
        supported={"metadata.version": (1, 21), "kraft.version": (0, 1)},
        finalized={"metadata.version": 21},  # kraft.version is finalized only with `format --standalone`
    ),
}
DEFAULT_RELEASE = "4.4"


class UnknownRelease(ValueError):
    """A ``kafka_version`` fakebroker cannot pose as: the message names the valid ones."""


def release(name: str) -> Release:
    """The release called ``name`` (``"4.4"``, ``"4.3"``, ``"3.9"``; a patch level such as
    ``"3.9.2"`` is accepted and means its minor release)."""
    text = str(name).strip()
    key = ".".join(text.split(".")[:2])
    if key not in RELEASES or not all(part.isdigit() for part in text.split(".")):
        raise UnknownRelease(
            f"unknown kafka_version {name!r}; valid: {', '.join(RELEASES)} (default {DEFAULT_RELEASE})"
        )
    return RELEASES[key]
