"""kafkajs tests that script their faults over the HTTP control endpoint (js/control_faults.js).

The Python side only starts the cluster (and its ``ControlEndpoint``) and hands the script the
endpoint's URL and token; the script creates its topic, adds fault rules, stops and starts a
broker and waits for group states with plain ``fetch`` calls, as a JavaScript suite would. The
test then checks what kafkajs saw and what the cluster holds.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.http import ControlEndpoint

from . import test_kafkajs

node = test_kafkajs.node  # the session fixture: the node binary, with js/node_modules installed

pytestmark = [pytest.mark.clients, pytest.mark.node]

SCRIPT = Path(__file__).parent / "js" / "control_faults.js"
RUN_TIMEOUT = 50  # the script's watchdog fires 5 s earlier


@pytest.fixture
def cluster():
    with FakeCluster(brokers=3).run_in_thread() as c:
        yield c


def run_script(node: str, cluster: FakeCluster, scenario: str, timeout: float = RUN_TIMEOUT) -> dict:
    control = ControlEndpoint(cluster).__enter__()  # it serves as long as the cluster runs
    env = {
        **os.environ,
        "CONTROL_URL": control.url,
        "CONTROL_TOKEN": control.token,
        "KAFKAJS_LOG_LEVEL": os.environ.get("KAFKAJS_LOG_LEVEL", "WARN"),
        "SCENARIO_TIMEOUT_MS": str(int((timeout - 5) * 1000)),
    }
    try:
        proc = subprocess.run(
            [node, str(SCRIPT), scenario],
            cwd=SCRIPT.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"control_faults.js {scenario} timed out\nstderr:\n{exc.stderr}\n{_events(cluster)}")
    assert proc.returncode == 0, (
        f"control_faults.js {scenario} exited {proc.returncode}\nstderr:\n{proc.stderr[-6000:]}\n{_events(cluster)}"
    )
    return json.loads(proc.stdout)


def _events(cluster: FakeCluster) -> str:
    return "broker events:\n" + "\n".join(e.describe() for e in cluster.events[-80:] if e.kind != "client_connected")


def test_heartbeat_errors_scripted_over_http_make_kafkajs_rejoin(node, cluster):
    result = run_script(node, cluster, "rejoin")
    assert result["heartbeatErrors"] == ["REBALANCE_IN_PROGRESS"] * 3
    assert result["rule"]["fired"] == 3 and result["rule"]["active"] is False
    assert result["laterGeneration"] >= result["firstGeneration"] + 1
    assert result["state"] == "Stable" and result["joins"] >= 2
    assert result["consumed"] == 60 and result["missing"] == []
    [member] = result["members"]
    assert member["client_id"] == "ctl-rejoin" and sorted(member["assignment"]["ctl-rejoin"]) == [0, 1, 2]
    # the cluster agrees: the rule is spent, each rejoin started a generation of the one member,
    # and the consumer's clean leave at the end emptied the group
    rule = cluster.faults.list()[0]
    assert (rule.fired, rule.groups) == (3, frozenset({"ctl-rejoin-group"}))
    gens = [e.details for e in cluster.events if e.kind == "generation_started" and e.group == "ctl-rejoin-group"]
    assert [(g["generation"], g["members"]) for g in gens] == [
        (n, 1) for n in range(1, result["generationNow"] + 1)
    ] + [(result["generationNow"] + 1, 0)]
    view = cluster.group("ctl-rejoin-group")
    assert (view.state, view.generation, view.members) == ("Empty", result["generationNow"] + 1, ())
    assert len(cluster.records("ctl-rejoin")) == 60


def test_broker_bounce_scripted_over_http_while_kafkajs_produces(node, cluster):
    result = run_script(node, cluster, "bounce")
    total = result["total"]
    assert result["acked"] == total and result["ackedAtStop"] < total
    assert result["ledBefore"] >= 1 and 1 not in result["whileDown"] and -1 not in result["whileDown"]
    assert result["stopped"]["alive"] is False and result["started"]["alive"] is True
    assert result["moved"] >= result["ledBefore"]
    assert ["broker_stopped", 1] in result["brokerEvents"] and ["broker_started", 1] in result["brokerEvents"]
    # every record landed exactly once (the producer is idempotent), wherever the leaders moved
    values = sorted(v.decode() for _, _, _, v in cluster.records("ctl-bounce"))
    assert values == sorted(f"value-{i}" for i in range(total))
    assert result["highWatermarkSum"] == total


def test_seeded_churn_run_over_http_while_kafkajs_consumes(node, cluster):
    """The script's two kafkajs consumers read while it asks the endpoint for four seeded churn
    blocks (coordinator storms, partition growth, broker bounces, network cuts of a member),
    each waiting until the group has settled: every record is consumed and the group ends whole."""
    result = run_script(node, cluster, "churned", timeout=90)  # 3-5 s here: the blocks wait for the group
    report = result["report"]
    assert report["seed"] == 11 and report["replay"] == "seed=11" and len(report["actions"]) == 4
    # seed 11 draws each of the four cluster-side blocks once, in its own order
    names = [a.split(":")[0] for a in report["actions"]]
    assert sorted(names) == ["broker_bounce", "coordinator_failover_storm", "network_cut", "partition_growth"]
    assert result["consumed"] == 200 and result["state"] == "Stable" and result["members"] == 2
    grown = next(a for a in report["actions"] if a.startswith("partition_growth"))
    assert grown.endswith(f"to {result['partitions']} partitions") and result["partitions"] > 4
    kinds = {e.kind for e in cluster.events}
    assert {"broker_stopped", "broker_started", "network_cut", "network_healed", "group_loaded"} <= kinds
