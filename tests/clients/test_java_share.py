"""The Java KafkaShareConsumer and Admin client (kafka-clients 4.4, KIP-932 share groups) against
fakebroker's share-group coordinator and share-partition data path.

One JVM per test runs ``fakebroker.ShareScenarios`` (tests/clients/java): share consumers on
threads of their own (implicit acknowledgement, or explicit with per-record ACCEPT / RELEASE /
REJECT rules, or holding what they acquired), the Feed's producer and the Admin client's
share-group calls. Every record a consumer receives is a ``record`` note with its delivery count.
The expectations are Kafka 4.4's as observed on a real broker (see SHARE-GROUPS.md); with
``FAKEBROKER_SHARE_AGAINST_KAFKA=1`` the same tests run against a real Kafka 4.4 KRaft broker
(tests/conformance/kafka_broker.py, one per module) instead of fakebroker.

Timing that matters: a brand-new group's first member gets an empty assignment (epoch 2) and
its partitions one heartbeat later (epoch 3: about 5 s on Kafka, ``share.heartbeat.interval.ms``
5000; fakebroker runs with ``fakebroker.share.late.assignment`` and a 1 s heartbeat, so the
sequence is Kafka's on a shorter clock); a member joining a group whose partitions are
initialized gets them in its first heartbeat's answer. ``share.auto.offset.reset`` is latest by
default, so each test sets its group to earliest first (Admin incrementalAlterConfigs on the
GROUP resource).
"""

from __future__ import annotations

import collections
import json
import os
import re
import time
from typing import Any

import pytest

from fakebroker.cluster import FakeCluster

from .jvm_driver import JvmDriver
from .test_java_client import java_client_jar  # noqa: F401 (fixture)

AGAINST_KAFKA = os.environ.get("FAKEBROKER_SHARE_AGAINST_KAFKA") == "1"

pytestmark = [
    pytest.mark.clients,
    pytest.mark.java,
]

BROKERS = 3
# fakebroker serves Kafka's sequence (fakebroker.share.late.assignment) on a shorter clock: a
# heartbeat of 1 s and a lock of 3 s instead of Kafka's 5 s and the group minimum of 15 s
HEARTBEAT_S = 5.0 if AGAINST_KAFKA else 1.0  # group.share.heartbeat.interval.ms
LOCK_MS = 15000 if AGAINST_KAFKA else 3000  # the group's share.record.lock.duration.ms


def quiet(seconds: float) -> None:
    """Wait for something that must not happen (a second delivery): fakebroker would do it
    within milliseconds, Kafka within its timers."""
    time.sleep(seconds if AGAINST_KAFKA else seconds / 4)


FAKEBROKER_CONFIG = {
    "fakebroker.share.late.assignment": True,
    "group.share.heartbeat.interval.ms": 1000,
    "group.share.min.heartbeat.interval.ms": 1000,
    "group.share.min.record.lock.duration.ms": 1000,
}


class Driver(JvmDriver):
    """A running ShareScenarios JVM: ``call(cmd, **args)`` sends a command and returns its reply;
    record, acked, commit, holding and closed lines are kept in ``notes``."""

    main_class = "fakebroker.ShareScenarios"
    lifetime = 150


class RealKafka:
    """What the driver needs of a target, for a real Kafka broker: its bootstrap servers (and no
    fakebroker events for failure messages)."""

    events: list = []

    def __init__(self, port: int):
        self.bootstrap_servers = f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
def real_kafka():
    from tests.conformance.kafka_broker import KafkaBroker

    broker = KafkaBroker()
    try:
        broker.start()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield RealKafka(broker.port)
    finally:
        broker.stop()


@pytest.fixture
def target(request):
    """fakebroker (3 brokers), or the module's real Kafka broker with FAKEBROKER_SHARE_AGAINST_KAFKA=1."""
    if AGAINST_KAFKA:
        yield request.getfixturevalue("real_kafka")
        return
    with FakeCluster(brokers=BROKERS, config=FAKEBROKER_CONFIG).run_in_thread() as cluster:
        yield cluster
        assert not [e.describe() for e in cluster.events if e.kind == "handler_error"]


@pytest.fixture
def driver(java_client_jar, target):  # noqa: F811
    with Driver(java_client_jar, target) as d:
        yield d


