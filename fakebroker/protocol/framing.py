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

    A frame of ``pieces_from`` bytes or more is gathered as the pieces fed and joined once it
    is whole: growing one buffer by the socket's 64 KiB reads copied all of it again every few
    reads (about 1.5 ms for a 1 MB Produce).
    """

    pieces_from = 64 * 1024

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE):
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._need: int | None = None  # body size of the frame being read, once its prefix is in
        self._pieces: list[bytes] = []  # a large frame's body so far, while it is gathered in pieces
        self._pieces_size = 0

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._pieces:
            piece = bytes(data)  # the very object when it is bytes already
            self._pieces.append(piece)
            self._pieces_size += len(piece)
        else:
            self._buffer += data

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return len(self._buffer) + self._pieces_size

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
        need = self._need
        if need is None:
            if len(self._buffer) < 4:
                return None
            need = _size.unpack_from(self._buffer, 0)[0]
            if need < 0:
                raise InvalidFrameError(f"negative frame size {need}")
            if need > self.max_frame_size:
                raise FrameTooLargeError(need, self.max_frame_size)
            del self._buffer[:4]
            self._need = need
            if need >= self.pieces_from and len(self._buffer) < need:  # most of it still to come
                self._pieces = [bytes(self._buffer)]
                self._pieces_size = len(self._buffer)
                self._buffer = bytearray()
        if self._pieces:
            return self._whole_pieces(need)
        if len(self._buffer) < need:
            return None
        with memoryview(self._buffer) as view:  # one copy (a slice of the bytearray is one more)
            payload = bytes(view[:need])
        del self._buffer[:need]
        self._need = None
        return payload

    def _whole_pieces(self, need: int) -> bytes | None:
        """The gathered frame once all of it is in; what came after it goes back to the buffer."""
        extra = self._pieces_size - need
        if extra < 0:
            return None
        pieces = self._pieces
        if extra:
            last = pieces[-1]
            pieces[-1] = last[: len(last) - extra]
            self._buffer = bytearray(last[len(last) - extra :])
        payload = b"".join(pieces)
        self._pieces, self._pieces_size, self._need = [], 0, None
        return payload

    def frames(self) -> Iterator[bytes]:
        """Every whole frame buffered so far."""
        while (payload := self.next_frame()) is not None:
            yield payload
