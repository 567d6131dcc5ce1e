"""The request pipeline of one broker: decode -> cut check -> fault stage -> handler -> encode.

It works on payloads (frames without their length prefix), so it can be driven without a
socket. A request that cannot be parsed, or a stage that says so, ends with
:class:`CloseConnection`; the connection closes and every other one carries on.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..apis import NO_RESPONSE
from ..apis.api_versions import unsupported_version_response
from ..apis.context import CloseInstead
from ..apis.registry import served
from ..core import events as ev
from ..protocol import headers
from ..protocol.errors import UnsupportedVersionError
from ..protocol.messages import request_type
from .exchange import CloseConnection, Exchange
from .fault_stage import fault_stage
from .handler_stage import HandlerStage
from .runtime import Runtime

API_VERSIONS = 18


@dataclass
class Peer:
    """The client end of a connection, as far as requests tell (its id comes with the first)."""

    address: str = "?"
    host: str = ""
    client_id: str | None = None
    introduced: bool = False


class Pipeline:
    def __init__(self, runtime: Runtime, broker_id: int):
        self.runtime = runtime
        self.broker_id = broker_id
        self.handler_stage = HandlerStage(runtime, broker_id)

    async def process(self, payload: bytes, peer: Peer) -> bytes | None:
        """The response payload for one request payload, or None when none is owed."""
        runtime = self.runtime
        api_key, api_version, correlation_id = headers.peek_request(payload)
        header, stream = headers.decode_request_header(payload)
        if not peer.introduced:
            peer.client_id, peer.introduced = header.client_id, True
            runtime.emit(ev.ClientConnected(broker=self.broker_id, peer=peer.address, client_id=header.client_id))
        release = runtime.state.kafka_version
        window = served(release).get(api_key)
        if api_key == API_VERSIONS and window and api_version > window[1]:
            return headers.encode_response(API_VERSIONS, 0, correlation_id, unsupported_version_response(release))
        if window is None or not window[0] <= api_version <= window[1]:
            raise CloseConnection(f"unsupported API key {api_key} version {api_version} (Kafka {release})")
        try:
            body = request_type(api_key).decode_from(stream, api_version)
        except UnsupportedVersionError as exc:
            raise CloseConnection(str(exc)) from None
        if runtime.is_cut_off(header.client_id, self.broker_id):
            raise CloseConnection(
                f"network partition: client {header.client_id!r} is cut off from broker {self.broker_id}"
            )
        exchange = Exchange(self.broker_id, api_key, api_version, correlation_id, header, peer.host)
        handle = functools.partial(self.handler_stage, exchange)
        if len(runtime.faults):
            result = await fault_stage(runtime, exchange, body, handle)
        else:
            result = await handle(body)
        if isinstance(result, CloseInstead):
            raise CloseConnection(result.reason)
        if result is NO_RESPONSE or result is None:
            return None
        return headers.encode_response(api_key, api_version, correlation_id, result)
