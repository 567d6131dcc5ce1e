"""Probes of the admin APIs around quotas, features and the metadata quorum: DescribeClientQuotas
and AlterClientQuotas (with the throttle a byte-rate quota gives Produce and Fetch),
UpdateFeatures, DescribeQuorum, ListConfigResources and DescribeUserScramCredentials.

The broker is shared with every other probe, so entities are named after the probe's prefix,
answers listing every entity keep only this probe's, default entities get quotas nothing here
enforces (``request_percentage``, an IP's ``connection_creation_rate``) and are removed at the
end, and the one feature change (transaction.version 2 -> 1) is undone before the probe ends.
Kafka applies quota and feature changes asynchronously (its metadata log), so the probe waits
until a change is visible before it relies on it.
"""

from __future__ import annotations

import time
from typing import Any

from fakebroker.core.features import SUPPORTED
from fakebroker.protocol import records as R
from tests.raw_client import RawClient

from .probing import API_VERSIONS, FETCH, PRODUCE, Target, error_name, probe

DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS, DESCRIBE_USER_SCRAM = 48, 49, 50
DESCRIBE_QUORUM, UPDATE_FEATURES, LIST_CONFIG_RESOURCES = 55, 57, 74
EXACT, DEFAULT, SPECIFIED = 0, 1, 2
UPGRADE, SAFE, UNSAFE = 1, 2, 3


def _e(kind: str, name: str | None) -> dict:
    return {"entity_type": kind, "entity_name": name}


def _op(key: str, value: float, remove: bool = False) -> dict:
    return {"key": key, "value": value, "remove": remove}


def _c(kind: str, match_type: int, match: str | None = None) -> dict:
    return {"entity_type": kind, "match_type": match_type, "match": match}


def _mine(s: Target, entity: list[dict]) -> bool:
    """An entity of this probe: every name is the probe's, a default or an IP (removed at the end)."""
    return all(
        e["entity_name"] is None or e["entity_type"] == "ip" or e["entity_name"].startswith(s.prefix) for e in entity
    )


def _key(entity: list[dict]) -> str:
    return repr([(e["entity_type"], e["entity_name"] or "") for e in entity])


def alter(s: Target, label: str, entries: list[dict], ver: int = 1, validate_only: bool = False, **kw) -> dict:
    r = s.req(None, ALTER_CLIENT_QUOTAS, ver, {"entries": entries, "validate_only": validate_only})
    # results per entity come in a Java HashMap's order: sorted here
    answer = s.norm({**r, "entries": sorted(r["entries"], key=lambda x: _key(x["entity"]))})
    s.record(label, answer, ALTER_CLIENT_QUOTAS, ver, kw.get("expect"))
    return r


def describe(s: Target, label: str | None, components: list[dict], strict: bool = False, ver: int = 1, **kw) -> dict:
    r = s.req(None, DESCRIBE_CLIENT_QUOTAS, ver, {"components": components, "strict": strict})
    entries = r.get("entries")
    if entries is not None:
        entries = sorted(
            (
                {**x, "values": sorted(x["values"], key=lambda v: v["key"])}
                for x in entries
                if _mine(s, x["entity"]) and (x["values"] or x["entity"])
            ),
            key=lambda x: _key(x["entity"]),
        )
    if label is not None:
        s.record(label, s.norm({**r, "entries": entries}), DESCRIBE_CLIENT_QUOTAS, ver, kw.get("expect"))
    return {**r, "entries": entries}


def wait_quota(s: Target, kind: str, name: str | None, present: bool = True) -> None:
    """Until DescribeClientQuotas shows (or no longer shows) a quota for this one entity."""
    match = [_c(kind, EXACT, name) if name is not None else _c(kind, DEFAULT)]
    for _ in range(200):
        r = describe(s, None, match, strict=True)
        if bool(r["entries"]) == present:
            time.sleep(0.1)  # the quota managers take the same metadata image
            return
        time.sleep(0.05)
    raise AssertionError(f"{s.kind}: quota of {kind}={name} never {'showed' if present else 'went'}")


