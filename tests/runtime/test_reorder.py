"""AveragePool -> 1x1 Conv run projection first (runtime/optimize/reorder.py, Clause 8.2).

The rewrite is exact in real arithmetic; its float32 results are compared with onnxruntime and with the
node-by-node run (``intermediates=True``, the order as written) on random weights, and the pairs it must leave
alone are checked to keep their own steps.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h

import onnxcore
from onnxcore.kernels.fused.conv import ProjectedPool


def _model(
    c: int,
    m: int,
    hw: int,
    pool: dict[str, Any],
    *,
    conv: dict[str, Any] | None = None,
    bias: bool = True,
    relu: bool = True,
    k: int = 1,
    extra_output: bool = False,
    seed: int = 0,
) -> bytes:
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((m, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32)
    inits = [h.make_tensor("w", TP.FLOAT, list(w.shape), w.ravel())]
    conv_inputs = ["p", "w"]
    if bias:
        inits.append(h.make_tensor("b", TP.FLOAT, [m], b))
        conv_inputs.append("b")
    nodes = [
        h.make_node("AveragePool", ["x"], ["p"], **pool),
        h.make_node("Conv", conv_inputs, ["c" if relu else "y"], **(conv or {})),
    ]
    if relu:
        nodes.append(h.make_node("Relu", ["c"], ["y"]))
    outputs = [h.make_tensor_value_info("y", TP.FLOAT, ["n", "m", "h", "w"])]
    if extra_output:
        outputs.append(h.make_tensor_value_info("p", TP.FLOAT, ["n", "c", "h", "w"]))
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, [1, c, hw, hw])], outputs, inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 19)], ir_version=9).SerializeToString()


def _projected(s: onnxcore.Session) -> bool:
    return any(isinstance(bn.call, ProjectedPool) for bn in s._plan.info)


SAME_SIZE = [
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER"},
    {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"},
    {"kernel_shape": [3, 5], "pads": [0, 4, 2, 0]},  # asymmetric, each axis's pads summing to k - 1
    {"kernel_shape": [3, 3], "pads": [2, 2, 2, 2], "dilations": [2, 2]},
]


@pytest.mark.parametrize("pool", SAME_SIZE, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
@pytest.mark.parametrize(("bias", "relu"), [(True, True), (False, True), (True, False)])
def test_projection_runs_first_and_matches_onnxruntime(pool: dict[str, Any], bias: bool, relu: bool) -> None:
    ort = pytest.importorskip("onnxruntime")
    data = _model(48, 16, 13, pool, bias=bias, relu=relu)
    s = onnxcore.Session(data)
    assert _projected(s) and len(s._plan.info) == 1
    x = np.random.default_rng(1).standard_normal((1, 48, 13, 13)).astype(np.float32)
    (ours,) = s.run(None, {"x": x})
    (theirs,) = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    (as_written,), _ = s.run(None, {"x": x}, intermediates=True)
    assert ours.shape == theirs.shape == (1, 16, 13, 13) and ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours, as_written, rtol=1e-5, atol=1e-6)
    if relu:
        assert ours.min() == 0 and (ours > 0).any()


@pytest.mark.parametrize(
    ("case", "kwargs"),
    [
        ("strided pool", {"pool": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}}),
        ("pool shrinks the image", {"pool": {"kernel_shape": [3, 3]}}),
        ("widening conv", {"pool": SAME_SIZE[0], "m": 64}),
        ("3x3 conv", {"pool": SAME_SIZE[0], "k": 3, "conv": {"pads": [1, 1, 1, 1]}}),
        ("strided conv", {"pool": SAME_SIZE[0], "conv": {"strides": [2, 2]}}),
        ("pool output read elsewhere", {"pool": SAME_SIZE[0], "extra_output": True}),
    ],
)
def test_other_pairs_run_as_written(case: str, kwargs: dict[str, Any]) -> None:
    ort = pytest.importorskip("onnxruntime")
    args = {"c": 48, "m": 16, "hw": 13} | kwargs
    pool = args.pop("pool")
    data = _model(args.pop("c"), args.pop("m"), args.pop("hw"), pool, **args)
    s = onnxcore.Session(data)
    assert not _projected(s), case
    x = np.random.default_rng(2).standard_normal((1, 48, 13, 13)).astype(np.float32)
    ours = s.run(None, {"x": x})
    theirs = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_maxpool_is_not_reordered() -> None:
    """MaxPool does not commute with a channel projection: the pair runs as written."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((16, 48, 1, 1)).astype(np.float32)
    g = h.make_graph(
        [
            h.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            h.make_node("Conv", ["p", "w"], ["y"]),
        ],
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [1, 48, 13, 13])],
        [h.make_tensor_value_info("y", TP.FLOAT, ["n", "m", "h", "w"])],
        [h.make_tensor("w", TP.FLOAT, list(w.shape), w.ravel())],
    )
    s = onnxcore.Session(h.make_model(g, opset_imports=[h.make_opsetid("", 19)], ir_version=9).SerializeToString())
    assert not _projected(s)
    x = rng.standard_normal((1, 48, 13, 13)).astype(np.float32)
    (ours,), _ = s.run(None, {"x": x}, intermediates=True)
    np.testing.assert_array_equal(s.run(None, {"x": x})[0], ours)


def test_special_values_reach_the_same_outputs() -> None:
    """An infinity or NaN in the input reaches exactly the outputs it reaches in the order as written."""
    s = onnxcore.Session(_model(48, 16, 13, SAME_SIZE[0], relu=False))
    assert _projected(s)
    x = np.random.default_rng(4).standard_normal((1, 48, 13, 13)).astype(np.float32)
    x[0, 5, 3, 3] = np.inf
    x[0, 9, 10, 0] = np.nan
    (ours,) = s.run(None, {"x": x})
    (as_written,), _ = s.run(None, {"x": x}, intermediates=True)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(as_written))
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(as_written))
    finite = np.isfinite(as_written)
    assert 0 < finite.sum() < finite.size
    np.testing.assert_allclose(ours[finite], as_written[finite], rtol=1e-5, atol=1e-6)


def test_an_error_in_the_fused_step_names_the_pool_too() -> None:
    """A failure inside the reordered step names the Conv it replaced and the AveragePool folded into it."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 16, 1, 1)).astype(np.float32)
    nodes = [
        h.make_node("AveragePool", ["x"], ["p"], name="pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        h.make_node("Conv", ["p", "w"], ["y"], name="proj"),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, ["n", "c", "h", "w"])],
        [h.make_tensor_value_info("y", TP.FLOAT, ["n", "m", "h", "w"])],
        [h.make_tensor("w", TP.FLOAT, list(w.shape), w.ravel())],
    )
    s = onnxcore.Session(h.make_model(g, opset_imports=[h.make_opsetid("", 19)], ir_version=9).SerializeToString())
    assert _projected(s)
    with pytest.raises(onnxcore.EvaluationError) as info:
        s.run(None, {"x": np.zeros((1, 12, 8, 8), np.float32)})  # 12 channels where the weights take 16
    msg = str(info.value)
    assert "node 1 (Conv, name 'proj')" in msg and "node 0 (AveragePool, name 'pool')" in msg
    assert "intermediates=True" in msg
    assert info.value.fused_nodes == [(0, "AveragePool", "pool")]  # type: ignore[attr-defined]
