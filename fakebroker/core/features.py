"""The cluster's feature levels, as ApiVersions reports them (KIP-584).

Clients read them: a Kafka 4.x Java producer uses transaction version 2 (KIP-890: no
AddPartitionsToTxn, an epoch bump at every EndTxn) only when the finalized
``transaction.version`` is 2 or more, with a finalized-features epoch of 0 or more. The
levels are those a freshly formatted Kafka 4.4.0 broker reports (metadata.version 33), probed
side by side; set ``transaction.version`` to 1 to make clients use the older protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SUPPORTED: dict[str, tuple[int, int]] = {
    "metadata.version": (7, 33),
    "kraft.version": (0, 1),
    "transaction.version": (0, 2),
    "group.version": (0, 1),
    "eligible.leader.replicas.version": (0, 1),
}

# share.version (0-2) and streams.version (0-1), which Kafka 4.4 also finalizes, are left out:
# their APIs (share groups, streams groups) are not served here, and a client that saw them
# finalized would try them.
FINALIZED: dict[str, int] = {
    "metadata.version": 33,
    "kraft.version": 1,
    "transaction.version": 2,
    "group.version": 1,
    "eligible.leader.replicas.version": 1,
}


class FeatureError(ValueError):
    """A level the broker does not support: the message names what is valid."""


@dataclass
class Features:
    supported: dict[str, tuple[int, int]] = field(default_factory=lambda: dict(SUPPORTED))
    finalized: dict[str, int] = field(default_factory=lambda: dict(FINALIZED))
    epoch: int = 1  # Kafka reports the offset of the metadata record; any value >= 0 means "known"

    def set(self, name: str, level: int) -> None:
        """Finalize ``name`` at ``level`` (what ``kafka-features upgrade/downgrade`` does)."""
        if name not in self.supported:
            raise FeatureError(f"unknown feature {name!r}; known: {', '.join(sorted(self.supported))}")
        lo, hi = self.supported[name]
        if not lo <= level <= hi:
            raise FeatureError(f"{name} supports levels {lo}..{hi}, not {level}")
        self.finalized[name] = level
        self.epoch += 1

    @property
    def transaction_version(self) -> int:
        return self.finalized.get("transaction.version", 0)
