"""What one request costs the broker when the CPU's caches hold none of it, as in a real client's
round trip, beside what it costs when the same request runs again and again.

    python benchmarks/cold_requests.py [--baseline TREE] [--rounds 200] [--evict-mb 24]

Between two requests of a real client the client's own threads run (librdkafka has several),
and on a machine of few cores they push the broker's code and data out of the CPU's caches.
Traced inside confluent-kafka round trips, an ApiVersions or Metadata answer took the broker's
loop 100-180 us, against ~25 us when the same request is answered in a tight loop: in Python,
a request's cost is mostly the cache misses of the code objects, dicts and codecs it touches.
So a loop of identical requests says little of what a client waits for. This answers seven
requests in turn, in process (the broker's pipeline: decode, stages, handler, encode), each
round either ``warm`` (nothing between them but each other) or ``cold`` (each after writing
``--evict-mb`` MB, more than the caches hold), the rounds taking turns; and counts the
functions each calls (Python functions and C calls, distinct and in all), which the cold cost
follows.

The requests: a connection's first two (ApiVersions v3, Metadata v12 for one topic), a
one-batch acks=all Produce v9, a Fetch v12 of one partition with a record to read, and a
transaction's AddPartitionsToTxn v3, transactional Produce and EndTxn v3 (each round commits
one transaction). ApiVersions is measured twice: from a client id the broker has not seen
(the whole pipeline), and the same bytes again (a tree with the answer memory of
``server/answer_memory.py`` answers those from memory). ``--baseline`` runs the same in
another checkout, in its own process, taking turns with this tree's, and prints both.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
FIXED = ["ApiVersions v3 (same bytes)", "Metadata v12", "Produce v9", "Fetch v12"]  # the same request every round
NAMES = ["ApiVersions v3", *FIXED]  # the first: a new client id every round
NAMES += ["AddPartitionsToTxn v3", "Produce v9 (txn)", "EndTxn v3"]  # one transaction each round
RECORD = (None, b"x" * 100)
HELLO: dict[str, object] = {"client_software_name": "b", "client_software_version": "1"}
FETCH_ONE = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
FETCH: dict[str, object] = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20}
FETCH["topics"] = [{"topic": "bench", "partitions": [FETCH_ONE]}]


def measure(rounds: int, evict_mb: int) -> dict[str, dict[str, float]]:
    """In this process: each request's median warm and cold time (us) and its function counts."""
    import trio

    from fakebroker import FakeCluster
    from fakebroker.protocol import headers, records
    from fakebroker.server.pipeline import Peer

    junk = bytearray(evict_mb << 20)
    source = bytes(len(junk))

    def evict() -> None:
        junk[:] = source  # a memmove through every cache line of both buffers

    async def counted(pipeline: object, payload: bytes, peer: object) -> tuple[int, int]:
        """The functions one request calls: distinct, and calls in all."""
        seen: set[object] = set()
        calls = 0

        def profile(frame, event, arg):  # type: ignore[no-untyped-def]
            nonlocal calls
            if event == "call":
                seen.add(frame.f_code)
                calls += 1
            elif event == "c_call":
                seen.add(arg)
                calls += 1

        sys.setprofile(profile)
        try:
            await pipeline.process(payload, peer)  # type: ignore[attr-defined]
        finally:
            sys.setprofile(None)
        return len(seen), calls

    results: dict[str, dict[str, list[float]]] = {name: {"warm": [], "cold": []} for name in NAMES}
    counts: dict[str, tuple[int, int]] = {}

    async def main() -> None:
        async with FakeCluster(topics={"bench": 1}, warm=True) as cluster:
            pipeline = cluster.servers[0].pipeline
            peer = Peer("127.0.0.1:1", "127.0.0.1")

            def request(api: int, version: int, body: dict[str, object], client_id: str = "bench") -> bytes:
                return headers.encode_request(api, version, 7, body, client_id=client_id)

            clients = itertools.count()

            def new_client_hello() -> bytes:  # bytes the broker has not seen: never answered from memory
                return request(18, 3, HELLO, client_id=f"bench-{next(clients)}")

            async def answer(payload: bytes, api: int, version: int):  # type: ignore[no-untyped-def]
                raw = await pipeline.process(payload, peer)
                assert raw is not None
                return headers.decode_response(api, version, raw)[1]

            init = await answer(request(22, 4, {"transactional_id": "t", "transaction_timeout_ms": 60000}), 22, 4)
            pid, epoch = init.producer_id, init.producer_epoch
            sequence = 0

            def produce(batch: bytes, **extra: object) -> bytes:
                data = [{"name": "bench", "partition_data": [{"index": 0, "records": batch}]}]
                return request(0, 9, {"acks": -1, "timeout_ms": 5000, "topic_data": data, **extra})

            fixed = {
                "ApiVersions v3 (same bytes)": (request(18, 3, HELLO), 18, 3),
                "Metadata v12": (request(3, 12, {"topics": [{"name": "bench"}]}), 3, 12),
                "Produce v9": (produce(records.build_batch([RECORD])), 0, 9),
                "Fetch v12": (request(1, 12, FETCH), 1, 12),
            }
            ids = {"producer_id": pid, "producer_epoch": epoch}
            add = request(
                24,
                3,
                {
                    "v3_and_below_transactional_id": "t",
                    "v3_and_below_producer_id": pid,
                    "v3_and_below_producer_epoch": epoch,
                    "v3_and_below_topics": [{"name": "bench", "partitions": [0]}],
                },
            )
            end = request(26, 3, {"transactional_id": "t", **ids, "committed": True})

            def txn_produce() -> bytes:
                nonlocal sequence
                batch = records.build_batch([RECORD] * 3, **ids, base_sequence=sequence, transactional=True)
                sequence += 3
                return produce(batch, transactional_id="t")

            async def one_round(cold: bool) -> dict[str, float]:
                took: dict[str, float] = {}
                steps = [(NAMES[0], new_client_hello(), 18, 3)] + [(name, *fixed[name]) for name in FIXED]
                steps += [(NAMES[5], add, 24, 3), (NAMES[6], txn_produce(), 0, 9), (NAMES[7], end, 26, 3)]
                for name, payload, api, version in steps:
                    if cold:
                        evict()
                    started = time.perf_counter()
                    raw = await pipeline.process(payload, peer)
                    took[name] = time.perf_counter() - started
                    assert raw is not None
                    body = headers.decode_response(api, version, raw)[1]
                    errors = [v for k, v in body.to_dict().items() if k == "error_code" and v]
                    assert not errors, (name, body)
                return took

            for _ in range(20):  # every codec built, every lazy import done
                await one_round(False)
            for index in range(rounds):
                cold = index % 2 == 1  # taking turns
                for name, seconds in (await one_round(cold)).items():
                    results[name]["cold" if cold else "warm"].append(seconds * 1e6)
            counts[NAMES[0]] = await counted(pipeline, new_client_hello(), peer)
            for name in FIXED:
                counts[name] = await counted(pipeline, fixed[name][0], peer)
            for name, payload in zip(NAMES[5:], (add, txn_produce(), end), strict=True):
                counts[name] = await counted(pipeline, payload, peer)

    trio.run(main)
    return {
        name: {
            "warm": statistics.median(results[name]["warm"]),
            "cold": statistics.median(results[name]["cold"]),
            "functions": counts[name][0],
            "calls": counts[name][1],
        }
        for name in NAMES
    }


