"""A real Apache Kafka broker for the differential conformance tests: one KRaft node that is
both broker and controller, on loopback with free ports, in a temporary folder.

:class:`KafkaBroker` formats the folder (``kafka.tools.StorageTool format --standalone``),
starts ``kafka.Kafka`` from the cached jars (:mod:`.kafka_jars`) and waits until it is ready
for probes: it answers ApiVersions, ``__consumer_offsets`` and ``__transaction_state`` exist
(FindCoordinator answers NONE) and every partition of both has finished loading. ``stop()``
kills the JVM's whole process group and removes the folder. The JVM also gets SIGKILL from
the kernel if the process that started it dies (``PR_SET_PDEATHSIG``), so an interrupted or
killed pytest leaves no broker behind. While it runs, it holds a machine-wide lock: at most
one of these brokers runs at a time on a machine (a second waits for the first to stop).

``KafkaBroker(secured=Secured.make())`` starts the secured broker of the secured probes
instead: its clients' listener is SASL_SSL (PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, a TLS
certificate from a throwaway CA) and StandardAuthorizer checks every request
(:data:`SECURED_SETTINGS`, shared with the matching fakebroker). KRaft's controller and the
inter-broker listener stay PLAINTEXT on loopback (``INTERNAL``); their principal,
``User:ANONYMOUS``, is a super user so the broker can register with its controller, and the
readiness checks run there. Probes use only the SASL_SSL listener.
"""

from __future__ import annotations

import base64
import ctypes
import fcntl
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.raw_client import RawClient, tls_context

from . import kafka_jars

START_TIMEOUT = 120.0  # s, until ready; usually 5-10 s
LOCK_TIMEOUT = 900.0  # s, waiting for another run's broker to stop
PARTITIONS = 50  # offsets.topic.num.partitions and transaction.state.log.num.partitions (Kafka's defaults)
# the JVM: small and quick to start (C1 only: probes are a few hundred small requests)
JVM_OPTIONS = ["-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:ActiveProcessorCount=2"]

# Settings both brokers of a differential test run with (fakebroker takes them as FakeCluster config).
SHARED_SETTINGS = {
    "offsets.topic.replication.factor": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
    "group.initial.rebalance.delay.ms": 0,
    "group.streams.initial.rebalance.delay.ms": 0,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000,
}
KAFKA_ONLY_SETTINGS = {
    "process.roles": "broker,controller",
    "node.id": 1,
    "inter.broker.listener.name": "PLAINTEXT",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "num.partitions": 1,
    "share.coordinator.state.topic.replication.factor": 1,
    "share.coordinator.state.topic.min.isr": 1,
}
# Settings only fakebroker gets: Kafka's sequence where fakebroker's default deliberately differs
# (a new share group's partitions are assigned at the second heartbeat, epoch 3, as on Kafka).
FAKEBROKER_ONLY_SETTINGS = {
    "fakebroker.share.late.assignment": True,
}
# The secured pair: users (a PLAIN password and SCRAM-SHA-256/512 credentials each, 4096
# iterations), and the settings both brokers run with.
SECURED_USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
SCRAM_ITERATIONS = 4096
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SECURED_SETTINGS = {
    "authorizer.class.name": STANDARD_AUTHORIZER,
    "super.users": "User:admin",
    "allow.everyone.if.no.acl.found": False,
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "delegation.token.secret.key": "conformance-token-secret",
}
LOG4J2 = """\
rootLogger.level=INFO
rootLogger.appenderRef.f.ref=F
appender.f.type=File
appender.f.name=F
appender.f.fileName={log}
appender.f.layout.type=PatternLayout
appender.f.layout.pattern=[%d] %p %m (%c)%n
"""
RETRIABLE = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def free_port() -> int:
    """A port free on loopback, outside the kernel's ephemeral range: a port from ``bind(0)`` can
    be taken by an outgoing connection (Kafka's own, to its controller, connects to itself)
    before the broker binds it."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    candidates = [p for p in range(10000, 65000) if not low <= p <= high]
    for _ in range(200):
        port = random.choice(candidates)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port outside the ephemeral range")


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), which Kafka's partitionFor uses."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def kafka_partition_for(key: str, partitions: int = PARTITIONS) -> int:
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def one_key_per_partition(prefix: str, partitions: int = PARTITIONS) -> list[str]:
    """Keys (``prefix-0``, ``prefix-1``, ...) that land on every coordinator partition once."""
    found: dict[int, str] = {}
    i = 0
    while len(found) < partitions:
        key = f"{prefix}-{i}"
        found.setdefault(kafka_partition_for(key, partitions), key)
        i += 1
    return list(found.values())


@dataclass(frozen=True)
class Secured:
    """What a secured broker is started with: its users (PLAIN through the listener's JAAS
    ``user_NAME``, SCRAM credentials added when the folder is formatted) and its TLS identity,
    PEM (the key PKCS#8, unencrypted: Kafka's ``ssl.keystore.type=PEM`` inline). ``ca_file``
    is what clients trust."""

    ca_file: str
    certificate_chain: str
    private_key: str
    users: Mapping[str, str]

    @classmethod
    def make(cls, folder: Path, users: Mapping[str, str] = SECURED_USERS) -> Secured:
        """A throwaway CA (its PEM written to ``folder``) and a certificate from it for
        ``localhost`` and 127.0.0.1."""
        import trustme
        from cryptography.hazmat.primitives import serialization

        ca = trustme.CA()
        leaf = ca.issue_cert("localhost", "127.0.0.1")
        key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
        pkcs8 = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        ca_file = folder / "kafka-ca.pem"
        ca.cert_pem.write_to_path(str(ca_file))
        chain = "".join(blob.bytes().decode() for blob in leaf.cert_chain_pems)
        return cls(str(ca_file), chain, pkcs8.decode(), dict(users))

    def kafka_settings(self) -> dict[str, Any]:
        """The listener's SASL and TLS settings (the listener is named ``SASL_SSL``)."""
        plain_users = " ".join(f'user_{name}="{password}"' for name, password in self.users.items())
        prefix = "listener.name.sasl_ssl."
        scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        return {
            **SECURED_SETTINGS,
            # KRaft's own PLAINTEXT listeners (controller, inter-broker) come in as ANONYMOUS
            "super.users": f"{SECURED_SETTINGS['super.users']};User:ANONYMOUS",
            f"{prefix}plain.sasl.jaas.config": (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};"
            ),
            f"{prefix}scram-sha-256.sasl.jaas.config": scram,
            f"{prefix}scram-sha-512.sasl.jaas.config": scram,
            f"{prefix}ssl.keystore.type": "PEM",
            f"{prefix}ssl.keystore.certificate.chain": self.certificate_chain,
            f"{prefix}ssl.keystore.key": self.private_key,
        }

    def format_arguments(self) -> list[str]:
        """``kafka-storage format``'s ``--add-scram`` for every user and both mechanisms."""
        out = []
        for name, password in self.users.items():
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                entry = f"{mechanism}=[name={name},password={password},iterations={SCRAM_ITERATIONS}]"
                out += ["--add-scram", entry]
        return out


