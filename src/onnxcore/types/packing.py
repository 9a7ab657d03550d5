"""Packing of 2-, 4- and 6-bit element types into octets and 32-bit integers (Clause 6.3.4, Table 7)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "packed_size",
    "pack_bits",
    "unpack_bits",
    "pack_int32",
    "unpack_int32",
    "to_codes",
    "from_codes",
]

U8 = npt.NDArray[np.uint8]


def packed_size(n: int, bits: int) -> int:
    """Octets of raw storage for ``n`` elements of ``bits`` bits: the least integer >= n*bits/8 (6.3.4)."""
    return (n * bits + 7) // 8


def to_codes(array: npt.NDArray[Any], bits: int) -> U8:
    """The ``bits``-bit codes of a narrow-typed array, flattened, high bits zero."""
    flat = np.ascontiguousarray(array).reshape(-1)
    return flat.view(np.uint8) & np.uint8((1 << bits) - 1)


def from_codes(codes: U8, dtype: np.dtype[Any], shape: tuple[int, ...]) -> npt.NDArray[Any]:
    """An array of narrow ``dtype`` from ``bits``-bit codes (ml_dtypes keeps one element per octet, low bits)."""
    return np.ascontiguousarray(codes, dtype=np.uint8).view(dtype).reshape(shape)


def pack_bits(codes: U8, bits: int) -> bytes:
    """Raw storage of element codes: a bit stream, each element in the next free bits of the current
    octet counting from its least significant bit, padding zero (Clause 6.3.4)."""
    codes = np.asarray(codes, dtype=np.uint8).reshape(-1) & np.uint8((1 << bits) - 1)
    n = codes.size
    if bits == 8:
        return codes.tobytes()
    if bits in (2, 4):
        per = 8 // bits
        padded = np.zeros(packed_size(n, bits) * per, dtype=np.uint8)
        padded[:n] = codes
        lanes = padded.reshape(-1, per)
        out = np.zeros(lanes.shape[0], dtype=np.uint8)
        for k in range(per):
            out |= lanes[:, k] << np.uint8(k * bits)
        return out.tobytes()
    # General bit stream (6 bits): spread each code into its bits, LSB first, then regroup by 8.
    stream = np.unpackbits(codes[:, None], axis=1, bitorder="little")[:, :bits].reshape(-1)
    return np.packbits(stream, bitorder="little").tobytes()


def unpack_bits(data: U8, n: int, bits: int) -> U8:
    """The first ``n`` element codes of a raw bit stream (Clause 6.3.4); padding bits are ignored.

    ``data`` must hold exactly :func:`packed_size` octets (the caller checks the length).
    """
    data = np.asarray(data, dtype=np.uint8).reshape(-1)
    if bits == 8:
        return data[:n]
    mask = np.uint8((1 << bits) - 1)
    if bits in (2, 4):
        per = 8 // bits
        lanes = np.empty((data.size, per), dtype=np.uint8)
        for k in range(per):
            lanes[:, k] = (data >> np.uint8(k * bits)) & mask
        return lanes.reshape(-1)[:n]
    stream = np.unpackbits(data, bitorder="little")[: n * bits].reshape(n, bits)
    return np.packbits(stream, axis=1, bitorder="little").reshape(-1)


def pack_int32(codes: U8, bits: int) -> list[int]:
    """Typed storage of narrow element codes as 32-bit integers per Table 7 (other bits zero)."""
    codes = np.asarray(codes, dtype=np.uint8).reshape(-1)
    if bits == 6:
        return (codes & np.uint8(0x3F)).astype(np.int64).tolist()
    # 2- and 4-bit: the same octet as raw storage, one octet per int32 (bits 0 to 7 only).
    return np.frombuffer(pack_bits(codes, bits), dtype=np.uint8).astype(np.int64).tolist()


def int32_per_elements(n: int, bits: int) -> int:
    """How many 32-bit integers of typed storage ``n`` elements of ``bits`` bits take (Table 7)."""
    per = {2: 4, 4: 2, 6: 1}[bits]
    return (n + per - 1) // per


def unpack_int32(values: npt.NDArray[np.int64], n: int, bits: int) -> U8:
    """The first ``n`` element codes from Table 7 typed storage (bits outside the table are ignored)."""
    octets = (np.asarray(values, dtype=np.int64) & 0xFF).astype(np.uint8)
    if bits == 6:
        return octets[:n] & np.uint8(0x3F)
    return unpack_bits(octets, n, bits)
