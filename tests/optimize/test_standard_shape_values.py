"""fold_shape_values (runtime/optimize/standard/shape_values.py, issue 39 item 2): shape arithmetic whose every
element the graph's shapes fix becomes a constant (the channel shuffle's ``Shape(x)[1] // groups``, a ViT's head
size), equal to onnxruntime on the original with the dimension variables at 1 and larger; an element that is a
dimension variable, even one a verification sets to 1, keeps its node."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from standard_helpers import FOLD, ops, rewrite, rewrite_and_compare

import onnxcore
from onnxcore.runtime.optimize.model_passes import drop_dead_nodes
from onnxcore.runtime.optimize.pipeline import Rewrite
from onnxcore.runtime.optimize.standard import fold_shape_values

RNG = np.random.default_rng(41)
# Then the folding of what they feed, and the shape nodes no longer read dropped.
SHAPES = [Rewrite("fold_shape_values", fold_shape_values, 1), FOLD, Rewrite("drop_dead_nodes", drop_dead_nodes, 1)]


def _i(name: str, v: list[int] | int) -> object:
    return nh.from_array(np.asarray(v, np.int64), name)


def _model(nodes: list, inits: list, x_shape: list, outputs: list, *, opset: int = 15) -> onnx.ModelProto:
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, x_shape)], outputs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _shuffle() -> onnx.ModelProto:
    """TorchScript's channel shuffle of 2 groups: the view's target from Shape(x), the channels divided at run time;
    the batch a dimension variable, the rest fixed."""
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        *(h.make_node("Gather", ["s", f"i{k}"], [f"g{k}"], axis=0) for k in range(4)),
        h.make_node("Div", ["g1", "two"], ["half"]),
        h.make_node("Concat", ["g0", "two", "half", "g2", "g3"], ["t5"], axis=0),
        h.make_node("Reshape", ["x", "t5"], ["r5"]),
        h.make_node("Transpose", ["r5"], ["p"], perm=[0, 2, 1, 3, 4]),
        h.make_node("Concat", ["g0", "g1", "g2", "g3"], ["t4"], axis=0),
        h.make_node("Reshape", ["p", "t4"], ["y"]),
    ]
    inits = [*(_i(f"i{k}", [k]) for k in range(4)), _i("two", [2])]
    return _model(nodes, inits, ["N", 6, 3, 4], [h.make_tensor_value_info("y", TP.FLOAT, ["N", 6, 3, 4])])


def test_channel_shuffle_arithmetic_becomes_constants() -> None:
    feeds = [{"x": RNG.standard_normal((n, 6, 3, 4)).astype(np.float32)} for n in (1, 3)]
    out, fired = rewrite_and_compare(_shuffle(), feeds, SHAPES)
    assert fired[0] == "fold_shape_values"
    # The channels and both spatial extents are constants, the Div folded; the batch (a variable) is still read.
    assert "Div" not in ops(out) and ops(out).count("Gather") == 1
    consts = {t.name: nh.to_array(t).tolist() for t in out.graph.initializer}
    assert consts["g1"] == [6] and consts["half"] == [3] and consts["g2"] == [3] and consts["g3"] == [4]


def test_through_the_whole_optimizer_the_shape_nodes_go() -> None:
    # With resolve_reshape_targets after it, nothing of the shape arithmetic is left: the batch is copied by a 0.
    model = onnxcore.load(_shuffle().SerializeToString())
    optimized, report = onnxcore.optimize(model)
    assert report.verified and report.fired.get("fold_shape_values") == 1
    assert [n.op_type for n in optimized.graph.node] == ["Reshape", "Transpose", "Reshape"]


def test_head_size_beside_variables_folds_into_the_scale() -> None:
    # A ViT's attention scale: 1 / sqrt(head size) from Shape(q)[-1:], batch and sequence variables.
    nodes = [
        h.make_node("Shape", ["x"], ["s"], start=-1),
        h.make_node("Cast", ["s"], ["f"], to=TP.FLOAT),
        h.make_node("Sqrt", ["f"], ["r"]),
        h.make_node("Div", ["x", "r"], ["y"]),
    ]
    m = _model(nodes, [], ["B", "T", 8], [h.make_tensor_value_info("y", TP.FLOAT, ["B", "T", 8])])
    feeds = [{"x": RNG.standard_normal((b, t, 8)).astype(np.float32)} for b, t in ((1, 1), (2, 5))]
    out, _ = rewrite_and_compare(m, feeds, SHAPES)
    assert ops(out) == ["Div"]


def test_a_dimension_variable_is_never_a_constant() -> None:
    # The batch is 1 in one of the verification's sizes, never always: Shape(x)[0] and all computed from it stay.
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        h.make_node("Cast", ["n"], ["f"], to=TP.FLOAT),
        h.make_node("Mul", ["x", "f"], ["y"]),
    ]
    m = _model(nodes, [_i("zero", 0)], ["N", 3], [h.make_tensor_value_info("y", TP.FLOAT, ["N", 3])])
    out, fired = rewrite(m, SHAPES)
    assert fired == [] and ops(out) == ["Shape", "Gather", "Cast", "Mul"]
    x = RNG.standard_normal((3, 3)).astype(np.float32)
    np.testing.assert_allclose(onnxcore.Session(out.SerializeToString()).run(None, {"x": x})[0], x * 3)


def test_an_unknown_extent_and_a_graph_output_are_left_alone() -> None:
    # The second axis of the Reshape's result is not told by the graph (its target is an input), and the fixed
    # extent is itself a graph output (its node, not a constant, makes it).
    nodes = [
        h.make_node("Reshape", ["x", "shape"], ["r"]),
        h.make_node("Shape", ["r"], ["s"]),
        h.make_node("Gather", ["s", "one"], ["k"], axis=0),
        h.make_node("Shape", ["x"], ["sx"]),
        h.make_node("Gather", ["sx", "one"], ["fixed"], axis=0),
    ]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, ["N", 6]),
                                  h.make_tensor_value_info("shape", TP.INT64, [2])],
                     [h.make_tensor_value_info("k", TP.INT64, []), h.make_tensor_value_info("fixed", TP.INT64, [])],
                     [_i("one", 1)])  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 15)])
    m.ir_version = 8
    out, fired = rewrite(m, SHAPES)
    assert fired == [] and ops(out) == ["Reshape", "Shape", "Gather", "Shape", "Gather"]


def test_int32_cast_keeps_its_type() -> None:
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Cast", ["s"], ["s32"], to=TP.INT32),
        h.make_node("Gather", ["s32", "one"], ["c"], axis=0),
        h.make_node("Cast", ["c"], ["f"], to=TP.FLOAT),
        h.make_node("Mul", ["x", "f"], ["y"]),
    ]
    m = _model(nodes, [_i("one", 1)], ["N", 5], [h.make_tensor_value_info("y", TP.FLOAT, ["N", 5])])
    feeds = [{"x": RNG.standard_normal((n, 5)).astype(np.float32)} for n in (1, 2)]
    out, _ = rewrite_and_compare(m, feeds, SHAPES)
    assert ops(out) == ["Mul"]
    assert nh.to_array(next(t for t in out.graph.initializer if t.name == "f")).tolist() == 5.0
