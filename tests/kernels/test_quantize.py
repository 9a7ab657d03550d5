"""Quantization operators against the ONNX 1-3 vectors and onnxruntime on random inputs.

QuantizeLinear/DequantizeLinear: per-tensor, per-axis (negative axes), blocked, int8/uint8/
int16/uint16/int4/uint4 and float8 targets with saturate on and off; DynamicQuantizeLinear;
MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv with scalar and per-row/per-column/
per-channel zero points and scales.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from runtime.node_harness import assert_close, run_single_node_case

from kernels import assert_every_version_has_a_kernel
from onnxcore.errors import EvaluationError
from onnxcore.kernels.registry import lookup

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tests.kernels.contrib.ms_node import skip_if_ort_clips, u8s8_saturated  # noqa: E402

PREFIXES = (
    "test_quantizelinear",
    "test_dequantizelinear",
    "test_dynamicquantizelinear",
    "test_matmulinteger",
    "test_convinteger",
    "test_qlinearmatmul",
    "test_qlinearconv",
)


def test_node_vectors(node_cases: list[Path]) -> None:
    cases = [c for c in node_cases if c.name.startswith(PREFIXES) and "expanded" not in c.name]
    assert len(cases) >= 40
    for case in cases:
        out = run_single_node_case(case)
        assert out is not None, case.name
        actual, expected = out
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol=0, atol=0)


def _fn(op: str, version: int) -> Any:
    k = lookup("", op, version)
    assert k is not None, (op, version)
    return k.fn


def _ort(
    nodes: list[Any], feeds: dict[str, np.ndarray], inits: list[Any], outs: list[tuple[str, int]], opset: int
) -> list[np.ndarray]:
    ins = [
        helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
        for k, v in feeds.items()
    ]
    graph = helper.make_graph(
        nodes, "g", ins, [helper.make_tensor_value_info(n, t, None) for n, t in outs], initializer=inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    opts = ort.SessionOptions()
    # Graph optimizations would fuse or fold Q/DQ pairs; the oracle is each kernel alone.
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


_NP_OF = {
    TensorProto.INT8: np.int8,
    TensorProto.UINT8: np.uint8,
    TensorProto.INT16: np.int16,
    TensorProto.UINT16: np.uint16,
    TensorProto.INT4: ml_dtypes.int4,
    TensorProto.UINT4: ml_dtypes.uint4,
    TensorProto.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
    TensorProto.FLOAT8E5M2: ml_dtypes.float8_e5m2,
}


def _zero_point(tt: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if tt in (TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2):
        return np.zeros(shape, _NP_OF[tt])
    info = {
        TensorProto.INT8: (-20, 20),
        TensorProto.UINT8: (100, 150),
        TensorProto.INT16: (-300, 300),
        TensorProto.UINT16: (1000, 2000),
        TensorProto.INT4: (-3, 3),
        TensorProto.UINT4: (5, 9),
    }[tt]
    return rng.integers(info[0], info[1], shape).astype(np.int64).astype(_NP_OF[tt])


def _zp_tensor(name: str, zp: np.ndarray, tt: int) -> Any:
    return helper.make_tensor(name, tt, list(zp.shape), zp.astype(np.float32).ravel().tolist())


GRANULARITIES = [
    # (x shape, axis, scale shape, block_size)
    ((3, 4, 5), 1, (), 0),
    ((3, 4, 5), 1, (4,), 0),
    ((3, 4, 5), -1, (5,), 0),
    ((3, 4, 5), 0, (3,), 0),
    ((6, 5), 0, (2, 5), 3),
    ((4, 7), -1, (4, 3), 3),
    ((2, 9, 3), 1, (2, 3, 3), 4),
    ((0, 4), 1, (4,), 0),
]

TARGETS = [
    TensorProto.INT8,
    TensorProto.UINT8,
    TensorProto.INT16,
    TensorProto.UINT16,
    TensorProto.INT4,
    TensorProto.UINT4,
    TensorProto.FLOAT8E4M3FN,
    TensorProto.FLOAT8E5M2,
]


@pytest.mark.parametrize("tt", TARGETS)
def test_quantize_dequantize_against_onnxruntime(tt: int) -> None:
    rng = np.random.default_rng(tt)
    q21, dq21 = _fn("QuantizeLinear", 21), _fn("DequantizeLinear", 21)
    wide = tt in (TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2)
    for shape, axis, sshape, block in GRANULARITIES:
        x = (rng.standard_normal(shape) * (3000 if wide else 40)).astype(np.float32)
        x.ravel()[:3] = [0.5, 1.5, -2.5][: x.size] if x.size >= 3 else []  # ties round to even
        scale = rng.uniform(0.05, 2.0, sshape).astype(np.float32)
        zp = _zero_point(tt, sshape, rng)
        # onnxruntime ignores saturate=0 for per-axis/blocked float8 quantization of rank > 2
        # (it saturates to the largest finite value where the Cast table gives NaN): saturate=0
        # is compared per-tensor only, and checked per-axis below against per-slice results.
        for saturate in (1, 0) if wide and not sshape else (1,):
            attrs: dict[str, Any] = {"axis": axis}
            if block:
                attrs["block_size"] = block
            if wide:
                attrs["saturate"] = saturate
            dq_attrs = {k: v for k, v in attrs.items() if k != "saturate"}
            nodes = [
                helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], **attrs),
                helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"], **dq_attrs),
            ]
            inits = [numpy_helper.from_array(scale, "s"), _zp_tensor("zp", zp, tt)]
            # onnxruntime returns no numpy array for these outputs: compare after its DequantizeLinear.
            narrow = tt in (TensorProto.INT4, TensorProto.UINT4, TensorProto.FLOAT8E5M2)
            outs = [("y", TensorProto.FLOAT)] if narrow else [("q", tt), ("y", TensorProto.FLOAT)]
            got = _ort(nodes, {"x": x}, inits, outs, 21)
            q = q21(x, scale, zp, **attrs)
            y = dq21(q, scale, zp, **dq_attrs)
            assert q.dtype == np.dtype(_NP_OF[tt]) and q.shape == x.shape
            assert y.dtype == np.float32 and y.shape == x.shape
            if not narrow:
                ref = got[0].view(_NP_OF[tt]) if wide else got[0]
                np.testing.assert_array_equal(
                    q.astype(np.float32), ref.astype(np.float32), err_msg=f"{shape} {axis} {sshape} {saturate}"
                )
            np.testing.assert_array_equal(y, got[-1], err_msg=f"{shape} {axis} {sshape} {saturate}")


@pytest.mark.parametrize("tt", [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2])
def test_float8_no_saturate_per_axis_matches_per_slice(tt: int) -> None:
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((3, 4, 5)) * 3e4).astype(np.float32)
    x[0, 0, 0], x[1, 1, 1] = np.inf, -np.inf
    scale = rng.uniform(0.05, 2.0, (4,)).astype(np.float32)
    zp = np.zeros((4,), _NP_OF[tt])
    q = _fn("QuantizeLinear", 23)(x, scale, zp, axis=-2, saturate=0)
    assert q.dtype == np.dtype(_NP_OF[tt])
    for j in range(4):
        feeds = {"x": np.ascontiguousarray(x[:, j, :])}
        nodes = [
            helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], saturate=0),
            helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"]),
        ]
        inits = [numpy_helper.from_array(scale[j], "s"), _zp_tensor("zp", zp[j], tt)]
        (ref,) = _ort(nodes, feeds, inits, [("y", TensorProto.FLOAT)], 21)
        np.testing.assert_array_equal(_fn("DequantizeLinear", 23)(q[:, j, :], scale[j], zp[j]), ref)
    assert np.isnan(q.astype(np.float32)).any() or tt == TensorProto.FLOAT8E5M2


@pytest.mark.parametrize("version", [10, 13, 19])
def test_older_versions_against_onnxruntime(version: int) -> None:
    rng = np.random.default_rng(version)
    x = (rng.standard_normal((2, 3, 4)) * 50).astype(np.float32)
    per_axis = version >= 13
    scale = rng.uniform(0.1, 1.0, (3,) if per_axis else ()).astype(np.float32)
    zp = rng.integers(-10, 10, scale.shape).astype(np.int8)
    xq = rng.integers(-128, 127, x.shape).astype(np.int8)
    attrs = {"axis": -2} if per_axis else {}
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], **attrs),
        helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["y"], **attrs),
    ]
    inits = [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zp, "zp")]
    eq, ey = _ort(nodes, {"x": x, "xq": xq}, inits, [("q", TensorProto.INT8), ("y", TensorProto.FLOAT)], version)
    np.testing.assert_array_equal(_fn("QuantizeLinear", version)(x, scale, zp, **attrs), eq)
    np.testing.assert_array_equal(_fn("DequantizeLinear", version)(xq, scale, zp, **attrs), ey)
    # Without a zero point the target is uint8.
    assert _fn("QuantizeLinear", version)(x, scale, **attrs).dtype == np.uint8
    if not per_axis:
        with pytest.raises(EvaluationError):
            _fn("QuantizeLinear", version)(x, np.ones(3, np.float32))


def test_quantize_float16_scale_and_output_dtype() -> None:
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((4, 6)) * 10).astype(np.float16)
    scale = np.array([0.25, 0.5, 0.75, 1.25], np.float16)
    attrs = {"axis": 0, "output_dtype": TensorProto.INT8}
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s"], ["q"], **attrs),
        helper.make_node("DequantizeLinear", ["q", "s"], ["y"], axis=0),
    ]
    eq, ey = _ort(
        nodes,
        {"x": x},
        [numpy_helper.from_array(scale, "s")],
        [("q", TensorProto.INT8), ("y", TensorProto.FLOAT16)],
        21,
    )
    q = _fn("QuantizeLinear", 21)(x, scale, **attrs)
    np.testing.assert_array_equal(q, eq)
    y = _fn("DequantizeLinear", 21)(q, scale, axis=0)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, ey)
    with pytest.raises(EvaluationError):
        _fn("QuantizeLinear", 21)(x, scale, np.zeros(4, np.uint8), **attrs)  # output_dtype disagrees


def test_blocked_range_is_checked() -> None:
    x = np.ones((2, 9), np.float32)
    s = np.ones((2, 3), np.float32)
    with pytest.raises(EvaluationError):
        _fn("QuantizeLinear", 21)(x, s, axis=1, block_size=5)  # accepted range is [3, 4]
    assert _fn("QuantizeLinear", 21)(x, s, axis=1, block_size=4).shape == (2, 9)


def test_dynamic_quantize_against_onnxruntime() -> None:
    rng = np.random.default_rng(11)
    for x in (
        (rng.standard_normal((3, 5)) * 7).astype(np.float32),
        rng.uniform(1, 4, (6,)).astype(np.float32),
        -rng.uniform(1, 4, (2, 2, 2)).astype(np.float32),
        np.zeros((3,), np.float32),
    ):
        node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
        outs = [("y", TensorProto.UINT8), ("s", TensorProto.FLOAT), ("z", TensorProto.UINT8)]
        expected = _ort([node], {"x": x}, [], outs, 11)
        actual = _fn("DynamicQuantizeLinear", 11)(x)
        for a, e in zip(actual, expected):
            assert a.dtype == e.dtype and a.shape == e.shape
            np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize(
    ("a_t", "b_t", "a_shape", "b_shape", "zp_kind"),
    [
        (np.uint8, np.uint8, (4, 5), (5, 3), "scalar"),
        (np.int8, np.int8, (2, 4, 5), (5, 3), "vector"),
        (np.uint8, np.int8, (3, 2, 4, 5), (3, 1, 5, 6), "scalar"),
        (np.int8, np.uint8, (5,), (5, 2), "none"),
        (np.uint8, np.uint8, (0, 5), (5, 3), "scalar"),
    ],
)
def test_matmul_integer_against_onnxruntime(a_t: Any, b_t: Any, a_shape: Any, b_shape: Any, zp_kind: str) -> None:
    rng = np.random.default_rng(3)
    info_a, info_b = np.iinfo(a_t), np.iinfo(b_t)
    a = rng.integers(info_a.min, info_a.max, a_shape, endpoint=True).astype(a_t)
    b = rng.integers(info_b.min, info_b.max, b_shape, endpoint=True).astype(b_t)
    feeds = {"a": a, "b": b}
    names = ["a", "b"]
    if zp_kind != "none":
        n = b_shape[-1]
        shape_a = ()  # onnxruntime only takes a scalar a_zero_point (per-row: see the next test)
        shape_b = (n,) if zp_kind == "vector" else ()
        feeds["az"] = rng.integers(0, 20, shape_a).astype(a_t)
        feeds["bz"] = rng.integers(0, 20, shape_b).astype(b_t)
        names += ["az", "bz"]
    node = helper.make_node("MatMulInteger", names, ["y"])
    (expected,) = _ort([node], feeds, [], [("y", TensorProto.INT32)], 10)
    actual = _fn("MatMulInteger", 10)(*[feeds[k] for k in names])
    assert actual.dtype == np.int32
    # (where this machine's onnxruntime clips a uint8 x int8 pair of products to int16, its value is no reference;
    # tests/kernels/contrib/ms_node.py)
    kept = ~u8s8_saturated(a, b) if a.ndim > 1 else np.ones(expected.shape, bool)
    np.testing.assert_array_equal(actual[kept], expected[kept])
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    if zp_kind != "none":
        a64, b64 = a64 - feeds["az"].astype(np.int64), b64 - feeds["bz"].astype(np.int64)
    np.testing.assert_array_equal(actual, np.matmul(a64, b64))  # exact integers, every element


def test_matmul_integer_per_row_zero_point() -> None:
    rng = np.random.default_rng(4)
    a = rng.integers(0, 255, (2, 3, 4)).astype(np.uint8)
    b = rng.integers(-128, 127, (4, 5)).astype(np.int8)
    az = rng.integers(0, 255, (3,)).astype(np.uint8)
    bz = rng.integers(-128, 127, (5,)).astype(np.int8)
    expected = (a.astype(np.int64) - az.astype(np.int64)[:, None]) @ (b.astype(np.int64) - bz.astype(np.int64))
    actual = _fn("MatMulInteger", 10)(a, b, az, bz)
    assert actual.dtype == np.int32
    np.testing.assert_array_equal(actual, expected)


CONV_CASES = [
    ((1, 3, 7, 6), (4, 3, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((2, 4, 8), (6, 2, 3), {"group": 2, "strides": [2], "dilations": [2]}),
    ((1, 2, 5, 5), (3, 2, 2, 2), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 2, 5, 5), (2, 1, 3, 3), {"group": 2, "auto_pad": "VALID"}),
]


@pytest.mark.parametrize(("x_shape", "w_shape", "attrs"), CONV_CASES)
def test_conv_integer_against_onnxruntime(x_shape: Any, w_shape: Any, attrs: dict[str, Any]) -> None:
    rng = np.random.default_rng(8)
    x = rng.integers(0, 255, x_shape).astype(np.uint8)
    w = rng.integers(0, 255, w_shape).astype(np.uint8)
    xz, wz = np.array(131, np.uint8), np.array(120, np.uint8)
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], **attrs)
    (expected,) = _ort([node], {"x": x, "w": w, "xz": xz, "wz": wz}, [], [("y", TensorProto.INT32)], 10)
    actual = _fn("ConvInteger", 10)(x, w, xz, wz, **attrs)
    assert actual.dtype == np.int32
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize(("x_shape", "w_shape", "attrs"), CONV_CASES)
@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinear_conv_against_onnxruntime(x_shape: Any, w_shape: Any, attrs: dict[str, Any], per_channel: bool) -> None:
    rng = np.random.default_rng(9)
    m = w_shape[0]
    x = rng.integers(0, 255, x_shape).astype(np.uint8)
    w = rng.integers(-127, 127, w_shape).astype(np.int8)
    feeds = {
        "x": x,
        "xs": np.array(0.05, np.float32),
        "xz": np.array(128, np.uint8),
        "w": w,
        "ws": rng.uniform(0.001, 0.01, (m,) if per_channel else ()).astype(np.float32),
        "wz": np.zeros((m,) if per_channel else (), np.int8),
        "ys": np.array(0.4, np.float32),
        "yz": np.array(100, np.uint8),
        "B": rng.integers(-5000, 5000, (m,)).astype(np.int32),
    }
    names = list(feeds)
    skip_if_ort_clips(x.dtype, w.dtype)
    node = helper.make_node("QLinearConv", names, ["y"], **attrs)
    (expected,) = _ort([node], feeds, [], [("y", TensorProto.UINT8)], 10)
    actual = _fn("QLinearConv", 10)(*feeds.values(), **attrs)
    assert actual.dtype == np.uint8
    # onnxruntime requantizes in float32 like us; allow one unit where a product lands on a tie.
    diff = np.abs(actual.astype(np.int32) - expected.astype(np.int32))
    assert diff.max(initial=0) <= 1 and (diff > 0).mean() < 0.01


@pytest.mark.parametrize("version", [10, 21])
@pytest.mark.parametrize(("a_t", "y_t"), [(np.uint8, np.uint8), (np.int8, np.int8)])
def test_qlinear_matmul_against_onnxruntime(version: int, a_t: Any, y_t: Any) -> None:
    rng = np.random.default_rng(12)
    info = np.iinfo(a_t)
    for a_shape, b_shape in (((3, 6), (6, 4)), ((2, 3, 6), (6, 5)), ((2, 1, 4, 3), (3, 3, 2))):
        feeds = {
            "a": rng.integers(info.min, info.max, a_shape).astype(a_t),
            "as": np.array(0.02, np.float32),
            "az": np.array(3, a_t),
            "b": rng.integers(info.min, info.max, b_shape).astype(a_t),
            "bs": np.array(0.03, np.float32),
            "bz": np.array(2, a_t),
            "ys": np.array(1.7, np.float32),
            "yz": np.array(7, y_t),
        }
        node = helper.make_node("QLinearMatMul", list(feeds), ["y"])
        out_t = helper.np_dtype_to_tensor_dtype(np.dtype(y_t))
        (expected,) = _ort([node], feeds, [], [("y", out_t)], version)
        actual = _fn("QLinearMatMul", version)(*feeds.values())
        assert actual.dtype == np.dtype(y_t)
        diff = np.abs(actual.astype(np.int32) - expected.astype(np.int32))
        assert diff.max(initial=0) <= 1 and (diff > 0).mean() < 0.02


def test_precision_and_output_dtype_from_23() -> None:
    # 2.5009766 / 1 rounds to 3 in float32 but is 2.5 in float16, which rounds (to even) to 2.
    x = np.array([2.5009766, -3.5, 7.0], np.float32)
    one = np.array(1.0, np.float32)
    zp = np.array(0, np.int8)
    for v in (23, 24, 25, 28):
        np.testing.assert_array_equal(_fn("QuantizeLinear", v)(x, one, zp), [3, -4, 7])
        np.testing.assert_array_equal(_fn("QuantizeLinear", v)(x, one, zp, precision=TensorProto.FLOAT16), [2, -4, 7])
        y = _fn("DequantizeLinear", v)(np.array([1, -2], np.int8), np.array(0.5, np.float32), output_dtype=10)
        assert y.dtype == np.float16 and y.tolist() == [0.5, -1.0]
    # A float8e8m0 scale (24 and later) is a power of two.
    s = np.array(4.0, np.float32).astype(ml_dtypes.float8_e8m0fnu)
    np.testing.assert_array_equal(_fn("QuantizeLinear", 24)(np.array([8.0, 10.0], np.float32), s, zp), [2, 2])
    y = _fn("DequantizeLinear", 24)(np.array([3, -1], np.int8), s)
    assert y.dtype == np.float32 and y.tolist() == [12.0, -4.0]


def test_int2_targets_from_25() -> None:
    x = np.array([-9.0, -2.0, -1.4, 0.0, 0.6, 1.0, 9.0], np.float32)
    one = np.array(1.0, np.float32)
    q = _fn("QuantizeLinear", 25)(x, one, np.array(0, ml_dtypes.int2))
    assert q.dtype == np.dtype(ml_dtypes.int2)
    assert q.astype(np.int8).tolist() == [-2, -2, -1, 0, 1, 1, 1]
    u = _fn("QuantizeLinear", 25)(x, one, output_dtype=TensorProto.UINT2)
    assert u.dtype == np.dtype(ml_dtypes.uint2) and u.astype(np.int8).tolist() == [0, 0, 0, 0, 1, 1, 3]
    with pytest.raises(EvaluationError):  # float is no quantization target
        _fn("QuantizeLinear", 21)(x, one, output_dtype=TensorProto.FLOAT, saturate=1)


@pytest.mark.parametrize(
    "op",
    [
        "QuantizeLinear",
        "DequantizeLinear",
        "DynamicQuantizeLinear",
        "MatMulInteger",
        "ConvInteger",
        "QLinearMatMul",
        "QLinearConv",
    ],
)
def test_every_since_version_has_a_kernel(op: str) -> None:
    pytest.importorskip("onnx")
    assert_every_version_has_a_kernel(op)


@pytest.mark.parametrize("version", [10, 21])
def test_qlinear_matmul_refuses_scales_that_do_not_fit_the_product(version: int) -> None:
    # Found by shape inference's differential fuzzing: a per-column b_scale of 4 entries for a product with one
    # column broadcast the result to 4 columns instead of being refused.
    f = _fn("QLinearMatMul", version)
    a, b = np.ones((2, 2, 4), np.int8), np.ones((4, 1), np.int8)
    one, zero = np.array(1.0, np.float32), np.array(0, np.int8)
    assert f(a, one, zero, b, one, zero, one, zero).shape == (2, 2, 1)
    assert f(a, one, zero, b, np.ones(1, np.float32), zero, one, zero).shape == (2, 2, 1)
    with pytest.raises(EvaluationError, match="b_scale of shape \\(4,\\) does not fit"):
        f(a, one, zero, b, np.ones(4, np.float32), np.zeros(4, np.int8), one, zero)
    # A zero point of higher rank broadcasts like its operand, never into a larger one.
    with pytest.raises(EvaluationError, match="does not fit"):
        b2 = np.ones(1, np.int8)
        f(np.ones((2, 2), np.int8), one, zero, b2, np.ones((2, 1), np.float32), np.zeros((2, 1), np.int8), one, zero)


@pytest.mark.parametrize("version", [10, 21])
def test_qlinear_matmul_scales_and_zero_points_follow_the_definition_shapes(version: int) -> None:
    # Found by a differential fuzz against onnxruntime: b_scale of shape (2, 1) for b of shape (2, 4, 3) is a
    # per-row shape; it broadcast into the product as a scale per row of A instead of being refused.
    f = _fn("QLinearMatMul", version)
    rng = np.random.default_rng(3)
    a, b = rng.integers(-5, 5, (2, 2, 4)).astype(np.int8), rng.integers(-5, 5, (2, 4, 3)).astype(np.int8)
    one, zero = np.array(0.5, np.float32), np.array(0, np.int8)
    with pytest.raises(EvaluationError, match=r"b_scale of shape \(2, 1\) does not fit"):
        f(a, one, zero, b, np.ones((2, 1), np.float32), np.zeros((2, 1), np.int8), one, zero)
    with pytest.raises(EvaluationError, match="must have the same shape"):
        f(a, one, zero, b, np.ones((2, 1, 3), np.float32), np.zeros(3, np.int8), one, zero)
    # The definition's shapes: per column [..., 1, N] of B and per row [..., M, 1] of A, equal to the 1-D forms.
    bs = np.array([0.5, 0.25, 1.0], np.float32)
    bz = np.array([1, 0, -1], np.int8)
    col_nd = f(a, one, zero, b, np.broadcast_to(bs, (2, 1, 3)).copy(), np.broadcast_to(bz, (2, 1, 3)).copy(), one, zero)
    col_1d = f(a, one, zero, b, bs, bz, one, zero)
    np.testing.assert_array_equal(col_nd, col_1d)
    a_s, a_z = np.array([0.5, 2.0], np.float32), np.array([0, 2], np.int8)
    row_nd = f(a, a_s.reshape(2, 1), a_z.reshape(2, 1), b, one, zero, one, zero)
    np.testing.assert_array_equal(row_nd, f(a, a_s, a_z, b, one, zero, one, zero))
    expect = np.clip(np.rint(((a - a_z[:, None]) * a_s[:, None]).astype(np.float32) @ (b * 0.5) / 0.5), -128, 127)
    np.testing.assert_array_equal(row_nd, expect.astype(np.int8))
