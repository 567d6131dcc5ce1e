"""What the live console costs the broker: produce throughput with nobody watching and with the
console open in a headless Chromium, side by side in one run.

    python benchmarks/console.py [--records 200000] [--rounds 3]

Four modes take turns, ``--rounds`` times, each on a fresh in-process FakeCluster (127.0.0.1,
one topic of 4 partitions) with one confluent-kafka producer sending ``--records`` records of
100 bytes (``linger.ms=5``):

- ``no endpoint``: no control endpoint at all;
- ``console closed``: the control endpoint running, no page open (the cost of having it);
- ``stream open``: a reader of the console's live stream (``GET /stream``) in a thread, no
  browser: what the broker's side of an open console costs;
- ``console open``: the console page open in Debian's Chromium (Playwright), its live stream
  connected and drawing, while the producer sends. The browser runs on the same cores.

Records/s is wall time, so on a small machine it also counts what Chromium's own drawing
takes from the cores; CPU µs per record is this process's CPU time (the broker and the
producer, not the browser), which is the broker's cost. The last lines are ``ratio_closed``,
``ratio_stream`` and ``ratio_open`` (best records/s against ``no endpoint``'s) and
``cpu_ratio_open`` (CPU per record with the console open against ``no endpoint``).
"""

from __future__ import annotations

import argparse
import http.client
import shutil
import statistics
import threading
import time

from rich.console import Console
from rich.table import Table

from fakebroker.cluster import FakeCluster
from fakebroker.http import ControlEndpoint

try:
    from ._measure import client_produce_rate
except ImportError:  # run as a script
    from _measure import client_produce_rate

MODES = ("no endpoint", "console closed", "stream open", "console open")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def produce_rate(cluster: FakeCluster, records: int) -> tuple[float, float]:
    """(records/s, this process's CPU µs per record)."""
    return client_produce_rate({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 3}, records)


def read_stream(control: ControlEndpoint, stop: threading.Event) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", control.port, timeout=10)
    conn.request("GET", "/stream", headers={"Authorization": f"Bearer {control.token}"})
    answer = conn.getresponse()
    while not stop.is_set() and answer.fp.readline():
        pass
    conn.close()


def measure(mode: str, records: int, browser) -> tuple[float, float]:
    with FakeCluster(topics={"bench": 4}).run_in_thread() as cluster:
        if mode == "no endpoint":
            return produce_rate(cluster, records)
        with ControlEndpoint(cluster) as control:
            if mode == "console closed":
                return produce_rate(cluster, records)
            if mode == "stream open":
                stop = threading.Event()
                reader = threading.Thread(target=read_stream, args=(control, stop))
                reader.start()
                try:
                    time.sleep(0.5)
                    return produce_rate(cluster, records)
                finally:
                    stop.set()
                    reader.join(5)
            page = browser.new_page()
            try:
                page.goto(control.console_url)
                page.get_by_test_id("connection").filter(has_text="live").wait_for(timeout=10_000)
                page.get_by_test_id("topic-bench").wait_for(timeout=10_000)
                time.sleep(1.0)  # the page's first drawing done
                return produce_rate(cluster, records)
            finally:
                page.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    rates: dict[str, list[float]] = {m: [] for m in MODES}
    cpus: dict[str, list[float]] = {m: [] for m in MODES}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        measure("console open", min(opts.records, 10_000), browser)  # first uses out of the way, not counted
        for _ in range(opts.rounds):  # modes take turns, so a load change hits them alike
            for mode in MODES:
                rate, cpu = measure(mode, opts.records, browser)
                rates[mode].append(rate)
                cpus[mode].append(cpu)
        browser.close()
    base, base_cpu = max(rates["no endpoint"]), min(cpus["no endpoint"])
    table = Table(title=f"console: produce {opts.records:,} x 100 B, {opts.rounds} rounds")
    columns = ("mode", "records/s, best", "records/s, median", "x no endpoint", "CPU µs/record, best", "x no endpoint")
    for column in columns:
        table.add_column(column, justify="left" if column == "mode" else "right")
    for mode in MODES:
        best, cpu = max(rates[mode]), min(cpus[mode])
        median = statistics.median(rates[mode])
        table.add_row(
            mode, f"{best:,.0f}", f"{median:,.0f}", f"{best / base:.3f}", f"{cpu:.2f}", f"{cpu / base_cpu:.3f}"
        )
    Console().print(table)
    print(f"ratio_closed: {max(rates['console closed']) / base:.3f}")
    print(f"ratio_stream: {max(rates['stream open']) / base:.3f}")
    print(f"ratio_open: {max(rates['console open']) / base:.3f}")
    print(f"cpu_ratio_open: {min(cpus['console open']) / base_cpu:.3f}")


if __name__ == "__main__":
    main()
