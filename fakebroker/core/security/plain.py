"""PLAIN (RFC 4616) as Kafka's broker does it (``PlainSaslServer``, ``PlainServerCallbackHandler``):
one token, ``authzid NUL authcid NUL password`` in UTF-8, answered with nothing on success.

Every failure's text reaches the client as it is (Kafka throws SaslAuthenticationException),
checked in Kafka's order: the token's shape, an empty name, an empty password, the password
(compared in constant time; an unknown user fails the same way), then the authorization id,
which must be empty or the name.
"""

from __future__ import annotations

from typing import Protocol

from .sasl import SaslFailure


class PlainPasswords(Protocol):
    """Where a :class:`PlainServer` checks passwords (the cluster's ``Users``)."""

    def check_plain(self, name: str, password: str) -> bool: ...


def _tokens(text: str) -> list[str]:
    """``extractTokens``: the parts between NULs, at most 4 (three or more NULs make 4)."""
    return text.split("\0", 3)


class PlainServer:
    """The server side of one PLAIN exchange, checking ``users``' PLAIN passwords."""

    mechanism = "PLAIN"

    def __init__(self, users: PlainPasswords):
        self._users = users
        self._complete = False
        self._authorization_id = ""

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def principal(self) -> str:
        if not self._complete:
            raise RuntimeError("Authentication exchange has not completed")
        return f"User:{self._authorization_id}"

    @property
    def expiry_ms(self) -> int | None:
        return None

    def evaluate(self, token: bytes) -> bytes:
        tokens = _tokens(token.decode("utf-8", "replace"))
        if len(tokens) != 3:
            raise SaslFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
        authzid, username, password = tokens
        if not username:
            raise SaslFailure("Authentication failed: username not specified")
        if not password:
            raise SaslFailure("Authentication failed: password not specified")
        try:
            authenticated = self._users.check_plain(username, password)
        except Exception as e:  # Kafka: any error of the callback handler
            raise SaslFailure("Authentication failed: credentials for user could not be verified") from e
        if not authenticated:
            raise SaslFailure("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslFailure(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        self._authorization_id = username
        self._complete = True
        return b""
