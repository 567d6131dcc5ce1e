"""FakeCluster: the public facade. N brokers on loopback in one task group, one cluster id.

Three ways to run it::

    async with FakeCluster(brokers=3) as cluster:          # under trio, or asyncio via anyio
        ...

    with FakeCluster(brokers=3).run_in_thread() as cluster:  # synchronous tests
        ...

Control methods (``create_topic``, ``records``, ...) are safe to call from the test's own
thread while the cluster runs in its background thread. The facade is composed of parts
(``clock``, ``faults`` and the actions, topics, views and waiting behind its methods), all
reaching the cluster through one :class:`~fakebroker.cluster.proxy.LoopProxy`.
"""

from __future__ import annotations

import base64
import logging
import os
import threading
import uuid
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.cluster_state import ClusterState, Topic
from ..core.configs import BrokerConfig
from ..core.events import Event
from ..core.events.ring import DEFAULT_CAPACITY
from ..core.quotas import Alteration, entity_of
from ..core.releases import DEFAULT_RELEASE, release
from ..protocol.framing import DEFAULT_MAX_FRAME_SIZE
from ..server.broker import BrokerServer, advertised_for
from ..server.clock import RealClock, VirtualClock
from ..server.runtime import Runtime
from ..server.tasks import task_group
from ..server.ticker import Ticker
from . import collector, loops
from .access import AclControl
from .actions import BrokerActions, NetworkActions
from .checks import check_options, quota_key_hint
from .clock import ClockControl
from .errors import ClusterUsageError
from .faults import FaultControl
from .listeners import broker_endpoints, listener_specs
from .proxy import LoopProxy
from .security import (
    DEFAULT_MECHANISMS,
    ClientCertificate,
    OAuthValidator,
    TlsFiles,
    check_security,
    listeners_security,
    oauth_token_validator,
    remove_when_gone,
)
from .topics import TopicActions
from .transactions import TransactionActions, TransactionView, committed_records, transaction_view
from .waiting import Waiting

if TYPE_CHECKING:  # imported on first use: a cluster that is only started needs none of them
    from ..storage import DataDir, Journal
    from .shares import ShareGroupView
    from .streams import StreamsGroupView
    from .views import BrokerView, GroupView, TopicView

T = TypeVar("T")
log = logging.getLogger("fakebroker")


_RUNNING_ALREADY = "this cluster is running already: start it once and use it inside that block"


