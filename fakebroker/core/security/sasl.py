"""The one interface of every SASL mechanism's server side, and how one fails."""

from __future__ import annotations

from typing import Protocol


class SaslFailure(Exception):
    """Authentication failed. ``str(failure)`` is what Kafka's broker sends back as
    SaslAuthenticate's error_message (PLAIN's own texts pass through; SCRAM's are replaced by
    the authenticator with Kafka's generic one, so ``passthrough`` is False for them)."""

    def __init__(self, message: str, *, passthrough: bool = True):
        super().__init__(message)
        self.passthrough = passthrough


class SaslServer(Protocol):
    """One authentication exchange of one mechanism, token by token."""

    mechanism: str

    def evaluate(self, token: bytes) -> bytes:
        """The answer to the client's next token (b"" when the mechanism has nothing to say);
        raises :class:`SaslFailure`."""
        ...

    @property
    def complete(self) -> bool:
        """The exchange has succeeded (no more tokens expected)."""
        ...

    @property
    def principal(self) -> str:
        """``"User:<name>"`` once complete."""
        ...

    @property
    def expiry_ms(self) -> int | None:
        """When the credential used ends (a delegation token's expiry, an OAuth token's
        ``exp``), in the cluster clock's ms; None when it does not."""
        ...
