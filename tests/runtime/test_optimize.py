"""Plan-time optimisations (runtime/optimize/, Clause 8.2): repeats evaluated once, constants folded, fusions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h

import onnxcore
from onnxcore.kernels.registry import kernel

DOMAIN = "test.onnxcore.cse"
CALLS = {"n": 0}


@kernel("CountedNeg", 1, domain=DOMAIN)
def _counted_neg(x: np.ndarray) -> np.ndarray:
    CALLS["n"] += 1
    return -x


def _model(nodes: list, outputs: list[tuple[str, list[int]]]) -> bytes:
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
        [h.make_tensor_value_info(o, TP.FLOAT, shape) for o, shape in outputs],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 22), h.make_opsetid(DOMAIN, 1)])
    m.ir_version = 10
    return m.SerializeToString()


def test_identical_nodes_share_one_evaluation() -> None:
    nodes = [
        h.make_node("CountedNeg", ["x"], ["a"], domain=DOMAIN),
        h.make_node("CountedNeg", ["x"], ["b"], domain=DOMAIN),
        h.make_node("Add", ["a", "b"], ["y"]),
        h.make_node("ReduceSum", ["x"], ["c"], keepdims=1),
        h.make_node("ReduceSum", ["x"], ["d"], keepdims=0),
    ]
    s = onnxcore.Session(_model(nodes, [("y", [2, 3]), ("c", [1, 1]), ("d", [])]))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    before = CALLS["n"]
    y, c, d = s.run(None, {"x": x})
    assert CALLS["n"] - before == 1
    np.testing.assert_allclose(y, -2 * x)
    np.testing.assert_allclose(c, x.sum(keepdims=True))  # different attributes: not merged
    np.testing.assert_allclose(d, x.sum())
    _, values = s.run(None, {"x": x}, intermediates=True)  # debugging evaluates every node
    assert CALLS["n"] - before == 3
    assert {"a", "b", "y"} <= set(values)


@kernel("CountedScale", 1, domain=DOMAIN)
def _counted_scale(x: np.ndarray, *, factors: Any = None) -> np.ndarray:
    CALLS["n"] += 1
    return x * np.float32(factors[0])


def test_list_attributes_are_compared_whole_and_typed() -> None:
    # A list of one scalar type takes part in a node's identity as one tuple (issue 42, item 3: a forest's node
    # tables): equal lists merge, a list of ints and one of equal floats stay two computations, as do two lists
    # that differ in their last element only.
    long = list(range(50_000))
    nodes = [
        h.make_node("CountedScale", ["x"], ["a"], domain=DOMAIN, factors=long),
        h.make_node("CountedScale", ["x"], ["b"], domain=DOMAIN, factors=list(long)),
        h.make_node("CountedScale", ["x"], ["c"], domain=DOMAIN, factors=[float(v) for v in long]),
        h.make_node("CountedScale", ["x"], ["d"], domain=DOMAIN, factors=[*long[:-1], -1]),
    ]
    s = onnxcore.Session(_model(nodes, [(o, [2, 3]) for o in "abcd"]))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    before = CALLS["n"]
    outs = s.run(None, {"x": x})
    assert CALLS["n"] - before == 3
    for out in outs:
        np.testing.assert_array_equal(out, np.zeros_like(x))


def test_random_nodes_are_not_merged() -> None:
    nodes = [
        h.make_node("RandomUniformLike", ["x"], ["a"]),
        h.make_node("RandomUniformLike", ["x"], ["b"]),
        h.make_node("Sub", ["a", "b"], ["y"]),
    ]
    try:
        s = onnxcore.Session(_model(nodes, [("y", [2, 3])]))
    except onnxcore.UnsupportedOperatorError:
        pytest.skip("RandomUniformLike not implemented yet")
    y = s.run(None, {"x": np.zeros((2, 3), np.float32)})[0]
    assert np.abs(y).max() > 0


def test_constant_subgraphs_are_folded_once() -> None:
    w = h.make_tensor("w", TP.FLOAT, [2, 3], list(range(6)))
    nodes = [
        h.make_node("CountedNeg", ["w"], ["nw"], domain=DOMAIN),  # constants only: evaluated once
        h.make_node("Add", ["x", "nw"], ["y"]),
        h.make_node("Identity", ["nw"], ["z"]),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
        [h.make_tensor_value_info("y", TP.FLOAT, [2, 3]), h.make_tensor_value_info("z", TP.FLOAT, [2, 3])],
        [w],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 22), h.make_opsetid(DOMAIN, 1)])
    m.ir_version = 10
    s = onnxcore.Session(m.SerializeToString())
    before = CALLS["n"]
    x = np.ones((2, 3), np.float32)
    for _ in range(3):
        y, z = s.run(None, {"x": x})
    assert CALLS["n"] - before <= 1
    expected = -np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(y, x + expected)
    z[0, 0] = 42.0  # the caller owns its outputs: the folded constant is not changed by this
    assert s.run(None, {"x": x})[1][0, 0] == 0.0


@kernel("BroadcastRows", 1, domain=DOMAIN)
def _broadcast_rows(x: np.ndarray) -> np.ndarray:
    return np.broadcast_to(x, (2, *x.shape[1:]))  # a read-only view with a zero stride


def test_a_folded_view_is_made_contiguous_and_a_broadcast_stays_a_view() -> None:
    """A constant folded to a permuted view (Transpose) is stored C-contiguous, once, rather than read through its
    strides by every run; a folded broadcast view (a zero stride) stays a view, its values not repeated."""
    w = h.make_tensor("w", TP.FLOAT, [3, 2], list(range(6)))
    row = h.make_tensor("row", TP.FLOAT, [1, 3], [1.0, 2.0, 3.0])
    nodes = [
        h.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
        h.make_node("Add", ["x", "wt"], ["y"]),
        h.make_node("BroadcastRows", ["row"], ["rows"], domain=DOMAIN),
        h.make_node("Mul", ["x", "rows"], ["z"]),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
        [h.make_tensor_value_info("y", TP.FLOAT, [2, 3]), h.make_tensor_value_info("z", TP.FLOAT, [2, 3])],
        [w, row],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid(DOMAIN, 1)])
    m.ir_version = 10
    s = onnxcore.Session(m.SerializeToString())
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y, z = s.run(None, {"x": x})
    np.testing.assert_array_equal(y, x + np.arange(6, dtype=np.float32).reshape(3, 2).T)
    np.testing.assert_array_equal(z, x * np.array([1.0, 2.0, 3.0], np.float32))
    plan, _ = s._prepare(None, {"x": x}, False)
    folded = dict(zip(plan.names, plan.template))
    assert folded["wt"].flags.c_contiguous and not folded["wt"].flags.writeable
    assert folded["rows"].strides[0] == 0  # still the broadcast view


def test_initializer_that_is_an_input_is_not_folded() -> None:
    w = h.make_tensor("w", TP.FLOAT, [2, 3], list(range(6)))
    nodes = [h.make_node("CountedNeg", ["w"], ["y"], domain=DOMAIN)]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("w", TP.FLOAT, [2, 3])],
        [h.make_tensor_value_info("y", TP.FLOAT, [2, 3])],
        [w],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 22), h.make_opsetid(DOMAIN, 1)])
    m.ir_version = 10
    s = onnxcore.Session(m.SerializeToString())
    np.testing.assert_array_equal(s.run(None, {})[0], -np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(s.run(None, {"w": np.ones((2, 3), np.float32)})[0], -np.ones((2, 3)))


@kernel("CountedAdd", 1, domain=DOMAIN)
def _counted_add(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    CALLS["n"] += 1
    return x + c


@pytest.mark.parametrize(("second", "calls"), [([1.0, 2.0, 3.0], 1), ([1.0, 2.0, 4.0], 2)])
def test_equal_constants_make_equal_computations(second: list[float], calls: int) -> None:
    c1 = h.make_tensor("c1", TP.FLOAT, [3], [1.0, 2.0, 3.0])
    c2 = h.make_tensor("c2", TP.FLOAT, [3], second)
    nodes = [
        h.make_node("CountedAdd", ["x", "c1"], ["a"], domain=DOMAIN),
        h.make_node("CountedAdd", ["x", "c2"], ["b"], domain=DOMAIN),
        h.make_node("Sub", ["a", "b"], ["y"]),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
        [h.make_tensor_value_info("y", TP.FLOAT, [2, 3])],
        [c1, c2],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 22), h.make_opsetid(DOMAIN, 1)])
    m.ir_version = 10
    s = onnxcore.Session(m.SerializeToString())
    before = CALLS["n"]
    y = s.run(None, {"x": np.ones((2, 3), np.float32)})[0]
    assert CALLS["n"] - before == calls
    diff = np.array([1.0, 2.0, 3.0], np.float32) - np.array(second, np.float32)
    np.testing.assert_array_equal(y, np.broadcast_to(diff, (2, 3)))


def _reductions_model(nodes: list, outputs: dict[str, list[int]], x_shape: list[int] | None, inits: list) -> bytes:
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, x_shape)],
        [h.make_tensor_value_info(o, TP.INT64 if o == "j" else TP.FLOAT, shape) for o, shape in outputs.items()],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)])
    m.ir_version = 10
    return m.SerializeToString()


def _ops_run(s: onnxcore.Session) -> list[str]:
    return [bn.node.op_type for bn in s._plan.info]


@pytest.mark.parametrize("declared", [True, False])
def test_equal_axes_spelled_differently_are_one_computation(declared: bool) -> None:
    """Clause 8.2: with the input's rank known (declared, and every feed checked against it), axes [-1] and
    [2], or [2, 1] and [1, 2], of a rank-3 input are one reduction; without a declared rank (a model that does
    not conform, Clause 7.1, run unchecked) they stay two."""
    axes = {"a": [2], "b": [-1], "c": [1, 2], "d": [-1, 1], "e": [-1, -2, 0]}
    inits = [h.make_tensor(f"ax_{k}", TP.INT64, [len(v)], v) for k, v in axes.items()]
    nodes = [h.make_node("ReduceMax", ["x", f"ax_{k}"], [k], keepdims=0) for k in axes]
    nodes += [
        h.make_node("ReduceL1", ["x", "ax_b"], ["f"]),
        h.make_node("ReduceL1", ["x", "ax_a"], ["g"]),
        h.make_node("Softmax", ["x"], ["h"], axis=-1),
        h.make_node("Softmax", ["x"], ["i"], axis=2),
        h.make_node("ArgMax", ["x"], ["j"], axis=1),  # a different axis: not merged
    ]
    outputs = {"a": [2, 3], "b": [2, 3], "c": [2], "d": [2], "e": [], "f": [2, 3, 1], "g": [2, 3, 1]}
    outputs |= {"h": [2, 3, 4], "i": [2, 3, 4], "j": [2, 1, 4]}
    model = _reductions_model(nodes, outputs, [2, 3, 4] if declared else None, inits)
    s = onnxcore.Session(model, check=declared)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    got = dict(zip(outputs, s.run(None, {"x": x})))
    ops = _ops_run(s)
    if declared:
        assert ops.count("ReduceMax") == 3 and ops.count("ReduceL1") == 1 and ops.count("Softmax") == 1
    else:
        assert ops.count("ReduceMax") == 5 and ops.count("ReduceL1") == 2 and ops.count("Softmax") == 2
    np.testing.assert_array_equal(got["a"], x.max(axis=2))
    np.testing.assert_array_equal(got["b"], x.max(axis=2))
    np.testing.assert_array_equal(got["c"], x.max(axis=(1, 2)))
    np.testing.assert_array_equal(got["d"], x.max(axis=(1, 2)))
    np.testing.assert_array_equal(got["e"], x.max(axis=(0, 1, 2)))
    np.testing.assert_allclose(got["f"], np.abs(x).sum(axis=2, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(got["f"], got["g"])
    np.testing.assert_array_equal(got["h"], got["i"])
    np.testing.assert_array_equal(got["j"], x.argmax(axis=1, keepdims=True))


def test_invalid_axes_are_not_merged_with_valid_ones() -> None:
    """An axis out of range or repeated is refused when the node runs; it is never taken for a valid one."""
    inits = [h.make_tensor("ax_ok", TP.INT64, [1], [2]), h.make_tensor("ax_bad", TP.INT64, [1], [5])]
    nodes = [
        h.make_node("ReduceSum", ["x", "ax_ok"], ["a"], keepdims=0),
        h.make_node("ReduceSum", ["x", "ax_bad"], ["b"], keepdims=0),
    ]
    s = onnxcore.Session(_reductions_model(nodes, {"a": [2, 4], "b": [2, 3]}, [2, 3, 4], inits), check=False)
    assert _ops_run(s).count("ReduceSum") == 2
    with pytest.raises(onnxcore.EvaluationError, match="ReduceSum"):
        s.run(None, {"x": np.ones((2, 3, 4), np.float32)})
    repeated = [h.make_tensor("ax_rep", TP.INT64, [2], [2, -1]), h.make_tensor("ax_one", TP.INT64, [1], [2])]
    nodes = [
        h.make_node("ReduceSum", ["x", "ax_rep"], ["a"], keepdims=0),
        h.make_node("ReduceSum", ["x", "ax_one"], ["b"], keepdims=0),
    ]
    s = onnxcore.Session(_reductions_model(nodes, {"a": [2, 3], "b": [2, 3]}, [2, 3, 4], repeated), check=False)
    assert _ops_run(s).count("ReduceSum") == 2


def test_affine_chain_is_fused_and_matches_onnxruntime() -> None:
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(3)
    c = 6
    inits = [
        h.make_tensor(n, TP.FLOAT, [c], rng.random(c).astype(np.float32) + (0.5 if n == "var" else 0.0))
        for n in ("scale", "bias", "mean", "var")
    ]
    inits += [
        h.make_tensor("s", TP.FLOAT, [c, 1, 1], rng.standard_normal(c).astype(np.float32)),
        h.make_tensor("t", TP.FLOAT, [c, 1, 1], rng.standard_normal(c).astype(np.float32)),
    ]
    nodes = [
        h.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["b"], epsilon=1e-3),
        h.make_node("Mul", ["b", "s"], ["m"]),
        h.make_node("Add", ["t", "m"], ["a"]),
        h.make_node("Relu", ["a"], ["y"]),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [2, c, 4, 5])],
        [h.make_tensor_value_info("y", TP.FLOAT, [2, c, 4, 5])],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 15)])
    m.ir_version = 8
    data = m.SerializeToString()
    s = onnxcore.Session(data)
    x = rng.standard_normal((2, c, 4, 5)).astype(np.float32)
    ours = s.run(None, {"x": x})[0]
    theirs = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    assert len(s._plan.steps) == 1  # the four nodes run as one step
    debug, values = s.run(None, {"x": x}, intermediates=True)  # debugging runs every node as written
    assert {"b", "m", "a"} <= set(values)
    np.testing.assert_allclose(debug[0], ours, rtol=1e-5, atol=1e-6)


def test_conv_batchnorm_fusion_matches_onnxruntime() -> None:
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(5)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    inits = [h.make_tensor("w", TP.FLOAT, list(w.shape), w.ravel())]
    inits += [
        h.make_tensor(n, TP.FLOAT, [4], rng.random(4).astype(np.float32) + (0.5 if n == "var" else 0.0))
        for n in ("scale", "bias", "mean", "var")
    ]
    nodes = [
        h.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        h.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["y"]),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [1, 3, 8, 8])],
        [h.make_tensor_value_info("y", TP.FLOAT, [1, 4, 8, 8])],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 15)])
    m.ir_version = 8
    data = m.SerializeToString()
    s = onnxcore.Session(data)
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    ours = s.run(None, {"x": x})[0]
    assert [bn.node.op_type for bn in s._plan.info] == ["Conv"]
    theirs = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


def _run_both(nodes: list, inits: list, x: np.ndarray, out_shape: list[int], opset: int = 15) -> tuple:
    ort = pytest.importorskip("onnxruntime")
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, list(x.shape))],
        [h.make_tensor_value_info("y", TP.FLOAT, out_shape)],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    data = m.SerializeToString()
    s = onnxcore.Session(data)
    ours = s.run(None, {"x": x})[0]
    theirs = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    debug, _ = s.run(None, {"x": x}, intermediates=True)  # every node as written
    return s, ours, theirs, debug[0]


def test_conv_per_channel_chain_and_relu_fold_into_the_conv() -> None:
    """Conv -> Mul(c) -> Add(c) -> BatchNormalization -> Relu becomes one Conv step (Clause 8.2); a Mul by a
    constant that is not per channel stops the chain."""
    rng = np.random.default_rng(11)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    inits = [h.make_tensor("w", TP.FLOAT, list(w.shape), w.ravel())]
    inits += [h.make_tensor("b", TP.FLOAT, [4], rng.standard_normal(4).astype(np.float32))]
    inits += [h.make_tensor("s", TP.FLOAT, [1, 4, 1, 1], rng.standard_normal(4).astype(np.float32))]
    inits += [h.make_tensor("t", TP.FLOAT, [4, 1, 1], rng.standard_normal(4).astype(np.float32))]
    inits += [
        h.make_tensor(n, TP.FLOAT, [4], rng.random(4).astype(np.float32) + (0.5 if n == "var" else 0.0))
        for n in ("scale", "bias", "mean", "var")
    ]
    inits += [h.make_tensor("sp", TP.FLOAT, [8], rng.standard_normal(8).astype(np.float32))]
    nodes = [
        h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        h.make_node("Mul", ["c", "s"], ["m"]),
        h.make_node("Add", ["t", "m"], ["a"]),
        h.make_node("BatchNormalization", ["a", "scale", "bias", "mean", "var"], ["n"]),
        h.make_node("Relu", ["n"], ["y"]),
    ]
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    s, ours, theirs, debug = _run_both(nodes, inits, x, [2, 4, 8, 8])
    assert [bn.node.op_type for bn in s._plan.info] == ["Conv"]
    assert ours.min() == 0.0
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(debug, ours, rtol=1e-4, atol=1e-5)
    # A constant varying along the last axis is not per channel: Conv(+Mul+Add+BN folded) stops before it.
    nodes[4] = h.make_node("Mul", ["n", "sp"], ["y"])
    s, ours, theirs, _ = _run_both(nodes, inits, x, [2, 4, 8, 8])
    assert [bn.node.op_type for bn in s._plan.info] == ["Conv", "Mul"]
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize(
    ("group", "k", "c_in", "c_out"),
    [(1, 1, 8, 24), (16, 3, 16, 16), (1, 3, 16, 16), (1, 3, 3, 5)],
    ids=["pointwise", "depthwise", "winograd", "stem"],
)
def test_conv_batchnorm_silu_is_one_step(group: int, k: int, c_in: int, c_out: int) -> None:
    """EfficientNet's Conv -> BatchNormalization -> SiLU (``x * Sigmoid(x)``) becomes one Conv step whose bias and
    SiLU run in one pass (ConvActivation; a 3x3 of 16 channels keeps its Winograd kernel inside), on both accelerator
    paths: onnxruntime's result and the nodes as written (``intermediates=True``) within float32 tolerance
    (onnxruntime's logistic is an approximation; Winograd's transform adds its stated error)."""
    from onnxcore.kernels.fused.conv import ConvActivation

    rng = np.random.default_rng(13)
    w = (rng.standard_normal((c_out, c_in // group, k, k)) * 0.3).astype(np.float32)
    inits = [h.make_tensor("w", TP.FLOAT, list(w.shape), w.ravel())]
    inits += [h.make_tensor("b", TP.FLOAT, [c_out], rng.standard_normal(c_out).astype(np.float32))]
    inits += [
        h.make_tensor(n, TP.FLOAT, [c_out], rng.random(c_out).astype(np.float32) + (0.5 if n == "var" else 0.0))
        for n in ("scale", "bias", "mean", "var")
    ]
    nodes = [
        h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[k // 2] * 4, group=group),
        h.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["n"]),
        h.make_node("Sigmoid", ["n"], ["g"]),
        h.make_node("Mul", ["n", "g"], ["y"]),
    ]
    x = (rng.standard_normal((2, c_in, 20, 19)) * 3).astype(np.float32)
    s, ours, theirs, debug = _run_both(nodes, inits, x, [2, c_out, 20, 19])
    assert [bn.node.op_type for bn in s._plan.info] == ["Conv"]
    call = s._plan.info[0].call
    assert isinstance(call, ConvActivation) and call.label == "SiLU"
    assert sorted(f.node.op_type for f in s._plan.info[0].fused) == ["BatchNormalization", "Mul", "Sigmoid"]
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(ours, debug, rtol=1e-4, atol=2e-5)  # Winograd's own error is the larger


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("group", "k", "c_in", "c_out"), [(1, 1, 8, 24), (16, 3, 16, 16)])
def test_conv_hardswish_is_one_step(group: int, k: int, c_in: int, c_out: int, dtype: Any) -> None:
    """MobileNetV3's Conv -> BatchNormalization -> HardSwish becomes one Conv step whose bias and HardSwish run in
    one pass (ConvActivation): the same values bit for bit as the nodes as written, and onnxruntime's (float32;
    onnxruntime has no double Conv)."""
    from onnxcore.kernels.fused.conv import ConvActivation

    rng = np.random.default_rng(15)
    ty = TP.FLOAT if dtype == np.float32 else TP.DOUBLE
    w = (rng.standard_normal((c_out, c_in // group, k, k)) * 0.3).astype(dtype)
    inits = [h.make_tensor("w", ty, list(w.shape), w.ravel())]
    inits += [h.make_tensor("b", ty, [c_out], rng.standard_normal(c_out).astype(dtype))]
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[k // 2] * 4, group=group)]
    nodes.append(h.make_node("HardSwish", ["c"], ["y"]))
    x = (rng.standard_normal((2, c_in, 12, 13)) * 3).astype(dtype)
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", ty, list(x.shape))],
        [h.make_tensor_value_info("y", ty, [2, c_out, 12, 13])],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 14)])
    m.ir_version = 8
    data = m.SerializeToString()
    s = onnxcore.Session(data)
    call = s._plan.info[0].call
    assert len(s._plan.info) == 1 and isinstance(call, ConvActivation) and call.label == "HardSwish"
    (ours,) = s.run(None, {"x": x})
    (debug,), _ = s.run(None, {"x": x}, intermediates=True)
    assert ours.dtype == dtype and ours.min() < 0 < ours.max()
    np.testing.assert_array_equal(ours, debug)
    if dtype == np.float32:
        ort = pytest.importorskip("onnxruntime")
        (theirs,) = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("form", ["pattern", "Gelu-20"])
@pytest.mark.parametrize(("group", "k", "c_in", "c_out"), [(1, 1, 8, 24), (16, 3, 16, 16), (1, 3, 16, 16)])
def test_conv_gelu_is_one_step(group: int, k: int, c_in: int, c_out: int, form: str) -> None:
    """EfficientFormer's and ConvNeXt's Conv -> GELU (the exporter's ``0.5 x (1 + erf(x / sqrt 2))`` or a Gelu-20
    node) becomes one Conv step whose bias and GELU run in one pass (ConvActivation), on both accelerator paths: the
    values of the nodes as written (bit for bit for a Gelu node where no Winograd kernel takes the Conv) and
    onnxruntime's."""
    from onnxcore.kernels.fused.conv import ConvActivation

    rng = np.random.default_rng(14)
    w = (rng.standard_normal((c_out, c_in // group, k, k)) * 0.3).astype(np.float32)
    inits = [h.make_tensor("w", TP.FLOAT, list(w.shape), w.ravel())]
    inits += [h.make_tensor("b", TP.FLOAT, [c_out], rng.standard_normal(c_out).astype(np.float32))]
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[k // 2] * 4, group=group)]
    if form == "Gelu-20":
        nodes.append(h.make_node("Gelu", ["c"], ["y"]))
        opset = 20
    else:
        inits += [h.make_tensor(n, TP.FLOAT, [], [v]) for n, v in (("r2", 2**0.5), ("one", 1.0), ("half", 0.5))]
        nodes += [
            h.make_node("Div", ["c", "r2"], ["d"]),
            h.make_node("Erf", ["d"], ["e"]),
            h.make_node("Add", ["e", "one"], ["a"]),
            h.make_node("Mul", ["c", "a"], ["m"]),
            h.make_node("Mul", ["m", "half"], ["y"]),
        ]
        opset = 15
    x = (rng.standard_normal((2, c_in, 20, 19)) * 3).astype(np.float32)
    s, ours, theirs, debug = _run_both(nodes, inits, x, [2, c_out, 20, 19], opset=opset)
    assert [bn.node.op_type for bn in s._plan.info] == ["Conv"]
    call = s._plan.info[0].call
    assert isinstance(call, ConvActivation) and call.label == "GELU"
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(ours, debug, rtol=1e-4, atol=2e-5)  # Winograd's own error is the larger
    if form == "Gelu-20" and (group > 1 or k == 1):
        # The Conv's bias then the Gelu kernel, in one pass: the same operations (the exporter's chain divides by
        # sqrt 2 where the kernel multiplies by its inverse, an ulp apart now and then).
        np.testing.assert_array_equal(ours, debug)


def test_gemm_weights_transposed_once_and_relu_in_place() -> None:
    rng = np.random.default_rng(12)
    w = rng.standard_normal((6, 5)).astype(np.float32)
    inits = [
        h.make_tensor("w", TP.FLOAT, [6, 5], w.ravel()),
        h.make_tensor("c", TP.FLOAT, [6], rng.standard_normal(6).astype(np.float32)),
    ]
    nodes = [
        h.make_node("Gemm", ["x", "w", "c"], ["g"], transB=1, alpha=0.5),
        h.make_node("Relu", ["g"], ["y"]),
    ]
    x = rng.standard_normal((4, 5)).astype(np.float32)
    s, ours, theirs, debug = _run_both(nodes, inits, x, [4, 6])
    (step,) = s._plan.info
    assert step.kw["transB"] == 0 and step.inputs[1] != "w"
    wt = s._plan.template[s._plan.steps[0][1][1]]
    np.testing.assert_array_equal(wt, w.T)
    assert wt.flags.c_contiguous and not wt.flags.writeable
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(debug, ours)
    assert ours.min() == 0.0


@pytest.mark.parametrize("bias", [True, False])
def test_grouped_conv_batchnorm_relu_fold(bias: bool) -> None:
    """Grouped Conv (with and without bias) -> BatchNormalization -> Relu: one step, as written to rounding."""
    rng = np.random.default_rng(23)
    w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    inits = [h.make_tensor("w", TP.FLOAT, list(w.shape), w.ravel())]
    inits += [h.make_tensor(n, TP.FLOAT, [6], rng.standard_normal(6).astype(np.float32)) for n in ("s", "bb", "m")]
    inits += [h.make_tensor("v", TP.FLOAT, [6], rng.uniform(0.5, 2, 6).astype(np.float32))]
    conv_in = ["x", "w"]
    if bias:
        inits += [h.make_tensor("b", TP.FLOAT, [6], rng.standard_normal(6).astype(np.float32))]
        conv_in.append("b")
    nodes = [
        h.make_node("Conv", conv_in, ["c"], group=2, pads=[1, 1, 1, 1]),
        h.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"], epsilon=1e-3),
        h.make_node("Relu", ["n"], ["y"]),
    ]
    x = rng.standard_normal((2, 4, 9, 9)).astype(np.float32)
    s, ours, theirs, debug = _run_both(nodes, inits, x, [2, 6, 9, 9])
    assert [bn.node.op_type for bn in s._plan.info] == ["Conv"]
    np.testing.assert_allclose(ours, debug, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)


def test_conv_relu_alone_keeps_the_weights() -> None:
    """A Relu alone after a Conv runs in place; the Conv keeps its own weights (no copy is made)."""
    rng = np.random.default_rng(24)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    inits = [h.make_tensor("w", TP.FLOAT, list(w.shape), w.ravel())]
    nodes = [h.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c"], ["y"])]
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    s, ours, theirs, _ = _run_both(nodes, inits, x, [1, 4, 8, 8])
    (step,) = s._plan.info
    assert step.inputs == ["x", "w"]
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_random_conv_gemm_chains_fused_equal_unfused() -> None:
    """Seeded random chains after Conv and Gemm (BatchNormalization, Mul/Add by constants of assorted shapes,
    Relu, a second reader, a graph output in the middle): the optimised plan gives what the node-by-node run
    (intermediates=True, nothing fused) gives, or both refuse the model with our error."""
    rng = np.random.default_rng(99)
    for trial in range(60):
        gemm = trial % 4 == 3
        m = int(rng.integers(1, 5))
        if gemm:
            x_shape, w_shape, out_shape = [3, 4], [m, 4], [3, m]
            first = h.make_node("Gemm", ["x", "w"], ["v0"], transB=1)
        else:
            x_shape, w_shape, out_shape = [2, 3, 5, 5], [m, 3, 3, 3], [2, m, 5, 5]
            first = h.make_node("Conv", ["x", "w"], ["v0"], pads=[1, 1, 1, 1])
        inits = [h.make_tensor("w", TP.FLOAT, w_shape, rng.standard_normal(w_shape).astype(np.float32).ravel())]
        nodes = [first]
        outputs = []
        for k in range(int(rng.integers(1, 5))):
            cur, nxt = f"v{k}", f"v{k + 1}"
            kind = rng.choice(["bn", "mul", "add", "relu", "fork"])
            if kind == "bn" and not gemm:
                names = [f"bn_{p}{k}" for p in ("scale", "bias", "mean", "var")]
                for n in names:
                    val = rng.random(m).astype(np.float32) + (0.5 if n.startswith("bn_var") else 0.0)
                    inits.append(h.make_tensor(n, TP.FLOAT, [m], val))
                nodes.append(h.make_node("BatchNormalization", [cur, *names], [nxt]))
            elif kind in ("mul", "add", "bn"):
                shape = [[m, 1, 1], [1, m, 1, 1], [1], [out_shape[-1]], [m]][int(rng.integers(0, 5))]
                if gemm:
                    shape = [[m], [1], [1, m]][int(rng.integers(0, 3))]
                c = rng.standard_normal(shape).astype(np.float32)
                inits.append(h.make_tensor(f"c{k}", TP.FLOAT, shape, c.ravel()))
                op = "Mul" if kind == "mul" else "Add"
                ins = [cur, f"c{k}"] if rng.random() < 0.5 else [f"c{k}", cur]
                nodes.append(h.make_node(op, ins, [nxt]))
            elif kind == "relu":
                nodes.append(h.make_node("Relu", [cur], [nxt]))
            else:  # a second reader of the running value, itself a graph output
                nodes.append(h.make_node("Neg", [cur], [f"fork{k}"]))
                outputs.append(h.make_tensor_value_info(f"fork{k}", TP.FLOAT, None))
                nodes.append(h.make_node("Identity", [cur], [nxt]))
        last = nodes[-1].output[0]
        g = h.make_graph(
            nodes,
            "g",
            [h.make_tensor_value_info("x", TP.FLOAT, x_shape)],
            [h.make_tensor_value_info(last, TP.FLOAT, None), *outputs],
            inits,
        )
        model = h.make_model(g, opset_imports=[h.make_opsetid("", 15)])
        model.ir_version = 8
        x = rng.standard_normal(x_shape).astype(np.float32)
        try:
            s = onnxcore.Session(model.SerializeToString(), check=False)
            fast = s.run(None, {"x": x})
        except onnxcore.OnnxCoreError:
            with pytest.raises(onnxcore.OnnxCoreError):
                onnxcore.Session(model.SerializeToString(), check=False).run(None, {"x": x}, intermediates=True)
            continue
        slow, _ = s.run(None, {"x": x}, intermediates=True)
        for a, b in zip(fast, slow):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"trial {trial}")


@pytest.mark.parametrize("shape", [(3, 5), (2100, 2049), (1, 4_300_000)])
def test_weights_transposed_tile_by_tile_equal_numpy(shape: tuple[int, int]) -> None:
    from onnxcore.runtime.optimize._common import transposed as _transposed

    w = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    t = _transposed(w)
    assert t.flags.c_contiguous
    np.testing.assert_array_equal(t, w.T)


@pytest.mark.parametrize("op", ["Add", "Sum", "MatMul", "Sub"])
def test_relu_runs_in_place_on_a_fresh_result(op: str) -> None:
    """``x op x^2 -> Relu`` (a residual Add, a Sum, a MatMul) is one step with the Relu applied in place; the
    feed is left untouched and the value is what onnxruntime and the node-by-node run give."""
    from onnxcore.kernels.fused.conv import InPlaceRelu

    rng = np.random.default_rng(31)
    x = rng.standard_normal((5, 5)).astype(np.float32)
    before = x.copy()
    nodes = [
        h.make_node("Mul", ["x", "x"], ["sq"]),
        h.make_node(op, ["x", "sq"], ["r"]),
        h.make_node("Relu", ["r"], ["y"]),
    ]
    s, ours, theirs, debug = _run_both(nodes, [], x, [5, 5])
    assert [bn.node.op_type for bn in s._plan.info] == ["Mul", op]
    assert isinstance(s._plan.info[1].call, InPlaceRelu)
    np.testing.assert_array_equal(x, before)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ours, debug)
    assert ours.min() == 0.0 and ours.max() > 0.0


def test_relu_not_fused_when_the_result_has_another_reader() -> None:
    """The Add's result is also a graph output: the Relu must not overwrite it."""
    rng = np.random.default_rng(32)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    g = h.make_graph(
        [h.make_node("Add", ["x", "x"], ["r"]), h.make_node("Relu", ["r"], ["y"])],
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [4, 3])],
        [h.make_tensor_value_info("y", TP.FLOAT, [4, 3]), h.make_tensor_value_info("r", TP.FLOAT, [4, 3])],
    )
    s = onnxcore.Session(h.make_model(g, opset_imports=[h.make_opsetid("", 15)], ir_version=8).SerializeToString())
    y, r = s.run(None, {"x": x})
    assert [bn.node.op_type for bn in s._plan.info] == ["Add", "Relu"]
    np.testing.assert_array_equal(r, x + x)
    np.testing.assert_array_equal(y, np.maximum(x + x, 0))


def _preactivation_model(
    rng: np.random.Generator, c: int, m: int, *, group: int = 1, pads: int = 0, scale: np.ndarray | None = None
) -> tuple[list, list]:
    """``BatchNormalization -> Relu -> Conv`` (DenseNet's pre-activation) on ``x`` with ``c`` channels."""
    if scale is None:
        scale = rng.standard_normal(c).astype(np.float32)
    bn = {
        "scale": scale,
        "bias": rng.standard_normal(c).astype(np.float32),
        "mean": rng.standard_normal(c).astype(np.float32),
        "var": rng.random(c).astype(np.float32) + 0.5,
    }
    w = rng.standard_normal((m, c // group, 1 + 2 * pads, 1 + 2 * pads)).astype(np.float32)
    inits = [h.make_tensor(n, TP.FLOAT, [c], v) for n, v in bn.items()]
    inits += [h.make_tensor("w", TP.FLOAT, list(w.shape), w.ravel())]
    inits += [h.make_tensor("b", TP.FLOAT, [m], rng.standard_normal(m).astype(np.float32))]
    nodes = [
        h.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["n"]),
        h.make_node("Relu", ["n"], ["r"]),
        h.make_node("Conv", ["r", "w", "b"], ["y"], group=group, pads=[pads] * 4),
    ]
    return nodes, inits


@pytest.mark.parametrize("group", [1, 2])
def test_preactivation_folds_into_an_unpadded_conv(group: int) -> None:
    """Clause 8.2: ``BatchNormalization -> Relu -> Conv 1x1`` is one step, a clamp and the Conv with folded
    weights; BatchNormalization scales of both signs (the negative ones take the two-pass clamp). The value is
    onnxruntime's and the node-by-node run's, and the feed is untouched."""
    from onnxcore.kernels.fused.conv import PreActivatedConv

    rng = np.random.default_rng(41)
    nodes, inits = _preactivation_model(rng, 6, 4, group=group)
    x = rng.standard_normal((2, 6, 5, 7)).astype(np.float32)
    before = x.copy()
    s, ours, theirs, debug = _run_both(nodes, inits, x, [2, 4, 5, 7])
    assert [type(bn.call) for bn in s._plan.info] == [PreActivatedConv]
    assert s._plan.info[0].call.sign is not None  # the random scales include negative ones
    np.testing.assert_array_equal(x, before)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours, debug, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", ["padded", "zero scale"])
def test_preactivation_left_alone(case: str) -> None:
    """A padded Conv would read zeros where the clamp needs ``-b/|a|``; a zero scale has no clamp: both keep
    the chain and the Conv as two steps."""
    rng = np.random.default_rng(42)
    scale = rng.random(4).astype(np.float32) + 0.5
    if case == "zero scale":
        scale[2] = 0.0
    nodes, inits = _preactivation_model(rng, 4, 3, pads=1 if case == "padded" else 0, scale=scale)
    x = rng.standard_normal((1, 4, 6, 6)).astype(np.float32)
    s, ours, theirs, debug = _run_both(nodes, inits, x, [1, 3, 6, 6])
    assert [bn.node.op_type for bn in s._plan.info] == ["BatchNormalization", "Conv"]
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours, debug, rtol=1e-5, atol=1e-5)


def test_dense_block_concatenations_are_read_in_pieces() -> None:
    """A DenseNet block: each layer's ``Concat -> BatchNormalization -> Relu -> Conv 1x1`` reads the features
    concatenated so far. Nested Concats are flattened and each taken into the Conv that reads it, so no
    Concat is left to copy the growing features; the block's output Concat, a graph output, stays. The
    values are onnxruntime's."""
    from onnxcore.kernels.fused.conv import PreActivatedConv

    rng = np.random.default_rng(43)
    c0, k, layers = 5, 3, 4
    nodes, inits = [], []
    feats, c = "x", c0
    for i in range(layers):
        scale = rng.random(c).astype(np.float32) + 0.5
        if i == 2:
            scale[0] = -scale[0]  # one layer takes the two-pass clamp
        params = {
            f"s{i}": scale,
            f"t{i}": rng.standard_normal(c).astype(np.float32),
            f"m{i}": rng.standard_normal(c).astype(np.float32),
            f"v{i}": rng.random(c).astype(np.float32) + 0.5,
        }
        inits += [h.make_tensor(n, TP.FLOAT, [c], v) for n, v in params.items()]
        w = rng.standard_normal((k, c, 1, 1)).astype(np.float32)
        inits.append(h.make_tensor(f"w{i}", TP.FLOAT, list(w.shape), w.ravel()))
        nodes += [
            h.make_node("BatchNormalization", [feats, *params], [f"n{i}"]),
            h.make_node("Relu", [f"n{i}"], [f"r{i}"]),
            h.make_node("Conv", [f"r{i}", f"w{i}"], [f"f{i}"], kernel_shape=[1, 1]),
            h.make_node("Concat", [feats, f"f{i}"], [f"cat{i}"], axis=1),
        ]
        feats, c = f"cat{i}", c + k
    x = rng.standard_normal((1, c0, 4, 6)).astype(np.float32)
    nodes.append(h.make_node("Identity", [feats], ["y"]))
    s, ours, theirs, debug = _run_both(nodes, inits, x, [1, c, 4, 6])
    ops = [bn.node.op_type for bn in s._plan.info]
    assert ops == ["Conv"] * layers + ["Concat"]  # the Identity to the output: the Concat writes y (noops.py)
    assert all(isinstance(bn.call, PreActivatedConv) for bn in s._plan.info[:layers])
    assert [len(bn.inputs) for bn in s._plan.info[:layers]] == [1, 2, 3, 4]  # x and the features so far
    assert len(s._plan.info[layers].inputs) == layers + 1
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours, debug, rtol=1e-5, atol=1e-5)