def _cluster_id() -> str:
    """22-character URL-safe base64 of a random UUID, like Kafka's cluster ids."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class FakeCluster:
    """An in-process Kafka cluster for tests.

    :param brokers: number of brokers (node ids 0..N-1).
    :param port: port of the first broker; the others take port+1, port+2, ... (0 = free ports).
    :param topics: topics to create at start, ``{"orders": 6}`` or ``{"orders": {"partitions": 6, "config": {...}}}``.
    :param config: broker settings under Kafka's names (``{"auto.create.topics.enable": False}``).
    :param racks: each broker's rack (Kafka's ``broker.rack``), one per broker in node id order,
        None for a broker without one: ``racks=["a", "b", "c"]``. Metadata and DescribeCluster
        name them, and a new topic's replicas are spread over the racks as Kafka spreads them,
        so rack-aware consumers (``client.rack``, KIP-881) can be tested.
    :param coordinator_load_time_ms: how long a coordinator that takes a group over answers
        COORDINATOR_LOAD_IN_PROGRESS while it "reads the offsets topic".
    :param transaction_marker_delay_ms: how long an ended transaction stays in PrepareCommit or
        PrepareAbort before its markers are written (Kafka answers EndTxn first and writes the
        markers a few milliseconds later; meanwhile the id answers CONCURRENT_TRANSACTIONS).
        0, the default, writes them at once.
    :param kafka_version: the Kafka release to pose as, ``"4.4"`` (default), ``"4.3"`` or
        ``"3.9"``: its API version window and feature levels, so a client that needs something
        newer than the release a team runs fails here as it would there.
    :param features: finalized feature levels, e.g. ``{"transaction.version": 1}`` (applied
        over the release's own).
    :param virtual_time: run the broker's timers on a virtual clock that only moves when the
        test calls ``cluster.clock.advance(seconds)``.
    :param data_dir: keep partition logs on disk in this directory (created if missing) as
        segment files, with the topics and committed offsets beside them, so a cluster started
        again on the same directory finds its topics, records and offsets (and its cluster id).
        Every answered change is on disk before its answer goes out (a process killed at any
        moment loses nothing answered); a damaged log is cut at its first bad batch on start.
        Raises :class:`~fakebroker.storage.DataDirError` if the directory cannot be used (one
        in use, a file, or partition logs without usable metadata).
    :param advertised_host: the address Metadata and ``bootstrap_servers`` name (default: ``host``
        when it is a concrete address, 127.0.0.1 for 0.0.0.0 and ::1 for ::).
    :param event_log_size: how many events the log keeps (default 100,000; None: all); past it
        the oldest are dropped and counted in ``events_dropped``, and ``seq`` keeps counting.
    :param warm: start like a Kafka that earlier tests have used: ``__consumer_offsets`` exists
        from the start, so a consumer's first FindCoordinator does not create it on the way
        (nor, with ``fakebroker.coordinator.first.find.unavailable``, answer it
        COORDINATOR_NOT_AVAILABLE). Off by default: a fresh cluster, like a fresh Kafka, has no
        internal topic until a client needs one. The pytest plugin's fixtures turn it on.
    :param security_protocol: the listeners' protocol, as Kafka names them: ``PLAINTEXT`` (the
        default), ``SSL``, ``SASL_PLAINTEXT`` or ``SASL_SSL``. With TLS, a throwaway CA and a
        certificate for the advertised host, ``localhost`` and 127.0.0.1 are made at start;
        clients trust ``cluster.tls_ca_file`` (PEM); Kafka's ``ssl.keystore.*`` and
        ``ssl.truststore.*`` settings (``config``) serve a certificate of the test's own. With
        SASL, ``sasl.enabled.mechanisms`` (``config``) is PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and
        OAUTHBEARER unless set; a failed authentication is answered as Kafka answers it,
        ``connection.failed.authentication.delay.ms`` late, and ``connections.max.reauth.ms``
        bounds a session (KIP-368). For several listeners per broker, give Kafka's
        ``listeners``, ``listener.security.protocol.map`` and ``advertised.listeners`` in
        ``config`` instead: a client is told the addresses of the listener it came in on;
        ``bootstrap_servers`` names the first, ``bootstrap_for(name)`` any.
    :param users: SASL users, name -> password: each gets a PLAIN password and SCRAM-SHA-256/512
        credentials (4096 iterations). More can be added with AlterUserScramCredentials.
    :param oauth_validator: how OAUTHBEARER tokens are checked. By default as Kafka's default
        validator checks them: unsigned JWS tokens (``alg`` ``none``) with an ``exp`` in the
        future and a ``sub``. A mapping sets that validator's options, under Kafka's JAAS names
        (``{"unsecuredValidatorPrincipalClaimName": "client_id",
        "unsecuredValidatorRequiredScope": "kafka", "unsecuredValidatorScopeClaimName": "scp",
        "unsecuredValidatorAllowableClockSkewMs": 1000}``). A function ``(token: str) ->
        OAuthToken(principal, expiry_ms, scopes)`` checks them the test's way instead, raising to
        refuse one (:class:`~fakebroker.cluster.security.InvalidOAuthToken` chooses the status
        the client is told, anything else is ``invalid_token``). The session ends at the
        token's expiry. Kafka's secured validator (signed JWTs checked against a JWKS) is
        chosen with broker settings instead: ``sasl.oauthbearer.jwks.endpoint.url`` (``file:``
        or ``http(s):``), ``sasl.oauthbearer.expected.audience`` and
        ``sasl.oauthbearer.expected.issuer``.
    :param tune_gc: while any cluster that has it on runs, the process's garbage-collector
        thresholds are (20,000, 20, 20) in place of Python's (700, 10, 10), and come back at
        the end of the first collection after the last one stops (``fakebroker.cluster.collector``;
        a cluster started before then keeps them raised): with the defaults, collections
        walking every connection's objects took most of the CPU of 10,000 members joining.
        ``False`` leaves the collector alone.

    A bad argument (``brokers=0``, a port outside 0..65535, a broker setting Kafka does not know or
    a value not of its type, a topic with an illegal name, no partitions or a replication factor
    above the broker count) raises :class:`ClusterUsageError` at once.
    Calls that name a broker, topic or partition the cluster does not have (``stop_broker(7)``,
    ``move_leader("orders", 9, 1)``), or that need a running broker when none runs
    (``move_coordinator`` with every broker stopped), raise :class:`ClusterUsageError`, a
    ``ValueError`` whose message names the problem and the valid ids.

    Used before its start or after its stop, every method and property that reaches the
    brokers, topics, groups, records, transactions, quotas, fault rules, clock or waits raises
    :class:`ClusterNotRunning` (a ``ClusterUsageError``) saying which and how to run it. What
    the cluster was given or has recorded stays readable at any time: ``cluster_id``,
    ``coordinator_load_time_ms``, ``clock.virtual`` and ``clock.now()``, ``faults.list()``,
    the event log (``events``, ``events_since``, ``event_count``, ``events_dropped``) and
    ``on_event``; ``state`` is the core itself.
    """

    def __init__(
        self,
        brokers: int = 1,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        topics: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
        racks: Sequence[str | None] | None = None,
        cluster_id: str | None = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        coordinator_load_time_ms: int = 0,
        transaction_marker_delay_ms: int = 0,
        virtual_time: bool = False,
        kafka_version: str = DEFAULT_RELEASE,
        features: dict[str, int] | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        advertised_host: str | None = None,
        event_log_size: int | None = DEFAULT_CAPACITY,
        warm: bool = False,
        security_protocol: str = "PLAINTEXT",
        users: Mapping[str, str] | None = None,
        oauth_validator: OAuthValidator | None = None,
        tune_gc: bool = True,
    ):
        check_options(brokers, port, topics, config, racks)  # ClusterUsageError naming what is valid
        posed = release(kafka_version)  # UnknownRelease names the valid ones
        config = dict(config or {})
        check_security(security_protocol, users, config)
        specs = listener_specs(config, security_protocol, port, advertised_host, brokers)
        sasl_protocol = next((s.protocol for s in specs if s.protocol.startswith("SASL_")), specs[0].protocol)
        if sasl_protocol.startswith("SASL_"):
            config.setdefault("sasl.enabled.mechanisms", DEFAULT_MECHANISMS)
        oauth = oauth_token_validator(oauth_validator, sasl_protocol, config)
        if posed.name == "3.9":  # 3.9 served only the classic protocol unless told otherwise
            config.setdefault("group.coordinator.rebalance.protocols", "classic")
        broker_config = BrokerConfig(config)
        self._data_dir: DataDir | None = None
        if data_dir is not None:
            from ..storage import DataDir  # the data directory's code only for a cluster that has one

            self._data_dir = DataDir(data_dir)
        self._journal: Journal | None = None  # makes each answered change durable (with a data dir)
        try:  # a damaged or missing metadata file refuses the directory before anything is touched
            self._saved_meta = self._data_dir.read_meta() if self._data_dir is not None else None
        except BaseException:
            assert self._data_dir is not None
            self._data_dir.close()
            raise
        if self._saved_meta and cluster_id is None:
            cluster_id = self._saved_meta.get("cluster_id")
        if max_frame_size == DEFAULT_MAX_FRAME_SIZE:
            max_frame_size = int(broker_config.get("socket.request.max.bytes"))
        clock = VirtualClock() if virtual_time else RealClock()
        self.runtime = Runtime(
            cluster_id or _cluster_id(),
            broker_config,
            clock,
            max_frame_size=max_frame_size,
            coordinator_load_time_ms=coordinator_load_time_ms,
            transaction_marker_delay_ms=transaction_marker_delay_ms,
            storage=self._data_dir,
            event_log_size=event_log_size,
        )
        self.runtime.state.pose_as(posed.name)
        for name, level in (features or {}).items():
            self.runtime.state.features.set(name, level)  # FeatureError names the valid levels
        for name, password in (users or {}).items():
            self.runtime.state.users.add(name, password)
        self.security_protocol = specs[0].protocol  # the first (client-facing) listener's
        named = [s.advertised_host or advertised_for(s.host or host) for s in specs]
        hosts = list(dict.fromkeys([*named, "localhost", "127.0.0.1"]))  # the TLS certificate's names
        securities, self._tls = listeners_security({s.name: s.protocol for s in specs}, broker_config, hosts, oauth)
        self.tls_files: TlsFiles | None = self._tls.files if self._tls is not None else None
        if self._tls is not None:
            remove_when_gone(self, self._tls)
        self.servers = [
            BrokerServer(i, self.runtime, endpoints=broker_endpoints(specs, securities, host, i))
            for i in range(brokers)
        ]
        self.bind_host = host
        self._racks = list(racks) if racks is not None else [None] * brokers
        self.host = self.servers[0].advertised_host  # what Metadata and bootstrap_servers name
        self._initial_topics = dict(topics or {})
        self._warm = warm
        self._tune_gc = tune_gc
        self._proxy = LoopProxy(self.runtime)
        self._ticker = Ticker(self.runtime)
        self.clock = ClockControl(self._proxy, clock, self._ticker)
        self.faults = FaultControl(self._proxy, self.runtime)
        self.acls = AclControl(self._proxy, self.runtime)  # ACLs in code (cluster/access.py)
        """The fault rules: ``cluster.faults.add(api="Heartbeat", error="REBALANCE_IN_PROGRESS", times=3)``."""
        self._brokers = BrokerActions(self._proxy, self.runtime, self.servers)
        self._network = NetworkActions(self._proxy, self.runtime, self.servers)
        self._topics = TopicActions(self._proxy, self.runtime)
        self._transactions = TransactionActions(self._proxy, lambda: self.state, self.clock.now_ms)
        self._waiting = Waiting(self._proxy, self.runtime)
        self._stack: AsyncExitStack | None = None

    @property
    def state(self) -> ClusterState:
        """The core: topics, the groups of every type and their committed offsets
        (``state.groups``, the group service), for assertions. Change it only through the
        facade's methods."""
        return self.runtime.state

    # -- lifecycle ---------------------------------------------------------------------------
    async def __aenter__(self) -> FakeCluster:
        proxy = self._proxy
        if proxy.task_group is not None:
            raise ClusterUsageError(_RUNNING_ALREADY)
        proxy.loop_thread = threading.get_ident()
        stack = AsyncExitStack()
        if self._tune_gc:
            collector.hold()
            stack.callback(collector.release)
        tg = await stack.enter_async_context(task_group())
        proxy.task_group = tg
        proxy.started = True
        try:
            for server in self.servers:
                await server.open()  # its ports are bound now: no task to wait for
                tg.start_soon(server.run)
                rack = self._racks[server.node_id]
                endpoints = server.advertised()
                first_host, first_port = endpoints[server.endpoints[0].name]
                self.state.broker_started(server.node_id, first_host, first_port, self.clock.now_ms(), rack, endpoints)
            if self._saved_meta:
                from ..storage import restore

                restore(self.state, self._saved_meta, self.clock.now_ms())
            if self._data_dir is not None:
                kept = {(t.name, p.index) for t in self.state.topics.values() for p in t.partitions}
                for name, stray in self._data_dir.set_aside(kept):
                    log.warning("fakebroker: %s is a log of no partition the metadata names: renamed %s", name, stray)
            if self._warm:
                self.state.offsets_topic()  # as the first FindCoordinator would create it
            for name, spec in self._initial_topics.items():
                if name not in self.state.topics:  # a topic kept in the data directory stays as it was
                    self._topics.create(name, spec)
            if self._data_dir is not None:
                from ..storage import Journal

                self._save_meta()  # the restored state, as one snapshot; the journal follows it
                self._journal = Journal(self.state, self._data_dir.journal, self._save_meta, len(self.state.events))
                self.runtime.listeners.append(self._journal.on_event)
                self.runtime.after_events.append(self._journal.flush)
        except BaseException:
            tg.cancel_scope.cancel()
            proxy.task_group = None
            await stack.aclose()
            if self._data_dir is not None:
                self._data_dir.close()
            raise
        tg.start_soon(self._ticker.run)
        self.runtime.settle()
        self._stack = stack
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        assert self._proxy.task_group is not None
        self._proxy.task_group.cancel_scope.cancel()
        stack, self._stack = self._stack, None
        assert stack is not None
        try:
            return await stack.__aexit__(*exc_info)
        finally:
            self._proxy.task_group = None
            if self._data_dir is not None:
                if self._journal is not None:
                    self.runtime.listeners.remove(self._journal.on_event)
                    self.runtime.after_events.remove(self._journal.flush)
                    self._journal.closed = True
                self._save_meta()
                self._data_dir.close()

    def _save_meta(self) -> None:
        """Write the data directory's metadata snapshot from the state (at start, at stop, and
        when the journal of changes since the last one has grown)."""
        from ..storage import snapshot

        assert self._data_dir is not None
        self._data_dir.write_meta(snapshot(self.state))

    @contextmanager
    def run_in_thread(self, backend: str = "trio") -> Iterator[FakeCluster]:
        """Run the cluster in a background thread; returns once every listener accepts. An
        exception raised in the ``with`` block stops the cluster and goes on unchanged.

        The thread's event loop outlives the cluster: after a clean stop it waits, idle, for
        the next cluster of the process (at most two wait; see :meth:`stop_idle_loops`)."""
        if backend not in loops.BACKENDS:
            valid = " and ".join(repr(b) for b in loops.BACKENDS)
            raise ClusterUsageError(f"run_in_thread(backend={backend!r}): the backends are {valid}")
        if self._proxy.task_group is not None:  # before its portal is replaced
            raise ClusterUsageError(_RUNNING_ALREADY)
        with loops.lend(backend) as loop:
            self._proxy.portal = loop.portal
            self._proxy.trio_token = loop.trio_token
            try:
                with loop.hosting(self):
                    yield self
            finally:
                self._proxy.portal = self._proxy.trio_token = None

    @staticmethod
    def stop_idle_loops() -> int:
        """Stop the idle event-loop threads that stopped ``run_in_thread()`` clusters left for
        the next one (daemon threads named ``fakebroker-loop``; a check for threads left
        behind by a test may call this first). Returns how many there were."""
        return loops.stop_idle()

    def threads_may_call(self) -> AbstractAsyncContextManager[None]:
        """``async with cluster.threads_may_call():`` on the loop of a cluster started with
        ``async with``: meanwhile other threads may call its methods, as under
        ``run_in_thread()`` (how a face runs a synchronous helper such as
        :func:`fakebroker.testing.churn.churn` in a worker thread)."""
        return self._proxy.portal_for_threads()

    def start_task(self, task: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Any:
        """Run ``task(*args, task_status=...)`` in the cluster's task group, stopped with the
        cluster; returns what it reports through ``task_status.started(value)`` (how faces
        such as the HTTP control endpoint run beside the brokers)."""

        async def start() -> Any:
            assert self._proxy.task_group is not None
            return await self._proxy.task_group.start(task, *args)

        return self._proxy.run_async(start)

    async def start_task_async(self, task: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Any:
        """``start_task`` from async code on the cluster's loop."""
        self._proxy.check_running()
        assert self._proxy.task_group is not None
        return await self._proxy.task_group.start(task, *args)

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the cluster's loop (at once when already there) and return its
        value; for faces and tests that must act on the loop thread."""
        return self._proxy.read(fn, *args)

    # -- facts -------------------------------------------------------------------------------
    @property
    def tls_ca_file(self) -> str | None:
        """The PEM file of the CA a TLS cluster's certificates come from, for clients to trust
        (``ssl.ca.location``, ``ssl.truststore.location`` with ``ssl.truststore.type=PEM``,
        ``ssl_cafile``; ``tls_files.truststore_p12`` and ``truststore_jks`` hold it for Java, with
        ``tls_files.password``). None without TLS, or when the cluster serves its own certificate
        (``ssl.keystore.*``) and neither its keystore nor its truststore holds the CA."""
        return self.tls_files.ca_file if self.tls_files is not None else None

    def client_certificate(self, name: str, organization_unit: str | None = None) -> ClientCertificate:
        """A client certificate for ``CN=<name>`` signed by this cluster's CA, for mutual TLS
        (``ssl.client.auth=required`` or ``requested`` on an SSL cluster): the broker's principal
        for it is ``User:`` and its subject (``cert.subject``), through
        ``ssl.principal.mapping.rules``. Refused (ClusterUsageError) when ``ssl.truststore.*`` is
        given: the cluster then trusts that truststore's CAs only."""
        if self._tls is None:
            raise ClusterUsageError("client_certificate(): this cluster has no TLS (security_protocol SSL or SASL_SSL)")
        return self._tls.issue_client(name, organization_unit)

    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:P1,127.0.0.1:P2,..."`` for the clients' bootstrap setting (of a running
        cluster: before the start its ports are not yet chosen, after the stop they are closed)."""
        self._proxy.check_running()
        return self.bootstrap_for(self.servers[0].endpoints[0].name)

    @property
    def listener_names(self) -> list[str]:
        """The listeners' names, the first (``bootstrap_servers``') first: one named for
        ``security_protocol`` unless ``config`` gives ``listeners``."""
        return [e.name for e in self.servers[0].endpoints]

    def bootstrap_for(self, listener: str) -> str:
        """``bootstrap_servers`` of one listener by name (``config={"listeners": ...}``): its
        clients are told that listener's addresses."""
        self._proxy.check_running()
        names = self.listener_names
        wanted = listener.upper()
        if wanted not in names:
            raise ClusterUsageError(f"bootstrap_for({listener!r}): the listeners are {', '.join(names)}")
        addresses = [s.endpoints[names.index(wanted)].advertised for s in self.servers]
        return ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in addresses)

    @property
    def cluster_id(self) -> str:
        return self.state.cluster_id

    @property
    def coordinator_load_time_ms(self) -> int:
        return self.state.coordinator_load_time_ms

    @property
    def events(self) -> list[Event]:
        """Everything that happened, in order (typed events from ``fakebroker.core.events``)."""
        return self._proxy.read_any(lambda: list(self.state.events))

    def events_since(self, count: int) -> list[Event]:
        """The events after the first ``count`` ever recorded (``count = cluster.event_count``
        earlier); reads only those, however long the log."""
        return self._proxy.read_any(self.state.events.since, count)

    @property
    def event_count(self) -> int:
        """How many events were ever recorded (kept or dropped): the ``seq`` of the newest."""
        return len(self.state.events)

    @property
    def events_dropped(self) -> int:
        """How many of the oldest events the log dropped to stay within ``event_log_size``."""
        return self.state.events.dropped

    def renew_events(self, between: Callable[[], object] | None = None) -> int:
        """Make what the event log keeps since the last call (its newest events, and the
        member -> client ids the group events keep) again, equal, all at once: dropped,
        ``between()`` called, made again; returns how many events. ``serve`` calls it when
        quiet after a burst, with a collection and ``malloc_trim`` between, so what a burst
        left in the log no longer keeps the burst's memory (``EventLog.renew``); a test has no
        need of it. An event read before and after compare equal but are not the same object."""
        state = self.state

        def renew() -> int:
            return state.groups.events.renew(lambda: state.events.renew(between))

        return self._proxy.read_any(renew)

    def on_event(self, listener: Callable[[Event], None]) -> None:
        """Call ``listener(event)`` for every event from now on (on the cluster's thread); from
        before the start, it hears the start's own events (``broker_started``, ...)."""
        self.runtime.listeners.append(listener)

    # -- topics ------------------------------------------------------------------------------
    def create_topic(
        self, name: str, partitions: int = 1, *, replication_factor: int = -1, config: dict[str, Any] | None = None
    ) -> Topic:
        return self._topics.create(
            name, {"partitions": partitions, "replication_factor": replication_factor, "config": config or {}}
        )

    def delete_topic(self, name: str) -> None:
        self._topics.delete(name)

    def set_group_configs(self, group: str, **configs: Any) -> dict[str, str]:
        """Set group configs as ``kafka-configs --entity-type groups`` does (``_`` for ``.`` in
        names; None deletes one), checked as Kafka's controller checks them; e.g.
        ``set_group_configs("workers", share_auto_offset_reset="earliest")``. Returns the
        group's configs after; a refusal raises ClusterUsageError with Kafka's message."""
        return self._topics.set_group_configs(group, {k.replace("_", "."): v for k, v in configs.items()})

    def topics(self) -> dict[str, int]:
        """Topic name -> partition count."""
        return self._topics.names()

    def describe_topic(self, name: str) -> TopicView | None:
        """A snapshot of a topic: id, config overrides, partitions with leaders and offsets."""
        from .views import topic_view

        return self._proxy.read(topic_view, self.state, name)

    def describe_topics(self, *, internal: bool = False) -> list[TopicView]:
        from .views import topic_view

        def read() -> list[TopicView]:
            views = (topic_view(self.state, name) for name in sorted(self.state.topics))
            return [v for v in views if v is not None and (internal or not v.internal)]

        return self._proxy.read(read)

    def add_partitions(self, topic: str, total: int) -> None:
        """Grow ``topic`` to ``total`` partitions (CreatePartitions). Consumers notice at their
        next metadata refresh (``metadata.max.age.ms``) and their group rebalances, as with Kafka."""
        self._topics.add_partitions(topic, total)

    def offsets(self, topic: str, partition: int) -> tuple[int, int]:
        """(log start offset, high watermark) of a partition."""
        return self._topics.offsets(topic, partition)

    def records(
        self, topic: str, partition: int | None = None, *, committed: bool = False
    ) -> list[tuple[int, int, bytes | None, bytes | None]]:
        """Every record stored, as (partition, offset, key, value), in partition and offset order.
        With ``committed``, only what a read_committed consumer sees: nothing of an aborted or
        still open transaction."""
        if committed:
            return self._proxy.read(committed_records, self.state, topic, partition)
        return self._topics.records(topic, partition)

    def apply_retention(self) -> int:
        """Apply retention now instead of waiting for the next check; returns batches dropped."""
        return self._topics.apply_retention()

    # -- leaders and brokers -----------------------------------------------------------------
    def leader(self, topic: str, partition: int) -> int:
        return self._topics.leader(topic, partition)

    def move_leader(self, topic: str, partition: int, broker: int) -> None:
        """Make ``broker`` the leader of a partition (bumps the leader epoch); clients still
        talking to the old leader get NOT_LEADER_OR_FOLLOWER and refresh their metadata."""
        self._brokers.move_leader(topic, partition, broker)

    def stop_broker(self, broker: int) -> None:
        """Stop a broker as if its process died: its listener and connections close, and the
        partitions it led (coordinators included) move to the next live replica, as Kafka's
        controller moves them; a partition with no other replica goes offline (leader -1).
        From a test thread this returns once the port is closed; from async code on the
        cluster's loop it takes effect at once, or, behind a start or stop of that broker still
        under way, right after it (starts and stops of one broker run in call order)."""
        self._brokers.stop(broker)

    def brokers(self) -> list[BrokerView]:
        """Every broker with its address and whether it runs."""
        from .views import broker_views

        return self._proxy.read(broker_views, self.state)

    async def stop_broker_async(self, broker: int) -> None:
        """Stop a broker and return once its port is closed (async code on the cluster's loop)."""
        await self._brokers.stop_async(broker)

    def start_broker(self, broker: int) -> None:
        """Start a stopped broker again on the same port. From a test thread this returns once
        it listens; from async code on the cluster's loop it returns at once and the broker
        listens a moment later (a ``broker_started`` event marks it; ``await
        start_broker_async(b)`` waits for it). Offline partitions whose replica it is get it
        as leader; leadership moved away stays moved until ``elect_preferred_leaders()``."""
        self._brokers.start(broker)

    async def start_broker_async(self, broker: int) -> None:
        """Start a stopped broker and return once it listens (async code on the cluster's loop)."""
        await self._brokers.start_async(broker)

    def restart_broker(self, broker: int) -> None:
        self.stop_broker(broker)
        self.start_broker(broker)

    def elect_preferred_leaders(self) -> int:
        """Give every partition back to its preferred (first) replica where that broker is
        alive, as Kafka's preferred leader election does; returns how many moved."""
        return self._brokers.elect_preferred_leaders()

    # -- groups ------------------------------------------------------------------------------
    def coordinator(self, group_id: str) -> int:
        """The broker id coordinating ``group_id``."""
        return self._proxy.read(self.state.groups.coordinator_of, group_id)

    def move_coordinator(self, group_id: str, broker: int | None = None, *, load_time_ms: int | None = None) -> int:
        """Move a group's coordinator (its offsets partition's leader) to ``broker`` (default:
        the next live broker). The new coordinator reloads the group from its persisted state,
        answering COORDINATOR_LOAD_IN_PROGRESS for ``load_time_ms`` (default: the cluster's
        ``coordinator_load_time_ms``); the old one answers NOT_COORDINATOR. Returns the new
        coordinator's id."""
        return self._brokers.move_coordinator(group_id, broker, load_time_ms)

    def group(self, group_id: str) -> GroupView | None:
        """A snapshot of a group (state, generation, members and decoded assignments)."""
        from .views import group_view

        return self._proxy.read(group_view, self.state, group_id)

    def groups(self) -> list[str]:
        """Every group the coordinators know: classic, consumer (KIP-848), share (KIP-932) and streams (KIP-1071)."""
        return self._proxy.read(self.state.groups.ids)

    def share_group(self, group_id: str) -> ShareGroupView | None:
        """A snapshot of a share group (KIP-932): state, epochs, members and assignments, and per
        share partition the start offset and the records in flight with their state, delivery
        count and owner (``view.partition("jobs", 0).state_of(5)``); None for no share group."""
        from .shares import share_group_view

        return self._proxy.read(share_group_view, self.state, group_id)

    def streams_group(self, group_id: str) -> StreamsGroupView | None:
        """A snapshot of a streams group (KIP-1071): state, epochs, topology, and each member's
        process, endpoint and tasks (active, standby, warm-up) held, aimed for and being revoked
        (``view.owner("1_0")``, ``view.by_process()``); None for no streams group."""
        from .streams import streams_group_view

        return self._proxy.read(streams_group_view, self.state, group_id)

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        """(topic, partition) -> the group's committed offset."""
        from .views import committed_offsets

        return self._proxy.read(committed_offsets, self.state, group_id)

    def forget_groups(self, group_ids: list[str] | set[str]) -> None:
        """Drop groups with their members, timers, persisted records and offsets, leaving no
        trace (between tests sharing one cluster)."""
        self._proxy.act(self.state.groups.forget, sorted(group_ids))

    # -- transactions ------------------------------------------------------------------------
    def transaction(self, transactional_id: str) -> TransactionView | None:
        """A snapshot of a transactional id: state, producer id and epoch, open partitions."""
        return self._proxy.read(transaction_view, self.state, transactional_id)

    def transactions(self) -> list[str]:
        """Every transactional id the coordinators know."""
        return self._proxy.read(lambda: sorted(self.state.transactions.txns))

    def move_transaction_coordinator(
        self, transactional_id: str, broker: int | None = None, *, load_time_ms: int | None = None
    ) -> int:
        """Move a transactional id's coordinator (its ``__transaction_state`` partition's leader)
        to ``broker`` (default: the next live broker). Open transactions stay open; the new
        coordinator answers COORDINATOR_LOAD_IN_PROGRESS for ``load_time_ms`` (default: the
        cluster's ``coordinator_load_time_ms``), the old one NOT_COORDINATOR. Returns the new
        coordinator's id."""
        return self._transactions.move_coordinator(transactional_id, broker, load_time_ms)

    def forget_transactions(self, transactional_ids: list[str] | set[str]) -> None:
        """Drop transactional ids (between tests sharing one cluster); their open transactions
        are aborted first, so no reader waits on them."""
        self._proxy.act(self.state.forget_transactions, sorted(transactional_ids), self.clock.now_ms())

    def set_feature(self, name: str, level: int) -> None:
        """Finalize a feature level as ``kafka-features`` would, e.g. ``transaction.version`` 1 to
        make Kafka 4.x clients use transactions without KIP-890 (clients read it on connect)."""
        self._proxy.act(self.state.features.set, name, level)

    def features(self) -> dict[str, int]:
        """The finalized feature levels (what ApiVersions reports; level 0 is not finalized)."""
        return self._proxy.read(lambda: {k: v for k, v in sorted(self.state.features.finalized.items()) if v > 0})

    # -- client quotas -----------------------------------------------------------------------
    def set_quota(self, entity: dict[str, str | None], key: str, value: float | None) -> None:
        """Set (or, with ``value=None``, remove) a client quota as ``kafka-client-quotas --alter``
        would, e.g. ``set_quota({"client-id": "svc"}, "producer_byte_rate", 1024)``; a name of
        None is the default entity. Raises ValueError with Kafka's message when Kafka would
        refuse it."""
        self._proxy.check_running()
        alteration = Alteration(entity_of(list(entity.items())), [(key, float(value or 0), value is None)])

        def act() -> None:
            code, message = self.state.quotas.alter([alteration], False)[alteration.entity]
            if code:
                raise ValueError((message or "") + quota_key_hint(key))

        self._proxy.act(act)

    def quotas(self) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
        """Every client quota: entity (sorted (type, name) pairs) -> {key: value}."""
        return self._proxy.read(lambda: {e: dict(v) for e, v in self.state.quotas.entries.items()})

    # -- network -----------------------------------------------------------------------------
    def cut(self, client_id: str, broker: int | None = None) -> None:
        """A network partition between clients whose id matches ``client_id`` (a glob such as
        ``"svc-*"`` works) and ``broker`` (default: every broker): their connections close and
        every new one is closed at its first request, until ``heal``."""
        self._network.cut(client_id, broker)

    def heal(self, client_id: str | None = None, broker: int | None = None) -> None:
        """Undo ``cut`` for that client (default: every cut) and broker (default: any)."""
        self._network.heal(client_id, broker)

    def expire_sessions(self, client_id: str | None = None) -> int:
        """End the SASL sessions of the authenticated connections of clients whose id matches
        ``client_id`` (a glob; default: every client) now, as ``connections.max.reauth.ms``
        would: each is closed at its next request unless its client re-authenticates first
        (KIP-368). Returns how many sessions it ended."""
        return self._network.expire_sessions(client_id)

    def cuts(self) -> list[tuple[str, int | None]]:
        """The network cuts in force: (client id glob, broker or None for every broker)."""
        return self._network.cuts()

    # -- waiting -----------------------------------------------------------------------------
    async def wait_for(self, condition: Callable[[Any], Any], timeout: float = 10.0, *, poll: float = 0.05) -> Any:
        """Wait until ``condition(cluster)`` is truthy and return its value; it is checked
        after every event and every ``poll`` seconds. Raises ``WaitTimeout`` (an
        AssertionError) naming the condition and what it saw last."""
        self._proxy.check_running()
        return await self._waiting.wait_for(self, condition, timeout, poll)

    def wait_for_sync(
        self,
        condition: Callable[[Any], Any],
        timeout: float = 10.0,
        *,
        poll: float | Callable[[float], Any] = 0.05,
    ) -> Any:
        """``wait_for`` for threaded tests (the cluster started with ``run_in_thread``).

        ``poll`` may be a client's poll function, e.g. ``poll=consumer.poll``: it is called
        with a timeout in seconds (0.05) between checks, so the client goes on joining,
        rebalancing and heartbeating while the test waits; what it returns is dropped. For a
        client whose poll takes milliseconds: ``poll=lambda s: consumer.poll(timeout_ms=int(s * 1000))``."""
        self._proxy.check_running()
        return self._waiting.wait_for_sync(self, condition, timeout, poll)
