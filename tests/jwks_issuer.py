"""A tiny OAuth token issuer for the tests of Kafka's secured OAUTHBEARER validator: signing keys
made here (RSA 2048, ES256), their JWKS written to a file (replaced atomically, as the docs
advise) or served over http by a local ``http.server`` on 127.0.0.1 in a thread, and JWTs
signed with them (PyJWT)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

AUDIENCE = "kafka-cluster"
ISSUER = "https://issuer.test"


class Issuer:
    """Signing keys by kid; ``jwks`` lists the public halves of those published."""

    def __init__(self) -> None:
        self.keys: dict[str, Any] = {}
        self.published: list[str] = []

    def add_key(self, kid: str, alg: str = "RS256", publish: bool = True) -> None:
        self.keys[kid] = (
            ec.generate_private_key(ec.SECP256R1())
            if alg.startswith("ES")
            else rsa.generate_private_key(public_exponent=65537, key_size=2048)
        )
        if publish:
            self.published.append(kid)

    def publish(self, kid: str) -> None:
        self.published.append(kid)

    @property
    def jwks(self) -> dict[str, Any]:
        keys = []
        for kid in self.published:
            public = self.keys[kid].public_key()
            maker = ECAlgorithm if isinstance(public, ec.EllipticCurvePublicKey) else RSAAlgorithm
            keys.append({**json.loads(maker.to_jwk(public)), "kid": kid, "use": "sig"})
        return {"keys": keys}

    def token(self, sub: str, kid: str, life_s: float = 600, alg: str = "RS256", **claims: Any) -> str:
        now = int(time.time())
        body = {"sub": sub, "iat": now, "exp": now + int(life_s), "aud": AUDIENCE, "iss": ISSUER, **claims}
        return jwt.encode({k: v for k, v in body.items() if v is not None}, self.keys[kid], alg, {"kid": kid})

    def write(self, path: Path) -> str:
        """The JWKS to ``path`` (atomically: a new file renamed over it); its ``file:`` URL."""
        fresh = path.with_name(path.name + ".new")
        fresh.write_text(json.dumps(self.jwks))
        os.replace(fresh, path)
        return path.as_uri()


def broker_settings(url: str, **more: Any) -> dict[str, Any]:
    """The broker settings of a secured validator on ``url`` expecting this issuer's tokens."""
    return {
        "sasl.oauthbearer.jwks.endpoint.url": url,
        "sasl.oauthbearer.expected.audience": AUDIENCE,
        "sasl.oauthbearer.expected.issuer": ISSUER,
        **more,
    }


class JwksServer:
    """The issuer's JWKS at ``url`` (http, 127.0.0.1), counting the GETs it answered."""

    def __init__(self, issuer: Issuer):
        self.issuer = issuer
        self.hits = 0
        self.url = ""


@contextmanager
def serve_jwks(issuer: Issuer) -> Iterator[JwksServer]:
    served = JwksServer(issuer)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = json.dumps(served.issuer.jwks).encode()
            served.hits += 1
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served.url = f"http://127.0.0.1:{server.server_address[1]}/.well-known/jwks.json"
    thread = threading.Thread(target=server.serve_forever, name="test-jwks-server", daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
