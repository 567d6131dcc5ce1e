"""The shipped campaign examples (issue 38), each run as the campaign runs it (``run_isolated``:
a process per run): the confluent-kafka orders consumer done right loses nothing with the classic
protocol and with ``group.protocol=consumer``, and its planted bug (commit before processing) is
caught losing orders with ``group.protocol=consumer`` too (the Spark tests run it classic); an
aiokafka consumer that commits after processing loses nothing (its re-reads after rebalances are
allowed, none is beyond the commit policy); a consumer that seeks back to records it committed
already is caught duplicating them beyond that policy with both protocols; a transactional
consume-transform-produce loop invoices every order exactly once, and the same loop with its
offsets committed outside the transaction (a planted bug) is caught losing orders within a few
seeds."""

from __future__ import annotations

import itertools
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from fakebroker.campaign import Job, load_campaign
from fakebroker.campaign.isolate import run_isolated

pytestmark = pytest.mark.clients
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "campaigns"
SEEDS = (0, 1)  # the orders and transactional examples' two protocols (classic, consumer), one seed each


def job(spec: str, seed: int) -> Job:
    """One run of the campaign's first mix; its grid's cells take turns across seeds."""
    campaign = load_campaign(spec)
    cells = [dict(zip(campaign.grid, values)) for values in itertools.product(*campaign.grid.values())]
    return Job(spec, seed, campaign.mixes[0].name, cells[seed % len(cells)], timeout=campaign.timeout)


def run(spec: str, seed: int) -> dict[str, Any]:
    return run_isolated(job(spec, seed))


def failure(row: dict[str, Any]) -> str:
    """A row as an assertion message: its verdict, seed and cell, error and the run's output."""
    output = row.get("output", "")[-2000:]
    return f"{row['verdict']} (seed {row['seed']} {row.get('cell')}):\n{row.get('error')}\n{output}"


@pytest.mark.parametrize("example", ["correct.py", "aiokafka_orders.py", "transfer_eos.py"])
def test_a_correct_example_is_ok_on_every_seed(example):
    # each run is a process of its own with a cluster of its own, as on a campaign's executors
    # (local[2] runs two at a time): the seeds run side by side, most of a run is waiting
    jobs = [job(str(EXAMPLES / example), seed) for seed in SEEDS]
    with ThreadPoolExecutor(len(jobs)) as pool:
        rows = list(pool.map(run_isolated, jobs))
    for row in rows:
        assert row["verdict"] == "ok", failure(row)
        assert row["produced"] > 0 and row["processed"] >= row["produced"], row
        print(f"{example} seed {row['seed']} {row['cell']}: ok in {row['seconds']} s, {row['produced']} records")


def test_a_consumer_that_seeks_back_to_committed_records_is_caught_duplicating():
    # seek_back.py's planted bug, a retry that seeks back to records committed already, with both
    # protocols side by side: every run duplicates beyond what at least once allows, none loses
    jobs = [job(str(EXAMPLES / "seek_back.py"), seed) for seed in SEEDS]
    with ThreadPoolExecutor(len(jobs)) as pool:
        rows = list(pool.map(run_isolated, jobs))
    for row in rows:
        assert row["verdict"] == "duplicated", failure(row)
        assert row["lost"] == 0 and row["duplicated"] > 0, failure(row)
        assert "processed again beyond the commit policy" in row["error"] and "(rewind)" in row["error"], failure(row)
        print(f"seek_back.py seed {row['seed']} {row['cell']}: duplicated in {row['seconds']} s")


# The transfer loop with the input offsets committed by the consumer before the transaction that
# writes the invoices: a crash mid-batch (every stop of a member is one) leaves the offsets
# committed and the invoices aborted when the next instance fences the transaction. Restarts only,
# so every run stops members four times.
COMMIT_OFFSETS_FIRST = """
    import sys

    sys.path.insert(0, {examples!r})
    from confluent_kafka import KafkaException
    from transfer_eos import BLOCKS, CLUSTER, DELIVERY, GRID, OUTPUT, TIMEOUT, make_scenario, next_offsets

    from fakebroker.campaign import FaultMix

    FAULT_MIXES = [FaultMix("restarts", ("rolling_restart",), steps=2)]


    def commit_offsets_first(consumer, producer, orders, invoice):
        try:
            consumer.commit(offsets=next_offsets(orders), asynchronous=False)  # the bug
        except KafkaException:
            pass
        producer.begin_transaction()
        try:
            for order in orders:
                producer.produce(OUTPUT, invoice(order), key=order.key())
            producer.commit_transaction(30)
        except KafkaException:
            producer.abort_transaction(30)


    scenario = make_scenario(commit_offsets_first)
"""


def test_offsets_committed_outside_the_transaction_lose_orders_within_a_few_seeds(tmp_path):
    spec = tmp_path / "transfer_commit_offsets_first.py"
    spec.write_text(textwrap.dedent(COMMIT_OFFSETS_FIRST.format(examples=str(EXAMPLES))))
    rows = []
    for seed in range(3):
        rows.append(run(str(spec), seed))
        if rows[-1]["verdict"] != "ok":
            break
    found = rows[-1]
    assert found["verdict"] == "lost", "\n".join(failure(r) for r in rows)
    assert 0 < found["lost"] and found["processed"] < found["produced"], found
    print(f"found on seed {found['seed']} in {found['seconds']} s: {found['error'].splitlines()[0]}")


def test_the_planted_bug_loses_orders_with_the_consumer_group_protocol_too():
    # the campaign tests on Spark run commit_first with the classic protocol; here KIP-848's
    # group.protocol=consumer, two seeds side by side, then more until one loses
    spec = str(EXAMPLES / "commit_first.py")
    mix = load_campaign(spec).mixes[0].name
    consumer = {"protocol": "consumer"}
    rows: list[dict[str, Any]] = []
    for first in range(0, 6, 2):
        jobs = [Job(spec, seed, mix, consumer, timeout=load_campaign(spec).timeout) for seed in (first, first + 1)]
        with ThreadPoolExecutor(len(jobs)) as pool:
            rows += pool.map(run_isolated, jobs)
        if any(r["verdict"] == "lost" for r in rows):
            break
    assert {r["verdict"] for r in rows} <= {"ok", "lost"}, "\n".join(failure(r) for r in rows)
    found = next((r for r in rows if r["verdict"] == "lost"), None)
    assert found is not None, "\n".join(failure(r) for r in rows)
    assert found["cell"] == consumer and 0 < found["lost"] and "lost:" in found["error"], found
    print(f"found on seed {found['seed']} of {len(rows)} in {found['seconds']} s: {found['error'].splitlines()[0]}")
