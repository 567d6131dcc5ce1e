"""Two client settings that differ in one behaviour: the same consumer with librdkafka's auto
commit on (it stores each record's offset as it is polled, and commits the stored offsets in the
background and on close) and off (it commits after processing). A crash mid-record loses that
record with auto commit only, so a campaign over both finds failures in that setting alone:

    fakebroker campaign examples/campaigns/auto_commit.py --seeds 50
"""

from __future__ import annotations

from typing import Any

from orders_app import commit_after
from orders_campaign import CLUSTER, DELIVERY, FAULT_MIXES, make_scenario

__all__ = ["CLUSTER", "DELIVERY", "FAULT_MIXES", "GRID", "scenario"]
GRID = {"enable.auto.commit": ["false", "true"], "protocol": ["classic"]}


def process_only(consumer: Any, msg: Any, process: Any) -> None:
    """With auto commit the application only processes: the client commits for it."""
    process(msg)


_manual = make_scenario(commit_after)
_auto = make_scenario(process_only, **{"enable.auto.commit": True, "auto.commit.interval.ms": 200})


def scenario(cluster: Any, seed: int, schedule: Any, cell: dict[str, Any]) -> Any:
    chosen = _auto if str(cell["enable.auto.commit"]).lower() == "true" else _manual
    return chosen(cluster, seed, schedule, cell)
