"""The client-neutral kit of the consumer-group scenarios (``group_scenarios.py``): what a
scenario needs of a client (:class:`Client`, :class:`Member`, :class:`Admin`, implemented once
per client library in its test file), the :class:`Ledger` of deliveries and commits, and the
broker's view of the group.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from fakebroker.cluster import FakeCluster
from fakebroker.protocol.error_codes import ErrorCode

TOPIC = "orders"
PARTITIONS = 6
SESSION_TIMEOUT_MS = 6000  # the broker's group.min.session.timeout.ms
HEARTBEAT_INTERVAL_MS = 500
REBALANCE_TIMEOUT_MS = 10_000
MAX_POLL_RECORDS = 20
POLL_MS = 200
DEADLINE_S = 20.0

# -- what a scenario needs of a client -----------------------------------------------------------


class Member(Protocol):
    """One group consumer with its own poll loop (see the module docstring)."""

    label: str  # its client id
    polls: int  # polls so far

    @property
    def partitions(self) -> list[int]: ...  # its assignment, sorted

    @property
    def member_id(self) -> str: ...

    @property
    def generation(self) -> int: ...

    async def start(self, loop: bool = True) -> Member:
        """Start the consumer (it has the topic's metadata), and its poll loop unless ``loop`` is
        False (then :meth:`run` starts it)."""

    def run(self) -> None:
        """Start the poll loop of a member started with ``loop=False``."""

    def pause(self) -> None:
        """Stop polling (a stall); the client's heartbeats go on."""

    def check_alive(self) -> None:
        """Raise what ended the poll loop, if it ended before :meth:`close`."""

    async def commit(self, offsets: dict[int, tuple[int, str]]) -> None:
        """Stop polling, then commit ``offsets`` (partition -> (offset, metadata)) as its last commit."""

    async def committed(self, partition: int) -> int | None:
        """The committed offset of ``partition``, asked of the coordinator (before :meth:`run`)."""

    async def close(self) -> None:
        """Stop the loop, then the consumer (a dynamic member sends LeaveGroup, a static one not)."""


class PacedProducer(Protocol):
    """Records ``0..n-1`` (record i into partition i % 6) in bursts of 30 every 50 ms, in the background."""

    @property
    def running(self) -> bool: ...

    async def finish(self) -> None:
        """Wait until every record is acknowledged; raise what failed."""

    def cancel(self) -> None:
        """Stop early (a scenario that failed)."""


@dataclass
class Described:
    """A DescribeGroups answer as the client's admin reports it; members by member id, each with
    ``client_id``, ``client_host``, ``assignment`` ({topic: sorted partitions}) and ``topics``
    (its subscription)."""

    error: int
    group: str
    state: str
    protocol_type: str
    protocol: str
    members: dict[str, dict[str, Any]]


class Admin(Protocol):
    filters_by_state: bool  # whether list_groups takes states (ListGroups v4)
    # what DescribeGroups answers for a missing group (state Dead) at the version the client
    # sends: GROUP_ID_NOT_FOUND from v6 on, NONE before, as Kafka answers
    missing_group_error: ErrorCode

    async def list_groups(self, states: Sequence[str] | None = None) -> dict[str, tuple[str, str | None]]:
        """Group id -> (protocol type, state or None where the client does not report it)."""

    async def describe(self, gid: str) -> Described: ...

    async def offsets(self, gid: str) -> dict[int, int]:
        """The committed offsets of :data:`TOPIC` by partition."""

    async def delete(self, gid: str) -> str:
        """DeleteGroups: "OK" or the name of the error class (kafka-python's admin names them)."""

    async def close(self) -> None: ...


class Client(Protocol):
    """What the scenarios drive of one client library."""

    name: str  # the prefix of its group ids
    assignor: str  # the protocol name of its default assignor

    def open_cluster(self, **settings: Any) -> AbstractAsyncContextManager[FakeCluster]:
        """A running 3-broker cluster with :data:`TOPIC` (``settings`` go to FakeCluster)."""

    def member(self, cluster: FakeCluster, gid: str, name: str, ledger: Ledger, **config: Any) -> Member:
        """A member (not started) with client id ``name``; ``config`` overrides its settings."""

    def stall_config(self, max_poll_ms: int) -> dict[str, Any]:
        """Member settings under which ``max_poll_ms`` without a poll ends its membership."""

    async def produce(self, cluster: FakeCluster, n: int, start: int = 0) -> None:
        """Records ``start..start+n-1``, record i into partition i % 6, acknowledged by all."""

    def produce_paced(self, cluster: FakeCluster, n: int) -> PacedProducer: ...

    async def admin(self, cluster: FakeCluster) -> Admin: ...


# -- the ledger and the broker's view ---------------------------------------------------------------


class Ledger:
    """Every delivery and every commit outcome, in the order the members recorded them (members
    may run on threads of their own)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.deliveries: list[tuple[str, int, int]] = []  # (member, partition, offset)
        self.frontier: dict[int, int] = {}  # partition -> highest offset committed successfully so far
        self.allowed_duplicates: list[tuple[int, int]] = []
        self.forbidden_duplicates: list[tuple[str, int, int, int]] = []
        self.commit_failures: list[tuple[str, str]] = []
        self._seen: set[tuple[int, int]] = set()

    def delivered(self, member: str, records: list[tuple[int, int]]) -> None:
        with self.lock:
            for partition, offset in records:
                if (partition, offset) in self._seen:
                    # A redelivery is allowed only while no successful commit has covered the record.
                    if self.frontier.get(partition, 0) > offset:
                        self.forbidden_duplicates.append((member, partition, offset, self.frontier[partition]))
                    else:
                        self.allowed_duplicates.append((partition, offset))
                self._seen.add((partition, offset))
                self.deliveries.append((member, partition, offset))

    def committed(self, offsets: dict[int, int]) -> None:
        with self.lock:
            for p, o in offsets.items():
                self.frontier[p] = max(self.frontier.get(p, 0), o)

    def commit_failed(self, member: str, error: str) -> None:
        with self.lock:
            self.commit_failures.append((member, error))

    def seen(self) -> set[tuple[int, int]]:
        with self.lock:
            return set(self._seen)

    def count(self) -> int:
        with self.lock:
            return len(self.deliveries)

    def check(self, expected: set[tuple[int, int]], max_duplicates: int) -> int:
        with self.lock:
            got = [(p, o) for _, p, o in self.deliveries]
            assert set(got) == expected, (
                f"lost: {sorted(expected - set(got))[:10]} extra: {sorted(set(got) - expected)[:10]}"
            )
            assert not self.forbidden_duplicates, (
                f"redelivered after a successful commit: {self.forbidden_duplicates[:10]}"
            )
            duplicates = len(got) - len(set(got))
            assert duplicates == len(self.allowed_duplicates)
            assert duplicates <= max_duplicates, f"{duplicates} duplicates (bound {max_duplicates})"
            return duplicates


def group_id_off_bootstrap(cluster: FakeCluster, client: Client, tag: str) -> str:
    """A group id whose coordinator is not broker 0 (the first bootstrap server)."""
    assert cluster.bootstrap_servers.split(",")[0].endswith(f":{cluster.servers[0].port}")
    for i in range(200):
        gid = f"{client.name}-{tag}-{i}"
        if cluster.coordinator(gid) not in (0, -1):
            return gid
    raise AssertionError("no group id maps to a coordinator other than broker 0")


def stored(cluster: FakeCluster) -> set[tuple[int, int]]:
    return {(p, o) for p, o, _, _ in cluster.records(TOPIC)}


def committed_on_broker(cluster: FakeCluster, gid: str) -> dict[int, int]:
    return {p: o.offset for t, p, o in cluster.state.groups.offsets.fetch(gid, None) if t == TOPIC}


def all_committed(cluster: FakeCluster, gid: str, per_partition: int) -> bool:
    return committed_on_broker(cluster, gid) == {p: per_partition for p in range(PARTITIONS)}


def group_events(cluster: FakeCluster, gid: str, since: int = 0) -> list:
    return [e for e in cluster.events[since:] if e.details.get("group") == gid]


def until_members_leave(events: list) -> list:
    """The events before the first LeaveGroup (the test's own shutdown)."""
    return events[: next((i for i, e in enumerate(events) if e.details.get("reason") == "left the group"), len(events))]


def broker_errors(cluster: FakeCluster, error: str, since: int = 0) -> list:
    """The requests answered with ``error`` (events from ``since`` on)."""
    return [e for e in cluster.events[since:] if e.kind == "request_error" and e.details["error"] == error]


def no_broker_errors(cluster: FakeCluster) -> None:
    assert not [e for e in cluster.events if e.kind in ("handler_error", "produce_rejected")]


def group_of(cluster: FakeCluster, gid: str) -> Any:
    return cluster.state.groups.classic.groups[gid]


async def wait_until(
    condition: Callable[[], bool], what: str, members: Sequence[Member] = (), deadline_s: float = DEADLINE_S
) -> float:
    """Wait (bounded) until ``condition()`` holds while the members poll; returns the seconds."""
    start = time.monotonic()
    while not condition():
        for m in members:
            m.check_alive()
        assert time.monotonic() - start < deadline_s, f"timed out waiting for {what}: " + ", ".join(
            f"{m.label}={m.partitions}@{m.generation}" for m in members
        )
        await anyio.sleep(0.02)
    return time.monotonic() - start


def split_evenly(members: Sequence[Member], cluster: FakeCluster, gid: str) -> bool:
    """Every member holds its share of the 6 partitions, all in the group's current generation."""
    group = cluster.state.groups.classic.groups.get(gid)
    if group is None or group.state.value != "Stable" or len(group.members) != len(members):
        return False
    parts = [m.partitions for m in members]
    return (
        all(len(p) == PARTITIONS // len(members) for p in parts)
        and sorted(sum(parts, [])) == list(range(PARTITIONS))
        and all(m.generation == group.generation_id and m.member_id in group.members for m in members)
    )


def member_settings(cluster: FakeCluster, gid: str, name: str, **config: Any) -> dict[str, Any]:
    """What every member's consumer is configured with (the names are Kafka's, which both
    Python clients take), ``config`` on top: no auto-commit, from the earliest offset."""
    return {
        "bootstrap_servers": cluster.bootstrap_servers,
        "group_id": gid,
        "client_id": name,
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
        "max_poll_records": MAX_POLL_RECORDS,
        "fetch_max_wait_ms": 50,
        **config,
    }


async def start_members(
    client: Client, cluster: FakeCluster, gid: str, ledger: Ledger, n: int = 3, **config: Any
) -> list[Member]:
    """``n`` started members ``c0``.. (a callable config value is called with the member's index)."""
    members = [
        client.member(cluster, gid, f"c{i}", ledger, **{k: (v(i) if callable(v) else v) for k, v in config.items()})
        for i in range(n)
    ]
    for m in members:
        await m.start()
    return members


@asynccontextmanager
async def three_members(
    client: Client, cluster: FakeCluster, tag: str, **config: Any
) -> AsyncIterator[tuple[str, Ledger, list[Member]]]:
    """A group (id, ledger, members) of three started members ``c0``..``c2`` that have split the
    topic 2/2/2 (see :func:`start_members` for ``config``); the members are closed on the way out."""
    gid = group_id_off_bootstrap(cluster, client, tag)
    ledger = Ledger()
    members = await start_members(client, cluster, gid, ledger, **config)
    try:
        await wait_until(lambda: split_evenly(members, cluster, gid), "a 2/2/2 split", members)
        yield gid, ledger, members
    finally:
        await close_all(members)


async def close_all(members: Sequence[Member]) -> None:
    errors = []
    for m in members:
        try:
            await m.close()
        except BaseException as exc:
            errors.append(exc)
    if errors:
        raise errors[0]
