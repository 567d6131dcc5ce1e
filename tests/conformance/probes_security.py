"""Probes of the secured pair (issue 37): a SASL_SSL listener with PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512, StandardAuthorizer with ``super.users=User:admin`` and
``allow.everyone.if.no.acl.found=false``, delegation tokens on (see conftest.py). Every probe
here is ``@probe(secured=True)``: its target's main connection is TLS, logged in as ``admin``.

- the SASL exchange itself: SaslHandshake's mechanisms (Kafka's come from a Java HashSet, in
  its order), an unknown mechanism, PLAIN and SCRAM logins and their failures with Kafka's texts
  (error messages are compared as they are here), the state errors and the requests that close
  a connection that has not authenticated ("closed");
- ACL administration as admin: CreateAcls (valid bindings and the ones Kafka refuses, with its
  texts), DescribeAcls and DeleteAcls with their filters;
- what a user who is not a super user may do, with and without ACLs: Metadata, Produce, Fetch,
  ListOffsets, the group APIs, InitProducerId, CreateTopics, DeleteTopics, DescribeConfigs,
  DescribeCluster and the authorized-operations bit sets;
- DescribeUserScramCredentials / AlterUserScramCredentials, and the delegation token APIs with
  a login by token.

ACLs name this run's resources or a principal of this run's, and every ACL a probe creates is
deleted when it ends, so probes stay independent. Kafka applies ACLs through its metadata log,
a moment after CreateAcls answers: :func:`granted` waits (bounded) until DescribeAcls shows
them, and at the end until it no longer does. Token ids and HMACs are written as placeholders,
token times relative to the token's issue time (minutes), SCRAM's server messages by their
shape (nonce, salt, iterations; the server signature checked).
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from fakebroker.protocol import records as R
from tests.raw_client import RawClient, SaslError

from .probes_admin import brokers_named, node_id
from .probing import (
    API_VERSIONS,
    CREATE_TOPICS,
    DELETE_GROUPS,
    DESCRIBE_GROUPS,
    FIND_COORDINATOR,
    INIT_PRODUCER_ID,
    JOIN_GROUP,
    METADATA,
    OFFSET_COMMIT,
    PRODUCE,
    ProbeError,
    Target,
    offset_fetch,
    probe,
)

SASL_HANDSHAKE, SASL_AUTHENTICATE, LIST_GROUPS, DELETE_TOPICS = 17, 36, 16, 20
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS, DESCRIBE_CONFIGS = 29, 30, 31, 32
CREATE_TOKEN, RENEW_TOKEN, EXPIRE_TOKEN, DESCRIBE_TOKENS = 38, 39, 40, 41
DESCRIBE_SCRAM, ALTER_SCRAM, DESCRIBE_CLUSTER = 50, 51, 60

# Kafka's codes (org.apache.kafka.common.resource / acl)
RESOURCE = {"UNKNOWN": 0, "ANY": 1, "TOPIC": 2, "GROUP": 3, "CLUSTER": 4, "TRANSACTIONAL_ID": 5, "TOKEN": 6, "USER": 7}
PATTERN = {"UNKNOWN": 0, "ANY": 1, "MATCH": 2, "LITERAL": 3, "PREFIXED": 4}
OPERATION = {
    "UNKNOWN": 0,
    "ANY": 1,
    "ALL": 2,
    "READ": 3,
    "WRITE": 4,
    "CREATE": 5,
    "DELETE": 6,
    "ALTER": 7,
    "DESCRIBE": 8,
    "CLUSTER_ACTION": 9,
    "DESCRIBE_CONFIGS": 10,
    "ALTER_CONFIGS": 11,
    "IDEMPOTENT_WRITE": 12,
    "CREATE_TOKENS": 13,
    "DESCRIBE_TOKENS": 14,
}
PERMISSION = {"UNKNOWN": 0, "ANY": 1, "DENY": 2, "ALLOW": 3}
CLUSTER = "kafka-cluster"
ALL_TOPICS = None
ZERO_UUID = uuid.UUID(int=0)
ACL_TIMEOUT = 15.0  # s, until Kafka's authorizer shows (or no longer shows) an ACL change


def ops_bits(*names: str) -> int:
    """An authorized-operations bit set as Kafka writes it (bit = the operation's code)."""
    return sum(1 << OPERATION[n] for n in names)


# -- steps on connections of the probe's own --------------------------------------------------------


def outcome(client: RawClient, api: int, ver: int, body: dict) -> dict | str:
    """The answer, ``"closed"`` if the broker closed the connection instead, ``"timeout"`` if it
    did neither."""
    try:
        return client.request(api, ver, body).to_dict()
    except TimeoutError:
        return "timeout"
    except (OSError, EOFError):
        return "closed"


# AuthHelper's denial names the request by its Java toString: its connection, a JVM object's
# identity hash, buffer positions, and for a request forwarded to the controller its envelope
REQUEST_TEXT = re.compile(r"^Request Request\(.*\) needs (\w+) permission\.$")


def norm(s: Target, answer: dict) -> Any:
    """The target's normalisation, but error messages are kept (the request a denial names is
    written ``<request>``: :data:`REQUEST_TEXT`) and so are ACLs' hosts (as ``acl_host``)."""

    def keep(obj: Any, key: str | None = None) -> Any:
        if isinstance(obj, dict):
            acl = "principal" in obj
            return {("acl_host" if acl and k == "host" else k): keep(v, k) for k, v in obj.items()}
        if isinstance(obj, list):
            return [keep(x) for x in obj]
        if key == "error_message" and isinstance(obj, str):
            return REQUEST_TEXT.sub(r"Request <request> needs \1 permission.", obj)
        return obj

    return s.norm(keep(answer), messages=True)


def step(
    s: Target,
    client: RawClient,
    label: str,
    api: int,
    ver: int,
    body: dict,
    *,
    expect: dict | None = None,
    shape: Callable[[dict], Any] | None = None,
    before: Callable[[dict], dict] | None = None,
) -> dict | str:
    """One recorded request on ``client``, its error messages kept (they are Kafka's contract
    in these answers); ``before`` rewrites the answer before it is normalised, ``shape`` after."""
    answer = outcome(client, api, ver, body)
    if isinstance(answer, str):
        normalised: Any = answer
    else:
        normalised = norm(s, before(answer) if before is not None else answer)
        normalised = shape(normalised) if shape is not None else normalised
    s.record(label, normalised, api, ver, expect)
    return answer


def fresh_step(s: Target, label: str, api: int, ver: int, body: dict, user: str = "admin", **kw: Any) -> dict | str:
    """A :func:`step` on a new connection of ``user``'s (Kafka closes a connection on a request
    it cannot read, such as an ACL binding or filter with an UNKNOWN code)."""
    with s.connect(user) as client:
        return step(s, client, label, api, ver, body, **kw)


def handshake(s: Target, client: RawClient, label: str, mechanism: str, ver: int = 1, **kw: Any) -> dict | str:
    return step(s, client, label, SASL_HANDSHAKE, ver, {"mechanism": mechanism}, **kw)


def authenticate(s: Target, client: RawClient, label: str, token: bytes, ver: int = 2, **kw: Any) -> dict | str:
    return step(s, client, label, SASL_AUTHENTICATE, ver, {"auth_bytes": token}, **kw)


def metadata_body(topics: list[str] | None = ALL_TOPICS, *, topic_ops: bool = False, cluster_ops: bool = False) -> dict:
    return {
        "topics": None if topics is None else [{"name": t, "topic_id": ZERO_UUID} for t in topics],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": cluster_ops,
        "include_topic_authorized_operations": topic_ops,
    }


def closed_after(s: Target, client: RawClient, label: str) -> None:
    """A Metadata request on a connection the broker should have closed: recorded ``closed``."""
    step(s, client, label, METADATA, 12, metadata_body([]), expect={"": "closed"})


def plain_token(user: str, password: str, authzid: str = "") -> bytes:
    return f"{authzid}\0{user}\0{password}".encode()


def password(s: Target, user: str) -> str:
    assert s.security is not None
    return s.security.users[user]


def server_first_shape(raw: bytes, nonce: str) -> dict:
    """SCRAM's server-first (``r=<client nonce><server nonce>,s=<salt>,i=<iterations>``) by its
    shape: the nonce extends the client's, the salt is base64, the iteration count as it is."""
    fields = dict(part.split("=", 1) for part in raw.decode(errors="replace").split(",") if "=" in part)
    r, salt = fields.get("r", ""), fields.get("s")
    return {
        "keys": list(fields),
        "r": "<client nonce><server nonce>" if r.startswith(nonce) and len(r) > len(nonce) else r,
        "s": "<salt>" if salt and base64.b64decode(salt) else salt,
        "i": fields.get("i"),
    }


def scram_login(
    s: Target,
    client: RawClient,
    label: str,
    mechanism: str,
    user: str,
    pw: str,
    *,
    expect: dict | None = None,
    **kw: Any,
) -> dict | str | None:
    """A recorded SCRAM exchange (handshake, client-first, client-final); the final answer, or
    the first one that failed (``expect`` is checked on that last step)."""
    scram = RawClient.scram(mechanism, user, pw, **kw)
    shake = handshake(s, client, f"{label}: SaslHandshake {mechanism}", mechanism)
    if isinstance(shake, str) or shake["error_code"]:
        return shake
    first = outcome(client, SASL_AUTHENTICATE, 2, {"auth_bytes": scram.first()})
    if isinstance(first, str):
        s.record(f"{label}: client-first", first, SASL_AUTHENTICATE, 2)
        return first
    raw = bytes(first["auth_bytes"])
    shown = norm(s, first)
    if not first["error_code"]:
        shown["auth_bytes"] = server_first_shape(raw, scram.nonce)
    s.record(f"{label}: client-first", shown, SASL_AUTHENTICATE, 2, expect if first["error_code"] else None)
    if first["error_code"]:
        return first
    final = outcome(client, SASL_AUTHENTICATE, 2, {"auth_bytes": scram.final(raw)})
    if isinstance(final, str):
        s.record(f"{label}: client-final", final, SASL_AUTHENTICATE, 2)
        return final
    signature = bytes(final["auth_bytes"])
    shown = norm(s, final)
    if not final["error_code"]:
        shown["auth_bytes"] = {"server signature verifies": scram.verify(signature)}
    s.record(f"{label}: client-final", shown, SASL_AUTHENTICATE, 2, expect)
    return final


# -- ACLs ---------------------------------------------------------------------------------------------


def binding(
    resource: str, name: str, pattern: str, principal: str, operation: str, permission: str = "ALLOW", host: str = "*"
) -> dict:
    return {
        "resource_type": RESOURCE[resource],
        "resource_name": name,
        "resource_pattern_type": PATTERN[pattern],
        "principal": principal,
        "host": host,
        "operation": OPERATION[operation],
        "permission_type": PERMISSION[permission],
    }


def acl_filter(
    resource: str = "ANY",
    name: str | None = None,
    pattern: str = "ANY",
    principal: str | None = None,
    operation: str = "ANY",
    permission: str = "ANY",
    host: str | None = None,
) -> dict:
    return {
        "resource_type_filter": RESOURCE[resource],
        "resource_name_filter": name,
        "pattern_type_filter": PATTERN[pattern],
        "principal_filter": principal,
        "host_filter": host,
        "operation": OPERATION[operation],
        "permission_type": PERMISSION[permission],
    }


def exact_filter(b: dict) -> dict:
    """The filter that matches exactly one binding."""
    return {
        "resource_type_filter": b["resource_type"],
        "resource_name_filter": b["resource_name"],
        "pattern_type_filter": b["resource_pattern_type"],
        "principal_filter": b["principal"],
        "host_filter": b["host"],
        "operation": b["operation"],
        "permission_type": b["permission_type"],
    }


def count_acls(client: RawClient, flt: dict) -> int:
    answer = client.request(DESCRIBE_ACLS, 3, flt).to_dict()
    if answer["error_code"]:
        raise ProbeError(f"DescribeAcls {flt}: error {answer['error_code']}: {answer['error_message']}")
    return sum(len(r["acls"]) for r in answer["resources"])


def wait_acls(s: Target, client: RawClient, bindings: list[dict], present: bool) -> None:
    """Until DescribeAcls shows every binding (``present``) or none of them (Kafka applies ACL
    changes from its metadata log, a moment after it answers)."""
    deadline = time.monotonic() + ACL_TIMEOUT
    while True:
        counts = [count_acls(client, exact_filter(b)) for b in bindings]
        if all((c == 1) if present else (c == 0) for c in counts):
            return
        if time.monotonic() > deadline:
            raise ProbeError(f"{s.kind}: ACLs {'not shown' if present else 'still shown'} after {ACL_TIMEOUT} s")
        time.sleep(0.05)


@contextmanager
def granted(s: Target, *bindings: dict) -> Iterator[None]:
    """These ACLs, created by admin (not recorded) for the block and deleted after it."""
    admin = s.connect()
    try:
        created = admin.request(CREATE_ACLS, 3, {"creations": list(bindings)}).to_dict()
        errors = [r for r in created["results"] if r["error_code"]]
        if errors:
            raise ProbeError(f"{s.kind}: CreateAcls: {errors}")
        wait_acls(s, admin, list(bindings), True)
        try:
            yield
        finally:
            admin.request(DELETE_ACLS, 3, {"filters": [exact_filter(b) for b in bindings]})
            wait_acls(s, admin, list(bindings), False)
    finally:
        admin.close()


def sorted_resources(answer: dict) -> dict:
    """DescribeAcls' resources and their ACLs in one order. Kafka groups them in a HashMap keyed
    by ResourcePattern, a HashSet of entries each (``DescribeAclsResponse.aclsResources``), whose
    hashes mix in enums' identity hashes: their order changes from one broker process to the
    next (a client reads them as sets)."""
    resources = [
        {
            **r,
            "acls": sorted(
                r["acls"], key=lambda a: (a["principal"], a["acl_host"], a["operation"], a["permission_type"])
            ),
        }
        for r in answer.get("resources", [])
    ]
    key = lambda r: (r["resource_type"], r["pattern_type"], r["resource_name"])  # noqa: E731
    return {**answer, "resources": sorted(resources, key=key)}


# -- the SASL exchange --------------------------------------------------------------------------------


@probe(secured=True)
def probe_security_sasl_handshake(s: Target) -> None:
    """SaslHandshake: ApiVersions first, the enabled mechanisms (in Kafka's HashSet order), a
    mechanism not enabled, a wrong case, v0; a second handshake before authenticating."""
    with s.connect(None) as c:
        versions = outcome(c, API_VERSIONS, 3, {"client_software_name": "conformance", "client_software_version": "1"})
        sasl = {}
        if isinstance(versions, dict):
            sasl = {k["api_key"]: (k["min_version"], k["max_version"]) for k in versions["api_keys"]}
        s.record("ApiVersions before a handshake: the SASL APIs", {k: sasl.get(k) for k in (17, 36)}, API_VERSIONS, 3)
        handshake(s, c, "SaslHandshake v1 PLAIN after ApiVersions", "PLAIN", expect={"error_code": "NONE"})
        handshake(
            s, c, "SaslHandshake v1 again", "PLAIN", expect={"error_code": "ILLEGAL_SASL_STATE"}
        )  # a second handshake while authenticating
        closed_after(s, c, "after the second handshake")
    with s.connect(None) as c:
        handshake(
            s,
            c,
            "SaslHandshake v1 GSSAPI",
            "GSSAPI",
            expect={
                "error_code": "UNSUPPORTED_SASL_MECHANISM",
                "mechanisms": ["PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256"],
            },
        )
        closed_after(s, c, "after an unsupported mechanism")
    with s.connect(None) as c:
        handshake(
            s, c, "SaslHandshake v1 plain (lower case)", "plain", expect={"error_code": "UNSUPPORTED_SASL_MECHANISM"}
        )
        closed_after(s, c, "after a lower-case mechanism")
    with s.connect(None) as c:
        handshake(s, c, "SaslHandshake v1 OAUTHBEARER (not enabled)", "OAUTHBEARER")
    with s.connect(None) as c:
        handshake(s, c, "SaslHandshake v0 PLAIN", "PLAIN", ver=0, expect={"error_code": "NONE"})
    with s.connect(None) as c:
        handshake(s, c, "SaslHandshake v1 SCRAM-SHA-512", "SCRAM-SHA-512", expect={"error_code": "NONE"})
        authenticate(
            s, c, "SaslAuthenticate v2 empty client-first", b"", expect={"error_code": "SASL_AUTHENTICATION_FAILED"}
        )
        closed_after(s, c, "after the empty client-first")


@probe(secured=True)
def probe_security_sasl_plain(s: Target) -> None:
    """PLAIN: a login with each SaslAuthenticate version, a wrong password, an unknown user, an
    authorization id of another user, and tokens that are not PLAIN's shape; each failure
    closes the connection."""
    for ver in (0, 1, 2):
        with s.connect(None) as c:
            handshake(s, c, f"v{ver}: SaslHandshake", "PLAIN")
            authenticate(
                s,
                c,
                f"v{ver}: SaslAuthenticate alice",
                plain_token("alice", password(s, "alice")),
                ver,
                expect={"error_code": "NONE", "error_message": "", "auth_bytes": "<0 bytes>"},
            )
            step(
                s,
                c,
                f"v{ver}: Metadata after the login",
                METADATA,
                12,
                metadata_body([]),
                expect={"error_code": "NONE"},
            )
    invalid = "Authentication failed: Invalid username or password"
    failures = [
        ("wrong password", plain_token("alice", "not-her-password"), invalid),
        ("unknown user", plain_token("nobody", "secret"), invalid),
        ("authzid of another user", plain_token("alice", password(s, "alice"), authzid="admin"), None),
        ("authzid of the user", plain_token("alice", password(s, "alice"), authzid="alice"), None),
        ("no NUL", b"alice", None),
        ("one NUL", b"alice\0secret", None),
        ("empty user", plain_token("", "secret"), None),
        ("empty password", plain_token("alice", ""), None),
    ]
    for label, token, message in failures:
        with s.connect(None) as c:
            handshake(s, c, f"{label}: SaslHandshake", "PLAIN")
            expect = {"error_code": "SASL_AUTHENTICATION_FAILED", "error_message": message} if message else None
            answer = authenticate(s, c, f"{label}: SaslAuthenticate", token, expect=expect)
            if isinstance(answer, dict) and answer["error_code"]:
                closed_after(s, c, f"{label}: then")


@probe(secured=True)
def probe_security_sasl_scram(s: Target) -> None:
    """SCRAM-SHA-256 and SCRAM-SHA-512: a login (the server-first's shape, the server's
    signature), a wrong password (at the second round), an unknown user (at the first), a
    client-first that is not SCRAM's, and an authorization id of another user."""
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        refused = {
            "error_code": "SASL_AUTHENTICATION_FAILED",
            "error_message": "Authentication failed during authentication due to invalid credentials with SASL "
            f"mechanism {mechanism}",
        }
        with s.connect(None) as c:
            done = {"error_code": "NONE", "error_message": "", "auth_bytes": {"server signature verifies": True}}
            scram_login(s, c, f"{mechanism} bob", mechanism, "bob", password(s, "bob"), expect=done)
            step(s, c, f"{mechanism} bob: Metadata after the login", METADATA, 12, metadata_body([]))
        with s.connect(None) as c:
            scram_login(s, c, f"{mechanism} wrong password", mechanism, "bob", "not-his-password", expect=refused)
            closed_after(s, c, f"{mechanism} wrong password: then")
        with s.connect(None) as c:
            scram_login(s, c, f"{mechanism} unknown user", mechanism, "nobody", "secret", expect=refused)
            closed_after(s, c, f"{mechanism} unknown user: then")
        with s.connect(None) as c:
            other = {
                "error_code": "SASL_AUTHENTICATION_FAILED",
                "error_message": "Authentication failed: Client requested an authorization id that is different "
                "from username",
            }
            scram_login(
                s, c, f"{mechanism} authzid admin", mechanism, "bob", password(s, "bob"), authzid="admin", expect=other
            )
        with s.connect(None) as c:
            handshake(s, c, f"{mechanism} garbage: SaslHandshake", mechanism)
            authenticate(s, c, f"{mechanism} garbage: client-first", b"hello")
            closed_after(s, c, f"{mechanism} garbage: then")


@probe(secured=True)
def probe_security_sasl_state(s: Target) -> None:
    """Requests out of SASL's order: before any handshake (closed), between the handshake and
    the login, SaslAuthenticate without a handshake, and SaslHandshake/SaslAuthenticate after a
    completed login."""
    with s.connect(None) as c:
        step(s, c, "Metadata before authenticating", METADATA, 12, metadata_body([]), expect={"": "closed"})
    with s.connect(None) as c:
        outcome(c, API_VERSIONS, 3, {"client_software_name": "conformance", "client_software_version": "1"})
        step(s, c, "Metadata after ApiVersions", METADATA, 12, metadata_body([]), expect={"": "closed"})
    with s.connect(None) as c:
        outcome(c, API_VERSIONS, 3, {"client_software_name": "conformance", "client_software_version": "1"})
        step(
            s,
            c,
            "ApiVersions twice",
            API_VERSIONS,
            3,
            {"client_software_name": "conformance", "client_software_version": "1"},
        )
    with s.connect(None) as c:
        authenticate(
            s,
            c,
            "SaslAuthenticate without a handshake",
            plain_token("alice", password(s, "alice")),
            expect={"": "closed"},
        )
    with s.connect(None) as c:
        handshake(s, c, "handshake then Metadata: SaslHandshake", "PLAIN")
        step(s, c, "handshake then Metadata: Metadata", METADATA, 12, metadata_body([]))
        closed_after(s, c, "handshake then Metadata: then")
    with s.connect(None) as c:
        handshake(s, c, "handshake then ApiVersions: SaslHandshake", "PLAIN")
        step(
            s,
            c,
            "handshake then ApiVersions: ApiVersions",
            API_VERSIONS,
            3,
            {"client_software_name": "conformance", "client_software_version": "1"},
            shape=lambda a: {
                k: v for k, v in a.items() if k not in ("api_keys", "supported_features", "finalized_features")
            },
            expect={"error_code": "ILLEGAL_SASL_STATE"},
        )
    with s.connect("alice") as c:
        step(
            s,
            c,
            "logged in: SaslAuthenticate",
            SASL_AUTHENTICATE,
            2,
            {"auth_bytes": b"\0alice\0x"},
            expect={
                "error_code": "ILLEGAL_SASL_STATE",
                "error_message": "SaslAuthenticate request received after successful authentication",
            },
        )
        step(s, c, "logged in: Metadata after SaslAuthenticate", METADATA, 12, metadata_body([]))
    with s.connect("alice") as c:
        handshake(s, c, "logged in: SaslHandshake PLAIN", "PLAIN", expect={"error_code": "ILLEGAL_SASL_STATE"})
        step(
            s,
            c,
            "logged in: Metadata after SaslHandshake",
            METADATA,
            12,
            metadata_body([]),
            expect={"error_code": "NONE"},
        )


# -- ACL administration ------------------------------------------------------------------------------


@probe(secured=True)
def probe_security_create_acls(s: Target) -> None:
    """CreateAcls as admin (v1-v3): bindings Kafka takes (literal, prefixed, wildcard names and
    principals, every resource type) and the ones it refuses: INVALID_REQUEST and its text (a
    cluster not named kafka-cluster, a principal without a type, an empty name), the whole
    request UNKNOWN_SERVER_ERROR for a binding its broker cannot build (MATCH or ANY patterns,
    ANY types, operations and permissions; a valid binding beside one is not created), a closed
    connection for UNKNOWN codes; as alice CLUSTER_AUTHORIZATION_FAILED first. Then DescribeAcls
    shows what was created, and DeleteAcls removes it."""
    who = f"User:{s.name('p')}"
    t = s.name("t")
    valid = [
        binding("TOPIC", t, "LITERAL", who, "READ"),
        binding("TOPIC", s.prefix, "PREFIXED", who, "WRITE", "DENY"),
        binding("TOPIC", "*", "LITERAL", who, "DESCRIBE"),
        binding("GROUP", s.name("g"), "LITERAL", who, "ALL"),
        binding("CLUSTER", CLUSTER, "LITERAL", who, "IDEMPOTENT_WRITE"),
        binding("TRANSACTIONAL_ID", s.name("x"), "PREFIXED", who, "WRITE"),
        binding("TOKEN", s.name("token"), "LITERAL", who, "DESCRIBE"),
        binding("USER", f"User:{s.name('u')}", "LITERAL", who, "CREATE_TOKENS"),
        binding("TOPIC", t, "LITERAL", who, "CLUSTER_ACTION"),  # not an operation of topics: taken
        binding("TOPIC", t, "LITERAL", "User:*", "READ", host="127.0.0.1"),
    ]
    # Kafka's broker cannot build a binding with a MATCH/ANY pattern or an ANY type, operation or
    # permission: UNKNOWN_SERVER_ERROR without a message; an UNKNOWN code does not parse: closed
    unbuildable = {"results.0.error_code": "UNKNOWN_SERVER_ERROR", "results.0.error_message": None}
    closed = {"": "closed"}
    no_colon = "(no colon is present separating the principal type from the principal name)"
    invalid = [
        ("MATCH pattern", binding("TOPIC", t, "MATCH", who, "READ"), unbuildable),
        ("ANY pattern", binding("TOPIC", t, "ANY", who, "READ"), unbuildable),
        ("UNKNOWN pattern", binding("TOPIC", t, "UNKNOWN", who, "READ"), closed),
        ("ANY resource type", binding("ANY", t, "LITERAL", who, "READ"), unbuildable),
        ("ANY operation", binding("TOPIC", t, "LITERAL", who, "ANY"), unbuildable),
        ("UNKNOWN operation", binding("TOPIC", t, "LITERAL", who, "UNKNOWN"), closed),
        ("ANY permission", binding("TOPIC", t, "LITERAL", who, "READ", "ANY"), unbuildable),
        (
            "cluster not kafka-cluster",
            binding("CLUSTER", "other", "LITERAL", who, "ALTER"),
            {"results.0.error_message": "The only valid name for the CLUSTER resource is kafka-cluster"},
        ),
        (
            "principal without a type",
            binding("TOPIC", t, "LITERAL", s.name("p"), "READ"),
            {"results.0.error_message": f"Could not parse principal from `{s.name('p')}` {no_colon}"},
        ),
        ("empty principal", binding("TOPIC", t, "LITERAL", "", "READ"), {"results.0.error_code": "INVALID_REQUEST"}),
        (
            "empty name",
            binding("TOPIC", "", "LITERAL", who, "READ"),
            {"results.0.error_code": "INVALID_REQUEST", "results.0.error_message": "Invalid empty resource name"},
        ),
        ("prefixed wildcard", binding("TOPIC", "*", "PREFIXED", who, "READ"), {"results.0.error_code": "NONE"}),
        (
            "prefixed with a star",
            binding("TOPIC", f"{s.prefix}*", "PREFIXED", who, "READ"),
            {"results.0.error_code": "NONE"},
        ),
    ]
    admin = s.client
    try:
        for label, b, expect in invalid:
            fresh_step(s, f"CreateAcls v3 {label}", CREATE_ACLS, 3, {"creations": [b]}, expect=expect)
        step(
            s,
            admin,
            "CreateAcls v3 valid bindings",
            CREATE_ACLS,
            3,
            {"creations": valid},
            expect={f"results.{i}.error_code": "NONE" for i in range(len(valid))},
        )
        wait_acls(s, admin, [b for b in valid if b["resource_type"] != RESOURCE["USER"]], True)
        step(
            s,
            admin,
            "CreateAcls v1 a literal topic",
            CREATE_ACLS,
            1,
            {"creations": [binding("TOPIC", s.name("v1"), "LITERAL", who, "READ")]},
        )
        step(
            s,
            admin,
            "CreateAcls v3 the same binding again",
            CREATE_ACLS,
            3,
            {"creations": valid[:1]},
            expect={"results.0.error_code": "NONE"},
        )
        step(s, admin, "CreateAcls v3 none", CREATE_ACLS, 3, {"creations": []})
        fresh_step(
            s,
            "CreateAcls v3 MATCH pattern as alice",
            CREATE_ACLS,
            3,
            {"creations": [invalid[0][1]]},
            user="alice",
            expect={"results.0.error_code": "CLUSTER_AUTHORIZATION_FAILED"},
        )
        mixed = [binding("TOPIC", s.name("mixed"), "LITERAL", who, "READ"), invalid[0][1], invalid[7][1]]
        fresh_step(
            s,
            "CreateAcls v3 valid, MATCH, other cluster",
            CREATE_ACLS,
            3,
            {"creations": mixed},
            expect={f"results.{i}.error_code": "UNKNOWN_SERVER_ERROR" for i in range(3)},
        )
        fresh_step(
            s,
            "DescribeAcls v3 after the mixed request",
            DESCRIBE_ACLS,
            3,
            exact_filter(mixed[0]),
            expect={"error_message": "", "resources": []},
        )
        wait_acls(s, admin, [binding("TOPIC", s.name("v1"), "LITERAL", who, "READ")], True)
        step(
            s,
            admin,
            "DescribeAcls v3 the principal's",
            DESCRIBE_ACLS,
            3,
            acl_filter(principal=who),
            shape=sorted_resources,
        )
    finally:
        step(
            s,
            admin,
            "DeleteAcls v3 the principal's",
            DELETE_ACLS,
            3,
            {"filters": [acl_filter(principal=who)]},
            shape=sorted_matches,
        )
        wait_acls(s, admin, valid[:1], False)
    step(s, admin, "DescribeAcls v3 after the deletion", DESCRIBE_ACLS, 3, acl_filter(principal=who))


@probe(secured=True)
def probe_security_describe_acls(s: Target) -> None:
    """DescribeAcls' filters over one topic's ACLs: literal, prefixed, wildcard and the MATCH
    filter that finds all three for a name; by principal, host, operation and permission; the
    filters Kafka refuses (UNKNOWN pattern type, resource type, operation: the connection closes).
    The resources and their ACLs are compared sorted (:func:`sorted_resources`)."""
    p1, p2 = f"User:{s.name('p1')}", f"User:{s.name('p2')}"
    t = s.name("topic")
    acls = [
        binding("TOPIC", t, "LITERAL", p1, "READ"),
        binding("TOPIC", t, "LITERAL", p2, "WRITE", "DENY"),
        binding("TOPIC", s.prefix, "PREFIXED", p1, "DESCRIBE"),
        binding("TOPIC", s.name("top"), "PREFIXED", p2, "ALL", host="127.0.0.1"),
        binding("TOPIC", "*", "LITERAL", p2, "DESCRIBE_CONFIGS"),
        binding("GROUP", t, "LITERAL", p1, "READ"),
        binding("CLUSTER", CLUSTER, "LITERAL", p1, "DESCRIBE"),
    ]
    filters = [
        ("p1's", acl_filter(principal=p1)),
        ("p2's", acl_filter(principal=p2)),
        ("literal topic", acl_filter("TOPIC", t, "LITERAL")),
        ("literal topic of p2", acl_filter("TOPIC", t, "LITERAL", p2)),
        ("MATCH topic of p2", acl_filter("TOPIC", t, "MATCH", p2)),
        ("MATCH topic of p1", acl_filter("TOPIC", t, "MATCH", p1)),
        ("ANY pattern, the name", acl_filter("ANY", t, "ANY", p1)),
        ("prefixed, the prefix", acl_filter("TOPIC", s.prefix, "PREFIXED", p1)),
        ("prefixed, a longer name", acl_filter("TOPIC", t, "PREFIXED", p1)),
        ("p2's DENY", acl_filter(principal=p2, permission="DENY")),
        ("p2's ALLOW", acl_filter(principal=p2, permission="ALLOW")),
        ("p1's READ", acl_filter(principal=p1, operation="READ")),
        ("p2's on host 127.0.0.1", acl_filter(principal=p2, host="127.0.0.1")),
        ("p2's on host *", acl_filter(principal=p2, host="*")),
        ("p1's cluster", acl_filter("CLUSTER", principal=p1)),
        ("p1's groups", acl_filter("GROUP", principal=p1)),
        ("nobody's", acl_filter(principal=f"User:{s.name('nobody')}")),
        ("UNKNOWN pattern", acl_filter("TOPIC", t, "UNKNOWN", p1)),
        ("UNKNOWN resource type", acl_filter("UNKNOWN", t, "ANY", p1)),
        ("UNKNOWN operation", acl_filter(principal=p1, operation="UNKNOWN")),
        ("UNKNOWN permission", acl_filter(principal=p1, permission="UNKNOWN")),
        ("MATCH without a name", acl_filter("TOPIC", None, "MATCH", p1)),
    ]
    closed, none = {"": "closed"}, {"error_code": "NONE", "resources": []}
    expected: dict[str, dict] = {
        "MATCH topic of p2": {  # the literal name, the wildcard and the prefix: sorted by type, pattern, name
            "resources.0.resource_name": "*",
            "resources.1.resource_name": t,
            "resources.2.resource_name": s.name("top"),
        },
        "prefixed, a longer name": none,
        "nobody's": none,
        "UNKNOWN pattern": closed,
        "UNKNOWN resource type": closed,
        "UNKNOWN operation": closed,
        "UNKNOWN permission": closed,
        "p2's on host 127.0.0.1": {
            "resources.0.acls": [
                {"principal": p2, "acl_host": "127.0.0.1", "operation": OPERATION["ALL"], "permission_type": 3}
            ]
        },
    }
    with granted(s, *acls):
        for label, flt in filters:
            fresh_step(
                s, f"DescribeAcls v3 {label}", DESCRIBE_ACLS, 3, flt, shape=sorted_resources, expect=expected.get(label)
            )
        step(s, s.client, "DescribeAcls v1 p1's", DESCRIBE_ACLS, 1, acl_filter(principal=p1), shape=sorted_resources)
        with s.as_user("alice"):
            step(
                s,
                s.client,
                "DescribeAcls v3 as alice",
                DESCRIBE_ACLS,
                3,
                acl_filter(principal=p1),
                expect={"error_code": "CLUSTER_AUTHORIZATION_FAILED"},
            )


def sorted_matches(answer: dict) -> dict:
    """DeleteAcls' matching ACLs in one order (Kafka's controller finds them in a hash map keyed by
    random ACL ids: an order of its own each run)."""
    key = lambda m: (m["resource_type"], m["pattern_type"], m["resource_name"], m["principal"], m["operation"])  # noqa: E731
    return {
        **answer,
        "filter_results": [
            {**r, "matching_acls": sorted(r["matching_acls"], key=key)} for r in answer.get("filter_results", [])
        ],
    }


@probe(secured=True)
def probe_security_delete_acls(s: Target) -> None:
    """DeleteAcls (v1-v3) with several filters in one request: an exact one, a MATCH one that
    also finds a prefixed and a wildcard binding, one matching nothing, one Kafka refuses; what
    is left after it; as alice (CLUSTER_AUTHORIZATION_FAILED)."""
    p = f"User:{s.name('p')}"
    t = s.name("topic")
    acls = [
        binding("TOPIC", t, "LITERAL", p, "READ"),
        binding("TOPIC", t, "LITERAL", p, "WRITE"),
        binding("TOPIC", s.prefix, "PREFIXED", p, "DESCRIBE"),
        binding("GROUP", t, "LITERAL", p, "READ"),
        binding("TOPIC", s.name("other"), "LITERAL", p, "READ"),
    ]
    admin = s.client
    created = admin.request(CREATE_ACLS, 3, {"creations": acls}).to_dict()
    if any(r["error_code"] for r in created["results"]):
        raise ProbeError(f"{s.kind}: CreateAcls {created}")
    try:
        wait_acls(s, admin, acls, True)
        with s.as_user("alice"):
            step(
                s,
                s.client,
                "DeleteAcls v3 as alice",
                DELETE_ACLS,
                3,
                {"filters": [acl_filter(principal=p)]},
                expect={"filter_results.0.error_code": "CLUSTER_AUTHORIZATION_FAILED"},
            )
        filters = [
            acl_filter("TOPIC", t, "LITERAL", p, "WRITE", "ALLOW"),
            acl_filter("TOPIC", t, "MATCH", p),
            acl_filter("TOPIC", s.name("none"), "LITERAL", p),
            acl_filter("TOPIC", t, "UNKNOWN", p),
            acl_filter("GROUP", t, "LITERAL", p, "READ", "DENY"),
        ]
        fresh_step(
            s,
            "DeleteAcls v3 five filters",
            DELETE_ACLS,
            3,
            {"filters": filters},
            shape=sorted_matches,
            expect={"": "closed"},  # the UNKNOWN pattern filter: the request does not parse
        )
        fresh_step(
            s,
            "DeleteAcls v3 four filters",
            DELETE_ACLS,
            3,
            {"filters": filters[:3] + filters[4:]},
            shape=sorted_matches,
        )
        wait_acls(s, admin, acls[:3], False)
        step(
            s, admin, "DescribeAcls v3 what is left", DESCRIBE_ACLS, 3, acl_filter(principal=p), shape=sorted_resources
        )
        step(
            s,
            admin,
            "DeleteAcls v1 the group's",
            DELETE_ACLS,
            1,
            {"filters": [acl_filter("GROUP", t, "LITERAL", p)]},
            shape=sorted_matches,
        )
        step(s, admin, "DeleteAcls v3 no filters", DELETE_ACLS, 3, {"filters": []})
    finally:
        admin.request(DELETE_ACLS, 3, {"filters": [acl_filter(principal=p)]})
        wait_acls(s, admin, acls, False)


# -- what a user may do ------------------------------------------------------------------------------


def produce_body(topic: str, value: str = "v") -> dict:
    blob = R.build_batch([(None, value.encode())], producer_id=-1, producer_epoch=-1, base_sequence=-1)
    return {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 10000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": blob}]}],
    }


def fetch_body(topic: str) -> dict:
    part = {
        "partition": 0,
        "current_leader_epoch": -1,
        "fetch_offset": 0,
        "last_fetched_epoch": -1,
        "log_start_offset": -1,
        "partition_max_bytes": 1 << 20,
    }
    return {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 22,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": [part]}],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def list_offsets_body(topic: str) -> dict:
    return {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}
        ],
        "timeout_ms": 1000,
    }


