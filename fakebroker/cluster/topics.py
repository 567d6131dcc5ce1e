"""Topics and what they store, for tests: create, delete, grow, and read records back."""

from __future__ import annotations

from typing import Any

from ..core.cluster_state import Topic, TopicError
from ..core.configs import start_setting_error, validate_topic
from ..core.group_configs import DELETE, SET
from ..protocol import records as rec
from ..protocol.error_codes import ErrorCode
from ..server.runtime import Runtime
from .actions import partition_of, topic_of
from .errors import ClusterUsageError
from .proxy import LoopProxy


def _config_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


class TopicActions:
    def __init__(self, proxy: LoopProxy, runtime: Runtime):
        self._proxy = proxy
        self._runtime = runtime

    def create(self, name: str, spec: Any) -> Topic:
        """``spec``: a partition count or ``{"partitions": n, "replication_factor": r, "config": {...}}``."""
        self._proxy.check_running()  # first: a cluster not started has no broker to place it on
        if isinstance(spec, int):
            spec = {"partitions": spec}
        config = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (spec.get("config") or {}).items()}
        for key, value in config.items():  # as CreateTopics checks them, naming the nearest key or the type
            if reason := start_setting_error(key, value, topic=True):
                raise TopicError(ErrorCode.INVALID_CONFIG, reason)
        state = self._runtime.state
        if reason := validate_topic(config, state.config):
            raise TopicError(ErrorCode.INVALID_CONFIG, reason)
        return self._proxy.act(
            state.create_topic, name, spec.get("partitions", -1), spec.get("replication_factor", -1), config
        )

    def delete(self, name: str) -> None:
        state = self._runtime.state

        def delete() -> None:
            topic_of(state, name)
            state.delete_topic(name)

        self._proxy.act(delete)

    def set_group_configs(self, group: str, configs: dict[str, Any]) -> dict[str, str]:
        """SET (a value) or DELETE (None) group configs as IncrementalAlterConfigs does, with
        Kafka's checks; returns the group's configs after. A refusal raises ClusterUsageError
        with Kafka's message."""
        state = self._runtime.state
        ops = [
            (name, DELETE if value is None else SET, None if value is None else _config_text(value))
            for name, value in configs.items()
        ]

        def apply() -> dict[str, str]:
            refusal, new = state.group_configs.check_incremental(group, ops)
            if refusal is not None:
                raise ClusterUsageError(f"group {group!r}: {refusal[1]}")
            state.replace_group_configs(group, new)
            return dict(new)

        return self._proxy.act(apply)

    def add_partitions(self, topic: str, total: int) -> None:
        state = self._runtime.state

        def add() -> None:
            topic_of(state, topic)
            state.create_partitions(topic, total)

        self._proxy.act(add)

    def names(self) -> dict[str, int]:
        state = self._runtime.state
        return self._proxy.read(lambda: {t.name: len(t.partitions) for t in state.topics.values() if not t.internal})

    def leader(self, topic: str, partition: int) -> int:
        state = self._runtime.state
        return self._proxy.read(lambda: partition_of(state, topic, partition).leader)

    def offsets(self, topic: str, partition: int) -> tuple[int, int]:
        state = self._runtime.state

        def read() -> tuple[int, int]:
            log = partition_of(state, topic, partition).log
            return log.log_start_offset, log.high_watermark

        return self._proxy.read(read)

    def apply_retention(self) -> int:
        runtime = self._runtime
        return self._proxy.act(lambda: runtime.state.apply_retention(runtime.clock.now_ms()))

    def records(self, topic: str, partition: int | None) -> list[tuple[int, int, bytes | None, bytes | None]]:
        state = self._runtime.state

        def read() -> list[tuple[int, int, bytes | None, bytes | None]]:
            out: list[tuple[int, int, bytes | None, bytes | None]] = []
            if partition is not None:
                partition_of(state, topic, partition)  # ClusterUsageError naming the valid ones
            for p in topic_of(state, topic).partitions:
                if partition is not None and p.index != partition:
                    continue
                for stored in p.log.batches:
                    for entry in rec.read_batches(stored.data):
                        if isinstance(entry, rec.RecordBatch):
                            if entry.is_control:
                                continue
                            out.extend(
                                (p.index, entry.offset_of(r), r.key, r.value)
                                for r in entry.records
                                if entry.offset_of(r) >= p.log.log_start_offset
                            )
                        else:
                            out.extend((p.index, m.offset, m.key, m.value) for m in entry.messages)
            return out

        return self._proxy.read(read)
