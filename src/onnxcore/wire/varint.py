"""Variable-length integers and field keys (Clauses 12.2.2, 12.2.3, 12.3.1)."""

from __future__ import annotations

from onnxcore.errors import EncodeError

__all__ = [
    "MAX_VARINT_OCTETS",
    "encode_varint",
    "encode_signed",
    "encode_key",
    "varint_size",
    "to_int64",
    "to_int32",
]

MAX_VARINT_OCTETS = 10  # Clause 12.2.2: at most ten octets.
_U64 = 1 << 64
_I64_MIN = -(1 << 63)
_I64_LIM = 1 << 63
_I32_MIN = -(1 << 31)
_I32_LIM = 1 << 31

# One-octet encodings are by far the most common; keep them ready.
_SMALL = [bytes((i,)) for i in range(128)]


def encode_varint(value: int) -> bytes:
    """Encode a non-negative integer below 2**64 as a variable-length integer (Clause 12.2.2).

    Raises:
        EncodeError: ``value`` is negative or does not fit 64 bits.
    """
    if 0 <= value < 128:
        return _SMALL[value]
    if value < 0 or value >= _U64:
        raise EncodeError(f"varint value {value} is outside [0, 2**64)")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_signed(value: int) -> bytes:
    """Encode a signed integer as the varint of its 64-bit two's complement (Clause 12.2.3).

    A negative value therefore always takes ten octets.
    """
    if value < 0:
        if value < _I64_MIN:
            raise EncodeError(f"signed value {value} does not fit 64 bits")
        return encode_varint(value + _U64)
    if value >= _I64_LIM:
        raise EncodeError(f"signed value {value} does not fit 64 bits")
    return encode_varint(value)


def encode_key(tag: int, wire_type: int) -> bytes:
    """The field key ``(tag * 8) + wire_type`` as a varint (Clause 12.3.1, equation 1)."""
    if tag < 1:
        raise EncodeError(f"tag {tag} is below 1")
    return encode_varint((tag << 3) | wire_type)


def varint_size(value: int) -> int:
    """Number of octets :func:`encode_varint` produces for ``value``."""
    if value < 0:
        return MAX_VARINT_OCTETS
    n = 1
    while value >= 0x80:
        value >>= 7
        n += 1
    return n


def to_int64(raw: int) -> int:
    """Reinterpret a decoded 64-bit varint as a two's complement int64."""
    return raw - _U64 if raw >= _I64_LIM else raw


def to_int32(raw: int) -> int | None:
    """Reinterpret a decoded varint as int32; ``None`` when outside the int32 range (Clause 12.2.3)."""
    v = raw - _U64 if raw >= _I64_LIM else raw
    if _I32_MIN <= v < _I32_LIM:
        return v
    return None