def test_random_preactivations_fused_equal_unfused() -> None:
    """Seeded random ``[Concat] -> affine steps -> Relu -> Conv`` graphs (BatchNormalization, Mul/Add by
    constants of assorted shapes and signs, groups, a Concat that is also a graph output, a padded Conv): the
    optimised plan gives what the node-by-node run gives."""
    from onnxcore.kernels.fused.conv import PreActivatedConv

    rng = np.random.default_rng(77)
    fused = 0
    for trial in range(40):
        group = int(rng.choice([1, 2]))
        c, m = 2 * int(rng.integers(1, 4)), 2 * int(rng.integers(1, 3))
        pads = int(rng.random() < 0.2)
        split = int(rng.integers(0, c))  # x is the concatenation of two pieces when split > 0
        inits, nodes, outputs = [], [], []
        inputs = [h.make_tensor_value_info("x", TP.FLOAT, [2, c - split if split else c, 4, 5])]
        cur = "x"
        if split:
            inputs.append(h.make_tensor_value_info("x2", TP.FLOAT, [2, split, 4, 5]))
            nodes.append(h.make_node("Concat", ["x", "x2"], ["cat"], axis=1))
            cur = "cat"
            if rng.random() < 0.3:
                outputs.append(h.make_tensor_value_info("cat", TP.FLOAT, None))
        for k in range(int(rng.integers(1, 4))):
            kind = rng.choice(["bn", "mul", "add"])
            if kind == "bn":
                names = [f"bn{p}{k}" for p in ("s", "b", "m", "v")]
                vals = [rng.standard_normal(c), rng.standard_normal(c), rng.standard_normal(c), rng.random(c) + 0.5]
                inits += [h.make_tensor(n, TP.FLOAT, [c], v.astype(np.float32)) for n, v in zip(names, vals)]
                nodes.append(h.make_node("BatchNormalization", [cur, *names], [f"a{k}"]))
            else:
                shape = [[c, 1, 1], [1, c, 1, 1], [1], [5]][int(rng.integers(0, 4))]
                inits.append(h.make_tensor(f"k{k}", TP.FLOAT, shape, rng.standard_normal(shape).astype(np.float32)))
                nodes.append(h.make_node("Mul" if kind == "mul" else "Add", [cur, f"k{k}"], [f"a{k}"]))
            cur = f"a{k}"
        nodes.append(h.make_node("Relu", [cur], ["r"]))
        w = rng.standard_normal((m, c // group, 1 + 2 * pads, 1)).astype(np.float32)
        inits.append(h.make_tensor("w", TP.FLOAT, list(w.shape), w.ravel()))
        nodes.append(h.make_node("Conv", ["r", "w"], ["y"], group=group, pads=[pads, 0, pads, 0]))
        g = h.make_graph(nodes, "g", inputs, [h.make_tensor_value_info("y", TP.FLOAT, None), *outputs], inits)
        model = h.make_model(g, opset_imports=[h.make_opsetid("", 15)], ir_version=8)
        feeds = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
                 for i in inputs}  # fmt: skip
        s = onnxcore.Session(model.SerializeToString(), check=False)  # outputs without shapes
        fast = s.run(None, feeds)
        slow, _ = s.run(None, feeds, intermediates=True)
        fused += any(isinstance(bn.call, PreActivatedConv) for bn in s._plan.info)
        for a, b in zip(fast, slow):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"trial {trial}")
    assert 10 <= fused < 40  # both the fused and the unfused forms were exercised


