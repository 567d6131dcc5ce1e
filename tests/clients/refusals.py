"""A librdkafka client the broker refuses: its call fails once its timeout runs out (librdkafka
keeps retrying until then), and the refusal itself reaches ``error_cb`` as soon as it happens.
Tests give the call a short timeout and then serve the callbacks until the refusal has come,
instead of waiting out a long call timeout and serving them once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

REFUSED_CALL_TIMEOUT = 1.0  # seconds: the refused call's own timeout (list_topics(timeout=...))


def poll_for_error(client: Any, errors: list[Any], wanted: Callable[[Any], bool], timeout: float = 10) -> None:
    """Serve ``client``'s callbacks (its ``error_cb`` appends to ``errors``) until an error for
    which ``wanted`` is true has come, at most ``timeout`` seconds and at least once."""
    deadline = time.monotonic() + timeout
    client.poll(0.1)
    while not any(wanted(e) for e in errors) and time.monotonic() < deadline:
        client.poll(0.1)
