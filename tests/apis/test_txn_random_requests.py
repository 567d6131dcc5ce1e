"""Random well-formed requests of every transactional API, at every advertised version,
never make a handler raise or answer something that cannot be encoded, and never leave a
partition's last stable offset above its high watermark."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakebroker.apis import REGISTRY, RequestContext, dispatch
from fakebroker.apis.context import Wait
from fakebroker.protocol.messages import Message, request_type

from ..conftest import examples
from ..protocol.strategies import message_strategy
from .support import cluster, encodes

TXN_APIS = (22, 24, 25, 26, 27, 28, 61, 65, 66)
CASES = [(key, v) for key in TXN_APIS for v in range(REGISTRY[key].min_version, REGISTRY[key].max_version + 1)]


def state_with_a_transaction():
    """Two brokers, topic t (2 partitions), group g, transactional id tx with an open transaction."""
    state = cluster(2)
    state.create_topic("t", 2, 1)
    _, pid, epoch = state.init_producer_id("tx", now_ms=0)
    state.transactions.add_partitions("tx", pid, epoch, [("t", 0)], 0)
    return state


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=st.sampled_from(CASES), broker=st.sampled_from([0, 1]))
def test_random_transactional_requests_are_answered(data, case, broker):
    key, version = case
    state = state_with_a_transaction()
    kind = request_type(key)
    request = data.draw(message_strategy(kind, version))
    request = kind.decode(kind.encode(request, version), version)
    ctx = RequestContext(state, broker, key, version, correlation_id=1, client_id="fuzz", now_ms=5)
    result = dispatch(ctx, request)
    if isinstance(result, (Message, dict)):
        encodes(key, version, result)
    else:
        assert isinstance(result, Wait) or result is None, result
    for partition in state.all_partitions():
        assert partition.log.last_stable_offset <= partition.log.high_watermark
