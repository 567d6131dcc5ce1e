"""What TLS and SASL cost: connect time and produce throughput over each security protocol,
side by side in one run, with confluent-kafka.

    python benchmarks/security.py [--records 100000] [--connects 30] [--rounds 2]

For each of PLAINTEXT, SSL, SASL_PLAINTEXT (SCRAM-SHA-512) and SASL_SSL (SCRAM-SHA-512 and
PLAIN) it starts one in-process FakeCluster (127.0.0.1) and measures:

- connect: a new producer until ``list_topics`` answers (TCP, TLS handshake, ApiVersions,
  SASL exchange, Metadata), the best and the median of ``--connects`` producers a round (the
  median swings with librdkafka's own ~50 ms wake-ups; the best is the handshake's cost);
- produce: ``--records`` records of 100 bytes from one producer (``linger.ms=5``), records/s.

A short PLAINTEXT run first, not counted, takes the first uses (imports, codecs) out of the
way. Modes take turns, ``--rounds`` times; the table shows the best produce rate and the best and median
connect times of each, and their ratios to PLAINTEXT's. The last lines are ``ratio_produce_sasl_ssl`` and
``ratio_connect_sasl_ssl`` (SCRAM-SHA-512 over SASL_SSL against PLAINTEXT).
"""

from __future__ import annotations

import argparse
import statistics
import time

from confluent_kafka import Producer
from rich.console import Console
from rich.table import Table

from fakebroker.cluster import FakeCluster

try:
    from ._measure import client_produce_rate
except ImportError:  # run as a script
    from _measure import client_produce_rate

USERS = {"bench": "bench-secret"}
MODES = [
    ("PLAINTEXT", None),
    ("SSL", None),
    ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
    ("SASL_SSL", "SCRAM-SHA-512"),
    ("SASL_SSL", "PLAIN"),
]


def client_settings(cluster: FakeCluster, mechanism: str | None) -> dict:
    out = {"bootstrap.servers": cluster.bootstrap_servers, "security.protocol": cluster.security_protocol}
    if mechanism is not None:
        out |= {"sasl.mechanism": mechanism, "sasl.username": "bench", "sasl.password": "bench-secret"}
    if cluster.tls_ca_file is not None:
        out["ssl.ca.location"] = cluster.tls_ca_file
    return out | {"log_level": 3}


def connect_ms(settings: dict, connects: int) -> list[float]:
    times = []
    for _ in range(connects):
        began = time.perf_counter()
        producer = Producer(settings)
        producer.list_topics(timeout=10)
        times.append((time.perf_counter() - began) * 1000)
        del producer
    return times


def produce_rate(settings: dict, records: int) -> float:
    return client_produce_rate(settings, records)[0]


def measure(protocol: str, mechanism: str | None, records: int, connects: int) -> tuple[list[float], float]:
    with FakeCluster(security_protocol=protocol, users=USERS, topics={"bench": 4}).run_in_thread() as cluster:
        settings = client_settings(cluster, mechanism)
        return connect_ms(settings, connects), produce_rate(settings, records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--connects", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    opts = parser.parse_args()
    connects: dict[str, list[float]] = {}
    rates: dict[str, list[float]] = {}
    measure("PLAINTEXT", None, min(opts.records, 10_000), 3)  # first uses out of the way, not counted
    for _ in range(opts.rounds):  # modes take turns, so a load change hits them alike
        for protocol, mechanism in MODES:
            label = protocol + (f" {mechanism}" if mechanism else "")
            c, r = measure(protocol, mechanism, opts.records, opts.connects)
            connects.setdefault(label, []).extend(c)
            rates.setdefault(label, []).append(r)
    base_c, base_r = min(connects["PLAINTEXT"]), max(rates["PLAINTEXT"])
    table = Table(
        title=f"security: connect ({opts.connects} x {opts.rounds} producers) and produce ({opts.records:,} x 100 B)"
    )
    columns = ("mode", "connect ms, best", "x PLAINTEXT", "connect ms, median", "produce records/s", "x PLAINTEXT")
    for column in columns:
        table.add_column(column, justify="left" if column == "mode" else "right")
    for label in connects:
        best, median, r = min(connects[label]), statistics.median(connects[label]), max(rates[label])
        table.add_row(label, f"{best:.2f}", f"{best / base_c:.2f}", f"{median:.2f}", f"{r:,.0f}", f"{r / base_r:.2f}")
    Console().print(table)
    key = "SASL_SSL SCRAM-SHA-512"
    print(f"ratio_produce_sasl_ssl: {max(rates[key]) / base_r:.3f}")
    print(f"ratio_connect_sasl_ssl: {min(connects[key]) / base_c:.3f}")


if __name__ == "__main__":
    main()
