"""Producer ids and epochs as the transaction coordinator hands them out (InitProducerId).

Kafka's ``TransactionCoordinator.handleInitProducerId`` answers every InitProducerId, with or
without a transactional id, from one id allocator (``ProducerIdManager``); the epoch limits are
``TransactionMetadata``'s. What each partition remembers of a producer (its last batches and
sequence numbers) is the log's: ``core/log/producers.py``.
"""

from __future__ import annotations

EPOCH_MAX = 2**15 - 1  # Short.MAX_VALUE


def epoch_exhausted(epoch: int) -> bool:
    """TransactionMetadata.isEpochExhausted: Short.MaxValue is kept free so a producer can always be fenced."""
    return epoch >= EPOCH_MAX - 1


class ProducerIds:
    """Hands out producer ids (InitProducerId) and remembers each one's current epoch.

    A producer without a transactional id gets a new id at epoch 0 every time ("blindly
    accept the request and return a new producerId"); transactional ids are the transaction
    coordinator's (``coordinator.py``), which allocates from here.
    """

    def __init__(self, first_id: int = 1000):
        self._next = first_id
        self.epochs: dict[int, int] = {}  # producer id -> current epoch

    def init_idempotent(self) -> tuple[int, int]:
        pid = self.allocate()
        self.epochs[pid] = 0
        return pid, 0

    @property
    def next_id(self) -> int:
        """The id the next allocation hands out."""
        return self._next

    def skip_to(self, next_id: int) -> None:
        """Never hand out an id below ``next_id`` (ids used before a restart)."""
        self._next = max(self._next, next_id)

    def allocate(self) -> int:
        pid = self._next
        self._next += 1
        return pid
