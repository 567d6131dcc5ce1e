"""The cluster's users: PLAIN passwords and SCRAM credentials, as Kafka keeps them apart (PLAIN
users in the JAAS ``user_<name>`` entries, SCRAM credentials in the cluster's metadata), and
what DescribeUserScramCredentials (50) and AlterUserScramCredentials (51) read and change.

:meth:`Users.add` is the test's way in (a password for PLAIN and both SCRAM mechanisms at
once); :meth:`Users.alter` and :meth:`Users.describe` answer the admin APIs as Kafka 4.4's
controller and broker do (``ScramControlManager.alterCredentials``, ``ScramImage.describe``):
their checks, texts and the Java ``HashMap`` order of their results. Each credential
AlterUserScramCredentials sets or removes records a ``scram_credentials_altered`` event.
New credentials count from the next authentication; sessions already open stay, as in Kafka.

A SCRAM login with ``tokenauth=true`` is checked against a delegation token instead
(:meth:`Users.token_login`, the cluster's ``DelegationTokens`` in ``core/security/tokens.py``).
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from ...protocol.error_codes import ErrorCode
from ..events import ScramCredentialsAltered
from ..groups.placement import java_string_hash
from .scram import (
    DEFAULT_ITERATIONS,
    HASHES,
    MAX_ITERATIONS,
    MECHANISM_CODES,
    MIN_ITERATIONS,
    ScramCredential,
    credential_from_salted,
    make_credential,
)

if TYPE_CHECKING:
    from ..events import EventLog
    from .tokens import DelegationTokens, TokenLogin

SCRAM_MECHANISMS = tuple(HASHES)
MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)  # what a user may log in with (mechanisms.MECHANISMS)
_TWICE = "A user credential cannot be altered twice in the same request"


class Deletion(NamedTuple):
    """An AlterUserScramCredentials deletion: a user's credential of mechanism ``mechanism``
    (1 SCRAM-SHA-256, 2 SCRAM-SHA-512; any other code is unknown)."""

    name: str
    mechanism: int


class Upsertion(NamedTuple):
    """An AlterUserScramCredentials upsertion: the salt and salted password a client computed."""

    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


class Altered(NamedTuple):
    """One user's result of AlterUserScramCredentials (``message`` None on success)."""

    user: str
    error_code: int
    message: str | None


class Described(NamedTuple):
    """One user's result of DescribeUserScramCredentials: (mechanism code, iterations) each."""

    user: str
    error_code: int
    message: str
    credentials: list[tuple[int, int]]


def _java_hash_map_order(keys: Iterable[str], peak: int | None = None) -> list[str]:
    """``keys`` as a ``java.util.HashMap`` put one by one iterates them: by bucket of the spread
    ``String.hashCode``, insertion order within. The table starts at 16 and doubles whenever
    the map held more than 3/4 of it (``peak``: the most it held, if entries were removed)."""
    found = list(dict.fromkeys(keys))
    held = max(len(found), peak or 0)
    capacity = 16
    while held > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(found, key=bucket)


