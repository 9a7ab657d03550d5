"""Reading Clause 12 primitives from a buffer, zero-copy.

Every reader takes the buffer (``bytes`` or a ``memoryview`` of octets), the position and the end
of the enclosing message, and returns the value and the new position. Positions are absolute, so
errors name the byte offset in the whole input.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator
from typing import NamedTuple

from onnxcore.errors import DecodeError

__all__ = [
    "Buffer",
    "read_varint",
    "read_key",
    "read_fixed32",
    "read_fixed64",
    "read_length",
    "skip_value",
    "FieldRecord",
    "iter_fields",
]

Buffer = bytes | bytearray | memoryview | mmap.mmap

_U64_LIM = 1 << 64
_F32 = struct.Struct("<I")
_F64 = struct.Struct("<Q")


def read_varint(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """Read a variable-length integer (Clause 12.2.2).

    Raises:
        DecodeError: truncated, longer than ten octets, or above 2**64 - 1.
    """
    if pos < end:
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
    start = pos
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise DecodeError("truncated variable-length integer", start)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift >= 70:
            raise DecodeError("variable-length integer longer than ten octets", start)
    if result >= _U64_LIM:
        raise DecodeError("variable-length integer above 2**64 - 1", start)
    return result, pos


def read_key(buf: Buffer, pos: int, end: int) -> tuple[int, int, int]:
    """Read a field key; return ``(tag, wire_type, new_pos)`` (Clause 12.3.1).

    Raises:
        DecodeError: tag 0, or wire type 3, 4, 6 or 7 (Clause 12.2.1).
    """
    start = pos
    key, pos = read_varint(buf, pos, end)
    wire_type = key & 7
    tag = key >> 3
    if wire_type not in (0, 1, 2, 5):
        if wire_type in (3, 4):
            raise DecodeError(f"wire type {wire_type} SHALL NOT appear (Clause 12.2.1)", start)
        raise DecodeError(f"invalid wire type {wire_type}", start)
    if tag < 1:
        raise DecodeError("field tag 0 (a tag is at least 1, Clause 12.3.1)", start)
    return tag, wire_type, pos


def read_fixed32(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """Four octets, least significant first, as an unsigned integer (Clause 12.2.4)."""
    if pos + 4 > end:
        raise DecodeError("truncated 32-bit value", pos)
    return _F32.unpack_from(buf, pos)[0], pos + 4


def read_fixed64(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """Eight octets, least significant first, as an unsigned integer (Clause 12.2.4)."""
    if pos + 8 > end:
        raise DecodeError("truncated 64-bit value", pos)
    return _F64.unpack_from(buf, pos)[0], pos + 8


def read_length(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """Read the length of a length-delimited value; return ``(value_start, value_end)``.

    Raises:
        DecodeError: the length extends beyond the enclosing message (Clause 12.2.5).
    """
    start = pos
    n, pos = read_varint(buf, pos, end)
    if n > end - pos:
        raise DecodeError(
            f"length {n} extends beyond the end of the enclosing message ({end - pos} octets left)", start
        )
    return pos, pos + n


def skip_value(buf: Buffer, wire_type: int, pos: int, end: int) -> int:
    """Skip one value by its wire type alone (Clause 12.4); return the position after it."""
    if wire_type == 0:
        return read_varint(buf, pos, end)[1]
    if wire_type == 1:
        if pos + 8 > end:
            raise DecodeError("truncated 64-bit value", pos)
        return pos + 8
    if wire_type == 5:
        if pos + 4 > end:
            raise DecodeError("truncated 32-bit value", pos)
        return pos + 4
    if wire_type == 2:
        return read_length(buf, pos, end)[1]
    raise DecodeError(f"wire type {wire_type} SHALL NOT appear (Clause 12.2.1)", pos)


class FieldRecord(NamedTuple):
    """One field as found on the wire: where its key starts, its tag and wire type, its value.

    For wire type 2, ``value`` is ``None`` and ``value_start``/``value_end`` delimit the octets;
    for the others, ``value`` is the unsigned integer read.
    """

    offset: int
    tag: int
    wire_type: int
    value: int | None
    value_start: int
    value_end: int


def iter_fields(buf: Buffer, start: int = 0, end: int | None = None) -> Iterator[FieldRecord]:
    """Iterate the fields of one message without interpreting them (for inspection tools)."""
    if end is None:
        end = len(buf)
    pos = start
    while pos < end:
        offset = pos
        tag, wt, pos = read_key(buf, pos, end)
        if wt == 0:
            v, npos = read_varint(buf, pos, end)
            yield FieldRecord(offset, tag, wt, v, pos, npos)
        elif wt == 1:
            v, npos = read_fixed64(buf, pos, end)
            yield FieldRecord(offset, tag, wt, v, pos, npos)
        elif wt == 5:
            v, npos = read_fixed32(buf, pos, end)
            yield FieldRecord(offset, tag, wt, v, pos, npos)
        else:
            vs, npos = read_length(buf, pos, end)
            yield FieldRecord(offset, tag, wt, None, vs, npos)
        pos = npos
