"""What a handler gets and may return.

A handler is ``handle(ctx, request) -> response`` where ``request`` is the typed request
body and the response a typed body (a dict works too). A handler that has to wait (Fetch
until ``min_bytes`` arrive) returns a :class:`Wait`; one whose answer the core decides later
(a JoinGroup waiting for the group) a :class:`Parked`; one with much to do :class:`Steps`; acks=0 Produce returns
:data:`NO_RESPONSE` (or :class:`CloseInstead` when it failed). Handlers never touch sockets
or trio: the server does the waiting. A handler reports what its request changed beyond
its own answer in ``ctx.effects`` (new records wake parked fetches).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator
from dataclasses import field
from typing import Any

from ..core.cluster_state import ClusterState
from ..core.security.acls import ANONYMOUS, CLUSTER_NAME, Operation, ResourceType
from ..core.timers import Pending
from ..lazy_dataclasses import dataclass
from ..protocol.messages import Message, api_keys, response_type


@dataclass(slots=True)
class Effects:
    """What a request changed that others may wait on."""

    data_changed: bool = False  # records deleted, topics or partitions gone, added or moved: wake every fetch
    partitions: set[tuple[str, int]] = field(default_factory=set)  # (topic, index) whose records grew

    @property
    def any_data(self) -> bool:
        """Whether the request woke any parked fetch."""
        return self.data_changed or bool(self.partitions)


@dataclass(slots=True)
class RequestContext:
    cluster: ClusterState
    broker_id: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    now_ms: int
    client_host: str = "127.0.0.1"
    effects: Effects = field(default_factory=Effects)
    connection: str = ""  # the client's address and port (a share session belongs to its connection)
    principal: str = ANONYMOUS  # who the connection authenticated as (User:ANONYMOUS on PLAINTEXT)
    security_protocol: str = "PLAINTEXT"  # the listener's: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
    listener: str = ""  # the listener's name ("": the broker's first): the addresses its clients are told
    token_authenticated: bool = False  # the connection logged in with a delegation token (SCRAM tokenauth)
    denials: set[tuple[Operation, ResourceType, str]] | None = None  # those recorded (made at the first)

    def allowed(
        self, operation: Operation, resource_type: ResourceType, name: str = CLUSTER_NAME, *, quiet: bool = False
    ) -> bool:
        """May this request's principal do ``operation`` on the resource? Always, without an
        authorizer (``authorizer.class.name`` unset), as on Kafka. A denial is recorded
        (``access_denied``, :meth:`note_denied`) unless ``quiet``: Kafka's ``logIfDenied=false``,
        for the checks it makes only to filter or to choose between two checks."""
        authorizer = self.cluster.authorizer
        if not authorizer.enabled:
            return True
        if authorizer.authorize(self.principal, self.client_host, operation, resource_type, name):
            return True
        if not quiet:
            self.note_denied(operation, resource_type, name)
        return False

    def note_denied(self, operation: Operation, resource_type: ResourceType, name: str) -> None:
        """Record that the authorizer refused this request ``operation`` on the resource
        (``access_denied``), once per request for each operation and resource."""
        key = (operation, resource_type, name)
        if self.denials is None:
            self.denials = set()
        elif key in self.denials:
            return
        self.denials.add(key)
        self.cluster.authorizer.log_denied(
            self.principal,
            self.client_host,
            operation,
            resource_type,
            name,
            self.now_ms,
            broker=self.broker_id,
            api=api_name(self.api_key),
            client_id=self.client_id,
        )

    def allowed_any(self, operation: Operation, resource_type: ResourceType) -> bool:
        """May the principal do ``operation`` on some resource of the type (an idempotent
        producer's IDEMPOTENT_WRITE or any topic WRITE)? Never recorded when denied: Kafka's
        ``authorizeByResourceType`` asks its authorizer with ``logIfDenied=false``."""
        authorizer = self.cluster.authorizer
        return not authorizer.enabled or authorizer.authorize_any(
            self.principal, self.client_host, operation, resource_type
        )

    def response(self, **fields: Any) -> Message:
        """A response body of this request's API with the given fields, defaults elsewhere."""
        return response_type(self.api_key).new(**fields)

    def item(self, array: str, values: dict[str, Any]) -> Message:
        """One element of the response's ``array`` field, typed now: a long answer run in
        :class:`Steps` pays for its elements slice by slice, not all in :meth:`response`."""
        struct = response_type(self.api_key).cls._by_attr[array].struct
        assert struct is not None, f"{array} is not an array of structs"
        return struct.from_dict(values)

    def data_changed(self, topic: str | None = None, partition: int | None = None) -> None:
        """Wake parked fetches: those reading ``topic``-``partition`` when named (records were
        appended there), else every one (anything else a fetch may have to answer for)."""
        if topic is None or partition is None:
            self.effects.data_changed = True
        else:
            self.effects.partitions.add((topic, partition))


@functools.cache
def api_name(api_key: int) -> str:
    """``0`` -> ``Produce``: an API's name, as events write it."""
    return api_keys().get(api_key, str(api_key))


@dataclass
class Wait:
    """A response that may wait: the server calls ``poll(now_ms, final)`` whenever data may
    have changed and once more at ``deadline_ms`` with ``final=True``; a non-None result is
    sent. With ``partitions``, only records appended to those (or a change of every
    partition's state, such as a leader move or a deletion) count as a change."""

    deadline_ms: int
    poll: Callable[[int, bool], Message | None]
    partitions: frozenset[tuple[str, int]] | None = None  # polled when these change (None: any change)


@dataclass
class Parked:
    """A response decided later by the core (a JoinGroup or SyncGroup waiting for the rest of
    the group): the server waits for ``pending`` and sends ``respond(pending.value)``."""

    pending: Pending
    respond: Callable[[Any], Message]


SLICE = 500  # a request naming more topics or partitions than this is worked out in Steps
# Items between two points where a long handler may pause: the server pauses it at the first
# such point after a few ms of work (``server.handler_stage``), so a slice costs about the same
# time whatever one item costs, and a small request beside it waits a few ms per await.
STEP = 50


# What a Steps generator yields: None at a point where it may pause, or a job: a call that
# touches no state and may take long (checking a compressed batch of millions of records),
# which the server runs off its event loop and whose value it sends back into the generator.
Job = Callable[[], Any]
StepsGenerator = Generator[Job | None, Any, Any]


@dataclass
class Steps:
    """A long answer worked out in slices (a Produce to 50,000 partitions, a Metadata creating
    50,000 topics): ``steps`` yields every ``STEP`` items and returns the answer; the server
    runs it a few ms at a time and lets every other connection run between two slices, so one
    large request stalls nobody. ``job``, when set, is the job ``steps`` yielded last and
    waits for (see :data:`Job`)."""

    steps: StepsGenerator
    job: Job | None = None

    def finish(self) -> Any:
        """Every slice at once, jobs included, and the answer (for a caller that lets nobody
        else run between)."""
        try:
            job = self.job
            while True:
                job = self.steps.send(job()) if job is not None else next(self.steps)
        except StopIteration as done:
            return done.value


def in_steps(steps: StepsGenerator, size: int) -> Any:
    """The answer at once when the request is small (``size`` items, one slice) and needs no
    job, else :class:`Steps` for the server to run slice by slice."""
    if size > SLICE:
        return Steps(steps)
    try:
        while True:
            job = next(steps)
            if job is not None:
                return Steps(steps, job)
    except StopIteration as done:
        return done.value


class _NoResponse:
    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE = _NoResponse()


class CloseInstead:
    """No answer, and the connection closes: what Kafka does when an acks=0 Produce fails,
    so that the client, which waits for no answer, still notices."""

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"CloseInstead({self.reason!r})"


Result = Message | dict | Wait | Parked | Steps | _NoResponse | CloseInstead
Handler = Callable[[RequestContext, Message], Result]
