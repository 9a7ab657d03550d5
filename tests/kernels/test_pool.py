"""Pooling kernels: ONNX 1-3 vectors and differential tests against onnxruntime.

Covers AveragePool (count_include_pad, ceil_mode, dilations, auto_pad), MaxPool (ceil_mode,
dilations, storage_order, Indices), LpPool, the global pools, MaxUnpool, MaxRoiPool and RoiAlign
(avg/max, half_pixel vs output_half_pixel, adaptive sampling) across their versions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernels import assert_same, make_node_model, run_ort, single_node_cases

pytest.importorskip("onnx")  # the oracle run_ours binds versions with (onnx.defs)

POOL_OPS = {
    "AveragePool", "MaxPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "LpPool",
    "MaxRoiPool", "MaxUnpool", "RoiAlign",
}  # fmt: skip


@pytest.mark.parametrize("case_dir", single_node_cases(POOL_OPS))
def test_onnx_node_case(case_dir: Path) -> None:
    """Every single-node ONNX 1-3 case of these operators (rtol 1e-3, atol 1e-7)."""
    from node_harness import assert_close, run_single_node_case

    result = run_single_node_case(case_dir)
    assert result is not None, "kernel not registered"
    actual, expected = result
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_close(a, e)


def ours(op: str, inputs: list[Any], opset: int, attrs: dict[str, Any], n_outputs: int = 1) -> list[np.ndarray]:
    """Our kernel bound per Clause 14.3, with a KernelContext when it asks for one."""
    import onnx

    from onnxcore.kernels.registry import KernelContext, lookup

    since = onnx.defs.get_schema(op, opset, "").since_version
    k = lookup("", op, since)
    assert k is not None, f"no kernel for {op}-{since}"
    if k.context:
        ctx = KernelContext(None, since_version=since, opset_version=opset, num_outputs=n_outputs)
        out = k.fn(ctx, *inputs, **attrs)
    else:
        out = k.fn(*inputs, **attrs)
    res = list(out) if isinstance(out, tuple) else [out]
    return res[:n_outputs]


def check(op: str, inputs: list[Any], opset: int, attrs: dict[str, Any], n_outputs: int = 1,
          rtol: float = 1e-5, atol: float = 1e-5) -> None:  # fmt: skip
    theirs = run_ort(op, inputs, n_outputs, opset, attrs)
    mine = ours(op, inputs, opset, attrs, n_outputs)
    assert len(mine) == len(theirs)
    for a, e in zip(mine, theirs):
        if a.shape != e.shape and opset < 22 and attrs.get("ceil_mode"):
            # Before version 22 the definitions keep a ceil_mode window that starts in the end
            # padding (onnx's shape inference agrees); onnxruntime drops it in every version.
            assert a.shape == inferred_shape(op, inputs, opset, attrs)
            a = a[tuple(slice(0, d) for d in e.shape)]
        assert_same(a, e, rtol=rtol, atol=atol)


def inferred_shape(op: str, inputs: list[Any], opset: int, attrs: dict[str, Any]) -> tuple[int, ...]:
    import onnx

    m = onnx.shape_inference.infer_shapes(make_node_model(op, inputs, 1, opset, attrs), strict_mode=True)
    return tuple(d.dim_value for d in m.graph.output[0].type.tensor_type.shape.dim)


def _pool_combo(rng: np.random.Generator, nd: int, *, dilations: bool, ceil: bool) -> tuple[np.ndarray, dict[str, Any]]:
    k = [int(rng.integers(1, 4)) for _ in range(nd)]
    st = [int(rng.integers(1, 4)) for _ in range(nd)]
    dil = [int(rng.integers(1, 3)) for _ in range(nd)] if dilations else [1] * nd
    size = [int(rng.integers(6, 12 if nd < 3 else 8)) for _ in range(nd)]
    x = rng.standard_normal((int(rng.integers(1, 3)), int(rng.integers(1, 4)), *size)).astype(np.float32)
    attrs: dict[str, Any] = {"kernel_shape": k, "strides": st}
    if dilations:
        attrs["dilations"] = dil
    mode = rng.choice(["NOTSET", "NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"])
    if mode == "NOTSET":
        # Pads smaller than the (dilated) kernel, as onnxruntime requires.
        attrs["pads"] = [int(rng.integers(0, kk)) for kk in k] * 2
        if ceil:
            attrs["ceil_mode"] = int(rng.integers(0, 2))
    else:
        attrs["auto_pad"] = str(mode)
        if dilations and mode != "VALID":
            # onnxruntime mis-sizes SAME_* with dilations (onnx shape inference and the definition
            # give ceil(in / stride)); test_same_with_dilations checks that case on its own.
            attrs["dilations"] = [1] * nd
        if mode != "VALID":
            # onnxruntime computes a negative SAME padding (and fails) when stride > kernel.
            attrs["strides"] = [min(s_, k_) for s_, k_ in zip(st, k)]
    return x, attrs


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_average_pool_random_vs_ort(nd: int) -> None:
    """AveragePool-19/11/10 over strides, pads, ceil_mode, dilations, count_include_pad, auto_pad."""
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(300 + nd)
    for i in range(30 if nd < 3 else 12):
        opset = (19, 11, 10)[i % 3]
        x, attrs = _pool_combo(rng, nd, dilations=opset >= 19, ceil=True)
        attrs["count_include_pad"] = int(rng.integers(0, 2))
        check("AveragePool", [x], opset, attrs)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_pool_random_vs_ort(nd: int) -> None:
    """MaxPool-12/11/10/8 with Y and Indices (both storage orders)."""
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(400 + nd)
    for i in range(30 if nd < 3 else 12):
        opset = (12, 11, 10, 8)[i % 4]
        x, attrs = _pool_combo(rng, nd, dilations=opset >= 10, ceil=opset >= 10)
        n_out = 1 if i % 5 == 0 else 2
        if n_out == 2 and nd == 2:
            attrs["storage_order"] = int(rng.integers(0, 2))
        check("MaxPool", [x], opset, attrs, n_outputs=n_out)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.float64, np.float16])
def test_max_pool_types_vs_ort(dtype: Any) -> None:
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(7)
    x = (
        rng.integers(-100, 100, size=(2, 3, 9, 9)).astype(dtype)
        if np.dtype(dtype).kind in "iu"
        else (rng.standard_normal((2, 3, 9, 9)).astype(dtype))
    )
    if dtype == np.uint8:
        x = rng.integers(0, 255, size=(2, 3, 9, 9)).astype(dtype)
    check("MaxPool", [x], 12, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})


def test_pool_flat_and_strided_layouts_vs_ort() -> None:
    """Many channels with short rows (flat layout, equal strides) and long rows (per-row slices)."""
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(17)
    for shape, attrs in [
        ((1, 40, 13, 13), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
        ((1, 40, 13, 13), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
        ((1, 4, 70, 70), {"kernel_shape": [3, 3], "strides": [2, 2]}),
        ((1, 4, 9, 10), {"kernel_shape": [2, 3], "strides": [2, 3]}),
        ((1, 3, 30, 30), {"kernel_shape": [8, 8], "strides": [1, 1]}),
    ]:
        x = rng.standard_normal(shape).astype(np.float32)
        check("MaxPool", [x], 12, attrs)
        check("AveragePool", [x], 19, attrs)
        check("LpPool", [x], 18, {**attrs, "p": 3}, rtol=1e-4)


@pytest.mark.parametrize(
    ("shape", "attrs"),
    [
        ((1, 64, 7, 7), {"kernel_shape": [7, 7]}),  # ResNet's closing pool
        ((2, 5, 6, 6), {"kernel_shape": [7, 7], "pads": [0, 0, 1, 1]}),  # GoogLeNet's: the window overhangs
        ((2, 5, 6, 6), {"kernel_shape": [7, 7], "pads": [0, 0, 1, 1], "count_include_pad": 1}),
        ((1, 3, 5, 4, 6), {"kernel_shape": [5, 6, 6], "pads": [0, 1, 0, 0, 1, 0]}),
        ((1, 3, 11), {"kernel_shape": [11]}),
        ((1, 4, 5, 5), {"kernel_shape": [3, 3], "dilations": [2, 2]}),  # covers the corners only
    ],
)
def test_whole_image_windows_vs_ort(shape: tuple[int, ...], attrs: dict[str, Any]) -> None:
    """One window holding every input element is reduced over the spatial axes at once; the same values."""
    pytest.importorskip("onnxruntime")
    x = np.random.default_rng(23).standard_normal(shape).astype(np.float32)
    check("AveragePool", [x], 19, attrs)
    check("MaxPool", [x], 12, {k: v for k, v in attrs.items() if k != "count_include_pad"})
    if "count_include_pad" not in attrs:
        check("LpPool", [x], 18, {**attrs, "p": 2})


def test_lp_pool_random_vs_ort() -> None:
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(19)
    for i in range(12):
        opset = (18, 11)[i % 2]
        x, attrs = _pool_combo(rng, 2, dilations=opset >= 18, ceil=False)
        attrs["p"] = int(rng.integers(1, 4))
        check("LpPool", [x], opset, attrs, rtol=1e-4)


def test_global_pools_vs_ort() -> None:
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(21)
    for shape in [(2, 3, 5), (1, 4, 6, 7), (2, 2, 3, 4, 5)]:
        x = rng.standard_normal(shape).astype(np.float32)
        check("GlobalAveragePool", [x], 1, {})
        check("GlobalMaxPool", [x], 1, {})
        check("GlobalLpPool", [x], 2, {"p": 3}, rtol=1e-4)
        check("GlobalLpPool", [x], 2, {})


def test_global_lp_pool_v1_float_p() -> None:
    """GlobalLpPool-1 takes a float p (onnxruntime has no v1 kernel): the definition written out."""
    x = np.random.default_rng(2).standard_normal((2, 3, 4, 5)).astype(np.float32)
    (y,) = ours("GlobalLpPool", [x], 1, {"p": 1.5})
    ref = (np.abs(x.astype(np.float64)) ** 1.5).sum(axis=(2, 3), keepdims=True) ** (1 / 1.5)
    np.testing.assert_allclose(y, ref, rtol=1e-5)


def test_max_unpool_vs_ort() -> None:
    """MaxUnpool of MaxPool's (Y, Indices), the default output shape, against onnxruntime."""
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(23)
    for size, attrs in [
        (8, {"kernel_shape": [2, 2], "strides": [2, 2]}),
        (7, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ]:
        x = rng.standard_normal((2, 3, size, size)).astype(np.float32)
        y, idx = ours("MaxPool", [x], 12, attrs, n_outputs=2)
        check("MaxUnpool", [y, idx], 11, attrs)


def test_max_unpool_round_trip() -> None:
    """Pooling the unpooled tensor gives back the pooled values (the definition's invariant)."""
    rng = np.random.default_rng(29)
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    y, idx = ours("MaxPool", [x], 22, attrs, n_outputs=2)
    (u,) = ours("MaxUnpool", [y, idx, np.array([1, 2, 6, 6], np.int64)], 22, attrs)
    (y2,) = ours("MaxPool", [u], 22, attrs)
    np.testing.assert_array_equal(y2, y)


def test_max_roi_pool_vs_ort() -> None:
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(31)
    x = rng.standard_normal((2, 3, 12, 10)).astype(np.float32)
    rois = np.array(
        [[0, 0, 0, 9, 11], [1, 2.4, 3.6, 7.5, 8.2], [0, 4, 4, 4, 4], [1, -3, -2, 20, 30], [0, 1, 2, 3, 9]],
        np.float32,
    )
    for scale in (1.0, 0.5):
        check("MaxRoiPool", [x, rois], 1, {"pooled_shape": [3, 4], "spatial_scale": scale})


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_vs_ort(mode: str) -> None:
    """RoiAlign-10 (no half-pixel shift) and -16 (both modes), fixed and adaptive sampling."""
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(37)
    x = rng.standard_normal((2, 3, 10, 12)).astype(np.float32)
    rois = np.array([[0, 0, 9, 9], [2.2, 1.7, 8.9, 6.1], [5, 5, 5.5, 5.2], [-2, -1, 13, 11], [1, 1, 30, 4]], np.float32)
    bidx = np.array([0, 1, 1, 0, 1], np.int64)
    for sampling in (0, 2):
        base = {"mode": mode, "output_height": 3, "output_width": 4, "sampling_ratio": sampling, "spatial_scale": 0.8}
        check("RoiAlign", [x, rois, bidx], 10, base, rtol=1e-4)
        for ctm in ("half_pixel", "output_half_pixel"):
            check("RoiAlign", [x, rois, bidx], 16, {**base, "coordinate_transformation_mode": ctm}, rtol=1e-4)


def test_ceil_mode_drops_window_starting_in_padding() -> None:
    """The version-22 pools drop a ceil_mode window that would start in the end padding; earlier
    versions keep it (as onnx's shape inference does)."""
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 1, 1], "ceil_mode": 1}
    # floor((4+1-2)/2)+1 = 2 vs ceil -> 3, whose last window would start at 4 = in + pad_begin.
    for op, old in (("MaxPool", 12), ("AveragePool", 19), ("LpPool", 18)):
        (y,) = ours(op, [x], 22, attrs)
        assert y.shape == (1, 1, 2, 2) == inferred_shape(op, [x], 22, attrs)
        (y_old,) = ours(op, [x], old, attrs)
        assert y_old.shape == (1, 1, 3, 3) == inferred_shape(op, [x], old, attrs)
        np.testing.assert_array_equal(y_old[:, :, :2, :2], y)
    (y,) = ours("MaxPool", [x], 22, attrs)
    np.testing.assert_array_equal(y[0, 0], [[5, 7], [13, 15]])


