"""The API registry: each ``apis/*.py`` module declares the APIs it answers (key, versions,
handler, and the few facts about it the server acts on) with :func:`api`; importing
``fakebroker.apis`` imports them all.

A declaration says which versions the handler can answer: the union of what Kafka 3.9 and 4.x
speak. What one cluster *serves* is that range cut to the window of the Kafka release it
poses as (:func:`served`, the cluster's ``kafka_version``): a 4.x broker no longer speaks the
versions KIP-896 removed, a 3.9 broker none of 4.x's newer ones.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Hashable
from functools import cache
from typing import TYPE_CHECKING, Any

from ..lazy_dataclasses import dataclass
from ..protocol.messages import Message, api_keys
from ..protocol.specs import release_windows
from .context import Handler, RequestContext, Result

if TYPE_CHECKING:
    from ..core.cluster_state import ClusterState

_NAMES = api_keys()


@dataclass(frozen=True)
class Api:
    """One API as a module declares it: what it answers, and the facts about it that the
    server's pipeline acts on (so the server never asks which API a request is)."""

    key: int
    name: str
    min_version: int
    max_version: int
    handle: Handler
    # A request this says owes no answer gets none, an error included (Produce acks=0):
    # Kafka closes the connection instead of answering a failed one.
    unanswered: Callable[[Message], bool] | None = None
    # A large request (body stream, version, payload size) this says is cheap enough to
    # decode on the loop: a Produce of a few partitions is large for its records alone.
    decode_on_loop: Callable[[io.BytesIO, int, int], bool] | None = None
    # The body answered at v0 to a version above the served ones (KIP-511's ApiVersions
    # fallback, given the cluster's Kafka release); without one, the connection closes.
    too_new: Callable[[str], dict[str, Any]] | None = None
    # The byte-rate quota a request counts against (``core.quotas``'s key): the producer
    # quota counts a request's bytes, the consumer quota its answer's.
    byte_quota: str | None = None
    # An answer that changes nothing and depends only on the request's bytes, the broker and
    # what this gives for the cluster's state (ApiVersions: the release, its features and the
    # cluster id): the pipeline may send a good answer again for the same bytes while this gives
    # the same (``server/answer_memory.py``).
    same_answer: Callable[[ClusterState], Hashable] | None = None

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def answered(self, request: Message) -> bool:
        """Whether ``request`` is owed an answer."""
        return self.unanswered is None or not self.unanswered(request)


REGISTRY: dict[int, Api] = {}


def api(
    key: int,
    versions: tuple[int, int],
    handle: Handler,
    *,
    unanswered: Callable[[Message], bool] | None = None,
    decode_on_loop: Callable[[io.BytesIO, int, int], bool] | None = None,
    too_new: Callable[[str], dict[str, Any]] | None = None,
    byte_quota: str | None = None,
    same_answer: Callable[[ClusterState], Hashable] | None = None,
) -> Api:
    """Declare that ``handle`` answers API ``key`` at ``versions`` (inclusive), with the facts
    about it that the server acts on (see :class:`Api`)."""
    key = int(key)  # an ApiKey is stored as the plain number it is on the wire
    if key in REGISTRY:
        raise ValueError(f"API key {key} ({_NAMES.get(key)}) is declared twice")
    declared = REGISTRY[key] = Api(
        key,
        _NAMES.get(key, str(key)),
        versions[0],
        versions[1],
        handle,
        unanswered=unanswered,
        decode_on_loop=decode_on_loop,
        too_new=too_new,
        byte_quota=byte_quota,
        same_answer=same_answer,
    )
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
