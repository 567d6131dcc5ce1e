"""What users import in their tests, as ``trio.testing`` is for trio: a face of the facade (it
uses only ``fakebroker.cluster``'s public API).

- ``assertions.py``: the facts users check most, each failing with a message that says what was
  expected and what was there (``eventually``, ``assert_assignment``, ``lag``, ``values``, ...),
  imported from here: ``from fakebroker.testing import eventually``;
- ``ledger.py``: :class:`DeliveryLedger`, which judges a run's delivery guarantees (also
  ``from fakebroker import DeliveryLedger``), with its verdict's types; ``queue.py``: its queue
  semantics for share groups (``queue_verdict``, ``assert_queue_delivery``); ``policy.py``: the
  duplicates at least once does not allow (``Verdict.duplicates_beyond_policy``);
- ``churn.py``: the bad days a consumer group meets as building blocks and a seeded runner
  (``from fakebroker.testing.churn import BLOCKS, churn``); ``process_member.py``: a churn
  member handle over a whole process (a Kafka Streams app's jar), started, stopped and stalled
  (``from fakebroker.testing import ProcessMember``);
- ``region.py``: the checkpointing-consumer harness (``from fakebroker.testing.region import
  Region``);
- ``polling.py``: ``poll_until`` and ``poll_until_async``, which keep consumers polling until a
  cluster condition or a predicate holds, keeping the records they poll for the caller.

Importing this package loads no cluster: the assertions import the facade when first called.
"""

from __future__ import annotations

from .assertions import (
    assert_assignment,
    assignment,
    committed,
    eventually,
    lag,
    partitions_covered_once,
    total_lag,
    values,
)
from .ledger import BeyondPolicy, CommitBeyond, DeliveryLedger, Duplicate, OutOfOrder, RecordId, Reread, Verdict
from .polling import poll_until, poll_until_async
from .process_member import ProcessMember
from .queue import Archived, QueueVerdict, Repeat

__all__ = [
    "Archived",
    "BeyondPolicy",
    "CommitBeyond",
    "DeliveryLedger",
    "Duplicate",
    "OutOfOrder",
    "ProcessMember",
    "QueueVerdict",
    "RecordId",
    "Repeat",
    "Reread",
    "Verdict",
    "assert_assignment",
    "assignment",
    "committed",
    "eventually",
    "lag",
    "partitions_covered_once",
    "poll_until",
    "poll_until_async",
    "total_lag",
    "values",
]
