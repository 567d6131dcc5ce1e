"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's broker does them
(``ScramSaslServer``, ``ScramMessages``, ``ScramFormatter``): the stored credential, and the
server side of one exchange.

The exchange takes two rounds. The client-first message (``n,[a=authzid],n=name,r=nonce[,ext]``)
is answered with the server-first (``r=nonce+server nonce,s=salt,i=iterations``), the
client-final (``c=...,r=nonce[,ext],p=proof``) with the server-final (``v=signature``). An
unknown user fails at the first round, a wrong password at the second, and every failure but
one is a :class:`SaslFailure` whose text Kafka never shows the client (``passthrough=False``:
the authenticator answers its generic text, so nobody learns whether a user exists). The one
that passes through is an authorization id other than the user's name. The server never sends
``e=``.

Messages are read as Kafka reads them: whole-string patterns over the UTF-8 text (so names,
nonces and extension values are ASCII), the client-first-bare rebuilt from its parts and the
client-final-without-proof from the channel binding decoded and encoded again (what the proof
is checked against). The ``c=`` channel binding itself is never checked, as in Kafka.

With the ``tokenauth=true`` extension the name is a delegation token's id and the password its
HMAC in base64: the token's credential (both mechanisms, 4096 iterations) is checked, the
session's principal is the token's owner (``User:<owner name>``), marked token-authenticated
(``token_authenticated``: the token APIs refuse it), and it ends at the token's expiry
(``expiry_ms``). An unknown token fails at the first round, with the generic text.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import os
import re
from collections.abc import Callable
from typing import Protocol

from ...lazy_dataclasses import dataclass
from .sasl import SaslFailure

# Kafka's SCRAM mechanisms: the hash of each, and the codes AlterUserScramCredentials and
# DescribeUserScramCredentials name them by (``org.apache.kafka.clients.admin.ScramMechanism``)
HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISM_CODES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
CODES = {name: code for code, name in MECHANISM_CODES.items()}
MIN_ITERATIONS = 4096  # ScramMechanism.minIterations, both mechanisms
MAX_ITERATIONS = 16384  # ScramControlManager.MAX_ITERATIONS: AlterUserScramCredentials' limit
DEFAULT_ITERATIONS = 4096  # what kafka-configs uses (ConfigCommand.DEFAULT_SCRAM_ITERATIONS)
TOKEN_AUTH = "tokenauth"  # the one extension Kafka understands (delegation tokens)

# ScramMessages' patterns, in Python's spelling of Java's character-class intersections
_VALUE_SAFE = r"[\x01-\x2b\x2d-\x3c\x3e-\x7f]"  # [\x01-\x7F&&[^=,]]
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"  # [\x01-\x7F&&[^,]]+
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"  # [\x21-\x7E&&[^,]]+
_SASLNAME = rf"(?:{_VALUE_SAFE}|=2C|=3D)+"
_B64 = "[a-zA-Z0-9/+]"
_BASE64 = rf"(?:{_B64}{{4}})*(?:{_B64}{{3}}=|{_B64}{{2}}==)?"
_RESERVED = rf"(?:m={_VALUE},)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = (
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,{_RESERVED}n=(?P<saslname>{_SASLNAME}),"
    rf"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS})"
)
_CLIENT_FINAL = rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS},p=(?P<proof>{_BASE64})"


@functools.cache  # compiled at the first SCRAM exchange, not at import: a cluster without SASL needs none
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


