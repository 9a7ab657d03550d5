"""Message-level decoding and encoding (Clause 12.3, 12.4; Annex B)."""

from __future__ import annotations

import math
import struct

import pytest

import onnxcore as oc
from onnxcore.proto import ENUM_SPECS, MESSAGE_CLASSES, MESSAGE_SPECS
from onnxcore.proto.decoder import NanBits


def test_annex_b_counts() -> None:
    # Annex B: 33 messages with fields, 7 enumerations, 166 fields.
    assert len(MESSAGE_SPECS) == 33
    assert len(ENUM_SPECS) == 7
    assert sum(len(m.fields) for m in MESSAGE_SPECS.values()) == 166
    assert set(MESSAGE_CLASSES) == set(MESSAGE_SPECS)
    assert oc.TensorProto.Segment._SPEC.name == "TensorProto.Segment"
    assert oc.TypeProto.Tensor._SPEC.name == "TypeProto.Tensor"
    assert oc.TensorShapeProto.Dimension._SPEC.name == "TensorShapeProto.Dimension"
    mandatory = sum(1 for m in MESSAGE_SPECS.values() for f in m.fields if f.obligation == "mandatory")
    assert mandatory == 23  # B.1 NOTE: 23 of the 166 fields are mandatory.


def test_spec_rows_exact() -> None:
    f = MESSAGE_SPECS["TensorProto"].by_name["float_data"]
    assert (f.tag, f.wire_type, f.type, f.repeated, f.packed) == (4, 2, "float", True, True)
    f = MESSAGE_SPECS["TensorProto"].by_name["dims"]
    assert (f.tag, f.wire_type, f.repeated, f.packed) == (1, 0, True, False)
    assert MESSAGE_SPECS["GraphProto"].reserved_tags == frozenset({3, 4, 6, 7, 8, 9})
    assert "ir_version" in MESSAGE_SPECS["GraphProto"].reserved_names
    assert MESSAGE_SPECS["TypeProto"].oneofs["value"] == (
        "tensor_type",
        "sequence_type",
        "map_type",
        "optional_type",
        "sparse_tensor_type",
        "opaque_type",
    )
    assert oc.TensorProto.DataType.FLOAT6E3M2 == 28
    assert oc.AttributeProto.AttributeType.TYPE_PROTOS == 14
    assert oc.Version.IR_VERSION == 14


def test_defaults_and_presence() -> None:
    t = oc.TensorProto()
    assert t.dims == [] and t.data_type == 0 and t.name == "" and t.raw_data == b"" and t.segment is None
    assert not t.has("data_type") and not t.has("dims") and not t.has("segment")
    t2 = oc.TensorProto(data_type=0)
    assert t2.has("data_type")  # given explicitly: present even though default
    assert oc.encode(t2) == bytes.fromhex("1000")
    assert oc.encode(t) == b""
    t.data_type = 1
    assert t.has("data_type")
    with pytest.raises(ValueError):
        t.has("nope")


def test_presence_survives_round_trip() -> None:
    # An explicitly empty domain (field 1 of OperatorSetIdProto) is written and read back as present.
    op = oc.OperatorSetIdProto(domain="", version=13)
    data = oc.encode(op)
    assert data == bytes.fromhex("0a00100d")
    back = oc.decode(oc.OperatorSetIdProto, data)
    assert back.has("domain") and back == op
    assert oc.encode(back) == data


