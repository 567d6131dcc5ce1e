"""Probes of topic, broker and group configs: DescribeConfigs (32) v1-v4, AlterConfigs (33)
v0-v2, IncrementalAlterConfigs (44) v0-v1 and CreateTopics (19) v5-v7 with configs.

Kafka answers a resource's configs in a hash map's order: the probe sorts them by name. The
broker's identity and the settings the two test brokers are started with differently (listeners
with their ports, ``node.id``, ``log.dirs``, ``process.roles``, ...; see ``ENVIRONMENT``) keep
their key, type and flags but not their value, source or synonyms. Documentation is compared by
presence (null, "" or a text): Kafka's text is not copied.
"""

from __future__ import annotations

import time
from typing import Any

from .kafka_broker import KAFKA_ONLY_SETTINGS
from .probing import CREATE_TOPICS, METADATA, Target, probe

DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44
TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
ENVIRONMENT = set(KAFKA_ONLY_SETTINGS) | {
    "listeners",
    "advertised.listeners",
    "controller.quorum.bootstrap.servers",
    "log.dirs",
    "broker.id",
    "node.id",
}


def _doc(text: Any) -> Any:
    return "<doc>" if text else text


def norm_configs(answer: dict, resource_key: str = "results") -> dict:
    """The answer with each resource's configs sorted by name, environment values blanked and
    a broker's id (Kafka's node is 1, fakebroker's 0) as ``<broker>``."""
    out = dict(answer)
    results = []
    for r in answer.get(resource_key) or []:
        r = dict(r)
        if r.get("resource_type") in (BROKER, BROKER_LOGGER) and r.get("resource_name", "").isdigit():
            r["resource_name"] = "<broker>"
        configs = []
        for c in sorted(r.get("configs") or [], key=lambda c: c["name"]):
            c = dict(c)
            if "documentation" in c:
                c["documentation"] = _doc(c["documentation"])
            if c["name"] in ENVIRONMENT and r.get("resource_type") == BROKER:
                c.update(value="<env>", config_source="<env>", synonyms="<env>")
            configs.append(c)
        if r.get("configs") is not None:
            r["configs"] = configs
        results.append(r)
    if resource_key in answer:
        out[resource_key] = results
    return out


