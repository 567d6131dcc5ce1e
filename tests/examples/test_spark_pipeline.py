"""The PySpark example (examples/spark_pipeline) against fakebroker, with Spark's own Kafka source and sink.

One SparkSession serves the module (its start-up alone takes 10-20 s). The totals Spark
writes are compared with totals computed here in plain Python from the events produced:
exactly, for the Parquet sink (exactly-once through its checkpoint and metadata log), and for
the Kafka sink without faults; under faults the Kafka sink is at-least-once, so there every
total must be there and nothing else, duplicates allowed.

Run alone with ``python3 -m pytest -m spark -rA``; timings are printed as the tests run.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import random
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Producer

from fakebroker import FakeCluster

# The tests of this module share a Spark session and the first run's state: --dist loadfile (in
# pyproject's addopts) keeps them on one xdist worker, in order.
pytestmark = pytest.mark.spark

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark_pipeline"
BASE_MS = 1_714_557_600_000  # 2024-05-01T10:00:00Z
SPACING_MS = 600  # one order every 0.6 s of event time: 10,000 orders span 100 minutes
JITTER_MS = 2_000  # out of order by up to 2 s, far inside the 10-minute watermark
WINDOW_MS = 5 * 60_000
WATERMARK_MS = 10 * 60_000
CUSTOMERS = 20
TIMINGS: dict[str, float] = {}


def _load_pipeline():
    spec = importlib.util.spec_from_file_location("spark_pipeline_example", EXAMPLE / "pipeline.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


pipeline = _load_pipeline()


def say(capsys, line: str) -> None:
    """Print past pytest's capture: the timings belong in every run's output."""
    with capsys.disabled():
        print(f"\n[spark] {line}", flush=True)


@dataclass(frozen=True)
class Order:
    order_id: str
    customer: str
    amount_cents: int
    ts_ms: int

    def to_json(self) -> bytes:
        ts = dt.datetime.fromtimestamp(self.ts_ms / 1000, dt.timezone.utc).isoformat(timespec="milliseconds")
        return json.dumps(
            {
                "order_id": self.order_id,
                "customer": self.customer,
                "amount_cents": self.amount_cents,
                "ts": ts.replace("+00:00", "Z"),
            }
        ).encode()


def make_orders(first: int, n: int, seed: int = 8) -> list[Order]:
    rng = random.Random(seed * 1_000_003 + first)
    return [
        Order(
            f"o-{i}",
            f"c-{rng.randrange(CUSTOMERS):02d}",
            rng.randint(100, 50_000),
            BASE_MS + i * SPACING_MS + rng.randint(-JITTER_MS, JITTER_MS),
        )
        for i in range(first, first + n)
    ]


def produce(bootstrap: str, orders: list[Order], topic: str = "orders") -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True, "log_level": 3})
    failed = []
    for order in orders:
        producer.produce(
            topic,
            order.to_json(),
            key=order.customer.encode(),
            on_delivery=lambda err, msg: err is not None and failed.append(err),
        )
        producer.poll(0)
    assert producer.flush(30) == 0
    assert not failed, failed[:3]


Total = tuple[str, int, int, int, int]  # customer, window start ms, window end ms, orders, amount_cents


def expected_totals(orders: list[Order]) -> list[Total]:
    """What an append-mode windowed aggregation must have emitted after an availableNow run:
    every window whose end the watermark (max event time - 10 min) has passed."""
    watermark = max(o.ts_ms for o in orders) - WATERMARK_MS
    assert watermark % WINDOW_MS, "a watermark exactly on a window end would test Spark's tie rule, not the broker"
    sums: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
    for o in orders:
        start = o.ts_ms - o.ts_ms % WINDOW_MS
        if start + WINDOW_MS <= watermark:
            sums[(o.customer, start)][0] += 1
            sums[(o.customer, start)][1] += o.amount_cents
    return sorted((c, s, s + WINDOW_MS, n, amount) for (c, s), (n, amount) in sums.items())


def parquet_totals(spark, path: Path) -> list[Total]:
    from pyspark.sql import functions as F

    rows = (
        spark.read.parquet(str(path))
        .select("customer", F.unix_millis("window_start"), F.unix_millis("window_end"), "orders", "amount_cents")
        .collect()
    )
    return sorted(tuple(r) for r in rows)


def kafka_totals(cluster: FakeCluster, topic: str = "order-totals") -> list[Total]:
    out = []
    for _, _, key, value in cluster.records(topic):
        doc = json.loads(value)
        assert key.decode() == doc["customer"]
        start, end = (int(dt.datetime.fromisoformat(doc[k]).timestamp() * 1000) for k in ("window_start", "window_end"))
        out.append((doc["customer"], start, end, doc["orders"], doc["amount_cents"]))
    return sorted(out)


def assert_no_broker_errors(cluster: FakeCluster) -> None:
    """No request the Java client sent made the broker fail internally or answer a top-level error."""
    bad = [e.describe() for e in cluster.events if e.kind in ("handler_error", "request_error")]
    assert not bad, bad[:10]


def new_cluster() -> FakeCluster:
    # replication factor 3 everywhere, so a stopped broker's partitions get a new leader
    return FakeCluster(
        brokers=3,
        topics={
            "orders": {"partitions": 6, "replication_factor": 3},
            "order-totals": {"partitions": 3, "replication_factor": 3},
        },
    )


@pytest.fixture(scope="module")
def spark():
    began = time.monotonic()
    session = pipeline.spark_session()
    TIMINGS["start-up"] = time.monotonic() - began
    yield session
    session.stop()


@pytest.fixture(scope="module")
def cluster():
    with new_cluster().run_in_thread() as c:
        yield c


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """The state tests 1 and 2 share: the job's folders and every order produced so far."""
    return {"paths": pipeline.PipelinePaths.under(tmp_path_factory.mktemp("order-totals")), "orders": []}