@probe
def probe_client_quotas(s: Target) -> None:
    """AlterClientQuotas v0-v1 (set, remove, validate_only, every validation error Kafka gives) and
    DescribeClientQuotas v0-v1 (exact, default and any-name filters, strict or not, and every
    filter error)."""
    c1, c2, c3, user, bob = s.name("c1"), s.name("c2"), s.name("c3"), s.name("alice"), s.name("bob")
    for ver in (0, 1):
        alter(
            s,
            f"AlterClientQuotas v{ver} client-id producer_byte_rate",
            [{"entity": [_e("client-id", c1 + str(ver))], "ops": [_op("producer_byte_rate", 1048576.0)]}],
            ver=ver,
            expect={"entries.0.error_code": "NONE"},
        )
    bad = {"entries.0.error_code": "INVALID_REQUEST"}
    cases = [
        ("unknown key", [_e("client-id", c2)], [_op("foo", 1.0)]),
        ("negative value", [_e("client-id", c2)], [_op("producer_byte_rate", -1.0)]),
        ("zero value", [_e("client-id", c2)], [_op("consumer_byte_rate", 0.0)]),
        ("fractional byte rate", [_e("client-id", c2)], [_op("producer_byte_rate", 1.5)]),
        ("ip with client-id", [_e("ip", "10.1.2.3"), _e("client-id", c2)], [_op("connection_creation_rate", 5.0)]),
        ("ip with user", [_e("ip", "10.1.2.3"), _e("user", user)], [_op("connection_creation_rate", 5.0)]),
        ("bad ip", [_e("ip", "not an ip")], [_op("connection_creation_rate", 5.0)]),
        ("ip with a byte rate", [_e("ip", "10.1.2.4")], [_op("producer_byte_rate", 5.0)]),
        ("client-id with a connection rate", [_e("client-id", c2)], [_op("connection_creation_rate", 5.0)]),
        ("unknown entity type", [_e("group", c2)], [_op("consumer_byte_rate", 5.0)]),
        ("empty entity", [], [_op("consumer_byte_rate", 5.0)]),
        ("empty name", [_e("client-id", "")], [_op("consumer_byte_rate", 5.0)]),
        ("duplicate key", [_e("client-id", c2)], [_op("producer_byte_rate", 5.0), _op("producer_byte_rate", 6.0)]),
        ("fractional connection rate", [_e("ip", "10.1.2.5")], [_op("connection_creation_rate", 2.5)]),
    ]
    for what, entity, ops in cases:
        alter(s, f"AlterClientQuotas v1 {what}", [{"entity": entity, "ops": ops}], expect=bad)
    alter(
        s,
        "AlterClientQuotas v1 validate_only",
        [{"entity": [_e("client-id", c3)], "ops": [_op("consumer_byte_rate", 5000.0)]}],
        validate_only=True,
        expect={"entries.0.error_code": "NONE"},
    )
    alter(
        s,
        "AlterClientQuotas v1 two entries, one bad",
        [
            {"entity": [_e("user", user), _e("client-id", c2)], "ops": [_op("request_percentage", 50.0)]},
            {"entity": [_e("user", bob)], "ops": [_op("bad", 1.0)]},
        ],
    )
    alter(
        s,
        "AlterClientQuotas v1 the same entity twice",
        [
            {"entity": [_e("user", bob)], "ops": [_op("producer_byte_rate", 100000.0)]},
            {"entity": [_e("user", bob)], "ops": [_op("consumer_byte_rate", 100000.0)]},
        ],
    )
    alter(
        s,
        "AlterClientQuotas v1 user, and defaults",
        [
            {
                "entity": [_e("user", bob)],
                "ops": [_op("producer_byte_rate", 2000000.0), _op("request_percentage", 99.5)],
            },
            {"entity": [_e("user", None), _e("client-id", None)], "ops": [_op("request_percentage", 1000.0)]},
            {"entity": [_e("ip", None)], "ops": [_op("connection_creation_rate", 100000.0)]},
            {"entity": [_e("ip", "10.9.8.7")], "ops": [_op("connection_creation_rate", 100.0)]},
        ],
    )
    alter(
        s,
        "AlterClientQuotas v1 remove a quota nobody has",
        [{"entity": [_e("user", s.name("nobody"))], "ops": [_op("producer_byte_rate", 0.0, True)]}],
        expect={"entries.0.error_code": "NONE"},
    )
    wait_quota(s, "ip", "10.9.8.7")
    wait_quota(s, "user", bob)
    for ver in (0, 1):
        describe(s, f"DescribeClientQuotas v{ver} exact client-id", [_c("client-id", EXACT, c1 + "0")], ver=ver)
    describe(s, "DescribeClientQuotas v1 not altered (validate_only)", [_c("client-id", EXACT, c3)])
    describe(s, "DescribeClientQuotas v1 nothing matches", [_c("client-id", EXACT, s.name("none"))])
    describe(s, "DescribeClientQuotas v1 any client-id", [_c("client-id", SPECIFIED)])
    describe(s, "DescribeClientQuotas v1 any client-id, strict", [_c("client-id", SPECIFIED)], strict=True)
    describe(s, "DescribeClientQuotas v1 any user", [_c("user", SPECIFIED)])
    describe(s, "DescribeClientQuotas v1 any user, strict", [_c("user", SPECIFIED)], strict=True)
    describe(
        s, "DescribeClientQuotas v1 exact user, any client-id", [_c("user", EXACT, user), _c("client-id", SPECIFIED)]
    )
    describe(
        s,
        "DescribeClientQuotas v1 default user and client-id, strict",
        [_c("user", DEFAULT), _c("client-id", DEFAULT)],
        strict=True,
    )
    describe(s, "DescribeClientQuotas v1 default user", [_c("user", DEFAULT)])
    describe(s, "DescribeClientQuotas v1 any ip", [_c("ip", SPECIFIED)])
    describe(s, "DescribeClientQuotas v1 exact ip", [_c("ip", EXACT, "10.9.8.7")])
    describe(s, "DescribeClientQuotas v1 default ip, strict", [_c("ip", DEFAULT)], strict=True)
    describe(s, "DescribeClientQuotas v0 everything", [])
    describe(s, "DescribeClientQuotas v1 everything, strict", [], strict=True)
    errors = [
        ("ip with user", [_c("ip", SPECIFIED), _c("user", SPECIFIED)]),
        ("unknown entity type", [_c("group", SPECIFIED)]),
        ("empty entity type", [_c("", SPECIFIED)]),
        ("type twice", [_c("user", SPECIFIED), _c("user", DEFAULT)]),
        ("unknown match type", [_c("user", 7)]),
        ("exact without a name", [_c("user", EXACT)]),
        ("default with a name", [_c("user", DEFAULT, "x")]),
        ("any with a name", [_c("user", SPECIFIED, "x")]),
    ]
    for what, components in errors:
        describe(s, f"DescribeClientQuotas v1 {what}", components)
    # clean up, the defaults above all
    alter(
        s,
        "AlterClientQuotas v1 remove",
        [
            {"entity": [_e("user", None), _e("client-id", None)], "ops": [_op("request_percentage", 0.0, True)]},
            {"entity": [_e("ip", None)], "ops": [_op("connection_creation_rate", 0.0, True)]},
            {"entity": [_e("ip", "10.9.8.7")], "ops": [_op("connection_creation_rate", 0.0, True)]},
            {
                "entity": [_e("user", bob)],
                "ops": [_op("producer_byte_rate", 0, True), _op("request_percentage", 0, True)],
            },
        ],
    )
    wait_quota(s, "ip", "10.9.8.7", present=False)
    describe(s, "DescribeClientQuotas v1 after removing", [_c("ip", SPECIFIED)])


