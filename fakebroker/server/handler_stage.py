"""The last stage of the pipeline: call the API's handler, tell the runtime what the request
changed, and wait for answers that come later (a parked JoinGroup, a Fetch long poll)."""

from __future__ import annotations

import logging

import anyio

from ..apis import RequestContext, Wait, dispatch
from ..apis.context import Parked, Result
from ..core import events as ev
from ..protocol.messages import Message
from .exchange import CloseConnection, Exchange, note_errors
from .runtime import Runtime

log = logging.getLogger("fakebroker")


class HandlerStage:
    def __init__(self, runtime: Runtime, broker_id: int):
        self.runtime = runtime
        self.broker_id = broker_id

    async def __call__(self, exchange: Exchange, body: Message) -> Result:
        runtime = self.runtime
        ctx = RequestContext(
            runtime.state,
            self.broker_id,
            exchange.api_key,
            exchange.api_version,
            exchange.correlation_id,
            exchange.client_id,
            runtime.clock.now_ms(),
            exchange.client_host,
        )
        try:
            result = dispatch(ctx, body)
        except Exception as exc:  # a handler bug must not take the broker down
            log.exception("handler of API %s v%s failed", exchange.api_key, exchange.api_version)
            runtime.emit(
                ev.HandlerError(
                    broker=self.broker_id, api=exchange.api_key, version=exchange.api_version, error=repr(exc)
                )
            )
            raise CloseConnection(
                f"internal error handling API {exchange.api_key} v{exchange.api_version}: {exc!r}"
            ) from exc
        runtime.settle(data_changed=ctx.effects.data_changed, partitions=ctx.effects.partitions)
        if isinstance(result, Wait):
            result = await self._wait(result)
        elif isinstance(result, Parked):
            done = anyio.Event()
            result.pending.on_done(done.set)
            await done.wait()
            result = result.respond(result.pending.value)
        if isinstance(result, Message):
            note_errors(runtime, exchange, result)
        return result

    async def _wait(self, wait: Wait) -> Message:
        runtime = self.runtime
        deadline = anyio.current_time() + max(0, wait.deadline_ms - runtime.clock.now_ms()) / 1000
        while True:
            await runtime.wait_data(deadline, wait.partitions)
            final = anyio.current_time() >= deadline
            response = wait.poll(runtime.clock.now_ms(), final)
            if response is not None:
                return response
