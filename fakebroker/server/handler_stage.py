"""The last stage of the pipeline: call the API's handler, tell the runtime what the request
changed, and wait for answers that come later (a parked JoinGroup, a Fetch long poll)."""

from __future__ import annotations

import logging
import time

import anyio

from ..apis import RequestContext, Wait, dispatch
from ..apis.context import Parked, Result, Steps
from ..core import events as ev
from ..core.security.acls import ANONYMOUS
from ..protocol.messages import Message
from .exchange import CloseConnection, Exchange, note_errors
from .runtime import Runtime

log = logging.getLogger("fakebroker")
STEP_BUDGET_S = 0.005  # CPU time a long handler gets before every other connection runs again
JOB_THREADS = 1  # worker threads per broker for handlers' long jobs (see HandlerStage._job_limiter)


class HandlerStage:
    def __init__(self, runtime: Runtime, broker_id: int):
        self.runtime = runtime
        self.broker_id = broker_id
        self._jobs: anyio.CapacityLimiter | None = None

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
            connection=exchange.peer,
            principal=(exchange.auth.principal if exchange.auth is not None else exchange.principal) or ANONYMOUS,
            security_protocol=exchange.security_protocol,
            listener=exchange.listener,
            token_authenticated=exchange.auth is not None and exchange.auth.token_authenticated,
        )
        try:
            result = dispatch(ctx, body)
        except Exception as exc:  # a handler bug must not take the broker down
            raise self._failed(exchange, exc) from exc
        if isinstance(result, Steps):
            exchange.sliced = True
            result = await self._steps(exchange, ctx, result)
        runtime.settle(data_changed=ctx.effects.data_changed, partitions=ctx.effects.partitions)
        if isinstance(result, Wait):
            await exchange.waiting()
            result = await self._wait(result)
        elif isinstance(result, Parked):
            await exchange.waiting()
            done = anyio.Event()
            result.pending.on_done(done.set)
            await done.wait()
            result = result.respond(result.pending.value)
        if isinstance(result, Message):
            note_errors(runtime, exchange, result)
        return result

    def _failed(self, exchange: Exchange, exc: Exception) -> CloseConnection:
        log.exception("handler of API %s v%s failed", exchange.api_key, exchange.api_version, exc_info=exc)
        self.runtime.emit(
            ev.HandlerError(broker=self.broker_id, api=exchange.api_key, version=exchange.api_version, error=repr(exc))
        )
        return CloseConnection(f"internal error handling API {exchange.api_key} v{exchange.api_version}: {exc!r}")

    async def _steps(self, exchange: Exchange, ctx: RequestContext, steps: Steps) -> Result:
        """Run a long handler a few ms at a time (``STEP_BUDGET_S``), letting every other
        connection (and the ticker) run between two slices; what each slice changed is told at
        once. A job it yields runs on a worker thread while the loop goes on with the others."""
        if exchange.flush is not None:  # a long answer: the ones before it go out first
            await exchange.flush()
        job = steps.job
        while True:
            budget = time.perf_counter() + STEP_BUDGET_S
            try:
                if job is not None:
                    # a job touches no state: a stopping broker need not wait for it to end
                    value = await anyio.to_thread.run_sync(job, limiter=self._job_limiter(), abandon_on_cancel=True)
                    job = steps.steps.send(value)
                else:
                    job = next(steps.steps)
                while job is None and time.perf_counter() < budget:
                    job = next(steps.steps)
            except StopIteration as done:
                return done.value
            except Exception as exc:  # a handler bug must not take the broker down
                raise self._failed(exchange, exc) from exc
            self.runtime.settle(data_changed=ctx.effects.data_changed, partitions=ctx.effects.partitions)
            ctx.effects.data_changed, ctx.effects.partitions = False, set()
            if job is None:
                await anyio.sleep(0)

    def _job_limiter(self) -> anyio.CapacityLimiter:
        """One worker thread per broker for handlers' jobs: each holds the GIL while it runs,
        and the loop gets it back every few ms only while it competes with few threads."""
        if self._jobs is None:
            self._jobs = anyio.CapacityLimiter(JOB_THREADS)
        return self._jobs

    async def _wait(self, wait: Wait) -> Message:
        runtime = self.runtime
        deadline = anyio.current_time() + max(0, wait.deadline_ms - runtime.clock.now_ms()) / 1000
        while True:
            await runtime.wait_data(deadline, wait.partitions)
            final = anyio.current_time() >= deadline
            response = wait.poll(runtime.clock.now_ms(), final)
            if response is not None:
                return response