def create_topics_body(*names: str, validate_only: bool = False) -> dict:
    return {
        "topics": [
            {"name": n, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []} for n in names
        ],
        "timeout_ms": 10000,
        "validate_only": validate_only,
    }


def this_runs(s: Target, answer: dict, key: str = "topics", field: str = "name") -> dict:
    """An answer with only the items of this run (other probes' topics are not compared)."""
    return {
        **answer,
        key: sorted((x for x in answer[key] if str(x[field]).startswith(s.prefix)), key=lambda x: x[field]),
    }


@probe(secured=True)
def probe_security_topic_access(s: Target) -> None:
    """alice with ACLs on one topic (DESCRIBE, READ, WRITE) and none on another: Metadata of every
    topic and of named ones, with the authorized-operations bit sets; Produce, Fetch and
    ListOffsets of both; CreateTopics and DeleteTopics; DescribeConfigs of a topic and of the
    broker; bob with no ACLs at all."""
    mine, other, missing = s.name("mine"), s.name("other"), s.name("missing")
    s.create_topic(mine)
    s.create_topic(other)
    alice = "User:alice"
    acls = [
        binding("TOPIC", mine, "LITERAL", alice, "READ"),
        binding("TOPIC", mine, "LITERAL", alice, "WRITE"),
        binding("TOPIC", mine, "LITERAL", alice, "DESCRIBE"),
        binding("TOPIC", s.name("creat"), "PREFIXED", alice, "CREATE"),
    ]
    node = node_id(s)
    named = lambda a: brokers_named(a, node)  # noqa: E731  (the broker's id in replica lists: B)
    with granted(s, *acls), s.as_user("alice"):
        req = lambda label, api, ver, body, **kw: step(s, s.client, label, api, ver, body, **{"shape": named, **kw})  # noqa: E731
        answer = outcome(s.client, METADATA, 12, metadata_body(ALL_TOPICS, topic_ops=True))
        s.record(
            "Metadata v12 every topic (this run's)",
            named(this_runs(s, norm(s, answer))) if isinstance(answer, dict) else answer,
            METADATA,
            12,
            {"topics.0.name": mine, "topics.-1.name": mine},
        )
        req(
            "Metadata v12 named, with topic operations",
            METADATA,
            12,
            metadata_body([mine, other, missing], topic_ops=True),
            expect={
                "topics.0.topic_authorized_operations": ops_bits("READ", "WRITE", "DESCRIBE"),
                "topics.1.error_code": "TOPIC_AUTHORIZATION_FAILED",
                "topics.2.error_code": "TOPIC_AUTHORIZATION_FAILED",
            },
        )
        req("Metadata v12 named, without operations", METADATA, 12, metadata_body([mine, other]))
        by_id = [s.topic_ids[other], uuid.uuid4(), s.topic_ids[mine]]
        req(
            "Metadata v12 by id: refused, unknown, allowed",
            METADATA,
            12,
            {**metadata_body([]), "topics": [{"name": None, "topic_id": i} for i in by_id]},
            expect={"topics.0.error_code": "UNKNOWN_TOPIC_ID", "topics.2.error_code": "TOPIC_AUTHORIZATION_FAILED"},
        )
        req("Metadata v10 cluster operations", METADATA, 10, metadata_body([mine], topic_ops=True, cluster_ops=True))
        req(
            "Metadata v12 auto-create a denied topic",
            METADATA,
            12,
            {**metadata_body([missing]), "allow_auto_topic_creation": True},
        )
        req(
            "Produce v9 allowed",
            PRODUCE,
            9,
            produce_body(mine),
            expect={"responses.0.partition_responses.0.error_code": "NONE"},
        )
        req(
            "Produce v9 denied",
            PRODUCE,
            9,
            produce_body(other),
            expect={"responses.0.partition_responses.0.error_code": "TOPIC_AUTHORIZATION_FAILED"},
        )
        req("Produce v9 denied, unknown topic", PRODUCE, 9, produce_body(missing))
        req("Fetch v12 allowed", 1, 12, fetch_body(mine), expect={"responses.0.partitions.0.error_code": "NONE"})
        req(
            "Fetch v12 denied",
            1,
            12,
            fetch_body(other),
            expect={"responses.0.partitions.0.error_code": "TOPIC_AUTHORIZATION_FAILED"},
        )
        req("ListOffsets v7 allowed", 2, 7, list_offsets_body(mine))
        req(
            "ListOffsets v7 denied",
            2,
            7,
            list_offsets_body(other),
            expect={"topics.0.partitions.0.error_code": "TOPIC_AUTHORIZATION_FAILED"},
        )
        req(
            "CreateTopics v7 denied and allowed (validate only)",
            CREATE_TOPICS,
            7,
            create_topics_body(s.name("new"), s.name("created"), validate_only=True),
            expect={
                "topics.0.topic_config_error_code": "TOPIC_AUTHORIZATION_FAILED",
                "topics.1.error_code": "TOPIC_AUTHORIZATION_FAILED",
            },
        )
        req("CreateTopics v7 an existing topic she may not see", CREATE_TOPICS, 7, create_topics_body(other))
        req("CreateTopics v7 an existing topic she may see", CREATE_TOPICS, 7, create_topics_body(mine))
        req(
            "DeleteTopics v6 denied",
            DELETE_TOPICS,
            6,
            {"topics": [{"name": n, "topic_id": ZERO_UUID} for n in (mine, other, missing)], "timeout_ms": 10000},
        )
        req(
            "DescribeConfigs v4 topics",
            DESCRIBE_CONFIGS,
            4,
            {
                "resources": [
                    {"resource_type": 2, "resource_name": n, "configuration_keys": ["cleanup.policy"]}
                    for n in (mine, other)
                ],
                "include_synonyms": False,
                "include_documentation": False,
            },
            expect={"results.1.error_code": "TOPIC_AUTHORIZATION_FAILED"},
        )
        node = outcome(
            s.client, DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False, "endpoint_type": 1}
        )
        broker = str(node["brokers"][0]["broker_id"]) if isinstance(node, dict) else "0"
        req(
            "DescribeConfigs v4 the broker",
            DESCRIBE_CONFIGS,
            4,
            {
                "resources": [
                    {"resource_type": 4, "resource_name": broker, "configuration_keys": ["log.retention.ms"]}
                ],
                "include_synonyms": False,
                "include_documentation": False,
            },
            expect={"results.0.error_code": "CLUSTER_AUTHORIZATION_FAILED"},
            shape=lambda a: named({**a, "results": [{**r, "resource_name": "<broker>"} for r in a["results"]]}),
        )
        req(
            "DescribeCluster v1 with cluster operations",
            DESCRIBE_CLUSTER,
            1,
            {"include_cluster_authorized_operations": True, "endpoint_type": 1},
        )
    with s.as_user("bob"):
        step(
            s,
            s.client,
            "bob: Metadata v12 named",
            METADATA,
            12,
            metadata_body([mine], topic_ops=True),
            expect={"topics.0.error_code": "TOPIC_AUTHORIZATION_FAILED"},
        )
        answer = outcome(s.client, METADATA, 12, metadata_body(ALL_TOPICS))
        s.record(
            "bob: Metadata v12 every topic (this run's)",
            this_runs(s, norm(s, answer)) if isinstance(answer, dict) else answer,
            METADATA,
            12,
            {"topics": []},
        )


