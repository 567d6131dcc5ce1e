"""Produce throughput while Fetch long polls are parked on *other* topics.

    python benchmarks/parked_fetches.py [--parked 0,100,1000] [--seconds 3] [--baseline /work/main]

A raw client on 127.0.0.1 sends one-record acks=all Produce requests one after another for
``--seconds`` and counts them, with 0 / 100 / 1,000 connections each holding a Fetch parked
(min_bytes 1, max_wait 60 s) on idle topics. Each (tree, parked) cell runs in its own
process with that tree's ``fakebroker`` first on ``sys.path``, so ``--baseline`` (another
checkout, e.g. main) and this tree are measured side by side in one run.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

try:
    from ._measure import RawClient, produce_rate, run_cell
except ImportError:  # run as a script: this folder is first on sys.path
    from _measure import RawClient, produce_rate, run_cell

HERE = Path(__file__).resolve().parent.parent
IDLE_TOPICS = 10
FETCH = 1


def worker(parked: int, seconds: float) -> dict:
    """Run in a child process: one cluster, ``parked`` parked fetches, then produce."""
    from fakebroker.cluster import FakeCluster

    topics = {"bench": 1, **{f"idle-{i}": 1 for i in range(IDLE_TOPICS)}}
    with FakeCluster(topics=topics).run_in_thread() as cluster:
        port = cluster.servers[0].port
        fetchers = []
        for i in range(parked):
            part = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
            body = {
                "max_wait_ms": 60_000,
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [{"topic": f"idle-{i % IDLE_TOPICS}", "partitions": [part]}],
            }
            fetcher = RawClient(port, nodelay=False)
            fetcher.send(FETCH, 12, body)
            fetchers.append(fetcher)
        time.sleep(0.5 + parked / 1000)  # let every fetch reach the broker and park
        rate = produce_rate(port, seconds)
        for fetcher in fetchers:
            fetcher.close()
    return {"rate": rate}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parked", default="0,100,1000")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--baseline", help="another checkout to measure first (e.g. /work/main)")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(worker(args.worker, args.seconds)))
        return
    trees = ([("baseline", Path(args.baseline))] if args.baseline else []) + [("this tree", HERE)]
    counts = [int(n) for n in args.parked.split(",")]
    rows = {
        name: [run_cell(__file__, tree, "--worker", str(n), "--seconds", str(args.seconds))["rate"] for n in counts]
        for name, tree in trees
    }
    print(f"{'produce msg/s (acks=all)':<26}" + "".join(f"{f'{n} parked':>14}" for n in counts))
    for name, rates in rows.items():
        print(f"{name:<26}" + "".join(f"{r:>14,.0f}" for r in rates))


if __name__ == "__main__":
    main()
