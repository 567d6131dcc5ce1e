"""The probe framework: a probe is a named function that sends a sequence of raw requests to a
:class:`Target` (a broker reached over loopback by :class:`tests.raw_client.RawClient`) and
records each answer as a :class:`Step`, decoded with fakebroker's codec and normalised so that
the answers of two brokers can be compared field by field.

Normalisation removes only what legitimately differs between two brokers: throttle times,
node ids, hosts, ports, cluster ids, coordinator epochs, the feature-metadata epoch, UUIDs
(topic ids, member id suffixes), timestamps above 0 (as ``<ts>``), non-empty error messages
(as ``<message>``; null and "" stay as they are), producer ids (renamed ``P0``, ``P1``, ... in
the order the target first shows them; kept in error answers, where they are placeholders);
error codes become their names, record batches a summary. Lists that Kafka answers in a hash
map's order are sorted (:data:`SORTED_BY`).

A step may carry expectations (``expect={"error_code": "INVALID_TXN_STATE"}``; keys are dotted
paths into the normalised answer): every mode checks them. :func:`compare` lists the fields in
which two targets' steps differ. ``messages=True`` keeps a step's error messages as they are
(for answers whose text is Kafka's contract, as SASL's).

A probe registered with ``@probe(secured=True)`` runs against the secured pair instead (a
SASL_SSL listener, StandardAuthorizer, :data:`~.kafka_broker.SECURED_SETTINGS`): its target's
connections are TLS, logged in as the super user ``admin`` with PLAIN unless the probe says
otherwise (:meth:`Target.connect`, :meth:`Target.as_user`).
"""

from __future__ import annotations

import re
import ssl
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, overload

from fakebroker.protocol import records as R
from fakebroker.protocol.error_codes import error_code
from tests.raw_client import RawClient, tls_context

# API keys
PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 0, 1, 2, 3, 8, 9, 10
JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, DELETE_GROUPS = 11, 12, 13, 14, 15, 42
API_VERSIONS, CREATE_TOPICS, INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN = (
    18,
    19,
    22,
    24,
    25,
    26,
)
WRITE_TXN_MARKERS, TXN_OFFSET_COMMIT, DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 27, 28, 61, 65, 66

DROP_KEYS = {
    "throttle_time_ms",
    "node_id",
    "host",
    "port",
    "leader_id",
    "cluster_id",
    "controller_id",
    "brokers",
    "rack",
    "coordinator_epoch",
    "preferred_read_replica",
    "finalized_features_epoch",  # Kafka: the offset of the feature record in its metadata log
    "_unknown_tagged_fields",
    "unknown_tagged_fields",
}
TIMESTAMP_KEYS = {
    "timestamp",
    "log_append_time_ms",
    "transaction_start_time_ms",
    "last_timestamp",
    "base_timestamp",
    "max_timestamp",
}
PRODUCER_ID_KEYS = {"producer_id", "active_producer_id"}
# lists Kafka answers in a hash map's or set's order (clients read them as sets): sorted by the
# first of these fields that every item has (a list whose items have none keeps its order)
SORTED_BY: dict[str, tuple[str, ...]] = {
    "results_by_topic_v3_and_below": ("name",),  # AddPartitionsToTxn
    "results_by_transaction": ("transactional_id",),
    "topic_results": ("name",),
    "results_by_partition": ("partition_index",),
    "results": ("group_id", "name"),  # DeleteGroups, CreatePartitions
    "responses": ("name",),  # DeleteTopics
    "groups": ("group_id",),  # DescribeGroups, ConsumerGroupDescribe
    "members": ("member_id",),  # JoinGroup's leader answer, DescribeGroups: a hash map of members
}
UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
RETRIABLE = {14, 15, 16, 51}  # LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS


class ProbeError(AssertionError):
    """A probe could not run its sequence (a set-up step kept failing)."""


def error_name(code: Any) -> Any:
    try:
        return error_code(code).name
    except Exception:
        return code


@dataclass
class Step:
    label: str
    api: int | None
    version: int | None
    answer: Any
    expect: dict[str, Any] | None = None


@dataclass(frozen=True)
class Security:
    """How a secured target is reached: the CA its TLS certificate is from, and its users'
    passwords (name -> password)."""

    ca_file: str
    users: Mapping[str, str]


SUPER_USER = "admin"


