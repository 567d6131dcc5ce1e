"""ShareFetch (key 78): a share group member's fetch (KIP-932). Acknowledgements ride along;
records are acquired for the member under a lock (core/groups/share/partitions.py) and the
answer names the acquired ranges with their delivery counts. A share session (epoch 0 opens
it, -1 closes it) remembers the partitions, so a later fetch names only what changed; with
nothing to acquire the request waits up to ``MaxWaitMs`` for records, woken by appends,
releases and lock expiries on its partitions.

With an authorizer (``handleShareFetchRequest``): READ on the group after the group id check and
before the member id's (GROUP_AUTHORIZATION_FAILED, the whole answer); READ on each topic, after
its id is known and before its partition's existence (TOPIC_AUTHORIZATION_FAILED per partition,
for the fetch and for the acknowledgements riding along)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.quotas import CONSUMER_BYTE_RATE
from ..core.security.acls import Operation, ResourceType
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .authz import denied
from .common import current_leader, node_endpoints, topic_name_by_id
from .context import RequestContext, Wait
from .registry import api
from .share_common import member_id_valid, share_enabled

if TYPE_CHECKING:
    from ..core.groups.share.partitions import Fetched
    from ..core.groups.share.sessions import ShareSession

RECORD_LIMIT = 1  # ShareAcquireMode: 0 batch_optimized, 1 record_limit


def handle(ctx: RequestContext, request: Message) -> Message | Wait:
    # the share core is imported at the first ShareFetch: a cluster without share groups never needs it
    from ..core.groups.share.sessions import CLOSE_EPOCH, OPEN_EPOCH

    cluster = ctx.cluster
    v = ctx.api_version
    if not share_enabled(cluster):
        return top_error(ctx, ErrorCode.UNSUPPORTED_VERSION)
    if request.group_id is None:
        return top_error(ctx, ErrorCode.INVALID_REQUEST)
    if denied(ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        return top_error(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not member_id_valid(request.member_id):
        return top_error(ctx, ErrorCode.INVALID_REQUEST)
    renew = v >= 2 and request.is_renew_ack
    if renew and (request.max_bytes or request.min_bytes or request.max_records or request.max_wait_ms):
        return top_error(ctx, ErrorCode.INVALID_REQUEST)
    if v >= 2 and request.share_acquire_mode not in (0, RECORD_LIMIT):
        return top_error(ctx, ErrorCode.INVALID_REQUEST)
    shares = cluster.groups.shares
    group_id, member_id, epoch = request.group_id, request.member_id, request.share_session_epoch
    named = [(t.topic_id, p.partition_index) for t in request.topics for p in t.partitions]
    forgotten = [(f.topic_id, p) for f in request.forgotten_topics_data for p in f.partitions]
    has_acks = any(p.acknowledgement_batches for t in request.topics for p in t.partitions)
    error, session = shares.sessions.for_fetch(
        ctx.broker_id, group_id, member_id, epoch, ctx.connection, named, forgotten, has_acks
    )
    if error == ErrorCode.SHARE_SESSION_LIMIT_REACHED and request.max_wait_ms > 0:
        # Kafka answers a full cache only after MaxWaitMs
        return Wait(ctx.now_ms + request.max_wait_ms, lambda now, final: top_error(ctx, error) if final else None)
    if error or session is None:
        return top_error(ctx, error)
    acks = _acknowledge(ctx, request, group_id, member_id)
    if epoch == CLOSE_EPOCH:
        shares.sessions.close(ctx.broker_id, session)
        for topic, index in shares.release_session(session, ctx.now_ms):
            ctx.data_changed(topic, index)
    for topic, index in shares.take_dead_letter_writes():  # dead letters wake their readers
        ctx.data_changed(topic, index)
    if epoch == CLOSE_EPOCH:
        return _answer(ctx, request, {}, acks, [])
    if renew or request.max_records <= 0 or request.max_bytes <= 0:
        # nothing is read, but the session's partitions that cannot be are named
        return _answer(ctx, request, _session_errors(ctx, session), acks, [])
    listed = list(dict.fromkeys(named)) if epoch != OPEN_EPOCH else list(session.partitions)
    if request.max_wait_ms <= 0:
        # Kafka loads a share partition (reads its state from the share coordinator) on the
        # first fetch that touches it, and answers a fetch that does not wait before that is
        # done, without the partition. Here loading is instant: a new share partition with
        # nothing to acquire is left out as on Kafka; one with records is read at once (on
        # Kafka, from the next fetch: a race resolved the quick way)
        fresh = _start_loading(ctx, request, session)
        fetched = _fetch(ctx, request, session, final=False)
        # a load that fails (a share partition no group initialized) is not known yet either
        fetched = {
            k: f for k, f in (fetched or {}).items() if k not in fresh or f.error != ErrorCode.UNKNOWN_SERVER_ERROR
        }
        got = {k for k, f in fetched.items() if f.acquired}
        listed = [k for k in listed if k not in fresh or k in got]
        return _answer(ctx, request, fetched or {}, acks, listed)
    fetched = _fetch(ctx, request, session, final=False)
    if fetched is not None:
        return _answer(ctx, request, fetched, acks, listed)
    wanted = frozenset(
        (name, index) for topic_id, index in session.partitions if (name := topic_name_by_id(cluster, topic_id))
    )

    def poll(now_ms: int, final: bool) -> Message | None:
        ctx.now_ms = now_ms
        again = _fetch(ctx, request, session, final=final)
        return _answer(ctx, request, again or {}, acks, listed) if again is not None or final else None

    return Wait(ctx.now_ms + request.max_wait_ms, poll, wanted)


def _acknowledge(ctx: RequestContext, request: Message, group_id: str, member_id: str) -> dict:
    """The acknowledgements piggybacked on the fetch: (topic id, partition) -> (code, message)."""
    from ..core.groups.share.records import AckBatch, validate_batches

    cluster = ctx.cluster
    shares = cluster.groups.shares
    max_type = 4 if ctx.api_version >= 2 else 3
    renew = ctx.api_version >= 2 and request.is_renew_ack
    out: dict[Any, tuple[ErrorCode, str | None]] = {}
    for t in request.topics:
        name = topic_name_by_id(cluster, t.topic_id)
        for p in t.partitions:
            if not p.acknowledgement_batches:
                continue
            key = (t.topic_id, p.partition_index)
            batches = [
                AckBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types)) for b in p.acknowledgement_batches
            ]
            if name is None:
                out[key] = (ErrorCode.UNKNOWN_TOPIC_ID, None)
                continue
            if validate_batches(batches, max_type, renew):
                out[key] = (ErrorCode.INVALID_REQUEST, None)  # Kafka sends no message with it
                continue
            if denied(ctx, Operation.READ, ResourceType.TOPIC, name):
                out[key] = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
                continue
            partition = cluster.partition(name, p.partition_index)
            if partition is None:
                out[key] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
                continue
            if partition.leader != ctx.broker_id:
                out[key] = (ErrorCode.NOT_LEADER_OR_FOLLOWER, None)
                continue
            out[key] = shares.acknowledge(
                group_id, member_id, ctx.client_id, name, p.partition_index, batches, ctx.now_ms
            )
            ctx.data_changed(name, p.partition_index)  # released records wake other members' fetches
    return out


def _partition_error(ctx: RequestContext, topic_id: Any, index: int) -> tuple[ErrorCode, str | None]:
    """Why a session partition cannot be read here, or (NONE, its topic name)."""
    cluster = ctx.cluster
    name = topic_name_by_id(cluster, topic_id)
    if name is None:
        return ErrorCode.UNKNOWN_TOPIC_ID, None
    if denied(ctx, Operation.READ, ResourceType.TOPIC, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, None
    partition = cluster.partition(name, index)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    if partition.leader != ctx.broker_id:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, None
    return ErrorCode.NONE, name


def _session_errors(ctx: RequestContext, session: ShareSession) -> dict[Any, Fetched]:
    from ..core.groups.share.partitions import Fetched

    out = {}
    for key in session.partitions:
        error, _ = _partition_error(ctx, *key)
        if error:
            out[key] = Fetched(error)
    return out


def _start_loading(ctx: RequestContext, request: Message, session: ShareSession) -> set:
    """Load the session's share partitions not loaded on this broker yet; returns them."""
    shares = ctx.cluster.groups.shares
    started = set()
    for topic_id, index in session.partitions:
        error, name = _partition_error(ctx, topic_id, index)
        if error or name is None or shares.loaded(request.group_id, name, index):
            continue
        shares.load(request.group_id, name, index, ctx.now_ms)
        started.add((topic_id, index))
    return started