def test_pool_rejects_bad_attributes() -> None:
    from onnxcore.errors import EvaluationError, ShapeError

    x = np.zeros((1, 1, 4, 4), np.float32)
    with pytest.raises(EvaluationError):
        ours("AveragePool", [x], 19, {"kernel_shape": [2]})
    with pytest.raises(EvaluationError):
        ours("MaxPool", [x], 12, {})
    with pytest.raises(ShapeError):
        ours("MaxPool", [x], 12, {"kernel_shape": [6, 6]})


def test_same_with_dilations() -> None:
    """SAME_* gives ceil(in / stride) outputs whatever the dilation; padding splits as in Conv."""
    x = np.arange(10, dtype=np.float32).reshape(1, 1, 10)
    attrs = {"auto_pad": "SAME_UPPER", "kernel_shape": [2], "strides": [3], "dilations": [2]}
    (y,) = ours("MaxPool", [x], 12, attrs)
    # ek = 3, out = 4, total pad = (4-1)*3 + 3 - 10 = 2 -> one each side; windows start at -1, 2, 5, 8.
    np.testing.assert_array_equal(y[0, 0], [1, 4, 7, 8])
    (a,) = ours("AveragePool", [x], 19, {**attrs, "auto_pad": "SAME_LOWER"})
    np.testing.assert_allclose(a[0, 0], [1, 3, 6, 8])


