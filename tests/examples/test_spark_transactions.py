"""Spark's Kafka source reads only committed transactions from fakebroker (examples/spark_pipeline).

A transactional confluent-kafka producer writes orders in two committed transactions, one
aborted transaction between them and one transaction left open at the end. With
``kafka.isolation.level=read_committed`` (the pipeline's setting) Spark's batch source and the
streaming job see exactly the committed orders, with ``failOnDataLoss=true`` although the
markers and the aborted records leave gaps in the offsets; with ``read_uncommitted`` a batch
read sees the aborted and open ones too.

One SparkSession for the one test (start-up alone takes 10-20 s). Run alone with
``python3 -m pytest tests/examples/test_spark_transactions.py -rA``.
"""

from __future__ import annotations

import dataclasses
import time

import pytest
from confluent_kafka import Producer

from fakebroker import FakeCluster

from .test_spark_pipeline import (
    Order,
    assert_no_broker_errors,
    expected_totals,
    kafka_totals,
    make_orders,
    parquet_totals,
    pipeline,
    say,
)

# The tests of this module share a Spark session and the first run's state: --dist loadfile (in
# pyproject's addopts) keeps them on one xdist worker, in order.
pytestmark = pytest.mark.spark


def renamed(orders: list[Order], prefix: str) -> list[Order]:
    return [dataclasses.replace(o, order_id=f"{prefix}-{i}") for i, o in enumerate(orders)]


def write_transaction(producer: Producer, orders: list[Order], end: str) -> None:
    """One transaction of ``orders``, then ``end``: "commit", "abort" or "open" (left open)."""
    producer.begin_transaction()
    for order in orders:
        producer.produce("orders", order.to_json(), key=order.customer.encode())
        producer.poll(0)
    assert producer.flush(30) == 0  # every record is in the log before the transaction ends
    if end == "commit":
        producer.commit_transaction(30)
    elif end == "abort":
        producer.abort_transaction(30)


def read_ids(spark, bootstrap: str, isolation_level: str) -> list[str]:
    """A batch read of the whole topic, as Spark's Kafka source does it (end offsets from
    ListOffsets under that isolation level, then fetches)."""
    raw = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", "orders")
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .option("failOnDataLoss", "true")
        .option("kafka.isolation.level", isolation_level)
        .load()
    )
    return sorted(r.order_id for r in pipeline.parse_orders(raw).select("order_id").collect())


def test_spark_reads_only_committed_transactions(tmp_path, capsys):
    began = time.monotonic()
    committed = make_orders(0, 1_500, seed=21) + make_orders(1_500, 1_500, seed=22)
    aborted = renamed(make_orders(0, 400, seed=23), "aborted")  # same event times, other amounts
    still_open = renamed(make_orders(1_000, 200, seed=24), "open")
    topics = {
        "orders": {"partitions": 6, "replication_factor": 3},
        "order-totals": {"partitions": 3, "replication_factor": 3},
    }
    with FakeCluster(brokers=3, topics=topics).run_in_thread() as cluster:
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "transactional.id": "orders-writer",
                "transaction.timeout.ms": 600_000,  # the open one stays open for the whole test
                "linger.ms": 5,
                "log_level": 3,
            }
        )
        producer.init_transactions(30)
        write_transaction(producer, committed[:1_500], "commit")
        write_transaction(producer, aborted, "abort")
        write_transaction(producer, committed[1_500:], "commit")
        write_transaction(producer, still_open, "open")
        assert cluster.transaction("orders-writer").state == "Ongoing"
        ids = sorted(o.order_id for o in committed)
        assert len(cluster.records("orders")) == len(committed) + len(aborted) + len(still_open)
        assert len(cluster.records("orders", committed=True)) == len(committed)

        started = time.monotonic()
        spark = pipeline.spark_session(app_name="order-totals-transactions")
        startup = time.monotonic() - started
        try:
            # Batch reads: read_committed sees the committed orders only, read_uncommitted everything.
            started = time.monotonic()
            assert read_ids(spark, cluster.bootstrap_servers, "read_committed") == ids
            read_committed_s = time.monotonic() - started
            started = time.monotonic()
            uncommitted = read_ids(spark, cluster.bootstrap_servers, "read_uncommitted")
            assert uncommitted == sorted(ids + [o.order_id for o in aborted + still_open])
            read_uncommitted_s = time.monotonic() - started

            # The streaming job (read_committed, failOnDataLoss=true): totals of the committed orders only.
            paths = pipeline.PipelinePaths.under(tmp_path)
            report = pipeline.run(spark, cluster.bootstrap_servers, paths)
            assert report.input_rows == {"totals_to_kafka": len(committed), "totals_to_parquet": len(committed)}
            expected = expected_totals(committed)
            assert parquet_totals(spark, paths.parquet) == expected
            assert kafka_totals(cluster) == expected
        finally:
            spark.stop()
        assert cluster.transaction("orders-writer").state == "Ongoing"  # still open: nothing aborted it
        assert_no_broker_errors(cluster)
        producer.abort_transaction(30)
    say(
        capsys,
        f"transactions: SparkSession start-up {startup:.1f} s, batch reads {read_committed_s:.1f} s "
        f"(read_committed) and {read_uncommitted_s:.1f} s (read_uncommitted), streaming run {report.seconds:.1f} s, "
        f"whole test {time.monotonic() - began:.1f} s",
    )
