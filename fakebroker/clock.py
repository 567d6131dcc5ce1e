"""Clocks. Everything in the broker that depends on time reads one of these.

``RealClock`` follows the wall clock. (A virtual clock that tests advance arrives with the
fault-injection work; the core already takes ``now`` as an argument everywhere.)
"""

from __future__ import annotations

import time


class RealClock:
    """Wall-clock time in milliseconds, as Kafka timestamps are."""

    def now_ms(self) -> int:
        return int(time.time() * 1000)