def test_max_pool_indices_never_point_into_padding() -> None:
    """A real element equal to the padding value (int8 -128, float -inf) still wins the index."""
    for x in (np.full((1, 1, 3, 3), -128, np.int8), np.full((1, 1, 3, 3), -np.inf, np.float32)):
        y, idx = ours("MaxPool", [x], 12, {"kernel_shape": [2, 2], "pads": [1, 1, 1, 1]}, n_outputs=2)
        assert y.shape == (1, 1, 4, 4)
        assert idx.min() >= 0 and idx.max() < 9
        np.testing.assert_array_equal(idx[0, 0, 0], [0, 0, 1, 2])  # first real tap of each window


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_pool_strided_and_padded_windows_vs_ort(op: str) -> None:
    """The separable reduction without a padded copy: strides, asymmetric pads, dilations, ceil_mode,
    count_include_pad, windows overrunning the end, 1-D to 3-D."""
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(21)
    cases = [
        ((1, 8, 56, 57), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 0, 1, 1]}),
        ((2, 5, 33, 40), {"kernel_shape": [3, 2], "strides": [2, 3], "pads": [1, 0, 2, 1], "ceil_mode": 1}),
        ((1, 4, 40, 41), {"kernel_shape": [2, 2], "strides": [2, 2]}),
        ((1, 3, 38, 35), {"kernel_shape": [3, 3], "strides": [3, 2], "dilations": [2, 3], "pads": [2, 1, 2, 2]}),
        ((1, 3, 50), {"kernel_shape": [4], "strides": [3], "pads": [3, 2], "ceil_mode": 1}),
        ((1, 2, 9, 34, 36), {"kernel_shape": [2, 3, 3], "strides": [2, 2, 2], "pads": [1, 1, 1, 0, 0, 0]}),
        ((1, 6, 12, 12), {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1]}),
        ((1, 6, 40, 40), {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 0, 2, 1], "dilations": [1, 2]}),
    ]
    for shape, attrs in cases:
        x = rng.standard_normal(shape).astype(np.float32)
        for opset in (12 if op == "MaxPool" else 19, 22):
            check(op, [x], opset, attrs, n_outputs=2 if op == "MaxPool" and opset == 12 else 1)
            if op == "AveragePool":
                check(op, [x], opset, {**attrs, "count_include_pad": 1})


@pytest.mark.parametrize(("op", "opset", "attrs"), [("LpPool", 18, {"kernel_shape": [2, 2]}), ("GlobalLpPool", 2, {})])
def test_lp_pools_refuse_p_zero(op: str, opset: int, attrs: dict[str, Any]) -> None:
    # p = 0 has no 1/p-th root: a clear error, not a ZeroDivisionError from inside the kernel (found by a
    # differential fuzz against onnxruntime, which returns infinities).
    from onnxcore.errors import EvaluationError

    x = np.ones((1, 1, 3, 3), np.float32)
    with pytest.raises(EvaluationError, match="p must not be 0"):
        ours(op, [x], opset, {**attrs, "p": 0})