def test_packed_unpacked_and_mixed() -> None:
    # Clause 12.3.3 example: repeated int64 tag 5 holding 1, 300: 2a 03 01 ac 02 / 28 01 28 ac 02.
    # TensorProto field 7 (int64_data) is packed in Annex B; field 1 (dims) is not.
    packed = bytes.fromhex("3a0301ac02")
    unpacked = bytes.fromhex("3801" + "38ac02")
    assert oc.decode(oc.TensorProto, packed).int64_data == [1, 300]
    assert oc.decode(oc.TensorProto, unpacked).int64_data == [1, 300]
    mixed = unpacked + bytes.fromhex("3a020305")
    assert oc.decode(oc.TensorProto, mixed).int64_data == [1, 300, 3, 5]
    # Writer: the form Annex B records (packed for int64_data).
    assert oc.encode(oc.TensorProto(int64_data=[1, 300])) == packed
    # dims (tag 1) unpacked by default, accepted packed.
    assert oc.encode(oc.TensorProto(dims=[1, 300])) == bytes.fromhex("0801" + "08ac02")
    assert oc.decode(oc.TensorProto, bytes.fromhex("0a0301ac02")).dims == [1, 300]


def test_last_wins_and_message_merge() -> None:
    # Clause 12.3.2: a non-repeated field given twice: last wins; embedded messages merge.
    data = bytes.fromhex("4201" + "61" + "4201" + "62")  # TensorProto.name "a" then "b"
    assert oc.decode(oc.TensorProto, data).name == "b"
    seg1 = oc.encode(oc.TensorProto(segment=oc.TensorProto.Segment(begin=3)))
    seg2 = oc.encode(oc.TensorProto(segment=oc.TensorProto.Segment(end=9)))
    merged = oc.decode(oc.TensorProto, seg1 + seg2)
    assert merged.segment == oc.TensorProto.Segment(begin=3, end=9)
    seg3 = oc.encode(oc.TensorProto(segment=oc.TensorProto.Segment(begin=5)))
    assert oc.decode(oc.TensorProto, seg1 + seg2 + seg3).segment == oc.TensorProto.Segment(begin=5, end=9)


def test_fields_in_any_order() -> None:
    a = oc.encode(oc.OperatorSetIdProto(domain="x", version=3))
    swapped = bytes.fromhex("1003") + bytes.fromhex("0a0178")
    assert oc.decode(oc.OperatorSetIdProto, swapped) == oc.decode(oc.OperatorSetIdProto, a)
    assert oc.encode(oc.decode(oc.OperatorSetIdProto, swapped)) == a  # written in tag order


def test_unknown_fields_retained() -> None:
    # Clause 12.4: unknown tags skipped by wire type and kept; rewriting reproduces them.
    known = oc.encode(oc.OperatorSetIdProto(domain="d", version=2))
    unknown = bytes.fromhex("f807" + "05") + bytes.fromhex("fa07" + "03616263") + bytes.fromhex("fd07" + "01020304")
    unknown += bytes.fromhex("f907" + "0102030405060708")
    msg = oc.decode(oc.OperatorSetIdProto, known + unknown)
    assert [t for t, _ in msg.unknown_fields] == [127, 127, 127, 127]
    assert oc.encode(msg) == known + unknown
    # Reserved tags are unknown to the decoder too (the validator flags them).
    g = oc.decode(oc.GraphProto, bytes.fromhex("1801"))
    assert g.unknown_fields == [(3, bytes.fromhex("1801"))]


def test_int32_out_of_range_rejected() -> None:
    # TensorProto.data_type is int32: 2**31 is out of range (Clause 12.2.3).
    data = bytes.fromhex("10") + oc.wire.encode_varint(2**31)
    with pytest.raises(oc.DecodeError, match="int32") as e:
        oc.decode(oc.TensorProto, data)
    assert e.value.offset == 1
    assert "TensorProto.data_type" in str(e.value)
    neg = bytes.fromhex("10") + oc.wire.encode_signed(-5)
    assert oc.decode(oc.TensorProto, neg).data_type == -5
    assert oc.encode(oc.decode(oc.TensorProto, neg)) == neg


def test_wire_type_3_in_message_rejected() -> None:
    with pytest.raises(oc.DecodeError, match="wire type 3") as e:
        oc.decode(oc.ModelProto, bytes.fromhex("0801") + bytes.fromhex("0b"))
    assert e.value.offset == 2


def test_known_field_wrong_wire_type_rejected() -> None:
    with pytest.raises(oc.DecodeError, match="ir_version"):
        oc.decode(oc.ModelProto, bytes.fromhex("0d00000000"))


