"""The event log under load: produce rate with pending ``/wait`` calls, and memory after
1,000,000 events.

    python benchmarks/event_log.py [--waits 0,20] [--prefill 200000] [--events 1000000] [--baseline /work/main]

Produce: a raw client sends one-record acks=all Produce requests one after another for
``--seconds`` while ``--waits`` HTTP ``POST /wait`` calls wait for an event that never comes,
on a log already holding ``--prefill`` events; a second row has a fault rule fire on every
Produce, so each request appends an event (``fault_fired``) that every pending wait could
be woken by. Memory: resident set size before and after
``--events`` events are appended to a running cluster's log. Each cell runs in its own process
with that tree's ``fakebroker`` first on ``sys.path``, so ``--baseline`` (another checkout,
e.g. main) and this tree are measured side by side.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import urllib.request
from pathlib import Path

try:
    from ._measure import produce_rate, rss_mb, run_cell
except ImportError:  # run as a script: this folder is first on sys.path
    from _measure import produce_rate, rss_mb, run_cell

HERE = Path(__file__).resolve().parent.parent
CHUNK = 10_000


def _fill(cluster, n: int) -> None:
    from fakebroker.core import events as ev

    def append(k: int) -> None:
        for _ in range(k):
            cluster.state.events.append(ev.FaultsCleared())

    for start in range(0, n, CHUNK):
        cluster.call(append, min(CHUNK, n - start))


def produce_worker(waits: int, prefill: int, seconds: float, noisy: bool) -> dict:
    from fakebroker.cluster import FakeCluster
    from fakebroker.http import ControlEndpoint

    with FakeCluster(topics={"bench": 1}).run_in_thread() as cluster, ControlEndpoint(cluster) as control:
        _fill(cluster, prefill)
        if noisy:  # a rule that fires on every Produce: one fault_fired event per request
            cluster.faults.add(api="Produce", action="throttle", throttle_ms=1)

        def wait() -> None:
            body = json.dumps({"condition": "event", "kind": "never_happens", "timeout": 60}).encode()
            req = urllib.request.Request(control.url + "/wait", data=body, method="POST")
            req.add_header("Authorization", f"Bearer {control.token}")
            try:
                urllib.request.urlopen(req, timeout=90).read()
            except Exception:
                pass  # the cluster stops under it

        for _ in range(waits):
            threading.Thread(target=wait, daemon=True).start()
        time.sleep(0.5 + waits * 0.02)
        rate = produce_rate(cluster.servers[0].port, seconds)
    return {"rate": rate}


def memory_worker(events: int) -> dict:
    from fakebroker.cluster import FakeCluster

    with FakeCluster().run_in_thread() as cluster:
        before = rss_mb()
        _fill(cluster, events)
        after = rss_mb()
        kept = cluster.call(lambda: len(list(cluster.state.events)))
    return {"before": before, "after": after, "kept": kept}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--waits", default="0,20")
    parser.add_argument("--prefill", type=int, default=200_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--baseline", help="another checkout to measure first (e.g. /work/main)")
    parser.add_argument("--produce-worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--noisy", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--memory-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.produce_worker is not None:
        print(json.dumps(produce_worker(args.produce_worker, args.prefill, args.seconds, args.noisy)))
        return
    if args.memory_worker:
        print(json.dumps(memory_worker(args.events)))
        return
    trees = ([("baseline", Path(args.baseline))] if args.baseline else []) + [("this tree", HERE)]
    counts = [int(n) for n in args.waits.split(",")]
    common = ["--prefill", str(args.prefill), "--seconds", str(args.seconds)]
    title = f"produce msg/s, log of {args.prefill:,}"
    print(f"{title:<36}" + "".join(f"{f'{n} /wait':>12}" for n in counts))
    for noisy in (False, True):
        for name, tree in trees:
            flags = [*common, "--noisy"] if noisy else common
            rates = [run_cell(__file__, tree, "--produce-worker", str(n), *flags)["rate"] for n in counts]
            label = f"{name}, {'an event per request' if noisy else 'no events'}"
            print(f"{label:<36}" + "".join(f"{r:>12,.0f}" for r in rates))
    print(f"\n{f'RSS after {args.events:,} events':<36}{'before MB':>12}{'after MB':>12}{'kept':>12}")
    for name, tree in trees:
        m = run_cell(__file__, tree, "--memory-worker", "--events", str(args.events))
        print(f"{name:<36}{m['before']:>12.0f}{m['after']:>12.0f}{m['kept']:>12,}")


if __name__ == "__main__":
    main()
