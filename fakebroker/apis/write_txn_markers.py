"""WriteTxnMarkers (key 27): the transaction coordinator's request to partition leaders. Inside
the cluster the coordinator writes its markers directly; this answers a client (a tool or a
test) that sends one, with the leader's checks."""

from __future__ import annotations

from ..core.groups.placement import OFFSETS_TOPIC
from ..protocol.error_codes import ErrorCode
from ..protocol.messages import ApiKey, Message
from .common import led_partition
from .context import RequestContext
from .registry import api


def handle(ctx: RequestContext, request: Message) -> Message:
    markers = []
    for marker in request.markers:
        topics = []
        for t in marker.topics:
            parts = []
            for index in t.partition_indexes:
                partition, error = led_partition(ctx, t.name, index)
                if not error and partition is not None:
                    stored = partition.producers.entries.get(marker.producer_id)
                    if stored is not None and stored.epoch > marker.producer_epoch:
                        error = ErrorCode.INVALID_PRODUCER_EPOCH
                    elif stored is not None and stored.coordinator_epoch > marker.coordinator_epoch:
                        error = ErrorCode.TRANSACTION_COORDINATOR_FENCED
                    else:
                        ctx.cluster.write_marker(
                            t.name,
                            index,
                            marker.producer_id,
                            marker.producer_epoch,
                            marker.transaction_result,
                            marker.coordinator_epoch,
                            ctx.now_ms,
                        )
                        if t.name != OFFSETS_TOPIC:
                            ctx.data_changed()
                parts.append({"partition_index": index, "error_code": error})
            topics.append({"name": t.name, "partitions": parts})
        markers.append({"producer_id": marker.producer_id, "topics": topics})
    return ctx.response(markers=markers)


API = api(ApiKey.WRITE_TXN_MARKERS, (1, 2), handle)
