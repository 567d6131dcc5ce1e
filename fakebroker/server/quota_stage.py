"""Client quota throttling at the edge: after a Produce or Fetch is handled, record its bytes
against the client's byte-rate quota (``core/quotas.py``) and, when the rate is above it,
answer with ``throttle_time_ms`` and mute the connection for that long, as Kafka does (KIP-219:
the answer goes out at once, the client is expected to wait, and the broker reads nothing more
from that connection until the time has passed).

What is counted, as in Kafka's KafkaApis: a Produce's request size (here: the request payload,
header included), a Fetch's response size (here: the encoded answer). A throttled Fetch is
answered without data (its bytes are taken back from the rate), as Kafka's
``getThrottledResponse`` does; the fetch session, if any, is left as the handler left it.
Before a Fetch is handled, its ``max_bytes`` is capped at what the quota lets through in a
window (``consumer_byte_rate`` x 10 s, Kafka's ``maxValueInQuotaWindow``), so a consumer under a
quota still gets its first batch.
"""

from __future__ import annotations

from ..core.quotas import ANONYMOUS, CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, SAMPLES, WINDOW_MS
from ..protocol import headers
from ..protocol.messages import Message
from .runtime import Runtime

PRODUCE, FETCH = 0, 1


def applies(runtime: Runtime, api_key: int) -> bool:
    return api_key in (PRODUCE, FETCH) and bool(runtime.state.quotas.entries)


def cap_fetch(runtime: Runtime, client_id: str | None, request: Message) -> None:
    """Lower a Fetch's ``max_bytes`` to the consumer quota's window, as Kafka does."""
    found = runtime.state.quotas.bound(CONSUMER_BYTE_RATE, ANONYMOUS, client_id or "")
    if found is not None and hasattr(request, "max_bytes"):
        window_bytes = int(found[0] * (SAMPLES - 1) * WINDOW_MS / 1000)
        request.max_bytes = min(request.max_bytes, window_bytes)


def produce_throttle(runtime: Runtime, client_id: str | None, request_size: int) -> int:
    """Record a Produce request's bytes; its throttle time (ms)."""
    return runtime.state.quotas.record(
        PRODUCER_BYTE_RATE, ANONYMOUS, client_id or "", request_size, runtime.clock.now_ms()
    )


def throttle_fetch(
    runtime: Runtime, client_id: str | None, api_version: int, correlation_id: int, response: Message, encoded: bytes
) -> tuple[bytes, int]:
    """Record a Fetch answer's bytes; the answer to send (without data when throttled) and the
    throttle time (ms)."""
    quotas, now = runtime.state.quotas, runtime.clock.now_ms()
    size = len(encoded)
    throttle = quotas.record(CONSUMER_BYTE_RATE, ANONYMOUS, client_id or "", size, now)
    if throttle <= 0:
        return encoded, 0
    quotas.unrecord(CONSUMER_BYTE_RATE, ANONYMOUS, client_id or "", size, now)
    response.responses = []
    response.throttle_time_ms = max(response.throttle_time_ms or 0, throttle)
    return headers.encode_response(FETCH, api_version, correlation_id, response), throttle


def set_throttle(response: Message, throttle_ms: int) -> None:
    if throttle_ms > 0 and hasattr(response, "throttle_time_ms"):
        response.throttle_time_ms = max(response.throttle_time_ms or 0, throttle_ms)
