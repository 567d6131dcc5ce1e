"""Carry out the fault rules that fire for a request: the part of fault injection that
involves sockets and time (the rules and the answers they give are in ``faults/``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import anyio

from ..apis import NO_RESPONSE
from ..apis.context import CloseInstead
from ..faults import FaultRule, RequestView, view_of
from ..faults.responses import error_response, merge, replace_errors, set_throttle, split
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import Message, api_keys

if TYPE_CHECKING:
    from .connection import Connection

TERMINAL = ("error", "drop", "blackhole")
PRODUCE = 0
API_NAMES = api_keys()


class CloseConnection(Exception):
    """Stop serving this connection (the reason goes to the log)."""


async def apply_faults(conn: Connection, api_key: int, api_version: int, correlation_id: int, header: Message,
                       body: Message) -> Any:
    """Handle one request under the rules that fire for it; None means "send nothing"."""
    runtime = conn.runtime
    state = runtime.state

    def topic_names(topic_id: Any) -> str | None:
        topic = state.topics_by_id.get(topic_id)
        return topic.name if topic is not None else None

    seen: list[RequestView] = []

    def look_inside() -> RequestView:
        if not seen:
            seen.append(view_of(api_key, body, topic_names))
        return seen[0]

    fired = runtime.faults.fire(conn.broker.node_id, api_key, api_version, header.client_id, look_inside)
    if not fired:
        return await conn.handle(api_key, api_version, correlation_id, header, body)
    view = look_inside()  # for the event
    for rule in fired:
        runtime.emit("fault_fired", conn.broker.node_id, rule=rule.id, action=rule.action, api=API_NAMES.get(api_key, api_key),
                     version=api_version, client_id=header.client_id, group=min(view.groups) if view.groups else None,
                     topics=sorted(view.topics) or None, error=_error_name(rule.error))
    terminal = next((r for r in fired if r.action in TERMINAL), None)
    delay = max((r.delay for r in fired), default=0.0)
    if terminal is not None and terminal.action == "drop":
        raise CloseConnection(f"fault rule {terminal.id}: drop before handling {API_NAMES.get(api_key)}")
    if terminal is not None and terminal.action == "blackhole":
        # Swallow the request and read nothing more from this connection for a while. The
        # swallowed request is never answered, so the connection cannot carry on afterwards
        # (clients match answers to requests in order): it closes when the hole ends.
        await _black_hole(terminal)
        raise CloseConnection(f"fault rule {terminal.id}: black hole over")
    if terminal is not None:
        result = await _error_instead(conn, terminal, api_key, api_version, correlation_id, header, body, topic_names)
    else:
        result = await conn.handle(api_key, api_version, correlation_id, header, body)
    if result is NO_RESPONSE or isinstance(result, CloseInstead):
        return result
    for rule in fired:
        if rule.action == "replace_error":
            if replace_errors(result, rule.error, rule.hits_leaf if rule.filters_items else None, topic_names):
                runtime.emit("request_error", conn.broker.node_id, api=API_NAMES.get(api_key, api_key),
                             client_id=header.client_id, error=_error_name(rule.error), fault=rule.id)
        elif rule.action == "throttle":
            set_throttle(result, rule.throttle_ms)
    if delay:
        await anyio.sleep(delay)
    after = next((r for r in fired if r.action == "drop_after"), None)
    if after is not None:
        raise CloseConnection(f"fault rule {after.id}: drop after handling {API_NAMES.get(api_key)}")
    return result


async def _error_instead(conn: Connection, rule: FaultRule, api_key: int, api_version: int, correlation_id: int,
                         header: Message, body: Message, topic_names: Any) -> Any:
    """The rule's error for what it hits; a rule on some topic-partitions lets the rest be handled."""
    assert rule.error is not None
    # acks=0: no answer is owed, so on an error Kafka appends the rest and closes the connection
    unanswered = api_key == PRODUCE and body.acks == 0
    close = CloseInstead(f"fault rule {rule.id}: acks=0 produce failed with {_error_name(rule.error)}")
    if not rule.filters_items:
        failed = error_response(api_key, body, rule.error)
        conn.note_errors(api_key, header.client_id, failed, fault=rule.id)
        return close if unanswered else failed
    hit, rest = split(body, rule.hits_leaf, topic_names)
    failed = error_response(api_key, hit, rule.error, top_level=False)
    conn.note_errors(api_key, header.client_id, failed, fault=rule.id)
    if not view_of(api_key, rest, topic_names).leaves:
        return close if unanswered else failed
    result = await conn.handle(api_key, api_version, correlation_id, header, rest)
    if unanswered:
        return close
    return result if result is NO_RESPONSE or isinstance(result, CloseInstead) else merge(result, failed)


async def _black_hole(rule: FaultRule) -> None:
    """Until the rule's duration passes or the rule is removed."""
    end = anyio.current_time() + (math.inf if rule.duration is None else rule.duration)
    while not rule.removed and (left := end - anyio.current_time()) > 0:
        await anyio.sleep(min(left, 0.05))


def _error_name(code: int | None) -> str | None:
    return None if code is None else ErrorCode(code).name
