"""protobuf's Python message API on our messages, differential against onnx's (protobuf's) messages.

Each test does the same calls on an onnx message and on ours and compares what a script sees: the octets
(``SerializeToString``), the text (``str``), the answers (``HasField``, ``WhichOneof``, ...) and the errors.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

import onnxcore as oc
from onnxcore.errors import DecodeError

onnx = pytest.importorskip("onnx")


def _same(ours: oc.Message, theirs: Any) -> None:
    assert ours.SerializeToString() == theirs.SerializeToString()
    assert str(ours) == str(theirs)
    assert ours.ByteSize() == theirs.ByteSize()


def _both(build: Callable[[Any], Any]) -> tuple[Any, Any]:
    """Run ``build`` on the onnx module and on onnxcore (same class names), return (ours, theirs)."""
    return build(oc), build(onnx)


def _error(call: Callable[[], object]) -> tuple[type[BaseException], str]:
    with pytest.raises(Exception) as info:  # the class is compared by the caller
        call()
    return type(info.value), str(info.value)


def test_serialize_parse_fromstring() -> None:
    """SerializeToString (deterministic accepted), ParseFromString (clears, returns octets read), FromString."""
    ours, theirs = _both(lambda m: m.ModelProto(ir_version=8, producer_name="p"))
    _same(ours, theirs)
    assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(deterministic=True)
    data = onnx.ModelProto(ir_version=3, doc_string="d").SerializeToString()
    assert ours.ParseFromString(data) == theirs.ParseFromString(data) == len(data)
    _same(ours, theirs)
    assert ours.producer_name == "" and not ours.HasField("producer_name")  # cleared first, as protobuf does
    again = oc.ModelProto.FromString(data)
    assert isinstance(again, oc.ModelProto) and again == ours
    assert ours.MergeFromString(b"\x12\x01q") == 3
    theirs.MergeFromString(b"\x12\x01q")
    _same(ours, theirs)
    with pytest.raises(DecodeError):
        oc.ModelProto().ParseFromString(b"\x0a\x05ab")


def test_copyfrom_same_class_only() -> None:
    """CopyFrom makes a deep copy; another class is a TypeError, as protobuf raises."""
    src = oc.GraphProto(name="g", node=[oc.NodeProto(op_type="Relu", input=["x"], output=["y"])])
    dst = oc.GraphProto(name="old", doc_string="d")
    dst.CopyFrom(src)
    assert dst == src and dst.node[0] is not src.node[0]
    dst.node[0].op_type = "Abs"
    assert src.node[0].op_type == "Relu"
    dst.CopyFrom(dst)  # itself: unchanged
    assert dst.node[0].op_type == "Abs"
    ours_err = _error(lambda: oc.ModelProto().CopyFrom(oc.GraphProto()))
    theirs_err = _error(lambda: onnx.ModelProto().CopyFrom(onnx.GraphProto()))
    assert ours_err[0] is theirs_err[0] is TypeError
    assert ours_err[1].startswith("Parameter to CopyFrom() must be instance of same class")
    assert _error(lambda: oc.ModelProto().MergeFrom(oc.GraphProto()))[0] is TypeError


def test_mergefrom_rules() -> None:
    """Scalars overwrite when present in the other, repeated fields append, embedded messages merge."""

    def build(m: Any) -> Any:
        a = m.ModelProto(
            ir_version=3, producer_name="a", doc_string="keep", graph=m.GraphProto(name="g1", doc_string="d1")
        )
        a.opset_import.add(version=1)
        b = m.ModelProto(producer_name="", model_version=2, graph=m.GraphProto(name="g2"))
        b.opset_import.add(domain="x", version=5)
        b.metadata_props.add(key="k", value="v")
        a.MergeFrom(b)
        return a

    ours, theirs = _both(build)
    _same(ours, theirs)
    assert ours.producer_name == "" and ours.HasField("producer_name")
    assert ours.graph.doc_string == "d1" and ours.graph.name == "g2"


def test_mergefrom_oneof_and_copies() -> None:
    """Merging a oneof member clears the other members; merged elements are copies."""

    def build(m: Any) -> Any:
        a = m.TensorShapeProto()
        a.dim.add(dim_value=3)
        b = m.TensorShapeProto.Dimension(dim_param="N")
        a.dim[0].MergeFrom(b)
        return a

    ours, theirs = _both(build)
    _same(ours, theirs)
    assert ours.dim[0].WhichOneof("value") == theirs.dim[0].WhichOneof("value") == "dim_param"
    assert ours.dim[0].HasField("dim_value") is theirs.dim[0].HasField("dim_value") is False

    src = oc.GraphProto(node=[oc.NodeProto(op_type="Relu")])
    dst = oc.GraphProto()
    dst.MergeFrom(src)
    assert dst.node[0] == src.node[0] and dst.node[0] is not src.node[0]


def test_hasfield_clearfield_whichoneof() -> None:
    """Presence answers and the ValueErrors protobuf raises (repeated field, unknown name)."""
    for m in (oc, onnx):
        t = m.TypeProto(tensor_type=m.TypeProto.Tensor(elem_type=1))
        assert t.HasField("tensor_type") and t.HasField("value") and not t.HasField("sequence_type")
        assert t.WhichOneof("value") == "tensor_type"
        t.ClearField("value")
        assert t.WhichOneof("value") is None and not t.HasField("tensor_type")
        assert m.ModelProto(ir_version=0).HasField("ir_version")
        assert not m.ModelProto().HasField("ir_version") and not m.ModelProto().HasField("graph")
        n = m.NodeProto(input=["a"], name="n")
        n.ClearField("input")
        n.ClearField("name")
        assert list(n.input) == [] and not n.HasField("name")
    for call in (
        lambda m: m.ModelProto().HasField("opset_import"),
        lambda m: m.ModelProto().HasField("nope"),
        lambda m: m.ModelProto().ClearField("nope"),
        lambda m: m.ModelProto().WhichOneof("nope"),
    ):
        ours_err, theirs_err = _error(lambda: call(oc)), _error(lambda: call(onnx))  # noqa: B023
        assert ours_err[0] is theirs_err[0] is ValueError
        assert ours_err[1].replace("onnx.", "") == theirs_err[1].replace("onnx.", "")


def test_listfields_clear_isinitialized() -> None:
    """ListFields: present fields by increasing tag with their values; Clear; IsInitialized."""
    ours, theirs = _both(lambda m: m.NodeProto(output=["y"], input=["x"], op_type="Relu", domain=""))
    assert [(f.name, list(v) if isinstance(v, list) else v) for f, v in ours.ListFields()] == [
        (f.name, list(v) if not isinstance(v, str | int) else v) for f, v in theirs.ListFields()
    ]
    assert ours.IsInitialized() and theirs.IsInitialized()
    ours.Clear()
    theirs.Clear()
    _same(ours, theirs)
    assert ours.ListFields() == []


def test_repeated_add_extend_remove_del_slices() -> None:
    """Repeated fields: add(**fields), append, extend, remove, del, slices, insert, pop, len, iteration."""

    def build(m: Any) -> Any:
        g = m.GraphProto(name="g")
        n = g.node.add(op_type="Relu", input=["x"], output=["y"])
        n.attribute.add(name="alpha", f=0.5, type=m.AttributeProto.FLOAT)
        g.node.add(op_type="Abs")
        g.node.append(m.NodeProto(op_type="Neg"))
        g.node.extend([m.NodeProto(op_type="Exp"), m.NodeProto(op_type="Log")])
        del g.node[1]
        g.node.insert(0, m.NodeProto(op_type="Sin"))
        g.node.remove(g.node[-1])
        g.node.pop()
        g.input.add(name="x")
        g.node[0].input.extend(["a", "b"])
        g.node[0].input.append("c")
        g.node[0].input.remove("b")
        del g.node[0].input[0]
        return g

    ours, theirs = _both(build)
    _same(ours, theirs)
    assert [n.op_type for n in ours.node[0:2]] == [n.op_type for n in theirs.node[0:2]] == ["Sin", "Relu"]
    assert len(ours.node) == len(theirs.node)
    ours_err = _error(lambda: oc.GraphProto().node.add(nope=1))
    theirs_err = _error(lambda: onnx.GraphProto().node.add(nope=1))
    assert ours_err == theirs_err


def test_add_on_decoded_and_copied_messages() -> None:
    """Every repeated message field of a decoded or copied message has add() (metadata_props of a loaded model)."""
    model = oc.ModelProto.FromString(onnx.ModelProto(ir_version=7).SerializeToString())
    model.metadata_props.add(key="author", value="me")
    model.opset_import.add(domain="", version=13)
    copied = copy.deepcopy(model)
    copied.training_info.add().algorithm = None
    assert type(copied.opset_import).__name__ == "OperatorSetIdProtoList"
    theirs = onnx.ModelProto(ir_version=7)
    theirs.metadata_props.add(key="author", value="me")
    theirs.opset_import.add(domain="", version=13)
    _same(model, theirs)


def test_enum_wrappers() -> None:
    """TensorProto.DataType.Name/Value/keys/values/items and the class-level constants, as onnx has them."""
    for m in (oc, onnx):
        assert m.TensorProto.DataType.Name(1) == "FLOAT"
        assert m.TensorProto.DataType.Value("FLOAT16") == 10
        assert m.TensorProto.FLOAT == 1 and m.AttributeProto.FLOAT == 1 and m.AttributeProto.GRAPHS == 10
        assert m.TensorProto.DataLocation.Name(1) == "EXTERNAL"
    assert oc.TensorProto.DataType.keys() == list(onnx.TensorProto.DataType.keys())
    assert oc.TensorProto.DataType.values() == list(onnx.TensorProto.DataType.values())
    assert oc.TensorProto.DataType.items() == list(onnx.TensorProto.DataType.items())
    assert oc.AttributeProto.AttributeType.items() == list(onnx.AttributeProto.AttributeType.items())
    ours_err = _error(lambda: oc.TensorProto.DataType.Name(99))
    theirs_err = _error(lambda: onnx.TensorProto.DataType.Name(99))
    assert ours_err[0] is theirs_err[0] is ValueError
    assert ours_err[0] is _error(lambda: oc.TensorProto.DataType.Value("NOPE"))[0]


def test_equality() -> None:
    """== compares contents, as protobuf's does."""
    a = oc.NodeProto(op_type="Relu", input=["x"])
    b = oc.NodeProto.FromString(a.SerializeToString())
    assert a == b
    b.input.append("z")
    assert a != b


