"""The quota stage of the pipeline: client byte-rate quotas at the edge. After a request of an
API that counts against one (``Api.byte_quota``: Produce, Fetch) is handled, record its bytes
against the client's quota (``core/quotas.py``) and, when the rate is above it, answer with
``throttle_time_ms`` and mute the connection for that long, as Kafka does (KIP-219: the answer
goes out at once, the client is expected to wait, and the broker reads nothing more from that
connection until the time has passed).

What is counted, as in Kafka's KafkaApis: a Produce's request size (here: the request payload,
header included), a Fetch's response size (here: the encoded answer). A throttled Fetch is
answered without data (its bytes are taken back from the rate), as Kafka's
``getThrottledResponse`` does; the fetch session, if any, is left as the handler left it.
Before a Fetch is handled, its ``max_bytes`` is capped at what the quota lets through in a
window (``consumer_byte_rate`` x 10 s, Kafka's ``maxValueInQuotaWindow``), so a consumer under a
quota still gets its first batch.
"""

from __future__ import annotations

from collections.abc import Awaitable

from ..apis.context import CloseInstead
from ..core.quotas import ANONYMOUS, CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, SAMPLES, WINDOW_MS
from ..protocol import headers
from ..protocol.messages import Message
from .exchange import Answer, Encoded, Exchange, Proceed
from .runtime import Runtime


class QuotaStage:
    def __init__(self, runtime: Runtime, broker_id: int):  # as every stage is made
        self.runtime = runtime
        self.broker_id = broker_id

    def __call__(self, exchange: Exchange, body: Message, proceed: Proceed) -> Awaitable[Answer]:
        if exchange.api.byte_quota is None or not self.runtime.state.quotas.entries:
            return proceed(exchange, body)
        return self._counted(exchange, body, proceed)

    async def _counted(self, exchange: Exchange, body: Message, proceed: Proceed) -> Answer:
        quota = exchange.api.byte_quota
        if quota == CONSUMER_BYTE_RATE:
            cap_fetch(self.runtime, exchange.client_id, body)
        result = await proceed(exchange, body)
        if isinstance(result, CloseInstead):  # the connection closes: nothing is counted
            return result
        if quota == PRODUCER_BYTE_RATE:
            exchange.throttle_ms = produce_throttle(self.runtime, exchange.client_id, exchange.size)
            if isinstance(result, Message):
                set_throttle(result, exchange.throttle_ms)
            return result
        if not isinstance(result, Message):
            return result
        # the consumer quota counts the answer's bytes: the stage encodes it to count them
        encoded, exchange.throttle_ms = throttle_fetch(self.runtime, exchange, result, await exchange.encode(result))
        return Encoded(encoded)


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


def throttle_fetch(runtime: Runtime, exchange: Exchange, response: Message, encoded: bytes) -> tuple[bytes, int]:
    """Record a Fetch answer's bytes; the answer to send (without data when throttled) and the
    throttle time (ms)."""
    quotas, now, client_id = runtime.state.quotas, runtime.clock.now_ms(), exchange.client_id or ""
    size = len(encoded)
    throttle = quotas.record(CONSUMER_BYTE_RATE, ANONYMOUS, client_id, size, now)
    if throttle <= 0:
        return encoded, 0
    quotas.unrecord(CONSUMER_BYTE_RATE, ANONYMOUS, client_id, size, now)
    response.responses = []
    response.throttle_time_ms = max(response.throttle_time_ms or 0, throttle)
    return headers.encode_response(exchange.api_key, exchange.api_version, exchange.correlation_id, response), throttle


def set_throttle(response: Message, throttle_ms: int) -> None:
    if throttle_ms > 0 and hasattr(response, "throttle_time_ms"):
        response.throttle_time_ms = max(response.throttle_time_ms or 0, throttle_ms)
