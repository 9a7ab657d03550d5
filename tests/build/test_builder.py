"""The graph builder (onnxcore.build.builder): models built in a few lines pass the validator and run the same in
the Session and in onnxruntime; shapes are known as built; every mistake is a BuildError at the caller's line."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import onnxcore
import onnxcore.build.builder_nodes as builder_nodes
from onnxcore import ModelProto, OnnxCoreError, TensorProto
from onnxcore.build import BuildError, GraphBuilder, Value
from onnxcore.types import ElementType

ort = pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(0)


def _w(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.1).astype(np.float32)


def _check(model: ModelProto) -> None:
    report = onnxcore.check(model)
    assert not report.errors, report.errors


def _run_both(model: ModelProto, feeds: dict[str, np.ndarray]) -> tuple[list[Any], list[Any]]:
    _check(model)
    ours = onnxcore.Session(model).run(None, feeds)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    theirs = ort.InferenceSession(onnxcore.encode(model), so, providers=["CPUExecutionProvider"]).run(None, feeds)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3)  # float32 sums in other orders
    return ours, theirs


def _raised_here(call: Callable[[], object], *words: str) -> BuildError:
    """``call`` raises a BuildError whose message holds ``words`` and whose traceback ends in this file."""
    with pytest.raises(BuildError) as info:
        call()
    err = info.value
    for w in words:
        assert w in str(err), (w, str(err))
    last = traceback.extract_tb(err.__traceback__)[-1]
    assert last.filename == __file__, traceback.format_tb(err.__traceback__)
    return err


# ---------------------------------------------------------------------------------------------------- models


def _bn(b: GraphBuilder, x: Value, c: int) -> Value:
    scale, bias = np.ones(c, np.float32) + _w(c), _w(c)
    mean, var = _w(c), np.ones(c, np.float32)
    return b.op.BatchNormalization(x, scale, bias, mean, var, epsilon=1e-5)


def test_resnet_block() -> None:
    b = GraphBuilder(opset=18)
    x = b.input("x", ElementType.FLOAT, ["N", 64, 56, 56])
    h = b.op.Relu(_bn(b, b.op.Conv(x, _w(64, 64, 3, 3), pads=[1, 1, 1, 1]), 64))
    h = _bn(b, b.op.Conv(h, _w(64, 64, 3, 3), pads=[1, 1, 1, 1]), 64)
    y = b.op.Relu(b.op.Add(h, x))
    assert y.shape == ("N", 64, 56, 56) and y.dtype is ElementType.FLOAT
    b.output(y, "y")
    model = b.model()
    assert model.ir_version == 8 and [(o.domain, o.version) for o in model.opset_import] == [("", 18)]
    assert [n.op_type for n in model.graph.node] == [
        "Conv",
        "BatchNormalization",
        "Relu",
        "Conv",
        "BatchNormalization",
        "Add",
        "Relu",
    ]
    assert model.graph.node[0].name == "Conv_0" and model.graph.node[3].name == "Conv_1"
    _run_both(model, {"x": RNG.standard_normal((1, 64, 56, 56)).astype(np.float32)})


def test_transformer_block() -> None:
    d, heads = 64, 4
    b = GraphBuilder(opset=18)
    x = b.input("x", "float", ["B", "S", d])
    h = b.op.LayerNormalization(x, np.ones(d, np.float32), np.zeros(d, np.float32), axis=-1, epsilon=1e-5)

    def split_heads(t: Value) -> Value:
        return b.op.Transpose(b.op.Reshape(t, [0, 0, heads, d // heads]), perm=[0, 2, 1, 3])

    q, k, v = (split_heads(b.op.MatMul(h, _w(d, d))) for _ in range(3))
    assert q.shape == ("B", heads, "S", d // heads)
    scores = b.op.Div(b.op.MatMul(q, b.op.Transpose(k, perm=[0, 1, 3, 2])), np.float32(np.sqrt(d // heads)))
    assert scores.shape == ("B", heads, "S", "S")
    att = b.op.MatMul(b.op.Softmax(scores, axis=-1), v)
    merged = b.op.Reshape(b.op.Transpose(att, perm=[0, 2, 1, 3]), [0, 0, d])
    y = b.op.Add(x, b.op.MatMul(merged, _w(d, d)))
    assert y.shape == ("B", "S", d) and y.type == "tensor(float)"
    b.output(y, "y")
    _run_both(b.model(), {"x": RNG.standard_normal((2, 5, d)).astype(np.float32)})


def test_shape_computed_from_values_is_known() -> None:
    """A Reshape to a shape computed from Shape, Slice, Concat keeps the dimension variable."""
    b = GraphBuilder(opset=18)
    x = b.input("x", "float", ["N", 3, 4, 4])
    flat = b.op.Reshape(x, b.op.Concat(b.op.Slice(b.op.Shape(x), [0], [1]), [-1], axis=0))
    assert flat.shape == ("N", 48)


def test_if_from_python_functions() -> None:
    b = GraphBuilder(opset=18)
    c = b.input("c", "bool", [])
    a = b.input("a", "float", ["N", 3])
    y = b.op.If(c, then_branch=lambda g: g.op.Mul(a, 2.0), else_branch=lambda g: g.op.Neg(a))
    assert y.dtype is ElementType.FLOAT and y.rank == 2
    b.output(y, "y")
    model = b.model()
    assert model.graph.node[0].attribute[0].g.name == "If_0_then_branch"
    data = RNG.standard_normal((2, 3)).astype(np.float32)
    for cond in (True, False):
        ours, _ = _run_both(model, {"c": np.array(cond), "a": data})
        np.testing.assert_allclose(ours[0], data * 2 if cond else -data)


def test_loop_from_python_function() -> None:
    """Loop(M, cond=None, acc): the body gets (i, cond, acc) and returns (cond, acc', scan output)."""
    b = GraphBuilder(opset=18)
    m = b.input("m", TensorProto.INT64, [])
    x = b.input("x", np.float32, [3])

    def body(g: GraphBuilder, i: Value, cond: Value, acc: Value) -> tuple[Value, ...]:
        step = g.op.Mul(x, g.op.Cast(i, to=ElementType.FLOAT))  # x read from the enclosing graph
        return cond, g.op.Add(acc, step), step

    total, steps = b.op.Loop(m, None, np.zeros(3, np.float32), body=body)
    assert total.dtype is ElementType.FLOAT and steps.dtype is ElementType.FLOAT
    b.output(total, "total")
    b.output(steps, "steps")
    data = np.array([1, 2, 3], np.float32)
    ours, _ = _run_both(b.model(), {"m": np.array(4, np.int64), "x": data})
    np.testing.assert_allclose(ours[0], data * 6)
    assert ours[1].shape == (4, 3)


def test_scan_from_python_function() -> None:
    b = GraphBuilder(opset=18)
    x = b.input("x", "float", [5, 2])

    def body(g: GraphBuilder, state: Value, row: Value) -> tuple[Value, Value]:
        assert state.shape == (2,) and row.shape == (2,)
        s = g.op.Add(state, row)
        return s, s

    last, running = b.op.Scan(np.zeros(2, np.float32), x, body=body, num_scan_inputs=1)
    assert last.shape == (2,)
    b.output(last, "last")
    b.output(running, "running")
    data = RNG.standard_normal((5, 2)).astype(np.float32)
    ours, _ = _run_both(b.model(), {"x": data})
    np.testing.assert_allclose(ours[1], np.cumsum(data, axis=0), rtol=1e-5)


def test_optional_input_skipped_topk_and_split() -> None:
    b = GraphBuilder(opset=18)
    x = b.input("x", "float", ["N", 6])
    clipped = b.op.Clip(x, None, 0.5)  # no min
    values, indices = b.op.TopK(clipped, [3], axis=-1)
    assert values.shape == ("N", 3) and indices.dtype is ElementType.INT64
    left, right = b.op.Split(x, axis=1, num_outputs=2)
    assert left.shape == ("N", 3)
    a, c = b.op.TopK(x, [2], outputs=["top", None], name="topk")
    assert a.name == "top" and c.name.startswith("v")
    model_nodes = b.graph().node
    assert list(model_nodes[0].input) == ["x", "", "c0"]
    for v, n in ((values, "values"), (indices, "indices"), (left, "left"), (right, "right")):
        b.output(v, n)
    data = RNG.standard_normal((2, 6)).astype(np.float32)
    ours, _ = _run_both(b.model(), {"x": data})
    np.testing.assert_allclose(ours[0], -np.sort(-np.minimum(data, 0.5), axis=-1)[:, :3])


def test_other_domains_and_ir_version() -> None:
    b = GraphBuilder(opsets={"": 18, "ai.onnx.ml": 3})
    x = b.input("x", "float", ["N", 2])
    y = b.ml.Scaler(x, offset=[1.0, 2.0], scale=[2.0, 0.5])
    z = b.op_in("ai.onnx.ml").Normalizer(y, norm="L1")
    assert y.shape == ("N", 2) and z.dtype is ElementType.FLOAT
    b.output(z, "z")
    model = b.model()
    assert model.ir_version == 8
    assert sorted((o.domain, o.version) for o in model.opset_import) == [("", 18), ("ai.onnx.ml", 3)]
    _run_both(model, {"x": RNG.standard_normal((3, 2)).astype(np.float32)})


def test_the_builder_declares_the_least_ir_version_of_its_imports() -> None:
    # The table itself (defs/ir.py) is tested against onnx in tests/build/test_ir.py.
    assert GraphBuilder(opset=18).ir_version == 8
    assert GraphBuilder(opset=21).ir_version == 10
    assert GraphBuilder(opsets={"": 15, "ai.onnx.ml": 5}).ir_version == 10


def test_constants_as_nodes_and_value_info() -> None:
    b = GraphBuilder(opset=18, constants="node")
    x = b.input("x", "float", ["N", 4])
    w = _w(4, 4)
    y = b.op.Add(b.op.MatMul(x, w), b.op.MatMul(x, w))  # one constant for one array
    b.output(b.op.Relu(y), "y")
    model = b.model(value_info=True)
    assert not model.graph.initializer
    assert [n.op_type for n in model.graph.node].count("Constant") == 1
    assert {vi.name for vi in model.graph.value_info} == {"v0", "v1", "v2"} | {"c0"}
    _run_both(model, {"x": RNG.standard_normal((3, 4)).astype(np.float32)})


def test_initializer_and_output_names() -> None:
    b = GraphBuilder(opset=18)
    x = b.input("x", "float", [2])
    w = b.initializer("w", np.array([1.0, 2.0], np.float32))
    y = b.op.Add(x, w)
    assert b.output(y, "y") is y and y.name == "y"
    again = b.output(y, "y2")  # already an output: an Identity gives the second name
    passthrough = b.output(x, "x_out")  # a graph input: an Identity
    assert again.name == "y2" and passthrough.name == "x_out"
    assert [n.op_type for n in b.graph().node] == ["Add", "Identity", "Identity"]
    ours, _ = _run_both(b.model(), {"x": np.array([1, 1], np.float32)})
    np.testing.assert_allclose(ours[0], [2, 3])


def test_python_scalar_takes_the_type_of_its_variable() -> None:
    b = GraphBuilder(opset=18)
    x = b.input("x", "double", [2])
    n = b.input("n", "int32", [2])
    assert b.op.Add(x, 1).dtype is ElementType.DOUBLE
    assert b.op.Add(n, 1).dtype is ElementType.INT32
    assert b.op.Add(1, n).dtype is ElementType.INT32
    _raised_here(lambda: b.op.Add(n, 0.5), "not a value of INT32")


def test_inference_cost_does_not_grow_with_the_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each node is inferred in a model of a few nodes, whatever the size of the graph built so far."""
    sizes: list[int] = []
    real = builder_nodes.infer_both

    def spy(model: ModelProto) -> Any:
        sizes.append(len(model.graph.node) + len(model.graph.input) + len(model.graph.initializer))
        return real(model)

    monkeypatch.setattr(builder_nodes, "infer_both", spy)
    b = GraphBuilder(opset=18)
    h = b.input("x", "float", ["N", 8])
    for _ in range(150):
        h = b.op.Relu(b.op.Add(h, np.float32(1)))
    assert h.shape == ("N", 8)
    assert len(sizes) == 300 and max(sizes) <= 3


# ---------------------------------------------------------------------------------------------------- errors


def test_errors_point_to_the_call() -> None:
    b = GraphBuilder(opset=18)
    x = b.input("x", "float", ["N", 3, 8, 8])
    w = _w(4, 3, 3, 3)
    _raised_here(lambda: b.op.Relux(x), "ai.onnx has no operator 'Relux'", "opset 18", "did you mean 'Relu'")
    _raised_here(lambda: b.op.Conv(x, w, stride=[2, 2]), "Conv (ai.onnx opset 18)", "'stride'", "'strides'")
    _raised_here(lambda: b.op.Conv(x, w, strides="2"), "Conv (ai.onnx opset 18)", "'strides' must be INTS")
    _raised_here(lambda: b.op.Conv(x, w, group=1.5), "'group' must be INT")
    _raised_here(lambda: b.op.Relu(x, x), "Relu (ai.onnx opset 18): takes 1 inputs, got 2")
    _raised_here(lambda: b.op.Conv(x), "Conv (ai.onnx opset 18): takes 2 to 3 inputs, got 1")
    _raised_here(lambda: b.op.Clip(None, 0.0), "input 0 ('input') is required")
    _raised_here(lambda: b.op.Cast(x), "Cast (ai.onnx opset 18): attribute 'to' is required")
    _raised_here(lambda: b.op.Split(x, axis=1), "num_outputs=")
    _raised_here(lambda: b.op.TopK(x, [2], outputs=3), "TopK (ai.onnx opset 18): has 2 to 2 outputs, asked for 3")
    _raised_here(lambda: GraphBuilder(opset=13).op.Gelu(x), "Gelu is not in ai.onnx opset 13", "from opset 20")


def test_type_and_shape_errors() -> None:
    b = GraphBuilder(opset=18)
    x = b.input("x", "float", ["N", 3])
    d = b.input("d", "double", ["N", 3])
    i = b.input("i", "int64", ["N", 3])
    _raised_here(lambda: b.op.Add(x, d), "Add (ai.onnx opset 18)", "type variable T", "'x' tensor(float)")
    _raised_here(lambda: b.op.Sqrt(i), "Sqrt (ai.onnx opset 18): input 0 ('X') is 'i' of type tensor(int64)")
    _raised_here(lambda: b.op.MatMul(x, _w(4, 5)), "MatMul (ai.onnx opset 18)")
    _raised_here(lambda: b.op.Relu(lambda: 0), "input 0 is a function")


def test_names_values_and_builders() -> None:
    b = GraphBuilder(opset=18)
    x = b.input("x", "float", [2])
    _raised_here(lambda: b.input("x", "float", [2]), "value name 'x' is already used")
    _raised_here(lambda: b.input("z", "floaty", [2]), "'floaty' is not an element type")
    _raised_here(lambda: b.op.Relu(x, name="r") and b.op.Relu(x, name="r"), "node name 'r' is already used")
    other = GraphBuilder(opset=18)
    _raised_here(lambda: other.op.Relu(x), "value 'x' belongs to another graph")
    _raised_here(lambda: b.op_in("com.example").Foo(x), "imports no version of domain 'com.example'")
    _raised_here(lambda: GraphBuilder(), "give the operator set version")
    _raised_here(lambda: GraphBuilder(opsets={"ai.onnx.ml": 9}), "'ai.onnx.ml' has versions 1 to 5, not 9")
    _raised_here(lambda: GraphBuilder(opset=18).model(), "the graph has no outputs")


def test_error_inside_a_subgraph_points_to_the_function() -> None:
    b = GraphBuilder(opset=18)
    c = b.input("c", "bool", [])
    a = b.input("a", "float", [3])
    err = _raised_here(
        lambda: b.op.If(c, then_branch=lambda g: g.op.Relu(a, bogus=1), else_branch=lambda g: a),
        "Relu (ai.onnx opset 18): unknown attribute 'bogus'",
    )
    assert traceback.extract_tb(err.__traceback__)[-1].line.endswith("g.op.Relu(a, bogus=1), else_branch=lambda g: a),")
    _raised_here(
        lambda: b.op.If(c, then_branch=lambda g: (a, a), else_branch=lambda g: a), "different numbers of outputs"
    )
    inner: list[Value] = []
    b.op.If(c, then_branch=lambda g: inner.append(g.op.Relu(a)) or inner[0], else_branch=lambda g: a)
    _raised_here(lambda: b.op.Relu(inner[0]), "belongs to another graph")


def test_failed_call_leaves_the_graph_unchanged() -> None:
    b = GraphBuilder(opset=18)
    x = b.input("x", "float", [2, 3])
    with pytest.raises(BuildError):
        b.op.Add(b.op.Relu(x), _w(4, 5), name="add")  # Relu is made, the Add fails (its constant is not kept)
    with pytest.raises(BuildError):
        b.op.MatMul(x, _w(4, 5), name="mm")
    y = b.op.Add(x, 1.0, name="add")
    b.output(y, "y")
    model = b.model()
    assert [n.name for n in model.graph.node] == ["Relu_0", "add"]
    assert [t.name for t in model.graph.initializer] == ["c0"]
    _check(model)


def test_build_error_is_an_onnxcore_error() -> None:
    assert issubclass(BuildError, OnnxCoreError)


def test_custom_domain_and_declared_subgraph_outputs() -> None:
    """An operator of a domain without definitions is not checked; its output type is given at output()."""
    b = GraphBuilder(opsets={"": 18, "com.example": 1})
    x = b.input("x", "float", ["N"])
    y = b.op_in("com.example").Foo(x, alpha=0.5, mode="fast", sizes=[1, 2])
    assert y.type is None
    node = b.graph().node[0]
    assert node.domain == "com.example" and [a.type for a in node.attribute] == [1, 3, 7]
    _raised_here(lambda: b.output(y, "y"), "the type of", "dtype=")
    assert b.output(y, "y", dtype="float", shape=["N"]).shape == ("N",)
    c = b.input("c", "bool", [])

    def branch(g: GraphBuilder) -> None:
        g.output(g.op.Neg(x), dtype="float")

    z = b.op.If(c, then_branch=branch, else_branch=lambda g: x)
    assert z.dtype is ElementType.FLOAT
    model = b.model()
    assert model.ir_version == 8
    assert [o.type.tensor_type.elem_type for o in model.graph.output] == [1]


def test_nested_subgraphs_read_outer_values() -> None:
    b = GraphBuilder(opset=18)
    x = b.input("x", "float", [2])
    c = b.input("c", "bool", [])

    def body(g: GraphBuilder, i: Value, cond: Value, acc: Value) -> tuple[Value, Value]:
        inc = g.op.If(c, then_branch=lambda h: h.op.Add(acc, x), else_branch=lambda h: h.op.Sub(acc, x))
        return cond, inc

    y = b.op.Loop(3, None, np.zeros(2, np.float32), body=body)
    b.output(y, "y")
    ours, _ = _run_both(b.model(), {"x": np.array([1, 2], np.float32), "c": np.array(False)})
    np.testing.assert_allclose(ours[0], [-3, -6])


def test_operator_names_for_completion() -> None:
    b = GraphBuilder(opsets={"": 13, "ai.onnx.ml": 3})
    names = dir(b.op)
    assert "Conv" in names and "Gelu" not in names  # Gelu comes at opset 20
    assert "TreeEnsembleClassifier" in dir(b.ml)
    assert b.op.Conv.schema().since_version == 11