def _produce(client: RawClient, topic: str, values: int, size: int) -> dict:
    blob = R.build_batch([(None, b"x" * size)] * values)
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 10000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": blob}]}],
    }
    return client.request(PRODUCE, 9, body).to_dict()


def _fetch(client: RawClient, topic: str, offset: int) -> dict:
    body = {
        "replica_id": -1,
        "max_wait_ms": 200,
        "min_bytes": 1,
        "max_bytes": 10_000_000,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "log_start_offset": -1,
                        "partition_max_bytes": 10_000_000,
                        "last_fetched_epoch": -1,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    return client.request(FETCH, 12, body).to_dict()


def _fetched(r: dict) -> Any:
    if not r["responses"]:
        return "no data"
    part = r["responses"][0]["partitions"][0]
    batches = [b for b in R.read_batches(part["records"] or b"") if isinstance(b, R.RecordBatch)]
    return {"error_code": error_name(part["error_code"]), "records": sum(len(b.records) for b in batches)}


@probe
def probe_quota_throttle(s: Target) -> None:
    """A client id with producer_byte_rate 10000 B/s and consumer_byte_rate 15000 B/s: a first
    60 kB Produce stays within the rate (Kafka measures it over at least 10 one-second windows),
    a second one is throttled; a Fetch of the 120 kB stays within its rate, fetching them again
    is throttled and answered without data. (The consumer's window, 150 kB, holds every batch:
    with less, Kafka would send a partial last batch that fakebroker does not.)"""
    topic, client_id = s.name("qt"), s.name("qc")
    s.create_topic(topic)
    alter(
        s,
        "AlterClientQuotas byte rates",
        [
            {
                "entity": [_e("client-id", client_id)],
                "ops": [_op("producer_byte_rate", 10000.0), _op("consumer_byte_rate", 15000.0)],
            }
        ],
        expect={"entries.0.error_code": "NONE"},
    )
    wait_quota(s, "client-id", client_id)
    client = RawClient(s.port, client_id=client_id, timeout=30)
    try:
        for i in range(2):
            r = _produce(client, topic, 60, 1000)
            code = r["responses"][0]["partition_responses"][0]["error_code"]
            s.record(
                f"Produce {i + 1} of 60 kB",
                {"error_code": error_name(code), "throttled": r["throttle_time_ms"] > 0},
                PRODUCE,
                9,
                expect={"error_code": "NONE", "throttled": i == 1},
            )
        for i in range(2):
            r = _fetch(client, topic, 0)
            s.record(
                f"Fetch {i + 1} from offset 0",
                {"throttled": r["throttle_time_ms"] > 0, "fetched": _fetched(r)},
                FETCH,
                12,
                expect={"throttled": i == 1},
            )
    finally:
        client.close()
    alter(
        s,
        "AlterClientQuotas remove byte rates",
        [
            {
                "entity": [_e("client-id", client_id)],
                "ops": [_op("producer_byte_rate", 0.0, True), _op("consumer_byte_rate", 0.0, True)],
            }
        ],
    )


def _feature(name: str, level: int, upgrade_type: int = UPGRADE, allow_downgrade: bool = False) -> dict:
    return {
        "feature": name,
        "max_version_level": level,
        "upgrade_type": upgrade_type,
        "allow_downgrade": allow_downgrade,
    }


def _update(s: Target, label: str, updates: list[dict], ver: int = 2, validate_only: bool = True, **kw) -> dict:
    body: dict[str, Any] = {"timeout_ms": 60000, "feature_updates": updates}
    if ver >= 1:
        body["validate_only"] = validate_only
    return s.req(label, UPDATE_FEATURES, ver, body, **kw)


def _finalized(s: Target) -> dict[str, int]:
    """Finalized levels (of the features fakebroker has: streams.version is left out, see the
    api_versions probe's allowed difference)."""
    r = s.req(None, API_VERSIONS, 3, {"client_software_name": "conformance", "client_software_version": "1"})
    return {f["name"]: f["max_version_level"] for f in r["finalized_features"] if f["name"] in SUPPORTED}


def _wait_level(s: Target, name: str, level: int) -> None:
    for _ in range(200):
        if _finalized(s).get(name, 0) == level:
            return
        time.sleep(0.05)
    raise AssertionError(f"{s.kind}: {name} never reached {level}")


@probe
def probe_update_features(s: Target) -> None:
    """UpdateFeatures v0-v2: every refusal Kafka's controller gives (unknown feature, level out of
    range, downgrade without a downgrade type, a bad type, metadata.version and kraft.version
    downgrades), validate_only upgrades and downgrades, and one real change (transaction.version
    2 -> 1 -> 2) seen in ApiVersions' finalized features."""
    failed = {"error_code": "INVALID_UPDATE_VERSION"}
    for ver in (0, 1, 2):
        _update(s, f"UpdateFeatures v{ver} unknown feature", [_feature("foo.version", 1)], ver=ver, expect=failed)
        _update(
            s, f"UpdateFeatures v{ver} level out of range", [_feature("transaction.version", 9)], ver=ver, expect=failed
        )
        _update(
            s,
            f"UpdateFeatures v{ver} downgrade as upgrade",
            [_feature("transaction.version", 1)],
            ver=ver,
            expect=failed,
        )
        _update(s, f"UpdateFeatures v{ver} nothing", [], ver=ver, expect={"error_code": "NONE"})
        _update(s, f"UpdateFeatures v{ver} the same level", [_feature("transaction.version", 2)], ver=ver)
    _update(s, "UpdateFeatures v0 allow_downgrade", [_feature("transaction.version", 1, allow_downgrade=True)], ver=0)
    checks = [
        ("safe downgrade", [_feature("transaction.version", 1, SAFE)]),
        ("unsafe downgrade to 0", [_feature("transaction.version", 0, UNSAFE)]),
        ("upgrade type 0", [_feature("transaction.version", 1, 0)]),
        ("upgrade type 5", [_feature("transaction.version", 1, 5)]),
        ("negative level", [_feature("transaction.version", -1, SAFE)]),
        ("upgrade as a downgrade", [_feature("metadata.version", 34, SAFE)]),
        ("remove group.version", [_feature("group.version", 0, SAFE)]),
        ("metadata.version safe downgrade", [_feature("metadata.version", 32, SAFE)]),
        ("metadata.version unsafe downgrade", [_feature("metadata.version", 32, UNSAFE)]),
        ("metadata.version beyond", [_feature("metadata.version", 34)]),
        ("kraft.version downgrade", [_feature("kraft.version", 0, SAFE)]),
        ("eligible.leader.replicas.version downgrade", [_feature("eligible.leader.replicas.version", 0, SAFE)]),
        ("two features, one unknown", [_feature("transaction.version", 1, SAFE), _feature("foo", 1)]),
    ]
    for ver in (1, 2):
        for what, updates in checks:
            _update(s, f"UpdateFeatures v{ver} validate_only {what}", updates, ver=ver)
    s.record("finalized after validate_only", _finalized(s))
    _update(
        s,
        "UpdateFeatures v2 downgrade transaction.version",
        [_feature("transaction.version", 1, SAFE)],
        validate_only=False,
        expect={"error_code": "NONE"},
    )
    try:
        _wait_level(s, "transaction.version", 1)
        s.record("finalized after the downgrade", _finalized(s))
    finally:
        _update(
            s,
            "UpdateFeatures v1 upgrade transaction.version back",
            [_feature("transaction.version", 2)],
            ver=1,
            validate_only=False,
            expect={"error_code": "NONE"},
        )
        _wait_level(s, "transaction.version", 2)
    s.record("finalized after the upgrade", _finalized(s))


def _quorum(s: Target, label: str, ver: int, topics: list[dict], **kw) -> None:
    r = s.req(None, DESCRIBE_QUORUM, ver, {"topics": topics})

    def replica(x: dict) -> dict:
        return {
            **x,
            "replica_id": "<node>",
            "log_end_offset": "<offset>" if x["log_end_offset"] > 0 else x["log_end_offset"],
            "last_fetch_timestamp": "<ts>" if x["last_fetch_timestamp"] > 0 else x["last_fetch_timestamp"],
            "last_caught_up_timestamp": "<ts>" if x["last_caught_up_timestamp"] > 0 else x["last_caught_up_timestamp"],
        }

    for t in r["topics"]:
        for p in t["partitions"]:
            p["high_watermark"] = "<offset>" if p["high_watermark"] > 0 else p["high_watermark"]
            p["current_voters"] = [replica(x) for x in p["current_voters"]]
            p["observers"] = [replica(x) for x in p["observers"]]
    s.record(label, s.norm(r), DESCRIBE_QUORUM, ver, kw.get("expect"))


@probe
def probe_describe_quorum(s: Target) -> None:
    """DescribeQuorum v0-v2 on a single combined broker+controller: one voter that leads, no
    observers, v2's node and its CONTROLLER listener; a topic or partition other than
    __cluster_metadata-0 (or more than one) answers UNKNOWN_TOPIC_OR_PARTITION per partition."""
    metadata = [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]
    for ver in (0, 1, 2):
        _quorum(s, f"DescribeQuorum v{ver}", ver, metadata, expect={"topics.0.partitions.0.error_code": "NONE"})
    _quorum(
        s, "DescribeQuorum v2 other topic", 2, [{"topic_name": s.name("t"), "partitions": [{"partition_index": 0}]}]
    )
    _quorum(
        s,
        "DescribeQuorum v2 partition 1",
        2,
        [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 1}]}],
    )
    _quorum(s, "DescribeQuorum v2 no topic", 2, [])
    _quorum(
        s,
        "DescribeQuorum v1 partition 0 twice",
        1,
        [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}, {"partition_index": 0}]}],
    )