def run_tree(tree: Path, rounds: int, evict_mb: int) -> dict[str, dict[str, float]]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--rounds", str(rounds), "--evict-mb", str(evict_mb)],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    figures: dict[str, dict[str, float]] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--evict-mb", type=int, default=24)
    parser.add_argument("--baseline", type=Path, help="another checkout, measured in turns with this one")
    parser.add_argument("--runs", type=int, default=2, help="processes per tree (taking turns)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.rounds, args.evict_mb)))
        return
    trees = [("this tree", HERE)] + ([("baseline", args.baseline)] if args.baseline else [])
    runs: dict[str, list[dict[str, dict[str, float]]]] = {label: [] for label, _ in trees}
    for index in range(args.runs):  # taking turns, each tree first in every other turn
        for label, tree in trees if index % 2 == 0 else trees[::-1]:
            runs[label].append(run_tree(tree, args.rounds, args.evict_mb))
    print(f"us per request, median of {args.rounds // 2} each way per run; {args.runs} runs per tree, taking turns")
    kinds = ("warm", "cold", "fns/calls")
    header = f"{'request':28}" + "".join(f"{label + ' ' + kind:>22}" for label, _ in trees for kind in kinds)
    print(header)
    for name in NAMES:
        row = f"{name:28}"
        for label, _ in trees:
            warm = [r[name]["warm"] for r in runs[label]]
            cold = [r[name]["cold"] for r in runs[label]]
            last = runs[label][-1][name]
            row += f"{statistics.median(warm):>22.1f}{statistics.median(cold):>22.1f}"
            row += f"{int(last['functions']):>15}/{int(last['calls']):<6}"
        print(row)
    for label, _ in trees:
        total = sum(statistics.median([r[name]["cold"] for r in runs[label]]) for name in NAMES)
        key = "cold_total_us" if label == "this tree" else "baseline_cold_total_us"
        print(f"{key}: {total:.0f}")


if __name__ == "__main__":
    main()
