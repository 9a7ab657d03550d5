"""Inference over the bound model (onnxcore.graph): one binding, limits from Limits, local functions bound first."""

from __future__ import annotations

import pytest

import onnxcore
import onnxcore.graph.bound
from onnxcore import (
    AttributeProto,
    FunctionProto,
    GraphProto,
    Limits,
    ModelProto,
    NodeProto,
    OperatorSetIdProto,
    TensorShapeProto,
    TypeProto,
    ValueInfoProto,
)
from onnxcore.graph import bind
from onnxcore.infer import annotate, infer, infer_shapes


def _tensor(name: str, elem: int, dims: list[int] | None) -> ValueInfoProto:
    shape = None if dims is None else TensorShapeProto(dim=[TensorShapeProto.Dimension(dim_value=d) for d in dims])
    return ValueInfoProto(name=name, type=TypeProto(tensor_type=TypeProto.Tensor(elem_type=elem, shape=shape)))


def _relu_model() -> ModelProto:
    graph = GraphProto(
        name="g",
        node=[
            NodeProto(op_type="Relu", input=["x"], output=["r"]),
            NodeProto(op_type="Neg", input=["r"], output=["y"]),
        ],
        input=[_tensor("x", 1, [2, 3])],
        output=[_tensor("y", 1, None)],
    )
    return ModelProto(ir_version=10, opset_import=[OperatorSetIdProto(domain="", version=21)], graph=graph)


