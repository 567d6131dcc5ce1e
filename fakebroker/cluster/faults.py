"""``cluster.faults``: the cluster's fault rules, changed on the cluster's loop so that each
change lands in the event log in order with the requests it affects."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..core import events as ev
from ..faults import FaultRule, FaultRuleError
from ..server.runtime import Runtime
from .proxy import LoopProxy


class FaultControl:
    def __init__(self, proxy: LoopProxy, runtime: Runtime):
        self._proxy = proxy
        self._runtime = runtime
        self.rules = runtime.faults

    def add(self, **match_and_action: Any) -> FaultRule:
        """Add a rule (see ``Faults.add`` and the README's fault table) and return it. A rule that
        cannot be added raises :class:`~fakebroker.faults.FaultRuleError` naming what is valid."""

        def add() -> FaultRule:
            rule = self.rules.add(**match_and_action)
            unknown = sorted(set(rule.brokers or ()) - set(self._runtime.state.brokers))
            if unknown:  # a rule on a broker the cluster does not have would never fire
                self.rules.remove(rule)
                raise FaultRuleError(
                    f"broker= names no broker of this cluster: {unknown}; its brokers are "
                    f"{sorted(self._runtime.state.brokers)}"
                )
            self._runtime.state.events.append(ev.FaultAdded(rule=rule.id, spec=_brief(rule)))
            return rule

        return self._proxy.act(add)

    def remove(self, rule: FaultRule | int) -> None:
        def remove() -> None:
            self.rules.remove(rule)
            self._runtime.state.events.append(ev.FaultRemoved(rule=rule if isinstance(rule, int) else rule.id))

        self._proxy.act(remove)

    def clear(self) -> None:
        def clear() -> None:
            if len(self.rules):
                self.rules.clear()
                self._runtime.state.events.append(ev.FaultsCleared())

        self._proxy.act(clear)

    def list(self) -> list[FaultRule]:
        return self.rules.list()

    def get(self, rule_id: int) -> FaultRule:
        return self.rules.get(rule_id)

    def __len__(self) -> int:
        return len(self.rules)

    def __iter__(self) -> Iterator[FaultRule]:
        return iter(self.rules)


def _brief(rule: FaultRule) -> dict[str, Any]:
    data = rule.to_dict()
    return {k: v for k, v in data.items() if k not in ("id", "matched", "fired", "active")}
