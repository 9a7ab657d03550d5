"""com.microsoft fused operators (FusedConv, NhwcConv, NhwcFusedConv, FusedGemm, FusedMatMul) against onnxruntime
1.31 (CPU), per operator over shapes, attributes and optional inputs; and models saved by onnxruntime with its
optimized graph (basic and extended levels).

Float outputs: onnxruntime's convolutions and GEMMs sum in their own order and its MLAS tanh/logistic are
approximations, so the tolerance is a few float32 units of the output's magnitude (rtol 1e-5, atol 1e-5).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from onnxcore.errors import OnnxCoreError
from tests.kernels.contrib.ms_node import both, ort_node, ours

F32 = np.float32
TOL = {"rtol": 1e-5, "atol": 1e-5}

CONV_ACTS: list[tuple[str | None, list[float] | None]] = [
    (None, None),
    ("Relu", None),
    ("Tanh", None),
    ("Sigmoid", None),
    ("LeakyRelu", [0.2]),
    ("Clip", [-0.5, 0.5]),
    ("HardSigmoid", [0.3, 0.4]),
]

CONV_GEOMETRY: list[dict[str, Any]] = [
    {},
    {"group": 2, "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"dilations": [2, 1], "pads": [0, 1, 2, 0]},
    {"auto_pad": "SAME_UPPER", "strides": [2, 1]},
]


def _act_attrs(act: str | None, params: list[float] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if act:
        out["activation"] = act
    if params:
        out["activation_params"] = params
    return out


@pytest.mark.parametrize(("act", "params"), CONV_ACTS)
@pytest.mark.parametrize("geometry", CONV_GEOMETRY)
@pytest.mark.parametrize("with_z", [False, True])
def test_fused_conv(act: str | None, params: list[float] | None, geometry: dict[str, Any], with_z: bool) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 9, 8)).astype(F32)
    w = rng.standard_normal((6, 4 // geometry.get("group", 1), 3, 3)).astype(F32)
    b = rng.standard_normal(6).astype(F32)
    attrs = {**geometry, **_act_attrs(act, params)}
    y_shape = ort_node("FusedConv", [x, w, b], attrs).shape
    z = rng.standard_normal(y_shape).astype(F32) if with_z else None
    for inputs in ([x, w, b, z], [x, w, None, z] if with_z else [x, w]):
        expected, actual = both("FusedConv", inputs, attrs)
        np.testing.assert_allclose(actual, expected, **TOL)


def test_fused_conv_1d_and_3d() -> None:
    rng = np.random.default_rng(1)
    for x_shape, w_shape in (((2, 3, 11), (4, 3, 3)), ((1, 2, 5, 6, 4), (3, 2, 2, 3, 2))):
        x, w = rng.standard_normal(x_shape).astype(F32), rng.standard_normal(w_shape).astype(F32)
        expected, actual = both("FusedConv", [x, w], {"activation": "Relu"})
        np.testing.assert_allclose(actual, expected, **TOL)


@pytest.mark.parametrize(("act", "params"), [("LeakyRelu", None), ("Clip", [0.5]), ("Elu", [1.0])])
def test_fused_conv_refuses_what_onnxruntime_refuses(act: str, params: list[float] | None) -> None:
    """A parameterized activation without all its parameters, or one FusedConv does not fuse."""
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((1, 2, 5, 5)).astype(F32), rng.standard_normal((2, 2, 3, 3)).astype(F32)
    attrs = _act_attrs(act, params)
    with pytest.raises(Exception, match="ONNXRuntimeError"):
        ort_node("FusedConv", [x, w], attrs)
    with pytest.raises(OnnxCoreError, match="activation"):
        ours("FusedConv", [x, w], attrs)


@pytest.mark.parametrize("geometry", CONV_GEOMETRY)
@pytest.mark.parametrize(("act", "params"), [(None, None), ("Relu", None), ("LeakyRelu", [0.1])])
def test_nhwc_conv_is_conv_channels_last(geometry: dict[str, Any], act: str | None, params: list[float] | None) -> None:
    """onnxruntime's CPU provider has no NhwcConv/NhwcFusedConv kernel (GPU only): the reference is its Conv and
    FusedConv on the transposed operands."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 9, 8)).astype(F32)
    w = rng.standard_normal((6, 4 // geometry.get("group", 1), 3, 3)).astype(F32)
    b = rng.standard_normal(6).astype(F32)
    last = (0, 2, 3, 1)
    xn, wn = np.ascontiguousarray(x.transpose(last)), np.ascontiguousarray(w.transpose(last))
    attrs = {**geometry, **_act_attrs(act, params)}
    expected = ort_node("FusedConv", [x, w, b], attrs).transpose(last)
    z = rng.standard_normal(expected.shape).astype(F32)
    np.testing.assert_allclose(ours("NhwcFusedConv", [xn, wn, b], attrs), expected, **TOL)
    with_z = ort_node("FusedConv", [x, w, b, np.ascontiguousarray(z.transpose(0, 3, 1, 2))], attrs).transpose(last)
    np.testing.assert_allclose(ours("NhwcFusedConv", [xn, wn, b, z], attrs), with_z, **TOL)
    if act is None:
        np.testing.assert_allclose(ours("NhwcConv", [xn, wn, b], geometry), expected, **TOL)
        plain = ort_node("Conv", [x, w], geometry, domain="").transpose(last)
        np.testing.assert_allclose(ours("NhwcConv", [xn, wn], geometry), plain, **TOL)


GEMM_ACTS: list[tuple[str, dict[str, float]]] = [
    ("Relu", {}),
    ("Tanh", {}),
    ("Sigmoid", {}),
    ("Softsign", {}),
    ("LeakyRelu", {"activation_alpha": 0.2}),
    ("HardSigmoid", {"activation_alpha": 0.3, "activation_beta": 0.6}),
    ("Elu", {"activation_alpha": 0.7}),
    ("Selu", {"activation_alpha": 1.2, "activation_gamma": 0.9}),
    ("ThresholdedRelu", {"activation_alpha": 0.3}),
    ("ScaledTanh", {"activation_alpha": 2.0, "activation_beta": 0.5}),
    ("ParametricSoftplus", {"activation_alpha": 2.0, "activation_beta": 0.5}),
]


@pytest.mark.parametrize(("act", "params"), GEMM_ACTS)
@pytest.mark.parametrize(("trans_a", "trans_b"), [(0, 0), (1, 1)])
@pytest.mark.parametrize("c_shape", [None, (3,), (5, 1), (5, 3), ()])
def test_fused_gemm(act: str, params: dict[str, float], trans_a: int, trans_b: int, c_shape: Any) -> None:
    rng = np.random.default_rng(4)
    a = rng.standard_normal((7, 5) if trans_a else (5, 7)).astype(F32)
    b = rng.standard_normal((3, 7) if trans_b else (7, 3)).astype(F32)
    c = None if c_shape is None else rng.standard_normal(c_shape).astype(F32)
    attrs = {"activation": act, "alpha": 0.7, "beta": 0.3, "transA": trans_a, "transB": trans_b, **params}
    expected, actual = both("FusedGemm", [a, b, c], attrs)
    np.testing.assert_allclose(actual, expected, **TOL)


@pytest.mark.parametrize(("act", "params"), [("LeakyRelu", {}), ("Elu", {}), ("Clip", {}), ("HardSigmoid", {})])
def test_fused_gemm_refuses_what_onnxruntime_refuses(act: str, params: dict[str, float]) -> None:
    a = np.ones((2, 3), F32)
    with pytest.raises(Exception, match="ONNXRuntimeError"):
        ort_node("FusedGemm", [a, a.T], {"activation": act, **params})
    with pytest.raises(OnnxCoreError, match="activation"):
        ours("FusedGemm", [a, a.T], {"activation": act, **params})


MATMUL_CASES: list[tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ((2, 3, 4, 5), (2, 3, 5, 6), {}),
    ((2, 3, 4, 5), (2, 3, 6, 5), {"transB": 1}),
    ((2, 3, 5, 4), (5, 6), {"transA": 1, "alpha": 0.5}),
    ((5, 4), (2, 5, 6), {"transA": 1, "transB": 0}),
    ((4, 2, 3, 5), (2, 3, 5, 6), {"transBatchA": 1}),
    ((5, 2, 3, 4), (2, 3, 5, 6), {"transBatchA": 1, "transA": 1}),
    ((2, 3, 5), (5, 2, 6), {"transBatchB": 1}),
    ((2, 3, 5), (6, 2, 5), {"transBatchB": 1, "transB": 1}),
    ((4, 2, 3, 5), (5, 2, 3, 6), {"transBatchA": 1, "transBatchB": 1, "alpha": 2.0}),
    ((5,), (5, 3), {}),
    ((3, 5), (5,), {"alpha": -1.5}),
]


@pytest.mark.parametrize(("sa", "sb", "attrs"), MATMUL_CASES)
@pytest.mark.parametrize("dt", [np.float32, np.float16, np.float64])
def test_fused_matmul(sa: tuple[int, ...], sb: tuple[int, ...], attrs: dict[str, Any], dt: Any) -> None:
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(sa).astype(dt), rng.standard_normal(sb).astype(dt)
    try:
        expected = ort_node("FusedMatMul", [a, b], attrs)
    except Exception as e:  # onnxruntime's CPU provider has no kernel for this type
        if "NOT_IMPLEMENTED" in str(e):
            pytest.skip(f"onnxruntime has no FusedMatMul kernel for {np.dtype(dt)}")
        raise
    actual = ours("FusedMatMul", [a, b], attrs)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    tol = {"rtol": 2e-3, "atol": 2e-3} if dt == np.float16 else TOL
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), **tol)


