"""Kafka's framing: every request and response is an int32 size followed by that many bytes.

:class:`FrameDecoder` is sans-IO: feed it whatever the socket returned (a frame may arrive
in many pieces, several frames in one piece) and take out whole frames.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from .errors import FrameTooLargeError, InvalidFrameError

DEFAULT_MAX_FRAME_SIZE = 104_857_600  # Kafka's socket.request.max.bytes default
_size = struct.Struct(">i")


def frame(payload: bytes | bytearray) -> bytes:
    """Prefix a payload with its int32 size."""
    return _size.pack(len(payload)) + bytes(payload)


class FrameDecoder:
    """Reassembles size-prefixed frames from a byte stream.

    Raises FrameTooLargeError as soon as a size prefix exceeds ``max_frame_size`` (before
    any of the body is buffered) and InvalidFrameError for a negative size; the caller
    closes the connection then, as Kafka does.
    """

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE):
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._need: int | None = None  # body size of the frame being read, once its prefix is in

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._buffer += data

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return len(self._buffer)

    def pending_size(self) -> int:
        """The declared size of the frame being received, once its size prefix is in; else 0
        (also for a size :meth:`next_frame` refuses)."""
        if self._need is not None:
            return self._need
        if len(self._buffer) < 4:
            return 0
        size = _size.unpack_from(self._buffer, 0)[0]
        return size if 0 <= size <= self.max_frame_size else 0

    def next_frame(self) -> bytes | None:
        """The next whole frame's payload, or None until more bytes arrive."""
        if self._need is None:
            if len(self._buffer) < 4:
                return None
            size = _size.unpack_from(self._buffer, 0)[0]
            if size < 0:
                raise InvalidFrameError(f"negative frame size {size}")
            if size > self.max_frame_size:
                raise FrameTooLargeError(size, self.max_frame_size)
            del self._buffer[:4]
            self._need = size
        if len(self._buffer) < self._need:
            return None
        payload = bytes(self._buffer[: self._need])
        del self._buffer[: self._need]
        self._need = None
        return payload

    def frames(self) -> Iterator[bytes]:
        """Every whole frame buffered so far."""
        while (payload := self.next_frame()) is not None:
            yield payload
