"""The decoder's runs of unpacked repeated records (issue 42, item 3): ``AttributeProto.floats`` (tag 7, fixed32, one
record per value as proto2 writes it) and ``AttributeProto.strings`` (tag 9) read inline, with the generic path's
semantics (Clause 12.2.4: a float is its 32-bit pattern; Clause 12.3.2: repeated records append in order, whatever
lies between them). Fixed octets written by hand, and protobuf's own parse of the same octets beside ours."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from onnx import AttributeProto as PbAttribute

from onnxcore.errors import DecodeError
from onnxcore.proto.decoder import NanBits, decode_message
from onnxcore.proto.messages import AttributeProto

FLOAT_KEY = 7 << 3 | 5
STRING_KEY = 9 << 3 | 2


def _floats(*bits: int) -> bytes:
    return b"".join(bytes([FLOAT_KEY]) + struct.pack("<I", b) for b in bits)


def _string(s: bytes) -> bytes:
    return bytes([STRING_KEY, len(s)]) + s


def _f32_bits(v: float) -> int:
    return int(struct.unpack("<I", struct.pack("<f", v))[0])


def test_a_run_of_floats_interrupted_and_resumed_appends_in_order() -> None:
    name = bytes([1 << 3 | 2, 1]) + b"a"
    data = (
        name
        + _floats(_f32_bits(1.5), _f32_bits(-2.25))
        + _string(b"x")
        + _floats(_f32_bits(3.0))
        + _string(b"")
        + _string(b"\xff\x00")
    )
    ours = decode_message(AttributeProto, data)
    theirs = PbAttribute.FromString(data)
    assert ours.floats == [1.5, -2.25, 3.0] == list(theirs.floats)
    assert ours.strings == [b"x", b"", b"\xff\x00"] == list(theirs.strings)
    assert ours.name == "a"


def test_a_nan_in_a_run_keeps_its_bits() -> None:
    bits = (0x7F800001, _f32_bits(0.5), 0xFFC00123)
    ours = decode_message(AttributeProto, _floats(*bits))
    assert isinstance(ours.floats[0], NanBits) and ours.floats[0].bits == 0x7F800001
    assert ours.floats[1] == 0.5
    assert isinstance(ours.floats[2], NanBits) and ours.floats[2].bits == 0xFFC00123
    assert all(math.isnan(v) for v in (ours.floats[0], ours.floats[2]))


def test_a_truncated_float_in_a_run_is_refused_where_it_starts() -> None:
    data = _floats(_f32_bits(1.0)) + bytes([FLOAT_KEY, 0, 0])
    with pytest.raises(DecodeError, match="truncated 32-bit value") as info:
        decode_message(AttributeProto, data)
    assert "floats" in str(info.value)


def test_the_packed_form_still_decodes_and_appends_to_a_run() -> None:
    packed = bytes([7 << 3 | 2, 8]) + struct.pack("<2f", 4.0, 5.0)
    data = _floats(_f32_bits(1.0)) + packed + _floats(_f32_bits(6.0))
    assert (
        decode_message(AttributeProto, data).floats == [1.0, 4.0, 5.0, 6.0] == list(PbAttribute.FromString(data).floats)
    )


def test_a_run_of_ints_of_every_length_decodes_as_protobuf_does() -> None:
    values = [0, 1, 127, 128, 300, 16383, 16384, 2**40, -1, -(2**63), 2**63 - 1, 5]
    pb = PbAttribute(name="n", ints=values, floats=[1.0], type=PbAttribute.INTS)
    data = pb.SerializeToString()
    assert data.count(bytes([8 << 3])) >= len(values)  # unpacked: one record per value
    ours = decode_message(AttributeProto, data)
    assert ours.ints == values and ours.floats == [1.0] and ours.type == PbAttribute.INTS


def test_a_truncated_int_in_a_run_is_refused() -> None:
    data = bytes([8 << 3, 5, 8 << 3, 0x80])
    with pytest.raises(DecodeError):
        decode_message(AttributeProto, data)


@pytest.mark.parametrize("n", [1, 31, 32, 33, 100, 5000, 20000])
def test_long_runs_decode_as_protobuf_does(n: int) -> None:
    # Past 32 records a run is read in chunks with numpy (4,096 records or octets, then doubled): values of every
    # varint length, negative ones (ten octets) among them, NaNs with payloads, and the run's end at any place.
    rng = np.random.default_rng(n)
    wide = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64, endpoint=True)
    shifted = wide >> rng.integers(0, 63, n)  # every length of varint from one octet to ten
    ints = np.where(rng.random(n) < 0.5, rng.integers(0, 300, n), np.where(rng.random(n) < 0.9, np.abs(shifted), wide))
    floats = rng.standard_normal(n).astype(np.float32)
    pb = PbAttribute(name="t", ints=ints.tolist(), floats=floats.tolist(), strings=[b"BRANCH_LEQ"] * n)
    data = pb.SerializeToString()
    ours = decode_message(AttributeProto, data)
    theirs = PbAttribute.FromString(data)
    assert ours.ints == list(theirs.ints) == ints.tolist()
    assert ours.floats == list(theirs.floats)
    assert ours.strings == list(theirs.strings)


def test_a_long_float_run_keeps_nan_bits_and_stops_at_another_field() -> None:
    bits = [_f32_bits(float(i)) for i in range(5000)]
    bits[40], bits[4000] = 0x7F800001, 0xFFC00123
    data = _floats(*bits) + _string(b"after") + _floats(*bits[:3])
    ours = decode_message(AttributeProto, data)
    assert len(ours.floats) == 5003 and ours.strings == [b"after"]
    assert isinstance(ours.floats[40], NanBits) and ours.floats[40].bits == 0x7F800001
    assert isinstance(ours.floats[4000], NanBits) and ours.floats[4000].bits == 0xFFC00123
    assert ours.floats[:40] == [float(i) for i in range(40)] and ours.floats[5000:] == [0.0, 1.0, 2.0]


def test_a_long_int_run_truncated_at_the_end_is_refused() -> None:
    body = b"".join(bytes([8 << 3, 0x81, 0x01]) for _ in range(100))
    decode_message(AttributeProto, body)  # whole
    with pytest.raises(DecodeError):
        decode_message(AttributeProto, body + bytes([8 << 3, 0x81]))
