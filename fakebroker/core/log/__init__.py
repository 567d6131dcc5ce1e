"""One partition's log and what belongs to it.

``partition.py`` holds :class:`PartitionLog`: the batches as the bytes clients sent, offsets,
retention, the transaction indexes, reads and recovery at start; ``segments.py`` where a
log's bytes live (the :class:`SegmentStore` / :class:`LogStorage` a data directory
implements, the in-memory ones, the log's view of each segment and its sparse index);
``recovery.py`` the batch-by-batch check of a reopened segment, as Kafka's
``LogSegment.recover``; ``producers.py`` what a partition remembers of each producer for
idempotent and transactional produce (sequences, epochs, the last five batches);
``appends.py`` Produce's append path: Kafka's validation, the sequence checks and the write,
in Kafka's order.

The names other layers use most are re-exported here; ``appends.py`` is not (it reads a
topic's :class:`~..topics.Partition`, and the topics import this package).
"""

from __future__ import annotations

from .partition import PartitionLog
from .producers import PartitionProducers
from .segments import LogStorage, MemoryStorage, SegmentStore

__all__ = ["LogStorage", "MemoryStorage", "PartitionLog", "PartitionProducers", "SegmentStore"]
