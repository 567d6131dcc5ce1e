"""fakebroker: an embedded, in-process, Kafka-compatible broker and group coordinator for tests.

>>> from fakebroker import FakeCluster
>>> FakeCluster(brokers=3).servers[2].node_id
2
"""

from .cluster import FakeCluster

__version__ = "0.1.0"
__all__ = ["FakeCluster", "__version__"]
