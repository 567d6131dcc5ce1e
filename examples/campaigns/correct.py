"""The same campaign over the consumer done right: it commits after processing. A crash re-reads
the record in hand (allowed: at least once), and no seed loses one:

    fakebroker campaign examples/campaigns/correct.py --seeds 200
"""

from __future__ import annotations

from orders_app import commit_after
from orders_campaign import CLUSTER, DELIVERY, FAULT_MIXES, GRID, make_scenario

__all__ = ["CLUSTER", "DELIVERY", "FAULT_MIXES", "GRID", "scenario"]
scenario = make_scenario(commit_after)