def broker_id(s: Target) -> str:
    m = s.req(None, METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
    return str(m["brokers"][0]["node_id"])


def describe(s: Target, label: str, ver: int, resources: list, *, synonyms=False, docs=False, expect=None) -> dict:
    body = {
        "resources": [{"resource_type": t, "resource_name": n, "configuration_keys": keys} for t, n, keys in resources],
        "include_synonyms": synonyms,
        "include_documentation": docs,
    }
    answer = s.req(None, DESCRIBE_CONFIGS, ver, body)
    s.record(label, norm_configs(s.norm(answer)), DESCRIBE_CONFIGS, ver, expect)
    return answer


def create(s: Target, label: str | None, ver: int, name: str, configs: dict, *, validate_only=False, expect=None):
    body = {
        "topics": [
            {
                "name": name,
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }
        ],
        "timeout_ms": 10000,
        "validate_only": validate_only,
    }
    answer = s.req(None, CREATE_TOPICS, ver, body)
    if label is not None:
        norm = s.norm(answer)
        for t in norm["topics"]:
            if t.get("configs"):
                t["configs"] = sorted(t["configs"], key=lambda c: c["name"])
        s.record(label, norm, CREATE_TOPICS, ver, expect)
    return answer


def list_after(s: Target, body: dict) -> dict[str, str]:
    """For Kafka: the value each APPEND/SUBTRACT of ``body`` will leave at its resource's own
    source (read before the change), so :func:`settle` can wait for exactly that value."""
    if s.kind != "kafka" or body.get("validate_only") or "resources" not in body:
        return {}
    [resource] = body["resources"]
    ops = [c for c in resource.get("configs", []) if c.get("config_operation") in (APPEND, SUBTRACT)]
    kind, name = resource["resource_type"], resource["resource_name"]
    if not ops or kind not in (TOPIC, BROKER):
        return {}
    source = {TOPIC: 1, BROKER: 2 if name else 3}[kind]
    query = {
        "resources": [{"resource_type": kind, "resource_name": name, "configuration_keys": None}],
        "include_synonyms": True,
        "include_documentation": False,
    }
    configs = {c["name"]: c for c in s.req(None, DESCRIBE_CONFIGS, 4, query)["results"][0]["configs"]}
    out = {}
    for op in ops:
        current = next(
            (x["value"] for x in configs.get(op["name"], {}).get("synonyms", []) if x["source"] == source), ""
        )
        items = [i for i in (current or "").split(",") if i]
        given = [i for i in (op["value"] or "").split(",") if i]
        if op["config_operation"] == APPEND:
            items += [i for i in given if i not in items]
        else:
            items = [i for i in items if i not in given]
        if items:
            out[op["name"]] = ",".join(items)
    return out


def settle(s: Target, body: dict, answer: dict, replace: bool, expected: dict[str, str] | None = None) -> None:
    """Kafka applies a config change when its metadata record reaches the broker, a moment after
    the change is answered: until then DescribeConfigs shows the old value. For Kafka the probe
    waits (up to 10 s) until the resource shows what an accepted, not validate-only change set
    (fakebroker applies it at once)."""
    if s.kind != "kafka" or body["validate_only"] or answer.get("EXC"):
        return
    [resource] = body["resources"]
    [result] = answer["responses"]
    kind, name = resource["resource_type"], resource["resource_name"]
    if result["error_code"] != 0 or kind not in (TOPIC, BROKER, GROUP):
        return
    source = {TOPIC: 1, BROKER: 2 if name else 3, GROUP: 8}[kind]
    sets = {}
    deletes = set()
    for c in resource["configs"]:
        if c.get("config_operation", SET) == DELETE:
            deletes.add(c["name"])
        elif c.get("config_operation", SET) == SET:
            sets[c["name"]] = c["value"]
        else:  # APPEND/SUBTRACT: the value worked out before the change, else any of that source
            sets[c["name"]] = (expected or {}).get(c["name"])

    def shown() -> bool:
        query = {
            "resources": [{"resource_type": kind, "resource_name": name, "configuration_keys": None}],
            "include_synonyms": True,
            "include_documentation": False,
        }
        configs = {c["name"]: c for c in s.req(None, DESCRIBE_CONFIGS, 4, query)["results"][0]["configs"]}

        def has(key: str, value: Any = None, any_value: bool = True) -> bool:
            c = configs.get(key)
            if c is None:
                return False
            if c["is_sensitive"] or c["config_type"] == 0:
                return True  # an unknown or sensitive setting shows no value
            return any(x["source"] == source and (any_value or x["value"] == value) for x in c["synonyms"])

        if not all(has(k, v, v is None) for k, v in sets.items()):
            return False
        if any(has(k) for k in deletes if k in configs and not configs[k]["is_sensitive"]):
            return False
        if replace:
            ours = {k for k, c in configs.items() if any(x["source"] == source for x in c["synonyms"])}
            return ours <= set(sets)
        return True

    deadline = time.monotonic() + 10
    while not shown() and time.monotonic() < deadline:
        time.sleep(0.05)


def send(s: Target, label: str, api: int, ver: int, body: dict, expect: dict | None) -> dict:
    expected = list_after(s, body) if api == INCREMENTAL_ALTER_CONFIGS else {}
    answer = s.req(None, api, ver, body)
    s.record(label, norm_configs(s.norm(answer), "responses"), api, ver, expect)
    settle(s, body, answer, replace=api == ALTER_CONFIGS, expected=expected)
    return answer


def alter(s: Target, label: str, ver: int, kind: int, name: str, configs: dict, *, validate_only=False, expect=None):
    body = {
        "resources": [
            {
                "resource_type": kind,
                "resource_name": name,
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }
        ],
        "validate_only": validate_only,
    }
    return send(s, label, ALTER_CONFIGS, ver, body, expect)


def incremental(s: Target, label: str, ver: int, kind: int, name: str, ops: list, *, validate_only=False, expect=None):
    body = {
        "resources": [
            {
                "resource_type": kind,
                "resource_name": name,
                "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops],
            }
        ],
        "validate_only": validate_only,
    }
    return send(s, label, INCREMENTAL_ALTER_CONFIGS, ver, body, expect)


@probe
def probe_describe_configs_topic(s: Target) -> None:
    """DescribeConfigs v1-v4 of a topic created with and without overrides: every key Kafka 4.4
    lists, with values, sources, types, synonyms and documentation (by presence)."""
    plain, tuned = s.name("plain"), s.name("tuned")
    create(s, None, 7, tuned, {"retention.ms": "1000", "cleanup.policy": "compact", "max.message.bytes": "2000"})
    s.create_topic(plain)  # waits until the topics are ready
    for ver in (1, 2, 3, 4):
        for synonyms in (False, True):
            docs_options = (False, True) if ver >= 3 else (False,)
            for docs in docs_options:
                describe(
                    s,
                    f"DescribeConfigs v{ver} topics synonyms={synonyms} docs={docs}",
                    ver,
                    [(TOPIC, plain, None), (TOPIC, tuned, None)],
                    synonyms=synonyms,
                    docs=docs,
                    expect={"results.0.error_code": "NONE", "results.1.error_code": "NONE"},
                )
    describe(
        s,
        "DescribeConfigs v4 topic some keys",
        4,
        [(TOPIC, tuned, ["retention.ms", "segment.bytes", "no.such.key"])],
        synonyms=True,
    )
    describe(s, "DescribeConfigs v4 unknown topic", 4, [(TOPIC, s.name("nope"), None)])
    describe(s, "DescribeConfigs v4 empty topic name", 4, [(TOPIC, "", None)])
    describe(s, "DescribeConfigs v4 unknown resource type", 4, [(99, "x", None)])


@probe
def probe_describe_configs_broker(s: Target) -> None:
    """DescribeConfigs v1-v4 of the broker (its id) and of the cluster default (""): every key
    Kafka 4.4 lists (the environment's values left out), and BROKER_LOGGER's root logger."""
    bid = broker_id(s)
    for ver in (1, 2, 3, 4):
        for synonyms in (False, True):
            docs = ver >= 3 and synonyms
            describe(
                s,
                f"DescribeConfigs v{ver} broker synonyms={synonyms} docs={docs}",
                ver,
                [(BROKER, bid, None), (BROKER, "", None)],
                synonyms=synonyms,
                docs=docs,
                expect={"results.0.error_code": "NONE", "results.1.error_code": "NONE"},
            )
    describe(
        s,
        "DescribeConfigs v4 broker some keys",
        4,
        [(BROKER, bid, ["log.retention.ms", "message.max.bytes", "min.insync.replicas", "num.partitions"])],
        synonyms=True,
    )
    describe(s, "DescribeConfigs v4 other broker id", 4, [(BROKER, "77", None)])
    describe(s, "DescribeConfigs v4 broker id not a number", 4, [(BROKER, "abc", None)])
    answer = s.req(
        None,
        DESCRIBE_CONFIGS,
        4,
        {
            "resources": [{"resource_type": BROKER_LOGGER, "resource_name": bid, "configuration_keys": ["root"]}],
            "include_synonyms": True,
            "include_documentation": True,
        },
    )
    s.record("DescribeConfigs v4 broker logger root", norm_configs(s.norm(answer)), DESCRIBE_CONFIGS, 4)


@probe
def probe_alter_configs(s: Target) -> None:
    """AlterConfigs v0-v2 of a topic: the set replaces every override; unknown key, bad values,
    the removed message.downconversion.enable, validate_only; then DescribeConfigs shows it."""
    topic = s.name("t")
    s.create_topic(topic)
    keys = ["retention.ms", "cleanup.policy", "max.message.bytes", "compression.type"]
    for ver in (0, 1, 2):
        alter(
            s,
            f"AlterConfigs v{ver} set two",
            ver,
            TOPIC,
            topic,
            {"retention.ms": str(1000 + ver), "cleanup.policy": "compact"},
            expect={"responses.0.error_code": "NONE"},
        )
        describe(s, f"after AlterConfigs v{ver} set two", 4, [(TOPIC, topic, keys)], synonyms=True)
    alter(s, "AlterConfigs v2 replace with one", 2, TOPIC, topic, {"max.message.bytes": "5000"})
    describe(s, "after replace with one", 4, [(TOPIC, topic, keys)], synonyms=True)
    alter(s, "AlterConfigs v2 validate_only", 2, TOPIC, topic, {"retention.ms": "7"}, validate_only=True)
    describe(s, "after validate_only", 4, [(TOPIC, topic, keys)], synonyms=True)
    bad = {
        "unknown key": {"no.such.config": "1"},
        "removed key": {"message.downconversion.enable": "true"},
        "not a number": {"retention.ms": "soon"},
        "out of range": {"retention.ms": "-5"},
        "bad cleanup.policy": {"cleanup.policy": "shred"},
        "bad compression.type": {"compression.type": "brotli"},
        "bad timestamp type": {"message.timestamp.type": "WallClock"},
        "bad boolean": {"preallocate": "yes"},
        "ratio above 1": {"min.cleanable.dirty.ratio": "1.5"},
        "null value": {"retention.ms": None},
    }
    for what, configs in bad.items():
        alter(s, f"AlterConfigs v2 {what}", 2, TOPIC, topic, configs)
    describe(s, "after refusals", 4, [(TOPIC, topic, keys)], synonyms=True)
    alter(s, "AlterConfigs v2 unknown topic", 2, TOPIC, s.name("nope"), {"retention.ms": "1"})
    alter(s, "AlterConfigs v2 clear", 2, TOPIC, topic, {})
    describe(s, "after clear", 4, [(TOPIC, topic, keys)], synonyms=True)


@probe
def probe_incremental_alter_configs(s: Target) -> None:
    """IncrementalAlterConfigs v0-v1 on a topic: SET, DELETE (restores default and source),
    APPEND and SUBTRACT on a list, APPEND on a non-list, unknown key and op, validate_only."""
    topic = s.name("t")
    s.create_topic(topic)
    keys = ["retention.ms", "cleanup.policy", "segment.bytes", "leader.replication.throttled.replicas"]

    def after(label: str) -> None:
        describe(s, f"after {label}", 4, [(TOPIC, topic, keys)], synonyms=True)

    for ver in (0, 1):
        incremental(
            s, f"v{ver} SET", ver, TOPIC, topic, [("retention.ms", SET, "2000"), ("segment.bytes", SET, "2000000")]
        )
        after(f"v{ver} SET")
        incremental(s, f"v{ver} DELETE", ver, TOPIC, topic, [("retention.ms", DELETE, None)])
        after(f"v{ver} DELETE")
    incremental(s, "APPEND compact", 1, TOPIC, topic, [("cleanup.policy", APPEND, "compact")])
    after("APPEND compact")
    incremental(s, "APPEND compact again", 1, TOPIC, topic, [("cleanup.policy", APPEND, "compact")])
    after("APPEND compact again")
    incremental(s, "SUBTRACT delete", 1, TOPIC, topic, [("cleanup.policy", SUBTRACT, "delete")])
    after("SUBTRACT delete")
    incremental(s, "SUBTRACT absent", 1, TOPIC, topic, [("cleanup.policy", SUBTRACT, "delete")])
    after("SUBTRACT absent")
    incremental(s, "APPEND throttled", 1, TOPIC, topic, [("leader.replication.throttled.replicas", APPEND, "0:1")])
    after("APPEND throttled")
    incremental(s, "APPEND bad cleanup", 1, TOPIC, topic, [("cleanup.policy", APPEND, "shred")])
    incremental(s, "APPEND non-list", 1, TOPIC, topic, [("retention.ms", APPEND, "5")])
    incremental(s, "SUBTRACT non-list", 1, TOPIC, topic, [("retention.ms", SUBTRACT, "5")])
    incremental(s, "SET unknown key", 1, TOPIC, topic, [("no.such.config", SET, "1")])
    incremental(s, "DELETE unknown key", 1, TOPIC, topic, [("no.such.config", DELETE, None)])
    incremental(s, "SET removed key", 1, TOPIC, topic, [("message.downconversion.enable", SET, "true")])
    incremental(s, "SET bad value", 1, TOPIC, topic, [("segment.bytes", SET, "10")])
    incremental(s, "SET null value", 1, TOPIC, topic, [("retention.ms", SET, None)])
    incremental(s, "unknown op", 1, TOPIC, topic, [("retention.ms", 9, "1")])
    incremental(s, "SET tiered storage", 1, TOPIC, topic, [("remote.storage.enable", SET, "true")])
    incremental(s, "SET max lag", 1, TOPIC, topic, [("max.compaction.lag.ms", SET, "5")])
    incremental(s, "SET min lag above max", 1, TOPIC, topic, [("min.compaction.lag.ms", SET, "10")])
    incremental(s, "DELETE max lag", 1, TOPIC, topic, [("max.compaction.lag.ms", DELETE, None)])
    incremental(s, "same key twice", 1, TOPIC, topic, [("retention.ms", SET, "1"), ("retention.ms", SET, "2")])
    incremental(s, "validate_only", 1, TOPIC, topic, [("retention.ms", SET, "3")], validate_only=True)
    after("refusals and validate_only")
    incremental(s, "DELETE all", 1, TOPIC, topic, [(k, DELETE, None) for k in keys])
    after("DELETE all")
    incremental(s, "unknown topic", 1, TOPIC, s.name("nope"), [("retention.ms", SET, "1")])


@probe
def probe_broker_configs_alter(s: Target) -> None:
    """IncrementalAlterConfigs and AlterConfigs of broker settings: the cluster default ("") and
    this broker, and what a topic then shows (sources and synonyms); then back to Kafka's state."""
    bid = broker_id(s)
    topic = s.name("t")
    s.create_topic(topic)
    bkeys = ["log.retention.bytes", "message.max.bytes", "log.cleaner.threads", "min.insync.replicas"]
    tkeys = ["retention.bytes", "max.message.bytes", "min.insync.replicas"]

    def after(label: str) -> None:
        describe(
            s,
            f"after {label}",
            4,
            [(BROKER, bid, bkeys), (BROKER, "", None), (TOPIC, topic, tkeys)],
            synonyms=True,
        )

    after("start")
    incremental(s, "cluster SET", 1, BROKER, "", [("log.retention.bytes", SET, "123456789")])
    after("cluster SET")
    incremental(s, "broker SET", 1, BROKER, bid, [("log.retention.bytes", SET, "987654321")])
    after("broker SET")
    incremental(s, "broker SET thread count", 1, BROKER, bid, [("log.cleaner.threads", SET, "2")])
    after("broker SET thread count")
    incremental(s, "cluster SET unknown", 1, BROKER, "", [("no.such.setting", SET, "1")])
    incremental(s, "cluster SET bad value", 1, BROKER, "", [("message.max.bytes", SET, "big")])
    incremental(s, "other broker", 1, BROKER, "77", [("log.retention.bytes", SET, "1")])
    incremental(s, "broker DELETE", 1, BROKER, bid, [("log.retention.bytes", DELETE, None)])
    incremental(s, "broker DELETE threads", 1, BROKER, bid, [("log.cleaner.threads", DELETE, None)])
    incremental(s, "cluster DELETE", 1, BROKER, "", [("log.retention.bytes", DELETE, None)])
    after("DELETE")
    incremental(s, "cluster SET out of range", 1, BROKER, "", [("log.segment.bytes", SET, "10")])
    # dynamic settings whose only check is a ConfigDef range (atLeast(1), atLeast(0)): refused as Kafka refuses them
    incremental(s, "cluster SET below range", 1, BROKER, "", [("background.threads", SET, "0")])
    incremental(s, "broker SET below range", 1, BROKER, bid, [("log.cleaner.threads", SET, "-1")])
    incremental(s, "cluster SET bad choice", 1, BROKER, "", [("log.cleanup.policy", SET, "shred")])
    incremental(s, "broker SET read-only", 1, BROKER, bid, [("num.partitions", SET, "2")])
    incremental(s, "cluster SET read-only", 1, BROKER, "", [("num.partitions", SET, "2")])
    incremental(s, "cluster SET policy", 1, BROKER, "", [("log.cleanup.policy", SET, "compact,delete")])
    describe(
        s,
        "after cluster SET policy",
        4,
        [(BROKER, bid, ["num.partitions", "log.cleanup.policy"]), (TOPIC, topic, ["cleanup.policy"])],
        synonyms=True,
    )
    incremental(s, "cluster APPEND policy", 1, BROKER, "", [("log.cleanup.policy", SUBTRACT, "delete")])
    incremental(s, "cluster APPEND non-list", 1, BROKER, "", [("message.max.bytes", APPEND, "1")])
    describe(s, "after cluster APPEND", 4, [(BROKER, "", None), (TOPIC, topic, ["cleanup.policy"])], synonyms=True)
    incremental(
        s,
        "cluster DELETE policy and partitions",
        1,
        BROKER,
        "",
        [("log.cleanup.policy", DELETE, None), ("num.partitions", DELETE, None), ("no.such.setting", DELETE, None)],
    )
    for ver in (0, 1):
        alter(s, f"AlterConfigs v{ver} broker", ver, BROKER, bid, {"log.retention.bytes": "77"})
        describe(s, f"after AlterConfigs v{ver} broker", 4, [(BROKER, bid, ["log.retention.bytes"])], synonyms=True)
    alter(s, "AlterConfigs v1 broker clear", 1, BROKER, bid, {})
    alter(s, "AlterConfigs v2 cluster", 2, BROKER, "", {"min.insync.replicas": "1", "log.retention.bytes": "5"})
    after("AlterConfigs cluster")
    alter(s, "AlterConfigs v2 cluster back", 2, BROKER, "", {"min.insync.replicas": "1"})
    after("AlterConfigs cluster back")


@probe
def probe_create_topics_configs(s: Target) -> None:
    """CreateTopics v5-v7 answer the new topic's configs (every key, with sources); bad configs
    are INVALID_CONFIG; validate_only answers the configs too and creates nothing."""
    for ver in (5, 6, 7):
        create(
            s,
            f"CreateTopics v{ver} with configs",
            ver,
            s.name(f"t{ver}"),
            {"retention.ms": "1000", "compression.type": "zstd", "compression.zstd.level": "5"},
            expect={"topics.0.error_code": "NONE"},
        )
    create(s, "CreateTopics v7 no configs", 7, s.name("plain"), {})
    create(s, "CreateTopics v7 validate_only", 7, s.name("v"), {"segment.ms": "100"}, validate_only=True)
    bad = {
        "unknown key": {"no.such.config": "1"},
        "removed key": {"message.downconversion.enable": "false"},
        "not a number": {"max.message.bytes": "big"},
        "out of range": {"segment.bytes": "1"},
        "bad cleanup.policy": {"cleanup.policy": "delete,shred"},
        "bad compression.type": {"compression.type": "LZ4"},
        "bad timestamp type": {"message.timestamp.type": "createtime"},
        "bad zstd level": {"compression.zstd.level": "99"},
        "null value": {"retention.ms": None},
        "empty cleanup.policy": {"cleanup.policy": ""},
        "negative decompressed size": {"max.decompressed.message.bytes": "-1"},
        "small decompressed size": {"max.decompressed.message.bytes": "10"},
        "remote copy lag": {"remote.copy.lag.ms": "-5"},
        "remote copy lag bytes": {"remote.copy.lag.bytes": "-2"},
        "local retention": {"local.retention.ms": "-3"},
        "tiered storage": {"remote.storage.enable": "true"},
        "tiered storage off": {"remote.storage.enable": "false"},
        "throttled replicas": {"leader.replication.throttled.replicas": "0:1"},
        "bad throttled replicas": {"follower.replication.throttled.replicas": "zero"},
        "dead letter queue": {"errors.deadletterqueue.group.enable": "true"},
        "gzip level 0": {"compression.gzip.level": "0"},
        "lz4 level 18": {"compression.lz4.level": "18"},
        "max compaction lag 0": {"max.compaction.lag.ms": "0"},
        "min lag above max": {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
        "remote copy disable": {"remote.log.copy.disable": "true"},
    }
    for what, configs in bad.items():
        create(s, f"CreateTopics v7 {what}", 7, s.name(what.replace(" ", "-").replace(".", "-")), configs)


@probe
def probe_configs_edges(s: Target) -> None:
    """Edges: an empty key list, CreateTopics of an existing topic (configs list), broker loggers
    with IncrementalAlterConfigs and AlterConfigs."""
    bid = broker_id(s)
    topic = s.name("t")
    s.create_topic(topic)
    describe(s, "DescribeConfigs v4 empty key list", 4, [(TOPIC, topic, [])], synonyms=True)
    for ver in (5, 7):
        create(s, f"CreateTopics v{ver} existing topic", ver, topic, {"retention.ms": "1"})
    incremental(s, "logger root SET INFO", 1, BROKER_LOGGER, bid, [("root", SET, "INFO")])
    incremental(s, "logger root SET bad level", 1, BROKER_LOGGER, bid, [("root", SET, "LOUD")])
    incremental(s, "logger unknown APPEND", 1, BROKER_LOGGER, bid, [("root", APPEND, "INFO")])
    incremental(s, "logger other broker", 1, BROKER_LOGGER, "77", [("root", SET, "INFO")])
    alter(s, "AlterConfigs v2 logger", 2, BROKER_LOGGER, bid, {"root": "INFO"})
    incremental(s, "logger new name SET", 1, BROKER_LOGGER, bid, [("fakebroker.conformance.x", SET, "INFO")])
    incremental(s, "logger root DELETE", 1, BROKER_LOGGER, bid, [("root", DELETE, None)])
    incremental(s, "logger root SET lower case", 1, BROKER_LOGGER, bid, [("root", SET, "info")])
    describe(s, "DescribeConfigs v4 logger empty name", 4, [(BROKER_LOGGER, "", ["root"])])
    describe(s, "DescribeConfigs v4 logger root after", 4, [(BROKER_LOGGER, bid, ["root"])], synonyms=True)


@probe
def probe_describe_configs_internal_topics(s: Target) -> None:
    """DescribeConfigs of __consumer_offsets and __transaction_state: the overrides Kafka gives
    its internal topics (FindCoordinator makes sure both exist)."""
    s.find_coordinator(s.name("g"), 0)
    s.find_coordinator(s.name("t"), 1)
    for name in ("__consumer_offsets", "__transaction_state"):
        describe(s, f"DescribeConfigs v4 {name}", 4, [(TOPIC, name, None)], synonyms=True)


@probe
def probe_group_configs(s: Target) -> None:
    """Group configs (resource type 32, KIP-848/KIP-932): DescribeConfigs v1-v4 of an id that names
    no group (every config, sources, synonyms, types), validate-only IncrementalAlterConfigs with
    good and bad values (SHARE-GROUPS.md's vector 9 and the streams and DLQ checks), the refusals
    before the values (the default group "", APPEND, a key twice, null), a change and its DELETE,
    and AlterConfigs replacing a group's settings."""
    group = s.name("g")
    for ver in (1, 2, 3, 4):
        describe(
            s,
            f"DescribeConfigs v{ver} group",
            ver,
            [(GROUP, group, None)],
            synonyms=ver >= 2,
            docs=ver >= 3,
            expect={"results.0.error_code": "NONE"},
        )
    describe(s, "DescribeConfigs v4 group some keys", 4, [(GROUP, group, ["share.delivery.count.limit", "nope"])])
    describe(s, "DescribeConfigs v4 group empty name", 4, [(GROUP, "", None)])
    values = [
        ("share.record.lock.duration.ms", "10000"),
        ("share.record.lock.duration.ms", "500"),
        ("share.delivery.count.limit", "1"),
        ("share.delivery.count.limit", "11"),
        ("share.partition.max.record.locks", "50"),
        ("share.partition.max.record.locks", "5000"),
        ("share.heartbeat.interval.ms", "4000"),
        ("share.session.timeout.ms", "44000"),
        ("share.auto.offset.reset", "EARLIEST"),
        ("share.auto.offset.reset", "none"),
        ("share.auto.offset.reset", "by_duration:PT1H"),
        ("share.auto.offset.reset", "by_duration:-PT1H"),
        ("share.isolation.level", "x"),
        ("share.renew.acknowledge.enable", "maybe"),
        ("foo", "1"),
        ("consumer.session.timeout.ms", "50000"),
        ("consumer.heartbeat.interval.ms", "16000"),
        ("consumer.assignor.offload.enable", "false"),
        ("streams.num.standby.replicas", "3"),
        ("streams.task.offset.interval.ms", "100"),
        ("streams.assignor.name", "nope"),
        ("streams.rack.aware.assignment.tags", "a,a"),
        ("streams.rack.aware.assignment.tags", "a,,b"),
        ("errors.deadletterqueue.topic.name", "__dlq"),
    ]
    for key, value in values:
        incremental(s, f"group validate_only {key}={value}", 1, GROUP, group, [(key, SET, value)], validate_only=True)
    incremental(s, "group default name", 1, GROUP, "", [("share.delivery.count.limit", SET, "3")])
    incremental(s, "group APPEND", 1, GROUP, group, [("streams.rack.aware.assignment.tags", APPEND, "a")])
    incremental(s, "group key twice", 1, GROUP, group, [("foo", SET, "1"), ("foo", SET, "2")])
    incremental(s, "group null value", 1, GROUP, group, [("share.delivery.count.limit", SET, None)])
    incremental(s, "group unknown op", 1, GROUP, group, [("share.delivery.count.limit", 9, "3")])
    for ver in (0, 1):
        incremental(
            s,
            f"group v{ver} SET",
            ver,
            GROUP,
            group,
            [("share.delivery.count.limit", SET, "3"), ("share.isolation.level", SET, "read_committed")],
            expect={"responses.0.error_code": "NONE"},
        )
        describe(s, f"after group v{ver} SET", 4, [(GROUP, group, None)], synonyms=True)
        incremental(s, f"group v{ver} DELETE", ver, GROUP, group, [("share.isolation.level", DELETE, None)])
        describe(s, f"after group v{ver} DELETE", 4, [(GROUP, group, ["share.isolation.level"])], synonyms=True)
    alter(s, "AlterConfigs v2 group", 2, GROUP, group, {"share.record.lock.duration.ms": "20000"})
    describe(s, "after AlterConfigs group", 4, [(GROUP, group, None)], synonyms=True)
    alter(s, "AlterConfigs v2 group unknown key", 2, GROUP, group, {"foo": "1"})
    alter(s, "AlterConfigs v2 group clear", 2, GROUP, group, {})
    describe(s, "after AlterConfigs group clear", 4, [(GROUP, group, None)], synonyms=True)
