"""The errors the facade raises for a call it cannot do as asked: :class:`ClusterUsageError`
(naming what is wrong and what is valid) and :class:`ClusterNotRunning` (a call on a cluster
that has not started or has stopped).
"""

from __future__ import annotations

HOW_TO_RUN = (
    "use it inside `with FakeCluster(...).run_in_thread() as cluster:` (synchronous tests) "
    "or `async with FakeCluster(...) as cluster:` (trio or asyncio)"
)


class ClusterUsageError(ValueError):
    """A facade call named something the cluster does not have (a broker id, a topic, a
    partition, an event kind, a group state) or asked for what cannot be done (a leader when
    no broker runs). The message names the problem and what is valid. A ``ValueError``, so
    ``except ValueError`` catches it."""


class ClusterNotRunning(ClusterUsageError, RuntimeError):
    """A call that needs the running cluster (its brokers, topics, groups, records,
    transactions, quotas, network cuts, a change of its fault rules, its clock advancing, a
    wait) on a cluster that has not started yet or has stopped (its ``with`` block ended). The
    message says which, and how to run it.

    What a cluster was given or has recorded stays readable at any time: ``cluster_id``,
    ``coordinator_load_time_ms``, ``clock.virtual`` and ``clock.now()``, the fault rules
    (``faults.list()``), and the event log (``events``, ``events_since``, ``event_count``,
    ``events_dropped``, ``on_event``), so a test may look back at what happened after the
    block. A :class:`ClusterUsageError` (a ``ValueError``) and a ``RuntimeError``."""

    def __init__(self, started: bool):
        if started:
            message = (
                "the cluster has stopped (its `with` block has ended): call it inside that block; "
                "what happened stays readable in cluster.events"
            )
        else:
            message = f"the cluster has not started: {HOW_TO_RUN}"
        super().__init__(message)
        self.started = started

    def __reduce__(self) -> tuple[type[ClusterNotRunning], tuple[bool]]:
        return type(self), (self.started,)  # made again from ``started``, not from the message