@dataclass(frozen=True)
class ScramCredential:
    """What the broker keeps of a user's password for one SCRAM mechanism (Kafka's
    ``ScramCredential``, the ``UserScramCredentialRecord``): never the password itself."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


class TokenLogin(Protocol):
    """What a ``tokenauth`` login reads of a delegation token (``tokens.TokenLogin``)."""

    @property
    def credential(self) -> ScramCredential: ...
    @property
    def owner_name(self) -> str: ...
    @property
    def expiry_ms(self) -> int: ...


class ScramCredentials(Protocol):
    """Where a :class:`ScramServer` looks credentials up (the cluster's ``Users``): a user's,
    or a delegation token's for a ``tokenauth=true`` login."""

    def scram_credential(self, name: str, mechanism: str) -> ScramCredential | None: ...

    def token_login(self, token_id: str, mechanism: str) -> TokenLogin | None: ...


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """SaltedPassword = Hi(password, salt, i): PBKDF2 with HMAC of the mechanism's hash over the
    password's UTF-8 bytes (Kafka does not SASLprep them)."""
    return hashlib.pbkdf2_hmac(HASHES[mechanism], password.encode("utf-8"), salt, iterations)


def credential_from_salted(mechanism: str, salt: bytes, salted: bytes, iterations: int) -> ScramCredential:
    """The stored credential from a salted password (what the controller does with an
    AlterUserScramCredentials upsertion): StoredKey = H(HMAC(SaltedPassword, "Client Key")),
    ServerKey = HMAC(SaltedPassword, "Server Key")."""
    digest = HASHES[mechanism]
    client_key = hmac.digest(salted, b"Client Key", digest)
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.digest(salted, b"Server Key", digest)
    return ScramCredential(salt, stored_key, server_key, iterations)


def make_credential(
    password: str, mechanism: str, iterations: int = DEFAULT_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    """A credential for ``password`` (a random 16-byte salt unless one is given; Kafka's own
    tools use the UTF-8 of a random base-36 string, any salt works)."""
    if mechanism not in HASHES:
        raise ValueError(f"no SCRAM mechanism {mechanism!r}; the mechanisms are {', '.join(HASHES)}")
    salt = os.urandom(16) if salt is None else salt
    return credential_from_salted(mechanism, salt, salted_password(mechanism, password, salt, iterations), iterations)


def saslname(username: str) -> str:
    """A user name as SCRAM writes it (``=`` as ``=3D``, ``,`` as ``=2C``)."""
    return username.replace("=", "=3D").replace(",", "=2C")


def username(name: str) -> str:
    """A saslname read back (``ScramFormatter.username``); ValueError for a bare ``=``."""
    unescaped = name.replace("=2C", ",")
    if "=" in unescaped.replace("=3D", ""):
        raise ValueError(f"Invalid username: {name}")
    return unescaped.replace("=3D", "=")


def _b64decode(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))


class ScramServer:
    """The server side of one SCRAM exchange, checking ``users``' credentials (read once, at the
    first round); ``nonce()`` gives the server's part of the nonce (random in a broker, fixed in
    tests). With ``nonce_may_repeat`` (Kafka 3.8.1-3.9's rule), the client-final's nonce need only
    end with the server-first's, for librdkafka before 2.6.1, which sends the client's part twice;
    Kafka 4 wants them equal again."""

    def __init__(
        self, mechanism: str, users: ScramCredentials, nonce: Callable[[], str], *, nonce_may_repeat: bool = False
    ):
        if mechanism not in HASHES:
            raise ValueError(f"no SCRAM mechanism {mechanism!r}; the mechanisms are {', '.join(HASHES)}")
        self.mechanism = mechanism
        self._digest = HASHES[mechanism]
        self._users = users
        self._nonce = nonce
        self._nonce_may_repeat = nonce_may_repeat
        self._state = "RECEIVE_CLIENT_FIRST_MESSAGE"  # Kafka's names: then RECEIVE_CLIENT_FINAL_MESSAGE
        self._credential: ScramCredential | None = None
        self._first_bare = ""  # client-first-bare as Kafka rebuilds it
        self._server_first = ""
        self._nonce_sent = ""
        self._authorization_id = ""
        self._token_expiry_ms: int | None = None  # a delegation token's expiry (a tokenauth login)
        # the client-first's extensions (name -> value); ``tokenauth=true`` asks for a
        # delegation token's credential (``token_authenticated``)
        self.extensions: dict[str, str] = {}

    @property
    def token_authenticated(self) -> bool:
        """The client asked to log in with a delegation token (``tokenauth`` true, any case)."""
        return self.extensions.get(TOKEN_AUTH, "").lower() == "true"

    @property
    def complete(self) -> bool:
        return self._state == "COMPLETE"

    @property
    def principal(self) -> str:
        if not self.complete:
            raise RuntimeError("Authentication exchange has not completed")
        return f"User:{self._authorization_id}"

    @property
    def expiry_ms(self) -> int | None:
        """A delegation token's expiry once a ``tokenauth`` login completed (the session ends
        there); None for a user's login."""
        return self._token_expiry_ms if self.complete else None

    def evaluate(self, token: bytes) -> bytes:
        state = self._state
        try:
            if state == "RECEIVE_CLIENT_FIRST_MESSAGE":
                return self._client_first(token.decode("utf-8", "replace"))
            if state == "RECEIVE_CLIENT_FINAL_MESSAGE":
                return self._client_final(token.decode("utf-8", "replace"))
            raise SaslFailure(f"Unexpected challenge in Sasl server state {state}", passthrough=False)
        except SaslFailure:
            self._credential = None
            self._state = "FAILED"
            raise

    def _client_first(self, message: str) -> bytes:
        match = _compiled(_CLIENT_FIRST).fullmatch(message)
        if match is None:
            raise SaslFailure(f"Invalid SCRAM client first message format: {message}", passthrough=False)
        name, client_nonce = match["saslname"], match["nonce"]
        extensions: dict[str, str] = {}
        for pair in match["extensions"][1:].split(",") if match["extensions"] else ():
            key, value = pair.split("=", 1)
            extensions[key] = value
        self.extensions = extensions
        # Kafka rebuilds client-first-bare from a map of the extensions: a name sent twice counts
        # once. (With several extensions its order is the JVM's, per run; here the client's.)
        ext = ",".join(f"{k}={v}" for k, v in extensions.items())
        self._first_bare = f"n={name},r={client_nonce}" + (f",{ext}" if ext else "")
        try:
            user = username(name)
        except ValueError as e:
            raise SaslFailure("Authentication failed: Credentials could not be obtained", passthrough=False) from e
        authorization_id, token_expiry_ms = user, None
        login: TokenLogin | None = None
        try:
            if self.token_authenticated:  # a delegation token: its id and base64 HMAC
                login = self._users.token_login(user, self.mechanism)
                credential = None if login is None else login.credential
            else:
                credential = self._users.scram_credential(user, self.mechanism)
        except Exception as e:  # Kafka: any error of the callback handler
            raise SaslFailure("Authentication failed: Credentials could not be obtained", passthrough=False) from e
        if self.token_authenticated:
            if login is None:
                raise SaslFailure(f"Token Authentication failed: Invalid tokenId : {user}", passthrough=False)
            authorization_id, token_expiry_ms = login.owner_name, login.expiry_ms  # the session is the owner's
        if credential is None:
            raise SaslFailure("Authentication failed: Invalid user credentials", passthrough=False)
        authzid = match["authzid"] or ""
        if authzid and authzid != user:  # Kafka compares the authzid as sent with the unescaped name
            raise SaslFailure(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        if credential.iterations < MIN_ITERATIONS:
            raise SaslFailure(
                f"Iterations {credential.iterations} is less than the minimum {MIN_ITERATIONS} for {self.mechanism}",
                passthrough=False,
            )
        self._credential = credential
        self._authorization_id = authorization_id
        self._token_expiry_ms = token_expiry_ms
        self._nonce_sent = client_nonce + self._nonce()
        self._server_first = f"r={self._nonce_sent},s={_b64(credential.salt)},i={credential.iterations}"
        self._state = "RECEIVE_CLIENT_FINAL_MESSAGE"
        return self._server_first.encode("utf-8")

    def _client_final(self, message: str) -> bytes:
        match = _compiled(_CLIENT_FINAL).fullmatch(message)
        if match is None:
            raise SaslFailure(f"Invalid SCRAM client final message format: {message}", passthrough=False)
        nonce = match["nonce"]
        if nonce != self._nonce_sent and not (self._nonce_may_repeat and nonce.endswith(self._nonce_sent)):
            raise SaslFailure("Invalid client nonce in the final client message.", passthrough=False)
        credential = self._credential
        assert credential is not None
        try:
            channel, proof = _b64decode(match["channel"]), _b64decode(match["proof"])
        except binascii.Error as e:  # the pattern admits only what decodes
            raise SaslFailure("Invalid SCRAM client final message format", passthrough=False) from e
        # Kafka's AuthMessage drops the client-final's extensions and re-encodes the binding
        auth_message = f"{self._first_bare},{self._server_first},c={_b64(channel)},r={nonce}".encode()
        client_signature = hmac.digest(credential.stored_key, auth_message, self._digest)
        if len(proof) != len(client_signature):
            # Kafka's xor throws IllegalArgumentException here, which closes the connection unanswered
            raise SaslFailure("Argument arrays must be of the same length", passthrough=False)
        computed = hashlib.new(self._digest, _xor(client_signature, proof)).digest()
        if not hmac.compare_digest(computed, credential.stored_key):
            raise SaslFailure("Invalid client credentials", passthrough=False)
        signature = hmac.digest(credential.server_key, auth_message, self._digest)
        self._credential = None
        self._state = "COMPLETE"
        return f"v={_b64(signature)}".encode("ascii")
