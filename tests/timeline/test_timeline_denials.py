"""Denials in the timeline (issue 37): an ``access_denied`` event reads as a sentence in the text
timeline (``User:alice denied READ on GROUP billing``) and belongs to its group's story; a
request's ``principal`` is not written again where the client column names it; the picture
marks the first of each denial with a labelled line and every one on its client's lane."""

from __future__ import annotations

import pytest

from fakebroker.timeline import draw_timeline, swimlanes, timeline_text

from .test_timeline import Log
from .test_timeline_principals import client_cell

MEMBER = "billing-1-0e9080ea-1111-4222-8333-444455556666"


def denied_story() -> list:
    log = Log()
    log.add("broker_started", 0, host="127.0.0.1", port=9093)
    log.at(10).add(
        "client_authenticated",
        0,
        peer="127.0.0.1:5000",
        client_id="billing-1",
        principal="User:alice",
        mechanism="PLAIN",
        session_lifetime_ms=0,
    )
    for at in (20, 30):  # the consumer retries its JoinGroup
        log.at(at).add(
            "access_denied",
            0,
            principal="User:alice",
            host="127.0.0.1",
            operation="READ",
            resource_type="GROUP",
            resource="billing",
            api="JoinGroup",
            client_id="billing-1",
            group="billing",
        )
        log.add(
            "request_error",
            0,
            api="JoinGroup",
            client_id="billing-1",
            error="GROUP_AUTHORIZATION_FAILED",
            principal="User:alice",
        )
    log.at(40).add(
        "access_denied",
        0,
        principal="User:bob",
        host="127.0.0.1",
        operation="WRITE",
        resource_type="TOPIC",
        resource="orders",
        api="Produce",
        client_id="rdkafka",
    )
    log.add(
        "request_error", 0, api="Produce", client_id="rdkafka", error="TOPIC_AUTHORIZATION_FAILED", principal="User:bob"
    )
    log.at(50).add("member_joined", 0, group="billing", member=MEMBER, client_id="billing-1", instance=None)
    log.at(60).add(
        "access_denied",
        0,
        principal="User:alice",
        host="127.0.0.1",
        operation="READ",
        resource_type="TOPIC",
        resource="orders",
        api="Fetch",
        client_id="billing-1",
    )
    return log.events


def test_a_denial_reads_as_a_sentence_with_its_request():
    text = timeline_text(denied_story())
    lines = [line for line in text.splitlines() if "access_denied" in line]
    assert len(lines) == 4  # the JoinGroup's, retried, twice
    assert lines[0].endswith("User:alice denied READ on GROUP billing api=JoinGroup host=127.0.0.1")
    assert lines[1].endswith(lines[0][-60:])
    assert " billing " in lines[0]  # the group column
    assert lines[2].endswith("User:bob denied WRITE on TOPIC orders api=Produce host=127.0.0.1")
    assert client_cell(text, "denied WRITE") == "rdkafka"


def test_a_request_errors_principal_is_written_only_where_the_client_column_does_not_say_it():
    text = timeline_text(denied_story())
    alice = [line for line in text.splitlines() if "GROUP_AUTHORIZATION_FAILED" in line]
    assert len(alice) == 2 and all("billing-1 as User:alice" in line for line in alice)
    assert all(line.endswith("api=JoinGroup error=GROUP_AUTHORIZATION_FAILED") for line in alice)
    (bob,) = [line for line in text.splitlines() if "TOPIC_AUTHORIZATION_FAILED" in line]
    assert bob.endswith("api=Produce error=TOPIC_AUTHORIZATION_FAILED principal=User:bob")  # no login seen
    (login,) = [line for line in text.splitlines() if "client_authenticated" in line]
    assert "principal=User:alice" in login  # a login says whom, whatever the client column says


def test_a_client_id_several_principals_used_keeps_each_requests_principal():
    events = denied_story()
    log = Log()
    log.events = list(events)
    log.now = events[-1].time_ms
    log.at(70).add(
        "client_authenticated",
        0,
        peer="127.0.0.1:5001",
        client_id="billing-1",
        principal="User:admin",
        mechanism="PLAIN",
        session_lifetime_ms=0,
    )
    log.at(80).add(
        "request_error", 0, api="DeleteGroups", client_id="billing-1", error="NONE_X", principal="User:admin"
    )
    text = timeline_text(log.events)
    (line,) = [line for line in text.splitlines() if "NONE_X" in line]
    assert "billing-1 as User:alice|User:admin" in line and line.endswith("principal=User:admin")


def test_a_groups_timeline_keeps_its_groups_denials_and_its_clients():
    text = timeline_text(denied_story(), group="billing")
    assert "denied READ on GROUP billing" in text
    assert "denied READ on TOPIC orders" in text  # billing-1's, a client of the group
    assert "User:bob" not in text


def test_the_lanes_mark_the_first_of_each_denial_with_a_label():
    marks = [m for m in swimlanes(denied_story()).markers if m.kind == "access_denied"]
    assert [(m.label, m.client_id, m.group) for m in marks] == [
        ("User:alice denied READ billing", "billing-1", "billing"),
        ("", "billing-1", "billing"),  # the retry: a mark on the lane, no second line
        ("User:bob denied WRITE orders", "rdkafka", None),
        ("User:alice denied READ orders", "billing-1", None),
    ]


def test_the_picture_draws_denials(tmp_path):
    pytest.importorskip("matplotlib")
    svg = draw_timeline(denied_story(), tmp_path / "denied.svg").read_text()
    assert "access denied (ACLs)" in svg and "User:alice denied READ billing" in svg
    assert "access denied to this client" in svg  # billing-1's lane has the Fetch's mark
