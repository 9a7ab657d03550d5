"""com.microsoft quantized operators against onnxruntime 1.31 (CPU): per operator over shapes, attributes, the
8-bit types and the optional inputs; and whole models quantized by onnxruntime.quantization.

Integer outputs must be equal element for element, except where the module text of
:mod:`onnxcore.kernels.contrib.quantized` says onnxruntime's float32 operation order can move a value lying
within a few units in the last place of a half: there at most one unit, on a small fraction of elements.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from onnxcore import kernels
from tests.kernels.contrib.ms_node import both, skip_if_ort_clips, u8s8_saturated

F32 = np.float32
TYPES = [np.uint8, np.int8]


def _ints(rng: np.random.Generator, dt: Any, shape: tuple[int, ...]) -> np.ndarray:
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, shape).astype(dt)


def _zp(rng: np.random.Generator, dt: Any) -> Any:
    info = np.iinfo(dt)
    return dt(rng.integers(info.min // 2, info.max // 2))


def _near_ties(expected: np.ndarray, actual: np.ndarray, *, fraction: float) -> None:
    """Equal, except at most one unit on at most ``fraction`` of the elements (see the module text)."""
    diff = np.abs(expected.astype(np.int64) - actual.astype(np.int64))
    assert diff.max(initial=0) <= 1
    assert (diff > 0).mean() <= fraction, f"{int((diff > 0).sum())} of {diff.size} differ"


# --- QLinearAdd / QLinearMul ------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((2, 3, 4), (4,)), ((3, 1, 5), (1, 6, 1)), ((), (2, 3))])
def test_qlinear_binary_random_scales(op: str, dt: Any, shapes: tuple[tuple[int, ...], ...]) -> None:
    rng = np.random.default_rng(abs(hash((op, str(dt), shapes))) % 2**32)
    for _ in range(5):
        a, b = _ints(rng, dt, shapes[0]), _ints(rng, dt, shapes[1])
        sa, sb, sc = (F32(rng.uniform(0.002, 0.2)) for _ in range(3))
        expected, actual = both(op, [a, sa, _zp(rng, dt), b, sb, _zp(rng, dt), sc, _zp(rng, dt)])
        _near_ties(expected, actual, fraction=0.01)


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_qlinear_binary_exact_ties(op: str, dt: Any) -> None:
    """Dyadic scales make exact halves: onnxruntime rounds value + zero point half to even (odd zero points)."""
    info = np.iinfo(dt)
    a = np.tile(np.arange(info.min, info.max + 1), 256).reshape(256, 256).astype(dt)
    for sa, sb, sc, zc in ((1, 1, 2, 7), (0.5, 1, 2, 3), (1, 0.25, 4, 0), (0.5, 0.5, 0.25, 5)):
        ins = [a, F32(sa), dt(3), a.T.copy(), F32(sb), dt(-1 if dt == np.int8 else 1), F32(sc), dt(zc)]
        expected, actual = both(op, ins)
        np.testing.assert_array_equal(actual, expected)


# --- table operators: QLinearSigmoid, QLinearLeakyRelu ---------------------------------------------------


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("scales", [(0.05, 1 / 256), (0.1, 0.03), (1.0, 2.0), (0.5, 1.0)])
@pytest.mark.parametrize("zero_points", [True, False])
def test_qlinear_sigmoid_leaky_relu(dt: Any, scales: tuple[float, float], zero_points: bool) -> None:
    info = np.iinfo(dt)
    x = np.arange(info.min, info.max + 1).astype(dt).reshape(4, 8, 8)
    # X's zero point left out (0); onnxruntime 1.31 aborts the process when the trailing Y_zero_point is.
    zx, zy = (dt(3), dt(7)) if zero_points else (None, dt(0))
    sx, sy = F32(scales[0]), F32(scales[1])
    expected, actual = both("QLinearSigmoid", [x, sx, zx, sy, zy])
    np.testing.assert_array_equal(actual, expected)
    for alpha in (0.01, 0.1, 0.5):
        expected, actual = both("QLinearLeakyRelu", [x, sx, zx, sy, zy], {"alpha": alpha})
        np.testing.assert_array_equal(actual, expected)
    expected, actual = both("QLinearLeakyRelu", [x, sx, zx, sy, zy])  # the default alpha
    np.testing.assert_array_equal(actual, expected)


# --- QLinearConcat ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_qlinear_concat(dt: Any, axis: int) -> None:
    rng = np.random.default_rng(3)
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    shapes = [tuple(s if i != axis % 3 else s + k for i, s in enumerate(sh)) for k, sh in enumerate(shapes)]
    ys, yz = F32(0.04), _zp(rng, dt)
    for same in (False, True):
        ins: list[Any] = [ys, yz]
        for k, sh in enumerate(shapes):
            scale, zp = (ys, yz) if same and k == 1 else (F32(rng.uniform(0.01, 0.1)), _zp(rng, dt))
            ins += [_ints(rng, dt, sh), scale, zp]
        ins += [_ints(rng, dt, shapes[0]), F32(0.08), yz]  # a tie-rich ratio (2.0), odd and even zero points
        expected, actual = both("QLinearConcat", ins, {"axis": axis})
        np.testing.assert_array_equal(actual, expected)


# --- pools and softmax -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("shape", [(2, 3, 7, 9), (1, 4, 2, 2), (2, 5, 6)])
def test_qlinear_global_average_pool(dt: Any, channels_last: int, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(4)
    for sx, sy in ((0.05, 0.03), (2.0, 1.0), (1.0, 2.0)):
        ins = [_ints(rng, dt, shape), F32(sx), _zp(rng, dt), F32(sy), dt(3)]
        expected, actual = both("QLinearGlobalAveragePool", ins, {"channels_last": channels_last})
        np.testing.assert_array_equal(actual, expected)


POOL_ATTRS: list[dict[str, Any]] = [
    {"kernel_shape": [3, 3]},
    {"kernel_shape": [2, 2], "strides": [2, 2]},
    {"kernel_shape": [3, 2], "pads": [1, 1, 1, 0], "strides": [2, 2], "count_include_pad": 1},
    {"kernel_shape": [3, 2], "pads": [1, 1, 1, 0], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 1]},
    {"kernel_shape": [2, 2], "strides": [2, 2], "channels_last": 1},
]


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("attrs", POOL_ATTRS)
def test_qlinear_average_pool(dt: Any, attrs: dict[str, Any]) -> None:
    rng = np.random.default_rng(5)
    for sx, sy, zy in ((0.05, 0.03, 7), (1.0, 2.0, 7), (0.5, 1.0, 4)):
        x = _ints(rng, dt, (2, 3, 8, 7))
        expected, actual = both("QLinearAveragePool", [x, F32(sx), dt(3), F32(sy), dt(zy)], attrs)
        # onnxruntime sums a window in its own float32 order: a near-tie may move by one.
        _near_ties(expected, actual, fraction=0.05)
    x = _ints(rng, dt, (1, 2, 6, 6))
    expected, actual = both("QLinearAveragePool", [x, F32(1.0), dt(0), F32(4.0), dt(5)], attrs)
    np.testing.assert_array_equal(actual, expected)  # exact quarters: the zero point is added before rounding


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize(("opset", "axis"), [(13, -1), (13, 1), (13, 0), (11, 1), (11, -1), (1, 2)])
def test_qlinear_softmax(dt: Any, opset: int, axis: int) -> None:
    rng = np.random.default_rng(6)
    info = np.iinfo(dt)
    for sx, sy, zy in ((0.05, 1 / 256, info.min), (0.1, 0.01, 3), (0.02, 1 / 16, 0)):
        x = _ints(rng, dt, (3, 4, 5))
        expected, actual = both("QLinearSoftmax", [x, F32(sx), _zp(rng, dt), F32(sy), dt(zy)],
                                {"opset": opset, "axis": axis})  # fmt: skip
        np.testing.assert_array_equal(actual, expected)
    ties = np.full((2, 32), 9, dt)  # 1/32 each: value/y_scale = 0.5 exactly
    expected, actual = both("QLinearSoftmax", [ties, F32(0.1), dt(0), F32(1 / 16), dt(3)], {"opset": opset})
    np.testing.assert_array_equal(actual, expected)


# --- QuantizeLinear / DequantizeLinear ---------------------------------------------------------------------


@pytest.mark.parametrize("dt", [np.uint8, np.int8, np.uint16, np.int16])
def test_quantize_dequantize_linear(dt: Any) -> None:
    rng = np.random.default_rng(8)
    x = (rng.standard_normal((3, 5, 16)) * 3).astype(F32)
    x[0, 0, :8] = np.arange(-4, 4) / 2  # exact halves
    small = dt in (np.uint8, np.int8)
    scale = F32(0.05 if small else 0.001)
    expected, actual = both("QuantizeLinear", [x, F32(0.5), dt(3)])
    np.testing.assert_array_equal(actual, expected)
    expected, actual = both("QuantizeLinear", [x, scale, dt(7)])
    np.testing.assert_array_equal(actual, expected)
    per_axis = [x, rng.uniform(0.01, 0.1, 5).astype(F32), rng.integers(0, 10, 5).astype(dt)]
    expected, actual = both("QuantizeLinear", per_axis, {"axis": 1})
    np.testing.assert_array_equal(actual, expected)
    q = expected
    for inputs, attrs in (
        ([q, scale, dt(7)], {}),
        ([q, rng.uniform(0.01, 0.1, 5).astype(F32), rng.integers(0, 10, 5).astype(dt)], {"axis": 1}),
        ([q, rng.uniform(0.01, 0.1, 16).astype(F32), None], {"axis": -1}),
    ):
        e, a = both("DequantizeLinear", inputs, attrs)
        np.testing.assert_array_equal(a, e)
    expected, actual = both("QuantizeLinear", [x, F32(0.05)])  # uint8 without a zero point
    np.testing.assert_array_equal(actual, expected)


# --- integer matrix products -----------------------------------------------------------------------------


@pytest.mark.parametrize("bt", TYPES)
@pytest.mark.parametrize("a_shape", [(5, 16), (3, 5, 16), (2, 1, 4, 16)])
def test_dynamic_quantize_matmul(bt: Any, a_shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(9)
    a = (rng.standard_normal(a_shape) * 2).astype(F32)
    b = _ints(rng, bt, (16, 8))
    for extra in (
        [F32(0.02)],
        [F32(0.02), bt(3)],
        [F32(0.02), bt(3), rng.standard_normal(8).astype(F32)],
        [rng.uniform(0.01, 0.03, 8).astype(F32), rng.integers(0, 5, 8).astype(bt)],
        [rng.uniform(0.01, 0.03, 8).astype(F32), None, rng.standard_normal(8).astype(F32)],
    ):
        expected, actual = both("DynamicQuantizeMatMul", [a, b, *extra])
        # (A as the operator quantizes it: the uint8 values whose pairs onnxruntime may clip, ms_node.u8s8_saturated)
        quantized = tuple(np.asarray(v) for v in kernels.run("DynamicQuantizeLinear", 11, a, domain=""))
        kept = ~u8s8_saturated(quantized[0], b)
        np.testing.assert_allclose(actual[kept], expected[kept], rtol=1e-6, atol=1e-6)
        _assert_exact_products(actual, quantized, b, extra)


@pytest.mark.parametrize(("at", "bt"), [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)])
def test_matmul_integer_to_float(at: Any, bt: Any) -> None:
    """The type pairs onnxruntime's CPU provider implements (it has no kernel for int8 A with uint8 B)."""
    rng = np.random.default_rng(10)
    a, b = _ints(rng, at, (3, 5, 16)), _ints(rng, bt, (16, 8))
    for extra in (
        [F32(0.03), F32(0.02)],
        [F32(0.03), F32(0.02), _zp(rng, at), _zp(rng, bt)],
        [F32(0.03), rng.uniform(0.01, 0.03, 8).astype(F32), _zp(rng, at), rng.integers(0, 5, 8).astype(bt)],
        [F32(0.03), F32(0.02), None, None, rng.standard_normal(8).astype(F32)],
    ):
        expected, actual = both("MatMulIntegerToFloat", [a, b, *extra])
        kept = ~u8s8_saturated(a, b)
        np.testing.assert_allclose(actual[kept], expected[kept], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("bt", TYPES)
@pytest.mark.parametrize(("trans_a", "trans_b"), [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_qgemm(bt: Any, trans_a: int, trans_b: int, alpha: float) -> None:
    rng = np.random.default_rng(11)
    a = _ints(rng, np.uint8, (16, 5) if trans_a else (5, 16))
    b = _ints(rng, bt, (7, 16) if trans_b else (16, 7))
    c = rng.integers(-500, 500, 7).astype(np.int32)
    attrs = {"transA": trans_a, "transB": trans_b, "alpha": alpha}
    for tail in (
        [c, F32(0.05), np.uint8(7)],
        [c],
        [None, F32(0.5), np.uint8(3)],
    ):
        for b_scale, b_zp in (
            (F32(0.01), bt(3)),
            (rng.uniform(0.005, 0.02, 7).astype(F32), rng.integers(0, 5, 7).astype(bt)),
        ):
            expected, actual = both("QGemm", [a, F32(0.02), np.uint8(120), b, b_scale, b_zp, *tail], attrs)
            kept = ~u8s8_saturated(a.T if trans_a else a, b.T if trans_b else b)
            np.testing.assert_array_equal(actual[kept], expected[kept])


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("channels_last", [0, 1])
def test_qlinear_conv_channels_last(dt: Any, channels_last: int) -> None:
    rng = np.random.default_rng(12)
    x = _ints(rng, dt, (2, 4, 7, 7))
    if channels_last:
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    w = _ints(rng, np.int8, (6, 2, 3, 3))
    ins = [x, F32(0.05), _zp(rng, dt), w, rng.uniform(0.01, 0.02, 6).astype(F32), np.zeros(6, np.int8),
           F32(0.2), dt(5), rng.integers(-100, 100, 6).astype(np.int32)]  # fmt: skip
    attrs = {"group": 2, "strides": [2, 1], "pads": [1, 0, 1, 2], "channels_last": channels_last}
    skip_if_ort_clips(dt)
    expected, actual = both("QLinearConv", ins, attrs)
    np.testing.assert_array_equal(actual, expected)


def _assert_exact_products(
    actual: np.ndarray, quantized: tuple[np.ndarray, ...], b: np.ndarray, extra: list[Any]
) -> None:
    """DynamicQuantizeMatMul's output against its definition in exact integers, the elements onnxruntime may clip
    included: ``(A_q - A_zp) @ (B - B_zp)`` times both scales, plus the bias (``quantized``: DynamicQuantizeLinear's
    ``(A_q, A_scale, A_zp)`` of A)."""
    aq, a_scale, a_zp = quantized
    b_scale = np.asarray(extra[0], np.float64)
    b_zp = np.asarray(extra[1] if len(extra) > 1 and extra[1] is not None else 0, np.int64)
    acc = (aq.astype(np.int64) - int(a_zp)) @ (b.astype(np.int64) - b_zp)
    want = acc * float(a_scale) * b_scale + (extra[2] if len(extra) > 2 else 0)
    np.testing.assert_allclose(actual, want, rtol=1e-5, atol=1e-4)


# --- whole models ------------------------------------------------------------------------------------------


def _compare_model(path: Path, shape: tuple[int, ...], *, atol: float, rtol: float = 0.0) -> None:
    from tests.kernels.contrib import ms_models

    expected, actual = ms_models.run_both(path, shape)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, atol=atol, rtol=rtol)


MAKERS: dict[str, tuple[str, tuple[int, ...]]] = {"cnn": ("cnn_float", (2, 3, 16, 16)),
                                                  "mlp_attention": ("mlp_attention_float", (2, 8, 32))}  # fmt: skip


@pytest.fixture(scope="module")
def float_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("torch")
    from tests.kernels.contrib import ms_models

    d = tmp_path_factory.mktemp("contrib_quant_models")
    return {k: getattr(ms_models, maker)(d) for k, (maker, _) in MAKERS.items()}


@pytest.mark.parametrize("name", list(MAKERS))
@pytest.mark.parametrize("qdq", [False, True])
@pytest.mark.parametrize("per_channel", [False, True])
def test_quantize_static_models(float_models: dict[str, Path], name: str, qdq: bool, per_channel: bool,
                                tmp_path: Path) -> None:  # fmt: skip
    """QOperator format (QLinearConv, QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearConcat,
    QLinearAveragePool, QLinearGlobalAveragePool, QGemm, QLinearSoftmax) and QDQ: onnxruntime's own outputs."""
    from tests.kernels.contrib import ms_models

    shape = MAKERS[name][1]
    skip_if_ort_clips(np.uint8)  # (quantize_static's default: uint8 activations, int8 weights)
    path = ms_models.quantized_static(float_models[name], tmp_path / "q.onnx", shape, qdq=qdq, per_channel=per_channel)
    ops = ms_models.op_types(path)
    if not qdq:
        assert any(op.startswith("com.microsoft::QLinear") for op in ops), ops
    # The model's output is dequantized from 8 bits: one quantization step (its scale) is the tolerance for a
    # near-tie moved inside (see test_qlinear_binary_random_scales); most runs are exact.
    _compare_model(path, shape, atol=ms_models.output_step(path) * 1.01 + 1e-6)


@pytest.mark.parametrize("name", list(MAKERS))
@pytest.mark.parametrize("weight_type", ["QInt8", "QUInt8"])
def test_quantize_dynamic_models(float_models: dict[str, Path], name: str, weight_type: str, tmp_path: Path) -> None:
    """quantize_dynamic writes MatMulInteger/ConvInteger; onnxruntime's extended optimization of that model fuses
    them into DynamicQuantizeMatMul and MatMulIntegerToFloat (com.microsoft): both graphs against onnxruntime."""
    from tests.kernels.contrib import ms_models

    shape = MAKERS[name][1]
    skip_if_ort_clips(np.uint8, np.int8 if weight_type == "QInt8" else np.uint8)
    dyn = ms_models.quantized_dynamic(float_models[name], tmp_path / "d.onnx", weight_type=weight_type)
    _compare_model(dyn, shape, atol=1e-5, rtol=1e-5)
    fused = ms_models.ort_optimized(dyn, tmp_path / "d_ext.onnx", "extended")
    ops = ms_models.op_types(fused)
    if name == "mlp_attention":
        assert {"com.microsoft::DynamicQuantizeMatMul", "com.microsoft::MatMulIntegerToFloat"} & set(ops), ops
    _compare_model(fused, shape, atol=1e-5, rtol=1e-5)
