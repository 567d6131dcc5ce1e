"""Start-up cost, side by side in one run: this tree, a baseline tree, librdkafka's mock.

    python benchmarks/startup.py [--baseline /work/main] [--runs 7] [--warm 200]

Cold, two measurements per way, each the median of ``--runs`` fresh processes (the ways
take turns, so a busy moment of a shared machine hits them all):

- ``process``: from spawning ``python -m fakebroker serve --port 0`` to the first Metadata
  answer on its port (for the mock: a process that creates a Producer with
  ``test.mock.num.brokers=1`` and returns from ``list_topics``);
- ``in-process``: inside a fresh interpreter, from before ``from fakebroker import
  FakeCluster`` to the first Metadata answer of a started cluster (for the mock: from before
  ``import confluent_kafka`` to ``list_topics`` returning).

The ``bare trio server`` row is the floor of any broker written on trio and run beside a
test: from before ``import trio`` to the first answer of a server in a thread of its own that
does nothing but answer every frame with fixed bytes (in-process only).

Children compile to a private bytecode cache (``PYTHONPYCACHEPREFIX``) that one untimed
warm-up run fills, as an installed package has its ``.pyc`` files. fakebroker now ships its
specs parsed and caches nothing; trees from before that cached them per machine in
``FAKEBROKER_CACHE_DIR``, here a temporary directory: warm after the warm-up run, while each
tree's ``spec cache cold`` row gives it a new empty one every run (for this tree, the same as
its first row: nothing is cached). ``process CPU`` is the CPU time (user +
system) of the process measured in the first column, until it is killed: on a busy shared
machine it moves far less than wall time.

Warm, in one process that has imported everything and started one cluster already (what every
test after the first meets), median of ``--warm`` starts per way, the ways taking turns:

- ``to Metadata``: from creating the cluster to the first Metadata answer on a plain socket
  (for the mock, through ctypes into confluent-kafka's own librdkafka: ``rd_kafka_new`` and
  ``rd_kafka_mock_cluster_new``, then the same socket request to its bootstrap address);
- ``start and stop``: the same, then the cluster stopped (the mock destroyed);
- ``client ready``: from creating the cluster to a confluent-kafka producer's ``list_topics``
  returning (for the mock: a producer with ``test.mock.num.brokers=1``, which makes its own
  mock cluster).

The warm ``bare trio server`` row is the floor again: on a trio loop kept running in a thread
(as ``run_in_thread()`` keeps one), a listener opened and served by one task, answering the
bytes fakebroker answered; its stop cancels that task. It cannot serve a real client.

The warm ``bare trio socket (least)`` row is the least a trio loop can do: the listening
socket is made in the test's thread, so nothing waits for the loop, and one task on the kept
loop accepts on that raw trio socket and answers the same bytes, with no stream, listener or
nursery of its own; its stop is the task ending once the client closes. Where uvloop is
installed (``pip install uvloop``; nothing else here needs it), ``the same on uvloop`` is that
server on an asyncio loop written in C, which trio cannot use: what a native loop would give.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

# Metadata v1, all topics: header v1 (key 3, version 1, correlation 1, client id "b"), topics null
METADATA_V1 = struct.pack(">hhih", 3, 1, 1, 1) + b"b" + struct.pack(">i", -1)

IN_PROCESS = """
import socket, struct, sys, time
started = time.perf_counter()
from fakebroker import FakeCluster
with FakeCluster().run_in_thread() as cluster:
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    request = {request!r}
    sock.sendall(struct.pack(">i", len(request)) + request)
    size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
    sock.recv(size, socket.MSG_WAITALL)
    print("ELAPSED", time.perf_counter() - started, flush=True)
    sock.close()
import fakebroker
print("FILE", fakebroker.__file__)
"""

FLOOR_IN_PROCESS = """
import socket, struct, threading, time
started = time.perf_counter()
import trio
ANSWER = struct.pack(">ii", 4, 1)  # a frame of 4 bytes: correlation id 1


async def answer(stream):
    while await stream.receive_some(65536):
        await stream.send_all(ANSWER)


