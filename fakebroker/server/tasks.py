"""Task groups at the edge: trio's own nursery under trio, anyio's task group elsewhere."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import cast

import anyio
import sniffio
import trio
from anyio.abc import TaskGroup


def task_group() -> AbstractAsyncContextManager[TaskGroup]:
    """A task group for the running loop. Under trio, trio's nursery: anyio's wraps every task it
    starts (a cluster's start spawns several), and the methods callers use (``start_soon``,
    ``start``, ``cancel_scope.cancel()``) are the same."""
    if sniffio.current_async_library() == "trio":
        return cast("AbstractAsyncContextManager[TaskGroup]", trio.open_nursery())
    return anyio.create_task_group()