def test_parse_copies_a_mutable_buffer() -> None:
    """ParseFromString/FromString of a bytearray do not alias it (protobuf copies): raw_data keeps its octets."""
    buf = bytearray(oc.TensorProto(dims=[2], data_type=2, raw_data=b"\x01\x02").SerializeToString())
    t = oc.TensorProto.FromString(buf)
    t2 = oc.TensorProto()
    t2.ParseFromString(buf)
    buf[-1] = 0xFF
    assert bytes(t.raw_data) == bytes(t2.raw_data) == b"\x01\x02"


def test_assigning_a_oneof_member_clears_the_others() -> None:
    """dim.dim_param = "N" on a dimension with a value (and back), TypeProto's kinds: as protobuf does."""

    def edit(m: Any) -> Any:
        shape = m.TensorShapeProto()
        shape.dim.add(dim_value=3)
        shape.dim.add(dim_param="N")
        shape.dim[0].dim_param = "batch"
        shape.dim[1].dim_value = 7
        return shape

    ours, theirs = _both(edit)
    _same(ours, theirs)
    assert [d.WhichOneof("value") for d in ours.dim] == [d.WhichOneof("value") for d in theirs.dim]
    assert not ours.dim[0].HasField("dim_value") and not ours.dim[1].HasField("dim_param")
    t = oc.TypeProto(tensor_type=oc.TypeProto.Tensor(elem_type=1))
    t.sequence_type = oc.TypeProto.Sequence(elem_type=oc.TypeProto(tensor_type=oc.TypeProto.Tensor(elem_type=7)))
    assert t.tensor_type is None and t.WhichOneof("value") == "sequence_type"
    # A default value (what constructors write for an absent member) leaves the other member alone.
    d = oc.TensorShapeProto.Dimension(dim_param="N")
    d.dim_value = 0
    assert d.WhichOneof("value") == "dim_param"


