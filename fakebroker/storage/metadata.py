"""The metadata files of a data directory: the snapshot ``fakebroker-meta.json`` and the
journal ``fakebroker-meta.log`` of the changes since (``storage.journal``).

Reading refuses, with one line naming the file and what is wrong, a snapshot that is missing
while partition logs are there, empty, not JSON or not of the expected shape, and a journal
line that cannot be applied (except a torn last line, which a crash in the middle of a write
leaves). Writing appends journal lines (one ``os.write`` each, no fsync); compaction writes a
new snapshot (fsynced, then renamed over the old one) and starts a new journal whose first
line names the snapshot's generation, so a crash between the two leaves a journal the
snapshot already holds, which the next start skips.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from . import journal as jr
from . import snapshot as snap

META_FILE = "fakebroker-meta.json"
JOURNAL_FILE = "fakebroker-meta.log"
COMPACT_MIN_BYTES = 1 << 20  # a journal is folded into the snapshot past this and twice the snapshot


class DataDirError(Exception):
    """The data directory cannot be used; the message says why in one line."""


class MetadataFiles:
    def __init__(self, directory: Path):
        self.directory = directory
        self.path = directory / META_FILE
        self.journal_path = directory / JOURNAL_FILE
        self.generation = 0
        self.journal_bytes = 0
        self.snapshot_bytes = 0
        self._fd = -1

    # -- reading ---------------------------------------------------------------------------------
    def load(self, logs: list[str]) -> dict[str, Any] | None:
        """The snapshot with the journal replayed over it, or None for a new directory (no
        snapshot, no partition logs). ``logs`` names the partition directories found."""
        if not self.path.exists():
            if logs:
                shown = ", ".join(logs[:3]) + (f" and {len(logs) - 3} more" if len(logs) > 3 else "")
                raise DataDirError(
                    f"{self.path} is missing, but the directory holds partition logs ({shown}): "
                    "without it their topics are unknown; nothing was changed"
                )
            if self.journal_path.exists() and self.journal_path.stat().st_size:
                raise DataDirError(f"{self.path} is missing, but {self.journal_path} is there: nothing was changed")
            return None
        try:
            text = self.path.read_bytes()
        except OSError as exc:
            raise DataDirError(f"{self.path} cannot be read: {exc.strerror or exc}") from None
        if not text.strip():
            raise DataDirError(f"{self.path} is empty")
        try:
            meta = json.loads(text)
        except ValueError as exc:
            raise DataDirError(f"{self.path} is not valid JSON: {exc}") from None
        found = snap.problem(meta)
        if found:
            raise DataDirError(f"{self.path}: {found}")
        self.generation = meta.get("journal", 0)
        try:
            jr.replay(meta, self._journal_lines())
        except jr.JournalError as exc:
            raise DataDirError(f"{self.journal_path}: {exc}") from None
        found = snap.problem(meta)
        if found:
            raise DataDirError(f"{self.journal_path} replayed over {META_FILE}: {found}")
        return meta

    def _journal_lines(self) -> list[bytes]:
        try:
            data = self.journal_path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise DataDirError(f"{self.journal_path} cannot be read: {exc.strerror or exc}") from None
        lines = data.split(b"\n")
        lines.pop()  # what follows the last newline: nothing, or a line torn by a crash
        return lines

    # -- writing ---------------------------------------------------------------------------------
    def compact(self, meta: dict[str, Any]) -> None:
        """Replace the snapshot with ``meta`` and start an empty journal after it."""
        self.generation += 1
        meta["journal"] = self.generation
        data = json.dumps(meta, separators=(",", ":")).encode()
        _replace(self.path, data)
        head = _line(jr.header(self.generation))
        self._close_journal()
        _replace(self.journal_path, head)
        self._fd = os.open(self.journal_path, os.O_WRONLY | os.O_APPEND)
        self.snapshot_bytes, self.journal_bytes = len(data), len(head)

    def append(self, change: list[Any]) -> bool:
        """Append one change to the journal; True when it has grown enough to be compacted."""
        if self._fd < 0:
            return False  # closed: the cluster is stopping, its last snapshot follows
        view = memoryview(_line(change))
        self.journal_bytes += len(view)
        while view:
            view = view[os.write(self._fd, view) :]
        return self.journal_bytes > max(COMPACT_MIN_BYTES, 2 * self.snapshot_bytes)

    def _close_journal(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def close(self) -> None:
        self._close_journal()


def _line(change: list[Any]) -> bytes:
    return (json.dumps(change, separators=(",", ":")) + "\n").encode()


def _replace(path: Path, data: bytes) -> None:
    """Write ``path`` whole through a temporary file, fsynced then renamed over it, the
    directory fsynced after (a crash or power loss leaves the old file or the new one)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
