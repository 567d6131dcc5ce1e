"""A tiny synchronous Kafka client built on fakebroker's own protocol layer, for tests that
need exact control over what is sent (versions, odd values, garbage)."""

from __future__ import annotations

import socket
import struct
from typing import Any

from fakebroker.protocol import headers
from fakebroker.protocol.messages import Message


class RawClient:
    def __init__(self, port: int, host: str = "127.0.0.1", client_id: str = "raw-test", timeout: float = 10):
        self.sock = socket.create_connection((host, port), timeout=timeout)
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

    def _exactly(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            out += chunk
        return out