def _fetch(ctx: RequestContext, request: Message, session: ShareSession, *, final: bool) -> dict | None:
    """Acquire for every partition of the session, the budget shared round-robin (rotated by the
    session epoch). None: nothing to answer with yet (the caller may wait)."""
    from ..core.groups.share.partitions import Fetched

    cluster = ctx.cluster
    shares = cluster.groups.shares
    group_id, member_id = request.group_id, request.member_id
    parts = list(session.partitions)
    if parts:
        shift = session.epoch % len(parts)
        parts = parts[shift:] + parts[:shift]
    read_committed = cluster.group_configs.get(group_id, "share.isolation.level") == "read_committed"
    loaded = []
    out: dict[Any, Fetched] = {}
    errors = False
    for topic_id, index in parts:
        error, name = _partition_error(ctx, topic_id, index)
        if error or name is None:
            out[(topic_id, index)] = Fetched(error)
            errors = True
            continue
        sp = shares.load(group_id, name, index, ctx.now_ms)
        if sp is None:
            out[(topic_id, index)] = Fetched(ErrorCode.UNKNOWN_SERVER_ERROR)
            errors = True
            continue
        loaded.append(((topic_id, index), sp))
    min_bytes = max(request.min_bytes, 1)
    if not final and not errors:
        available = 0
        for _, sp in loaded:
            available += shares.available_bytes(sp, read_committed, min_bytes - available)
            if available >= min_bytes:
                break
        if available < min_bytes:
            return None
    budget = request.max_records
    batch_size = request.batch_size or budget
    record_limit = ctx.api_version >= 2 and request.share_acquire_mode == RECORD_LIMIT
    got = False
    for key, sp in loaded:
        if budget <= 0:
            break
        fetched = shares.acquire(
            group_id, member_id, ctx.client_id, sp, budget, batch_size, ctx.now_ms, record_limit=record_limit
        )
        if fetched.acquired:
            got = True
            out[key] = fetched
            budget -= sum(a.last - a.first + 1 for a in fetched.acquired)
    if not got and not errors and not final:
        return None
    return out