def test_inference_with_a_bound_model_does_not_bind_again(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _relu_model()
    bound = bind(model)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model was bound a second time")

    monkeypatch.setattr(onnxcore.graph.bound.BoundModel, "__init__", refuse)
    types = infer(model, bound=bound)
    assert types.type_strings["graph"]["r"] == "tensor(float)"
    assert types.node("graph/node[0]") is not None
    assert types.node("graph/node[0]").schema is bound.scopes[0].nodes[0].schema  # type: ignore[union-attr]
    shapes = infer_shapes(model, bound=bound)
    assert shapes.shape("y") == (2, 3)
    out = annotate(model, bound=bound)
    assert [vi.name for vi in out.graph.value_info] == ["r"]  # type: ignore[union-attr]
    with pytest.raises(AssertionError, match="second time"):
        infer(model)  # without bound= the model is bound: the patch is what stops it


def _nested_ifs(levels: int) -> ModelProto:
    """``levels`` If nodes nested in then_branch; the innermost branch computes Relu(x) of the top graph's x.

    Built iteratively (no recursion), each branch a distinct graph object.
    """
    graph = GraphProto(
        name="b0", node=[NodeProto(op_type="Relu", input=["x"], output=["y0"])], output=[ValueInfoProto(name="y0")]
    )
    for d in range(1, levels + 1):
        other = GraphProto(
            name=f"e{d}",
            node=[NodeProto(op_type="Identity", input=["x"], output=[f"e{d}"])],
            output=[ValueInfoProto(name=f"e{d}")],
        )
        node = NodeProto(
            op_type="If",
            input=["c"],
            output=[f"y{d}"],
            attribute=[
                AttributeProto(name="then_branch", type=AttributeProto.AttributeType.GRAPH, g=graph),
                AttributeProto(name="else_branch", type=AttributeProto.AttributeType.GRAPH, g=other),
            ],
        )
        graph = GraphProto(name=f"b{d}", node=[node], output=[ValueInfoProto(name=f"y{d}")])
    graph.name = "main"
    graph.input = [_tensor("x", 1, [2, 3]), _tensor("c", 9, [])]
    out = _tensor(f"y{levels}", 1, None)
    out.type.tensor_type.shape = TensorShapeProto(  # type: ignore[union-attr]
        dim=[TensorShapeProto.Dimension(dim_param="a"), TensorShapeProto.Dimension(dim_param="b")]
    )
    graph.output = [out]
    return ModelProto(ir_version=10, opset_import=[OperatorSetIdProto(domain="", version=21)], graph=graph)


def _innermost(paths: dict[str, dict[str, object]]) -> tuple[int, dict[str, object]]:
    """(nesting depth, values) of the deepest graph path recorded."""
    path = max(paths, key=lambda p: p.count("/then_branch"))
    return path.count("/then_branch"), paths[path]


def test_nesting_depth_is_governed_by_the_limits() -> None:
    model = _nested_ifs(100)

    # Default limits (max_nesting_depth 64): refused by the validator, inferred no deeper than 64 levels.
    report = onnxcore.check(model)
    assert "E-LIMIT-NESTING" in {f.code for f in report.errors}
    types = infer(model)
    depth, values = _innermost(types.type_strings)  # type: ignore[arg-type]
    assert depth == 64 and "y0" not in values
    # ... and refused under the validator's code (and the evaluator's: tests/runtime/test_session_bound.py).
    assert types.refused and {code for code, _loc in types.refused} == {"E-LIMIT-NESTING"}
    shapes = infer_shapes(model)
    assert shapes.refused == types.refused
    assert max(p.count("/then_branch") for p in shapes.shapes) == 64
    assert shapes.shape("y100") == ("a", "b")  # as declared: nothing inferred through the unwalked levels

    # Raised limit: no finding, and the innermost output's type and shape come through every level.
    deep = Limits(max_nesting_depth=200)
    report = onnxcore.check(model, limits=deep)
    assert report.errors == []
    bound = bind(model, limits=deep)
    types = infer(model, bound=bound)
    depth, values = _innermost(types.type_strings)  # type: ignore[arg-type]
    assert depth == 100 and values["y0"] == "tensor(float)" and types.refused == []
    assert types.type_strings["graph"]["y100"] == "tensor(float)"
    shapes = infer_shapes(model, limits=deep)
    inner = max(shapes.shapes, key=lambda p: p.count("/then_branch"))
    assert inner.count("/then_branch") == 100 and shapes.shapes[inner]["y0"] == (2, 3)
    assert shapes.shape("y100") == (2, 3)


def test_node_budget_is_a_limit() -> None:
    model = _nested_ifs(20)
    assert _innermost(infer(model).type_strings)[0] == 20  # type: ignore[arg-type]
    assert infer_shapes(model).shape("y20") == (2, 3)  # the declared (a, b) is (2, 3) here
    # Each level visits two nodes (its If, then the else branch's Identity): past the budget, nothing more.
    starved = Limits(max_inference_nodes=10)
    assert _innermost(infer(model, limits=starved).type_strings)[0] <= 10  # type: ignore[arg-type]
    shapes = infer_shapes(model, limits=starved)
    assert max(p.count("/then_branch") for p in shapes.shapes) <= 10
    assert shapes.shape("y20") == ("a", "b")


def test_local_function_in_a_defined_domain_binds_first() -> None:
    # ai.onnx.ml defines Scaler; the model's own function of that name wins (Clause 8.4, docs/conformance.md).
    fn = FunctionProto(
        domain="ai.onnx.ml",
        name="Scaler",
        input=["X"],
        output=["Y"],
        node=[NodeProto(op_type="Neg", input=["X"], output=["Y"])],
        opset_import=[OperatorSetIdProto(domain="", version=18), OperatorSetIdProto(domain="ai.onnx.ml", version=3)],
    )
    graph = GraphProto(
        name="g",
        node=[NodeProto(op_type="Scaler", domain="ai.onnx.ml", input=["X"], output=["Y"])],
        input=[_tensor("X", 1, [2])],
        output=[_tensor("Y", 1, [2])],
    )
    model = ModelProto(
        ir_version=10,
        opset_import=[OperatorSetIdProto(domain="", version=18), OperatorSetIdProto(domain="ai.onnx.ml", version=3)],
        graph=graph,
        functions=[fn],
    )
    bound = bind(model)
    ref = bound.scopes[0].nodes[0]
    assert ref.status == "function" and ref.function is fn
    types = infer(model, bound=bound)
    nt = types.node("graph/node[0]")
    assert nt is not None and nt.function is fn and nt.schema is None
    assert nt.output_types == ("tensor(float)",)  # from walking the body (Neg of a float), not Scaler's definition
    assert types.type_strings['functions[0] "ai.onnx.ml:Scaler"'] == {}  # the body alone: its input untyped
    shapes = infer_shapes(model, bound=bound)
    assert shapes.shape("Y") == (2,) and not shapes.unruled
    report = onnxcore.check(model)
    assert report.errors == [], report.errors
