"""CRC-32C by the ``crc32c`` package, imported at the first checksum, not at start-up: its
``__init__`` reads ``importlib.metadata`` for its version, ~10 ms that a broker which has
not yet seen a record batch need not pay. Callers write ``crc.crc32c(...)``: the first
lookup imports the package and stores its function here, later ones find it directly."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name != "crc32c":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from crc32c import crc32c

    globals()["crc32c"] = crc32c
    return crc32c
