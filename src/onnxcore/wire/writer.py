"""An output buffer for Clause 12 encodings that keeps large values by reference (zero-copy)."""

from __future__ import annotations

from collections.abc import Iterator

from onnxcore.wire.varint import encode_varint

__all__ = ["Writer"]

# Values at least this large are kept as separate parts rather than copied into the buffer.
LARGE = 1 << 16


class Writer:
    """Accumulates encoded octets as a list of parts.

    Small writes are appended to a running ``bytearray``; a large ``bytes``/``memoryview`` is
    kept by reference so that writing a model never copies its weights.
    """

    __slots__ = ("_buf", "_parts", "_size")

    def __init__(self) -> None:
        self._parts: list[bytes | bytearray | memoryview] = []
        self._buf = bytearray()
        self._size = 0

    @property
    def size(self) -> int:
        """Total octets written so far."""
        return self._size + len(self._buf)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Append octets (by reference when large)."""
        n = len(data)
        if n >= LARGE:
            if self._buf:
                self._size += len(self._buf)
                self._parts.append(self._buf)
                self._buf = bytearray()
            self._parts.append(data)
            self._size += n
        else:
            self._buf += data

    def write_varint(self, value: int) -> None:
        """Append a varint."""
        self._buf += encode_varint(value)

    def extend(self, other: Writer) -> None:
        """Append everything ``other`` holds."""
        if other._size == 0:
            self._buf += other._buf
            return
        for part in other.parts():
            self.write(part)

    def parts(self) -> Iterator[bytes | bytearray | memoryview]:
        """The parts in order (the running buffer last)."""
        yield from self._parts
        if self._buf:
            yield self._buf

    def getvalue(self) -> bytes:
        """Join all parts into one ``bytes``."""
        if not self._parts:
            return bytes(self._buf)
        return b"".join([*self._parts, self._buf])