async def serve(ready):
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    ready.append(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(answer, listeners)


ready = []
threading.Thread(target=trio.run, args=(serve, ready), daemon=True).start()
while not ready:
    time.sleep(0)
sock = socket.create_connection(("127.0.0.1", ready[0]))
request = {request!r}
sock.sendall(struct.pack(">i", len(request)) + request)
size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
sock.recv(size, socket.MSG_WAITALL)
print("ELAPSED", time.perf_counter() - started, flush=True)
"""

MOCK_IN_PROCESS = """
import time
started = time.perf_counter()
import confluent_kafka
mock = confluent_kafka.Producer({"test.mock.num.brokers": 1, "log_level": 3})
mock.list_topics(timeout=10)
print("ELAPSED", time.perf_counter() - started, flush=True)
"""


WARM = """
import ctypes, glob, os, socket, statistics, struct, sys, threading, time
import confluent_kafka
import trio
import trio.from_thread
from fakebroker import FakeCluster
REQUEST = {request!r}
RUNS = {runs}


def metadata(bootstrap):
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(struct.pack(">i", len(REQUEST)) + REQUEST)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        answer = sock.recv(size, socket.MSG_WAITALL)
        assert len(answer) == size
        return struct.pack(">i", size) + answer


lib = ctypes.CDLL(glob.glob(os.path.dirname(confluent_kafka.__file__) + ".libs/librdkafka*.so*")[0])
lib.rd_kafka_conf_new.restype = ctypes.c_void_p
lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
lib.rd_kafka_new.restype = ctypes.c_void_p
lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
lib.rd_kafka_mock_cluster_destroy.argtypes = [ctypes.c_void_p]
lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
error = ctypes.create_string_buffer(512)


def fakebroker_raw():
    started = time.perf_counter()
    with FakeCluster().run_in_thread() as cluster:
        metadata(cluster.bootstrap_servers)
        answered = time.perf_counter()
    return answered - started, time.perf_counter() - started


def mock_raw():
    started = time.perf_counter()
    conf = lib.rd_kafka_conf_new()
    lib.rd_kafka_conf_set(conf, b"log_level", b"0", error, 512)  # its no-bootstrap warning
    handle = lib.rd_kafka_new(0, conf, error, 512)
    mock = lib.rd_kafka_mock_cluster_new(handle, 1)
    metadata(lib.rd_kafka_mock_cluster_bootstraps(mock).decode())
    answered = time.perf_counter()
    lib.rd_kafka_mock_cluster_destroy(mock)
    lib.rd_kafka_destroy(handle)
    return answered - started, time.perf_counter() - started


async def floor_loop(ready):
    async with trio.open_nursery() as nursery:
        ready.append((trio.lowlevel.current_trio_token(), nursery))
        await trio.sleep_forever()


floor_ready = []
threading.Thread(target=trio.run, args=(floor_loop, floor_ready), daemon=True).start()
while not floor_ready:
    time.sleep(0.001)
floor_token, floor_nursery = floor_ready[0]
floor_answer = b""


async def floor_serve(stream):
    while await stream.receive_some(65536):
        await stream.send_all(floor_answer)


async def floor_start():
    scope = trio.CancelScope()

    async def run(task_status):
        with scope:
            listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
            task_status.started(listeners[0].socket.getsockname()[1])
            await trio.serve_listeners(floor_serve, listeners)

    return await floor_nursery.start(run), scope


def floor_raw():
    started = time.perf_counter()
    port, scope = trio.from_thread.run(floor_start, trio_token=floor_token)
    assert metadata(f"127.0.0.1:{{port}}") == floor_answer
    answered = time.perf_counter()
    trio.from_thread.run_sync(scope.cancel, trio_token=floor_token)
    return answered - started, time.perf_counter() - started


def least_start(spawn):
    # a listener bound here and handed to `spawn`, which must not wait for its loop; then a
    # Metadata request, and the wait for the server's task to end (the client's close ends it)
    started = time.perf_counter()
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(128)
    listening.setblocking(False)
    stopped = threading.Event()
    spawn(listening, stopped)
    assert metadata(f"127.0.0.1:{{listening.getsockname()[1]}}") == floor_answer
    answered = time.perf_counter()
    stopped.wait()
    return answered - started, time.perf_counter() - started


async def least_trio(listening, stopped):
    try:
        with trio.socket.from_stdlib_socket(listening) as sock:
            conn, _ = await sock.accept()
        with conn:
            while await conn.recv(65536):
                sent = 0
                while sent < len(floor_answer):
                    sent += await conn.send(floor_answer[sent:])
    finally:
        stopped.set()


def least_raw():
    return least_start(lambda *args: floor_token.run_sync_soon(floor_nursery.start_soon, least_trio, *args))


try:  # optional: the same least server on a native asyncio loop, which trio cannot use
    import uvloop
except ImportError:
    uvloop = None
else:
    uv_ready = []

    def uv_thread():
        loop = uvloop.new_event_loop()
        uv_ready.append(loop)
        loop.run_forever()

    threading.Thread(target=uv_thread, daemon=True).start()
    while not uv_ready:
        time.sleep(0.001)


async def least_uvloop(listening, stopped):
    loop = uv_ready[0]
    try:
        with listening:
            conn, _ = await loop.sock_accept(listening)
        with conn:
            while await loop.sock_recv(conn, 65536):
                await loop.sock_sendall(conn, floor_answer)
    finally:
        stopped.set()


def uvloop_raw():
    return least_start(lambda *args: uv_ready[0].call_soon_threadsafe(uv_ready[0].create_task, least_uvloop(*args)))


def fakebroker_client():
    started = time.perf_counter()
    with FakeCluster().run_in_thread() as cluster:
        producer = confluent_kafka.Producer({{"bootstrap.servers": cluster.bootstrap_servers, "log_level": 3}})
        producer.list_topics(timeout=10)
        ready = time.perf_counter() - started
        del producer
    return ready


def mock_client():
    started = time.perf_counter()
    producer = confluent_kafka.Producer({{"test.mock.num.brokers": 1, "log_level": 3}})
    producer.list_topics(timeout=10)
    ready = time.perf_counter() - started
    del producer
    return ready


with FakeCluster().run_in_thread() as cluster:  # what the floor answers: fakebroker's bytes
    floor_answer = metadata(cluster.bootstrap_servers)
figures = {{way: [] for way in ("fb_meta", "fb_cycle", "fb_client", "mock_meta", "mock_cycle", "mock_client")}}
figures.update(floor_meta=[], floor_cycle=[], least_meta=[], least_cycle=[])
for run in range(RUNS + 1):  # run 0 starts the first cluster of the process, untimed
    fb = fakebroker_raw(), fakebroker_client()
    mock = mock_raw(), mock_client()
    floor = floor_raw()
    least = least_raw()
    native = uvloop_raw() if uvloop is not None else None
    if run:
        for prefix, ((meta, cycle), client) in (("fb", fb), ("mock", mock)):
            figures[prefix + "_meta"].append(meta)
            figures[prefix + "_cycle"].append(cycle)
            figures[prefix + "_client"].append(client)
        figures["floor_meta"].append(floor[0])
        figures["floor_cycle"].append(floor[1])
        figures["least_meta"].append(least[0])
        figures["least_cycle"].append(least[1])
        if native is not None:
            figures.setdefault("uvloop_meta", []).append(native[0])
            figures.setdefault("uvloop_cycle", []).append(native[1])
for way, xs in figures.items():
    print(way, statistics.median(xs), min(xs))
import fakebroker
print("FILE", fakebroker.__file__)
"""


def warm_figures(env: dict[str, str], cwd: Path, tree: Path, runs: int) -> dict[str, tuple[float, float]]:
    """{way: (median, best)} of starts in one warm process of ``tree`` (fakebroker and mock)."""
    code = WARM.format(request=METADATA_V1, runs=runs)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)
    if "FILE" not in lines:
        raise RuntimeError(f"warm child failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
    if not lines["FILE"].startswith(f"{tree}{os.sep}"):
        raise RuntimeError(f"the warm child for {tree} ran {lines['FILE']}")
    figures = {}
    for way, cells in lines.items():
        if way != "FILE":
            median, best = cells.split()
            figures[way] = (float(median), float(best))
    return figures


def _env(tree: Path | None, pycache: Path, cache_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if tree is not None:
        env["PYTHONPATH"] = f"{tree}{os.pathsep}{tree / 'pytest_plugin'}"
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    env["FAKEBROKER_CACHE_DIR"] = str(cache_dir)  # read by trees from before the shipped parsed specs
    return env


def _metadata(port: int, deadline: float) -> None:
    while True:
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.001)
    with sock:
        sock.sendall(struct.pack(">i", len(METADATA_V1)) + METADATA_V1)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        sock.recv(size, socket.MSG_WAITALL)


def children_cpu() -> float:
    """CPU seconds (user + system) of every child process waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def serve_process(env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "fakebroker", "serve", "--port", "0", "--no-color"],
        env=env,
        cwd=cwd,  # not a checkout: `-m` and `-c` put the working directory first on sys.path
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line.startswith("bootstrap:"):
            raise RuntimeError(f"fakebroker serve printed {line!r}")
        port = int(line.split(",")[0].rsplit(":", 1)[1])
        _metadata(port, time.monotonic() + 30)
        return time.perf_counter() - started
    finally:
        child.kill()  # not SIGTERM: its orderly shutdown is no part of start-up (nor of the CPU column)
        child.wait(30)


def child_elapsed(code: str, env: dict[str, str], cwd: Path, tree: Path | None = None) -> tuple[float, float]:
    """(process start to the answer, the child's own in-process figure)."""
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    total = time.perf_counter() - started
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)
    if "ELAPSED" not in lines:
        raise RuntimeError(f"child failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
    if tree is not None and not lines["FILE"].startswith(f"{tree}{os.sep}"):
        raise RuntimeError(f"the child for {tree} ran {lines['FILE']}")
    return total, float(lines["ELAPSED"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout of fakebroker")
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per way (0: warm figures only)")
    parser.add_argument(
        "--warm", type=int, default=200, help="starts per way in the warm process (0: cold figures only)"
    )
    args = parser.parse_args()
    if args.runs < 0 or args.warm < 0 or not (args.runs or args.warm):
        parser.error("--runs and --warm take 0 or more, and one of them more than 0")
    trees = {"this tree": HERE}
    if args.baseline is not None:
        trees["baseline"] = args.baseline.resolve()
    if args.runs:  # --runs 0: the warm figures only
        code = IN_PROCESS.format(request=METADATA_V1)
        with tempfile.TemporaryDirectory() as folder:
            tmp = Path(folder)
            ways: dict[str, tuple[str, Path | None, bool]] = {}
            for label, tree in trees.items():
                ways[label] = ("fakebroker", tree, False)
            for label, tree in trees.items():
                ways[f"{label}, spec cache cold"] = ("fakebroker", tree, True)
            ways["librdkafka mock"] = ("mock", None, False)
            ways["bare trio server (floor)"] = ("floor", None, False)
            process: dict[str, list[float]] = {w: [] for w in ways}
            inside: dict[str, list[float]] = {w: [] for w in ways}
            cpu: dict[str, list[float]] = {w: [] for w in ways}
            for run in range(args.runs + 1):  # run 0 warms the bytecode and spec caches, untimed
                for way, (kind, tree, cold) in ways.items():
                    cache = tmp / (f"cold{run}-{way}" if cold else "cache") / str(tree).replace("/", "_")
                    env = _env(tree, tmp / "pyc" / str(tree).replace("/", "_"), cache)
                    used = children_cpu()
                    if kind in ("mock", "floor"):
                        child = MOCK_IN_PROCESS if kind == "mock" else FLOOR_IN_PROCESS.format(request=METADATA_V1)
                        total, own = child_elapsed(child, env, tmp)
                        used = children_cpu() - used
                    else:
                        total = serve_process(env, tmp)
                        used = children_cpu() - used
                        if cold:  # the in-process child must find the cache cold as well
                            env = _env(tree, tmp / "pyc" / str(tree).replace("/", "_"), Path(f"{cache}-in"))
                        own = child_elapsed(code, env, tmp, tree)[1]
                    if run:
                        process[way].append(total)
                        inside[way].append(own)
                        cpu[way].append(used)
        print(f"start-up to the first Metadata answer, ms: median of {args.runs} runs (best in brackets)")
        print(f"{'':30} {'process':>15} {'in-process':>15} {'process CPU':>15}")
        for way in ways:
            cells = [
                f"{statistics.median(xs) * 1000:.0f} ({min(xs) * 1000:.0f})"
                for xs in (process[way], inside[way], cpu[way])
            ]
            if ways[way][0] == "floor":  # its process is a plain interpreter, no server command
                cells[0] = cells[2] = "-"
            print(f"{way:30} {cells[0]:>15} {cells[1]:>15} {cells[2]:>15}")
    if not args.warm:  # --warm 0: the cold figures only
        return
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        warm = {}
        for label, tree in trees.items():
            env = _env(tree, tmp / "pyc" / str(tree).replace("/", "_"), tmp / "cache")
            warm[label] = warm_figures(env, tmp, tree, args.warm)
    print()
    print(f"warm, in one process: median of {args.warm} starts, µs (best in brackets)")
    print(f"{'':30} {'to Metadata':>15} {'start and stop':>15} {'client ready':>15}")

    def row(label: str, figures: dict[str, tuple[float, float]], prefix: str) -> None:
        cells = [
            f"{figures[prefix + k][0] * 1e6:.0f} ({figures[prefix + k][1] * 1e6:.0f})" if prefix + k in figures else "-"
            for k in ("meta", "cycle", "client")
        ]
        print(f"{label:30} {cells[0]:>15} {cells[1]:>15} {cells[2]:>15}")

    for label, figures in warm.items():
        row(label, figures, "fb_")
    for label, figures in warm.items():
        row(f"librdkafka mock (with {label})", figures, "mock_")
    row("bare trio server (floor)", warm["this tree"], "floor_")
    row("bare trio socket (least)", warm["this tree"], "least_")
    if "uvloop_meta" in warm["this tree"]:
        row("the same on uvloop (asyncio)", warm["this tree"], "uvloop_")
    ours = warm["this tree"]
    print(f"warm_floor_ratio_mock: {ours['floor_meta'][0] / ours['mock_meta'][0]:.2f}")
    print(f"warm_least_ratio_mock: {ours['least_meta'][0] / ours['mock_meta'][0]:.2f}")
    print(f"warm_start_ratio_floor: {ours['fb_meta'][0] / ours['floor_meta'][0]:.2f}")
    print(f"warm_start_ratio_mock: {ours['fb_meta'][0] / ours['mock_meta'][0]:.2f}")


if __name__ == "__main__":
    main()
