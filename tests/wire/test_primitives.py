"""Clause 12 primitives, each with fixed octets in both directions."""

from __future__ import annotations

import struct

import pytest

from onnxcore.errors import DecodeError, EncodeError
from onnxcore.wire import (
    Writer,
    encode_key,
    encode_signed,
    encode_varint,
    iter_fields,
    read_fixed32,
    read_fixed64,
    read_key,
    read_length,
    read_varint,
    skip_value,
    to_int32,
    to_int64,
    varint_size,
)


@pytest.mark.parametrize(
    ("value", "octets"),
    [
        (0, "00"),
        (1, "01"),  # Clause 12.2.2 example
        (127, "7f"),
        (128, "8001"),
        (300, "ac02"),  # Clause 12.2.2 example
        (2**63, "80808080808080808001"),
        (2**64 - 1, "ffffffffffffffffff01"),
    ],
)
def test_varint_fixed_bytes(value: int, octets: str) -> None:
    data = bytes.fromhex(octets)
    assert encode_varint(value) == data
    assert read_varint(data, 0, len(data)) == (value, len(data))
    assert varint_size(value) == len(data)


def test_negative_is_ten_octets() -> None:
    # Clause 12.2.3: -1 is ff ff ff ff ff ff ff ff ff 01.
    data = bytes.fromhex("ffffffffffffffffff01")
    assert encode_signed(-1) == data
    raw, _ = read_varint(data, 0, len(data))
    assert to_int64(raw) == -1
    assert to_int32(raw) == -1
    assert len(encode_signed(-(2**63))) == 10
    assert len(encode_signed(-5)) == 10


def test_int32_range_rejected() -> None:
    # Clause 12.2.3: a consumer reading int32 rejects values outside its range.
    assert to_int32(2**31 - 1) == 2**31 - 1
    assert to_int32(2**31) is None
    assert to_int32(2**64 - 2**31) == -(2**31)
    assert to_int32(2**64 - 2**31 - 1) is None


def test_varint_more_than_ten_octets_rejected() -> None:
    data = bytes.fromhex("8080808080808080808001")
    with pytest.raises(DecodeError, match="longer than ten octets") as e:
        read_varint(data, 0, len(data))
    assert e.value.offset == 0


def test_varint_above_64_bits_rejected() -> None:
    data = bytes.fromhex("ffffffffffffffffff03")
    with pytest.raises(DecodeError, match="2\\*\\*64"):
        read_varint(data, 0, len(data))


def test_truncated_varint() -> None:
    with pytest.raises(DecodeError, match="truncated") as e:
        read_varint(b"\x05\x80\x80", 1, 3)
    assert e.value.offset == 1


def test_encode_varint_range() -> None:
    with pytest.raises(EncodeError):
        encode_varint(-1)
    with pytest.raises(EncodeError):
        encode_varint(2**64)
    with pytest.raises(EncodeError):
        encode_signed(2**63)
    with pytest.raises(EncodeError):
        encode_signed(-(2**63) - 1)


@pytest.mark.parametrize(
    ("tag", "wire_type", "octets"),
    [(1, 0, "08"), (20, 0, "a001"), (15, 2, "7a"), (16, 2, "8201"), (1, 5, "0d"), (1, 1, "09")],
)
def test_field_keys(tag: int, wire_type: int, octets: str) -> None:
    # Clause 12.3.1 examples: tag 1 wire type 0 is 08; tag 20 wire type 0 is a0 01.
    data = bytes.fromhex(octets)
    assert encode_key(tag, wire_type) == data
    assert read_key(data, 0, len(data)) == (tag, wire_type, len(data))


@pytest.mark.parametrize("wire_type", [3, 4])
def test_wire_types_3_and_4_rejected(wire_type: int) -> None:
    data = encode_varint((1 << 3) | wire_type)
    with pytest.raises(DecodeError, match=f"wire type {wire_type} SHALL NOT appear"):
        read_key(data, 0, len(data))


@pytest.mark.parametrize("wire_type", [6, 7])
def test_invalid_wire_types_rejected(wire_type: int) -> None:
    data = encode_varint((1 << 3) | wire_type)
    with pytest.raises(DecodeError, match="invalid wire type"):
        read_key(data, 0, len(data))


def test_tag_zero_rejected() -> None:
    with pytest.raises(DecodeError, match="tag 0"):
        read_key(b"\x00", 0, 1)
    with pytest.raises(EncodeError):
        encode_key(0, 0)


def test_fixed_width_little_endian() -> None:
    # Clause 12.2.4: least significant octet first; NaN payloads and -0.0 kept exactly.
    assert read_fixed32(bytes.fromhex("01020304"), 0, 4) == (0x04030201, 4)
    assert read_fixed64(bytes.fromhex("0102030405060708"), 0, 8) == (0x0807060504030201, 8)
    neg_zero = struct.pack("<f", -0.0)
    assert neg_zero == bytes.fromhex("00000080")
    with pytest.raises(DecodeError, match="truncated 32-bit"):
        read_fixed32(b"\x00\x00\x00", 0, 3)
    with pytest.raises(DecodeError, match="truncated 64-bit"):
        read_fixed64(b"\x00" * 7, 0, 7)


def test_length_beyond_enclosing_message_rejected() -> None:
    # Clause 12.2.5: a length that extends beyond the enclosing message is rejected,
    # even when the octets exist further on in the buffer.
    data = bytes.fromhex("05616263646566")
    assert read_length(data, 0, len(data)) == (1, 6)
    with pytest.raises(DecodeError, match="beyond the end of the enclosing message") as e:
        read_length(data, 0, 4)
    assert e.value.offset == 0


def test_skip_by_wire_type() -> None:
    # Clause 12.4: skip lengths by wire type alone.
    assert skip_value(bytes.fromhex("ac02"), 0, 0, 2) == 2
    assert skip_value(b"\x00" * 8, 1, 0, 8) == 8
    assert skip_value(b"\x00" * 4, 5, 0, 4) == 4
    assert skip_value(bytes.fromhex("03616263"), 2, 0, 4) == 4
    with pytest.raises(DecodeError):
        skip_value(b"\x00" * 3, 5, 0, 3)


def test_iter_fields_packed_and_unpacked_example() -> None:
    # Clause 12.3.3: repeated int64 of tag 5 holding 1 and 300.
    packed = bytes.fromhex("2a0301ac02")
    unpacked = bytes.fromhex("2801" + "28ac02")
    recs = list(iter_fields(packed))
    assert [(r.tag, r.wire_type, r.value_start, r.value_end) for r in recs] == [(5, 2, 2, 5)]
    recs = list(iter_fields(unpacked))
    assert [(r.tag, r.wire_type, r.value) for r in recs] == [(5, 0, 1), (5, 0, 300)]


def test_writer_keeps_large_parts_by_reference() -> None:
    big = memoryview(bytearray(1 << 17))
    w = Writer()
    w.write(b"\x01")
    w.write(big)
    w.write(b"\x02")
    parts = list(w.parts())
    assert any(p is big for p in parts)
    assert w.size == 2 + len(big)
    assert w.getvalue() == b"\x01" + bytes(big) + b"\x02"
