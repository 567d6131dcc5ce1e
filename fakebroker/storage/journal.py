"""Every answered change made durable before its answer goes out: a journal of changes beside
the metadata snapshot, one JSON line per change, replayed over the snapshot at start.

The hook is the event log: every change of what a restart keeps records an event, and the
server tells the runtime's listeners of new events right after each handler ran, before the
answer is encoded (``Runtime.settle``). :class:`Journal` is such a listener, attached only when
the cluster keeps a data directory, so a cluster without one pays nothing. For each event of a
durable kind it writes the *current* value of what the event names (the topic, the partition,
the group's offset), so replaying the lines in order ends where the cluster was, and a line
written twice does no harm. Lines are written with one ``os.write`` each and no fsync: a
``kill -9`` keeps the page cache; only power loss can take what was not yet flushed.

Lines (JSON arrays): ``["journal", 1, G]`` first (G: the snapshot generation it follows),
then ``["topic", name, entry|null]``, ``["part", topic, index, entry]``, ``["dyn", settings]``,
``["broker", id, settings]``, ``["off", group, topic, partition, row|null]``,
``["group", group, rows]``, ``["pid", next producer id]`` and ``["txn", transactional id,
entry|null]`` (the transaction coordinator's state of that id and its transaction's pending
offsets, ``storage.txn_state``; written at every event of the id, EndTxn's ``txn_prepared``
among them, so an answered commit whose markers were still to be written survives).
``["cgroup", group, entry|null]`` is a classic group's record (``storage.group_state``), written
after any event of the group once the coordinator has a new record of it;
``["kgroup", group, entry|null]`` a KIP-848 consumer group (``storage.consumer_group_state``),
written once per settled batch of events (:meth:`Journal.flush`) that named the group, and
``["stgroup", group, entry|null]`` a streams group (KIP-1071, ``storage.streams_group_state``)
the same way;
``["acls", rows]`` every ACL and ``["scram", user, mechanism, entry|null]`` one SCRAM
credential (``storage.security_state``); ``["gconf", group, settings|null]`` a group's configs
(resource type GROUP: any id, also one that names no group); ``["sgroup", group, entry|null]``
a share group and ``["sstate", group, topic id, partition, entry|null]`` a share partition's
state (``storage.share_group_state``), written at the flush after they changed. A torn last line
(a crash in the middle of a write) is ignored; any other line that cannot be read refuses the
directory.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..core.cluster_state import ClusterState
from ..core.events import Event
from . import consumer_group_state, group_state, security_state, share_group_state, streams_group_state, txn_state
from . import snapshot as snap

JOURNAL_VERSION = 1


def header(generation: int) -> list[Any]:
    return ["journal", JOURNAL_VERSION, generation]


# -- writing: an event -> the lines that make it durable -----------------------------------------


class Journal:
    """The listener that journals durable changes (see the module's docstring).

    :param write: appends one line to the data directory's journal; True when the journal is
        due for compaction.
    :param compact: rewrites the snapshot from the state and starts a new journal.
    :param seen: how many events the snapshot just written already covers.
    """

    def __init__(
        self, state: ClusterState, write: Callable[[list[Any]], bool], compact: Callable[[], None], seen: int
    ) -> None:
        self.state = state
        self._write = write
        self.compact = compact
        self.seen = seen
        self.next_pid = state.producer_ids.next_id
        self.group_records = dict(state.groups.classic.snapshots)  # the classic groups' records written
        self.consumer_groups = set(state.groups.consumer.groups)  # consumer groups with a record written
        self._changed_consumer_groups: set[str] = set()  # to write at the next flush
        self.streams_groups = set(state.groups.streams.groups)  # streams groups with a record written
        self._changed_streams_groups: set[str] = set()
        self._changed_share_groups: set[str] = set()
        self._changed_share_states: set[Any] = set()  # share-partition state keys
        state.groups.share_states.on_change = lambda key, stored: self._changed_share_states.add(key)
        self.closed = False

    def on_event(self, event: Event) -> None:
        if self.closed or event.seq <= self.seen:
            return
        gap = event.seq != self.seen + 1  # the event log dropped some before they were told
        self.seen = event.seq
        if gap:
            self.compact()  # the snapshot holds whatever they changed
            self.next_pid = self.state.producer_ids.next_id
            self.group_records = dict(self.state.groups.classic.snapshots)
            self.consumer_groups = set(self.state.groups.consumer.groups)
            self._changed_consumer_groups.clear()
            self.streams_groups = set(self.state.groups.streams.groups)
            self._changed_streams_groups.clear()
            self._changed_share_groups.clear()
            self._changed_share_states.clear()
            return
        handler = _HANDLERS.get(event.kind)
        if handler is not None:
            handler(self, event)
        group = getattr(event, "group", None)
        if isinstance(group, str) and self.state.groups.classic.snapshots.get(group) is not self.group_records.get(
            group
        ):
            record = self.state.groups.classic.snapshots.get(group)  # a new group record
            if record is None:
                self.group_records.pop(group, None)
            else:
                self.group_records[group] = record
            self.write(["cgroup", group, group_state.group_entry(self.state, group)])
        if isinstance(group, str) and (group in self.consumer_groups or group in self.state.groups.consumer.groups):
            self._changed_consumer_groups.add(group)
        if isinstance(group, str) and (group in self.streams_groups or group in self.state.groups.streams.groups):
            self._changed_streams_groups.add(group)
        if isinstance(group, str) and (group in self.state.groups.share.groups or event.kind == "group_deleted"):
            self._changed_share_groups.add(group)
        if self.state.producer_ids.next_id != self.next_pid:
            self.next_pid = self.state.producer_ids.next_id
            self.write(["pid", self.next_pid])

    def flush(self) -> None:
        """After each settled batch of events (before the answer goes out): one line per consumer
        or streams group they named, however many events it had (a join of the 1,000th member is
        one line of 1,000 members, not one per event)."""
        if self.closed:
            return
        self._flush_share_groups()
        self._flush_streams_groups()
        if not self._changed_consumer_groups:
            return
        changed, self._changed_consumer_groups = sorted(self._changed_consumer_groups), set()
        for group in changed:
            entry = consumer_group_state.group_entry(self.state, group)
            if entry is None:
                self.consumer_groups.discard(group)
            else:
                self.consumer_groups.add(group)
            self.write(["kgroup", group, entry])

    def _flush_streams_groups(self) -> None:
        changed, self._changed_streams_groups = sorted(self._changed_streams_groups), set()
        for group in changed:
            entry = streams_group_state.group_entry(self.state, group)
            if entry is None:
                self.streams_groups.discard(group)
            else:
                self.streams_groups.add(group)
            self.write(["stgroup", group, entry])

    def _flush_share_groups(self) -> None:
        states, self._changed_share_states = self._changed_share_states, set()
        store = self.state.groups.share_states.states
        for key in sorted(states, key=str):
            self.write(share_group_state.state_line(key, store.get(key)))
        groups, self._changed_share_groups = sorted(self._changed_share_groups), set()
        for group in groups:
            self.write(["sgroup", group, share_group_state.group_entry(self.state, group)])

    def write(self, change: list[Any]) -> None:
        if self._write(change):
            self.compact()

    # one method per durable kind of event
    def topic(self, event: Any) -> None:
        self.write(["topic", event.topic, snap.topic_entry(self.state, event.topic)])

    def partition(self, event: Any) -> None:
        entry = snap.partition_entry(self.state, event.topic, event.partition)
        topic = self.state.topics.get(event.topic)
        if entry is not None and topic is not None and not topic.internal:
            self.write(["part", event.topic, event.partition, entry])

    def configs(self, event: Any) -> None:
        resource = event.resource
        config = self.state.config
        if resource == "(cluster)":
            self.write(["dyn", dict(config.dynamic)])
            return
        if resource in self.state.topics:
            self.topic(_Named(resource))
        if resource.isdigit() and int(resource) in config.per_broker:
            self.write(["broker", int(resource), dict(config.per_broker[int(resource)])])

    def group_configs(self, event: Any) -> None:
        self.write(["gconf", event.group, self.state.group_configs.stored(event.group) or None])

    def acls(self, event: Any) -> None:
        self.write(["acls", security_state.acl_rows(self.state)])

    def scram(self, event: Any) -> None:
        self.write(
            ["scram", event.user, event.mechanism, security_state.scram_entry(self.state, event.user, event.mechanism)]
        )

    def token(self, event: Any) -> None:
        self.write(["token", event.token_id, security_state.token_entry(self.state, event.token_id)])

    def offset(self, event: Any) -> None:
        stored = (self.state.groups.offsets.offsets.get(event.group) or {}).get((event.topic, event.partition))
        row = None if stored is None else snap.offset_row(event.topic, event.partition, stored)
        self.write(["off", event.group, event.topic, event.partition, row])

    def group(self, event: Any) -> None:
        self.write(["group", event.group, snap.offset_rows(self.state, event.group)])

    def txn(self, event: Any) -> None:
        tid = event.transactional_id
        if tid is not None:  # an idempotent producer's id is kept by the ["pid"] line alone
            self.write(["txn", tid, txn_state.txn_entry(self.state, tid)])

    def everything(self, event: Any) -> None:
        self.compact()  # a change the event does not name in full (offsets expired in every group)


class _Named:
    def __init__(self, topic: str) -> None:
        self.topic = topic


_HANDLERS: dict[str, Callable[[Journal, Any], None]] = {
    "topic_created": Journal.topic,
    "topic_deleted": Journal.topic,
    "partitions_created": Journal.topic,
    "leader_moved": Journal.partition,
    "records_deleted": Journal.partition,
    "partition_reassigned": Journal.partition,
    "configs_altered": Journal.configs,
    "group_configs_altered": Journal.group_configs,
    "acls_created": Journal.acls,
    "acls_deleted": Journal.acls,
    "scram_credentials_altered": Journal.scram,
    "token_created": Journal.token,
    "token_renewed": Journal.token,
    "token_expired": Journal.token,
    "offset_committed": Journal.offset,
    "offset_deleted": Journal.offset,
    "group_deleted": Journal.group,
    "group_forgotten": Journal.group,
    "offsets_expired": Journal.everything,
    **dict.fromkeys(
        (
            "producer_id",
            "txn_began",
            "txn_partitions_added",
            "txn_offsets_added",
            "txn_prepared",
            "txn_committed",
            "txn_aborted",
            "txn_fenced",
            "txn_timed_out",
            "txn_forgotten",
            "txn_expired",
        ),
        Journal.txn,
    ),
}


# -- reading: the lines replayed over the snapshot --------------------------------------------------


class JournalError(ValueError):
    """A line that cannot be applied; the message says why in a few words."""


def replay(meta: dict[str, Any], lines: list[bytes]) -> int:
    """Apply journal lines (the header first, then changes) to a snapshot read from JSON, in
    place; the caller checks the result with ``snapshot.problem``. Returns how many changes
    were applied; raises :class:`JournalError` naming the line (1-based) of one that cannot be.
    A journal of an older generation than the snapshot (the snapshot was rewritten, the crash
    came before the journal was started again) is already in the snapshot: nothing is applied."""
    if not lines:
        return 0
    try:
        first = json.loads(lines[0])
    except ValueError:
        raise JournalError("line 1 is not JSON") from None
    if not (isinstance(first, list) and len(first) == 3 and first[:2] == ["journal", JOURNAL_VERSION]):
        raise JournalError(f"line 1 is not a journal header {header(0)[:2]}")
    generation = meta.get("journal", 0)
    if first[2] != generation:
        if isinstance(first[2], int) and first[2] < generation:
            return 0
        raise JournalError(f"line 1: journal generation {first[2]!r} does not follow the snapshot's {generation}")
    offsets: dict[str, dict[tuple[str, int], list[Any]]] = {
        g: {(r[0], r[1]): r for r in rows} for g, rows in (meta.get("offsets") or {}).items()
    }
    shares: dict[tuple[Any, ...], Any] = {tuple(row[:3]): row[3] for row in meta.get("share_states") or []}
    for number, line in enumerate(lines[1:], 2):
        try:
            op = json.loads(line)
            if isinstance(op, list) and op and op[0] == "sstate":
                _apply_share_state(shares, op[1:])
            else:
                _apply(meta, offsets, op)
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            raise JournalError(f"line {number} cannot be applied ({exc.__class__.__name__}: {exc})") from None
    meta["offsets"] = {g: [r for _, r in sorted(rows.items())] for g, rows in offsets.items() if rows}
    meta["share_states"] = [[*key, entry] for key, entry in shares.items()]
    return len(lines) - 1


def _apply_share_state(shares: dict[tuple[Any, ...], Any], args: list[Any]) -> None:
    group, topic_hex, partition, entry = args
    found = share_group_state.line_problem(group, topic_hex, partition, entry)
    if found:
        raise ValueError(found)
    if entry is None:
        shares.pop((group, topic_hex, partition), None)
    else:
        shares[(group, topic_hex, partition)] = entry


def _apply(meta: dict[str, Any], offsets: dict[str, dict[tuple[str, int], list[Any]]], op: Any) -> None:
    if not isinstance(op, list) or not op or not isinstance(op[0], str):
        raise ValueError("not a journal line")
    kind, args = op[0], op[1:]
    topics = meta["topics"]
    if kind == "topic":
        name, entry = args
        if entry is None:
            topics.pop(name, None)
        else:
            topics[name] = entry
    elif kind == "part":
        name, index, entry = args
        parts = topics[name]["partitions"] if name in topics else []
        if 0 <= index < len(parts):
            parts[index] = entry
    elif kind == "dyn":
        (meta["dynamic_config"],) = args
    elif kind == "broker":
        broker, settings = args
        meta.setdefault("broker_configs", {})[str(broker)] = settings
    elif kind == "off":
        group, topic, partition, row = args
        stored = offsets.setdefault(group, {})
        if row is None:
            stored.pop((topic, partition), None)
        else:
            if snap.row_problem(row) is not None:
                raise ValueError(f"offset row {row!r}: {snap.row_problem(row)}")
            stored[(topic, partition)] = row
    elif kind == "group":
        group, rows = args
        if any(snap.row_problem(r) is not None for r in rows):
            raise ValueError(f"offset rows of group {group!r} of the wrong shape")
        offsets[group] = {(r[0], r[1]): r for r in rows}
    elif kind == "txn":
        tid, entry = args
        if entry is None:
            meta.setdefault("transactions", {}).pop(tid, None)
        elif txn_state.entry_problem(entry) is not None:
            raise ValueError(f"transaction {tid!r}: {txn_state.entry_problem(entry)}")
        else:
            meta.setdefault("transactions", {})[tid] = entry
    elif kind == "cgroup":
        group, entry = args
        if entry is None:
            meta.setdefault("groups", {}).pop(group, None)
        elif group_state.entry_problem(entry) is not None:
            raise ValueError(f"group {group!r}: {group_state.entry_problem(entry)}")
        else:
            meta.setdefault("groups", {})[group] = entry
    elif kind == "kgroup":
        group, entry = args
        if entry is None:
            meta.setdefault("consumer_groups", {}).pop(group, None)
        elif consumer_group_state.entry_problem(entry) is not None:
            raise ValueError(f"consumer group {group!r}: {consumer_group_state.entry_problem(entry)}")
        else:
            meta.setdefault("consumer_groups", {})[group] = entry
    elif kind == "stgroup":
        group, entry = args
        if entry is None:
            meta.setdefault("streams_groups", {}).pop(group, None)
        elif streams_group_state.entry_problem(entry) is not None:
            raise ValueError(f"streams group {group!r}: {streams_group_state.entry_problem(entry)}")
        else:
            meta.setdefault("streams_groups", {})[group] = entry
    elif kind == "sgroup":
        group, entry = args
        if entry is None:
            meta.setdefault("share_groups", {}).pop(group, None)
        else:
            found = share_group_state.groups_problem({group: entry})
            if found:
                raise ValueError(f"share group {found}")
            meta.setdefault("share_groups", {})[group] = entry
    elif kind == "acls":
        (rows,) = args
        found = security_state.acls_problem(rows)
        if found:
            raise ValueError(f"acls {found}")
        meta["acls"] = rows
    elif kind == "scram":
        user, mechanism, entry = args
        if entry is None:
            meta.setdefault("scram", {}).get(user, {}).pop(mechanism, None)
        elif security_state.entry_problem(mechanism, entry) is not None:
            raise ValueError(f"scram {user}.{mechanism} {security_state.entry_problem(mechanism, entry)}")
        else:
            meta.setdefault("scram", {}).setdefault(user, {})[mechanism] = entry
    elif kind == "token":
        token_id, entry = args
        if entry is None:
            meta.setdefault("tokens", {}).pop(token_id, None)
        elif security_state.entry_token_problem(token_id, entry) is not None:
            raise ValueError(f"token {token_id} {security_state.entry_token_problem(token_id, entry)}")
        else:
            meta.setdefault("tokens", {})[token_id] = entry
    elif kind == "gconf":
        group, settings = args
        if settings is None:
            meta.setdefault("group_configs", {}).pop(group, None)
        elif not snap.strings(settings):
            raise ValueError(f"configs of group {group!r} are not an object of strings")
        else:
            meta.setdefault("group_configs", {})[group] = settings
    elif kind == "pid":
        (next_id,) = args
        meta["next_producer_id"] = max(int(meta.get("next_producer_id", 0)), int(next_id))
    else:
        raise ValueError(f"unknown change {kind!r}")
