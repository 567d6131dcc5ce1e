"""Share groups (KIP-932) in the timelines: record events as one place each in the text
(``jobs[0]@3-5``), and in the swim lanes a segment per target assignment (members jump to it),
the group's state from its membership, lock expiries and archived records as lines,
redeliveries on the lane of the member that got them."""

from __future__ import annotations

import pytest

from fakebroker.timeline import draw_timeline, swimlanes, timeline_text
from fakebroker.timeline.lanes import share_groups

from .test_timeline import Log

A, B = "Wn3Y0FkVQvKdz7Hk2s1xAA", "k4T9hbQhSfWb1v0Rr2m7Bg"  # share member ids: 22 base64 characters


def share_story() -> Log:
    """Two members share one partition; a's lock runs out, b gets its records again and
    releases a poison record until it is archived; a leaves."""
    log = Log()
    log.add("group_created", 0, group="q")
    log.add("member_joined", 0, group="q", member=A, client_id="a", instance=None)
    log.add("group_epoch_bumped", 0, group="q", epoch=2, reason="member joined")
    log.add("target_assignment_computed", 0, group="q", epoch=2, assignment={A: {"jobs": [0]}})
    log.at(100).add(
        "share_records_acquired", 0, group="q", member=A, topic="jobs", partition=0, first=0, last=5,
        delivery_count=1, client_id="a",
    )  # fmt: skip
    log.at(200).add("member_joined", 0, group="q", member=B, client_id="b", instance=None)
    log.add("group_epoch_bumped", 0, group="q", epoch=3, reason="member joined")
    log.add("target_assignment_computed", 0, group="q", epoch=3, assignment={A: {"jobs": [0]}, B: {"jobs": [0]}})
    log.at(1000).add(
        "share_records_released", 0, group="q", member=A, topic="jobs", partition=0, records=6, reason="lock expired",
        client_id="a",
    )  # fmt: skip
    log.at(1100).add(
        "share_records_acquired", 0, group="q", member=B, topic="jobs", partition=0, first=0, last=5,
        delivery_count=2, client_id="b",
    )  # fmt: skip
    log.at(1200).add(
        "share_records_acknowledged", 0, group="q", member=B, topic="jobs", partition=0, first=3, last=3,
        outcome="release", client_id="b",
    )  # fmt: skip
    log.at(1300).add(
        "share_records_archived", 0, group="q", topic="jobs", partition=0, first=3, last=3, reason="delivery limit"
    )
    log.at(1500).add("group_epoch_bumped", 0, group="q", epoch=4, reason="member left")
    log.add("member_left", 0, group="q", member=A, instance=None, client_id="a")
    log.at(1600).add("member_left", 0, group="q", member=B, instance=None, client_id="b")
    return log


def test_share_record_events_read_as_places_in_the_text():
    lines = timeline_text(share_story().events).splitlines()
    assert lines[5].split()[2:] == ["share_records_acquired", "q", "a", f"member={A}", "at=jobs[0]@0-5", "delivery=1"]
    released = next(line for line in lines if "share_records_released" in line)
    assert released.endswith('member=Wn3Y0FkVQvKdz7Hk2s1xAA at=jobs[0] records=6 reason="lock expired"')
    acked = next(line for line in lines if "share_records_acknowledged" in line)
    assert acked.endswith("at=jobs[0]@3 outcome=release")
    archived = next(line for line in lines if "share_records_archived" in line)
    assert archived.endswith('at=jobs[0]@3 reason="delivery limit"')


def test_share_lanes_jump_to_each_target_and_end_when_the_member_leaves():
    log = share_story()
    assert share_groups(log.events) == {"q"}
    data = swimlanes(log.events, group="q")
    lanes = {lane.client_id: lane for lane in data.lanes}
    assert [(s.generation, s.assignment) for s in lanes["a"].segments] == [
        (None, None),
        (2, {"jobs": [0]}),
        (3, {"jobs": [0]}),
    ]
    assert [(s.generation, s.assignment) for s in lanes["b"].segments] == [(None, None), (3, {"jobs": [0]})]
    assert lanes["a"].ended == "left" and lanes["a"].segments[-1].end == pytest.approx(1.5)
    assert lanes["b"].segments[-1].end == pytest.approx(1.6)
    assert [state for _, _, state in data.states["q"]] == ["Empty", "Stable", "Empty"]
    marks = {(m.kind, m.label, m.client_id, m.count) for m in data.markers if m.kind.startswith(("share", "redel"))}
    assert marks == {
        ("share_lock_expired", "lock expired: 6 of a", "a", 1),
        ("share_archived", "archived jobs[0]@3 (delivery limit)", None, 1),
        ("redelivered", "", "b", 6),
    }


def test_a_consumer_group_is_not_taken_for_a_share_group():
    log = Log()
    log.add("member_joined", 0, group="k", member="a", client_id="ca", instance=None)
    log.add("target_assignment_computed", 0, group="k", epoch=1, assignment={"a": {"t": [0]}})
    log.add("member_reconciled", 0, group="k", member="a", epoch=1, state="stable", assignment={"t": [0]})
    assert share_groups(log.events) == set()


def test_a_share_group_is_drawn(tmp_path):
    pytest.importorskip("matplotlib")
    svg = draw_timeline(share_story().events, tmp_path / "q.svg", group="q").read_text()
    for text in ("lock expired: 6 of a", "archived jobs[0]@3", "records redelivered", "acquisition lock expired"):
        assert text in svg