def _property(key: str, value: Any) -> str:
    """One line of a Java properties file (booleans as Java writes them, line breaks escaped)."""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    return f"{key}={text}\n"


class BrokerExited(RuntimeError):
    pass


def _die_with_parent() -> None:  # runs in the child between fork and exec
    os.setsid()
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class KafkaBroker:
    def __init__(self, secured: Secured | None = None) -> None:
        self.secured = secured
        self.folder: Path | None = None
        self.process: subprocess.Popen | None = None
        self.port = 0  # the clients' listener: PLAINTEXT, or SASL_SSL when secured
        self.internal_port = 0  # PLAINTEXT: the same as ``port`` unless secured
        self.startup_seconds = 0.0
        self._lock = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, attempts: int = 3) -> KafkaBroker:
        """Format and start the broker and wait until it is ready (a broker that exits while
        starting, say on a port taken meanwhile, is started again with other ports)."""
        for attempt in range(attempts):
            try:
                return self._start()
            except BrokerExited:
                if attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")

    def _start(self) -> KafkaBroker:
        java = shutil.which("java")
        if java is None:
            raise RuntimeError("java is not installed: the conformance tests need a JDK 17+ (run scripts/setup.sh)")
        libs = kafka_jars.ensure_jars()
        self._acquire_machine_lock()
        started = time.monotonic()
        try:
            self.folder = Path(tempfile.mkdtemp(prefix="fakebroker-kafka-"))
            self.port, controller = free_port(), free_port()
            self.internal_port = self.port
            listeners = f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller}"
            secured: dict[str, Any] = {}
            if self.secured is not None:
                self.internal_port = free_port()
                listeners = (
                    f"SASL_SSL://127.0.0.1:{self.port},INTERNAL://127.0.0.1:{self.internal_port},"
                    f"CONTROLLER://127.0.0.1:{controller}"
                )
                secured = {
                    "inter.broker.listener.name": "INTERNAL",
                    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,SASL_SSL:SASL_SSL",
                    **self.secured.kafka_settings(),
                }
            properties = self.folder / "server.properties"
            settings = {
                **KAFKA_ONLY_SETTINGS,
                **SHARED_SETTINGS,
                **secured,
                "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller}",
                "listeners": listeners,
                "advertised.listeners": listeners,
                "log.dirs": str(self.folder / "data"),
            }
            properties.write_text("".join(_property(k, v) for k, v in settings.items()))
            log4j = self.folder / "log4j2.properties"
            log4j.write_text(LOG4J2.format(log=self.folder / "server.log"))
            base = [java, *JVM_OPTIONS, f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{libs}/*"]
            fmt = subprocess.run(
                [
                    *base,
                    "kafka.tools.StorageTool",
                    "format",
                    "--standalone",
                    "-t",
                    _cluster_id(),
                    "-c",
                    str(properties),
                    *(self.secured.format_arguments() if self.secured is not None else []),
                ],
                capture_output=True,
                text=True,
                timeout=120,
                stdin=subprocess.DEVNULL,
            )
            if fmt.returncode != 0:
                raise RuntimeError(f"kafka-storage format failed ({fmt.returncode}):\n{fmt.stdout}\n{fmt.stderr}")
            with open(self.folder / "stdout.log", "wb") as out:
                self.process = subprocess.Popen(
                    [*base, "kafka.Kafka", str(properties)],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    preexec_fn=_die_with_parent,
                )
            self._wait_ready(started + START_TIMEOUT)
            self.startup_seconds = time.monotonic() - started
            return self
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Kill the broker (its whole process group) and remove its folder; safe to call twice."""
        process, self.process = self.process, None
        if process is not None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=30)
        folder, self.folder = self.folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.close()  # releases the flock

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- helpers -----------------------------------------------------------------------------
    def log_tail(self, n: int = 6000) -> str:
        out = []
        for name in ("stdout.log", "server.log"):
            path = self.folder / name if self.folder else None
            if path is not None and path.exists():
                out.append(f"--- {name}\n{path.read_text(errors='replace')[-n:]}")
        return "\n".join(out)

    def _acquire_machine_lock(self) -> None:
        root = kafka_jars.cache_root()
        root.mkdir(parents=True, exist_ok=True)
        lock = open(root / "broker.lock", "w")
        deadline = time.monotonic() + LOCK_TIMEOUT
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    lock.close()
                    raise RuntimeError(f"another conformance Kafka broker ran for over {LOCK_TIMEOUT} s") from None
                time.sleep(0.5)
        self._lock = lock

    def _wait_ready(self, deadline: float) -> None:
        def check_alive() -> None:
            assert self.process is not None
            if self.process.poll() is not None:
                raise BrokerExited(f"Kafka exited with {self.process.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kafka was not ready within {START_TIMEOUT} s:\n{self.log_tail()}")

        client = None
        while client is None:  # 1. the listener answers ApiVersions
            check_alive()
            try:
                client = RawClient(self.internal_port, client_id="conformance-ready", timeout=10)
                client.request(
                    18, 3, {"client_software_name": "fakebroker-conformance", "client_software_version": "1"}
                )
            except OSError:
                if client is not None:
                    client.close()
                client = None
                time.sleep(0.1)
        with client:
            # 2. the internal topics exist: FindCoordinator creates them on first use
            for key_type in (0, 1):
                while True:
                    check_alive()
                    r = client.request(10, 4, {"key_type": key_type, "coordinator_keys": ["conformance-ready"]})
                    if r.coordinators[0].error_code == 0:
                        break
                    time.sleep(0.1)
            # 3. every coordinator partition has loaded (a key on each one answers a final code)
            groups = one_key_per_partition("conformance-ready-group")
            txn_ids = one_key_per_partition("conformance-ready-txn")
            while True:
                check_alive()
                g = client.request(15, 5, {"groups": groups, "include_authorized_operations": False})
                t = client.request(65, 0, {"transactional_ids": txn_ids})
                codes = {x.error_code for x in g.groups} | {x.error_code for x in t.transaction_states}
                if not codes & RETRIABLE:
                    break
                time.sleep(0.1)
        if self.secured is not None:  # 4. the SASL_SSL listener takes a login
            context = tls_context(self.secured.ca_file)
            while True:
                check_alive()
                try:
                    with RawClient(self.port, client_id="conformance-ready", timeout=10, tls=context) as secured:
                        secured.login("PLAIN", "admin", self.secured.users["admin"])
                        return
                except OSError:
                    time.sleep(0.1)


def _cluster_id() -> str:
    """A cluster id as ``kafka-storage random-uuid`` makes one (base64url, none starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text