def _named_chain_model(with_conv: bool) -> bytes:
    rng = np.random.default_rng(5)
    c = 4
    bn_params = [rng.uniform(0.5, 1.5, c), rng.normal(0, 0.1, c), rng.normal(0, 0.1, c), rng.uniform(0.5, 1.5, c)]
    inits = [h.make_tensor(n, TP.FLOAT, [c], v.astype(np.float32)) for n, v in zip("sbmv", bn_params)]
    nodes = []
    first = "x"
    if with_conv:
        w = rng.standard_normal((c, c, 3, 3)).astype(np.float32)
        inits.append(h.make_tensor("w", TP.FLOAT, list(w.shape), w.ravel()))
        nodes.append(h.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]))
        first = "c"
    nodes += [
        h.make_node("BatchNormalization", [first, "s", "b", "m", "v"], ["n"], name="norm"),
        h.make_node("Mul", ["n", "s"], ["k"], name="scale") if not with_conv else None,
        h.make_node("Relu", ["n" if with_conv else "k"], ["y"], name="act"),
    ]
    g = h.make_graph(
        [n for n in nodes if n is not None],
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, ["n", "c", "h", "w"])],
        [h.make_tensor_value_info("y", TP.FLOAT, ["n", "m", "h", "w"])],
        inits,
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 15)], ir_version=8).SerializeToString()


