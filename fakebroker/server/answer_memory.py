"""Answers a broker may send again: the last good answer to each distinct request of an API
that declares ``same_answer`` (ApiVersions), kept per broker.

Every connection opens with an ApiVersions, and one client's are the same bytes every time
(its client id, name and version). Walking it through the decode, the stages, the handler and
the encode costs the broker ~150 us in a real client's round trip, where the CPU's caches hold
none of that code (``benchmarks/cold_requests.py``); sent again from here, it is one lookup.

An answer is sent again only while nothing could make the pipeline answer otherwise: the
API's ``same_answer`` gives what it gave when the answer was made, and no fault rule, network
cut or SASL authentication is in the way (with any of them the request walks the pipeline as
before). Only answers without an error, throttle or slicing are kept, at most ``ENTRIES`` per
broker: when full, the memory starts again empty.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from ..apis.registry import REGISTRY
from ..core.cluster_state import ClusterState
from ..protocol.messages import Message
from .exchange import Answer, Exchange
from .runtime import Runtime

ENTRIES = 64  # distinct requests remembered per broker (clients differ by id, name and version)


class AnswerMemory:
    def __init__(self, runtime: Runtime):
        self.runtime = runtime
        # API key as it starts a request (2 bytes) -> what its answer depends on
        self._depends_on: dict[bytes, Callable[[ClusterState], Hashable]] = {
            key.to_bytes(2, "big"): api.same_answer for key, api in REGISTRY.items() if api.same_answer is not None
        }
        # the request less its correlation id -> (what the answer depended on, the answer less
        # its correlation id, the request's client id)
        self._answers: dict[bytes, tuple[Hashable, bytes, str | None]] = {}

    def recall(self, payload: bytes, sasl: object | None) -> tuple[bytes, str | None] | None:
        """The answer to send again for ``payload`` and its client id, or None to walk the
        pipeline (``sasl``: the connection's SASL authentication, if it has one)."""
        depends_on = self._depends_on.get(payload[:2])
        if depends_on is None or sasl is not None or not self._clear_way():
            return None
        found = self._answers.get(payload[2:4] + payload[8:])
        if found is None or found[0] != depends_on(self.runtime.state):
            return None
        return payload[4:8] + found[1], found[2]

    def keep(self, payload: bytes, exchange: Exchange, answer: Answer, reply: bytes) -> None:
        """Remember ``reply`` if it may be sent again for the same bytes."""
        depends_on = exchange.api.same_answer
        if depends_on is None or exchange.auth is not None or exchange.throttle_ms or exchange.sliced:
            return
        if not isinstance(answer, Message) or getattr(answer, "error_code", 0) != 0 or not self._clear_way():
            return
        if len(self._answers) >= ENTRIES:
            self._answers.clear()
        self._answers[payload[2:4] + payload[8:]] = (depends_on(self.runtime.state), reply[4:], exchange.client_id)

    def _clear_way(self) -> bool:
        runtime = self.runtime
        return not runtime.cuts and not len(runtime.faults)
