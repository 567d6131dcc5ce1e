"""CRC-32C by the ``crc32c`` package's C extension, loaded at the first checksum, not at
start-up. The package's ``__init__`` reads ``importlib.metadata`` for its version and imports
its command line: 20-25 ms that every process's first record batch paid. The extension is
loaded from the package's folder without running that ``__init__`` (the package as usual when
that fails). Callers write ``crc.crc32c(...)``: the first lookup loads it and stores the
function here, later ones find it directly."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from typing import Any

_EXTENSION = "crc32c._crc32c"


def _load() -> Any:
    found = sys.modules.get(_EXTENSION)
    if found is not None:
        return found.crc32c
    package = importlib.util.find_spec("crc32c")  # finds, does not run, the package
    folders = list(package.submodule_search_locations or []) if package is not None else []
    for folder in folders:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder) / f"_crc32c{suffix}"
            if path.is_file():
                loader = importlib.machinery.ExtensionFileLoader(_EXTENSION, str(path))
                spec = importlib.util.spec_from_file_location(_EXTENSION, path, loader=loader)
                if spec is None:
                    continue
                module = importlib.util.module_from_spec(spec)
                loader.exec_module(module)
                sys.modules[_EXTENSION] = module  # the package, if imported later, uses this one
                return module.crc32c
    from crc32c import crc32c  # a layout this does not know: the package's own way

    return crc32c


def __getattr__(name: str) -> Any:
    if name != "crc32c":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    function = _load()
    globals()["crc32c"] = function
    return function
