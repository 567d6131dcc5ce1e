"""A tiny synchronous Kafka client built on fakebroker's own protocol layer, for tests that
need exact control over what is sent (versions, odd values, garbage).

Over TLS (``tls=tls_context(ca_file)``) and SASL too: :meth:`RawClient.login` runs a SaslHandshake
v1 and SaslAuthenticate exchange with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (the SCRAM client
side is :mod:`tests.core.scram_client`'s, written from RFC 5802, not the broker's code)."""

from __future__ import annotations

import secrets
import socket
import ssl
import struct
from typing import Any

from fakebroker.protocol import headers
from fakebroker.protocol.messages import Message

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36


class SaslError(ConnectionError):
    """A login that failed: the answer that said so (None when the broker closed the connection)."""

    def __init__(self, message: str, answer: Message | None = None):
        super().__init__(message)
        self.answer = answer


def tls_context(ca_file: str) -> ssl.SSLContext:
    """A client's TLS context trusting ``ca_file`` (PEM) and checking the host name."""
    return ssl.create_default_context(cafile=ca_file)


class RawClient:
    def __init__(
        self,
        port: int,
        host: str = "127.0.0.1",
        client_id: str = "raw-test",
        timeout: float = 10,
        *,
        tls: ssl.SSLContext | None = None,
        server_hostname: str = "localhost",
    ):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        if tls is not None:
            try:
                self.sock = tls.wrap_socket(self.sock, server_hostname=server_hostname)
            except BaseException:
                self.sock.close()
                raise
        self.client_id = client_id
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def send(self, api_key: int, version: int, body: Message | dict) -> int:
        self.correlation_id += 1
        payload = headers.encode_request(api_key, version, self.correlation_id, body, client_id=self.client_id)
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        return self.correlation_id

    def send_raw(self, api_key: int, version: int, body: bytes) -> int:
        """A request whose body is given as bytes, for versions or contents no codec has."""
        self.correlation_id += 1
        header = headers.request_header_type().encode(
            {
                "request_api_key": api_key,
                "request_api_version": version,
                "correlation_id": self.correlation_id,
                "client_id": self.client_id,
            },
            headers.request_header_version(api_key, version),
        )
        self.sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
        return self.correlation_id

    def receive(self, api_key: int, version: int) -> Message:
        payload = self.receive_payload()
        header, body = headers.decode_response(api_key, version, payload)
        return body

    def receive_payload(self) -> bytes:
        size = struct.unpack(">i", self._exactly(4))[0]
        return self._exactly(size)

    def request(self, api_key: int, version: int, body: Message | dict) -> Message:
        self.send(api_key, version, body)
        return self.receive(api_key, version)

    # -- SASL ------------------------------------------------------------------------------------
    def login(self, mechanism: str, user: str, password: str, *, handshake: int = 1, version: int = 2) -> Message:
        """SaslHandshake (v1) and SaslAuthenticate until done: the last SaslAuthenticate answer.
        Raises :class:`SaslError` if the broker refuses (or, for SCRAM, its signature is wrong)."""
        shake = self.request(SASL_HANDSHAKE, handshake, {"mechanism": mechanism})
        if shake.error_code:
            raise SaslError(f"SaslHandshake {mechanism}: error {shake.error_code}", shake)
        if mechanism == "PLAIN":
            return self._authenticate(f"\0{user}\0{password}".encode(), version)
        scram = self.scram(mechanism, user, password)
        first = self._authenticate(scram.first(), version)
        final = self._authenticate(scram.final(bytes(first.auth_bytes)), version)
        if not scram.verify(bytes(final.auth_bytes)):
            raise SaslError(f"{mechanism}: the server's signature does not verify", final)
        return final

    @staticmethod
    def scram(mechanism: str, user: str, password: str, **kw: Any) -> Any:
        """The client side of a SCRAM exchange (``first()``, ``final(server_first)``,
        ``verify(server_final)``) with a random nonce."""
        from tests.core.scram_client import Client

        return Client(mechanism, user, password, nonce=kw.pop("nonce", secrets.token_urlsafe(18)), **kw)

    def _authenticate(self, token: bytes, version: int) -> Message:
        try:
            answer = self.request(SASL_AUTHENTICATE, version, {"auth_bytes": token})
        except (OSError, EOFError) as exc:
            raise SaslError(f"SaslAuthenticate: {exc!r}") from exc
        if answer.error_code:
            raise SaslError(f"SaslAuthenticate: error {answer.error_code}: {answer.error_message}", answer)
        return answer

    def _exactly(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            out += chunk
        return out