@probe(secured=True)
def probe_security_acl_precedence(s: Target) -> None:
    """How ACLs combine: ``User:*`` lets everyone describe one topic; a PREFIXED ALLOW ALL with a
    LITERAL DENY WRITE on one topic under it (DENY wins: produce refused, fetch allowed, WRITE
    missing from the operations); an ALLOW for another host only (refused from 127.0.0.1); a
    DENY for every host on an ALLOW's topic. As alice and as bob."""
    everyone, under, elsewhere, refused = s.name("everyone"), s.name("all-x"), s.name("host"), s.name("deny")
    for topic in (everyone, under, elsewhere, refused):
        s.create_topic(topic)
    alice = "User:alice"
    acls = [
        binding("TOPIC", everyone, "LITERAL", "User:*", "DESCRIBE"),
        binding("TOPIC", s.name("all"), "PREFIXED", alice, "ALL"),
        binding("TOPIC", under, "LITERAL", alice, "WRITE", "DENY"),
        binding("TOPIC", elsewhere, "LITERAL", alice, "READ", host="10.0.0.1"),
        binding("TOPIC", refused, "LITERAL", alice, "READ"),
        binding("TOPIC", refused, "LITERAL", alice, "DESCRIBE"),
        binding("TOPIC", refused, "LITERAL", "User:*", "READ", "DENY"),
    ]
    node = node_id(s)
    named = lambda a: brokers_named(a, node)  # noqa: E731
    topics = [everyone, under, elsewhere, refused]
    with granted(s, *acls):
        for user in ("alice", "bob"):
            with s.as_user(user):
                step(
                    s,
                    s.client,
                    f"{user}: Metadata v12 with topic operations",
                    METADATA,
                    12,
                    metadata_body(topics, topic_ops=True),
                    shape=named,
                    expect={"topics.0.topic_authorized_operations": ops_bits("DESCRIBE")} if user == "bob" else None,
                )
                for topic in (under, elsewhere, refused):
                    step(
                        s, s.client, f"{user}: Produce v9 {topic[len(s.prefix) + 1 :]}", PRODUCE, 9, produce_body(topic)
                    )
                    step(s, s.client, f"{user}: Fetch v12 {topic[len(s.prefix) + 1 :]}", 1, 12, fetch_body(topic))
        with s.as_user("alice"):
            step(
                s,
                s.client,
                "alice: Metadata v12 the DENY WRITE topic",
                METADATA,
                12,
                metadata_body([under], topic_ops=True),
                shape=named,
                expect={
                    "topics.0.topic_authorized_operations": ops_bits(
                        "READ", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"
                    )
                },
            )


