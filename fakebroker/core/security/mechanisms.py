"""The server side of the SASL mechanisms: one interface for all of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .sasl import SaslFailure, SaslServer

if TYPE_CHECKING:
    from .oauthbearer import TokenValidator
    from .users import Users

__all__ = ["MECHANISMS", "SaslFailure", "SaslServer", "new_server"]

# Kafka's names of the mechanisms fakebroker serves, in Kafka's order of them
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def new_server(
    mechanism: str,
    users: Users,
    now_ms: int,
    nonce: Callable[[], str],
    *,
    nonce_may_repeat: bool = False,
    oauth: TokenValidator | None = None,
) -> SaslServer:
    """A server-side exchange for ``mechanism`` (one of :data:`MECHANISMS`) checking ``users``'
    credentials; ``nonce()`` gives SCRAM's server nonce (random in a broker, fixed in tests).
    OAUTHBEARER's tokens are checked by ``oauth`` (Kafka's default, the unsecured JWS
    validator, when None) at ``now_ms``."""
    if mechanism == "PLAIN":
        from .plain import PlainServer

        return PlainServer(users)
    if mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        from .scram import ScramServer

        return ScramServer(mechanism, users, nonce, nonce_may_repeat=nonce_may_repeat)
    if mechanism == "OAUTHBEARER":
        from .oauthbearer import OAuthBearerServer, UnsecuredJwsValidator

        return OAuthBearerServer(oauth if oauth is not None else UnsecuredJwsValidator(), now_ms)
    raise ValueError(f"no SASL mechanism {mechanism!r}; the mechanisms are {', '.join(MECHANISMS)}")
