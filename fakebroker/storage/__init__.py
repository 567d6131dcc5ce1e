"""Keeping a cluster on disk: partition segments as files and the metadata to find them again.

The core defines what a log needs of its storage (``core.log.segments.SegmentStore`` and
``LogStorage``); this package implements it with files under a data directory, and saves
and restores what the core keeps in memory only (topics, configs, committed offsets, the
transaction coordinator's state, the records of classic, KIP-848 consumer, share and streams
groups): a snapshot, and a journal that
makes each answered change durable before the answer goes out.
The facade ``cluster`` injects it (``FakeCluster(data_dir=...)``, ``fakebroker serve --data-dir``).
"""

from .files import DataDir, FileSegmentStore
from .journal import Journal
from .metadata import DataDirError
from .snapshot import restore, snapshot

__all__ = ["DataDir", "DataDirError", "FileSegmentStore", "Journal", "restore", "snapshot"]
