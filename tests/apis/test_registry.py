"""The API registry: what each ``apis/*.py`` module declares, the version ranges against the
protocol specs, and how ``dispatch`` routes a request."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import fakebroker.apis as apis
from fakebroker.apis import HANDLERS, REGISTRY, SUPPORTED, RequestContext, dispatch
from fakebroker.apis.context import NO_RESPONSE, CloseInstead, Parked, Wait
from fakebroker.apis.registry import Api, api
from fakebroker.protocol.messages import Message, api_keys, api_versions, request_type, response_type

from .support import call, cluster, encodes

API_VERSIONS, HEARTBEAT = 18, 12


def declared() -> list[Api]:
    """Every Api object the modules of ``fakebroker.apis`` hold (``API = api(...)`` or a tuple
    ``APIS``), each once."""
    found: dict[int, Api] = {}
    for info in pkgutil.iter_modules(apis.__path__):
        module = importlib.import_module(f"{apis.__name__}.{info.name}")
        for value in vars(module).values():
            for item in value if isinstance(value, tuple) else (value,):
                if isinstance(item, Api):
                    found[id(item)] = item
    return list(found.values())


def test_every_declaration_is_in_the_registry_and_no_key_is_declared_twice():
    everything = declared()
    keys = [a.key for a in everything]
    assert len(keys) == len(set(keys)), sorted(keys)
    assert sorted(keys) == sorted(REGISTRY)
    assert all(REGISTRY[a.key] is a for a in everything)


def test_declaring_a_key_again_is_refused_and_leaves_the_first():
    first = REGISTRY[HEARTBEAT]
    with pytest.raises(ValueError, match="declared twice"):
        api(HEARTBEAT, (0, 4), first.handle)
    assert REGISTRY[HEARTBEAT] is first


@pytest.mark.parametrize("key", sorted(REGISTRY))
def test_each_api_has_a_handler_and_its_kafka_name(key):
    declared_api = REGISTRY[key]
    assert declared_api.key == key
    assert declared_api.name == api_keys()[key]
    assert callable(declared_api.handle)
    assert declared_api.handle.__module__.startswith("fakebroker.apis.")


@pytest.mark.parametrize("key", sorted(REGISTRY))
def test_version_ranges_lie_within_the_specs(key):
    declared_api = REGISTRY[key]
    known = api_versions(key)  # every version the 3.9 and 4.3.1 specs define
    assert known[0] <= declared_api.min_version <= declared_api.max_version <= known[-1], (declared_api, known)
    for version in range(declared_api.min_version, declared_api.max_version + 1):
        assert version in known
        request_type(key).codec(version)
        response_type(key).codec(version)


def test_supports_is_the_inclusive_range():
    fetch = REGISTRY[1]
    assert [
        fetch.supports(v) for v in (fetch.min_version - 1, fetch.min_version, fetch.max_version, fetch.max_version + 1)
    ] == [False, True, True, False]


def test_supported_and_handlers_views_agree_with_the_registry():
    assert list(SUPPORTED) == sorted(REGISTRY) == list(HANDLERS)
    for key, declared_api in REGISTRY.items():
        assert SUPPORTED[key] == (declared_api.min_version, declared_api.max_version)
        assert HANDLERS[key] is declared_api.handle


def context(api_key: int, version: int) -> RequestContext:
    return RequestContext(cluster(1), 0, api_key, version, correlation_id=1, client_id="c", now_ms=0)


def test_dispatch_hands_the_context_and_body_to_the_handler_of_ctx_api_key(monkeypatch):
    seen = []

    def recorder(ctx, body):
        seen.append((ctx, body))
        return "answer"

    original = REGISTRY[API_VERSIONS]
    monkeypatch.setitem(
        REGISTRY, API_VERSIONS, Api(API_VERSIONS, original.name, original.min_version, original.max_version, recorder)
    )
    ctx = context(API_VERSIONS, 3)
    body = request_type(API_VERSIONS).new()
    assert dispatch(ctx, body) == "answer"
    assert len(seen) == 1 and seen[0][0] is ctx and seen[0][1] is body


def test_dispatch_routes_by_the_context_not_by_the_body():
    heartbeat_body = request_type(HEARTBEAT).new(group_id="g", member_id="m", generation_id=1)
    answer = dispatch(context(API_VERSIONS, 0), heartbeat_body)
    assert isinstance(answer, response_type(API_VERSIONS).cls)
    assert [k.api_key for k in answer.api_keys] == sorted(REGISTRY)


def test_dispatch_of_an_undeclared_key_raises():
    undeclared = next(k for k in api_keys() if k not in REGISTRY)
    with pytest.raises(KeyError):
        dispatch(context(undeclared, 0), request_type(undeclared).new())


@pytest.mark.parametrize("key", sorted(REGISTRY))
def test_every_advertised_version_answers_a_default_request(key):
    """A request with every field at its spec default must get something the server can
    send (a response that encodes at that version) or a declared non-answer."""
    declared_api = REGISTRY[key]
    for version in range(declared_api.min_version, declared_api.max_version + 1):
        result, _ = call(cluster(1), key, version)
        if isinstance(result, Wait):
            result = result.poll(result.deadline_ms, True)
        elif isinstance(result, Parked):
            assert result.pending.done, (key, version)
            result = result.respond(result.pending.value)
        if result is NO_RESPONSE or isinstance(result, CloseInstead):
            continue
        assert isinstance(result, (Message, dict)), (key, version, result)
        encodes(key, version, result)
