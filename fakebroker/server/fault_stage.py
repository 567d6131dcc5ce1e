"""The fault stage of the pipeline: carry out the rules that fire for a request, the part of
fault injection that involves time and connections (which rules fire, and the answers they
give, are decided by the pure ``faults`` package).

The stage gets the request and ``proceed``, the next stage of the pipeline (the handler and
its waiting); it answers instead of ``proceed``, around it, or not at all.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable
from typing import Any, cast

import anyio

from ..apis.context import NO_RESPONSE, CloseInstead
from ..core import events as ev
from ..faults import FaultRule, RequestView, view_of
from ..faults.responses import error_response, merge, replace_errors, set_throttle, split
from ..protocol.messages import Message
from .exchange import Answer, CloseConnection, Exchange, Proceed, error_name, note_errors
from .runtime import Runtime

TERMINAL = ("error", "drop", "blackhole")


class FaultStage:
    def __init__(self, runtime: Runtime, broker_id: int):  # as every stage is made
        self.runtime = runtime
        self.broker_id = broker_id

    def __call__(self, exchange: Exchange, body: Message, proceed: Proceed) -> Awaitable[Answer]:
        if not len(self.runtime.faults):  # no rules: nothing to look up
            return proceed(exchange, body)
        return _under_rules(self.runtime, exchange, body, proceed)


async def _under_rules(runtime: Runtime, exchange: Exchange, body: Message, proceed: Proceed) -> Answer:
    """Handle one request under the rules that fire for it."""
    state = runtime.state
    api_key = exchange.api_key

    def topic_names(topic_id: Any) -> str | None:
        topic = state.topics_by_id.get(topic_id)
        return topic.name if topic is not None else None

    seen: list[RequestView] = []

    def look_inside() -> RequestView:
        if not seen:
            seen.append(view_of(api_key, body, topic_names))
        return seen[0]

    fired = runtime.faults.fire(exchange.broker_id, api_key, exchange.api_version, exchange.client_id, look_inside)
    if not fired:
        return await proceed(exchange, body)
    view = look_inside()  # for the event
    principal = exchange.authenticated_as
    for rule in fired:
        runtime.emit(
            ev.FaultFired(
                broker=exchange.broker_id,
                rule=rule.id,
                action=rule.action,
                api=exchange.api_name,
                version=exchange.api_version,
                client_id=exchange.client_id,
                group=min(view.groups) if view.groups else None,
                topics=sorted(view.topics) or None,
                error=error_name(rule.error),
                principal=principal,
            )
        )
    terminal = next((r for r in fired if r.action in TERMINAL), None)
    delay = max((r.delay for r in fired), default=0.0)
    if terminal is not None and terminal.action == "drop":
        raise CloseConnection(f"fault rule {terminal.id}: drop before handling {exchange.api_name}")
    if terminal is not None and terminal.action == "blackhole":
        # Swallow the request and read nothing more from this connection for a while. The
        # swallowed request is never answered, so the connection cannot carry on afterwards
        # (clients match answers to requests in order): it closes when the hole ends.
        await exchange.waiting()
        await _black_hole(terminal)
        raise CloseConnection(f"fault rule {terminal.id}: black hole over")
    if terminal is not None:
        result = await _error_instead(runtime, terminal, exchange, body, topic_names, proceed)
    else:
        result = await proceed(exchange, body)
    if result is NO_RESPONSE or isinstance(result, CloseInstead):
        return result
    response = cast(Message, result)  # the handler stage's answer: its waits, parks and steps are over
    for rule in fired:
        if rule.action == "replace_error":
            assert rule.error is not None  # FaultRule refuses a replace_error without one
            if replace_errors(response, rule.error, rule.hits_leaf if rule.filters_items else None, topic_names):
                runtime.emit(
                    ev.RequestError(
                        broker=exchange.broker_id,
                        api=exchange.api_name,
                        client_id=exchange.client_id,
                        error=error_name(rule.error),
                        fault=rule.id,
                        principal=principal,
                    )
                )
        elif rule.action == "throttle":
            set_throttle(response, rule.throttle_ms)
    if delay:
        await exchange.waiting()
        await anyio.sleep(delay)
    after = next((r for r in fired if r.action == "drop_after"), None)
    if after is not None:
        raise CloseConnection(f"fault rule {after.id}: drop after handling {exchange.api_name}")
    return result


async def _error_instead(
    runtime: Runtime, rule: FaultRule, exchange: Exchange, body: Message, topic_names: Any, proceed: Proceed
) -> Answer:
    """The rule's error for what it hits; a rule on some topic-partitions lets the rest be handled."""
    assert rule.error is not None
    api_key = exchange.api_key
    # no answer owed (acks=0): on an error Kafka appends the rest and closes the connection
    unanswered = not exchange.api.answered(body)
    close = CloseInstead(f"fault rule {rule.id}: acks=0 produce failed with {error_name(rule.error)}")
    if not rule.filters_items:
        failed = error_response(api_key, body, rule.error)
        note_errors(runtime, exchange, failed, fault=rule.id)
        return close if unanswered else failed
    hit, rest = split(body, rule.hits_leaf, topic_names)
    failed = error_response(api_key, hit, rule.error, top_level=False)
    note_errors(runtime, exchange, failed, fault=rule.id)
    if not view_of(api_key, rest, topic_names).leaves:
        return close if unanswered else failed
    result = await proceed(exchange, rest)
    if unanswered:
        return close
    if result is NO_RESPONSE or isinstance(result, CloseInstead):
        return result
    return merge(cast(Message, result), failed)  # the handler stage's answer: its waits, parks and steps are over


async def _black_hole(rule: FaultRule) -> None:
    """Until the rule's duration passes or the rule is removed."""
    end = anyio.current_time() + (math.inf if rule.duration is None else rule.duration)
    while not rule.removed and (left := end - anyio.current_time()) > 0:
        await anyio.sleep(min(left, 0.05))
