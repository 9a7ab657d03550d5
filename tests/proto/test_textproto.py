"""``str(message)`` is protobuf's text format, character for character as ``print(onnx_message)`` shows it."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import corpus
import pytest

import onnxcore as oc
from onnxcore.proto.textproto import message_to_text

onnx = pytest.importorskip("onnx")


def _same_text(ours: oc.Message) -> None:
    """Our text equals protobuf's for the same octets (the onnx class of the same Annex B name)."""
    theirs = oc.to_onnx(ours, _onnx_class(ours))
    assert str(ours) == str(theirs)


def _onnx_class(msg: oc.Message) -> type:
    cls: object = onnx
    for part in msg._SPEC.name.split("."):
        cls = getattr(cls, part)
    assert isinstance(cls, type)
    return cls


def test_vectors_and_shipped_models(node_cases: list[Path]) -> None:
    """Every ONNX 1-3 vector model and every model shipped in the onnx wheel prints as onnx prints it."""
    files = [d / "model.onnx" for d in node_cases] + corpus.shipped_models()
    assert len(files) > 1500
    bad = [f for f in files if str(oc.decode(oc.ModelProto, f.read_bytes())) != str(onnx.load(str(f)))]
    assert bad == []


def test_vector_tensors(node_cases: list[Path]) -> None:
    """The vectors' input/output tensors (float_data, raw_data bytes, strings) print as onnx prints them."""
    count = 0
    for case in node_cases[::7]:
        for pb in sorted(case.glob("test_data_set_0/*.pb")):
            data = pb.read_bytes()
            try:
                theirs = onnx.TensorProto.FromString(data)
            except Exception:  # a sequence, map or optional: not a tensor
                continue
            if theirs.data_type == 0:
                continue
            assert str(oc.decode(oc.TensorProto, data)) == str(theirs), pb
            count += 1
    assert count > 300


_F32 = struct.Struct("<f")


def _f32(bits: int) -> float:
    return float(_F32.unpack(struct.pack("<I", bits))[0])


FLOATS = [0.0, -0.0, 0.1, 1 / 3, 3.0, 1e20, 3.4e38, 1.17549435e-38, 1e-45, 123456789.0, -2.5e-7, 65504.0]
FLOATS += [math.inf, -math.inf, math.nan, _f32(0xFFC00001), _f32(0x7F800001), 16777217.0, 0.3, 1e-5]
DOUBLES = [0.0, -0.0, 0.1, 0.1 + 0.2, 1 / 3, 5e-324, 1e100, -1.7976931348623157e308, math.inf, -math.inf]
DOUBLES += [math.nan, 2.0, 123456789012345678.0, 1e-7]


def test_every_field_kind() -> None:
    """Strings (escapes, non-ASCII), bytes (octal), floats, doubles, int64, uint64, nested messages, enums."""
    t = oc.TensorProto(
        name="a\n\r\t\"'\\ \x01\x7f héllo ☃ \U0001f600",
        doc_string="",
        dims=[0, -1, 2**62],
        data_type=oc.TensorProto.STRING,
        float_data=FLOATS,
        double_data=DOUBLES,
        int64_data=[-(2**63), 2**63 - 1, 0],
        uint64_data=[2**64 - 1, 0],
        int32_data=[-(2**31), 2**31 - 1],
        string_data=[bytes(range(256)), b"", "é".encode()],
        raw_data=bytes(range(256)),
        data_location=oc.TensorProto.EXTERNAL,
        external_data=[oc.StringStringEntryProto(key="location", value="w.bin")],
        segment=oc.TensorProto.Segment(begin=1, end=2),
    )
    _same_text(t)
    assert "\\377" in str(t) and "☃" in str(t)


def test_enums_by_name_and_unknown_enum_values() -> None:
    """An enumeration prints by name; a number outside it is not shown (proto2's closed enumerations)."""
    a = oc.AttributeProto(name="x", type=oc.AttributeProto.FLOAT, f=0.5)
    _same_text(a)
    assert "type: FLOAT" in str(a)
    odd = oc.AttributeProto(name="x", type=99)
    _same_text(odd)
    assert str(odd) == 'name: "x"\n'


def test_nested_messages_and_presence() -> None:
    """Nesting indents by two spaces; an explicitly given default value is present (printed); tag order."""
    model = oc.ModelProto(
        ir_version=0,
        producer_name="",
        graph=oc.GraphProto(
            name="g",
            input=[
                oc.ValueInfoProto(
                    name="x",
                    type=oc.TypeProto(
                        tensor_type=oc.TypeProto.Tensor(
                            elem_type=1,
                            shape=oc.TensorShapeProto(
                                dim=[oc.TensorShapeProto.Dimension(dim_value=0), oc.TensorShapeProto.Dimension()]
                            ),
                        )
                    ),
                )
            ],
            node=[oc.NodeProto(op_type="Relu", input=["x"], output=["y"], attribute=[])],
        ),
        opset_import=[oc.OperatorSetIdProto(domain="", version=21)],
        training_info=[oc.TrainingInfoProto()],
        metadata_props=[oc.StringStringEntryProto(key="k", value="v")],
    )
    _same_text(model)
    text = str(model)
    assert text.startswith('ir_version: 0\nproducer_name: ""\ngraph {\n  node {\n')
    assert "training_info {\n}\n" in text


def test_empty_message_and_every_message_class() -> None:
    """An empty message prints as the empty string; every class prints as its onnx class does."""
    for cls in oc.proto.MESSAGE_CLASSES.values():
        assert str(cls()) == ""
        assert message_to_text(cls()) == ""
        _same_text(cls())


def test_unknown_fields_are_not_printed() -> None:
    """protobuf's str() leaves unknown fields out; so do we (they are still kept for encoding)."""
    data = oc.encode(oc.ModelProto(ir_version=3)) + b"\xa0\x06\x05" + b"\xaa\x06\x03abc"
    ours = oc.decode(oc.ModelProto, data)
    assert ours.unknown_fields
    assert str(ours) == str(onnx.ModelProto.FromString(data)) == "ir_version: 3\n"


def test_repr_stays_ours() -> None:
    """``repr`` is the record's repr, not the text format."""
    assert repr(oc.OperatorSetIdProto(version=3)) == "OperatorSetIdProto(version=3)"


def test_random_floats_and_doubles_print_as_protobuf_prints_them() -> None:
    """200,000 random binary32 bit patterns (every exponent, subnormals, NaNs) and 100,000 random doubles."""
    import numpy as np

    rng = np.random.default_rng(20261205)
    f32 = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    f64 = np.concatenate([rng.standard_normal(50_000) * 10.0 ** rng.integers(-300, 300, 50_000), rng.random(50_000)])
    ours = oc.TensorProto(float_data=f32.tolist(), double_data=f64.tolist())
    _same_text(ours)