def join_body(group: str) -> dict:
    return {
        "group_id": group,
        "session_timeout_ms": 30000,
        "rebalance_timeout_ms": 30000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"\x00\x01"}],
        "reason": None,
    }


def commit_body(group: str, topic: str) -> dict:
    return {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "retention_time_ms": -1,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 1,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    }


@probe(secured=True)
def probe_security_group_access(s: Target) -> None:
    """alice and the group APIs: a group she has no ACL on (FindCoordinator, JoinGroup,
    OffsetCommit, OffsetFetch, DescribeGroups, DeleteGroups refused), a group she may READ
    with a topic she may not (the partitions refused) and then may, DescribeGroups' and
    ListGroups' view of what she may describe."""
    denied, allowed, topic = s.name("denied"), s.name("allowed"), s.name("t")
    s.create_topic(topic)
    s.find_coordinator(allowed, 0)
    alice = "User:alice"
    with granted(s, binding("GROUP", allowed, "LITERAL", alice, "READ")), s.as_user("alice"):
        req = lambda label, api, ver, body, **kw: step(s, s.client, label, api, ver, body, **kw)  # noqa: E731
        req(
            "FindCoordinator v4 denied and allowed",
            FIND_COORDINATOR,
            4,
            {"key_type": 0, "coordinator_keys": [denied, allowed]},
            expect={"coordinators.0.error_code": "GROUP_AUTHORIZATION_FAILED", "coordinators.1.error_code": "NONE"},
        )
        req("FindCoordinator v3 denied", FIND_COORDINATOR, 3, {"key_type": 0, "key": denied})
        req(
            "JoinGroup v9 denied",
            JOIN_GROUP,
            9,
            join_body(denied),
            expect={"error_code": "GROUP_AUTHORIZATION_FAILED"},
        )
        req(
            "OffsetCommit v8 denied group",
            OFFSET_COMMIT,
            8,
            commit_body(denied, topic),
            expect={"topics.0.partitions.0.error_code": "GROUP_AUTHORIZATION_FAILED"},
        )
        req(
            "OffsetCommit v8 denied topic",
            OFFSET_COMMIT,
            8,
            commit_body(allowed, topic),
            expect={"topics.0.partitions.0.error_code": "TOPIC_AUTHORIZATION_FAILED"},
        )
        for ver in (7, 8):
            answer = offset_fetch(s, None, ver, denied, topic)
            s.record(f"OffsetFetch v{ver} denied group", norm(s, answer), 9, ver)
            answer = offset_fetch(s, None, ver, allowed, topic)
            s.record(f"OffsetFetch v{ver} denied topic", norm(s, answer), 9, ver)
        req(
            "DescribeGroups v5 denied and allowed",
            DESCRIBE_GROUPS,
            5,
            {"groups": [denied, allowed], "include_authorized_operations": True},
            expect={
                "groups.0.authorized_operations": ops_bits("READ", "DESCRIBE"),
                "groups.1.error_code": "GROUP_AUTHORIZATION_FAILED",
            },
        )
        req("DeleteGroups v2 denied", DELETE_GROUPS, 2, {"groups_names": [denied, allowed]})
    with (
        granted(
            s,
            binding("GROUP", allowed, "LITERAL", alice, "READ"),
            binding("TOPIC", topic, "LITERAL", alice, "READ"),
        ),
        s.as_user("alice"),
    ):
        req = lambda label, api, ver, body, **kw: step(s, s.client, label, api, ver, body, **kw)  # noqa: E731
        req(
            "OffsetCommit v8 allowed",
            OFFSET_COMMIT,
            8,
            commit_body(allowed, topic),
            expect={"topics.0.partitions.0.error_code": "NONE"},
        )
        answer = offset_fetch(s, None, 8, allowed, topic)
        s.record("OffsetFetch v8 allowed", norm(s, answer), 9, 8)
        req(
            "DescribeGroups v5 allowed",
            DESCRIBE_GROUPS,
            5,
            {"groups": [allowed], "include_authorized_operations": True},
            expect={"groups.0.authorized_operations": ops_bits("READ", "DESCRIBE")},
        )
        answer = outcome(s.client, LIST_GROUPS, 4, {"states_filter": []})
        s.record(
            "ListGroups v4 (this run's)",
            this_runs(s, norm(s, answer), "groups", "group_id") if isinstance(answer, dict) else answer,
            LIST_GROUPS,
            4,
            {"groups.0.group_id": allowed},
        )
        req("DeleteGroups v2 allowed to read only", DELETE_GROUPS, 2, {"groups_names": [allowed]})


