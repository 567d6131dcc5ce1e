"""Keeping a cluster on disk: partition segments as files and the metadata to find them again.

The core defines what a log needs of its storage (``core.log.SegmentStore`` and
``LogStorage``); this package implements it with files under a data directory, and saves
and restores what the core keeps in memory only (topics, committed offsets). The facade
``cluster`` injects it (``FakeCluster(data_dir=...)``, ``fakebroker serve --data-dir``).
"""

from .files import DataDir, DataDirError, FileSegmentStore
from .snapshot import restore, snapshot

__all__ = ["DataDir", "DataDirError", "FileSegmentStore", "restore", "snapshot"]
