"""The plan's fused kernels (``onnxcore.kernels.fused``, domain ``onnxcore.fused``) run alone through
``kernels.run``, each against the nodes it stands for evaluated by their own kernels (issue 37).

The plan-level evidence that a fused step gives the graph's values bit for bit is in the runtime tests
(``tests/runtime/test_patterns.py``, ``test_rows.py``, ``test_rotary.py``, ``test_optimize.py``, ...); here each
kernel is called on its own, as any kernel can be.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h

import onnxcore
from onnxcore import kernels
from onnxcore.errors import EvaluationError
from onnxcore.kernels import registry
from onnxcore.kernels.fused import FUSED_DOMAIN
from onnxcore.kernels.fused.affine import AffineChain
from onnxcore.kernels.fused.common import default_kernel
from onnxcore.kernels.fused.conv import preactivated_weights
from onnxcore.kernels.fused.scan import BodyOp

RNG = np.random.default_rng(37)


def _f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _run(op: str, *inputs: Any, **attributes: Any) -> tuple[Any, ...]:
    return kernels.run(op, 1, *inputs, domain=FUSED_DOMAIN, **attributes)


def _one(op: str, version: int, *inputs: Any, domain: str = "", **attributes: Any) -> Any:
    return kernels.run(op, version, *inputs, domain=domain, **attributes)[0]


def _exact(got: Any, want: Any) -> None:
    np.testing.assert_array_equal(got, want)
    assert np.asarray(got).dtype == np.asarray(want).dtype


def _close(got: Any, want: Any) -> None:
    # The products of BLAS (a Conv's columns, the fused Conv1d's one product) and the compiled loops add in their
    # own order: the rounding Clause 11.4 admits.
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    assert np.asarray(got).dtype == np.asarray(want).dtype


def _reshape_view() -> None:
    x, shape = _f32(2, 3, 4), np.array([6, 4], np.int64)
    _exact(_run("ReshapeView", x, shape)[0], _one("Reshape", 21, x, shape))


def _expand_view() -> None:
    x, shape = _f32(1, 4), np.array([3, 4], np.int64)
    _exact(_run("ExpandView", x, shape)[0], _one("Expand", 13, x, shape))


def _slice_view() -> None:
    x = _f32(4, 6)
    bounds = (np.array([1]), np.array([5]), np.array([1]), np.array([2]))
    _exact(_run("SliceView", x, *bounds)[0], _one("Slice", 13, x, *bounds))


def _take_columns() -> None:
    x, idx = _f32(3, 5), np.array([4, 0, 2], np.int64)
    _exact(_run("TakeColumns", x, idx)[0], _one("ArrayFeatureExtractor", 1, x, idx, domain="ai.onnx.ml"))


def _gather_positions() -> None:
    x, idx = _f32(5, 3), np.array([4, 0, 4], np.int64)
    _exact(_run("GatherPositions", x, idx)[0], _one("Gather", 13, x, idx))


def _transpose_view() -> None:
    x = _f32(2, 3, 4)
    _exact(_run("TransposeView", x, perm=[2, 0, 1])[0], _one("Transpose", 21, x, perm=[2, 0, 1]))


def _same_type_cast() -> None:
    x = _f32(3)
    assert _run("SameTypeCast", x, to=1)[0] is x
    i = np.arange(3, dtype=np.int64)
    _exact(_run("SameTypeCast", i, to=1)[0], _one("Cast", 21, i, to=1))


def _affine_chain() -> None:
    x, c, d = _f32(2, 3, 4), _f32(4), _f32(4)
    got = _run("AffineChain", x, ops=[("mul", c), ("add", d)], relu=True)[0]
    _close(got, np.maximum(x * c + d, 0))


def _elementwise_graph() -> None:
    # (a + b) -> Relu -> * c, then * Sigmoid of it (a tree: the product reads the value twice), then Where.
    a, b, c, cond = _f32(3, 4), _f32(3, 4), _f32(4), RNG.random((3, 4)) < 0.5
    program = [
        (default_kernel("Add"), np.add, (0, 1), {}, True),
        (default_kernel("Relu"), np.maximum, (-1,), {}, True),
        (default_kernel("Mul"), np.multiply, (-2, 2), {}, True),
        (default_kernel("Sigmoid"), None, (-3,), {}, False),
        (default_kernel("Mul"), np.multiply, (-3, -4), {}, True),
        (default_kernel("Where"), None, (3, -5, 0), {}, False),
    ]
    got = _run("ElementwiseGraph", a, b, c, cond, program=program)[0]
    v = _one("Mul", 14, _one("Relu", 14, _one("Add", 14, a, b)), c)
    _exact(got, _one("Where", 16, cond, _one("Mul", 14, v, _one("Sigmoid", 13, v)), a))


def _with_relu() -> None:
    x, w = _f32(1, 2, 5, 5), _f32(3, 2, 3, 3)
    _exact(_run("WithRelu", x, w, pads=[1, 1, 1, 1])[0], _one("Relu", 14, _one("Conv", 22, x, w, pads=[1, 1, 1, 1])))


def _conv_activation() -> None:
    x, w, b = _f32(1, 2, 5, 5), _f32(3, 2, 3, 3), _f32(3)
    conv = _one("Conv", 22, x, w, b)
    _close(_run("ConvActivation", x, w, b, activation="SiLU")[0], conv / (1 + np.exp(-conv)))
    _close(_run("ConvActivation", x, w, b, activation="GELU")[0], _one("Gelu", 20, conv))
    _close(_run("ConvActivation", x, w, b, activation="HardSwish")[0], _one("HardSwish", 22, conv))


def _conv1d_taps() -> None:
    x, w, b = _f32(2, 3, 10), _f32(4, 3, 3), _f32(4)
    got = _run("Conv1dTaps", x, w, b, pads=[1, 2], strides=[2])[0]
    _close(got, _one("Conv", 22, x, w, b, pads=[1, 2], strides=[2]))


def _preactivated_conv() -> None:
    x, w = _f32(1, 4, 5, 5), _f32(3, 4, 1, 1)
    a, s = _f32(1, 4, 1, 1), _f32(1, 4, 1, 1)
    chain = AffineChain(None, [("mul", a), ("add", s)], True, [])
    folded = preactivated_weights(chain, w, None, 1)
    assert folded is not None
    got = _run("PreActivatedConv", x, chain=chain, conv_kw={}, folded=folded, w=w)[0]
    _close(got, _one("Conv", 22, np.maximum(x * a + s, 0), w))


def _projected_pool() -> None:
    x, w, b = _f32(1, 6, 6, 6), _f32(2, 6, 1, 1), _f32(2)
    pool_kw = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}
    got = _run("ProjectedPool", x, w, b, pool_kw=pool_kw)[0]
    _close(got, _one("Conv", 22, _one("AveragePool", 22, x, **pool_kw), w, b))


def _winograd_conv() -> None:
    x, w, b = _f32(1, 16, 12, 12), _f32(16, 16, 3, 3), _f32(16)
    got = _run("WinogradConv", x, w, b, pads=[1, 1, 1, 1])[0]
    # Winograd's transforms add a rounding error of their own, stated in the conformance statement.
    np.testing.assert_allclose(got, _one("Conv", 22, x, w, b, pads=[1, 1, 1, 1]), rtol=1e-4, atol=1e-4)


def _measured_conv() -> None:
    x, w, b = _f32(1, 8, 10, 10), _f32(6, 8, 3, 3), _f32(6)
    got = _run("MeasuredConv", x, w, b, pads=[1, 1, 1, 1], strides=[2, 2])[0]
    # Each path sums in its own order: float32 rounding apart.
    np.testing.assert_allclose(got, _one("Conv", 22, x, w, b, pads=[1, 1, 1, 1], strides=[2, 2]), rtol=1e-5, atol=1e-5)


def _hard_sigmoid_mul() -> None:
    x = _f32(3, 8) * 4
    got = _run("HardSigmoidMul", x, alpha=1 / 6, beta=0.5)[0]
    _exact(got, _one("Mul", 14, x, _one("HardSigmoid", 22, x, alpha=1 / 6, beta=0.5)))


def _gelu_pattern() -> None:
    x = _f32(3, 8)
    _exact(_run("GeluPattern", x)[0], _one("Gelu", 20, x))
    _close(_run("GeluPattern", x, approximate="tanh")[0], _one("Gelu", 20, x, approximate="tanh"))


def _silu_pattern() -> None:
    x = _f32(3, 8)
    _close(_run("SiLUPattern", x)[0], x / (1 + np.exp(-x)))


def _layer_norm_pattern() -> None:
    x, w, b = _f32(4, 8), _f32(8), _f32(8)
    got = _run("LayerNormPattern", x, epsilon=1e-5, dtype=np.dtype(np.float32), scale=w, bias=b)[0]
    _close(got, _one("LayerNormalization", 17, x, w, b))


def _rms_norm_pattern() -> None:
    x, w = _f32(4, 8), _f32(8)
    got = _run("RMSNormPattern", x, epsilon=1e-6, dtype=np.dtype(np.float32), scale=w)[0]
    _close(got, _one("RMSNormalization", 23, x, w, epsilon=1e-6))


def _layer_norm_rows() -> None:
    x, w, b = _f32(4, 8), _f32(8), _f32(8)
    _exact(_run("LayerNormRows", x, w, b)[0], _one("LayerNormalization", 17, x, w, b))


def _rms_norm_rows() -> None:
    x, w = _f32(4, 8), _f32(8)
    _exact(_run("RmsNormRows", x, w, epsilon=1e-6)[0], _one("RMSNormalization", 23, x, w, epsilon=1e-6))


def _attention_pattern() -> None:
    q, k, v, mask = _f32(1, 2, 3, 4), _f32(1, 2, 4, 3), _f32(1, 2, 3, 4), _f32(1, 1, 3, 3)
    got = _run("AttentionPattern", q, k, mask, v, scale=("Div", 2.0), masked=True)[0]
    probs = _one("Softmax", 13, _one("Add", 14, _one("Div", 14, _one("MatMul", 13, q, k), np.float32(2)), mask))
    _close(got, _one("MatMul", 13, probs, v))


def _linear() -> None:
    x, w, b = _f32(2, 3, 4), _f32(4, 5), _f32(5)
    _close(_run("Linear", x, weight=w, bias=b)[0], _one("Add", 14, _one("MatMul", 13, x, w), b))


def _reshaped_linear() -> None:
    x, w, b = _f32(2, 3, 4), _f32(4, 5), _f32(5)
    reshape, gemm = default_kernel("Reshape"), default_kernel("Gemm")
    chain = [
        (reshape, ["x", np.array([-1, 4])], {}, ["rows"]),
        (gemm, ["rows", w, b], {}, ["y2"]),
        (reshape, ["y2", np.array([2, 3, 5])], {}, ["y"]),
    ]
    want = _one("Reshape", 21, _one("Gemm", 13, _one("Reshape", 21, x, np.array([-1, 4])), w, b), np.array([2, 3, 5]))
    _exact(_run("ReshapedLinear", x, weight=w, bias=b, chain=chain)[0], want)


def _rotate_half() -> None:
    x = _f32(2, 8)
    want = _one("Concat", 13, _one("Neg", 13, x[:, 4:]), x[:, :4], axis=-1)
    _exact(_run("RotateHalf", x)[0], want)


def _rotary() -> None:
    x, cos, sin = _f32(2, 8), _f32(2, 8), _f32(2, 8)
    half = _one("Concat", 13, _one("Neg", 13, x[:, 4:]), x[:, :4], axis=-1)
    want = _one("Add", 14, _one("Mul", 14, x, cos), _one("Mul", 14, half, sin))
    _exact(_run("Rotary", x, cos, sin)[0], want)


def _batched_scan() -> None:
    # A Scan body (an unchanged state x, a scanned row r: ReduceSumSquare(x - r) over axis 1) against its nodes'
    # kernels iteration by iteration.
    x, rows = _f32(5, 3), _f32(7, 3)
    sub = registry.lookup("", "Sub", 14)
    assert sub is not None
    ops = [
        BodyOp("Sub", ("x", "r"), "d", sub.fn, {}),
        BodyOp("ReduceSumSquare", ("d",), "y", sub.fn, {"keepdims": 0}, (1,)),
    ]

    def as_written(*args: Any, **kw: Any) -> tuple[Any, ...]:
        raise AssertionError("the batched pass takes these inputs")

    got = _run("BatchedScan", x, rows, n_state=1, body_inputs=["x", "r"], body_outputs=["y"], outer=[],
               body_constants={}, ops=ops, fallback=as_written, fallback_kw={})  # fmt: skip
    want = np.stack([_one("ReduceSumSquare", 13, _one("Sub", 14, x, r), axes=[1], keepdims=0) for r in rows])
    _exact(got[0], x)
    _exact(got[1], want)


def _tree_ensembles() -> None:
    # Two one-tree regressors (a stump on feature 0, one on feature 1) walked together: each member's output as its
    # own kernel gives it.
    def stump(feature: int, threshold: float, low: float, high: float) -> dict[str, Any]:
        return {
            "nodes_treeids": [0, 0, 0], "nodes_nodeids": [0, 1, 2], "nodes_featureids": [feature, 0, 0],
            "nodes_modes": ["BRANCH_LEQ", "LEAF", "LEAF"], "nodes_values": [threshold, 0.0, 0.0],
            "nodes_truenodeids": [1, 0, 0], "nodes_falsenodeids": [2, 0, 0], "target_treeids": [0, 0],
            "target_nodeids": [1, 2], "target_ids": [0, 0], "target_weights": [low, high], "n_targets": 1,
        }  # fmt: skip

    members = [stump(0, 0.5, -1.0, 2.0), stump(1, -0.25, 3.0, 0.5)]
    kdef = registry.lookup("ai.onnx.ml", "TreeEnsembleRegressor", 3)
    assert kdef is not None
    steps = [registry.prepared_function(registry.prepared_call(kdef, m)) for m in members]
    x = _f32(6, 2)
    got = _run("TreeEnsembles", x, members=steps, counts=[1, 1])
    for g, m in zip(got, members):
        _exact(g, _one("TreeEnsembleRegressor", 3, x, domain="ai.onnx.ml", **m))


def _lanes() -> None:
    # Five lanes of Mul: each its own input (gathered) times its own constant (stacked, of a lower rank).
    mul = registry.lookup("", "Mul", 14)
    assert mul is not None
    xs, cs = [_f32(2, 3) for _ in range(5)], [_f32(3) for _ in range(5)]
    got = _run("Lanes", *xs, kind="map", operator="Mul", fn=mul.fn, attrs={}, specs=[("gather", None), ("stacked", cs)],
               lanes=[(mul.fn, {})] * 5, views=[1, 4])  # fmt: skip
    stacked, one, four = got
    for i in range(5):
        _exact(stacked[i], _one("Mul", 14, xs[i], cs[i]))
    _exact(one, stacked[1])
    _exact(four, stacked[4])


def _lane_fold() -> None:
    total = registry.lookup("", "Sum", 13)
    assert total is not None
    value, order = _f32(4, 2, 3), [3, 1, 0, 2]
    got = _run("LaneFold", value, ufunc=np.add, order=order, kernel=total.fn, attrs={})[0]
    _exact(got, _one("Sum", 13, *[value[i] for i in order]))


def _lane_concat() -> None:
    concat = registry.lookup("", "Concat", 13)
    assert concat is not None
    a, b = _f32(3, 2, 4), _f32(2, 1)
    runs = [[0, 1], None, [2, 0]]
    got = _run("LaneConcat", a, b, a, runs=runs, axis=-1, kernel=concat.fn, attrs={"axis": -1})[0]
    _exact(got, _one("Concat", 13, a[0], a[1], b, a[2], a[0], axis=-1))


CASES: dict[str, Callable[[], None]] = {
    "ReshapeView": _reshape_view,
    "ExpandView": _expand_view,
    "SliceView": _slice_view,
    "TakeColumns": _take_columns,
    "GatherPositions": _gather_positions,
    "TransposeView": _transpose_view,
    "SameTypeCast": _same_type_cast,
    "AffineChain": _affine_chain,
    "ElementwiseGraph": _elementwise_graph,
    "WithRelu": _with_relu,
    "ConvActivation": _conv_activation,
    "Conv1dTaps": _conv1d_taps,
    "PreActivatedConv": _preactivated_conv,
    "ProjectedPool": _projected_pool,
    "WinogradConv": _winograd_conv,
    "MeasuredConv": _measured_conv,
    "HardSigmoidMul": _hard_sigmoid_mul,
    "GeluPattern": _gelu_pattern,
    "SiLUPattern": _silu_pattern,
    "LayerNormPattern": _layer_norm_pattern,
    "RMSNormPattern": _rms_norm_pattern,
    "LayerNormRows": _layer_norm_rows,
    "RmsNormRows": _rms_norm_rows,
    "AttentionPattern": _attention_pattern,
    "Linear": _linear,
    "ReshapedLinear": _reshaped_linear,
    "RotateHalf": _rotate_half,
    "Rotary": _rotary,
    "BatchedScan": _batched_scan,
    "TreeEnsembles": _tree_ensembles,
    "Lanes": _lanes,
    "LaneFold": _lane_fold,
    "LaneConcat": _lane_concat,
}


@pytest.mark.parametrize("op", sorted(CASES))
def test_fused_kernel_runs_alone(op: str) -> None:
    CASES[op]()


def test_every_fused_kernel_is_run_alone() -> None:
    """Each registered kernel of the domain has its case above (a new fused kernel adds one)."""
    fused = {k.op_type for k in registry.registered() if k.domain == FUSED_DOMAIN}
    assert fused == set(CASES)
    assert all(k.prepare is not None and k.prepare_constants for k in registry.registered() if k.domain == FUSED_DOMAIN)


def test_a_pattern_without_its_nodes_refuses_what_it_does_not_take() -> None:
    """Run alone, a pattern kernel has no nodes as written: an input its fused form does not take is refused, not
    guessed at (Clause 4.4)."""
    x = np.arange(4, dtype=np.int64)
    with pytest.raises(Exception, match="does not take these inputs"):
        _run("SiLUPattern", x)


def test_a_models_node_of_the_private_domain_is_bound_and_refused_by_its_kernel() -> None:
    """The fused kernels are bound by the custom-domain rule (Clause 16.1), a model's node too; one without the
    attributes its kernel needs runs the kernel, which refuses it at the node (no crash while binding)."""
    node = h.make_node("Linear", ["x"], ["y"], domain=FUSED_DOMAIN)
    g = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [2, 4])],
        [h.make_tensor_value_info("y", TP.FLOAT, [2, 4])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid(FUSED_DOMAIN, 1)])
    s = onnxcore.Session(m.SerializeToString(), check=False)
    with pytest.raises(EvaluationError, match="Linear"):
        s.run(None, {"x": np.ones((2, 4), np.float32)})


def test_same_type_cast_takes_the_kernels_route_and_calls_another_kernel() -> None:
    """A Cast step whose kernel is a built-in Cast kernel computes another input type by the route that kernel takes
    (the kernel's values: cast_array's, NaN and out-of-range floats left to it); a custom Cast kernel is always
    called."""
    from onnxcore.kernels.fused.shape import SameTypeCast
    from onnxcore.kernels.tensor import cast_6
    from onnxcore.types.convert import cast_array

    for to, dt in ((1, np.float32), (7, np.int64), (9, np.bool_), (6, np.int32)):
        step = SameTypeCast(cast_6, np.dtype(dt))
        for x in (
            np.array([[True, False]]),
            np.array([[3, -2]], np.int32),
            np.array([1.5, -2.5, 0.0], np.float64),
            np.array([np.nan, 1e30, -1.0], np.float32),  # (declined by the float -> integer route)
        ):
            for _ in range(2):  # the route looked up, then read from the step's table
                got = step(x, to=to)
                want = cast_array(x, to)
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got, want)
    seen: list[Any] = []

    def custom(x: Any, *, to: int) -> Any:
        seen.append(x.dtype)
        return np.zeros_like(x, np.float32)

    step = SameTypeCast(custom, np.dtype(np.float32))
    assert step(np.array([1, 2]), to=1).tolist() == [0.0, 0.0] and seen == [np.dtype(np.int64)]