@probe(secured=True)
def probe_security_producer_access(s: Target) -> None:
    """InitProducerId and FindCoordinator of transactions as alice and bob: a transactional id
    with no ACL (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), one she may WRITE; an idempotent
    producer with no WRITE anywhere (bob: CLUSTER_AUTHORIZATION_FAILED), with WRITE on a topic
    (alice), with IDEMPOTENT_WRITE on the cluster (bob); DescribeCluster's operations then."""
    denied, allowed, topic = s.name("denied"), s.name("allowed"), s.name("t")
    s.create_topic(topic)
    s.find_coordinator(allowed, 1)
    s.init_ok(allowed)
    alice, bob = "User:alice", "User:bob"
    with (
        granted(
            s,
            binding("TRANSACTIONAL_ID", allowed, "LITERAL", alice, "WRITE"),
            binding("TOPIC", topic, "LITERAL", alice, "WRITE"),
        ),
        s.as_user("alice"),
    ):
        req = lambda label, api, ver, body, **kw: step(s, s.client, label, api, ver, body, **kw)  # noqa: E731
        req(
            "FindCoordinator v4 transactions",
            FIND_COORDINATOR,
            4,
            {"key_type": 1, "coordinator_keys": [denied, allowed]},
            expect={
                "coordinators.0.error_code": "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                "coordinators.1.error_code": "NONE",
            },
        )
        init = lambda tid: {  # noqa: E731
            "transactional_id": tid,
            "transaction_timeout_ms": 60000,
            "producer_id": -1,
            "producer_epoch": -1,
        }
        req(
            "InitProducerId v5 denied transactional id",
            INIT_PRODUCER_ID,
            5,
            init(denied),
            expect={"error_code": "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"},
        )
        req(
            "InitProducerId v5 allowed transactional id",
            INIT_PRODUCER_ID,
            5,
            init(allowed),
            expect={"error_code": "NONE"},
        )
        req(
            "InitProducerId v5 idempotent, WRITE on a topic",
            INIT_PRODUCER_ID,
            5,
            init(None),
            expect={"error_code": "NONE"},
        )
        req("DescribeCluster v1 operations", DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True})
    with s.as_user("bob"):
        req = lambda label, api, ver, body, **kw: step(s, s.client, label, api, ver, body, **kw)  # noqa: E731
        req(
            "bob: InitProducerId v5 idempotent",
            INIT_PRODUCER_ID,
            5,
            init(None),
            expect={"error_code": "CLUSTER_AUTHORIZATION_FAILED"},
        )
        req("bob: InitProducerId v2 idempotent", INIT_PRODUCER_ID, 2, init(None))
    with (
        granted(
            s,
            binding("CLUSTER", CLUSTER, "LITERAL", bob, "IDEMPOTENT_WRITE"),
            binding("CLUSTER", CLUSTER, "LITERAL", bob, "DESCRIBE"),
        ),
        s.as_user("bob"),
    ):
        req = lambda label, api, ver, body, **kw: step(s, s.client, label, api, ver, body, **kw)  # noqa: E731
        req(
            "bob with IDEMPOTENT_WRITE: InitProducerId v5",
            INIT_PRODUCER_ID,
            5,
            init(None),
            expect={"error_code": "NONE"},
        )
        req(
            "bob with DESCRIBE: DescribeCluster v1 operations",
            DESCRIBE_CLUSTER,
            1,
            {"include_cluster_authorized_operations": True},
            expect={"cluster_authorized_operations": ops_bits("DESCRIBE", "IDEMPOTENT_WRITE")},
        )
        req(
            "bob with DESCRIBE: Metadata v10 cluster operations",
            METADATA,
            10,
            metadata_body([], cluster_ops=True),
        )


