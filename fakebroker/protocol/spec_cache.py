"""The shipped JSON specs, parsed once per machine and kept in a cache file.

Stripping comments from and parsing the ~300 spec files takes about 40 ms, the largest part
of importing fakebroker. The parsed data (plain dicts, lists and strings) is written with
:mod:`marshal` to ``$FAKEBROKER_CACHE_DIR`` (default ``$XDG_CACHE_HOME/fakebroker`` or
``~/.cache/fakebroker``) and read back in a few milliseconds by the next process.

The file name is a hash of every spec file's folder, name, size and modification time, of
fakebroker's version and of the Python version (marshal's format is per version): a changed
spec set or interpreter gets a new file, never a stale one (other files unwritten for a week
go when a new one is written). Hashing the contents instead
would cost as much as parsing them. A file is written under a temporary name and renamed
into place, so processes starting at once (pytest-xdist) each read a whole file or none.
Nothing here is required: an unreadable, corrupt or unwritable cache means the JSON files
are parsed, as without a cache. ``FAKEBROKER_CACHE_DIR=""`` turns the cache off.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import re
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

from ..version import __version__

FORMAT = 1  # bump when what is stored changes
STALE_S = 7 * 24 * 3600  # other versions' files older than this go when a new one is written
_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*')

Raw = dict[str, dict[str, dict[str, Any]]]  # folder -> file name -> parsed JSON


def strip_comments(text: str) -> str:
    """Drop ``//`` comments outside string literals (several ``about`` texts hold URLs)."""
    return _COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)


def spec_root() -> Any:
    return resources.files("fakebroker.protocol") / "specs"


def parse_folders(folders: tuple[str, ...]) -> Raw:
    """Every ``.json`` file of each folder, comments stripped and parsed (the slow path)."""
    import json  # only when the cache cannot serve

    root = spec_root()
    out: Raw = {}
    for folder in folders:
        files = out[folder] = {}
        for entry in sorted((root / folder).iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".json"):
                files[entry.name] = json.loads(strip_comments(entry.read_text(encoding="utf-8")))
    return out


def cache_dir() -> Path | None:
    configured = os.environ.get("FAKEBROKER_CACHE_DIR")
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fakebroker"


def _key(folders: tuple[str, ...]) -> str | None:
    """A hash of the spec files' listing, or None where they are not plain files (a zip)."""
    root = spec_root()
    if not isinstance(root, Path):
        return None
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{FORMAT} {__version__} {sys.version} {folders}".encode())
    try:
        for folder in folders:
            with os.scandir(root / folder) as entries:
                for entry in sorted(entries, key=lambda e: e.name):
                    if entry.name.endswith(".json"):
                        st = entry.stat()
                        digest.update(f"{folder}/{entry.name} {st.st_size} {st.st_mtime_ns}\n".encode())
    except OSError:
        return None
    return digest.hexdigest()


def load(folders: tuple[str, ...]) -> Raw:
    """The parsed specs of ``folders``: from the cache file when there is a good one, else
    parsed from the JSON files (and the cache file written, when the directory allows)."""
    where = cache_dir()
    key = _key(folders) if where is not None else None
    if where is None or key is None:
        return parse_folders(folders)
    path = where / f"specs-{key}.marshal"
    try:
        data = marshal.loads(path.read_bytes())
        if isinstance(data, dict) and set(data) == set(folders):
            return data
    except (OSError, EOFError, ValueError, TypeError):
        pass  # missing or damaged: parse, and replace it
    data = parse_folders(folders)
    _write(path, data)
    return data


def _write(path: Path, data: Raw) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".specs-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(marshal.dumps(data))
            os.replace(temporary, path)  # atomic: a reader sees the old file, none, or this one
        except BaseException:
            os.unlink(temporary)
            raise
        _remove_stale(path)
    except OSError:
        pass  # a read-only or full cache directory only costs the next process the parse


def _remove_stale(kept: Path) -> None:
    """Files of other spec sets or Pythons, unwritten for a week (one in use is only rewritten)."""
    cutoff = time.time() - STALE_S
    for other in kept.parent.glob("specs-*.marshal"):
        try:
            if other != kept and other.stat().st_mtime < cutoff:
                other.unlink()
        except OSError:
            pass
