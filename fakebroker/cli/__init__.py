"""The ``fakebroker`` command and what it runs: a face of the facade (it uses only
``fakebroker.cluster``'s public API, and the ``http`` and ``timeline`` faces).

- ``command.py``: the click command, :func:`main` (``serve``, ``run``, ``errors``, ``apis``);
- ``console.py``: how ``serve`` prints events (coloured lines or JSON lines, never holding the
  broker up);
- ``config.py``: ``serve --config FILE``, the TOML file;
- ``campaign.py``: ``fakebroker campaign``, a fault campaign on Spark (``fakebroker.campaign``);
- ``scenario.py``: the scenario scripts ``fakebroker run`` plays against a fresh cluster
  (``play`` from Python);
- ``memory.py``: what ``serve`` does to give memory back after a burst. The entry point
  (``fakebroker/__main__.py``) imports it before anything else, so this package imports
  nothing at import time: :func:`main` is loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # type checkers see the real command; at run time it is imported on first use
    from .command import main

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name == "main":
        from .command import main

        return main
    raise AttributeError(f"module 'fakebroker.cli' has no attribute {name!r}")