def test_error_path_names_nested_field() -> None:
    node = oc.NodeProto(op_type="X", attribute=[oc.AttributeProto(name="a", t=oc.TensorProto(dims=[1]))])
    graph = oc.GraphProto(node=[oc.NodeProto(op_type="Y"), node])
    data = bytearray(oc.encode(oc.ModelProto(ir_version=8, graph=graph)))
    # Corrupt: the dims varint inside the tensor becomes a truncated continuation octet.
    idx = bytes(data).rindex(bytes.fromhex("0801"))
    data[idx + 1] = 0x81
    with pytest.raises(oc.DecodeError) as e:
        oc.decode(oc.ModelProto, bytes(data))
    assert "ModelProto.graph.node[1].attribute[0].t" in str(e.value)
    assert e.value.offset == idx + 1


def test_invalid_utf8_rejected() -> None:
    with pytest.raises(oc.DecodeError, match="UTF-8") as e:
        oc.decode(oc.NodeProto, bytes.fromhex("1a02c328"))
    assert "NodeProto.name" in str(e.value)


def test_float_bits_preserved() -> None:
    # Clause 12.2.4: signalling NaN, quiet NaN with payload and -0.0 kept octet for octet.
    for bits in (0x7F800001, 0x7FC00123, 0xFFBFFFFF, 0x80000000, 0x00000001):
        data = bytes.fromhex("15") + struct.pack("<I", bits)  # AttributeProto.f, tag 2 wire 5
        a = oc.decode(oc.AttributeProto, data)
        assert oc.encode(a) == data
        packed = bytes.fromhex("2208") + struct.pack("<II", bits, 0x3F800000)  # TensorProto.float_data
        t = oc.decode(oc.TensorProto, packed)
        assert oc.encode(t) == packed
    d = oc.decode(oc.AttributeProto, bytes.fromhex("15") + struct.pack("<I", 0x7F800001))
    assert isinstance(d.f, NanBits) and math.isnan(d.f)
    negzero = oc.decode(oc.AttributeProto, bytes.fromhex("1500000080"))
    assert math.copysign(1.0, negzero.f) == -1.0
    assert oc.AttributeProto(f=-0.0) != oc.AttributeProto(f=0.0)


def test_oneof_last_member_wins() -> None:
    d = oc.decode(oc.TensorShapeProto.Dimension, bytes.fromhex("0805" + "12014e"))
    assert d.which_oneof("value") == "dim_param" and d.dim_param == "N" and not d.has("dim_value")
    d = oc.decode(oc.TensorShapeProto.Dimension, bytes.fromhex("12014e" + "0805"))
    assert d.which_oneof("value") == "dim_value" and d.dim_value == 5 and d.dim_param == ""


def test_raw_data_zero_copy() -> None:
    payload = bytes(range(256)) * 4
    data = bytearray(oc.encode(oc.TensorProto(dims=[1024], data_type=2, raw_data=payload)))
    t = oc.decode(oc.TensorProto, data)
    assert isinstance(t.raw_data, memoryview)
    assert t.raw_data.obj is data  # a view into the input, not a copy
    assert bytes(t.raw_data) == payload


def test_encode_rejects_out_of_range_and_wrong_types() -> None:
    with pytest.raises(oc.EncodeError, match="int32"):
        oc.encode(oc.TensorProto(data_type=2**31))
    with pytest.raises(oc.EncodeError, match="int64"):
        oc.encode(oc.TensorProto(dims=[2**63]))
    with pytest.raises(oc.EncodeError, match="expected str"):
        oc.encode(oc.NodeProto(name=b"x"))  # type: ignore[arg-type]
    with pytest.raises(oc.EncodeError, match="GraphProto"):
        oc.encode(oc.ModelProto(graph=oc.NodeProto()))  # type: ignore[arg-type]


