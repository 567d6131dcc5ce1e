"""A SCRAM client as RFC 5802 describes it (what kafka-python and librdkafka do), for tests
that drive the broker's side of an exchange (``ScramServer``, the authenticator)."""

from __future__ import annotations

import base64
import hashlib
import hmac

from fakebroker.core.security.scram import saslname

DIGESTS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


class Client:
    """One client side of an exchange: ``first()``, then ``final(server_first)``, then
    ``verify(server_final)``. ``extensions`` (``",name=value"...``) go in client-first."""

    def __init__(self, mechanism, user, password, *, nonce="fyko+d2lbbFgONRv9qkxdawL", authzid="", extensions=""):
        self.digest = DIGESTS[mechanism]
        self.password = password
        self.nonce = nonce
        self.gs2 = f"n,{'a=' + authzid if authzid else ''},"
        self.bare = f"n={saslname(user)},r={nonce}{extensions}"

    def first(self) -> bytes:
        return (self.gs2 + self.bare).encode()

    def final(self, server_first: bytes, *, extensions: str = "", proof_over: str | None = None) -> bytes:
        fields = dict(part.split("=", 1) for part in server_first.decode().split(","))
        salt, iterations = base64.b64decode(fields["s"]), int(fields["i"])
        salted = hashlib.pbkdf2_hmac(self.digest, self.password.encode(), salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", self.digest)
        stored_key = hashlib.new(self.digest, client_key).digest()
        channel = base64.b64encode(self.gs2.encode()).decode()
        without_proof = f"c={channel},r={fields['r']}{extensions}"
        auth = f"{self.bare},{server_first.decode()},{proof_over or without_proof}".encode()
        proof = bytes(a ^ b for a, b in zip(client_key, hmac.digest(stored_key, auth, self.digest)))
        self.server_signature = hmac.digest(hmac.digest(salted, b"Server Key", self.digest), auth, self.digest)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> bool:
        return server_final == b"v=" + base64.b64encode(self.server_signature)
