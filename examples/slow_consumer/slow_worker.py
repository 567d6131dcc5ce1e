"""A kafka-python worker whose processing is slow: how ``max_poll_records`` and
``max_poll_interval_ms`` decide whether it stays in its group.

The consumer must call ``poll`` again within ``max_poll_interval_ms``; one poll hands over at
most ``max_poll_records`` records. If ``records x time per record`` exceeds the interval, the
client's heartbeat thread gives up on the member, leaves the group, and the next commit
fails with CommitFailedError: the batch will be processed again by whoever owns the
partitions next.
"""

from __future__ import annotations

import time

from kafka import KafkaConsumer
from kafka.errors import CommitFailedError


def run(
    bootstrap: str,
    group: str,
    topic: str,
    *,
    seconds_per_record: float,
    max_poll_records: int,
    max_poll_interval_ms: int,
    records_wanted: int,
    deadline_s: float = 20.0,
) -> dict[str, int]:
    """Process until ``records_wanted`` records are committed or the deadline; returns counts."""
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id="slow-worker",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=max_poll_records,
        max_poll_interval_ms=max_poll_interval_ms,
        session_timeout_ms=6000,
        heartbeat_interval_ms=200,
    )
    stats = {"processed": 0, "committed": 0, "commit_failures": 0}
    end = time.monotonic() + deadline_s
    try:
        while stats["committed"] < records_wanted and time.monotonic() < end:
            batch = consumer.poll(timeout_ms=200)
            count = 0
            for records in batch.values():
                for _ in records:
                    time.sleep(seconds_per_record)  # the slow part
                    count += 1
            stats["processed"] += count
            if not count:
                continue
            try:
                consumer.commit()
                stats["committed"] += count
            except CommitFailedError:
                stats["commit_failures"] += 1
    finally:
        consumer.close(autocommit=False)
    return stats
