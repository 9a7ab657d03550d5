"""Attributes whose type names a message but that carry none (Clause 7.4, Table B.4): reported by the validator,
refused cleanly at binding (a bare AssertionError escaped before), and never a crash of inference."""

from __future__ import annotations

import pytest

import onnxcore
from onnxcore.errors import ValidationError
from onnxcore.graph.attributes import attribute_value
from onnxcore.infer import infer_shapes
from onnxcore.proto import (
    AttributeProto,
    GraphProto,
    ModelProto,
    NodeProto,
    OperatorSetIdProto,
    TensorProto,
    TensorShapeProto,
    TypeProto,
    ValueInfoProto,
)

AT = AttributeProto.AttributeType


def _vi(name: str, elem: int = TensorProto.DataType.FLOAT, dims: tuple[int, ...] = (2,)) -> ValueInfoProto:
    shape = TensorShapeProto(dim=[TensorShapeProto.Dimension(dim_value=d) for d in dims])
    return ValueInfoProto(name=name, type=TypeProto(tensor_type=TypeProto.Tensor(elem_type=elem, shape=shape)))


def _model(node: NodeProto, inputs: list[ValueInfoProto], output: ValueInfoProto) -> ModelProto:
    g = GraphProto(name="g", node=[node], input=inputs, output=[output])
    return ModelProto(ir_version=10, graph=g, opset_import=[OperatorSetIdProto(domain="", version=21)])


def _constant_without_tensor() -> ModelProto:
    node = NodeProto(op_type="Constant", output=["y"], attribute=[AttributeProto(name="value", type=AT.TENSOR)])
    return _model(node, [], _vi("y"))


def _if_without_branch() -> ModelProto:
    els = GraphProto(name="e", node=[NodeProto(op_type="Identity", input=["x"], output=["z"])], output=[_vi("z")])
    node = NodeProto(
        op_type="If",
        input=["c"],
        output=["y"],
        attribute=[
            AttributeProto(name="then_branch", type=AT.GRAPH),
            AttributeProto(name="else_branch", type=AT.GRAPH, g=els),
        ],
    )
    return _model(node, [_vi("c", TensorProto.DataType.BOOL, ()), _vi("x")], _vi("y"))


@pytest.mark.parametrize(
    ("make", "kind"), [(_constant_without_tensor, "TENSOR"), (_if_without_branch, "GRAPH")], ids=["tensor", "graph"]
)
def test_message_typed_attribute_without_value(make: object, kind: str) -> None:
    model = make()  # type: ignore[operator]
    report = onnxcore.check(model)
    found = [f for f in report.findings if f.code == "E-ATTR-VALUE"]
    assert found and f"has type {kind} but no value" in found[0].message
    infer_shapes(model)  # never raises on a malformed model (Clause 9.4)
    with pytest.raises(ValidationError, match=f"has type {kind} but no value"):
        onnxcore.Session(model, check=False)
    with pytest.raises(ValidationError):
        onnxcore.Session(model)


@pytest.mark.parametrize(
    ("kind", "field"), [(AT.TENSOR, "t"), (AT.SPARSE_TENSOR, "sparse_tensor"), (AT.TYPE_PROTO, "tp")]
)
def test_attribute_value_refuses_a_missing_message(kind: int, field: str) -> None:
    with pytest.raises(ValidationError, match=f"field {field!r} is absent"):
        attribute_value(AttributeProto(name="a", type=kind))
    # A scalar left at its default is a value: 0.
    assert attribute_value(AttributeProto(name="a", type=AT.INT)) == 0


def test_if_branch_with_more_outputs_than_the_node() -> None:
    """A branch yielding an output the If node does not have (Clause 7.6; passed before, issue 29)."""
    two = GraphProto(
        name="t",
        node=[
            NodeProto(op_type="Identity", input=["x"], output=["a"]),
            NodeProto(op_type="Neg", input=["x"], output=["b"]),
        ],
        output=[_vi("a"), _vi("b")],
    )
    one = GraphProto(name="e", node=[NodeProto(op_type="Identity", input=["x"], output=["z"])], output=[_vi("z")])
    node = NodeProto(
        op_type="If",
        input=["c"],
        output=["y"],
        attribute=[
            AttributeProto(name="then_branch", type=AT.GRAPH, g=two),
            AttributeProto(name="else_branch", type=AT.GRAPH, g=one),
        ],
    )
    report = onnxcore.check(_model(node, [_vi("c", TensorProto.DataType.BOOL, ()), _vi("x")], _vi("y")))
    found = [f for f in report.findings if f.code == "E-SUBGRAPH-ARITY"]
    assert [f.location for f in found] == ["graph/node[0]/then_branch"]
    assert "declares 2 output(s); the node implies 1" in found[0].message
