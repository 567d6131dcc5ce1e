"""pytest-fakebroker: fixtures, the ``fakebroker`` marker and options for testing Kafka
clients against fakebroker, an in-process Kafka-compatible broker.

Registered through the ``pytest11`` entry point: installing ``pytest-fakebroker`` is enough.
Loading it costs next to nothing: fakebroker's cluster is imported at the first use of a
fixture, so pytest runs that use none of them do not pay for it.
"""

from __future__ import annotations

__version__ = "0.1.0"
