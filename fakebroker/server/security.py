"""A listener's security protocol, as Kafka names them: PLAINTEXT, SSL, SASL_PLAINTEXT and
SASL_SSL. TLS is the standard library's ``ssl`` under anyio's TLS stream; SASL is the core's
authenticator (``core/security/``), one per connection."""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

import anyio
from anyio.abc import SocketStream

from ..core.security.acls import ANONYMOUS
from ..core.security.oauthbearer import TokenValidator
from ..core.security.principal import Rule, certificate_principal
from ..lazy_dataclasses import dataclass

if TYPE_CHECKING:  # anyio's TLS stream is imported by the first TLS listener's first connection
    from anyio.streams.tls import TLSStream

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
TLS_HANDSHAKE_S = 10.0  # a client that starts TLS and never finishes it is dropped after this


@dataclass(frozen=True)
class ListenerSecurity:
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None  # the server side's (SSL, SASL_SSL)
    mechanisms: tuple[str, ...] = ()  # the SASL mechanisms enabled (SASL_PLAINTEXT, SASL_SSL)
    mapping_rules: tuple[Rule, ...] = ()  # ssl.principal.mapping.rules (an SSL listener's client certificates)
    oauth: TokenValidator | None = None  # OAUTHBEARER's token validator (None: Kafka's default, the unsecured one)

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"security protocol {self.protocol!r}: the protocols are {', '.join(PROTOCOLS)}")
        if self.tls and self.ssl_context is None:
            raise ValueError(f"security protocol {self.protocol} needs a TLS context")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


async def start_tls(stream: SocketStream, context: ssl.SSLContext) -> TLSStream:
    """The server side of a TLS handshake on ``stream``, within ``TLS_HANDSHAKE_S``. Closing it
    later does not wait for the client's close_notify (Kafka's does not either)."""
    from anyio.streams.tls import TLSStream

    with anyio.fail_after(TLS_HANDSHAKE_S):
        return await TLSStream.wrap(stream, server_side=True, ssl_context=context, standard_compatible=False)


def client_principal(stream: TLSStream, rules: tuple[Rule, ...]) -> str | None:
    """An SSL listener's connection's principal from its client certificate: ``User:`` and the
    subject's RFC 2253 name through the mapping rules; ``User:ANONYMOUS`` without a certificate;
    None when no rule maps it (Kafka then fails the connection)."""
    from anyio.streams.tls import TLSAttribute

    der = stream.extra(TLSAttribute.peer_certificate_binary, None)
    if not der:
        return ANONYMOUS
    from cryptography import x509  # with TLS only: trustme brings it

    name = x509.load_der_x509_certificate(der).subject.rfc4514_string()
    return certificate_principal(name, list(rules))
