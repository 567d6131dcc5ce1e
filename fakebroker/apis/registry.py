"""The API registry: each ``apis/*.py`` module declares the APIs it answers (key, versions,
handler) with :func:`api`; importing ``fakebroker.apis`` imports them all.

A declaration says which versions the handler can answer: the union of what Kafka 3.9 and 4.x
speak. What one cluster *serves* is that range cut to the window of the Kafka release it
poses as (:func:`served`, the cluster's ``kafka_version``): a 4.x broker no longer speaks the
versions KIP-896 removed, a 3.9 broker none of 4.x's newer ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..protocol.messages import Message, api_keys
from ..protocol.specs import release_windows
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


@cache
def served(kafka_version: str) -> dict[int, tuple[int, int]]:
    """API key -> (min, max) version a broker posing as Kafka ``kafka_version`` serves: each
    declared range cut to that release's window (APIs outside it are not served at all)."""
    window = release_windows(kafka_version)
    out: dict[int, tuple[int, int]] = {}
    for key, declared in sorted(REGISTRY.items()):
        if key not in window:
            continue
        low, high = max(declared.min_version, window[key][0]), min(declared.max_version, window[key][1])
        if low <= high:
            out[key] = (low, high)
    return out


def dispatch(ctx: RequestContext, body: Message) -> Result:
    """Hand a decoded request to its API's handler (the last stage of the server's pipeline)."""
    return REGISTRY[ctx.api_key].handle(ctx, body)
