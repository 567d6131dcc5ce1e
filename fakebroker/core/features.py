"""The cluster's feature levels, as ApiVersions reports them (KIP-584).

Clients read them: a Kafka 4.x Java producer uses transaction version 2 (KIP-890: no
AddPartitionsToTxn, an epoch bump at every EndTxn) only when the finalized
``transaction.version`` is 2 or more, with a finalized-features epoch of 0 or more. The
default levels are those of the release the cluster poses as (:mod:`.releases`: Kafka 4.4.0's
unless told otherwise); set ``transaction.version`` to 1 to make clients use the older protocol.
"""

from __future__ import annotations

from dataclasses import field

from ..lazy_dataclasses import dataclass
from .releases import DEFAULT_RELEASE, RELEASES

SUPPORTED: dict[str, tuple[int, int]] = RELEASES[DEFAULT_RELEASE].supported
FINALIZED: dict[str, int] = RELEASES[DEFAULT_RELEASE].finalized


UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3  # UpdateFeatures' upgrade types


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

    @property
    def share_version(self) -> int:
        """The finalized ``share.version``: 0 refuses every share API (UNSUPPORTED_VERSION),
        1 serves share groups (KIP-932), 2 adds the dead-letter queue (KIP-1191)."""
        return self.finalized.get("share.version", 0)

    def check_update(self, name: str, level: int, upgrade_type: int, controller_id: int) -> str | None:
        """Why Kafka's controller (FeatureControlManager) would refuse ``name`` at ``level`` with
        this upgrade type, in its words; None when it would accept it. metadata.version cannot
        be downgraded here (Kafka refuses every downgrade that changes metadata, which from
        33 is each one)."""

        def invalid(reason: str) -> str:
            return f"Invalid update version {level} for feature {name}. {reason}"

        if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
            return invalid("The controller does not support the given upgrade type.")
        current = self.finalized.get(name, 0)
        if level < 0:
            return invalid("A feature version cannot be less than 0.")
        if name not in self.supported:
            return invalid(f"Local controller {controller_id} does not support this feature.")
        lo, hi = self.supported[name]
        if not lo <= level <= hi:
            return invalid(f"Local controller {controller_id} only supports versions {lo}-{hi}")
        if level < current and upgrade_type == UPGRADE:
            return invalid(
                "Can't downgrade the version of this feature without setting the upgrade type to either safe "
                "or unsafe downgrade."
            )
        if level > current and upgrade_type != UPGRADE:
            return invalid("Can't downgrade to a newer version.")
        if name == "metadata.version" and level < current:
            why = (
                "Unsafe metadata downgrade is not supported in this version."
                if upgrade_type == UNSAFE_DOWNGRADE
                else "Refusing to perform the requested downgrade because it might delete metadata information."
            )
            return f"Unsupported metadata.version downgrade from {current} to {level}. {why}"
        if name == "kraft.version" and upgrade_type != UPGRADE and level != current:
            return invalid("Can't downgrade the version of this feature.")
        return None

    def update(self, levels: dict[str, int]) -> None:
        """Finalize several levels at once (checked by :meth:`check_update`); level 0 removes a
        feature, as Kafka's FeatureLevelRecord does; the epoch moves once."""
        for name, level in levels.items():
            self.finalized[name] = level
        if levels:
            self.epoch += 1
