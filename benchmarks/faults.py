"""What fault rules cost per request, in one run.

    python benchmarks/faults.py [--requests 1000] [--rounds 5]

One raw client sends Metadata requests (one topic) back to back to a 1-broker FakeCluster,
with no rules (the baseline), with 10 and 100 rules that never match (other APIs, other
clients), and with one matching rule that only throttles. The table shows requests per
second (the best of ``rounds`` interleaved measurements) and the ratio to the baseline; the last
line is ``fault_hook_overhead_100_rules: X`` (baseline rate / rate with 100 non-matching rules;
1.0 = free).
"""

from __future__ import annotations

import argparse
import socket
import struct
import time

from rich.console import Console
from rich.table import Table

from fakebroker.cluster import FakeCluster
from fakebroker.protocol import headers

METADATA = 3


def rate(cluster: FakeCluster, count: int) -> float:
    body = {"topics": [{"name": "t"}], "allow_auto_topic_creation": False}
    payloads = [headers.encode_request(METADATA, 12, i, body, client_id="bench") for i in range(count)]
    with socket.create_connection(("127.0.0.1", cluster.servers[0].port)) as sock:
        reader = sock.makefile("rb")
        start = time.perf_counter()
        for payload in payloads:
            sock.sendall(struct.pack(">i", len(payload)) + payload)
            size = struct.unpack(">i", reader.read(4))[0]
            reader.read(size)
        return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000, help="requests per measurement")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    setups = {
        "no rules": [],
        "10 rules, none matching": [
            dict(api="Produce" if i % 2 else "Fetch", client_id=f"other-{i}", error="REQUEST_TIMED_OUT")
            for i in range(10)
        ],
        "100 rules, none matching": [
            dict(api="Produce" if i % 2 else "Fetch", client_id=f"other-{i}", error="REQUEST_TIMED_OUT")
            for i in range(100)
        ],
        "1 matching rule (throttle)": [dict(api="Metadata", throttle_ms=1)],
    }
    best = dict.fromkeys(setups, 0.0)
    with FakeCluster(topics={"t": 3}).run_in_thread() as cluster:
        rate(cluster, 200)  # warm up codecs
        # Rounds interleave the setups and keep each one's best: shared machines are noisy.
        for _ in range(args.rounds):
            for name, rules in setups.items():
                cluster.faults.clear()
                for rule in rules:
                    cluster.faults.add(**rule)
                best[name] = max(best[name], rate(cluster, args.requests))
    baseline = best["no rules"]
    rows = list(best.items())
    overhead_100 = baseline / best["100 rules, none matching"]
    table = Table(title=f"Metadata requests per second, best of {args.rounds} x {args.requests}, one connection")
    table.add_column("rules")
    table.add_column("req/s", justify="right")
    table.add_column("vs no rules", justify="right")
    for name, value in rows:
        table.add_row(name, f"{value:,.0f}", f"{value / baseline:.2f}")
    Console().print(table)
    print(f"fault_hook_overhead_100_rules: {overhead_100:.2f}")


if __name__ == "__main__":
    main()