# -- SCRAM credentials and delegation tokens -----------------------------------------------------------


def sorted_mechanisms(answer: dict) -> dict:
    """DescribeUserScramCredentials with each user's credentials sorted by mechanism: Kafka's
    ``ScramImage`` keeps them in a HashMap keyed by the ScramMechanism enum, whose hash is the
    JVM's identity hash, so their order changes from one broker process to the next. (The users
    are in a HashMap of their names: a fixed order, compared as it is.)"""
    results = [
        {**r, "credential_infos": sorted(r["credential_infos"], key=lambda c: c["mechanism"])}
        for r in answer.get("results", [])
    ]
    return {**answer, "results": results}


def upsertion(name: str, mechanism: int, pw: str, iterations: int = 4096, salt: bytes | None = None) -> dict:
    salt = secrets.token_bytes(16) if salt is None else salt
    digest = {1: "sha256", 2: "sha512"}.get(mechanism, "sha256")
    salted = hashlib.pbkdf2_hmac(digest, pw.encode(), salt, max(iterations, 1)) if salt else b""
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": salt, "salted_password": salted}


@probe(secured=True)
def probe_security_scram_credentials(s: Target) -> None:
    """DescribeUserScramCredentials and AlterUserScramCredentials as admin: the users Kafka was
    started with, an unknown and a repeated name; upsertions Kafka refuses (iterations out of
    range, an unknown mechanism, an empty name or salt, a name twice) and one it takes, which
    then logs in with SCRAM-SHA-256 (not SHA-512); a deletion of it, and of a credential that is
    not there. As alice, both refused."""
    new, pw = s.name("u"), "new-secret"
    admin = s.client
    step(
        s,
        admin,
        "Describe v0 the given users",
        DESCRIBE_SCRAM,
        0,
        {"users": None},
        shape=lambda a: sorted_mechanisms(
            {**a, "results": [r for r in a["results"] if r["user"] in ("admin", "alice", "bob")]}
        ),
        expect={
            "results.0.credential_infos": [{"mechanism": 1, "iterations": 4096}, {"mechanism": 2, "iterations": 4096}]
        },
    )
    step(
        s,
        admin,
        "Describe v0 named, unknown, twice",
        DESCRIBE_SCRAM,
        0,
        {"users": [{"name": "alice"}, {"name": new}, {"name": "bob"}, {"name": "bob"}]},
        shape=sorted_mechanisms,
    )
    step(s, admin, "Describe v0 no names", DESCRIBE_SCRAM, 0, {"users": []}, shape=sorted_mechanisms)
    unacceptable, unsupported = "UNACCEPTABLE_CREDENTIAL", "UNSUPPORTED_SASL_MECHANISM"
    refused = [
        ("iterations 1000", upsertion(new, 1, pw, 1000), unacceptable, "Too few iterations"),
        ("iterations 16385", upsertion(new, 1, pw, 16385), unacceptable, "Too many iterations"),
        ("unknown mechanism", upsertion(new, 3, pw), unsupported, "Unknown SCRAM mechanism"),
        ("mechanism 0", upsertion(new, 0, pw), unsupported, "Unknown SCRAM mechanism"),
        ("empty name", upsertion("", 1, pw), unacceptable, "Username must not be empty"),
        ("empty salt", upsertion(new, 1, pw, salt=b""), "UNKNOWN_SERVER_ERROR", None),
    ]
    for label, up, code, message in refused:
        step(
            s,
            admin,
            f"Alter v0 {label}",
            ALTER_SCRAM,
            0,
            {"deletions": [], "upsertions": [up]},
            expect={"results.0.error_code": code, "results.0.error_message": message},
        )
    missing = {
        "results.0.error_code": "RESOURCE_NOT_FOUND",
        "results.0.error_message": "Attempt to delete a user credential that does not exist",
    }
    step(
        s,
        admin,
        "Alter v0 a user upserted and deleted at once",
        ALTER_SCRAM,
        0,
        {"deletions": [{"name": new, "mechanism": 1}], "upsertions": [upsertion(new, 1, pw)]},
        expect=missing,
    )
    step(
        s,
        admin,
        "Alter v0 deletion of nothing",
        ALTER_SCRAM,
        0,
        {"deletions": [{"name": new, "mechanism": 2}], "upsertions": []},
        expect=missing,
    )
    step(
        s,
        admin,
        "Alter v0 upsert",
        ALTER_SCRAM,
        0,
        {"deletions": [], "upsertions": [upsertion(new, 1, pw)]},
        expect={"results.0.error_code": "NONE"},
    )
    deadline = time.monotonic() + ACL_TIMEOUT  # Kafka: the credential reaches the broker from its log
    while True:
        with s.connect(None) as c:
            try:
                c.login("SCRAM-SHA-256", new, pw)
                break
            except (SaslError, OSError) as exc:
                if time.monotonic() > deadline:
                    raise ProbeError(f"{s.kind}: {new} cannot log in: {exc}") from exc
        time.sleep(0.1)
    with s.connect(None) as c:
        scram_login(s, c, "the new user, SCRAM-SHA-256", "SCRAM-SHA-256", new, pw)
    with s.connect(None) as c:
        scram_login(s, c, "the new user, SCRAM-SHA-512", "SCRAM-SHA-512", new, pw)
    step(
        s,
        admin,
        "Describe v0 the new user",
        DESCRIBE_SCRAM,
        0,
        {"users": [{"name": new}]},
        expect={"results.0.credential_infos": [{"mechanism": 1, "iterations": 4096}]},
    )
    with s.as_user("alice"):
        step(
            s,
            s.client,
            "alice: Describe v0",
            DESCRIBE_SCRAM,
            0,
            {"users": [{"name": "alice"}]},
            expect={"error_code": "CLUSTER_AUTHORIZATION_FAILED"},
        )
        step(
            s,
            s.client,
            "alice: Alter v0",
            ALTER_SCRAM,
            0,
            {"deletions": [{"name": new, "mechanism": 1}], "upsertions": [upsertion("alice", 2, "x")]},
            expect={f"results.{i}.error_code": "CLUSTER_AUTHORIZATION_FAILED" for i in range(2)},
        )
    step(
        s,
        admin,
        "Alter v0 delete the new user",
        ALTER_SCRAM,
        0,
        {"deletions": [{"name": new, "mechanism": 1}], "upsertions": []},
        expect={"results.0.error_code": "NONE"},
    )
    deadline = time.monotonic() + ACL_TIMEOUT
    while True:
        gone = admin.request(DESCRIBE_SCRAM, 0, {"users": [{"name": new}]}).to_dict()
        if gone["results"][0]["error_code"] or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    step(
        s,
        admin,
        "Describe v0 the deleted user",
        DESCRIBE_SCRAM,
        0,
        {"users": [{"name": new}]},
        expect={
            "results.0.error_code": "RESOURCE_NOT_FOUND",
            "results.0.error_message": f"Attempt to describe a user credential that does not exist: {new}",
        },
    )


