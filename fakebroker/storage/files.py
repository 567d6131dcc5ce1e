"""Segment files under a data directory, laid out as Kafka lays out ``log.dirs``:
``<dir>/<topic>-<partition>/<base offset, 20 digits>.log`` holding the stored batches'
bytes, appended as produced. Nothing else of a segment is on disk: the log rebuilds its
small sparse index by checking every batch when it reopens (``PartitionLog.recover``).

Writes go straight to the file before the answer (no fsync: a ``kill -9`` keeps the page
cache; only power loss can take what the kernel had not written yet); reads are ``pread``
slices, so a Fetch costs one system call and no copy of the segment.

A partition directory the metadata does not name (a topic created moments before a crash
whose metadata line never got written, or files copied in) is set aside as Kafka sets aside a
stray log: renamed ``<topic>-<partition>.<unique id>-stray``, never deleted, and never read
as a partition again.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any

from .metadata import DataDirError, MetadataFiles

MAX_OPEN_FILES = 64  # segment files kept open per partition; others reopen on demand
LOCK_FILE = ".lock"
STRAY_SUFFIX = "-stray"  # Kafka's LocalLog.StrayDirSuffix
PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")


class FileSegmentStore:
    """One partition's segments, one file each (``core.log.segments.SegmentStore``)."""

    durable = True

    def __init__(self, directory: Path):
        self.directory = directory
        self._fds: OrderedDict[int, int] = OrderedDict()

    def _path(self, base: int) -> Path:
        return self.directory / f"{base:020d}.log"

    def _fd(self, base: int) -> int:
        fd = self._fds.get(base)
        if fd is not None:
            self._fds.move_to_end(base)
            return fd
        fd = os.open(self._path(base), os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        self._fds[base] = fd
        while len(self._fds) > MAX_OPEN_FILES:
            _, old = self._fds.popitem(last=False)
            os.close(old)
        return fd

    def bases(self) -> list[int]:
        if not self.directory.is_dir():
            return []
        out = []
        for path in self.directory.glob("*.log"):
            try:
                out.append(int(path.stem))
            except ValueError:
                continue
        return sorted(out)

    def create(self, base_offset: int) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        os.ftruncate(self._fd(base_offset), 0)

    def append(self, base_offset: int, data: bytes | bytearray | memoryview) -> None:
        fd = self._fd(base_offset)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    def flush(self, base_offset: int) -> None:
        os.fsync(self._fd(base_offset))

    def read(self, base_offset: int, position: int, size: int) -> bytes:
        return os.pread(self._fd(base_offset), size, position)

    def size(self, base_offset: int) -> int:
        return os.fstat(self._fd(base_offset)).st_size

    def truncate(self, base_offset: int, size: int) -> None:
        os.ftruncate(self._fd(base_offset), size)

    def modified_ms(self, base_offset: int) -> int | None:
        return int(os.fstat(self._fd(base_offset)).st_mtime * 1000)

    def delete(self, base_offset: int) -> None:
        fd = self._fds.pop(base_offset, None)
        if fd is not None:
            os.close(fd)
        self._path(base_offset).unlink(missing_ok=True)

    def close(self) -> None:
        while self._fds:
            os.close(self._fds.popitem()[1])


class DataDir:
    """A data directory: segment files per partition (``core.log.segments.LogStorage``), the
    metadata file, and a lock so two running clusters never share one directory."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._stores: dict[tuple[str, int], FileSegmentStore] = {}
        self._lock = -1
        self.meta = MetadataFiles(self.path)
        if self.path.exists() and not self.path.is_dir():
            raise DataDirError(f"data directory {self.path} is a file, not a directory")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            self._lock = os.open(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise DataDirError(f"data directory {self.path} cannot be used: {exc.strerror or exc}") from None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(self._lock)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise DataDirError(f"data directory {self.path} is in use by another fakebroker") from None
            raise DataDirError(f"data directory {self.path} cannot be locked: {exc.strerror or exc}") from None
        if not os.access(self.path, os.W_OK):
            self.close()
            raise DataDirError(f"data directory {self.path} is not writable")

    # -- core.log.segments.LogStorage ------------------------------------------------------------
    def open(self, topic: str, topic_id: uuid.UUID, partition: int) -> FileSegmentStore:
        store = self._stores[(topic, partition)] = FileSegmentStore(self.path / f"{topic}-{partition}")
        return store

    def remove(self, topic: str, topic_id: uuid.UUID, partition: int) -> None:
        store = self._stores.pop((topic, partition), None)
        directory = self.path / f"{topic}-{partition}"
        if store is not None:
            store.close()
        if directory.is_dir():
            for path in directory.iterdir():
                path.unlink(missing_ok=True)
            directory.rmdir()

    def partition_logs(self) -> list[str]:
        """Names of the partition directories holding segment files (strays left out)."""
        out = []
        for directory in sorted(self.path.iterdir()):
            if PARTITION_DIR.match(directory.name) and directory.is_dir() and any(directory.glob("*.log")):
                out.append(directory.name)
        return out

    def set_aside(self, keep: set[tuple[str, int]]) -> list[tuple[str, str]]:
        """Rename the partition directories of no partition in ``keep`` as Kafka renames a stray
        log (``UnifiedLog.logStrayDirName``): ``<topic>-<partition>.<uuid without dashes>-stray``,
        the topic cut so the name stays within 255 characters. Returns (old name, new name)."""
        names = {f"{topic}-{partition}" for topic, partition in keep}
        moved = []
        for name in self.partition_logs():
            if name in names:
                continue
            match = PARTITION_DIR.match(name)
            assert match is not None
            suffix = f"-{match.group(2)}.{uuid.uuid4().hex}{STRAY_SUFFIX}"
            stray = match.group(1)[: 255 - len(suffix)] + suffix
            os.rename(self.path / name, self.path / stray)
            moved.append((name, stray))
        return moved

    # -- metadata ----------------------------------------------------------------------------------
    def read_meta(self) -> dict[str, Any] | None:
        """The metadata (snapshot and journal), None for a new directory; raises
        :class:`DataDirError` if it is missing beside partition logs, or damaged."""
        return self.meta.load(self.partition_logs())

    def write_meta(self, meta: dict[str, Any]) -> None:
        """Replace the metadata snapshot (the journal starts again after it)."""
        self.meta.compact(meta)

    def journal(self, change: list[Any]) -> bool:
        """Append one change to the metadata journal; True when it is due for compaction."""
        return self.meta.append(change)

    def close(self) -> None:
        self.meta.close()
        for store in self._stores.values():
            store.close()
        self._stores.clear()
        if self._lock >= 0:
            os.close(self._lock)  # releases the lock
            self._lock = -1
