"""The bytes of requests a broker holds at once: Kafka's ``queued.max.request.bytes``.

Kafka's selector allocates a request's buffer from a memory pool as soon as the request's size
is read; when the pool is spent, the connection is muted (nothing more is read from it) until
memory is freed. Here a connection reserves a frame's declared size before reading its body
and gives it back once the request has been answered, so a few clients sending 100 MB frames
at once wait for each other instead of making the broker hold all of them. Kafka's default,
-1, is no bound at all; fakebroker then keeps its own (``DEFAULT_BOUND``), since a test
machine has less memory than a broker. A frame larger than the bound is still let in, alone.
Frames under ``SMALL`` bytes never wait: what they can hold is bounded by the connections.
"""

from __future__ import annotations

from collections import deque

import anyio

DEFAULT_BOUND = 256 * 1024 * 1024
SMALL = 64 * 1024


class RequestMemory:
    def __init__(self, bound: int):
        self.bound = bound if bound > 0 else DEFAULT_BOUND
        self.in_use = 0
        self._waiting: deque[_Ask] = deque()

    def _fits(self, size: int) -> bool:
        return self.in_use == 0 or self.in_use + size <= self.bound

    async def reserve(self, size: int) -> None:
        """Take ``size`` bytes, waiting while others hold too many (first come, first served)."""
        if not self._waiting and self._fits(size):
            self.in_use += size
            return
        ask = _Ask(size, anyio.Event())
        self._waiting.append(ask)
        try:
            await ask.granted.wait()
        except BaseException:  # cancelled: whatever was granted meanwhile goes back
            if ask.granted.is_set():
                self.release(size)
            else:
                self._waiting.remove(ask)
                self._grant()
            raise

    def release(self, size: int) -> None:
        self.in_use -= size
        self._grant()

    def _grant(self) -> None:
        while self._waiting and self._fits(self._waiting[0].size):
            ask = self._waiting.popleft()
            self.in_use += ask.size
            ask.granted.set()


class _Ask:
    __slots__ = ("size", "granted")

    def __init__(self, size: int, granted: anyio.Event):
        self.size, self.granted = size, granted
