"""Group configs (resource type GROUP = 32) through the config handlers: IncrementalAlterConfigs
(44), AlterConfigs (33) and DescribeConfigs (32), with the codes and texts a Kafka 4.4.0 broker
answers (each case below was sent to one as well; tests/conformance/probes_configs.py compares
the raw answers), and the share.version feature."""

from __future__ import annotations

import pytest

from fakebroker.core.configs import SOURCE_DEFAULT, SOURCE_STATIC_BROKER
from fakebroker.core.group_configs import SOURCE_GROUP
from fakebroker.protocol.error_codes import ErrorCode as E

from .support import call, cluster, events_after

DESCRIBE, ALTER, INCREMENTAL, API_VERSIONS, UPDATE_FEATURES = 32, 33, 44, 18, 57
GROUP = 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
RESET_TEXT = (
    "Invalid value {v} for configuration share.auto.offset.reset: Invalid value `{v}` for configuration "
    "share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format "
    "'by_duration:<PnDTnHnMn.nS>'."
)
# a fresh group's configs as Kafka 4.4.0 lists them (a Java HashMap's order), every one DEFAULT_CONFIG
FRESH = [
    ("consumer.session.timeout.ms", "45000", "group.consumer.session.timeout.ms"),
    ("streams.assignor.name", "sticky", "group.streams.assignors"),
    ("consumer.assignment.interval.ms", "1000", "group.consumer.assignment.interval.ms"),
    ("errors.deadletterqueue.copy.record.enable", "false", "errors.deadletterqueue.copy.record.enable"),
    ("share.auto.offset.reset", "latest", "share.auto.offset.reset"),
    ("streams.rack.aware.assignment.tags", "", "group.streams.rack.aware.assignment.tags"),
    ("share.renew.acknowledge.enable", "true", "share.renew.acknowledge.enable"),
    ("streams.initial.rebalance.delay.ms", "3000", "group.streams.initial.rebalance.delay.ms"),
    ("share.session.timeout.ms", "45000", "group.share.session.timeout.ms"),
    ("streams.assignment.interval.ms", "1000", "group.streams.assignment.interval.ms"),
    ("share.heartbeat.interval.ms", "5000", "group.share.heartbeat.interval.ms"),
    ("streams.heartbeat.interval.ms", "5000", "group.streams.heartbeat.interval.ms"),
    ("share.delivery.count.limit", "5", "group.share.delivery.count.limit"),
    ("errors.deadletterqueue.topic.name", "", "errors.deadletterqueue.topic.name"),
    ("consumer.heartbeat.interval.ms", "5000", "group.consumer.heartbeat.interval.ms"),
    ("share.record.lock.duration.ms", "30000", "group.share.record.lock.duration.ms"),
    ("share.assignment.interval.ms", "1000", "group.share.assignment.interval.ms"),
    ("share.isolation.level", "read_uncommitted", "share.isolation.level"),
    ("streams.session.timeout.ms", "45000", "group.streams.session.timeout.ms"),
    ("share.partition.max.record.locks", "2000", "group.share.partition.max.record.locks"),
    ("streams.num.standby.replicas", "0", "group.streams.num.standby.replicas"),
]
TYPES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "LONG": 5, "LIST": 7}


def incremental(state, name, *ops, validate_only=False):
    response, _ = call(
        state,
        INCREMENTAL,
        1,
        validate_only=validate_only,
        resources=[
            {
                "resource_type": GROUP,
                "resource_name": name,
                "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops],
            }
        ],
    )
    [answer] = response.responses
    assert (answer.resource_type, answer.resource_name) == (GROUP, name)
    return answer.error_code, answer.error_message


def replace(state, name, configs, validate_only=False):
    response, _ = call(
        state,
        ALTER,
        2,
        validate_only=validate_only,
        resources=[
            {"resource_type": GROUP, "resource_name": name, "configs": [{"name": k, "value": v} for k, v in configs]}
        ],
    )
    [answer] = response.responses
    return answer.error_code, answer.error_message