@dataclass
class Target:
    """One broker as a probe sees it: a connection, the steps recorded so far, and the names and
    producer ids of this probe's run."""

    kind: str  # "kafka" or "fakebroker"
    port: int
    prefix: str  # unique per probe and run: every topic, group and transactional id starts with it
    steps: list[Step] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # unmet expectations
    pids: dict[int, str] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    security: Security | None = None  # a secured target: TLS, and every connection logs in
    user: str = SUPER_USER  # the user the main connection logged in as (secured targets)

    def __post_init__(self) -> None:
        self._tls: ssl.SSLContext | None = tls_context(self.security.ca_file) if self.security else None
        self.client = self.connect(self.user)

    def close(self) -> None:
        self.client.close()

    def connect(self, user: str | None = SUPER_USER, mechanism: str = "PLAIN") -> RawClient:
        """A new connection; to a secured target over TLS and logged in as ``user`` with
        ``mechanism`` (not logged in when ``user`` is None)."""
        client = RawClient(self.port, client_id="conformance", timeout=15, tls=self._tls)
        if self.security is not None and user is not None:
            try:
                client.login(mechanism, user, self.security.users[user])
            except BaseException:
                client.close()
                raise
        return client

    @contextmanager
    def as_user(self, user: str, mechanism: str = "PLAIN") -> Iterator[None]:
        """Send this block's requests (``req`` and every helper) on a connection of ``user``'s."""
        saved_client, saved_user = self.client, self.user
        self.client, self.user = self.connect(user, mechanism), user
        try:
            yield
        finally:
            self.client.close()
            self.client, self.user = saved_client, saved_user

    def name(self, suffix: str) -> str:
        return f"{self.prefix}-{suffix}"

    # -- requests ------------------------------------------------------------------------------
    def req(
        self,
        label: str | None,
        api: int,
        version: int,
        body: dict,
        expect: dict[str, Any] | None = None,
        record: bool = True,
        messages: bool = False,
    ) -> dict:
        """Send one request and return its raw answer (a dict). With a label and ``record``, the
        normalised answer is kept as a step (with its error messages as they are if
        ``messages``) and ``expect`` is checked. An answer the codec cannot read or a closed
        connection is recorded as ``{"EXC": type}`` (Kafka closes the connection on a version it
        does not speak)."""
        try:
            answer = self.client.request(api, version, body).to_dict()
        except (OSError, ValueError, EOFError) as exc:
            answer = {"EXC": type(exc).__name__}
            self.client.close()
            self.client = self.connect(self.user)
        if label is not None and record:
            self.record(label, self.norm(answer, messages=messages), api, version, expect)
        return answer

    def record(
        self, label: str, answer: Any, api: int | None = None, version: int | None = None, expect: dict | None = None
    ) -> None:
        self.steps.append(Step(label, api, version, answer, expect))
        for path, wanted in (expect or {}).items():
            got = lookup(answer, path)
            if got != wanted:
                self.failures.append(f"{label}: {path} = {got!r}, expected {wanted!r}")

    # -- normalisation ---------------------------------------------------------------------------
    def pid(self, pid: Any) -> Any:
        if not isinstance(pid, int) or pid < 0:
            return pid
        return self.pids.setdefault(pid, f"P{len(self.pids)}")

    def norm(self, obj: Any, key: str | None = None, *, messages: bool = False) -> Any:
        if isinstance(obj, dict):
            # an error answer's producer id is a placeholder (Kafka: -1, or 0 in DescribeTransactions
            # for an unknown id), not a producer: kept as it is
            placeholder = obj.get("error_code") not in (None, 0)
            return {
                k: v if placeholder and k in PRODUCER_ID_KEYS else self.norm(v, k, messages=messages)
                for k, v in obj.items()
                if k not in DROP_KEYS
            }
        if isinstance(obj, list):
            items = [self.norm(x, key, messages=messages) for x in obj]
            by = next(
                (f for f in SORTED_BY.get(key or "", ()) if all(isinstance(x, dict) and f in x for x in items)), None
            )
            if by is not None:
                items.sort(key=lambda x: str(x[by]))
            elif key == "topics" and items and all(isinstance(x, dict) and "topic" in x for x in items):
                # DescribeTransactions: the transaction's partitions, a set on Kafka
                items = sorted(({**x, "partitions": sorted(x["partitions"])} for x in items), key=lambda x: x["topic"])
            return items
        if isinstance(obj, (bytes, bytearray, memoryview)):
            return self.summarize(bytes(obj)) if key == "records" else f"<{len(obj)} bytes>"
        if isinstance(obj, uuid.UUID):
            return "<zero-uuid>" if obj.int == 0 else "<uuid>"
        if key == "error_message" and not messages:
            return "<message>" if obj else obj
        if key is not None and (key == "error_code" or key.endswith("_error_code")):
            return error_name(obj)
        if key in PRODUCER_ID_KEYS:
            return self.pid(obj)
        if key in TIMESTAMP_KEYS and isinstance(obj, int) and obj > 0:
            return "<ts>"
        if isinstance(obj, str):
            return UUID_TEXT.sub("<uuid>", obj)
        return obj

    def summarize(self, blob: bytes) -> Any:
        if not blob:
            return []
        out: list[Any] = []
        for batch in R.read_batches(blob):
            if not isinstance(batch, R.RecordBatch):
                out.append(type(batch).__name__)
                continue
            summary: dict[str, Any] = {
                "offset": batch.base_offset,
                "last": batch.last_offset,
                "pid": self.pid(batch.producer_id),
                "epoch": batch.producer_epoch,
                "seq": batch.base_sequence,
                "txn": batch.is_transactional,
                "control": batch.is_control,
            }
            if batch.is_control:
                summary["markers"] = [
                    f"{c.kind.name if c.kind is not None else '?'}:v{c.version}:ce{c.coordinator_epoch}"
                    for c in batch.control_records()
                ]
            else:
                summary["values"] = [r.value.decode("latin1") if r.value is not None else None for r in batch.records]
            out.append(summary)
        return out

    # -- helpers (not recorded unless a label is given) ----------------------------------------------
    def retry(self, what: str, send: Callable[[], dict], code: Callable[[dict], int], tries: int = 150) -> dict:
        """``send()`` until its code is not a retriable coordinator code (Kafka's first moments)."""
        for _ in range(tries):
            answer = send()
            if code(answer) not in RETRIABLE:
                return answer
            time.sleep(0.1)
        raise ProbeError(f"{self.kind}: {what} kept answering {error_name(code(answer))}")

    def find_coordinator(self, key: str, key_type: int = 1) -> None:
        """FindCoordinator until NONE (the topic behind it may still be created or loading)."""
        self.retry(
            f"FindCoordinator {key}",
            lambda: self.req(None, FIND_COORDINATOR, 4, {"key_type": key_type, "coordinator_keys": [key]}),
            lambda r: r["coordinators"][0]["error_code"],
        )

    def create_topic(self, topic: str, partitions: int = 1) -> None:
        """CreateTopics, then wait until every partition has a leader that answers ListOffsets
        (Kafka answers NOT_LEADER_OR_FOLLOWER for a moment after Metadata shows the leader)."""
        body = {
            "topics": [
                {"name": topic, "num_partitions": partitions, "replication_factor": 1, "assignments": [], "configs": []}
            ],
            "timeout_ms": 10000,
            "validate_only": False,
        }
        r = self.req(None, CREATE_TOPICS, 7, body)
        if r["topics"][0]["error_code"] != 0:
            raise ProbeError(f"{self.kind}: CreateTopics {topic}: {error_name(r['topics'][0]['error_code'])}")
        for _ in range(100):
            m = self.req(
                None,
                METADATA,
                12,
                {
                    "topics": [{"name": topic, "topic_id": uuid.UUID(int=0)}],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
            )
            t = m["topics"][0]
            if t["error_code"] == 0 and len(t["partitions"]) == partitions:
                self.topic_ids[topic] = t["topic_id"]
                lo = self.req(
                    None,
                    LIST_OFFSETS,
                    7,
                    {
                        "replica_id": -1,
                        "isolation_level": 0,
                        "topics": [
                            {
                                "name": topic,
                                "partitions": [
                                    {"partition_index": i, "current_leader_epoch": -1, "timestamp": -1}
                                    for i in range(partitions)
                                ],
                            }
                        ],
                    },
                )
                if all(p["error_code"] == 0 for p in lo["topics"][0]["partitions"]):
                    return
            time.sleep(0.05)
        raise ProbeError(f"{self.kind}: topic {topic} not ready")

    def init_pid(self, tid: str | None, timeout: int = 60000, ver: int = 5, pid: int = -1, epoch: int = -1, **kw):
        body = {"transactional_id": tid, "transaction_timeout_ms": timeout, "producer_id": pid, "producer_epoch": epoch}
        return self.req(kw.pop("label", None), INIT_PRODUCER_ID, ver, body, **kw)

    def init_ok(self, tid: str, timeout: int = 60000, ver: int = 5) -> tuple[int, int]:
        """InitProducerId until NONE: (producer id, epoch)."""
        r = self.retry(f"InitProducerId {tid}", lambda: self.init_pid(tid, timeout, ver), lambda r: r["error_code"])
        if r["error_code"] != 0:
            raise ProbeError(f"{self.kind}: InitProducerId {tid}: {error_name(r['error_code'])}")
        return r["producer_id"], r["producer_epoch"]

    def add_partitions(self, tid: str, pid: int, epoch: int, topics: dict[str, list[int]], ver: int = 3, **kw):
        tl = [{"name": t, "partitions": ps} for t, ps in topics.items()]
        if ver <= 3:
            body = {
                "v3_and_below_transactional_id": tid,
                "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": tl,
            }
        else:
            body = {
                "transactions": [
                    {
                        "transactional_id": tid,
                        "producer_id": pid,
                        "producer_epoch": epoch,
                        "verify_only": False,
                        "topics": tl,
                    }
                ]
            }
        return self.req(kw.pop("label", None), ADD_PARTITIONS_TO_TXN, ver, body, **kw)

    def produce(
        self,
        topic: str,
        partition: int,
        pid: int,
        epoch: int,
        seq: int,
        values: list[str],
        ver: int = 12,
        tid: str | None = None,
        transactional: bool = True,
        **kw,
    ):
        blob = R.build_batch(
            [(None, v.encode()) for v in values],
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            transactional=transactional,
        )
        data: dict[str, Any] = {"name": topic, "partition_data": [{"index": partition, "records": blob}]}
        if ver >= 13:
            data["topic_id"] = self.topic_ids[topic]
        body = {"transactional_id": tid, "acks": -1, "timeout_ms": 10000, "topic_data": [data]}
        return self.req(kw.pop("label", None), PRODUCE, ver, body, **kw)

    def produce_ok(self, *args, **kw) -> None:
        r = self.produce(*args, **kw)
        code = r["responses"][0]["partition_responses"][0]["error_code"]
        if code != 0:
            raise ProbeError(f"{self.kind}: Produce {args[:2]}: {error_name(code)}")

    def end_txn(self, tid: str, pid: int, epoch: int, commit: bool, ver: int = 5, **kw):
        body = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": commit}
        return self.req(kw.pop("label", None), END_TXN, ver, body, **kw)

    def end_ok(self, tid: str, pid: int, epoch: int, commit: bool, ver: int = 5) -> dict:
        """EndTxn (retried while CONCURRENT_TRANSACTIONS), then wait until the transaction is complete."""
        r = self.retry(f"EndTxn {tid}", lambda: self.end_txn(tid, pid, epoch, commit, ver), lambda r: r["error_code"])
        self.settle(tid)
        return r

    def describe_txns(self, tids: list[str], **kw):
        return self.req(kw.pop("label", None), DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": list(tids)}, **kw)

    def txn_state(self, tid: str) -> str:
        return self.describe_txns([tid])["transaction_states"][0]["transaction_state"]

    def settle(self, tid: str, timeout: float = 15.0) -> str:
        """Wait until the transaction is not in PrepareCommit/PrepareAbort: Kafka answers EndTxn
        before its markers are written and answers CONCURRENT_TRANSACTIONS meanwhile; fakebroker
        writes them inside EndTxn. Probes compare the settled states."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.txn_state(tid)
            if not state.startswith("Prepare") or time.monotonic() > deadline:
                return state
            time.sleep(0.02)

    def wait_state(self, tid: str, states: set[str], timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            state = self.txn_state(tid)
            if state in states:
                return state
            if time.monotonic() > deadline:
                raise ProbeError(f"{self.kind}: {tid} stayed {state}, not one of {sorted(states)}")
            time.sleep(0.05)

    def fetch(self, topic: str, partition: int, offset: int, isolation: int, ver: int = 16, **kw):
        part = {
            "partition": partition,
            "current_leader_epoch": -1,
            "fetch_offset": offset,
            "last_fetched_epoch": -1,
            "log_start_offset": -1,
            "partition_max_bytes": 1 << 20,
        }
        data: dict[str, Any] = {"topic": topic, "partitions": [part]}
        if ver >= 13:
            data["topic_id"] = self.topic_ids[topic]
        body = {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 22,
            "isolation_level": isolation,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [data],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        return self.req(kw.pop("label", None), FETCH, ver, body, **kw)

    def list_offsets(self, topic: str, partition: int, ts: int, isolation: int, ver: int = 7, **kw):
        body = {
            "replica_id": -1,
            "isolation_level": isolation,
            "topics": [
                {
                    "name": topic,
                    "partitions": [{"partition_index": partition, "current_leader_epoch": -1, "timestamp": ts}],
                }
            ],
            "timeout_ms": 1000,
        }
        return self.req(kw.pop("label", None), LIST_OFFSETS, ver, body, **kw)


def lookup(obj: Any, path: str) -> Any:
    """``lookup(answer, "topics.0.error_code")``; ``<absent>`` when the path does not exist."""
    for part in path.split(".") if path else []:
        if isinstance(obj, list) and part.lstrip("-").isdigit() and -len(obj) <= int(part) < len(obj):
            obj = obj[int(part)]
        elif isinstance(obj, dict) and part in obj:
            obj = obj[part]
        else:
            return "<absent>"
    return obj


def diff(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """The fields in which two normalised answers differ: (dotted path, a's value, b's value)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            sub = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                out.append((sub, a.get(k, "<absent>"), b.get(k, "<absent>")))
            else:
                out += diff(a[k], b[k], sub)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, f"{path}.{i}" if path else str(i))
        return out
    return [] if a == b else [(path, a, b)]


@dataclass
class Difference:
    label: str
    path: str
    kafka: Any
    fake: Any

    def __str__(self) -> str:
        return f"{self.label}: {self.path or '<answer>'}: kafka={self.kafka!r} fakebroker={self.fake!r}"


def compare(kafka: list[Step], fake: list[Step]) -> tuple[int, list[Difference]]:
    """(steps compared, differences). Steps are matched by position and must carry the same labels."""
    out: list[Difference] = []
    for i in range(max(len(kafka), len(fake))):
        k = kafka[i] if i < len(kafka) else None
        f = fake[i] if i < len(fake) else None
        if k is None or f is None or k.label != f.label:
            out.append(Difference(f"step {i}", "<label>", k and k.label, f and f.label))
            break
        out += [Difference(k.label, p, a, b) for p, a, b in diff(k.answer, f.answer)]
    return min(len(kafka), len(fake)), out


# -- the registry --------------------------------------------------------------------------------
ProbeFunction = Callable[[Target], None]
PROBES: dict[str, ProbeFunction] = {}
SECURED_PROBES: set[str] = set()  # the names of the probes of the secured pair


@overload
def probe(fn: ProbeFunction) -> ProbeFunction: ...
@overload
def probe(*, secured: bool = False) -> Callable[[ProbeFunction], ProbeFunction]: ...
def probe(fn: ProbeFunction | None = None, *, secured: bool = False) -> Any:
    """Register a probe under its function name (without ``probe_``): ``@probe``, or
    ``@probe(secured=True)`` for one that runs against the secured pair."""

    def register(fn: ProbeFunction) -> ProbeFunction:
        name = fn.__name__.removeprefix("probe_")
        PROBES[name] = fn
        if secured:
            SECURED_PROBES.add(name)
        return fn

    return register if fn is None else register(fn)


def run_probe(name: str, kind: str, port: int, run_id: str, security: Security | None = None) -> Target:
    """Run one probe against a broker; every name it uses starts with ``cf<run_id>-<probe>``. A
    secured probe needs the target's ``security``."""
    if (name in SECURED_PROBES) != (security is not None):
        raise ValueError(f"probe {name}: secured={name in SECURED_PROBES} but security={security!r}")
    target = Target(kind, port, f"cf{run_id}-{name.replace('_', '-')}", security=security)
    try:
        PROBES[name](target)
    finally:
        target.close()
    return target


def offset_fetch(s: Target, label: str | None, ver: int, group: str, topic: str, *, stable: bool = True, **kw: Any):
    """OffsetFetch of ``topic``-0 for ``group`` in the shape of every version (v0-7 one group, v8+ many)."""
    body = {
        "group_id": group,
        "topics": [{"name": topic, "partition_indexes": [0]}],
        "groups": [
            {
                "group_id": group,
                "member_id": None,
                "member_epoch": -1,
                "topics": [{"name": topic, "partition_indexes": [0]}],
            }
        ],
        "require_stable": stable,
    }
    return s.req(label, OFFSET_FETCH, ver, body, **kw)
