"""Elementwise chains run as one step writing into one buffer (issue 27, runtime/optimize/chains.py): the same
results bit for bit as the graph as written (``intermediates=True``, Clause 8.2), close to onnxruntime's, for
every element type and broadcast; errors still name the node."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import onnxcore
from onnxcore import EvaluationError
from onnxcore.kernels.fused.affine import ElementwiseChain

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper  # noqa: E402

_ELEM = {np.float16: TP.FLOAT16, np.float32: TP.FLOAT, np.float64: TP.DOUBLE, np.int32: TP.INT32}


def _chain_model(dtype: Any, shape: list[int], c_shape: list[int], ops: list[tuple[str, str]]) -> bytes:
    """x -> ops in turn; each binary op reads the running value and ``c`` (a constant) or ``r`` (an input), in
    the order its spelling gives ("v,c" or "c,v")."""
    nodes = []
    prev = "x"
    for i, (op, order) in enumerate(ops):
        out = f"t{i}" if i < len(ops) - 1 else "y"
        ins = [prev] if not order else [prev if s == "v" else s for s in order.split(",")]
        nodes.append(h.make_node(op, ins, [out]))
        prev = out
    rng = np.random.default_rng(3)
    c = numpy_helper.from_array((rng.uniform(0.5, 2.0, c_shape)).astype(dtype), "c")
    elem = _ELEM[dtype]
    g = h.make_graph(
        nodes,
        "chain",
        [h.make_tensor_value_info("x", elem, shape), h.make_tensor_value_info("r", elem, c_shape)],
        [h.make_tensor_value_info("y", elem, list(np.broadcast_shapes(tuple(shape), tuple(c_shape))))],
        [c],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=9)
    return bytes(m.SerializeToString())


# Tame enough that onnxruntime's results stay close (Exp's rounding differs between libraries; a chaotic chain
# would amplify it), and every operator of the in-place table.
_FLOAT_OPS = [
    ("Add", "v,c"),
    ("Relu", ""),
    ("Mul", "c,v"),
    ("Sqrt", ""),
    ("Div", "v,r"),
    ("Sub", "r,v"),
    ("Neg", ""),
    ("Tanh", ""),
    ("Exp", ""),
    ("Mul", "v,v"),
    ("Abs", ""),
    ("Add", "v,r"),
    ("Reciprocal", ""),
    ("Log", ""),
]
_ROUNDING_OPS = [("Mul", "v,c"), ("Floor", ""), ("Add", "v,r"), ("Ceil", ""), ("Relu", "")]


def _steps(sess: onnxcore.Session) -> list[Any]:
    return [type(step[0]) for step in sess._plan.steps]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize(
    ("shape", "c_shape"),
    [([3, 5], [3, 5]), ([3, 5], [5]), ([2, 3, 5], [3, 1]), ([5], [3, 5]), ([4], [])],
    ids=["same", "bias", "inner", "grows", "scalar"],
)
@pytest.mark.parametrize("rounding", [False, True])
def test_a_chain_is_one_step_and_exact(dtype: Any, shape: list[int], c_shape: list[int], rounding: bool) -> None:
    data = _chain_model(dtype, shape, c_shape, _FLOAT_OPS + _ROUNDING_OPS if rounding else _FLOAT_OPS)
    sess = onnxcore.Session(data)
    # Add -> Relu is fused by an earlier rewrite (an in-place Relu); the rest is one step.
    assert ElementwiseChain in _steps(sess) and len(_steps(sess)) <= 2
    rng = np.random.default_rng(0)
    feeds = {"x": rng.uniform(-2, 2, shape).astype(dtype), "r": rng.uniform(0.5, 2, c_shape).astype(dtype)}
    feeds["x"].flat[0] = np.nan
    for _ in range(3):  # interpreted, then compiled
        (got,) = sess.run(None, feeds)
        _outs, values = sess.run(None, feeds, intermediates=True)
        np.testing.assert_array_equal(got, values["y"])  # bit for bit (NaN where NaN)
        assert got.dtype == dtype
    # Feeds untouched (nothing written into a caller's array).
    assert np.isnan(feeds["x"].flat[0])
    if rounding:
        return  # Floor and Ceil turn a last-place difference into a unit: compared with the graph as written only
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    tol = 2e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def test_integer_chain_runs_the_kernels_and_errors_name_the_node() -> None:
    ops = [("Add", "v,c"), ("Mul", "v,r"), ("Div", "v,r"), ("Neg", ""), ("Abs", "")]
    data = _chain_model(np.int32, [2, 3], [3], ops)
    sess = onnxcore.Session(data)
    assert _steps(sess) == [ElementwiseChain]
    feeds = {"x": np.array([[1, -7, 9], [2**30, 5, -3]], np.int32), "r": np.array([3, -2, 5], np.int32)}
    (got,) = sess.run(None, feeds)
    np.testing.assert_array_equal(got, sess.run(None, feeds, intermediates=True)[1]["y"])
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(got, ref.run(None, feeds)[0])
    with pytest.raises(EvaluationError, match="integer division by zero") as info:
        sess.run(None, {**feeds, "r": np.array([3, 0, 5], np.int32)})
    assert "fused with it at plan time" in str(info.value)
    assert (2, "Div", "") in info.value.fused_nodes  # type: ignore[attr-defined]


def test_an_intermediate_read_elsewhere_ends_the_chain() -> None:
    nodes = [
        h.make_node("Add", ["x", "x"], ["a"]),
        h.make_node("Exp", ["a"], ["b"]),
        h.make_node("Neg", ["b"], ["y"]),
        h.make_node("Sqrt", ["a"], ["z"]),
    ]
    vi = [h.make_tensor_value_info(n, TP.FLOAT, [4]) for n in ("x", "y", "z")]
    m = h.make_model(h.make_graph(nodes, "g", vi[:1], vi[1:]), opset_imports=[h.make_opsetid("", 18)])
    sess = onnxcore.Session(m.SerializeToString())
    x = np.array([0.5, 1.0, 2.0, 3.0], np.float32)
    y, z = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y, -np.exp(x + x))
    np.testing.assert_array_equal(z, np.sqrt(x + x))  # "a" was not overwritten by the chain after it
    assert _steps(sess).count(ElementwiseChain) == 1