def test_equality_of_float_fields_is_binary32() -> None:
    """A float field assigned 0.2 equals the same field read back from its octets (binary32), as in protobuf."""
    a = oc.AttributeProto(name="alpha", f=0.2, type=oc.AttributeProto.FLOAT, floats=[0.1, 1e-3])
    b = oc.AttributeProto.FromString(a.SerializeToString())
    assert b.f != 0.2 and a == b
    theirs = onnx.AttributeProto(name="alpha", f=0.2, type=onnx.AttributeProto.FLOAT, floats=[0.1, 1e-3])
    assert theirs == onnx.AttributeProto.FromString(theirs.SerializeToString())
    assert oc.AttributeProto(f=0.2) != oc.AttributeProto(f=0.3)
    assert oc.TensorProto(double_data=[0.1]) != oc.TensorProto(double_data=[0.1000000001])


def test_pickle_by_the_octets() -> None:
    """Messages pickle as protobuf's do (by their octets), a decoded raw_data view and unknown fields included."""
    import pickle

    data = onnx.TensorProto(name="w", dims=[2], data_type=1, raw_data=b"\x00" * 8).SerializeToString() + b"\xa0\x06\x05"
    t = oc.TensorProto.FromString(data)
    assert isinstance(t.raw_data, memoryview)
    back = pickle.loads(pickle.dumps(t))
    assert back == t and back.SerializeToString() == data
    dim = oc.TensorShapeProto.Dimension(dim_param="N")
    assert pickle.loads(pickle.dumps(dim)) == dim
