"""Principals in the timeline (issue 37): once a client id authenticated, the text timeline's
client column and its member's lane name whom as (``billing-1 as User:alice``); a client id
several principals used names them all; before its first login, or without SASL, the bare id."""

from __future__ import annotations

from fakebroker.timeline import swimlanes, timeline_text

from .test_timeline import Log

MEMBER = "billing-1-0e9080ea-1111-4222-8333-444455556666"


def secured_story() -> list:
    log = Log()
    log.add("broker_started", 0, host="127.0.0.1", port=9093)
    log.at(5).add("request_error", 0, api="ApiVersions", client_id="billing-1", error="UNSUPPORTED_VERSION")
    log.at(10).add(
        "client_authenticated",
        0,
        peer="127.0.0.1:5000",
        client_id="billing-1",
        principal="User:alice",
        mechanism="SCRAM-SHA-512",
        session_lifetime_ms=0,
    )
    log.at(20).add("request_error", 0, api="JoinGroup", client_id="billing-1", error="GROUP_AUTHORIZATION_FAILED")
    log.at(30).add("member_joined", 0, group="billing", member=MEMBER, client_id="billing-1", instance=None)
    for at, principal in ((40, "User:admin"), (50, "User:alice")):
        log.at(at).add(
            "client_authenticated",
            0,
            peer=f"127.0.0.1:{5000 + at}",
            client_id="rdkafka",
            principal=principal,
            mechanism="PLAIN",
            session_lifetime_ms=0,
        )
    log.at(60).add("request_error", 0, api="CreateAcls", client_id="rdkafka", error="CLUSTER_AUTHORIZATION_FAILED")
    log.at(70).add("client_connected", 0, client_id="plain-client", peer="127.0.0.1:6000")
    log.at(80).add("request_error", 0, api="Produce", client_id="plain-client", error="NOT_LEADER_OR_FOLLOWER")
    return log.events


def client_cell(text: str, needle: str) -> str:
    lines = text.splitlines()
    start = lines[0].index("client")
    end = lines[0].index("details")
    (line,) = [line for line in lines if needle in line]
    return line[start:end].strip()


def test_the_client_column_names_the_principal_from_the_first_login_on():
    text = timeline_text(secured_story())
    assert client_cell(text, "UNSUPPORTED_VERSION") == "billing-1"  # before its login
    assert client_cell(text, "mechanism=SCRAM-SHA-512") == "billing-1 as User:alice"
    assert client_cell(text, "GROUP_AUTHORIZATION_FAILED") == "billing-1 as User:alice"
    assert client_cell(text, "CLUSTER_AUTHORIZATION_FAILED") == "rdkafka as User:admin|User:alice"
    assert client_cell(text, "NOT_LEADER_OR_FOLLOWER") == "plain-client"  # never authenticated


def test_a_groups_timeline_names_principals_whose_login_it_does_not_show():
    events = secured_story()
    text = timeline_text(events, kinds={"request_error", "member_joined"})
    assert "client_authenticated" not in text
    assert client_cell(text, "GROUP_AUTHORIZATION_FAILED") == "billing-1 as User:alice"
    assert client_cell(text, "member_joined") == "billing-1 as User:alice"


def test_a_members_lane_names_its_principal():
    (lane,) = swimlanes(secured_story(), group="billing").lanes
    assert lane.principal == "User:alice"
    assert lane.label == "billing-1 (0e9080ea) as User:alice"