def described_tokens(client: RawClient) -> list:
    answer = outcome(client, DESCRIBE_TOKENS, 3, {"owners": None})
    if isinstance(answer, str) or answer["error_code"]:
        raise ProbeError(f"DescribeDelegationToken: {answer}")
    return answer["tokens"]


def await_token(s: Target, token_id: str, answer: dict | str) -> None:
    """After a renewal or expiry that succeeded: until the broker describes the token with the
    expiry answered (Kafka's broker applies it from its metadata log a moment later, and
    describes, and logs in with, what it has applied)."""
    if isinstance(answer, str) or answer["error_code"]:
        return
    expiry = answer["expiry_timestamp_ms"]
    deadline = time.monotonic() + ACL_TIMEOUT
    with s.connect() as admin:  # the super user is described every token
        while True:
            shown = [t["expiry_timestamp"] for t in described_tokens(admin) if t["token_id"] == token_id]
            if shown == [expiry]:
                return
            if time.monotonic() > deadline:
                raise ProbeError(f"{s.kind}: token expiry {shown}, not {expiry}, after {ACL_TIMEOUT} s")
            time.sleep(0.05)


def token_shape(issue: dict[str, int]) -> Callable[[dict], dict]:
    """A delegation token answer with its id written ``<token id>`` and its times in minutes
    after the token's issue (``issue["at"]``, set from the create answer)."""

    def minutes(value: Any) -> Any:
        if isinstance(value, int) and value > 0 and issue.get("at", 0) > 0:
            return round((value - issue["at"]) / 60000)
        return value

    def one(t: dict) -> dict:
        out = dict(t)
        for time_key in ("issue", "expiry", "max"):
            for key in (f"{time_key}_timestamp_ms", f"{time_key}_timestamp"):
                if key in out:
                    out[key] = minutes(out[key])
        if out.get("token_id"):
            out["token_id"] = "<token id>"
        return out

    def shape(answer: dict) -> dict:
        answer = one(answer)
        if "tokens" in answer:
            answer["tokens"] = [one(t) for t in answer["tokens"]]
        return answer

    return shape