@probe
def probe_list_config_resources(s: Target) -> None:
    """ListConfigResources v0 (client-metrics resources only: none) and v1 for each resource type,
    all of them, and types it does not list (UNSUPPORTED_VERSION). Topics are kept to this
    probe's; broker ids are named <node>."""
    topic = s.name("lcr")
    s.create_topic(topic)

    def listed(label: str, ver: int, types: list[int] | None, **kw) -> None:
        r = s.req(None, LIST_CONFIG_RESOURCES, ver, {"resource_types": types or []})
        resources = [
            {**x, "resource_name": "<node>" if x["resource_type"] in (4, 8) else x["resource_name"]}
            for x in r["config_resources"]
            if x["resource_type"] != 2 or x["resource_name"].startswith(s.prefix)
        ]
        s.record(label, s.norm({**r, "config_resources": resources}), LIST_CONFIG_RESOURCES, ver, kw.get("expect"))

    listed("ListConfigResources v0", 0, None, expect={"error_code": "NONE"})
    listed("ListConfigResources v1 every type", 1, [], expect={"error_code": "NONE"})
    for types in ([2], [4], [8], [16], [32], [2, 32], [1], [99], [2, 99]):
        listed(f"ListConfigResources v1 {types}", 1, types)


@probe
def probe_describe_user_scram_credentials(s: Target) -> None:
    """DescribeUserScramCredentials v0 on a broker where nobody has SCRAM credentials."""
    alice = s.name("alice")
    for label, users in (
        ("every user", None),
        ("no user", []),
        ("an unknown user", [{"name": alice}]),
        ("the same user twice", [{"name": alice}, {"name": alice}]),
    ):
        s.req(f"DescribeUserScramCredentials v0 {label}", DESCRIBE_USER_SCRAM, 0, {"users": users})
