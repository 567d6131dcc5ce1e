"""A GroupScenarios JVM (or kafkajs's groups.js) feeding a :class:`~fakebroker.testing.ledger.DeliveryLedger`:
consumers started with ``report=true`` (or ``commit=record``) print each record processed and each offset committed, and
the driver's reader thread records them in the ledger as they arrive (so each processing is tied
to the point of the cluster's event log it happened at, and duplicates get their cause)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from fakebroker import DeliveryLedger
from fakebroker.cluster import FakeCluster

from .test_java_groups import Driver


class FeedsLedger:
    """A line driver whose ``processed``/``committed`` lines go straight into ``ledger`` instead of
    into ``notes`` (the JVM's GroupScenarios with ``report=true``, kafkajs's groups.js with
    ``report: true``). ``ledger`` may be a mapping of member name -> ledger: members of different
    groups reading the same records, each group judged on its own."""

    def __init__(self, first: object, cluster: FakeCluster, ledger: DeliveryLedger | Mapping[str, DeliveryLedger]):
        self.ledger = ledger  # before the reader thread starts
        super().__init__(first, cluster)  # type: ignore[call-arg]

    def _ledger_of(self, name: str) -> DeliveryLedger:
        return self.ledger[name] if isinstance(self.ledger, Mapping) else self.ledger

    def _read_stdout(self) -> None:
        for line in self.proc.stdout:  # type: ignore[attr-defined]
            if not line.startswith("{"):
                continue
            note = json.loads(line)
            if note.get("type") == "processed":
                ledger = self._ledger_of(note["name"])
                ledger.processed(note["name"], note["topic"], note["partition"], note["offset"], note["key"])
            elif note.get("type") == "committed":
                self._ledger_of(note["name"]).committed(note["name"], note["topic"], note["partition"], note["offset"])
            else:
                self.lines.put(note)  # type: ignore[attr-defined]
        self.lines.put(None)  # type: ignore[attr-defined]


class LedgerDriver(FeedsLedger, Driver):
    """A GroupScenarios JVM feeding a ledger (or one per member name)."""

    lifetime = 240  # a churn run with its drain takes a minute or two

    def __init__(self, jar: Path, cluster: FakeCluster, ledger: DeliveryLedger | Mapping[str, DeliveryLedger]):
        super().__init__(jar, cluster, ledger)


def produced(ledger: DeliveryLedger, topic: str, first: int, n: int, partitions: int) -> None:
    """What the driver's ``produce`` command had acknowledged: key-I at offset I // partitions of
    partition I % partitions (on a topic written only that way, from key-0)."""
    for i in range(first, first + n):
        ledger.produced(topic, i % partitions, i // partitions, f"key-{i}")