@probe(secured=True)
def probe_security_delegation_tokens(s: Target) -> None:
    """Delegation tokens: alice creates one with bob as renewer; Describe as alice, bob, admin
    and by owner; renewals by bob, alice and admin (not its owner or a renewer); a login with
    the token (SCRAM-SHA-512, ``tokenauth=true``), which may not ask for tokens itself;
    creations Kafka refuses (an owner alice may not create for, a renewer that is not a User);
    expiry, then renew and describe of an expired token."""
    issue: dict[str, int] = {}
    shape = token_shape(issue)
    with s.as_user("alice"):
        created = outcome(
            s.client,
            CREATE_TOKEN,
            3,
            {"renewers": [{"principal_type": "User", "principal_name": "bob"}], "max_lifetime_ms": -1},
        )
        if isinstance(created, str) or created["error_code"]:
            raise ProbeError(f"{s.kind}: CreateDelegationToken: {created}")
        issue["at"] = created["issue_timestamp_ms"]
        s.record(
            "alice: CreateDelegationToken v3",
            norm(s, shape(created)),
            CREATE_TOKEN,
            3,
            {
                "error_code": "NONE",
                "expiry_timestamp_ms": 1440,
                "max_timestamp_ms": 10080,
                "hmac": "<64 bytes>",
            },
        )
        token_id, hmac = created["token_id"], bytes(created["hmac"])
        deadline = time.monotonic() + ACL_TIMEOUT  # Kafka: the token reaches the broker from its log
        while not described_tokens(s.client):
            if time.monotonic() > deadline:
                raise ProbeError(f"{s.kind}: the token is not described")
            time.sleep(0.05)
        req = lambda label, api, ver, body, **kw: step(s, s.client, label, api, ver, body, before=shape, **kw)  # noqa: E731
        req("alice: DescribeDelegationToken v3 all", DESCRIBE_TOKENS, 3, {"owners": None})
        req(
            "alice: DescribeDelegationToken v3 owner bob",
            DESCRIBE_TOKENS,
            3,
            {"owners": [{"principal_type": "User", "principal_name": "bob"}]},
        )
        req("alice: DescribeDelegationToken v1", DESCRIBE_TOKENS, 1, {"owners": None})
        req(
            "alice: CreateDelegationToken v3 for bob",
            CREATE_TOKEN,
            3,
            {"owner_principal_type": "User", "owner_principal_name": "bob", "renewers": [], "max_lifetime_ms": -1},
            expect={"error_code": "DELEGATION_TOKEN_AUTHORIZATION_FAILED"},
        )
        req(
            "alice: CreateDelegationToken v3 a Group renewer",
            CREATE_TOKEN,
            3,
            {"renewers": [{"principal_type": "Group", "principal_name": "x"}], "max_lifetime_ms": -1},
            expect={"error_code": "INVALID_PRINCIPAL_TYPE"},
        )
        changed = req(
            "alice: RenewDelegationToken v2 one hour",
            RENEW_TOKEN,
            2,
            {"hmac": hmac, "renew_period_ms": 3_600_000},
            expect={"error_code": "NONE", "expiry_timestamp_ms": 60},
        )
        await_token(s, token_id, changed)
        req(
            "alice: RenewDelegationToken v2 unknown",
            RENEW_TOKEN,
            2,
            {"hmac": b"x" * 64, "renew_period_ms": -1},
            expect={"error_code": "DELEGATION_TOKEN_NOT_FOUND"},
        )
    with s.as_user("bob"):
        req = lambda label, api, ver, body, **kw: step(s, s.client, label, api, ver, body, before=shape, **kw)  # noqa: E731
        req("bob (renewer): DescribeDelegationToken v3", DESCRIBE_TOKENS, 3, {"owners": None})
        changed = req(
            "bob (renewer): RenewDelegationToken v2 default period",
            RENEW_TOKEN,
            2,
            {"hmac": hmac, "renew_period_ms": -1},
            expect={"error_code": "NONE", "expiry_timestamp_ms": 1440},
        )
        await_token(s, token_id, changed)
        changed = req(
            "bob (renewer): ExpireDelegationToken v2 in an hour",
            EXPIRE_TOKEN,
            2,
            {"hmac": hmac, "expiry_time_period_ms": 3_600_000},
            expect={"error_code": "NONE", "expiry_timestamp_ms": 60},
        )
        await_token(s, token_id, changed)
    admin_req = lambda label, api, ver, body, **kw: step(s, s.client, label, api, ver, body, before=shape, **kw)  # noqa: E731
    admin_req(
        "admin: DescribeDelegationToken v3 alice's",
        DESCRIBE_TOKENS,
        3,
        {"owners": [{"principal_type": "User", "principal_name": "alice"}]},
    )
    admin_req(
        "admin: RenewDelegationToken v2",
        RENEW_TOKEN,
        2,
        {"hmac": hmac, "renew_period_ms": -1},
        expect={"error_code": "DELEGATION_TOKEN_OWNER_MISMATCH"},
    )
    with s.connect(None) as c:
        pw = base64.b64encode(hmac).decode()
        scram = RawClient.scram("SCRAM-SHA-512", token_id, pw, extensions=",tokenauth=true")
        handshake(s, c, "token login: SaslHandshake", "SCRAM-SHA-512")
        first = outcome(c, SASL_AUTHENTICATE, 2, {"auth_bytes": scram.first()})
        s.record(
            "token login: client-first",
            first if isinstance(first, str) else {"error_code": s.norm(first)["error_code"]},
            SASL_AUTHENTICATE,
            2,
            {"error_code": "NONE"},
        )
        if isinstance(first, dict) and not first["error_code"]:
            final = outcome(c, SASL_AUTHENTICATE, 2, {"auth_bytes": scram.final(bytes(first["auth_bytes"]))})
            shown: Any = final
            if isinstance(final, dict):
                shown = norm(s, final)
                shown["auth_bytes"] = scram.verify(bytes(final["auth_bytes"]))
                lifetime = final["session_lifetime_ms"]
                shown["session_lifetime_ms"] = round(lifetime / 60000) if lifetime > 0 else lifetime
            s.record(
                "token login: client-final",
                shown,
                SASL_AUTHENTICATE,
                2,
                {"error_code": "NONE", "auth_bytes": True, "session_lifetime_ms": 60},
            )
            step(
                s,
                c,
                "token login: CreateDelegationToken v3",
                CREATE_TOKEN,
                3,
                {"renewers": [], "max_lifetime_ms": -1},
                before=shape,
                expect={"error_code": "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"},
            )
            step(s, c, "token login: DescribeDelegationToken v3", DESCRIBE_TOKENS, 3, {"owners": None}, before=shape)
    with s.as_user("alice"):
        req = lambda label, api, ver, body, **kw: step(s, s.client, label, api, ver, body, before=shape, **kw)  # noqa: E731
        req(
            "alice: ExpireDelegationToken v2 now",
            EXPIRE_TOKEN,
            2,
            {"hmac": hmac, "expiry_time_period_ms": -1},
            expect={"error_code": "NONE"},
        )
        deadline = time.monotonic() + ACL_TIMEOUT
        while described_tokens(s.client):
            if time.monotonic() > deadline:
                raise ProbeError(f"{s.kind}: the expired token is still described")
            time.sleep(0.05)
        req(
            "alice: DescribeDelegationToken v3 after expiry",
            DESCRIBE_TOKENS,
            3,
            {"owners": None},
            expect={"tokens": []},
        )
        gone = {"error_code": "DELEGATION_TOKEN_NOT_FOUND"}
        req(
            "alice: RenewDelegationToken v2 after expiry",
            RENEW_TOKEN,
            2,
            {"hmac": hmac, "renew_period_ms": -1},
            expect=gone,
        )
        req(
            "alice: ExpireDelegationToken v2 after expiry",
            EXPIRE_TOKEN,
            2,
            {"hmac": hmac, "expiry_time_period_ms": -1},
            expect=gone,
        )