@pytest.fixture
def names(request) -> tuple[str, str]:
    """A topic and a group of this test's own (a real Kafka broker serves every test of the module)."""
    slug = re.sub(r"[^a-zA-Z0-9]+", "-", request.node.name.removeprefix("test_")).strip("-")
    return f"q-{slug}", f"g-{slug}"


# -- helpers ------------------------------------------------------------------------------------
def queue(driver: Driver, topic: str, partitions: int, group: str, n: int = 0, **configs: Any) -> None:
    """Topic ``topic``, group ``group`` reading from the earliest offset (plus ``configs``, group
    configs with '_' for '.'), and ``n`` records key-I/value-I on partition I % partitions."""
    assert strip(driver.call("createTopic", topic=topic, partitions=partitions)) == {"created": topic}
    settings = {"share.auto.offset.reset": "earliest", **{k.replace("_", "."): v for k, v in configs.items()}}
    got = driver.call("setGroupConfig", group=group, configs=";".join(f"{k}:{v}" for k, v in settings.items()))
    assert strip(got) == {"ok": True}, got
    if n:
        driver.call("produce", topic=topic, n=n, partitions=partitions)


def strip(got: dict) -> dict:
    """A reply without its "t", "type" and "id"."""
    return {k: v for k, v in got.items() if k not in ("t", "type", "id")}


def records(driver: Driver, name: str | None = None) -> list[dict]:
    return driver.of_type("record", **({"name": name} if name else {}))


def deliveries(recs: list[dict]) -> dict[str, list[int]]:
    """Delivery counts of each key, in the order received."""
    out: dict[str, list[int]] = collections.defaultdict(list)
    for r in recs:
        out[r["key"]].append(r["deliveryCount"])
    return dict(out)


