"""Order totals per customer: a PySpark Structured Streaming job on Spark's own Kafka source and sink.

The job a fakebroker user would test: JSON order events are read from topic ``orders`` with
``spark.readStream.format("kafka")``, parsed, summed per customer in 5-minute event-time
windows behind a 10-minute watermark, and each closed window is written twice, by two
checkpointed queries: as JSON to topic ``order-totals`` (the Kafka sink) and as Parquet
files. Both run with ``trigger(availableNow=True)``: read what is in the topic now, in
batches of at most ``max_offsets_per_trigger`` records, then stop; the next run resumes
from the checkpoint.

    spark = spark_session()                      # local[2], loopback only, connector jars from jars.py
    report = run(spark, "127.0.0.1:9092", PipelinePaths.under("/tmp/orders-job"))

An order event: ``{"order_id": "o-1", "customer": "c-07", "amount_cents": 1999,
"ts": "2024-05-01T10:00:00.000Z"}``. A total: key = customer, value =
``{"customer", "window_start", "window_end", "orders", "amount_cents"}``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

WINDOW = "5 minutes"
WATERMARK = "10 minutes"

ORDER_SCHEMA = StructType(
    [
        StructField("order_id", StringType()),
        StructField("customer", StringType()),
        StructField("amount_cents", LongType()),
        StructField("ts", TimestampType()),
    ]
)


@dataclass(frozen=True)
class PipelinePaths:
    """Where the job keeps its state and output. Each query needs its own checkpoint."""

    kafka_checkpoint: Path
    parquet_checkpoint: Path
    parquet: Path

    @classmethod
    def under(cls, root: str | Path) -> PipelinePaths:
        root = Path(root)
        return cls(root / "checkpoints" / "kafka-sink", root / "checkpoints" / "parquet-sink", root / "totals.parquet")


@dataclass
class RunReport:
    """What the run's micro-batches reported (``StreamingQuery.recentProgress``), per query."""

    seconds: float
    input_rows: dict[str, int] = field(default_factory=dict)
    batches: dict[str, int] = field(default_factory=dict)
    rows_dropped_by_watermark: dict[str, int] = field(default_factory=dict)


def spark_session(
    jars: list[Path] | None = None, *, app_name: str = "order-totals", shuffle_partitions: int = 4
) -> SparkSession:
    """A local Spark that talks to nothing but loopback, with the Kafka connector on its classpath.

    Must be called before any other SparkSession exists in the process: the environment and
    ``spark.jars`` only take effect when the JVM starts."""
    if jars is None:
        jars = _connector_jars()
    # Spark binds its driver, block manager and RPC ports on SPARK_LOCAL_IP; Python workers (if
    # a job ever needs them) run this interpreter, not whatever `python3` is on PATH.
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.jars", ",".join(str(j) for j in jars))
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    return spark


def _connector_jars() -> list[Path]:
    """jars.py beside this file, loaded by path: the example is a folder, not a package."""
    spec = importlib.util.spec_from_file_location("spark_pipeline_jars", Path(__file__).resolve().with_name("jars.py"))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ensure_jars()


def parse_orders(raw: DataFrame) -> DataFrame:
    """Kafka rows (key, value, topic, partition, offset, timestamp, ...) -> order columns; bad JSON is dropped."""
    return (
        raw.select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o"))
        .select("o.*")
        .where(F.col("customer").isNotNull() & F.col("ts").isNotNull())
    )


def orders_since(spark: SparkSession, bootstrap: str, timestamp_ms: int, *, topic: str = "orders") -> DataFrame:
    """A one-off batch read (a backfill, or a look at what arrived): every order appended to
    the topic at or after ``timestamp_ms`` (the record timestamp), up to the end now."""
    return parse_orders(
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingTimestamp", str(timestamp_ms))  # ListOffsets by timestamp, per partition
        .option("endingOffsets", "latest")
        .load()
    )


def order_totals(
    spark: SparkSession,
    bootstrap: str,
    *,
    topic: str = "orders",
    starting_offsets: str = "earliest",
    max_offsets_per_trigger: int = 4000,
    fail_on_data_loss: bool = True,
    isolation_level: str = "read_committed",
) -> DataFrame:
    """The streaming DataFrame of closed windows: customer, window_start, window_end, orders, amount_cents."""
    raw = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", starting_offsets)
        .option("maxOffsetsPerTrigger", max_offsets_per_trigger)
        # a gap in the offsets (data deleted under us) must fail the job, not skip silently
        .option("failOnDataLoss", str(fail_on_data_loss).lower())
        # consumer groups named order-totals-<uuid>: easy to spot in the broker's group list
        .option("groupIdPrefix", "order-totals")
        # only committed transactional writes; plain producers' records are all visible
        .option("kafka.isolation.level", isolation_level)
        .load()
    )
    return (
        parse_orders(raw)
        .withWatermark("ts", WATERMARK)
        .groupBy(F.col("customer"), F.window("ts", WINDOW))
        .agg(F.count("*").alias("orders"), F.sum("amount_cents").alias("amount_cents"))
        .select(
            "customer",
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "orders",
            "amount_cents",
        )
    )


def start(
    spark: SparkSession,
    bootstrap: str,
    paths: PipelinePaths,
    *,
    sink_topic: str = "order-totals",
    **source_options: Any,
) -> list[StreamingQuery]:
    """Start the two queries (Kafka sink, Parquet sink); each reads the source on its own."""
    to_kafka = (
        order_totals(spark, bootstrap, **source_options)
        .select(F.col("customer").alias("key"), F.to_json(F.struct("*")).alias("value"))
        .writeStream.format("kafka")
        .queryName("totals_to_kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", sink_topic)
        .option("checkpointLocation", str(paths.kafka_checkpoint))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    to_parquet = (
        order_totals(spark, bootstrap, **source_options)
        .writeStream.format("parquet")
        .queryName("totals_to_parquet")
        .option("path", str(paths.parquet))
        .option("checkpointLocation", str(paths.parquet_checkpoint))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    return [to_kafka, to_parquet]


def wait(queries: list[StreamingQuery], *, timeout: float = 180.0) -> None:
    """Wait until every query has stopped; re-raise the first failure (StreamingQueryException)."""
    deadline = time.monotonic() + timeout
    try:
        for query in queries:
            if not query.awaitTermination(max(1, int(deadline - time.monotonic()))):
                raise TimeoutError(f"query {query.name} still running after {timeout} s: {query.status}")
    finally:
        for query in queries:
            if query.isActive:
                query.stop()


def report(queries: list[StreamingQuery], seconds: float) -> RunReport:
    out = RunReport(seconds)
    for query in queries:
        progress = query.recentProgress
        out.batches[query.name] = len(progress)
        out.input_rows[query.name] = sum(p.numInputRows for p in progress)
        out.rows_dropped_by_watermark[query.name] = sum(
            op.numRowsDroppedByWatermark for p in progress for op in p.stateOperators
        )
    return out


def run(
    spark: SparkSession, bootstrap: str, paths: PipelinePaths, *, timeout: float = 180.0, **options: Any
) -> RunReport:
    """One availableNow run of the job: everything in the topic now, then stop."""
    began = time.monotonic()
    queries = start(spark, bootstrap, paths, **options)
    wait(queries, timeout=timeout)
    return report(queries, time.monotonic() - began)
