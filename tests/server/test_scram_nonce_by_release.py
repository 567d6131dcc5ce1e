"""Kafka 3.8.1-3.9.x's ScramSaslServer accepts a client-final nonce that *ends with* the
server-first nonce (``clientFinalMessage.nonce().endsWith(serverFirstMessage.nonce())``, the
workaround for librdkafka < 2.6.1, which sends client-nonce + server-first-nonce); Kafka 4.0+
requires it *equal*. fakebroker follows the release it poses as."""

import base64
import hashlib
import hmac

import pytest

from fakebroker.cluster import FakeCluster
from fakebroker.protocol.error_codes import ErrorCode

from ..raw_client import RawClient

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36


def librdkafka_before_2_6_1(port: int) -> tuple[int, str | None]:
    """SCRAM-SHA-512 as librdkafka 2.0.2 (Debian bookworm's, kcat 1.7.1's) does it: the
    client-final's r= and the AuthMessage carry the client nonce twice."""
    nonce = "nbatDk9c11wYN@3a[ydElK<=4:>7W@b0"
    bare = f"n=alice,r={nonce}"
    with RawClient(port) as client:
        assert client.request(SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-512"}).error_code == 0
        first = client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": f"n,,{bare}".encode()})
        server_first = first.auth_bytes.decode()
        fields = dict(p.split("=", 1) for p in server_first.split(","))
        salted = hashlib.pbkdf2_hmac("sha512", b"alice-secret", base64.b64decode(fields["s"]), int(fields["i"]))
        client_key = hmac.digest(salted, b"Client Key", "sha512")
        without_proof = f"c=biws,r={nonce}{fields['r']}"  # the bug: the client nonce again
        auth = f"{bare},{server_first},{without_proof}".encode()
        signature = hmac.digest(hashlib.sha512(client_key).digest(), auth, "sha512")
        proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
        final = client.request(SASL_AUTHENTICATE, 2, {"auth_bytes": f"{without_proof},p={proof}".encode()})
        return final.error_code, final.error_message


@pytest.mark.parametrize("version, accepted", [("3.9", True), ("4.4", False)])
def test_scram_nonce_check_follows_the_posed_release(version, accepted):
    users = {"alice": "alice-secret"}
    with FakeCluster(kafka_version=version, security_protocol="SASL_PLAINTEXT", users=users).run_in_thread() as c:
        code, message = librdkafka_before_2_6_1(c.servers[0].port)
    if accepted:  # Kafka 3.9.2: endsWith
        assert code == 0, message
    else:  # Kafka 4.4: equals
        assert code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert message == (
            "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
        )
