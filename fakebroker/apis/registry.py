"""The API registry: each ``apis/*.py`` module declares the APIs it answers (key, versions,
handler) with :func:`api`; importing ``fakebroker.apis`` imports them all.

Ranges follow what a Kafka 4.3 broker advertises, widened downwards where the 3.9 specs let
older clients in (ListOffsets v0, CreateTopics v0-1, ...), and Produce advertised from v0 as
4.x does for old librdkafka (v0-2 are then answered UNSUPPORTED_VERSION per partition).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..protocol.messages import Message, api_keys
from .context import Handler, RequestContext, Result

_NAMES = api_keys()


@dataclass(frozen=True)
class Api:
    key: int
    name: str
    min_version: int
    max_version: int
    handle: Handler

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


REGISTRY: dict[int, Api] = {}


def api(key: int, versions: tuple[int, int], handle: Handler) -> Api:
    """Declare that ``handle`` answers API ``key`` at ``versions`` (inclusive)."""
    if key in REGISTRY:
        raise ValueError(f"API key {key} ({_NAMES.get(key)}) is declared twice")
    declared = REGISTRY[key] = Api(key, _NAMES.get(key, str(key)), versions[0], versions[1], handle)
    return declared


def dispatch(ctx: RequestContext, body: Message) -> Result:
    """Hand a decoded request to its API's handler (the last stage of the server's pipeline)."""
    return REGISTRY[ctx.api_key].handle(ctx, body)
