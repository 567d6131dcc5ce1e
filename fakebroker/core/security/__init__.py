"""Security as Kafka's broker does it (issue 37): users and their credentials, the SASL
mechanisms' server side, and the authenticator each connection of a SASL listener walks
through before its first request (pure: no sockets, no TLS; the server's edge feeds it).

- ``mechanisms.py``: :class:`SaslServer`, the one interface of every mechanism's server side,
  :class:`SaslFailure`, and :func:`new_server`, which makes one for a mechanism;
- ``plain.py``: PLAIN; ``scram.py``: SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802/7677), and the
  stored credentials they check; ``oauthbearer.py``: OAUTHBEARER and Kafka's unsecured JWS
  validator; ``oauthbearer_jwks.py``: Kafka's secured validator (signed JWTs, a JWKS given
  as data); ``tokens.py``: delegation tokens;
- ``acls.py`` and ``authorizer.py``: ACLs and StandardAuthorizer's decisions; ``principal.py``:
  a client certificate's principal (``ssl.principal.mapping.rules``);
- ``users.py``: :class:`Users`, the cluster's users: PLAIN passwords and SCRAM credentials,
  what AlterUserScramCredentials and DescribeUserScramCredentials change and read;
- ``authenticator.py``: one connection's SASL state machine (handshake, authenticate, the
  session's lifetime, re-authentication), answering with Kafka's errors.
"""

from __future__ import annotations

from .mechanisms import MECHANISMS, SaslFailure, SaslServer, new_server
from .users import Users

__all__ = ["MECHANISMS", "SaslFailure", "SaslServer", "Users", "new_server"]