def test_first_run_totals_match_plain_python(spark, cluster, job, capsys):
    say(capsys, f"SparkSession start-up: {TIMINGS['start-up']:.1f} s (once per module)")
    began = time.monotonic()
    job["orders"] = make_orders(0, 10_000)
    produce(cluster.bootstrap_servers, job["orders"])
    report = pipeline.run(spark, cluster.bootstrap_servers, job["paths"])

    assert report.input_rows == {"totals_to_kafka": 10_000, "totals_to_parquet": 10_000}
    assert report.rows_dropped_by_watermark == {"totals_to_kafka": 0, "totals_to_parquet": 0}
    expected = expected_totals(job["orders"])
    assert len(expected) > 300
    assert parquet_totals(spark, job["paths"].parquet) == expected
    assert kafka_totals(cluster) == expected
    # Spark's executors read with consumers named after the job's groupIdPrefix
    clients = {e.client_id for e in cluster.events if e.kind == "client_connected"}
    assert any(c.startswith("consumer-order-totals-") and "-executor-" in c for c in clients), clients
    assert_no_broker_errors(cluster)
    say(
        capsys,
        f"first run, 10,000 orders: {time.monotonic() - began:.1f} s "
        f"(Spark {report.seconds:.1f} s, batches {report.batches})",
    )


def test_restart_from_checkpoint_reads_only_new_orders(spark, cluster, job, capsys):
    if not job["orders"]:
        pytest.fail("needs test_first_run_totals_match_plain_python to have run first")
    began = time.monotonic()
    more = make_orders(len(job["orders"]), 5_000)
    time.sleep(0.01)
    since_ms = int(time.time() * 1000)  # after every earlier record's timestamp, before every new one's
    produce(cluster.bootstrap_servers, more)
    job["orders"] += more
    report = pipeline.run(spark, cluster.bootstrap_servers, job["paths"])

    # Both queries resumed at the checkpointed offsets: the 10,000 already counted are not read again.
    assert report.input_rows == {"totals_to_kafka": 5_000, "totals_to_parquet": 5_000}
    expected = expected_totals(job["orders"])
    assert parquet_totals(spark, job["paths"].parquet) == expected
    assert kafka_totals(cluster) == expected
    # a batch read from a point in time (ListOffsets by timestamp) finds exactly the new orders
    backfill = pipeline.orders_since(spark, cluster.bootstrap_servers, since_ms).select("order_id").collect()
    assert sorted(r.order_id for r in backfill) == sorted(o.order_id for o in more)
    assert_no_broker_errors(cluster)
    say(
        capsys,
        f"restart from checkpoint, 5,000 more orders: {time.monotonic() - began:.1f} s (Spark {report.seconds:.1f} s)",
    )


def test_broker_restart_and_leader_move_during_a_run(spark, tmp_path, capsys):
    began = time.monotonic()
    orders = make_orders(0, 10_000, seed=9)
    with new_cluster().run_in_thread() as cluster:
        produce(cluster.bootstrap_servers, orders)
        paths = pipeline.PipelinePaths.under(tmp_path)
        # smaller batches (8 with data): the run lasts long enough for every fault to land inside it
        queries = pipeline.start(spark, cluster.bootstrap_servers, paths, max_offsets_per_trigger=1_250)
        done: list[str] = []
        failure: list[BaseException] = []

        def after_batches(k: int, deadline: float) -> None:
            """Until both queries have finished k batches with data: each fault spans whole batches."""
            while not all(sum(1 for p in q.recentProgress if p.numInputRows) >= k for q in queries):
                assert time.monotonic() < deadline, f"fewer than {k} batches in 120 s: {[q.status for q in queries]}"
                time.sleep(0.05)

        def faults() -> None:
            try:
                deadline = time.monotonic() + 120
                after_batches(1, deadline)
                victim = cluster.leader("orders", 0)
                others = [b for b in range(3) if b != victim]
                cluster.stop_broker(victim)  # its partitions' leadership moves to the next replica
                done.append(f"stopped broker {victim}")
                after_batches(2, deadline)
                moved = next(p for p in range(1, 6) if cluster.leader("orders", p) == others[0])
                cluster.move_leader("orders", moved, others[1])
                done.append(f"moved orders[{moved}] to broker {others[1]}")
                after_batches(3, deadline)
                cluster.start_broker(victim)
                done.append(f"started broker {victim}")
                after_batches(4, deadline)
                cluster.move_leader("orders", 0, victim)
                done.append(f"moved orders[0] back to broker {victim}")
                if not all(q.isActive for q in queries):
                    done.append("(the run had ended before the last fault)")
            except BaseException as exc:  # surfaced by the test thread below
                failure.append(exc)

        thread = threading.Thread(target=faults, daemon=True)
        thread.start()
        pipeline.wait(queries)
        thread.join(30)
        report = pipeline.report(queries, time.monotonic() - began)

        assert not failure, failure
        assert done[-1].startswith("moved orders[0] back"), done  # every fault landed while both queries ran
        kinds = [e.kind for e in cluster.events]
        assert {"broker_stopped", "broker_started", "leader_moved"} <= set(kinds)
        assert report.input_rows == {"totals_to_kafka": 10_000, "totals_to_parquet": 10_000}
        expected = expected_totals(orders)
        assert parquet_totals(spark, paths.parquet) == expected
        assert sorted(set(kafka_totals(cluster))) == expected  # at-least-once: duplicates allowed
    say(
        capsys,
        f"run with a broker restart and leader moves ({'; '.join(done)}): "
        f"{time.monotonic() - began:.1f} s (Spark {report.seconds:.1f} s, batches {report.batches})",
    )