def check_in_place(recs: list[dict], partitions: int) -> None:
    """Each record is key-I/value-I at partition I % partitions, offset I // partitions."""
    for r in recs:
        i = int(r["key"].split("-")[1])
        assert (r["partition"], r["offset"], r["value"]) == (i % partitions, i // partitions, f"value-{i}"), r


def fail(exception: str, message: str | None = None) -> dict:
    """A failed Admin call's reply or per-item result (the message only when given)."""
    return {"exception": exception} if message is None else {"exception": exception, "message": message}


def outcome(got: dict | None) -> dict | None:
    """A per-item result reduced to what ``fail`` compares: the exception (and message)."""
    return got if got is None else {"exception": got["exception"], "message": got["message"]}


def offsets_when(driver: Driver, group: str, done, timeout: float = 15) -> dict:
    """listShareGroupOffsets until ``done(offsets)`` holds (the persisted share state trails the
    acknowledgements by a write or two); the last answer."""
    deadline = time.monotonic() + timeout
    while True:
        got = driver.call("listShareOffsets", group=group)["offsets"]
        if done(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.3)


def lag_zero(offsets: dict) -> bool:
    return bool(offsets) and all(o is not None and o["lag"] == 0 for o in offsets.values())


def check_all_delivered(driver: Driver, group: str, partitions: list[str]) -> None:
    """DescribeShareGroupOffsets (once served) shows every partition with lag 0."""
    offsets = offsets_when(driver, group, lag_zero)
    assert sorted(offsets) == partitions and lag_zero(offsets), offsets


def describe_when(driver: Driver, group: str, done, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        got = driver.call("describeShare", group=group)
        if done(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


# -- tests --------------------------------------------------------------------------------------
def test_a_new_groups_first_member_gets_its_partitions_one_heartbeat_later(driver, names, target):
    """§2.3: the first heartbeat of a new group answers epoch 2 and no partitions; they come with
    the next heartbeat (epoch 3). A member joining once the partitions are initialized (and the last
    target assignment is over a second old) gets its share in its first answer."""
    topic, group = names
    queue(driver, topic, 4, group, n=8)
    started = driver.call("start", name="a", group=group, topics=topic)["t"]

    first = describe_when(driver, group, lambda d: "exception" not in d, timeout=10)
    if AGAINST_KAFKA or first["targetAssignmentEpoch"] == 2:
        # Group epoch 3 with target 2: the partitions are initialized, and the heartbeat that
        # found them came less than share.assignment.interval.ms (1 s, the heartbeat's own
        # interval) after the first assignment, so the next one computes theirs.
        assert first["state"] == "Stable" and first["groupEpoch"] in (2, 3), first
        assert first["targetAssignmentEpoch"] == 2, first
        assert [(m["clientId"], m["memberEpoch"], m["partitions"]) for m in first["members"]] == [
            ("fakebroker-share-a", 2, [])
        ]
    else:  # fakebroker's 1 s heartbeat came before the describe: the sequence is in its event log
        computed = [
            (e.details["epoch"], list(e.details["assignment"].values()))
            for e in target.events
            if e.kind == "target_assignment_computed" and e.details["group"] == group
        ]
        assert computed[:2] == [(2, [{}]), (3, [{topic: [0, 1, 2, 3]}])], computed
    assigned = driver.call("waitShareAssigned", group=group, members=1, partitions=4, timeoutMs=20000)
    assert assigned["groupEpoch"] == assigned["targetAssignmentEpoch"] == 3
    assert assigned["members"][0]["partitions"] == [f"{topic}:{p}" for p in range(4)]

    driver.call("waitRecords", count=8, timeoutMs=20000)
    first_record = min(r["t"] for r in records(driver))
    assert first_record - started >= HEARTBEAT_S * 1000 - 1500, "records before the second heartbeat"
    assert first_record - started <= HEARTBEAT_S * 1000 + 4000

    # Past share.assignment.interval.ms (1000) since the last target assignment: a member joining
    # sooner gets the old target's epoch (3) and no partitions until its next heartbeat.
    time.sleep(1.5)
    driver.call("start", name="b", group=group, topics=topic)
    seen = describe_when(driver, group, lambda d: len(d.get("members", [])) == 2, timeout=10)
    b = next(m for m in seen["members"] if m["clientId"] == "fakebroker-share-b")
    assert seen["groupEpoch"] == 4 and b["memberEpoch"] == 4 and len(b["partitions"]) == 2, json.dumps(seen)


def test_two_consumers_split_four_partitions_and_each_record_is_delivered_once(driver, names):
    topic, group = names
    queue(driver, topic, 4, group)
    for name in "ab":
        driver.call("start", name=name, group=group, topics=topic)
    described = driver.call("waitShareAssigned", group=group, members=2, partitions=4, timeoutMs=30000)
    assert described["state"] == "Stable"
    owner = {}
    for m in described["members"]:
        assert m["host"] == "/127.0.0.1" and m["rack"] is None and m["memberEpoch"] == described["groupEpoch"]
        assert len(m["partitions"]) == 2, described
        owner.update(
            {int(p.rsplit(":", 1)[1]): m["clientId"].removeprefix("fakebroker-share-") for p in m["partitions"]}
        )
    assert sorted(owner) == [0, 1, 2, 3] and set(owner.values()) == {"a", "b"}

    driver.call("produce", topic=topic, n=200, partitions=4)
    driver.call("waitRecords", count=200, distinct="true", timeoutMs=20000)
    quiet(2)  # time for a second delivery, were there one
    got = records(driver)
    check_in_place(got, 4)
    assert len(got) == 200 and len({(r["partition"], r["offset"]) for r in got}) == 200, "each record once"
    assert {r["deliveryCount"] for r in got} == {1} and {r["ack"] for r in got} == {"implicit"}
    assert all(r["name"] == owner[r["partition"]] for r in got), "each record went to its partition's member"
    assert collections.Counter(r["name"] for r in got) == {"a": 100, "b": 100}

    for name in "ab":
        driver.call("stop", name=name)
    assert not driver.of_type("consumer_failed") and not [n for n in driver.of_type("acked") if n["error"]]
    check_all_delivered(driver, group, [f"{topic}:{p}" for p in range(4)])
    after = driver.call("describeShare", group=group)
    assert (after["state"], after["members"], after["groupEpoch"]) == ("Empty", [], described["groupEpoch"] + 2)


def test_a_released_record_comes_back_with_delivery_count_2_and_a_rejected_one_never(driver, names):
    topic, group = names
    queue(driver, topic, 1, group, n=10)
    driver.call("start", name="a", group=group, topics=topic, ack="explicit", release="key-2,key-5", reject="key-7")
    driver.call("waitRecords", count=12, timeoutMs=20000)
    quiet(3)  # no further delivery
    got = records(driver)
    check_in_place(got, 1)
    want = {f"key-{i}": [1] for i in range(10)} | {"key-2": [1, 2], "key-5": [1, 2]}
    assert deliveries(got) == want
    acks = {(r["key"], r["deliveryCount"]): r["ack"] for r in got}
    assert acks[("key-2", 1)] == acks[("key-5", 1)] == "RELEASE" and acks[("key-7", 1)] == "REJECT"
    assert acks[("key-2", 2)] == acks[("key-5", 2)] == "ACCEPT"
    acked = driver.of_type("acked")
    assert not [a for a in acked if a["error"]], acked
    assert sorted(o for a in acked for o in a["offsets"]) == sorted([*range(10), 2, 5])
    assert {c["results"][f"{topic}:0"] for c in driver.of_type("commit")} == {None}
    driver.call("stop", name="a")
    check_all_delivered(driver, group, [f"{topic}:0"])


@pytest.mark.parametrize("mode", ["explicit", "implicit"])
def test_a_consumer_closing_with_records_acquired_hands_them_to_the_other_member(driver, names, mode):
    """a acquires all 10 records and holds them (never acknowledges, never polls again); b, in the
    group too (both hold the one partition), gets nothing until a closes, then all 10, each with
    delivery count 2. In implicit mode close does not accept the last poll's records either."""
    topic, group = names
    queue(driver, topic, 1, group, n=10)
    driver.call("start", name="a", group=group, topics=topic, ack=mode, holdAfter=1)
    assert driver.call("waitHolding", name="a", timeoutMs=20000)["held"] == 10
    driver.call("start", name="b", group=group, topics=topic, ack="explicit")
    both = driver.call("waitShareAssigned", group=group, members=2, partitions=1, timeoutMs=20000)
    assert [m["partitions"] for m in both["members"]] == [[f"{topic}:0"], [f"{topic}:0"]], "a partition, two members"
    quiet(2)
    assert records(driver, "b") == [], "acquired records are not delivered to another member"
    # acquisitions are not persisted: the partition has no start offset yet
    assert driver.call("listShareOffsets", group=group)["offsets"] == {f"{topic}:0": None}

    stopped = driver.call("stop", name="a")
    assert driver.of_type("closed", name="a")[0]["error"] is None
    driver.call("waitRecords", name="b", count=10, timeoutMs=10000)
    quiet(1)
    held, handed = records(driver, "a"), records(driver, "b")
    assert [(r["offset"], r["deliveryCount"], r["ack"]) for r in held] == [(o, 1, "hold") for o in range(10)]
    assert [(r["offset"], r["deliveryCount"], r["ack"]) for r in handed] == [(o, 2, "ACCEPT") for o in range(10)]
    assert min(r["t"] for r in handed) >= stopped["t"] - stopped["stopMs"], "b got them once a closed"
    assert not [n for n in driver.of_type("acked") if n["error"]]
    driver.call("stop", name="b")


def test_a_record_whose_lock_expires_goes_to_the_other_member_with_delivery_count_2(driver, names):
    """share.record.lock.duration.ms=15000 (the group minimum): a holds its records; 15 s after
    a acquired them they are available again and b gets them, delivery count 2."""
    topic, group = names
    queue(driver, topic, 1, group, n=5, share_record_lock_duration_ms=LOCK_MS)
    driver.call("start", name="a", group=group, topics=topic, ack="explicit", holdAfter=1)
    driver.call("waitHolding", name="a", timeoutMs=20000)
    acquired = min(r["t"] for r in records(driver, "a"))
    driver.call("start", name="b", group=group, topics=topic, ack="explicit")
    driver.call("waitRecords", name="b", count=5, timeoutMs=30000)
    handed = records(driver, "b")
    assert [(r["offset"], r["deliveryCount"]) for r in handed] == [(o, 2) for o in range(5)]
    assert LOCK_MS - 1000 <= min(r["t"] for r in handed) - acquired <= LOCK_MS + 5000
    driver.call("stop", name="a")
    driver.call("stop", name="b")
    assert [(r["offset"], r["deliveryCount"]) for r in records(driver, "b")] == [(o, 2) for o in range(5)]


def test_a_poison_record_is_archived_at_the_delivery_limit_while_the_others_flow(driver, names):
    """share.delivery.count.limit=3: key-3, released every time, is delivered three times (counts
    1, 2, 3); the third release archives it. Records produced afterwards still arrive, once."""
    topic, group = names
    queue(driver, topic, 1, group, n=6, share_delivery_count_limit=3)
    driver.call("start", name="a", group=group, topics=topic, ack="explicit", releaseAlways="key-3")
    driver.call("waitRecords", count=8, timeoutMs=20000)
    quiet(2)
    driver.call("produce", topic=topic, first=6, n=4, partitions=1)
    driver.call("waitRecords", count=12, timeoutMs=20000)
    quiet(3)
    got = records(driver)
    check_in_place(got, 1)
    assert deliveries(got) == {f"key-{i}": [1] for i in range(10)} | {"key-3": [1, 2, 3]}
    assert [r["ack"] for r in got if r["key"] == "key-3"] == ["RELEASE"] * 3
    assert not [a for a in driver.of_type("acked") if a["error"]]
    driver.call("stop", name="a")
    check_all_delivered(driver, group, [f"{topic}:0"])


def test_admin_describes_lists_resets_and_deletes_a_share_group(driver, names):
    topic, group = names
    queue(driver, topic, 4, group, n=8)
    all_partitions = [f"{topic}:{p}" for p in range(4)]
    assert strip(driver.call("describeShare", group=group)) == fail(
        "GroupIdNotFoundException", f"Group {group} not found."
    )

    driver.call("start", name="a", group=group, topics=topic)
    driver.call("waitRecords", count=8, timeoutMs=20000)
    d = driver.call("describeShare", group=group)
    assert (d["group"], d["state"], d["groupEpoch"], d["targetAssignmentEpoch"]) == (group, "Stable", 3, 3)
    [m] = d["members"]
    assert (m["clientId"], m["host"], m["rack"], m["memberEpoch"], m["partitions"]) == (
        "fakebroker-share-a",
        "/127.0.0.1",
        None,
        3,
        all_partitions,
    )
    assert len(m["memberId"]) == 22
    listing = {"group": group, "type": "Share", "state": "Stable", "protocol": "share"}
    assert listing in driver.call("listGroups")["groups"]
    assert listing in driver.call("listGroups", all="true")["groups"]
    offsets = offsets_when(driver, group, lambda o: lag_zero(o) and len(o) == 4)
    assert sorted(offsets) == all_partitions and lag_zero(offsets), offsets
    assert all(0 <= o["startOffset"] <= 2 and o["leaderEpoch"] == 0 for o in offsets.values()), offsets
    some = driver.call("listShareOffsets", group=group, topic=topic, partitions="0,1")["offsets"]
    assert sorted(some) == all_partitions[:2]

    # a group with a member refuses every change
    altered = driver.call("alterShareOffsets", group=group, topic=topic, offsets="earliest")
    assert {k: outcome(v) for k, v in altered["results"].items()} == {
        p: fail("GroupNotEmptyException", "The group is not empty.") for p in all_partitions
    }
    assert altered["exception"] == "GroupNotEmptyException"
    deleted = driver.call("deleteShareOffsets", group=group, topics=topic)
    assert strip(deleted) == {"results": {topic: fail("GroupNotEmptyException", "The group is not empty.")}} | fail(
        "GroupNotEmptyException", "The group is not empty."
    )
    assert driver.call("deleteShareGroups", groups=group)["results"] == {
        group: fail("GroupNotEmptyException", "The group is not empty.")
    }

    driver.call("stop", name="a")
    d = driver.call("describeShare", group=group)
    assert (d["state"], d["members"], d["groupEpoch"]) == ("Empty", [], 4)
    assert {**listing, "state": "Empty"} in driver.call("listGroups")["groups"]

    # reset to the earliest offsets: everything is to be delivered again
    altered = driver.call("alterShareOffsets", group=group, topic=topic, offsets="earliest")
    assert strip(altered) == {"requested": dict.fromkeys(all_partitions, 0), "results": dict.fromkeys(all_partitions)}
    assert driver.call("listShareOffsets", group=group)["offsets"] == {
        p: {"startOffset": 0, "leaderEpoch": 0, "lag": 2} for p in all_partitions
    }
    altered = driver.call("alterShareOffsets", group=group, topic=topic, offsets="0:1,9:0")
    assert altered["results"][f"{topic}:0"] is None
    assert outcome(altered["results"][f"{topic}:9"]) == fail(
        "UnknownTopicOrPartitionException", "This server does not host this topic-partition."
    )
    assert altered["exception"] == "UnknownTopicOrPartitionException"
    altered = driver.call("alterShareOffsets", group=group, topic="no-such-topic", offsets="0:0")
    assert outcome(altered["results"]["no-such-topic:0"])["exception"] == "UnknownTopicOrPartitionException"
    assert driver.call("listShareOffsets", group=group)["offsets"][f"{topic}:0"] == {
        "startOffset": 1,
        "leaderEpoch": 0,
        "lag": 1,
    }

    driver.call("start", name="b", group=group, topics=topic)
    driver.call("waitRecords", name="b", count=7, timeoutMs=15000)
    time.sleep(1.5)
    again = records(driver, "b")
    assert sorted((r["partition"], r["offset"], r["deliveryCount"]) for r in again) == [
        (p, o, 1) for p in range(4) for o in range(2) if (p, o) != (0, 0)
    ], "a reset share partition starts afresh (delivery count 1) from its new start offset"
    driver.call("stop", name="b")
    assert lag_zero(offsets_when(driver, group, lag_zero))

    # delete the group's offsets, then the group
    deleted = driver.call("deleteShareOffsets", group=group, topics="no-such-topic")
    assert outcome(deleted["results"]["no-such-topic"]) == fail(
        "UnknownTopicOrPartitionException", "This server does not host this topic-partition."
    )
    assert strip(driver.call("deleteShareOffsets", group=group, topics=topic)) == {"results": {topic: None}}
    assert driver.call("listShareOffsets", group=group)["offsets"] == {}
    deleted = driver.call("deleteShareOffsets", group=group, topics=topic)
    assert outcome(deleted["results"][topic]) == fail(
        "UnknownTopicOrPartitionException", "There is no offset information to delete."
    )
    assert driver.call("deleteShareGroups", groups=group)["results"] == {group: None}
    assert group not in [g["group"] for g in driver.call("listGroups", all="true")["groups"]]
    assert strip(driver.call("describeShare", group=group)) == fail(
        "GroupIdNotFoundException", f"Group {group} not found."
    )
    assert driver.call("deleteShareGroups", groups=group)["results"] == {
        group: fail("GroupIdNotFoundException", "The group id does not exist.")
    }
    deleted = driver.call("deleteShareOffsets", group=group, topics=topic)
    assert outcome(deleted["results"][topic]) == fail("GroupIdNotFoundException", f"Group {group} not found.")
    assert driver.call("listShareOffsets", group=group)["offsets"] == {}


def test_altering_offsets_of_a_group_that_does_not_exist_makes_an_empty_share_group(driver, names):
    topic, group = names
    queue(driver, topic, 2, group, n=4)
    assert strip(driver.call("alterShareOffsets", group=group, topic=topic, offsets="1:1")) == {
        "requested": {f"{topic}:1": 1},
        "results": {f"{topic}:1": None},
    }
    assert driver.call("listShareOffsets", group=group)["offsets"] == {
        f"{topic}:1": {"startOffset": 1, "leaderEpoch": 0, "lag": 1}
    }
    d = driver.call("describeShare", group=group)
    assert (d["state"], d["members"], d["groupEpoch"], d["targetAssignmentEpoch"]) == ("Empty", [], 1, 1)
    assert {"group": group, "type": "Share", "state": "Empty", "protocol": "share"} in driver.call("listGroups")[
        "groups"
    ]
    # a consumer of that group starts from there: partition 0 is new (earliest), partition 1 from offset 1
    driver.call("start", name="a", group=group, topics=topic)
    driver.call("waitRecords", count=3, timeoutMs=20000)
    time.sleep(1.5)
    assert sorted((r["partition"], r["offset"], r["deliveryCount"]) for r in records(driver)) == [
        (0, 0, 1),
        (0, 1, 1),
        (1, 1, 1),
    ]
    driver.call("stop", name="a")
