"""The control endpoint's resources: one table of routes (method, path template, handler,
summary, request schema) that ``fakebroker.http.server`` dispatches on and that
``openapi_document()`` describes, so the two cannot drift apart.

Handlers run on the cluster's loop thread and call its methods directly. They raise
``HTTPError`` for the answers they choose; ``ValueError`` (a misspelt API or error name, with
the valid ones) becomes 400, ``KeyError`` (an unknown rule) 404.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..cluster import FakeCluster, TopicView, WaitTimeout
from ..cluster import conditions as cond
from ..version import __version__
from . import state
from .churning import CHURN_BODY, churn_group
from .live import group_timeline, stream, vocabulary
from .schemas import FAULT_BODY, INT, NUM, STR, WAIT_CONDITIONS, HTTPError, check_body, obj

MAX_WAIT_S = 600.0  # the longest POST /wait


@dataclass
class Request:
    cluster: FakeCluster
    params: dict[str, Any]
    query: dict[str, list[str]]
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names

    def q(self, name: str, kind: type = str, default: Any = None) -> Any:
        """A query parameter (the last one given), converted to ``kind``."""
        values = self.query.get(name)
        if not values:
            return default
        try:
            return kind(values[-1])
        except ValueError:
            raise HTTPError(400, f"query parameter {name!r} must be {_TYPE_NAMES.get(kind, kind.__name__)}") from None

    def qlist(self, name: str) -> list[str] | None:
        """A repeatable, comma-separable query parameter (``kind=a,b&kind=c``)."""
        values = [v for raw in self.query.get(name, []) for v in raw.split(",") if v]
        return values or None


Handler = Callable[[Request], Awaitable[Any]]
_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string"}


@dataclass(frozen=True)
class Route:
    """One row of the table: dispatch and the OpenAPI document both read it."""

    method: str
    path: str  # template, "{name}" a string segment, "{name:int}" an integer one
    handler: Handler
    summary: str
    body: dict[str, Any] | None = None  # JSON schema of the request body (an object)
    query: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> schema
    status: int = 200
    open: bool = False  # no token needed

    @property
    def segments(self) -> list[tuple[str, str | None]]:
        """(literal or parameter name, None for a literal / "int" / "str")."""
        out: list[tuple[str, str | None]] = []
        for seg in self.path.strip("/").split("/"):
            if seg.startswith("{"):
                name, _, kind = seg[1:-1].partition(":")
                out.append((name, kind or "str"))
            else:
                out.append((seg, None))
        return out

    def match(self, parts: list[str]) -> dict[str, Any] | None:
        segs = self.segments
        if len(parts) != len(segs):
            return None
        params: dict[str, Any] = {}
        for part, (name, kind) in zip(parts, segs):
            if kind is None:
                if part != name:
                    return None
            elif kind == "int":
                try:
                    params[name] = int(part)
                except ValueError:
                    return None
            else:
                params[name] = part
        return params


# -- views ----------------------------------------------------------------------------------
def _broker_dict(cluster: FakeCluster, broker: int) -> dict[str, Any]:
    return next(b.to_dict() for b in cluster.brokers() if b.node_id == broker)


def _broker_alive(cluster: FakeCluster, broker: int) -> bool:
    return any(b.alive for b in cluster.brokers() if b.node_id == broker)


def _broker_id(cluster: FakeCluster, broker: int, *, alive: bool = False) -> int:
    brokers = {b.node_id: b for b in cluster.brokers()}
    info = brokers.get(broker)
    if info is None:
        raise HTTPError(404, f"no broker {broker} (brokers: {sorted(brokers)})")
    if alive and not info.alive:
        raise HTTPError(409, f"broker {broker} is stopped")
    return broker


def _topic(cluster: FakeCluster, name: str) -> TopicView:
    topic = cluster.describe_topic(name)
    if topic is None:
        raise HTTPError(404, f"no topic {name!r}")
    return topic


def _jsonable(value: Any) -> Any:
    return value.to_dict() if hasattr(value, "to_dict") else value


# -- handlers -----------------------------------------------------------------------------------
async def add_fault(req: Request) -> Any:
    return req.cluster.faults.add(**req.body).to_dict()


async def list_faults(req: Request) -> Any:
    return {"faults": state.faults_json(req.cluster)}


async def get_fault(req: Request) -> Any:
    return req.cluster.faults.get(req.params["id"]).to_dict()


async def remove_fault(req: Request) -> Any:
    rule = req.cluster.faults.get(req.params["id"])
    req.cluster.faults.remove(rule)
    return rule.to_dict()  # its final counts


async def clear_faults(req: Request) -> Any:
    count = len(req.cluster.faults)
    req.cluster.faults.clear()
    return {"removed": count}


async def list_brokers(req: Request) -> Any:
    return {"brokers": state.brokers_json(req.cluster)}


async def stop_broker(req: Request) -> Any:
    cluster, broker = req.cluster, _broker_id(req.cluster, req.params["id"])
    if not _broker_alive(cluster, broker):
        raise HTTPError(409, f"broker {broker} is already stopped")
    await cluster.stop_broker_async(broker)  # reply once the port is closed, as the threaded API does
    return _broker_dict(cluster, broker)


async def start_broker(req: Request) -> Any:
    cluster, broker = req.cluster, _broker_id(req.cluster, req.params["id"])
    if _broker_alive(cluster, broker):
        raise HTTPError(409, f"broker {broker} is already running")
    await cluster.start_broker_async(broker)  # start_broker would only schedule it on the loop thread
    return _broker_dict(cluster, broker)


async def restart_broker(req: Request) -> Any:
    cluster, broker = req.cluster, _broker_id(req.cluster, req.params["id"])
    await cluster.stop_broker_async(broker)  # starts and stops of one broker take turns
    await cluster.start_broker_async(broker)
    return _broker_dict(cluster, broker)


async def elect_preferred(req: Request) -> Any:
    return {"moved": req.cluster.elect_preferred_leaders()}


async def get_clock(req: Request) -> Any:
    return state.clock_json(req.cluster)


async def advance_clock(req: Request) -> Any:
    clock, body = req.cluster.clock, req.body
    if not clock.virtual:
        raise HTTPError(409, "this cluster runs on the real clock; start it with virtual time to advance it")
    seconds, step, settle = float(body["seconds"]), body.get("step"), float(body.get("settle", 0.0))
    if seconds < 0:
        raise ValueError("time only moves forward")
    if step is None:
        clock.advance(seconds)
        await anyio.sleep(settle)
    else:
        await clock.advance_async(seconds, step=float(step), settle=settle)
    return await get_clock(req)


async def list_events(req: Request) -> Any:
    since, limit = req.q("since", int, 0), req.q("limit", int)
    kinds, group, client, broker = req.qlist("kind"), req.q("group"), req.q("client_id"), req.q("broker", int)
    for kind in kinds or ():  # a misspelt kind would match nothing: 400 naming the closest kinds
        cond.check_event_kind(kind)
    out: list[dict[str, Any]] = []
    scanned = since
    for event in req.cluster.events_since(max(since, 0)):  # seq is the 1-based place in the log
        if limit is not None and len(out) >= limit:
            break
        scanned = event.seq
        if kinds and event.kind not in kinds or group is not None and event.group != group:
            continue
        if client is not None and event.client_id != client or broker is not None and event.broker != broker:
            continue
        out.append(event.to_dict())
    # the bounded log dropped its oldest events: ``dropped`` of them, seq 1..dropped
    return {"events": out, "next_since": scanned, "dropped": req.cluster.events_dropped}


async def list_groups(req: Request) -> Any:
    return {"groups": state.groups_json(req.cluster)}


async def get_group(req: Request) -> Any:
    view = state.group_json(req.cluster, req.params["id"])
    if view is None:
        raise HTTPError(404, f"no group {req.params['id']!r}")
    return view


def _coordinator_target(req: Request) -> tuple[int | None, int | None]:
    """(broker, load time) of a coordinator move: the broker, if named, must be running."""
    broker = req.body.get("broker")
    if broker is not None:
        _broker_id(req.cluster, broker, alive=True)
    elif not any(b.alive for b in req.cluster.brokers()):
        raise HTTPError(409, "no broker is alive")
    return broker, req.body.get("load_time_ms")


async def move_coordinator(req: Request) -> Any:
    broker, load = _coordinator_target(req)
    return {"coordinator": req.cluster.move_coordinator(req.params["id"], broker, load_time_ms=load)}


async def group_offsets(req: Request) -> Any:
    gid = req.params["id"]
    committed = req.cluster.committed(gid)
    if not committed and req.cluster.group(gid) is None:
        raise HTTPError(404, f"no group {gid!r}")
    return {"group_id": gid, "offsets": state.offsets_json(req.cluster, gid)}


async def list_transactions(req: Request) -> Any:
    return {"transactions": state.transactions_json(req.cluster)}


async def get_transaction(req: Request) -> Any:
    view = req.cluster.transaction(req.params["id"])
    if view is None:
        raise HTTPError(404, f"no transactional id {req.params['id']!r}")
    return view.to_dict()


async def move_txn_coordinator(req: Request) -> Any:
    broker, load = _coordinator_target(req)
    return {"coordinator": req.cluster.move_transaction_coordinator(req.params["id"], broker, load_time_ms=load)}


async def create_topic(req: Request) -> Any:
    b = req.body
    topic = req.cluster.create_topic(
        b["name"], b.get("partitions", -1), replication_factor=b.get("replication_factor", -1), config=b.get("config")
    )
    return _topic(req.cluster, topic.name).to_dict()


async def list_topics(req: Request) -> Any:
    internal = req.q("internal", str, "false").lower() in ("1", "true", "yes")
    return {"topics": state.topics_json(req.cluster, internal=internal)}


async def get_topic(req: Request) -> Any:
    return _topic(req.cluster, req.params["name"]).to_dict()


async def delete_topic(req: Request) -> Any:
    name = _topic(req.cluster, req.params["name"]).name
    req.cluster.delete_topic(name)
    return {"deleted": name}


async def add_partitions(req: Request) -> Any:
    topic = _topic(req.cluster, req.params["name"])
    req.cluster.add_partitions(topic.name, req.body["count"])
    return _topic(req.cluster, topic.name).to_dict()


async def move_leader(req: Request) -> Any:
    topic, index = _topic(req.cluster, req.params["name"]), req.params["p"]
    if not 0 <= index < len(topic.partitions):
        raise HTTPError(404, f"topic {topic.name!r} has no partition {index} ({len(topic.partitions)} partitions)")
    broker = _broker_id(req.cluster, req.body["broker"], alive=True)
    req.cluster.move_leader(topic.name, index, broker)
    return _topic(req.cluster, topic.name).partitions[index].to_dict()


def _cuts(cluster: FakeCluster) -> dict[str, Any]:
    return {"cuts": state.cuts_json(cluster)}


async def list_cuts(req: Request) -> Any:
    return _cuts(req.cluster)


async def cut(req: Request) -> Any:
    broker = req.body.get("broker")
    if broker is not None:
        _broker_id(req.cluster, broker)
    req.cluster.cut(req.body["client_id"], broker)
    return _cuts(req.cluster)


async def heal(req: Request) -> Any:
    req.cluster.heal(req.body.get("client_id"), req.body.get("broker"))
    return _cuts(req.cluster)


async def wait(req: Request) -> Any:
    body = dict(req.body)
    name, timeout = body.pop("condition"), float(body.pop("timeout", 10.0))
    if name not in WAIT_CONDITIONS:
        raise HTTPError(400, f"unknown condition {name!r}; valid conditions: {', '.join(WAIT_CONDITIONS)}")
    if not 0 < timeout <= MAX_WAIT_S:
        raise HTTPError(400, f"timeout must be in (0, {MAX_WAIT_S:g}] seconds")
    make, schema = WAIT_CONDITIONS[name]
    condition = make(**check_body(schema, body))
    start = anyio.current_time()
    try:
        result = await req.cluster.wait_for(condition, timeout)
    except WaitTimeout as exc:
        raise HTTPError(408, str(exc)) from None
    return {"ok": True, "result": _jsonable(result), "waited_ms": round((anyio.current_time() - start) * 1000)}


async def openapi(req: Request) -> Any:
    return openapi_document()


ROUTES: list[Route] = [
    Route("GET", "/openapi.json", openapi, "This document (the one path open without the token)", open=True),
    Route(
        "POST",
        "/faults",
        add_fault,
        "Add a fault rule; the body is cluster.faults.add's keyword arguments",
        FAULT_BODY,
        status=201,
    ),
    Route(
        "GET",
        "/vocabulary",
        vocabulary,
        "The names the forms of the console offer: API names, error names, fault actions, event kinds, churn blocks",
    ),
    Route(
        "GET",
        "/stream",
        stream,
        "Server-sent events (text/event-stream): `state` (brokers with their roles, topics with records/s, groups "
        "with offsets and lag, transactions, fault rules, cuts, clock) when something happened and at least once a "
        "second, and `events` (the new events, their `id:` the last seq; Last-Event-ID or `since` resumes)",
        query={"since": INT},
    ),
    Route("GET", "/faults", list_faults, "Every fault rule with its matched and fired counts"),
    Route("DELETE", "/faults", clear_faults, "Remove every fault rule"),
    Route("GET", "/faults/{id:int}", get_fault, "One fault rule"),
    Route(
        "DELETE",
        "/faults/{id:int}",
        remove_fault,
        "Remove a fault rule (ends its black holes); returns its final counts",
    ),
    Route("GET", "/brokers", list_brokers, "Every broker: id, host, port, alive"),
    Route(
        "POST",
        "/brokers/{id:int}/stop",
        stop_broker,
        "Stop a broker as if its process died; returns once its port is closed",
    ),
    Route(
        "POST", "/brokers/{id:int}/start", start_broker, "Start a stopped broker on its port; returns once it listens"
    ),
    Route("POST", "/brokers/{id:int}/restart", restart_broker, "Stop, then start a broker"),
    Route("POST", "/leaders/preferred", elect_preferred, "Give every partition back to its preferred live replica"),
    Route("GET", "/clock", get_clock, "The cluster's time (ms) and whether it is virtual"),
    Route(
        "POST",
        "/clock/advance",
        advance_clock,
        "Advance virtual time (409 on a real clock); step/settle split the jump with real pauses",
        obj({"seconds": NUM, "step": NUM, "settle": NUM}, ("seconds",)),
    ),
    Route(
        "GET",
        "/events",
        list_events,
        "The event log after seq `since`, filtered; next_since is the seq to poll from; "
        "dropped counts the oldest events the bounded log let go",
        query={
            "since": INT,
            "kind": {
                **STR,
                "description": "event kinds, comma-separated or repeated; an unknown one is a 400 naming the closest",
            },
            "group": STR,
            "client_id": STR,
            "broker": INT,
            "limit": INT,
        },
    ),
    Route(
        "GET",
        "/groups",
        list_groups,
        "Every group the coordinator knows, with members and assignments (share groups with their records in flight)",
    ),
    Route(
        "GET",
        "/groups/{id}",
        get_group,
        "One group: state, generation, members, assignments, coordinator; a share group's share partitions with "
        "their start offsets and the records in flight (state, delivery count, owner)",
    ),
    Route(
        "POST",
        "/groups/{id}/coordinator",
        move_coordinator,
        "Move a group's coordinator (default: the next live broker); the new one reloads the group",
        obj({"broker": INT, "load_time_ms": INT}),
    ),
    Route(
        "GET",
        "/groups/{id}/timeline",
        group_timeline,
        "A group's swim lanes as data: each member's lane with its generation segments and assignments, markers "
        "(expiries, faults, cluster actions) and the group's states over time, as the timeline picture draws them",
    ),
    Route(
        "GET",
        "/groups/{id}/offsets",
        group_offsets,
        "A group's committed offsets, each with its partition's end offset (high watermark) and the lag",
    ),
    Route(
        "POST",
        "/groups/{id}/churn",
        churn_group,
        "Run seeded churn blocks on the group (coordinator storms, partition growth, broker bounces, "
        "network cuts of its members), each until the group settles; answers the seed and what was done",
        CHURN_BODY,
    ),
    Route(
        "GET", "/transactions", list_transactions, "Every transactional id: state, producer id and epoch, partitions"
    ),
    Route("GET", "/transactions/{id}", get_transaction, "One transactional id"),
    Route(
        "POST",
        "/transactions/{id}/coordinator",
        move_txn_coordinator,
        "Move a transactional id's coordinator (default: the next live broker); open transactions stay open",
        obj({"broker": INT, "load_time_ms": INT}),
    ),
    Route(
        "POST",
        "/topics",
        create_topic,
        "Create a topic",
        obj({"name": STR, "partitions": INT, "replication_factor": INT, "config": {"type": "object"}}, ("name",)),
        status=201,
    ),
    Route(
        "GET",
        "/topics",
        list_topics,
        "Every topic with its partitions' leaders and offsets",
        query={"internal": {"type": "boolean"}},
    ),
    Route("GET", "/topics/{name}", get_topic, "One topic"),
    Route("DELETE", "/topics/{name}", delete_topic, "Delete a topic"),
    Route(
        "POST",
        "/topics/{name}/partitions",
        add_partitions,
        "Grow a topic to `count` partitions in total",
        obj({"count": INT}, ("count",)),
    ),
    Route(
        "POST",
        "/topics/{name}/partitions/{p:int}/leader",
        move_leader,
        "Make a live broker the partition's leader",
        obj({"broker": INT}, ("broker",)),
    ),
    Route("GET", "/network", list_cuts, "The network cuts in force"),
    Route(
        "POST",
        "/network/cut",
        cut,
        "Cut clients (client id or glob) off from a broker (default: all)",
        obj({"client_id": STR, "broker": INT}, ("client_id",)),
    ),
    Route(
        "POST",
        "/network/heal",
        heal,
        "Undo cuts for a client id (default: all) and broker (default: any)",
        obj({"client_id": STR, "broker": INT}),
    ),
    Route(
        "POST",
        "/wait",
        wait,
        "Wait for a condition (408 on timeout): group_state, generation_above, event, member_expired, committed_offset,"
        " share_group_stable, share_start_offset, record_delivered, record_archived, streams_group_stable; the"
        " condition's parameters sit"
        " beside `condition`",
        {
            "type": "object",
            "properties": {"condition": {**STR, "enum": list(WAIT_CONDITIONS)}, "timeout": NUM},
            "required": ["condition"],
            "additionalProperties": True,
        },
    ),
]


def openapi_document() -> dict[str, Any]:
    """OpenAPI 3.1 description of ``ROUTES``."""
    error = {
        "description": "Error",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        template = "/" + "/".join(f"{{{n}}}" if k else n for n, k in route.segments)
        params = [
            {"name": n, "in": "path", "required": True, "schema": INT if k == "int" else STR}
            for n, k in route.segments
            if k
        ]
        for n, s in route.query.items():  # a description is the parameter's, the rest its schema
            param = {"name": n, "in": "query", "required": False}
            if "description" in s:
                param["description"] = s["description"]
            params.append({**param, "schema": {k: v for k, v in s.items() if k != "description"}})
        op: dict[str, Any] = {
            "operationId": route.handler.__name__,
            "summary": route.summary,
            "responses": {
                str(route.status): {"description": "OK", "content": {"application/json": {}}},
                "400": error,
                "401": error,
                "404": error,
            },
        }
        if params:
            op["parameters"] = params
        if route.body is not None:
            op["requestBody"] = {
                "required": bool(route.body.get("required")),
                "content": {"application/json": {"schema": route.body}},
            }
        if route.open:
            op["security"] = []
        paths.setdefault(template, {})[route.method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "fakebroker control endpoint",
            "version": __version__,
            "description": "Faults, cluster actions, clock, events and state of a running fakebroker cluster.",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Error": {"type": "object", "properties": {"error": STR}, "required": ["error"]}},
        },
    }
