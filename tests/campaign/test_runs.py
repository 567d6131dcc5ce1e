"""One campaign run (issue 38), in a process of its own: whatever the scenario returns, raises
or never returns becomes a row, with the verdict kind Kafka users care about; a campaign module
that cannot be used is refused naming what is valid. These scenarios use no client: they
return verdicts directly, so the rows' plumbing is tested alone."""

from __future__ import annotations

import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from fakebroker.campaign import CampaignError, Job, load_campaign, run_job
from fakebroker.campaign.isolate import run_isolated
from fakebroker.campaign.runs import kind_of
from fakebroker.testing.ledger import BeyondPolicy, Duplicate, RecordId, Verdict
from fakebroker.version import __version__

LOST = Verdict(3, 2, lost=[RecordId("t", 0, 1)])
DUPLICATED = Verdict(3, 4, duplicates=[Duplicate("t", 0, 1, None, 2, ("m0", "m1"), "rebalance")])


def module(tmp_path: Path, body: str, name: str = "fake_campaign") -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(
        textwrap.dedent(
            """
            import os, time
            from fakebroker.testing.ledger import BeyondPolicy, Duplicate, RecordId, Verdict
            from fakebroker.campaign import FaultMix
            FAULT_MIXES = [FaultMix("quiet", ("partition_growth",), steps=1)]
            """
        )
        + textwrap.dedent(body)
    )
    return str(path)


def test_kinds_losses_first_duplicates_when_exactly_once_or_beyond_the_commit_policy():
    assert kind_of(Verdict(3, 3), "at_least_once") == "ok"
    assert kind_of(LOST, "at_least_once") == "lost"
    assert kind_of(DUPLICATED, "at_least_once") == "ok"  # a re-read after a rebalance
    assert kind_of(DUPLICATED, "exactly_once") == "duplicated"
    rewound = replace(DUPLICATED, duplicates_beyond_policy=[BeyondPolicy("m0", "t", 0, 1, 9, "rewind", None, 4)])
    assert kind_of(rewound, "at_least_once") == kind_of(rewound, "exactly_once") == "duplicated"
    assert kind_of(replace(rewound, lost=LOST.lost), "at_least_once") == "lost"


def test_a_run_in_this_process_is_a_row_with_its_schedule_and_timeline(tmp_path):
    spec = module(
        tmp_path,
        """
        CLUSTER = {"brokers": 1, "topics": {"t": 1}}
        def scenario(cluster, seed, schedule, cell):
            cluster.create_topic(f"seen-{seed}-{cell['x']}-{len(schedule)}", 1)
            return Verdict(3, 2, lost=[RecordId("t", 0, 1)])
        """,
    )
    row = run_job(Job(spec, 4, "quiet", {"x": "a"}))
    assert (row["verdict"], row["produced"], row["processed"], row["lost"]) == ("lost", 3, 2, 1)
    assert row["schedule_text"].startswith("1. partition_growth add=")
    assert "lost: t[0]@1" in row["error"] and row["version"] == __version__
    assert (row["seed"], row["mix"], row["cell"]) == (4, "quiet", {"x": "a"})


@pytest.mark.parametrize(
    ("body", "verdict", "said"),
    [
        ("def scenario(c, s, p, cell):\n    raise RuntimeError('consumer blew up')", "crashed", "consumer blew up"),
        (
            "def scenario(c, s, p, cell):\n    raise AssertionError(\"group 'g' did not settle within 30 s\")",
            "stuck",
            "did not settle",
        ),
        ("def scenario(c, s, p, cell):\n    return 42", "crashed", "not a Verdict"),
        (
            "DELIVERY = 'exactly_once'\ndef scenario(c, s, p, cell):\n"
            "    return Verdict(3, 4, duplicates=[Duplicate('t', 0, 1, None, 2, ('a', 'b'), None)])",
            "duplicated",
            "1 duplicated",
        ),
        ("def scenario(c, s, p, cell):\n    os._exit(3)", "crashed", "exited 3"),
        (
            # 3 s: the child's imports and its cluster's start come out of the run's time and a
            # short grace (under CI load a 1 s run was killed before it printed)
            "TIMEOUT = 3\ndef scenario(c, s, p, cell):\n    print('waiting for ever', flush=True)\n    time.sleep(600)",
            "stuck",
            "overran 3 s",
        ),
    ],
    ids=["raises", "does-not-settle", "returns-junk", "duplicates-exactly-once", "dies", "hangs"],
)
def test_whatever_a_run_does_is_a_row_in_its_own_process(tmp_path, body, verdict, said):
    spec = module(tmp_path, "CLUSTER = {'brokers': 1}\n" + body)
    row = run_isolated(Job(spec, 1, "quiet", {}, timeout=load_campaign(spec).timeout))
    assert row["verdict"] == verdict, row
    assert said in row["error"], row["error"]
    if verdict == "stuck" and "overran" in said:
        assert "waiting for ever" in row["output"]  # what it printed comes back with the row


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("X = 1", "needs scenario(cluster, seed, schedule, cell)"),
        ("GRID = {'protocol': []}\ndef scenario(*a): pass", "GRID['protocol'] must be a non-empty list"),
        ("DELIVERY = 'at_most_once'\ndef scenario(*a): pass", "the policies are at_least_once, exactly_once"),
        ("FAULT_MIXES = ['all']\ndef scenario(*a): pass", "FAULT_MIXES must be FaultMix values"),
        ("import no_such_module_here", "cannot import it"),
        ("CLUSTER = {'port': 9092}\ndef scenario(*a): pass", "a campaign's clusters take free ports"),
    ],
)
def test_an_unusable_campaign_module_names_what_is_valid(tmp_path, body, message):
    spec = module(tmp_path, body, name=f"bad_{abs(hash(body))}")
    with pytest.raises(CampaignError, match=None) as raised:
        load_campaign(spec)
    assert message in str(raised.value)
    with pytest.raises(CampaignError, match="no such file"):
        load_campaign(str(tmp_path / "missing.py"))


def test_runs_side_by_side_take_free_ports_on_loopback(tmp_path):
    """Each run's cluster listens on loopback on ports of its own: runs that share a host (the
    tasks of one executor) never collide."""
    spec = module(
        tmp_path,
        """
        CLUSTER = {"brokers": 2}
        def scenario(cluster, seed, schedule, cell):
            print("bootstrap", cluster.bootstrap_servers, flush=True)
            time.sleep(1.0)  # the runs overlap
            return Verdict(1, 1)
        """,
        name="ports_campaign",
    )
    jobs = [Job(spec, seed, "quiet", {}, timeout=30) for seed in range(4)]
    with ThreadPoolExecutor(len(jobs)) as pool:
        rows = list(pool.map(run_isolated, jobs))
    assert [r["verdict"] for r in rows] == ["ok"] * 4, rows
    servers = [line.split()[1] for r in rows for line in r["output"].splitlines() if line.startswith("bootstrap")]
    addresses = [a for s in servers for a in s.split(",")]
    assert len(servers) == 4 and len(addresses) == 8, servers
    assert len(set(addresses)) == 8 and all(a.startswith("127.0.0.1:") for a in addresses), addresses
