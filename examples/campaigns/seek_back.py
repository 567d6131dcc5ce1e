"""A campaign over a consumer with another planted bug: it commits after processing, so it loses
nothing, but after a hiccup downstream it "retries" by seeking back a few records, committed
already, and processes them again. At least once allows reading a record again only from where
a position was set anew (a rebalance, a restart, a coordinator or leader move), so the ledger
calls these repeats beyond the commit policy (from a member's second retry in a partition on, and
unless churn set its position in between) and the campaign's verdict is ``duplicated``:

    fakebroker campaign examples/campaigns/seek_back.py --seeds 20
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from orders_campaign import CLUSTER, DELIVERY, FAULT_MIXES, GRID, make_scenario

__all__ = ["CLUSTER", "DELIVERY", "FAULT_MIXES", "GRID", "scenario"]
HICCUP_EVERY = 10  # records of a partition between two hiccups downstream
BACK = 3  # how many records a retry goes back

_retried: set[tuple[str, int, int]] = set()  # each hiccup is retried once, by whichever member meets it
_lock = threading.Lock()


def retry_by_seeking_back(consumer: Consumer, msg: Any, process: Callable[[Any], None]) -> None:
    """Process, commit, and after a hiccup seek back ``BACK`` records to do them again (the bug:
    they are committed, the group will never hand them out again; a retry must not re-run them)."""
    process(msg)
    try:
        consumer.commit(message=msg, asynchronous=False)
    except KafkaException:
        pass  # a commit racing a rebalance: the record is read again (at least once)
    where = (msg.topic(), msg.partition(), msg.offset())
    if msg.offset() % HICCUP_EVERY == HICCUP_EVERY - 1:
        with _lock:
            first = where not in _retried
            _retried.add(where)
        if first:
            consumer.seek(TopicPartition(msg.topic(), msg.partition(), msg.offset() + 1 - BACK))


scenario = make_scenario(retry_by_seeking_back)