def describe(state, name, keys=None, *, version=4, synonyms=True, docs=False):
    response, _ = call(
        state,
        DESCRIBE,
        version,
        resources=[{"resource_type": GROUP, "resource_name": name, "configuration_keys": keys}],
        include_synonyms=synonyms,
        include_documentation=docs,
    )
    [result] = response.results
    return result


def entry(state, group, key):
    [c] = describe(state, group, [key]).configs
    return c.value, c.config_source, [(s.name, s.value, s.source) for s in c.synonyms]


# -- SHARE-GROUPS.md §8 vector 9, and the other refusals -------------------------------------------

REFUSED = [
    (
        "share.record.lock.duration.ms",
        "10000",
        "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.",
    ),
    (
        "share.record.lock.duration.ms",
        "500",
        "Invalid value 500 for configuration share.record.lock.duration.ms: Value must be at least 1000",
    ),
    (
        "share.delivery.count.limit",
        "1",
        "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2",
    ),
    ("share.delivery.count.limit", "11", "share.delivery.count.limit must be in the range 2 to 10 inclusive."),
    (
        "share.partition.max.record.locks",
        "50",
        "Invalid value 50 for configuration share.partition.max.record.locks: Value must be at least 100",
    ),
    (
        "share.partition.max.record.locks",
        "5000",
        "share.partition.max.record.locks must be in the range 100 to 4000 inclusive.",
    ),
    (
        "share.heartbeat.interval.ms",
        "4000",
        "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.",
    ),
    ("share.session.timeout.ms", "44000", "share.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
    ("share.auto.offset.reset", "EARLIEST", RESET_TEXT.format(v="EARLIEST")),
    ("share.auto.offset.reset", "none", RESET_TEXT.format(v="none")),
    ("share.auto.offset.reset", "by_duration:-PT1H", RESET_TEXT.format(v="by_duration:-PT1H")),
    ("share.auto.offset.reset", "by_duration:PT", RESET_TEXT.format(v="by_duration:PT")),
    (
        "share.isolation.level",
        "x",
        "Invalid value x for configuration share.isolation.level: "
        "String must be one of: read_committed, read_uncommitted",
    ),
    ("foo", "1", "Unknown group config name: foo"),
    (
        "share.renew.acknowledge.enable",
        "maybe",
        "Invalid value maybe for configuration share.renew.acknowledge.enable: "
        "Expected value to be either true or false",
    ),
    (
        "consumer.session.timeout.ms",
        "2147483648",
        "Invalid value 2147483648 for configuration consumer.session.timeout.ms: Not a number of type INT",
    ),
    (
        "consumer.heartbeat.interval.ms",
        "16000",
        "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.",
    ),
    (
        "streams.acceptable.recovery.lag",
        "-1",
        "Invalid value -1 for configuration streams.acceptable.recovery.lag: Value must be at least 0",
    ),
    ("streams.num.standby.replicas", "3", "streams.num.standby.replicas must be less than or equal to 2"),
    (
        "streams.task.offset.interval.ms",
        "100",
        "streams.task.offset.interval.ms must be greater than or equal to 15000",
    ),
    ("streams.num.warmup.replicas", "30", "streams.num.warmup.replicas must be less than or equal to 20"),
    (
        "streams.assignor.name",
        "nope",
        "streams.assignor.name 'nope' is not a registered task assignor. Registered assignors are: [sticky].",
    ),
    (
        "streams.rack.aware.assignment.tags",
        "a, b ,a",
        "streams.rack.aware.assignment.tags must not contain duplicate tag keys.",
    ),
    (
        "streams.rack.aware.assignment.tags",
        "a,,b",
        "Configuration 'streams.rack.aware.assignment.tags' values must not be empty.",
    ),
    (
        "errors.deadletterqueue.topic.name",
        "__dlq",
        "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'",
    ),
]


@pytest.mark.parametrize(("key", "value", "message"), REFUSED, ids=[f"{k}={v}" for k, v, _ in REFUSED])
def test_a_bad_group_config_is_invalid_config_with_kafkas_text(key, value, message):
    state = cluster(1)
    assert incremental(state, "g", (key, SET, value)) == (E.INVALID_CONFIG, message)
    assert incremental(state, "g", (key, SET, value), validate_only=True) == (E.INVALID_CONFIG, message)
    assert state.group_configs.stored("g") == {}


ACCEPTED = [
    ("share.auto.offset.reset", "by_duration:PT1H"),
    ("share.auto.offset.reset", "by_duration:pt1h"),
    ("share.auto.offset.reset", " earliest "),
    ("share.record.lock.duration.ms", "15000"),
    ("share.delivery.count.limit", " 3 "),
    ("consumer.assignor.offload.enable", "false"),  # internal, accepted when set
    ("streams.acceptable.recovery.lag", "2147483648"),  # a LONG
    ("streams.assignor.name", "sticky"),
    ("errors.deadletterqueue.topic.name", "dlq.orders"),
]


@pytest.mark.parametrize(("key", "value"), ACCEPTED, ids=[f"{k}={v}" for k, v in ACCEPTED])
def test_a_good_group_config_is_stored_as_given(key, value):
    state = cluster(1)
    assert incremental(state, "g", (key, SET, value), validate_only=True) == (E.NONE, None)
    assert state.group_configs.stored("g") == {}
    mark = len(state.events)
    assert incremental(state, "no-such-group", (key, SET, value)) == (E.NONE, None)
    assert state.group_configs.stored("no-such-group") == {key: value}
    assert [(e.kind, e.group, e.configs) for e in events_after(state, mark)] == [
        ("group_configs_altered", "no-such-group", {key: value})
    ]


def test_refusals_before_the_values_are_checked_in_kafkas_order():
    state = cluster(1)
    default = (E.INVALID_REQUEST, "Default group resources are not allowed.")
    assert incremental(state, "", ("share.delivery.count.limit", SET, "3")) == default
    assert incremental(state, "", ("foo", SET, "1")) == default  # the name before the keys
    # APPEND and SUBTRACT: no group config is a list to Kafka's controller, checked before the name
    assert incremental(state, "", ("share.delivery.count.limit", APPEND, "3")) == (
        E.INVALID_CONFIG,
        "Can't APPEND to key share.delivery.count.limit because its type is not LIST.",
    )
    assert incremental(state, "g", ("streams.rack.aware.assignment.tags", SUBTRACT, "a")) == (
        E.INVALID_CONFIG,
        "Can't SUBTRACT to key streams.rack.aware.assignment.tags because its type is not LIST.",
    )
    assert (
        incremental(state, "g", ("foo", SET, "1"), ("share.delivery.count.limit", APPEND, "3"))[0] == E.INVALID_CONFIG
    )
    # the broker's own checks come first
    assert incremental(state, "", ("a", SET, "1"), ("a", SET, "2")) == (
        E.INVALID_REQUEST,
        "Error due to duplicate config keys",
    )
    assert incremental(state, "g", ("share.delivery.count.limit", SET, None), ("share.isolation.level", SET, None)) == (
        E.INVALID_REQUEST,
        "Null value not supported for : share.delivery.count.limit, share.isolation.level",
    )
    assert incremental(state, "g", ("share.delivery.count.limit", 9, "3")) == (E.UNKNOWN_SERVER_ERROR, None)
    assert incremental(state, "g", ("a", 9, "1"), ("a", SET, "2"))[0] == E.INVALID_REQUEST  # the broker's checks first
    assert incremental(state, "g", ("a", 9, None))[0] == E.INVALID_REQUEST
    # of two unknown names, the one a Java HashMap holds first; names before values
    assert incremental(state, "g", ("foo", SET, "1"), ("bar", SET, "1")) == (
        E.INVALID_CONFIG,
        "Unknown group config name: bar",
    )
    assert incremental(state, "g", ("share.isolation.level", SET, "x"), ("foo", SET, "1")) == (
        E.INVALID_CONFIG,
        "Unknown group config name: foo",
    )
    # values in GroupConfig's order of definition
    assert incremental(state, "g", ("share.isolation.level", SET, "y"), ("share.delivery.count.limit", SET, "x")) == (
        E.INVALID_CONFIG,
        "Invalid value x for configuration share.delivery.count.limit: Not a number of type INT",
    )
    assert state.group_configs.overrides == {}


def test_the_configs_a_group_would_hold_are_checked_together():
    # bounds that let a heartbeat interval reach the session timeout (Kafka's defaults do not)
    state = cluster(1, {"group.share.max.heartbeat.interval.ms": 50_000})
    assert incremental(state, "g", ("share.heartbeat.interval.ms", SET, "46000")) == (
        E.INVALID_CONFIG,
        "share.session.timeout.ms must be greater than share.heartbeat.interval.ms",
    )
    assert incremental(state, "g", ("share.session.timeout.ms", SET, "50000")) == (E.NONE, None)
    assert incremental(state, "g", ("share.heartbeat.interval.ms", SET, "46000")) == (E.NONE, None)
    # a stored value is checked again: without the session timeout the interval is too long
    assert incremental(state, "g", ("share.session.timeout.ms", DELETE, None)) == (
        E.INVALID_CONFIG,
        "share.session.timeout.ms must be greater than share.heartbeat.interval.ms",
    )
    assert incremental(state, "g", ("no.such.key", DELETE, None)) == (E.NONE, None)  # nothing to delete
    assert incremental(
        state, "g", ("share.session.timeout.ms", DELETE, None), ("share.heartbeat.interval.ms", DELETE, None)
    ) == (
        E.NONE,
        None,
    )
    assert state.group_configs.stored("g") == {}
    assert "g" not in state.group_configs.overrides


def test_alter_configs_replaces_every_setting_of_a_group():
    state = cluster(1)
    assert replace(state, "g", [("share.delivery.count.limit", "3"), ("share.isolation.level", "read_committed")]) == (
        E.NONE,
        None,
    )
    assert replace(state, "g", [("share.record.lock.duration.ms", "20000")], validate_only=True) == (E.NONE, None)
    assert state.group_configs.stored("g") == {
        "share.delivery.count.limit": "3",
        "share.isolation.level": "read_committed",
    }
    assert replace(state, "g", [("share.record.lock.duration.ms", "20000")]) == (E.NONE, None)
    assert state.group_configs.stored("g") == {"share.record.lock.duration.ms": "20000"}
    assert replace(state, "", [("share.delivery.count.limit", "3")]) == (
        E.INVALID_REQUEST,
        "Default group resources are not allowed.",
    )
    assert replace(state, "g", [("foo", "3")]) == (E.INVALID_CONFIG, "Unknown group config name: foo")
    assert replace(state, "g", [("share.delivery.count.limit", None)]) == (
        E.INVALID_REQUEST,
        "Null value not supported for : share.delivery.count.limit",
    )
    assert replace(state, "g", [("share.delivery.count.limit", "3"), ("share.delivery.count.limit", "4")]) == (
        E.INVALID_REQUEST,
        "Error due to duplicate config keys",
    )
    assert state.group_configs.stored("g") == {"share.record.lock.duration.ms": "20000"}
    assert replace(state, "g", []) == (E.NONE, None)
    assert state.group_configs.overrides == {}


# -- DescribeConfigs ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_describe_a_fresh_group_id_lists_the_21_configs_as_kafka(version):
    state = cluster(1)
    result = describe(state, "never-seen", version=version)
    assert (result.error_code, result.error_message) == (E.NONE, "")
    # but one: fakebroker starts its brokers with group.streams.initial.rebalance.delay.ms=0, as
    # a Kafka broker given that setting at start shows it
    delay = "streams.initial.rebalance.delay.ms"
    rows = {c.name: c for c in result.configs}
    assert (rows[delay].value, rows[delay].config_source) == ("0", SOURCE_STATIC_BROKER)
    assert [(s.name, s.value, s.source) for s in rows[delay].synonyms] == [
        ("group." + delay, "0", SOURCE_STATIC_BROKER),
        ("group." + delay, "3000", SOURCE_DEFAULT),
    ]
    configs = [c for c in result.configs if c.name != delay]
    fresh = [row for row in FRESH if row[0] != delay]
    assert [c.name for c in result.configs] == [name for name, _, _ in FRESH]
    assert [(c.name, c.value, c.config_source, c.read_only, c.is_sensitive) for c in configs] == [
        (name, value, SOURCE_DEFAULT, False, False) for name, value, _ in fresh
    ]
    assert [[(s.name, s.value, s.source) for s in c.synonyms] for c in configs] == [
        [(synonym, value, SOURCE_DEFAULT)] for _, value, synonym in fresh
    ]
    if version >= 3:
        types = {c.name: c.config_type for c in result.configs}
        assert types["share.record.lock.duration.ms"] == TYPES["INT"]
        assert types["share.auto.offset.reset"] == TYPES["STRING"]
        assert types["streams.rack.aware.assignment.tags"] == TYPES["LIST"]
        assert types["share.renew.acknowledge.enable"] == TYPES["BOOLEAN"]


def test_describe_shows_the_groups_own_values_then_the_broker_chain():
    state = cluster(1, {"group.share.delivery.count.limit": 4})
    assert entry(state, "g", "share.delivery.count.limit") == (
        "4",
        SOURCE_STATIC_BROKER,
        [
            ("group.share.delivery.count.limit", "4", SOURCE_STATIC_BROKER),
            ("group.share.delivery.count.limit", "5", SOURCE_DEFAULT),
        ],
    )
    ops = [
        ("share.delivery.count.limit", " 3 "),
        ("share.renew.acknowledge.enable", "TRUE"),
        ("streams.rack.aware.assignment.tags", " a , b "),
        ("streams.assignor.offload.enable", "FALSE"),
        ("consumer.assignor.offload.enable", "true"),
        ("share.assignor.offload.enable", "false"),
        ("streams.acceptable.recovery.lag", "5"),
    ]
    assert incremental(state, "g", *[(k, SET, v) for k, v in ops]) == (E.NONE, None)
    assert entry(state, "g", "share.delivery.count.limit") == (
        "3",  # as Kafka holds it once parsed
        SOURCE_GROUP,
        [
            ("share.delivery.count.limit", "3", SOURCE_GROUP),
            ("group.share.delivery.count.limit", "4", SOURCE_STATIC_BROKER),
            ("group.share.delivery.count.limit", "5", SOURCE_DEFAULT),
        ],
    )
    assert entry(state, "g", "share.renew.acknowledge.enable") == (
        "true",
        SOURCE_GROUP,
        [
            ("share.renew.acknowledge.enable", "true", SOURCE_GROUP),
            ("share.renew.acknowledge.enable", "true", SOURCE_DEFAULT),
        ],
    )
    assert entry(state, "g", "streams.rack.aware.assignment.tags")[0] == "a,b"
    result = describe(state, "g")
    assert len(result.configs) == 25  # the internal ones set on the group come first, as given
    assert [(c.name, c.value, c.config_source) for c in result.configs[:4]] == [
        ("share.assignor.offload.enable", "false", SOURCE_GROUP),
        ("consumer.assignor.offload.enable", "true", SOURCE_GROUP),
        ("streams.acceptable.recovery.lag", "5", SOURCE_GROUP),
        ("streams.assignor.offload.enable", "FALSE", SOURCE_GROUP),
    ]
    assert [(s.name, s.value, s.source) for s in result.configs[0].synonyms] == [
        ("share.assignor.offload.enable", "false", SOURCE_GROUP),
        ("group.share.assignor.offload.enable", "true", SOURCE_DEFAULT),
    ]
    assert [c.name for c in result.configs[4:]] == [name for name, _, _ in FRESH]
    assert incremental(state, "g", ("share.delivery.count.limit", DELETE, None)) == (E.NONE, None)
    assert entry(state, "g", "share.delivery.count.limit")[:2] == ("4", SOURCE_STATIC_BROKER)


def test_describe_keys_synonyms_documentation_and_errors():
    state = cluster(1)
    result = describe(state, "g", ["share.delivery.count.limit", "no.such.key"], synonyms=False, docs=True)
    [c] = result.configs
    assert (c.name, c.synonyms) == ("share.delivery.count.limit", [])
    assert "groupconfigs_share.delivery.count.limit" in c.documentation
    assert len(describe(state, "g", []).configs) == 21  # an empty list is every key
    empty = describe(state, "")
    assert (empty.error_code, empty.error_message, empty.configs) == (
        E.INVALID_REQUEST,
        "Group name must not be empty",
        [],
    )


# -- share.version ---------------------------------------------------------------------------------------


def test_share_version_is_finalized_at_2_and_updatable_to_0_1_2():
    state = cluster(1)
    assert state.features.share_version == 2
    response, _ = call(state, API_VERSIONS, 4, client_software_name="t", client_software_version="1")
    assert {f.name: (f.min_version, f.max_version) for f in response.supported_features}["share.version"] == (0, 2)
    assert {f.name: f.max_version_level for f in response.finalized_features}["share.version"] == 2

    def update(level, upgrade_type, validate_only=False):
        response, _ = call(
            state,
            UPDATE_FEATURES,
            2,
            timeout_ms=60_000,
            validate_only=validate_only,
            feature_updates=[{"feature": "share.version", "max_version_level": level, "upgrade_type": upgrade_type}],
        )
        return response.error_code, response.error_message

    failed = "The update failed for all features since the following feature had an error: "
    assert update(3, 1) == (
        E.INVALID_UPDATE_VERSION,
        failed + "Invalid update version 3 for feature share.version. Local controller 0 only supports versions 0-2",
    )
    assert update(1, 1) == (
        E.INVALID_UPDATE_VERSION,
        failed + "Invalid update version 1 for feature share.version. Can't downgrade the version of this feature "
        "without setting the upgrade type to either safe or unsafe downgrade.",
    )
    assert update(1, 2, validate_only=True) == (E.NONE, None) and state.features.share_version == 2
    assert update(1, 2) == (E.NONE, None) and state.features.share_version == 1
    assert update(0, 3) == (E.NONE, None) and state.features.share_version == 0
    response, _ = call(state, API_VERSIONS, 4, client_software_name="t", client_software_version="1")
    assert "share.version" not in {f.name for f in response.finalized_features}  # level 0 is no record
    assert update(2, 1) == (E.NONE, None) and state.features.share_version == 2


@pytest.mark.parametrize(
    ("release", "supported", "finalized"), [("4.4", (0, 2), 2), ("4.3", (0, 1), 1), ("3.9", None, 0)]
)
def test_share_version_of_each_release(release, supported, finalized):
    from fakebroker.core.releases import RELEASES

    assert RELEASES[release].supported.get("share.version") == supported
    assert RELEASES[release].finalized.get("share.version", 0) == finalized
    # streams groups (issue 39) are served as Kafka 4.4's: only 4.4 finalizes streams.version
    assert RELEASES[release].finalized.get("streams.version", 0) == (1 if release == "4.4" else 0)
