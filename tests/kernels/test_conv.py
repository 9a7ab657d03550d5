"""Convolution kernels: ONNX 1-3 vectors, differential tests against onnxruntime, and a naive
reference (direct loops, tests only) where onnxruntime lacks a version or a type.

Covers Conv and ConvTranspose (1-D/2-D/3-D, groups incl. depthwise, dilations, strides, pads,
auto_pad, output_padding, output_shape), DeformConv and Col2Im. Float16 and bfloat16 compute in
float32 and round once, so they are compared with a float32 result rounded to the type.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import onnxcore
from kernels import compare, run_ours, single_node_cases

pytest.importorskip("onnx")  # the oracle run_ours binds versions with (onnx.defs)

CONV_OPS = {"Conv", "ConvTranspose", "DeformConv", "Col2Im"}


@pytest.mark.parametrize("case_dir", single_node_cases(CONV_OPS))
def test_onnx_node_case(case_dir: Path) -> None:
    """Every single-node ONNX 1-3 case of these operators (rtol 1e-3, atol 1e-7)."""
    from node_harness import assert_close, run_single_node_case

    result = run_single_node_case(case_dir)
    assert result is not None, "kernel not registered"
    actual, expected = result
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_close(a, e)


# ---------------------------------------------------------------------------------------------
# Naive references (direct sums over every output element; slow, tests only)
# ---------------------------------------------------------------------------------------------


def naive_conv(x: np.ndarray, w: np.ndarray, b: Any, strides: list[int], dil: list[int],
               pb: list[int], pe: list[int], group: int) -> np.ndarray:  # fmt: skip
    n, c = x.shape[:2]
    nd = x.ndim - 2
    m = w.shape[0]
    k = w.shape[2:]
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(a, e) for a, e in zip(pb, pe)])
    out = [(xp.shape[2 + i] - ((k[i] - 1) * dil[i] + 1)) // strides[i] + 1 for i in range(nd)]
    y = np.zeros((n, m, *out))
    cg, mg = c // group, m // group
    for o in itertools.product(*(range(v) for v in out)):
        for kk in itertools.product(*(range(v) for v in k)):
            pos = tuple(o[i] * strides[i] + kk[i] * dil[i] for i in range(nd))
            for g in range(group):
                xs = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + pos]  # (n, cg)
                ws = w[(slice(g * mg, (g + 1) * mg), slice(None)) + kk]  # (mg, cg)
                y[(slice(None), slice(g * mg, (g + 1) * mg)) + o] += xs @ ws.T.astype(np.float64)
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nd)
    return y


def naive_conv_transpose(x: np.ndarray, w: np.ndarray, strides: list[int], dil: list[int],
                         pb: list[int], out: list[int], group: int) -> np.ndarray:  # fmt: skip
    """y[o] gets x[i] * w[k] where o = i*stride + k*dil - pad_begin, dropped when outside [0, out)."""
    n, c = x.shape[:2]
    nd = x.ndim - 2
    mg = w.shape[1]
    cg = c // group
    y = np.zeros((n, mg * group, *out))
    for i in itertools.product(*(range(v) for v in x.shape[2:])):
        for kk in itertools.product(*(range(v) for v in w.shape[2:])):
            o = tuple(i[d] * strides[d] + kk[d] * dil[d] - pb[d] for d in range(nd))
            if any(o[d] < 0 or o[d] >= out[d] for d in range(nd)):
                continue
            for g in range(group):
                xs = x[(slice(None), slice(g * cg, (g + 1) * cg)) + i].astype(np.float64)  # (n, cg)
                ws = w[(slice(g * cg, (g + 1) * cg), slice(None)) + kk].astype(np.float64)  # (cg, mg)
                y[(slice(None), slice(g * mg, (g + 1) * mg)) + o] += xs @ ws
    return y


# ---------------------------------------------------------------------------------------------
# Conv
# ---------------------------------------------------------------------------------------------


def _conv_combo(rng: np.random.Generator, nd: int) -> tuple[list[np.ndarray], dict[str, Any]]:
    group = int(rng.choice([1, 1, 2, 3]))
    depthwise = rng.random() < 0.2
    cg = int(rng.integers(1, 4))
    c = cg * group
    mg = int(rng.integers(1, 4))
    if depthwise:
        group, c, cg = 4, 4, 1
    m = mg * group
    k = [int(rng.integers(1, 4)) for _ in range(nd)]
    st = [int(rng.integers(1, 3)) for _ in range(nd)]
    dil = [int(rng.integers(1, 3)) for _ in range(nd)]
    size = [int(rng.integers(5, 10 if nd < 3 else 7)) for _ in range(nd)]
    x = rng.standard_normal((int(rng.integers(1, 3)), c, *size)).astype(np.float32)
    w = rng.standard_normal((m, cg, *k)).astype(np.float32)
    attrs: dict[str, Any] = {"group": group, "strides": st, "dilations": dil, "kernel_shape": k}
    mode = rng.choice(["NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"])
    if mode == "NOTSET":
        attrs["pads"] = [int(v) for v in rng.integers(0, 3, size=2 * nd)]
    else:
        attrs["auto_pad"] = str(mode)
    inputs = [x, w]
    if rng.random() < 0.6:
        inputs.append(rng.standard_normal(m).astype(np.float32))
    return inputs, attrs


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_random_vs_ort(nd: int) -> None:
    """Seeded random shapes and attribute combinations (groups incl. depthwise, strides, dilations,
    pads, auto_pad), compared with onnxruntime at Conv-11 and Conv-22."""
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(100 + nd)
    for i in range(24 if nd < 3 else 12):
        inputs, attrs = _conv_combo(rng, nd)
        if attrs.get("auto_pad", "").startswith("SAME") and any(d > 1 for d in attrs["dilations"]):
            # onnxruntime refuses dilations with SAME_*; the definition's rule, written out here.
            x, w = inputs[0], inputs[1]
            sp, st, dil = x.shape[2:], attrs["strides"], attrs["dilations"]
            out = [-(-i // s) for i, s in zip(sp, st)]
            total = [max(0, (o - 1) * s + (k - 1) * d + 1 - i) for o, s, k, d, i in zip(out, st, w.shape[2:], dil, sp)]
            small = [t // 2 for t in total]
            pb = small if attrs["auto_pad"] == "SAME_UPPER" else [t - h for t, h in zip(total, small)]
            pe = [t - b for t, b in zip(total, pb)]
            (y,) = run_ours("Conv", inputs, 22, attrs)
            ref = naive_conv(x, w, inputs[2] if len(inputs) > 2 else None, st, dil, pb, pe, attrs["group"])
            np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
            continue
        compare("Conv", inputs, 11 if i % 2 else 22, attrs, rtol=1e-4, atol=1e-4)


@pytest.mark.usefixtures("accel_path")
def test_conv_large_paths_vs_ort() -> None:
    """The fast paths: 1x1 (strided), stride-1 flat layout, depthwise, banded im2col of a large input, summed
    per-offset matmuls."""
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(5)
    cases = [
        ((1, 16, 20, 20), (8, 16, 1, 1), {"strides": [2, 2]}),
        ((2, 8, 17, 23), (12, 8, 3, 3), {"pads": [1, 1, 1, 1]}),
        ((1, 12, 15, 15), (24, 1, 3, 3), {"group": 12, "pads": [1, 1, 1, 1]}),
        ((1, 12, 15, 15), (12, 1, 5, 5), {"group": 12, "pads": [2, 2, 2, 2], "strides": [2, 2]}),
        ((1, 8, 150, 150), (16, 8, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
        ((1, 6, 9, 9, 9), (4, 3, 3, 3, 3), {"group": 2, "pads": [1] * 6}),
        ((1, 4, 30), (5, 4, 4), {"dilations": [3], "pads": [2, 1]}),
        # Few output channels per input channel: one matmul per kernel offset, summed (no im2col).
        ((2, 48, 21, 19), (8, 48, 3, 3), {"pads": [1, 2, 0, 1]}),
        ((1, 64, 40, 40), (16, 32, 3, 3), {"group": 2, "dilations": [2, 1], "pads": [2, 1, 2, 1]}),
        ((1, 24, 4, 40, 38), (6, 24, 3, 2, 3), {"pads": [1, 0, 1, 1, 1, 1]}),
        ((1, 30, 50), (4, 30, 5), {"auto_pad": "SAME_LOWER"}),
    ]
    for xs, ws, attrs in cases:
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal(ws).astype(np.float32)
        b = rng.standard_normal(ws[0]).astype(np.float32)
        compare("Conv", [x, w, b], 11, attrs, rtol=1e-4, atol=1e-4)


@pytest.mark.usefixtures("accel_path")
def test_conv_matches_naive_reference() -> None:
    """Conv-1 (onnxruntime has no kernel for it) against direct sums."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 2)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    (y,) = run_ours("Conv", [x, w, b], 1, {"group": 2, "strides": [2, 1], "dilations": [1, 2], "pads": [1, 0, 2, 1]})
    ref = naive_conv(x, w, b, [2, 1], [1, 2], [1, 0], [2, 1], 2)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    assert y.dtype == np.float32


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float64])
def test_conv_dtypes_round_once(dtype: Any) -> None:
    """Narrow floats compute in float32 and round once; float64 stays float64."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 3, 8, 8)).astype(dtype)
    w = rng.standard_normal((4, 3, 3, 3)).astype(dtype)
    (y,) = run_ours("Conv", [x, w], 22, {"pads": [1, 1, 1, 1]})
    assert y.dtype == np.dtype(dtype)
    if dtype == np.float64:
        np.testing.assert_allclose(y, naive_conv(x, w, None, [1, 1], [1, 1], [1, 1], [1, 1], 1), rtol=1e-12)
        return
    ref = naive_conv(x.astype(np.float32), w.astype(np.float32), None, [1, 1], [1, 1], [1, 1], [1, 1], 1)
    # One rounding of the float32 result: within one unit in the last place of the narrow type.
    eps = float(ml_dtypes.finfo(dtype).eps)
    np.testing.assert_allclose(y.astype(np.float32), ref.astype(dtype).astype(np.float32), rtol=eps, atol=eps)


def test_conv_rejects_bad_shapes() -> None:
    from onnxcore.errors import EvaluationError, ShapeError

    x = np.zeros((1, 4, 5, 5), np.float32)
    with pytest.raises(ShapeError):
        run_ours("Conv", [x, np.zeros((2, 3, 3, 3), np.float32)], 11, {})
    with pytest.raises(ShapeError):
        run_ours("Conv", [x, np.zeros((2, 4, 7, 7), np.float32)], 11, {})
    with pytest.raises(EvaluationError):
        run_ours("Conv", [x, np.zeros((2, 4, 3, 3), np.float32)], 11, {"auto_pad": "SAME"})


# ---------------------------------------------------------------------------------------------
# ConvTranspose
# ---------------------------------------------------------------------------------------------


def _convt_combo(rng: np.random.Generator, nd: int) -> tuple[list[np.ndarray], dict[str, Any]]:
    group = int(rng.choice([1, 1, 2]))
    c = int(rng.integers(1, 4)) * group
    mg = int(rng.integers(1, 4))
    k = [int(rng.integers(1, 4)) for _ in range(nd)]
    st = [int(rng.integers(1, 4)) for _ in range(nd)]
    dil = [int(rng.integers(1, 3)) for _ in range(nd)]
    size = [int(rng.integers(2, 6)) for _ in range(nd)]
    x = rng.standard_normal((int(rng.integers(1, 3)), c, *size)).astype(np.float32)
    w = rng.standard_normal((c, mg, *k)).astype(np.float32)
    attrs: dict[str, Any] = {"group": group, "strides": st, "dilations": dil}
    choice = rng.choice(["pads", "output_padding", "output_shape", "SAME_UPPER", "SAME_LOWER", "VALID"])
    if choice == "pads":
        attrs["pads"] = [int(v) for v in rng.integers(0, 2, size=2 * nd)]
    elif choice == "output_padding":
        attrs["output_padding"] = [int(rng.integers(0, s)) for s in st]
    elif choice == "output_shape":
        attrs["output_shape"] = [int(s * (i - 1) + (kk - 1) * d + 1 - rng.integers(0, 2))
                                 for s, i, kk, d in zip(st, size, k, dil)]  # fmt: skip
    else:
        attrs["auto_pad"] = str(choice)
    inputs = [x, w]
    if rng.random() < 0.5:
        inputs.append(rng.standard_normal(mg * group).astype(np.float32))
    return inputs, attrs


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_transpose_random_vs_ort(nd: int) -> None:
    """Seeded combinations of strides, dilations, groups, pads, output_padding, output_shape and
    auto_pad against onnxruntime (ConvTranspose-11 and -22)."""
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(200 + nd)
    for i in range(20 if nd < 3 else 10):
        inputs, attrs = _convt_combo(rng, nd)
        x, w = inputs[0], inputs[1]
        st, dil = attrs["strides"], attrs["dilations"]
        natural = [s * (n - 1) + (k - 1) * d + 1 for s, n, k, d in zip(st, x.shape[2:], w.shape[2:], dil)]
        target = [n * s for n, s in zip(x.shape[2:], st)]
        if attrs.get("auto_pad", "").startswith("SAME") and any(a < t for a, t in zip(natural, target)):
            # The kernel span is shorter than the stride: the definition still asks for
            # out = in * stride, splitting the negative padding with floor division (as the
            # ONNX 1-3 vectors do for output_shape); onnxruntime clamps it at zero instead.
            total = [a - t for a, t in zip(natural, target)]
            pb = [t // 2 if attrs["auto_pad"] == "SAME_UPPER" else t - t // 2 for t in total]
            (y,) = run_ours("ConvTranspose", inputs, 22, attrs)
            ref = naive_conv_transpose(x, w, st, dil, pb, target, attrs["group"])
            if len(inputs) > 2:
                ref += inputs[2].reshape((1, -1) + (1,) * nd)
            np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
            continue
        compare("ConvTranspose", inputs, 11 if i % 2 else 22, attrs, rtol=1e-4, atol=1e-4)


def test_conv_transpose_naive_and_legacy_split() -> None:
    """ConvTranspose-11 puts the odd padding element at the beginning unless SAME_UPPER; v1's text
    says the reverse. Both against direct sums."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    attrs = {"strides": [2, 2], "output_shape": [6, 8]}
    natural = [2 * 2 + 3, 2 * 3 + 3]  # 7, 9: total padding 1 on each axis
    for version, begin in ((11, [1, 1]), (1, [0, 0])):
        (y,) = run_ours("ConvTranspose", [x, w], version, attrs)
        ref = naive_conv_transpose(x, w, [2, 2], [1, 1], begin, [6, 8], 1)
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    (y,) = run_ours("ConvTranspose", [x, w], 11, {**attrs, "auto_pad": "SAME_UPPER"})
    np.testing.assert_allclose(y, naive_conv_transpose(x, w, [2, 2], [1, 1], [0, 0], [6, 8], 1), rtol=1e-5, atol=1e-5)
    assert natural == [7, 9]