def _answer(ctx: RequestContext, request: Message, fetched: dict, acks: dict, listed: list) -> Message:
    """The response: partitions with records, errors or acknowledgement results, and every
    partition the request named in its session's first fetch (or added since). As in Kafka,
    the partitions read come first, then those in error, then those that only carried
    acknowledgements."""
    from ..core.groups.share.partitions import Fetched

    cluster = ctx.cluster
    failed = [k for k, f in fetched.items() if f.error]
    read = [k for k in [*listed, *fetched] if k not in failed]
    keys = list(dict.fromkeys([*read, *failed, *acks]))
    by_topic: dict[Any, list[dict]] = {}
    leaders: set[int] = set()
    for topic_id, index in keys:
        f = fetched.get((topic_id, index), Fetched())
        ack_code, ack_message = acks.get((topic_id, index), (ErrorCode.NONE, None))
        leader = {"leader_id": 0, "leader_epoch": 0}
        if f.error == ErrorCode.NOT_LEADER_OR_FOLLOWER or ack_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            name = topic_name_by_id(cluster, topic_id)
            partition = cluster.partition(name, index) if name else None
            leader = current_leader(partition)
            if partition is not None:
                leaders.add(partition.leader)
        by_topic.setdefault(topic_id, []).append(
            {
                "partition_index": index,
                "error_code": f.error,
                "error_message": f.message,
                "acknowledge_error_code": ack_code,
                "acknowledge_error_message": ack_message,
                "current_leader": leader,
                "records": f.records,
                "acquired_records": [
                    {"first_offset": a.first, "last_offset": a.last, "delivery_count": a.count} for a in f.acquired
                ],
            }
        )
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        acquisition_lock_timeout_ms=cluster.group_configs.get_int(request.group_id, "share.record.lock.duration.ms"),
        responses=[{"topic_id": tid, "partitions": parts} for tid, parts in by_topic.items()],
        node_endpoints=node_endpoints(cluster, leaders, ctx.listener),
    )


def top_error(ctx: RequestContext, code: ErrorCode) -> Message:
    """Kafka's ``getErrorResponse`` body: no message, no lock timeout, no partitions."""
    return ctx.response(
        throttle_time_ms=0,
        error_code=code,
        error_message=None,
        acquisition_lock_timeout_ms=0,
        responses=[],
        node_endpoints=[],
    )


API = api(ApiKey.SHARE_FETCH, (1, 2), handle, byte_quota=CONSUMER_BYTE_RATE)