def test_equality_and_repr() -> None:
    a = oc.NodeProto(op_type="Relu", input=["x"], output=["y"])
    b = oc.NodeProto(op_type="Relu", input=["x"], output=["y"])
    assert a == b
    b.output.append("z")
    assert a != b
    assert repr(a) == "NodeProto(input=['x'], output=['y'], op_type='Relu')"
    big = oc.TensorProto(raw_data=b"\x00" * 100)
    assert "<100 bytes>" in repr(big)


def test_canonical_sorts_unknown_fields() -> None:
    known = oc.encode(oc.OperatorSetIdProto(domain="d", version=2))
    u1 = bytes.fromhex("f807" + "05")  # tag 127
    u2 = bytes.fromhex("b006" + "01")  # tag 102
    m1 = oc.decode(oc.OperatorSetIdProto, known + u1 + u2)
    m2 = oc.decode(oc.OperatorSetIdProto, u2 + known + u1)
    assert oc.encode(m1) != oc.encode(m2)
    assert oc.encode(m1, canonical=True) == oc.encode(m2, canonical=True) == known + u2 + u1


def test_max_depth_refused_with_limit_error() -> None:
    g: bytes = b""
    for _ in range(300):
        # GraphProto.node[0].attribute[0].g = previous graph
        attr = bytes.fromhex("0a0162") + bytes.fromhex("32") + oc.wire.encode_varint(len(g)) + g
        node = bytes.fromhex("2a") + oc.wire.encode_varint(len(attr)) + attr
        g = bytes.fromhex("0a") + oc.wire.encode_varint(len(node)) + node
    with pytest.raises(oc.DecodeLimitError) as e:
        oc.decode(oc.GraphProto, g)
    assert isinstance(e.value, oc.LimitError) and isinstance(e.value, oc.DecodeError)
    assert oc.decode(oc.GraphProto, g, max_depth=10_000).node[0].attribute[0].g is not None


def test_strings_decode_alike_from_bytes_and_from_a_memoryview() -> None:
    # Bytes and mmap inputs decode their strings with bytes.decode, a memoryview that is not all of its object
    # (a slice, a bytearray's view) with the view decoders: the same messages, the same UTF-8 errors.
    node = oc.NodeProto(name="é", op_type="Add", input=["a", "ü"], output=["y"])
    model = oc.ModelProto(ir_version=8, graph=oc.GraphProto(node=[node], name="g"))
    data = oc.encode(model)
    padded = b"\xff" + data
    for source in (data, bytearray(data), memoryview(padded)[1:]):
        assert oc.decode(oc.ModelProto, source) == model
    bad = bytes.fromhex("1a02c328")  # NodeProto.name, not UTF-8
    offsets = []
    for source in (bad, memoryview(b"\x00" + bad)[1:]):
        with pytest.raises(oc.DecodeError, match="UTF-8") as e:
            oc.decode(oc.NodeProto, source)
        assert "NodeProto.name" in str(e.value)
        offsets.append(e.value.offset)
    assert offsets == [2, 2]


def test_two_octet_keys() -> None:
    # AttributeProto.type is tag 20: a key of two octets, read inline by the generated decoder as read_varint
    # reads it (a longer form of any key too); a truncated one and a wrong wire type are refused as before.
    assert oc.decode(oc.AttributeProto, bytes.fromhex("a00107")).type == 7
    assert oc.decode(oc.AttributeProto, bytes.fromhex("a0810007")).type == 7  # three octets
    assert oc.decode(oc.AttributeProto, bytes.fromhex("8a000178")).name == "x"  # key 10 in two octets
    with pytest.raises(oc.DecodeError, match="truncated") as e:
        oc.decode(oc.AttributeProto, bytes.fromhex("0a0178a0"))
    assert e.value.offset == 3
    with pytest.raises(oc.DecodeError, match="type") as e:
        oc.decode(oc.AttributeProto, bytes.fromhex("a50100000000"))
    assert e.value.offset == 0
    with pytest.raises(oc.DecodeError, match="tag 0"):
        oc.decode(oc.AttributeProto, bytes.fromhex("800000"))
