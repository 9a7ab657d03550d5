"""Packing of narrow element types (Clause 6.3.4, Table 7): the spec's examples and property tests."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnxcore import TensorError, decode, encode
from onnxcore.proto import TensorProto
from onnxcore.types import ElementType, from_array, to_array
from onnxcore.types.packing import pack_bits, pack_int32, packed_size, unpack_bits, unpack_int32

E = ElementType
NARROW = [E.INT4, E.UINT4, E.FLOAT4E2M1, E.INT2, E.UINT2, E.FLOAT6E2M3, E.FLOAT6E3M2]


def test_spec_example_seven_int4_in_four_octets() -> None:
    """6.3.4 EXAMPLE: 7 INT4 elements occupy 4 octets; the top 4 bits of the fourth are padding (zero)."""
    arr = np.array([-1, -1, -1, -1, -1, -1, -1], dtype=E.INT4.np_dtype)
    t = from_array(arr)
    raw = bytes(t.raw_data)
    assert len(raw) == 4
    assert raw == b"\xff\xff\xff\x0f"
    assert raw[3] >> 4 == 0


def test_spec_example_seven_float6e2m3_in_six_octets() -> None:
    """6.3.4 EXAMPLE: 7 FLOAT6E2M3 elements occupy 6 octets; the top 2 bits of the sixth are padding."""
    codes = np.full(7, 0x3F, dtype=np.uint8)  # every element all ones: -7.5
    arr = codes.view(E.FLOAT6E2M3.np_dtype)
    assert float(arr[0]) == -7.5
    raw = bytes(from_array(arr).raw_data)
    assert len(raw) == 6 == packed_size(7, 6)
    assert raw == b"\xff" * 5 + b"\x03"  # 42 bits set, the two most significant of octet 6 are zero


def test_bit_order_lsb_first() -> None:
    """Each element takes the next free bits counting from the least significant bit (6.3.4)."""
    assert pack_bits(np.array([1, 2], dtype=np.uint8), 4) == b"\x21"
    assert pack_bits(np.array([1, 2, 3, 0, 1], dtype=np.uint8), 2) == bytes([0b00111001, 0b01])
    # 6-bit: a = 0b000001, b = 0b111111 -> bits 0-5 = a, bits 6-11 = b
    assert pack_bits(np.array([1, 0x3F], dtype=np.uint8), 6) == bytes([0b11000001, 0b00001111])


def test_padding_ignored_on_read() -> None:
    """A consumer ignores the padding bits of the final octet (6.3.4)."""
    t = TensorProto(dims=[3], data_type=int(E.UINT4), raw_data=b"\x21\xf3")
    assert to_array(t).tolist() == [1, 2, 3]
    t = TensorProto(dims=[1], data_type=int(E.FLOAT6E2M3), raw_data=b"\xc1")
    assert to_array(t).view(np.uint8).tolist() == [1]


def test_typed_storage_table7() -> None:
    """Table 7: 4 two-bit or 2 four-bit elements per int32 (bits 0-7), one six-bit element (bits 0-5)."""
    t = from_array(np.array([1, 2, 3], dtype=E.UINT4.np_dtype), raw=False)
    assert t.int32_data == [0x21, 0x03]
    t = from_array(np.array([-1, 0, 1, -2, 1], dtype=E.INT2.np_dtype), raw=False)
    assert t.int32_data == [0b10010011, 0b01]
    t = from_array(np.array([0x3F, 0x01], dtype=np.uint8).view(E.FLOAT6E3M2.np_dtype), raw=False)
    assert t.int32_data == [0x3F, 0x01]
    # narrow floats in typed storage: the unsigned integer of their bits (6.3.4, last paragraph)
    t = from_array(np.array([-1.0], dtype=E.FLOAT16.np_dtype), raw=False)
    assert t.int32_data == [0xBC00]
    t = from_array(np.array([-448.0], dtype=E.FLOAT8E4M3FN.np_dtype), raw=False)
    assert t.int32_data == [0xFE]


def test_typed_storage_count_checked() -> None:
    t = TensorProto(name="q", dims=[5], data_type=int(E.INT4), int32_data=[0, 0])
    with pytest.raises(TensorError, match=r"'q'.*int32_data holds 2 values.*needs 3"):
        to_array(t)


@pytest.mark.parametrize("et", NARROW, ids=lambda e: e.name)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_round_trip_property(et: ElementType, data: st.DataObject) -> None:
    """Any sequence of codes survives raw and typed storage, through the wire, unchanged."""
    n = data.draw(st.integers(min_value=0, max_value=70))
    codes = data.draw(st.lists(st.integers(0, (1 << et.bits) - 1), min_size=n, max_size=n))
    arr = np.array(codes, dtype=np.uint8).view(et.np_dtype)
    for raw in (True, False):
        t = decode(TensorProto, bytes(encode(from_array(arr, "p", raw=raw))))
        out = to_array(t)
        assert out.view(np.uint8).tolist() == codes
        if raw:
            assert len(t.raw_data) == packed_size(n, et.bits)
            if n * et.bits % 8:
                assert bytes(t.raw_data)[-1] >> (n * et.bits % 8) == 0  # padding zero on write


@settings(max_examples=200, deadline=None)
@given(bits=st.sampled_from([2, 4, 6]), codes=st.lists(st.integers(0, 255), max_size=50), pad=st.integers(0, 255))
def test_pack_unpack_property(bits: int, codes: list[int], pad: int) -> None:
    c = np.array(codes, dtype=np.uint8)
    packed = bytearray(pack_bits(c, bits))
    n = len(codes)
    assert len(packed) == packed_size(n, bits)
    used = n * bits % 8
    if used:  # garbage in the padding bits must not matter
        packed[-1] |= (pad << used) & 0xFF
    got = unpack_bits(np.frombuffer(bytes(packed), dtype=np.uint8), n, bits)
    assert got.tolist() == [x & ((1 << bits) - 1) for x in codes]
    words = pack_int32(c, bits)
    assert all(0 <= w < (1 << 8) for w in words)
    assert unpack_int32(np.array(words, dtype=np.int64), n, bits).tolist() == got.tolist()
