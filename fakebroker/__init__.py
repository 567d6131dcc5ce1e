"""fakebroker: an embedded, in-process, Kafka-compatible broker and group coordinator for tests.

>>> from fakebroker import FakeCluster
>>> FakeCluster(brokers=3).servers[2].node_id
2

Layers, from the top (each imports only those below it): the faces, each a package that uses
only the facade's public API: ``cli`` (the ``fakebroker`` command, its console, its config file,
scenario scripts), ``http`` (the control endpoint), ``timeline`` and ``testing`` (what tests
import: assertions, the delivery ledger, churn blocks, the region harness; the pytest plugin is a
distribution of its own, ``pytest-fakebroker``); the facade ``cluster``; the trio edge ``server``;
the data directory ``storage``; the handlers ``apis`` and the fault rules ``faults``; the pure
``core``; the wire ``protocol``; and under them all ``lazy_dataclasses``, the ``dataclass``
decorator every layer uses (a class is made at its first use, not at import).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:  # type checkers see the real class; at run time it is imported on first use
    from .cluster import FakeCluster
    from .testing.ledger import DeliveryLedger

__all__ = ["DeliveryLedger", "FakeCluster", "__version__"]


def __getattr__(name: str) -> Any:
    # Imported on first use, so `fakebroker.protocol` and `fakebroker.core` stay free of the
    # server layer (and of trio/anyio) for users who need only those.
    if name == "FakeCluster":
        from .cluster import FakeCluster

        return FakeCluster
    if name == "DeliveryLedger":
        from .testing.ledger import DeliveryLedger

        return DeliveryLedger
    raise AttributeError(f"module 'fakebroker' has no attribute {name!r}")
