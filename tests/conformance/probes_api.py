"""Probes of ApiVersions and FindCoordinator."""

from __future__ import annotations

from fakebroker.apis.api_versions import advertised

from .probing import API_VERSIONS, FIND_COORDINATOR, Target, error_name, probe

DESCRIBE_CLUSTER = 60

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31


@probe
def probe_api_versions(s: Target) -> None:
    """ApiVersions v3 and v4: the version window of every API fakebroker advertises (Kafka's
    other APIs are left out: which ones are missing is the issue's list, not a probe's), and the
    supported and finalized features."""
    ours = {a["api_key"] for a in advertised()}
    for ver in (3, 4, 5):
        r = s.req(None, API_VERSIONS, ver, {"client_software_name": "conformance", "client_software_version": "1"})
        s.record(
            f"ApiVersions v{ver}",
            {
                "error_code": error_name(r["error_code"]),
                "api_keys": {
                    str(k["api_key"]): [k["min_version"], k["max_version"]]
                    for k in r["api_keys"]
                    if k["api_key"] in ours
                },
                "supported_features": {
                    f["name"]: [f["min_version"], f["max_version"]] for f in r["supported_features"]
                },
                "finalized_features": {
                    f["name"]: [f["min_version_level"], f["max_version_level"]] for f in r["finalized_features"]
                },
            },
            API_VERSIONS,
            ver,
            expect={"error_code": "NONE", "api_keys.0": [0, 13], "api_keys.18": [0, 5], "api_keys.26": [0, 5]},
        )


@probe
def probe_api_versions_checks(s: Target) -> None:
    """ApiVersions' own refusals: v5's cluster and node id (KIP-1242: REBOOTSTRAP_REQUIRED when
    the client reached another cluster or broker, INVALID_REQUEST when only one is given), a
    client software name outside KIP-511's pattern, and v0-v2's plain answer."""
    described = s.req(None, DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False})
    cluster_id, node_id = described["cluster_id"], described["brokers"][0]["broker_id"]
    base = {"client_software_name": "conformance", "client_software_version": "1"}
    cases = [
        ("right cluster and node", {"cluster_id": cluster_id, "node_id": node_id}, "NONE"),
        ("another cluster", {"cluster_id": "AAAAAAAAAAAAAAAAAAAAAA", "node_id": node_id}, "REBOOTSTRAP_REQUIRED"),
        ("another node", {"cluster_id": cluster_id, "node_id": node_id + 7}, "REBOOTSTRAP_REQUIRED"),
        ("cluster id without node id", {"cluster_id": cluster_id, "node_id": -1}, "INVALID_REQUEST"),
        ("node id without cluster id", {"cluster_id": None, "node_id": node_id}, "INVALID_REQUEST"),
    ]
    for what, ids, error in cases:
        r = s.req(None, API_VERSIONS, 5, {**base, **ids})
        s.record(
            f"ApiVersions v5 {what}",
            {"error_code": error_name(r["error_code"]), "keys": len(r["api_keys"]) > 0},
            expect={"error_code": error},
        )
    for ver in (3, 4):
        r = s.req(None, API_VERSIONS, ver, {"client_software_name": "bad name!", "client_software_version": "1"})
        s.record(
            f"ApiVersions v{ver} bad software name",
            {"error_code": error_name(r["error_code"]), "keys": r["api_keys"]},
            expect={"error_code": "INVALID_REQUEST"},
        )
    for ver in (0, 1, 2):
        r = s.req(None, API_VERSIONS, ver, {})
        s.record(
            f"ApiVersions v{ver}",
            {"error_code": error_name(r["error_code"]), "keys": len(r["api_keys"]) > 0},
            expect={"error_code": "NONE"},
        )


@probe
def probe_find_coordinator(s: Target) -> None:
    """FindCoordinator v0-v6 for a group and a transactional id (after the internal topics exist:
    a fresh Kafka answers COORDINATOR_NOT_AVAILABLE first, which the broker fixture waits out)."""
    group, tid = s.name("g"), s.name("t")
    for ver in range(7):
        for key_type, key in ((0, group), (1, tid)):
            if ver == 0 and key_type == 1:
                continue  # v0 has no key_type
            if ver <= 3:
                body = {"key": key, "key_type": key_type}
                expect = {"error_code": "NONE"}
            else:
                body = {"key_type": key_type, "coordinator_keys": [key]}
                expect = {"coordinators.0.error_code": "NONE", "coordinators.0.key": key}
            s.req(f"FindCoordinator v{ver} key_type={key_type}", FIND_COORDINATOR, ver, body, expect=expect)
    s.req(
        "FindCoordinator v6 two transactional ids",
        FIND_COORDINATOR,
        6,
        {"key_type": 1, "coordinator_keys": [tid, s.name("t2")]},
        expect={"coordinators.0.error_code": "NONE", "coordinators.1.error_code": "NONE"},
    )
    s.req(
        "FindCoordinator v3 empty transactional id",
        FIND_COORDINATOR,
        3,
        {"key": "", "key_type": 1},
        expect={"error_code": "NONE"},
    )
    s.req(
        "FindCoordinator v4 unknown key_type",
        FIND_COORDINATOR,
        4,
        {"key_type": 9, "coordinator_keys": [tid]},
        expect={"coordinators.0.error_code": "INVALID_REQUEST"},
    )


@probe
def probe_acls(s: Target) -> None:
    """DescribeAcls, CreateAcls and DeleteAcls v1-v3 on a broker without an authorizer (both are):
    SECURITY_DISABLED, as Kafka's AclApis answers, rather than a closed connection."""
    topic = s.name("acl-t")
    binding = {
        "resource_type": 2,  # TOPIC
        "resource_name": topic,
        "resource_pattern_type": 3,  # LITERAL
        "principal": "User:alice",
        "host": "*",
        "operation": 3,  # READ
        "permission_type": 3,  # ALLOW
    }
    filter_ = {
        "resource_type_filter": 2,
        "resource_name_filter": topic,
        "pattern_type_filter": 3,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,  # ANY
        "permission_type": 1,  # ANY
    }
    for ver in (1, 2, 3):
        s.req(
            f"DescribeAcls v{ver}",
            DESCRIBE_ACLS,
            ver,
            filter_,
            expect={"error_code": "SECURITY_DISABLED"},
        )
        s.req(
            f"CreateAcls v{ver}",
            CREATE_ACLS,
            ver,
            {"creations": [binding]},
            expect={"results.0.error_code": "SECURITY_DISABLED"},
        )
        s.req(
            f"DeleteAcls v{ver}",
            DELETE_ACLS,
            ver,
            {"filters": [filter_]},
            expect={"filter_results.0.error_code": "SECURITY_DISABLED"},
        )