class Users:
    """The users of one cluster. ``events``: where AlterUserScramCredentials' changes are
    recorded (none without it); ``tokens``: the delegation tokens a SCRAM ``tokenauth`` login
    is checked against (none without them: every token is unknown)."""

    def __init__(self, events: EventLog | None = None, *, tokens: DelegationTokens | None = None) -> None:
        self._events = events
        self.tokens = tokens
        self._passwords: dict[str, str] = {}  # PLAIN
        self._scram: dict[str, dict[str, ScramCredential]] = {m: {} for m in SCRAM_MECHANISMS}

    # -- set-up (tests, the cluster's options) -------------------------------------------------
    def add(
        self,
        name: str,
        password: str,
        mechanisms: Iterable[str] = MECHANISMS,
        *,
        iterations: int = DEFAULT_ITERATIONS,
    ) -> None:
        """Let ``name`` log in with ``password`` over each of ``mechanisms`` (PLAIN,
        SCRAM-SHA-256, SCRAM-SHA-512; all by default): the PLAIN password, and SCRAM
        credentials with a random salt and ``iterations``. Records no event."""
        chosen = list(mechanisms)
        unknown = [m for m in chosen if m not in MECHANISMS]
        if unknown:
            raise ValueError(f"SASL mechanisms {unknown}: the mechanisms are {', '.join(MECHANISMS)}")
        if not name:
            raise ValueError("a user needs a name")
        for mechanism in chosen:
            if mechanism == "PLAIN":
                self._passwords[name] = password
            else:
                self._scram[mechanism][name] = make_credential(password, mechanism, iterations)

    def remove(self, name: str) -> None:
        """Forget ``name``: its PLAIN password and every SCRAM credential. Records no event."""
        self._passwords.pop(name, None)
        for by_user in self._scram.values():
            by_user.pop(name, None)

    # -- what the mechanisms check -----------------------------------------------------------------
    def plain_password(self, name: str) -> str | None:
        return self._passwords.get(name)

    def check_plain(self, name: str, password: str) -> bool:
        """Whether ``password`` is ``name``'s PLAIN password (compared in constant time; an
        unknown user is simply refused)."""
        expected = self._passwords.get(name)
        return expected is not None and hmac.compare_digest(password.encode("utf-8"), expected.encode("utf-8"))

    def scram_credential(self, name: str, mechanism: str) -> ScramCredential | None:
        return self._scram.get(mechanism, {}).get(name)

    def token_login(self, token_id: str, mechanism: str) -> TokenLogin | None:
        """A delegation token's SCRAM credential for ``mechanism``, its owner's name and its
        expiry, for a ``tokenauth=true`` login as ``token_id`` (None: no such token)."""
        return self.tokens.login(token_id, mechanism) if self.tokens is not None else None

    def scram_users(self) -> list[str]:
        """Every user with a SCRAM credential of any mechanism."""
        return list(dict.fromkeys(name for m in SCRAM_MECHANISMS for name in self._scram[m]))

    # -- SCRAM credentials one at a time ----------------------------------------------------------
    def set_scram(self, name: str, mechanism: str, credential: ScramCredential, now_ms: int | None = None) -> None:
        """Set ``name``'s credential for ``mechanism`` as it is (a stored one restored, or one
        with too few iterations to test that login fails); records the change."""
        self._scram[mechanism][name] = credential
        self._record(name, mechanism, "upserted", credential.iterations, now_ms)

    def upsert_scram(
        self,
        name: str,
        mechanism: str,
        iterations: int,
        salt: bytes,
        salted_password: bytes,
        now_ms: int | None = None,
    ) -> ScramCredential:
        """What an AlterUserScramCredentials upsertion does once checked: the StoredKey and
        ServerKey derived from the salted password the client sent replace ``name``'s
        credential for ``mechanism``; records the change."""
        credential = credential_from_salted(mechanism, salt, salted_password, iterations)
        self.set_scram(name, mechanism, credential, now_ms)
        return credential

    def delete_scram(self, name: str, mechanism: str, now_ms: int | None = None) -> bool:
        """Remove ``name``'s credential for ``mechanism``; False when there was none. Records
        the change."""
        if self._scram[mechanism].pop(name, None) is None:
            return False
        self._record(name, mechanism, "deleted", None, now_ms)
        return True

    def _record(self, name: str, mechanism: str, change: str, iterations: int | None, now_ms: int | None) -> None:
        if self._events is not None:
            event = ScramCredentialsAltered(user=name, mechanism=mechanism, change=change, iterations=iterations)
            self._events.append(event, now_ms)

    # -- the admin APIs ------------------------------------------------------------------------
    def describe(self, names: Sequence[str] | None = None) -> list[Described]:
        """DescribeUserScramCredentials: each of ``names`` (None or empty: every user with a
        credential) with its mechanisms and iterations, RESOURCE_NOT_FOUND for one without any,
        DUPLICATE_RESOURCE for one asked twice; in Kafka's (HashMap) order."""
        if not names:
            asked = self.scram_users()
            twice: set[str] = set()
        else:
            asked = list(names)
            twice = {n for n in asked if asked.count(n) > 1}
        out = []
        for name in _java_hash_map_order(asked):
            if name in twice:
                message = f"Cannot describe SCRAM credentials for the same user twice in a single request: {name}"
                out.append(Described(name, ErrorCode.DUPLICATE_RESOURCE, message, []))
                continue
            # Kafka walks a map keyed by the mechanism enum, in no fixed order: here by code
            infos = [
                (code, credential.iterations)
                for code, mechanism in MECHANISM_CODES.items()
                if (credential := self._scram[mechanism].get(name)) is not None
            ]
            if infos:
                out.append(Described(name, ErrorCode.NONE, "", infos))
            else:
                message = f"Attempt to describe a user credential that does not exist: {name}"
                out.append(Described(name, ErrorCode.RESOURCE_NOT_FOUND, message, []))
        return out

    def alter(
        self,
        deletions: Sequence[Deletion],
        upsertions: Sequence[Upsertion],
        *,
        scram_supported: bool = True,
        now_ms: int | None = None,
    ) -> list[Altered]:
        """AlterUserScramCredentials as Kafka's controller answers it: one result per user. A
        user named twice in the request (deletions and upsertions together, any mechanisms)
        gets DUPLICATE_RESOURCE, unless its first entry already failed; the rest are checked
        (empty name, unknown mechanism, iterations, a deletion of nothing) and applied
        together. Results: the deletions done, the upsertions done, then the errors, each in
        Java HashMap order. ``scram_supported``: the finalized metadata.version has SCRAM
        (3.5-IV2, level 11, or later)."""
        to_delete: dict[str, Deletion] = {}
        to_upsert: dict[str, Upsertion] = {}
        errors: dict[str, tuple[int, str | None]] = {}
        peak_deletes = peak_upserts = 0
        unsupported = (ErrorCode.UNSUPPORTED_VERSION, "The current metadata.version does not support SCRAM")
        for deletion in deletions:
            name = deletion.name
            if name in errors:
                continue
            if to_delete.pop(name, None) is not None:
                errors[name] = (ErrorCode.DUPLICATE_RESOURCE, _TWICE)
                continue
            error = self._check_deletion(deletion) if scram_supported else unsupported
            if error is not None:
                errors[name] = error
            else:
                to_delete[name] = deletion
                peak_deletes = max(peak_deletes, len(to_delete))
        for upsertion in upsertions:
            name = upsertion.name
            if name in errors:
                continue
            if to_delete.pop(name, None) is not None or to_upsert.pop(name, None) is not None:
                errors[name] = (ErrorCode.DUPLICATE_RESOURCE, _TWICE)
                continue
            error = _check_upsertion(upsertion) if scram_supported else unsupported
            if error is not None:
                errors[name] = error
            else:
                to_upsert[name] = upsertion
                peak_upserts = max(peak_upserts, len(to_upsert))
        results: list[Altered] = []
        for name in _java_hash_map_order(to_delete, peak_deletes):
            self.delete_scram(name, MECHANISM_CODES[to_delete[name].mechanism], now_ms)
            results.append(Altered(name, ErrorCode.NONE, None))
        for name in _java_hash_map_order(to_upsert, peak_upserts):
            up = to_upsert[name]
            if not up.salted_password:
                # Java's HMAC refuses an empty key ("Empty key"), an IllegalArgumentException:
                # UNKNOWN_SERVER_ERROR, whose message Kafka never sends
                errors[name] = (ErrorCode.UNKNOWN_SERVER_ERROR, None)
                continue
            self.upsert_scram(name, MECHANISM_CODES[up.mechanism], up.iterations, up.salt, up.salted_password, now_ms)
            results.append(Altered(name, ErrorCode.NONE, None))
        for name in _java_hash_map_order(errors):
            code, message = errors[name]
            results.append(Altered(name, code, message))
        return results

    def _check_deletion(self, deletion: Deletion) -> tuple[int, str] | None:
        error = _check_name_and_mechanism(deletion.name, deletion.mechanism)
        if error is not None:
            return error
        if deletion.name not in self._scram[MECHANISM_CODES[deletion.mechanism]]:
            return ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
        return None


def _check_name_and_mechanism(name: str, mechanism: int) -> tuple[int, str] | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISM_CODES:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def _check_upsertion(upsertion: Upsertion) -> tuple[int, str] | None:
    error = _check_name_and_mechanism(upsertion.name, upsertion.mechanism)
    if error is not None:
        return error
    if upsertion.iterations < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if upsertion.iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    return None


__all__ = ["Altered", "Deletion", "Described", "SCRAM_MECHANISMS", "Upsertion", "Users"]