# --- models saved by onnxruntime with its optimized graph --------------------------------------------------------

MODELS = {"cnn": ("cnn_float", (2, 3, 16, 16)), "mlp_attention": ("mlp_attention_float", (2, 8, 32))}


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("level", ["basic", "extended"])
def test_ort_optimized_models(name: str, level: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from tests.kernels.contrib import ms_models

    maker, shape = MODELS[name]
    src = getattr(ms_models, maker)(tmp_path)
    path = ms_models.ort_optimized(src, tmp_path / f"{level}.onnx", level)
    ops = ms_models.op_types(path)
    if level == "extended":
        fused = {"cnn": {"com.microsoft::FusedConv", "com.microsoft::FusedGemm"},
                 "mlp_attention": {"com.microsoft::FusedMatMul"}}[name]  # fmt: skip
        assert fused <= set(ops), ops
    expected, actual = ms_models.run_both(path, shape)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


# --- shape rules (infer/shape_ops/contrib: quantized, fused, matmul_nbits) agree with the kernels ---------------

SHAPE_CASES: list[tuple[str, list[tuple[int, ...] | None], dict[str, Any]]] = [
    ("FusedConv", [(2, 4, 9, 8), (6, 2, 3, 3), (6,)], {"group": 2, "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ("NhwcConv", [(2, 9, 8, 4), (6, 3, 3, 2), (6,)], {"group": 2, "auto_pad": "SAME_UPPER", "strides": [2, 1]}),
    ("FusedGemm", [(7, 5), (3, 7)], {"activation": "Relu", "transA": 1, "transB": 1}),
    ("FusedMatMul", [(4, 2, 3, 5), (5, 2, 3, 6)], {"transBatchA": 1, "transBatchB": 1}),
    ("FusedMatMul", [(2, 3, 5, 4), (5, 6)], {"transA": 1}),
]


@pytest.mark.parametrize(("op", "shapes", "attrs"), SHAPE_CASES)
def test_shape_rules_match_kernels(op: str, shapes: list[tuple[int, ...] | None], attrs: dict[str, Any]) -> None:
    """The rules apply once the com.microsoft definitions exist (issue 28, another part); here they are called
    directly on the node."""
    from onnxcore.build import helper
    from onnxcore.infer import shape_ops
    from onnxcore.infer.shape_core import SHAPE_RULES, ShapeContext

    shape_ops.load_all()  # inference imports rule families as it meets their operators; the rule is read directly

    rng = np.random.default_rng(6)
    arrays = [rng.standard_normal(s).astype(F32) for s in shapes if s is not None]
    node = helper.make_node(op, [f"i{k}" for k in range(len(arrays))], ["y"], domain="com.microsoft", **attrs)
    ctx = ShapeContext(
        node, 1, [a.shape for a in arrays], [None] * len(arrays), {a.name: a for a in node.attribute}, None
    )
    (rule_shape,) = SHAPE_RULES[("com.microsoft", op)](ctx)
    assert rule_shape == ours(op, arrays, attrs).shape