# ---------------------------------------------------------------------------------------------
# DeformConv, Col2Im
# ---------------------------------------------------------------------------------------------


def test_deform_conv_zero_offset_is_conv() -> None:
    """With zero offsets and no mask DeformConv is Conv (groups, strides, dilations, pads)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 7, 8)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 2)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    attrs = {"group": 2, "strides": [2, 1], "dilations": [1, 2], "pads": [1, 0, 1, 1]}
    (ref,) = run_ours("Conv", [x, w, b], 11, attrs)
    off = np.zeros((2, 2 * 6 * 2, *ref.shape[2:]), np.float32)
    (y,) = run_ours("DeformConv", [x, w, off, b], 19, {**attrs, "offset_group": 2})
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_deform_conv_integer_offsets_shift_input() -> None:
    """An integer offset samples exactly the shifted pixel (zero outside); the mask scales taps."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 1, 5, 5)).astype(np.float32)
    w = np.ones((1, 1, 1, 1), np.float32)
    off = np.zeros((1, 2, 5, 5), np.float32)
    off[0, 0] = 1.0  # shift down one row
    mask = np.full((1, 1, 5, 5), 0.5, np.float32)
    (y,) = run_ours("DeformConv", [x, w, off, None, mask], 22, {})
    expected = np.zeros_like(x)
    expected[0, 0, :4] = x[0, 0, 1:] * 0.5
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_deform_conv_vs_ort() -> None:
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 4, 6, 7)).astype(np.float32)
    w = rng.standard_normal((4, 2, 2, 3)).astype(np.float32)
    out = (5, 5)
    off = (rng.standard_normal((2, 2 * 6 * 2, *out)) * 1.5).astype(np.float32)
    mask = rng.random((2, 2 * 6, *out)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    compare("DeformConv", [x, w, off, b, mask], 19, {"group": 2, "offset_group": 2, "pads": [0, 0, 0, 0]},
            rtol=1e-4, atol=1e-4)  # fmt: skip


def test_col2im_random_vs_ort() -> None:
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(13)
    for _ in range(10):
        img = [int(rng.integers(4, 9)) for _ in range(2)]
        blk = [int(rng.integers(1, 4)) for _ in range(2)]
        st = [int(rng.integers(1, 3)) for _ in range(2)]
        dil = [int(rng.integers(1, 3)) for _ in range(2)]
        pads = [int(v) for v in rng.integers(0, 2, size=4)]
        counts = [(i + pads[d] + pads[d + 2] - ((b - 1) * dl + 1)) // s + 1
                  for d, (i, b, s, dl) in enumerate(zip(img, blk, st, dil))]  # fmt: skip
        c = int(rng.integers(1, 3))
        x = rng.standard_normal((2, c * blk[0] * blk[1], counts[0] * counts[1])).astype(np.float32)
        compare("Col2Im", [x, np.array(img, np.int64), np.array(blk, np.int64)], 18,
                {"strides": st, "dilations": dil, "pads": pads}, rtol=1e-5, atol=1e-5)  # fmt: skip


def test_col2im_rejects_mismatched_blocks() -> None:
    from onnxcore.errors import ShapeError

    x = np.zeros((1, 4, 5), np.float32)
    with pytest.raises(ShapeError):
        run_ours("Col2Im", [x, np.array([3, 3], np.int64), np.array([2, 2], np.int64)], 18, {})


def test_conv_banded_im2col_matches_unbanded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building the columns in cache-sized bands changes nothing (strided and flat layouts, groups)."""
    import onnxcore.kernels.conv as conv_mod

    rng = np.random.default_rng(21)
    cases = [
        ((2, 6, 19, 17), (4, 3, 3, 2), {"group": 2, "strides": [2, 1], "pads": [1, 0, 1, 1]}),
        ((1, 4, 21, 21), (5, 4, 3, 3), {"pads": [1, 1, 1, 1]}),
        ((1, 6, 15, 15), (6, 1, 3, 3), {"group": 6, "pads": [1, 1, 1, 1]}),
    ]
    for xs, ws, attrs in cases:
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal(ws).astype(np.float32)
        monkeypatch.setattr(conv_mod, "_CHUNK_BYTES", 1 << 40)
        (whole,) = run_ours("Conv", [x, w], 11, attrs)
        monkeypatch.setattr(conv_mod, "_CHUNK_BYTES", 256)
        (banded,) = run_ours("Conv", [x, w], 11, attrs)
        np.testing.assert_allclose(banded, whole, rtol=1e-6, atol=1e-6)
        x64 = x.astype(np.float64)
        pads = attrs.get("pads", [0] * 4)
        ref = naive_conv(x64, w, None, attrs.get("strides", [1, 1]), [1, 1], pads[:2], pads[2:], attrs.get("group", 1))
        np.testing.assert_allclose(banded, ref, rtol=1e-4, atol=1e-4)


X4 = np.ones((1, 1, 3, 3), np.float32)
IDX = np.zeros((1, 1, 2, 2), np.int64)
COL = [np.ones((1, 4, 4), np.float32), np.array([3, 3]), np.array([2, 2])]


@pytest.mark.parametrize(
    ("op", "inputs", "opset", "attrs"),
    [
        # Found by a differential fuzz against onnxruntime: a ZeroDivisionError (Col2Im), a ValueError
        # (ConvTranspose) or a made-up shape (MaxUnpool, ConvTranspose dilations 0 or output_padding -1).
        ("Col2Im", COL, 18, {"strides": [0, 1]}),
        ("Col2Im", COL, 18, {"dilations": [0, 1]}),
        ("ConvTranspose", [X4, np.ones((1, 1, 2, 2), np.float32)], 11, {"strides": [0, 1]}),
        ("ConvTranspose", [X4, np.ones((1, 1, 2, 2), np.float32)], 11, {"dilations": [0, 1]}),
        ("ConvTranspose", [X4, np.ones((1, 1, 2, 2), np.float32)], 11, {"output_padding": [-1, 0]}),
        ("Conv", [X4, np.ones((1, 1, 2, 2), np.float32)], 11, {"strides": [1, -1]}),
        ("MaxUnpool", [X4[..., :2, :2], IDX], 11, {"kernel_shape": [2, 2], "strides": [0, 4]}),
        ("MaxUnpool", [X4[..., :2, :2], IDX], 11, {"kernel_shape": [0, 2]}),
        ("MaxUnpool", [X4[..., :2, :2], IDX], 11, {"kernel_shape": [2, 2], "pads": [-1, 0, 0, 0]}),
        ("LpPool", [X4], 18, {"kernel_shape": [2, 0]}),
        ("AveragePool", [X4], 19, {"kernel_shape": [2, 2], "dilations": [1, 0]}),
    ],
)
def test_spatial_attributes_out_of_range_are_refused(
    op: str, inputs: list[Any], opset: int, attrs: dict[str, Any]
) -> None:
    from onnxcore.errors import EvaluationError

    with pytest.raises(EvaluationError, match=r"must be (positive|non-negative)"):
        run_ours(op, inputs, opset, attrs)


@pytest.mark.parametrize("group", [1, 2, 8])
@pytest.mark.parametrize("kernel", [1, 2, 3])
@pytest.mark.parametrize("stride", [2, 3])
@pytest.mark.parametrize("extent", [1, 2, 3, 4])
def test_an_axis_of_one_output_with_a_stride_matches_onnxruntime(
    group: int, kernel: int, stride: int, extent: int
) -> None:
    """Clause 6 geometry: where an axis has one output, its stride is taken as 1 (the values are the same); every
    path must still read only the first window of an input larger than the output (a 1x1 kernel of stride 2 on a
    2x2 input was reshaped whole)."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto as TP
    from onnx import helper as oh
    from onnx import numpy_helper

    if extent < kernel:
        pytest.skip("no window fits")
    c, m = 8, 8
    rng = np.random.default_rng(extent * 100 + kernel * 10 + stride + group)
    w = rng.standard_normal((m, c // group, kernel, kernel)).astype(np.float32)
    x = rng.standard_normal((2, c, extent, extent)).astype(np.float32)
    g = oh.make_graph(
        [oh.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[kernel, kernel], strides=[stride, stride], group=group)],
        "g",
        [oh.make_tensor_value_info("x", TP.FLOAT, [2, c, extent, extent])],
        [oh.make_tensor_value_info("y", TP.FLOAT, ["n", "m", "h", "w"])],
        [numpy_helper.from_array(w, "w")],
    )
    model = oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])
    model.ir_version = 8
    data = model.SerializeToString()
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = onnxcore.Session(data).run(None, {"x": x})[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
