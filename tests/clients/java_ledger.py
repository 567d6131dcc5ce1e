"""A GroupScenarios JVM feeding a :class:`~fakebroker.ledger.DeliveryLedger`: consumers started with
``report=true`` (or ``commit=record``) print each record processed and each offset committed, and
the driver's reader thread records them in the ledger as they arrive (so each processing is tied
to the point of the cluster's event log it happened at, and duplicates get their cause)."""

from __future__ import annotations

import json
from pathlib import Path

from fakebroker import DeliveryLedger
from fakebroker.cluster import FakeCluster

from .test_java_groups import Driver


class LedgerDriver(Driver):
    """``processed``/``committed`` lines go straight into ``ledger`` instead of into ``notes``."""

    lifetime = 240  # a churn run with its drain takes a minute or two

    def __init__(self, jar: Path, cluster: FakeCluster, ledger: DeliveryLedger):
        self.ledger = ledger  # before the reader thread starts
        super().__init__(jar, cluster)

    def _read_stdout(self) -> None:
        for line in self.proc.stdout:
            if not line.startswith("{"):
                continue
            note = json.loads(line)
            if note.get("type") == "processed":
                self.ledger.processed(note["name"], note["topic"], note["partition"], note["offset"], note["key"])
            elif note.get("type") == "committed":
                self.ledger.committed(note["name"], note["topic"], note["partition"], note["offset"])
            else:
                self.lines.put(note)
        self.lines.put(None)


def produced(ledger: DeliveryLedger, topic: str, first: int, n: int, partitions: int) -> None:
    """What the driver's ``produce`` command had acknowledged: key-I at offset I // partitions of
    partition I % partitions (on a topic written only that way, from key-0)."""
    for i in range(first, first + n):
        ledger.produced(topic, i % partitions, i // partitions, f"key-{i}")
