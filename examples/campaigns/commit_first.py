"""A campaign over a consumer with a planted bug: it commits each record before processing it,
so a crash between the two loses the record. A campaign finds it within a few seeds, shrinks
it to one rolling restart, and prints the pytest command that replays it:

    fakebroker campaign examples/campaigns/commit_first.py --seeds 200 --shrink --out out/
"""

from __future__ import annotations

from orders_app import commit_first
from orders_campaign import CLUSTER, DELIVERY, FAULT_MIXES, GRID, make_scenario

__all__ = ["CLUSTER", "DELIVERY", "FAULT_MIXES", "GRID", "scenario"]
scenario = make_scenario(commit_first)
