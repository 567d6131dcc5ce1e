"""Timelines: the text one on made-up events, the swim lanes as data, and the pictures of a
real 3-member rebalance with one failure (the scenario behind docs/timeline-rebalance.svg)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from fakebroker.core.events import Event, make
from fakebroker.timeline import (
    draw_timeline,
    format_assignment,
    select_events,
    swimlanes,
    timeline,
    timeline_text,
    write_timeline,
)

ROOT = Path(__file__).resolve().parents[2]
U1, U2, U3 = (
    "0e9080ea-1111-4222-8333-444455556666",
    "c91479cc-1111-4222-8333-444455556666",
    "dd3ef48c-1111-4222-8333-444455556666",
)
M1, M2, M3 = f"c1-{U1}", f"c2-{U2}", f"c3-{U3}"


class Log:
    """Builds events as the runtime would: ordered, cluster time in ms, real time in s."""

    def __init__(self, start_ms: int = 1_700_000_000_000):
        self.events: list[Event] = []
        self.now = start_ms
        self.wall_offset = 0.0

    def at(self, ms: int) -> Log:
        self.now = self.events[0].time_ms + ms if self.events else self.now + ms
        return self

    def add(self, kind: str, broker: int | None = None, **details) -> Event:
        event = make(
            kind, broker, time_ms=self.now, seq=len(self.events) + 1, wall=self.now / 1000 + self.wall_offset, **details
        )
        self.events.append(event)
        return event


def three_members_one_expiry() -> list[Event]:
    """c1, c2, c3 join group g (generations 1-3, 2/2/2); c2 expires; generation 4 is 3/3."""
    log = Log()
    log.add("broker_started", 0, host="127.0.0.1", port=9092)
    log.at(10).add("client_connected", 0, client_id="c1", peer="127.0.0.1:5000")
    for i, (m, c) in enumerate([(M1, "c1"), (M2, "c2"), (M3, "c3")], start=1):
        log.at(1000 * i).add("member_joined", 0, group="g", member=m, client_id=c, instance=None)
        log.add("rebalance_started", None, group="g", reason=f"member {m} joined", generation=i - 1)
        log.add("group_state_changed", None, group="g", old="Stable", new="PreparingRebalance", generation=i - 1)
        log.at(1000 * i + 300).add("generation_started", None, group="g", generation=i, members=i)
        log.add("group_state_changed", None, group="g", old="PreparingRebalance", new="Stable", generation=i)
        parts = [list(range(6))[k * 6 // i : (k + 1) * 6 // i] for k in range(i)]
        for (mid, cid), ps in zip([(M1, "c1"), (M2, "c2"), (M3, "c3")], parts):
            log.add(
                "assignment_delivered",
                None,
                group="g",
                member=mid,
                client_id=cid,
                generation=i,
                assignment={"orders": ps},
            )
    log.at(3500).add(
        "fault_fired", 0, rule=1, action="blackhole", api="Heartbeat", version=4, client_id="c2", group="g"
    )
    log.at(9500).add("member_expired", None, group="g", member=M2, client_id="c2", session_timeout_ms=6000)
    log.add("member_removed", None, group="g", member=M2, client_id="c2", reason=f"member {M2} session expired")
    log.add("rebalance_started", None, group="g", reason=f"member {M2} session expired", generation=3)
    log.add("group_state_changed", None, group="g", old="Stable", new="PreparingRebalance", generation=3)
    for _ in range(3):  # a run of identical events: one line with a count
        log.add("request_error", 0, api="Heartbeat", client_id="c1", error="REBALANCE_IN_PROGRESS")
    log.at(9600).add("generation_started", None, group="g", generation=4, members=2)
    log.add("group_state_changed", None, group="g", old="PreparingRebalance", new="Stable", generation=4)
    log.add(
        "assignment_delivered",
        None,
        group="g",
        member=M1,
        client_id="c1",
        generation=4,
        assignment={"orders": [0, 1, 2]},
    )
    log.add(
        "assignment_delivered",
        None,
        group="g",
        member=M3,
        client_id="c3",
        generation=4,
        assignment={"orders": [3, 4, 5]},
    )
    log.at(9700).add("member_joined", 1, group="other", member="x-1", client_id="x")
    log.add("leader_moved", None, topic="__consumer_offsets", partition=7, leader=2, epoch=1)
    log.add("fault_fired", 1, rule=2, action="delay", api="Fetch", version=12, client_id="x", group=None)
    log.add("broker_stopped", 1)
    log.at(10_000).add("offset_committed", None, group="g", topic="orders", partition=0, offset=42)
    return log.events


# -- text -------------------------------------------------------------------------------------------
def test_text_has_one_aligned_line_per_event_with_times_since_the_first():
    events = three_members_one_expiry()
    text = timeline_text(events)
    lines = text.splitlines()
    assert lines[0].split() == ["time", "broker", "event", "group", "client", "details"]
    # every column starts where the header's does
    for name in ("broker", "event", "group", "client", "details"):
        col = lines[0].index(name)
        for line in lines[1:]:
            if len(line) > col:  # a line without details ends early
                assert line[col - 2 : col] == "  " and line[col] != " ", (name, line)
    assert lines[1].split()[:3] == ["+0.000s", "b0", "broker_started"] and lines[-1].startswith("+10.000s")
    expired = next(line for line in lines if "member_expired" in line)
    assert expired.startswith(" +9.500s") and " g " in expired and " c2 " in expired
    # member ids are cut to their uuid's first 8 digits; assignments read as topic[ranges]
    assert f"member={M2}" not in text and "member=c2-c91479cc" in text
    assert "assignment=orders[0-2]" in next(line for line in lines if "generation=4" in line and "c1" in line)
    assert 'reason="member c2-c91479cc session expired"' in text
    # identical consecutive events: one line, counted
    assert sum("REBALANCE_IN_PROGRESS" in line for line in lines) == 1
    assert "error=REBALANCE_IN_PROGRESS (x3)" in text
    # no wall column unless the clock is virtual
    assert "wall" not in lines[0]


def test_noise_is_hidden_unless_asked_for_and_kinds_select():
    events = three_members_one_expiry()
    assert "client_connected" not in timeline_text(events)
    assert "client_connected" in timeline_text(events, include_noise=True)
    only = timeline_text(events, kinds={"member_expired", "generation_started"}).splitlines()[1:]
    assert [line.split()[2] for line in only] == ["generation_started"] * 3 + ["member_expired", "generation_started"]


def test_group_filter_keeps_the_group_its_clients_and_cluster_wide_events():
    events = three_members_one_expiry()
    kinds = [e.kind for e in select_events(events, group="g")]
    assert "broker_stopped" in kinds and "fault_fired" in kinds and "request_error" in kinds
    assert "leader_moved" not in kinds  # offsets-topic moves appear as the group's own unload/load
    assert all(e.group in ("g", None) for e in select_events(events, group="g"))
    text = timeline_text(events, group="g")
    assert "other" not in text and "rule=2" not in text and "member_joined" in text
    assert "other" in timeline_text(events, group="other")


def test_a_group_timeline_shows_the_transactions_that_committed_its_offsets():
    log = Log()
    log.add("member_joined", 0, group="g", member=M1, client_id="c1", instance=None)
    log.at(100).add("txn_offsets_added", 1, transactional_id="tx-a", group="g", offsets={"in-0": 5})
    log.add("txn_offsets_added", 1, transactional_id="tx-other", group="h", offsets={"in-0": 1})
    log.at(200).add("txn_fenced", 1, transactional_id="tx-a", producer_id=7, epoch=0, new_epoch=1, reason="r")
    log.add("txn_fenced", 1, transactional_id="tx-other", producer_id=8, epoch=0, new_epoch=1, reason="r")
    log.at(300).add("txn_aborted", 1, transactional_id="tx-a", producer_id=7, epoch=1, partitions=["out-0"])
    shown = [(e.kind, e.details.get("transactional_id")) for e in select_events(log.events, group="g")]
    assert shown == [
        ("member_joined", None),
        ("txn_offsets_added", "tx-a"),
        ("txn_fenced", "tx-a"),
        ("txn_aborted", "tx-a"),
    ]
    labels = [m.label for m in swimlanes(log.events, group="g").markers]
    assert labels == ["txn tx-a fenced", "txn tx-a aborted"]


def test_virtual_clock_jumps_get_their_own_line_and_real_time_a_column():
    log = Log()
    log.add("member_joined", 0, group="g", member=M1, client_id="c1")
    log.wall_offset = -46.0  # the cluster clock jumps 46 s while 0.2 s of real time pass
    log.at(46_000).add("member_expired", None, group="g", member=M1, client_id="c1", session_timeout_ms=45_000)
    log.wall_offset = -45.8
    log.at(46_000).add("clock_advanced", None, by_ms=46_000, now_ms=log.now)
    lines = timeline_text(log.events).splitlines()
    assert lines[0].split()[:2] == ["time", "wall"]
    assert re.match(r"\+46\.000s\s+\+0\.000s\s+-\s+member_expired", lines[2]), lines[2]
    assert lines[3] == "+46.000s  ~~~~ virtual clock jumped +46.000s (from +0.000s) ~~~~"


def test_empty_and_formatting_helpers():
    assert timeline_text([]) == "(no events)"
    assert format_assignment({"b": [5, 0, 1, 2], "a": [7]}) == "a[7] b[0-2,5]"
    assert format_assignment({}) == "-"


# -- swim lanes as data -----------------------------------------------------------------------------
def test_swimlanes_follow_members_generations_and_assignments():
    data = swimlanes(three_members_one_expiry(), group="g")
    lanes = {lane.client_id: lane for lane in data.lanes}
    assert sorted(lanes) == ["c1", "c2", "c3"] and lanes["c2"].label == "c2 (c91479cc)"
    assert [s.generation for s in lanes["c1"].segments] == [None, 1, 2, 3, 4]
    assert [s.generation for s in lanes["c2"].segments] == [None, 2, 3]
    assert lanes["c2"].ended == "expired" and lanes["c2"].segments[-1].end == pytest.approx(9.5)
    assert lanes["c3"].segments[-1].assignment == {"orders": [3, 4, 5]}
    gen3 = lanes["c1"].segments[3]
    assert gen3.assignment == {"orders": [0, 1]} and gen3.rebalancing_from == pytest.approx(9.5)
    assert gen3.end == pytest.approx(9.6)
    kinds = [m.kind for m in data.markers]
    assert kinds.count("rebalance_started") == 4 and "member_expired" in kinds and "fault_fired" in kinds
    assert "broker_stopped" in kinds and not any(m.client_id == "x" for m in data.markers)  # another group's client
    assert any(m.client_id == "x" for m in swimlanes(three_members_one_expiry()).markers)
    assert data.states["g"][-1][2] == "Stable" and data.end == pytest.approx(10.0)
    assert swimlanes(three_members_one_expiry(), group="g", until=data.end + 5 + 1_700_000_000).end == pytest.approx(
        15.0
    )


def test_consumer_protocol_members_move_epoch_by_epoch_and_revoking_is_hatched():
    log = Log()
    log.add("member_joined", 2, group="k", member="a", client_id="ca", instance=None)
    log.add("group_epoch_bumped", 2, group="k", epoch=1, reason="member a joined")
    log.at(10).add(
        "member_reconciled",
        2,
        group="k",
        member="a",
        epoch=1,
        state="stable",
        assignment={"t": [0, 1, 2, 3]},
        client_id="ca",
    )
    log.at(500).add("member_joined", 2, group="k", member="b", client_id="cb", instance=None)
    log.add("group_epoch_bumped", 2, group="k", epoch=2, reason="member b joined")
    log.at(510).add(
        "member_reconciled",
        2,
        group="k",
        member="a",
        epoch=1,
        state="unrevoked_partitions",
        assignment={"t": [0, 1]},
        revoking={"t": [2, 3]},
        client_id="ca",
    )
    log.at(700).add(
        "member_reconciled", 2, group="k", member="a", epoch=2, state="stable", assignment={"t": [0, 1]}, client_id="ca"
    )
    log.at(710).add(
        "member_reconciled", 2, group="k", member="b", epoch=2, state="stable", assignment={"t": [2, 3]}, client_id="cb"
    )
    data = swimlanes(log.events, group="k")
    lanes = {lane.client_id: lane for lane in data.lanes}
    assert [(s.generation, s.assignment) for s in lanes["ca"].segments] == [
        (None, None),
        (1, {"t": [0, 1, 2, 3]}),
        (1, {"t": [0, 1]}),
        (2, {"t": [0, 1]}),
    ]
    assert lanes["ca"].segments[2].rebalancing_from == pytest.approx(0.51)  # revoking
    assert [(s.generation, s.assignment) for s in lanes["cb"].segments][-1] == (2, {"t": [2, 3]})
    assert [m.label for m in data.markers if m.kind == "rebalance_started"] == ["epoch 1", "epoch 2"]


def test_static_member_keeps_its_lane_when_fenced():
    log = Log()
    log.add("member_joined", 0, group="g", member="a-1", client_id="a", instance="i-1")
    log.at(100).add("generation_started", None, group="g", generation=1, members=1)
    log.at(200).add("member_fenced", None, group="g", member="a-1", instance="i-1", replaced_by="a-2")
    log.at(300).add("generation_started", None, group="g", generation=2, members=1)
    (lane,) = swimlanes(log.events).lanes
    assert lane.member_id == "a-2" and [s.generation for s in lane.segments] == [None, 1, 2]


def test_a_picture_of_many_members_is_drawn(tmp_path):
    log = Log()
    members = [(f"svc-{i}", f"svc-{i}-{i:08x}-1111-4222-8333-444455556666") for i in range(10)]
    for i, (cid, mid) in enumerate(members):
        log.at(500 * i).add("member_joined", 0, group="big", member=mid, client_id=cid)
        log.add("generation_started", None, group="big", generation=i + 1, members=i + 1)
        for cid2, mid2 in members[: i + 1]:
            log.add(
                "assignment_delivered",
                None,
                group="big",
                member=mid2,
                client_id=cid2,
                generation=i + 1,
                assignment={"orders": [int(mid2.split("-")[1])]},
            )
    log.at(6000).add("clock_advanced", None, by_ms=1000, now_ms=log.now)
    svg = draw_timeline(log.events, tmp_path / "big.svg", title="ten members")
    text = svg.read_text()
    assert all(f"svc-{i} (" in text for i in range(10)) and "generation 10" in text and "ten members" in text


# -- the real thing: 3 confluent-kafka consumers, one fails -------------------------------------------
def _scenario():
    spec = importlib.util.spec_from_file_location(
        "draw_example_timeline", ROOT / "scripts" / "draw_example_timeline.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.clients
def test_timeline_of_a_three_member_rebalance_with_one_failure(tmp_path):
    from fakebroker import FakeCluster

    scenario = _scenario()
    with FakeCluster(brokers=3, topics={scenario.TOPIC: scenario.PARTITIONS}).run_in_thread() as cluster:
        with scenario.rebalance_with_failure(cluster) as outcome:
            svg = write_timeline(cluster, tmp_path / "t.svg", group=scenario.GROUP)
            png = write_timeline(cluster, tmp_path / "t.png", group=scenario.GROUP)
            txt = write_timeline(cluster, tmp_path / "t.txt", group=scenario.GROUP)
            text = timeline(cluster, scenario.GROUP)
            view = cluster.group(scenario.GROUP)

    # What the clients saw: 2/2/2 with three members, 3/3 for the two survivors, each time all six partitions.
    assert sorted(map(len, outcome.before.values())) == [2, 2, 2]
    assert sorted(p for ps in outcome.before.values() for p in ps) == list(range(6))
    assert sorted(outcome.after) == ["c1", "c3"] and sorted(p for ps in outcome.after.values() for p in ps) == list(
        range(6)
    )
    assert len(outcome.generations) == 4 and outcome.generations == sorted(set(outcome.generations))
    assert view.state == "Stable" and sorted(m.client_id for m in view.members) == ["c1", "c3"]
    last = outcome.generations[-1]
    assert view.generation == last

    # The text: the expiry of c2, each generation, the survivors' assignments.
    assert re.search(r"member_expired\s+orders-app\s+c2\s+member=c2-[0-9a-f]{8} session_timeout_ms=6000", text), text
    for gen in outcome.generations:
        assert re.search(rf"generation_started\s+orders-app\s+-\s+generation={gen} ", text), text
    assert re.search(
        rf"assignment_delivered\s+orders-app\s+c1\s+member=c1-\w+ generation={last} "
        rf"assignment=orders\[{outcome.after['c1'][0]}-{outcome.after['c1'][-1]}\]",
        text,
    ), text
    assert "fault_fired" in text and txt.read_text() == text + "\n"

    # The pictures: there, not trivial, naming the members, the generations and the failure.
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    content = svg.read_text()
    assert svg.stat().st_size > 20_000 and content.lstrip().startswith("<?xml")
    member_ids = {e.client_id: e.details["member"] for e in cluster.events if e.kind == "member_joined"}
    for client in ("c1", "c2", "c3"):
        assert f"{client} ({member_ids[client].split('-', 1)[1][:8]})" in content
    for gen in outcome.generations:
        assert f"generation {gen}" in content and f"g{gen}" in content
    assert "c2 expired" in content and "fault 1: Heartbeat blackhole" in content
    for client in ("c1", "c3"):  # the survivors' bars name their partitions (on one line or below g<N>)
        assert format_assignment({"orders": outcome.after[client]}) in content


def test_drawing_without_matplotlib_says_what_to_install(tmp_path, monkeypatch):
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.patches"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed
    with pytest.raises(RuntimeError, match=r"pip install 'fakebroker\[charts\]'"):
        draw_timeline(three_members_one_expiry(), tmp_path / "t.svg")
    with pytest.raises(ValueError, match=r"\.svg, \.png or \.pdf"):
        draw_timeline(three_members_one_expiry(), tmp_path / "t.jpg")
