"""The cluster's ACLs and SCRAM credentials in the data directory, as Kafka keeps them in its
metadata log (AccessControlEntryRecord, UserScramCredentialRecord): what CreateAcls,
DeleteAcls and AlterUserScramCredentials changed survives a restart.

Snapshot keys: ``"acls"``, a list of ``[resource type, name, pattern type, principal, host,
operation, permission]`` (Kafka's codes), in the order created; ``"scram"``, user -> mechanism
-> ``[salt, stored key, server key, iterations]`` (base64). Journal lines: ``["acls", rows]``
(all of them: ACL changes are rare), ``["scram", user, mechanism, entry|null]`` and
``["token", token id, entry|null]`` (a delegation token; ``"tokens"`` in the snapshot). Passwords are
never stored, only what SCRAM checks them with; PLAIN passwords come from the start options
(``users=``, ``--user``) each time.
"""

from __future__ import annotations

import base64
from typing import Any

from ..core.cluster_state import ClusterState
from ..core.security.acls import Acl, Operation, PatternType, Permission, ResourceType
from ..core.security.scram import HASHES, ScramCredential
from ..core.security.tokens import DelegationToken, Principal


def acl_rows(state: ClusterState) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for a in state.authorizer.acls:
        rows.append([int(a.resource_type), a.resource_name, int(a.pattern_type), a.principal, a.host])
        rows[-1] += [int(a.operation), int(a.permission)]
    return rows


def scram_entry(state: ClusterState, user: str, mechanism: str) -> list[Any] | None:
    credential = state.users.scram_credential(user, mechanism)
    if credential is None:
        return None
    keys = (credential.salt, credential.stored_key, credential.server_key)
    return [*(base64.b64encode(v).decode() for v in keys), credential.iterations]


def scram_entries(state: ClusterState) -> dict[str, dict[str, list[Any]]]:
    out: dict[str, dict[str, list[Any]]] = {}
    for mechanism in HASHES:
        for user in state.users.scram_users():
            entry = scram_entry(state, user, mechanism)
            if entry is not None:
                out.setdefault(user, {})[mechanism] = entry
    return out


def token_entry(state: ClusterState, token_id: str) -> list[Any] | None:
    """A delegation token as kept: [hmac, owner, requester, renewers, issue, max, expiry] (the
    HMAC in base64: what its login is checked with, as Kafka's DelegationTokenRecord keeps it)."""
    token = state.tokens.get(token_id)
    if token is None:
        return None
    people = [str(token.owner), str(token.requester), [str(r) for r in token.renewers]]
    return [base64.b64encode(token.hmac).decode(), *people, token.issue_ms, token.max_ms, token.expiry_ms]


def token_entries(state: ClusterState) -> dict[str, list[Any]]:
    return {t.token_id: entry for t in state.tokens.tokens() if (entry := token_entry(state, t.token_id))}


def _token(token_id: str, entry: list[Any]) -> DelegationToken:
    hmac, owner, requester, renewers, issue, max_ms, expiry = entry
    if not all(isinstance(v, str) for v in (hmac, owner, requester)) or not isinstance(renewers, list):
        raise ValueError("not a token")
    return DelegationToken(
        token_id,
        base64.b64decode(hmac),
        Principal.parse(owner),
        Principal.parse(requester),
        tuple(Principal.parse(str(r)) for r in renewers),
        int(issue),
        int(max_ms),
        int(expiry),
    )


def tokens_problem(entries: Any) -> str | None:
    if not isinstance(entries, dict):
        return "is not an object"
    for token_id, entry in entries.items():
        if entry_token_problem(token_id, entry):
            return f"{token_id} is not [hmac, owner, requester, renewers, issue, max, expiry]"
    return None


def entry_token_problem(token_id: str, entry: Any) -> str | None:
    try:
        _token(token_id, entry)
    except (TypeError, ValueError):
        return "is not [hmac, owner, requester, renewers, issue, max, expiry]"
    return None


def restore(state: ClusterState, meta: dict[str, Any]) -> None:
    for token_id, entry in (meta.get("tokens") or {}).items():
        state.tokens.restore(_token(token_id, entry))
    rows = meta.get("acls") or []
    if rows:
        state.authorizer.create([_acl(row) for row in rows])
    for user, mechanisms in (meta.get("scram") or {}).items():
        for mechanism, entry in mechanisms.items():
            state.users.set_scram(user, mechanism, _credential(entry))


def _acl(row: list[Any]) -> Acl:
    rtype, name, ptype, principal, host, operation, permission = row
    return Acl(
        ResourceType(rtype), name, PatternType(ptype), principal, host, Operation(operation), Permission(permission)
    )


def _credential(entry: list[Any]) -> ScramCredential:
    salt, stored, server, iterations = entry
    d = base64.b64decode
    return ScramCredential(d(salt), d(stored), d(server), int(iterations))


def acls_problem(rows: Any) -> str | None:
    """Why the stored ACLs cannot be read, or None."""
    if not isinstance(rows, list):
        return "is not a list"
    for i, row in enumerate(rows):
        try:
            _acl(row)
        except (TypeError, ValueError):
            return f"[{i}] is not [resource type, name, pattern type, principal, host, operation, permission]"
    return None


def scram_problem(entries: Any) -> str | None:
    """Why the stored SCRAM credentials cannot be read, or None."""
    if not isinstance(entries, dict):
        return "is not an object"
    for user, mechanisms in entries.items():
        if not isinstance(mechanisms, dict):
            return f"{user} is not an object of mechanisms"
        for mechanism, entry in mechanisms.items():
            problem = entry_problem(mechanism, entry)
            if problem:
                return f"{user}.{mechanism} {problem}"
    return None


def entry_problem(mechanism: str, entry: Any) -> str | None:
    if mechanism not in HASHES:
        return f"is no SCRAM mechanism ({', '.join(HASHES)})"
    try:
        _credential(entry)
    except (TypeError, ValueError):
        return "is not [salt, stored key, server key, iterations]"
    return None