@pytest.mark.parametrize(
    ("with_conv", "failing", "fused"),
    [
        (True, "node 0 (Conv, name 'conv')", [(1, "BatchNormalization", "norm"), (2, "Relu", "act")]),
        (False, "node 0 (BatchNormalization, name 'norm')", [(1, "Mul", "scale"), (2, "Relu", "act")]),
    ],
)
def test_an_error_in_a_fused_step_names_every_node_in_it(with_conv: bool, failing: str, fused: list) -> None:
    """Conv -> BatchNormalization -> Relu runs as one Conv; BatchNormalization -> Mul -> Relu as one chain: a
    failure there names the nodes folded in, and the node-by-node run names the one that failed."""
    s = onnxcore.Session(_named_chain_model(with_conv))
    assert len(s._plan.info) == 1
    x = np.zeros((1, 3, 5, 5), np.float32)  # 3 channels where the weights and statistics have 4
    with pytest.raises(onnxcore.EvaluationError) as info:
        s.run(None, {"x": x})
    assert failing in str(info.value) and "intermediates=True" in str(info.value)
    assert "\x00" not in str(info.value)  # the folded weights' internal names are shown as "y/fused_w"
    assert info.value.fused_nodes == fused  # type: ignore[attr-defined]
    with pytest.raises(onnxcore.EvaluationError) as info:
        s.run(None, {"x": x}, intermediates=True)
    assert failing in str(info.value) and "fused" not in str(info.value)


def test_two_equal_nodes_writing_one_name_are_merged_without_a_loop() -> None:
    """An unchecked model breaking Clause 5.4.2 (two equal nodes defining Y): merging the repeat once aliased Y to
    itself, and the plan's liveness walk followed that alias forever (a fuzz hang). The repeat is dropped; Y is the
    one value both define."""
    nodes = [h.make_node("Relu", ["x"], ["y"]), h.make_node("Relu", ["x"], ["y"])]
    g = h.make_graph(
        nodes,
        "twice",
        [h.make_tensor_value_info("x", TP.FLOAT, [3])],
        [h.make_tensor_value_info("y", TP.FLOAT, [3])],
    )
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=9)
    sess = onnxcore.Session(model.SerializeToString(), check=False)
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], np.maximum(x, 0))
