"""The optional compiled accelerator (:mod:`onnxcore.kernels.accel`, the ``accel`` extra): each accelerated kernel
against onnxruntime on the shapes the compiled loops treat specially (odd sizes, strides, dilations, padding,
float64, empty and non-contiguous inputs), on both paths (the ``accel_path`` fixture: pure numpy, then compiled);
the two paths against each other; hostile tree models on the compiled path (an index out of range is our
EvaluationError, never a read outside an array); and the switch itself (``ONNXCORE_ACCEL=0``, numba never imported
by ``import onnxcore``)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from kernels import compare, run_ours

pytest.importorskip("onnx")

from onnxcore.errors import EvaluationError
from onnxcore.kernels import accel
from onnxcore.kernels.conv import depthwise_accel, planar_for_shape
from onnxcore.kernels.fused.passes import gelu_bias_accel, hard_swish_bias_accel, swish_accel
from onnxcore.kernels.registry import lookup

needs_accel = pytest.mark.skipif(
    not accel.available(), reason="the accelerator is not available (numba not installed, or ONNXCORE_ACCEL=0)"
)


def _rand(shape: tuple[int, ...], dtype: Any, lo: float = -4.0, hi: float = 4.0, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# Erf, Gelu, HardSwish
# ---------------------------------------------------------------------------------------------

UNARY_SHAPES = [(0,), (1,), (17,), (3, 5, 7), (2, 70001)]
UNARY_OPS = [("Erf", 13, {}), ("Gelu", 20, {}), ("Gelu", 20, {"approximate": "tanh"}), ("HardSwish", 14, {})]


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("op", "opset", "attrs"), UNARY_OPS, ids=str)
def test_unary_vs_onnxruntime(op: str, opset: int, attrs: dict[str, Any], dtype: Any, shape: tuple[int, ...]) -> None:
    pytest.importorskip("onnxruntime")
    if attrs and dtype == np.float64:
        # onnxruntime's float64 tanh GELU is 4e-7 away from the definition in double (a float32 tanh, by the
        # size of it): test_tanh_gelu_against_its_definition_in_double holds ours to 1e-13.
        pytest.skip("onnxruntime's float64 tanh GELU is not the reference")
    x = _rand(shape, dtype)
    if x.size > 8:
        x.reshape(-1)[:8] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40, 3.0, -3.0]
    # atol: GELU's far negative tail, where onnxruntime's float32 erf differs by an ulp of 1 - erf.
    compare(
        op, [x], opset, attrs, rtol=2e-6 if dtype == np.float32 else 1e-13, atol=1e-6 if dtype == np.float32 else 1e-15
    )


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize(("op", "opset"), [("Erf", 13), ("Gelu", 20), ("HardSwish", 14)])
def test_unary_non_contiguous_input(op: str, opset: int) -> None:
    pytest.importorskip("onnxruntime")
    x = _rand((40, 33), np.float32)[::2, 1::3].T  # strided and transposed
    assert not x.flags.c_contiguous
    compare(op, [x], opset, rtol=2e-6, atol=1e-6)


@needs_accel
@pytest.mark.parametrize(("op", "opset", "attrs"), UNARY_OPS, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_paths_agree(op: str, opset: int, attrs: dict[str, Any], dtype: Any) -> None:
    """float32 Erf and both Gelus, and HardSwish in both types: the compiled loop evaluates the numpy kernel's
    formula operation for operation, so the results are equal bit for bit (float64 Erf and Gelu have no compiled
    path)."""
    x = np.concatenate([_rand((300_001,), dtype, -6, 6), np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dtype)])
    with accel.use(False):
        (a,) = run_ours(op, [x], opset, attrs)
    with accel.use(True):
        (b,) = run_ours(op, [x], opset, attrs)
    np.testing.assert_array_equal(a, b)
    assert np.signbit(a).tolist() == np.signbit(b).tolist()


@needs_accel
def test_bias_gelu_paths_agree() -> None:
    """com.microsoft BiasGelu: the compiled pass (addition and GELU together) equals the two numpy steps."""
    from onnxcore.kernels.contrib.activation import bias_gelu

    a = _rand((3, 7, 129), np.float32, -6, 6)
    a[0, 0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    b = _rand((129,), np.float32, seed=1)
    with accel.use(False), np.errstate(invalid="ignore"):
        y0 = bias_gelu(a, b)
    with accel.use(True):
        y1 = bias_gelu(a, b)
        assert bias_gelu(a[:0], b).shape == (0, 7, 129)
    np.testing.assert_array_equal(y0, y1)


# ---------------------------------------------------------------------------------------------
# Swish / SiLU (float32: a vectorised exp, within 4 ulp of the value in double)
# ---------------------------------------------------------------------------------------------

_SWISH_SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 88.0, -88.0, -89.5, -103.0, -150.0, 1e30, -1e30]


def _swish_reference(x: np.ndarray, alpha: float) -> np.ndarray:
    """``x / (1 + exp(-a))`` in double, ``a`` the float32 product ``alpha * x`` as the kernels make it."""
    a = (x * np.float32(alpha)).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(np.float64) / (1.0 + np.exp(-a))


@pytest.mark.parametrize("alpha", [1.0, 1.702, 0.5])
@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=str)
def test_swish_against_double(shape: tuple[int, ...], alpha: float, accel_path: str) -> None:
    """Swish-24 (the fused SiLU's kernel too) in float32 on both paths, against the value in double: within 4 ulp
    (4.8e-7 relative; ``tools/swish_accel_ulp.py`` finds at most 3.87 over every float32 of [-104, 104]) for the
    compiled loop and for numpy's ``x / (1 + exp(-a))``; absolute 1.2e-38 (the least normal float32) where the
    compiled result is subnormal, 3e-37 on the numpy path (its ``exp`` overflows from a = -88.7 on, giving -0 where
    the value is up to 2.7e-37 in magnitude)."""
    x = _rand(shape, np.float32, -30, 30, seed=21)
    if x.size > len(_SWISH_SPECIAL):
        x.reshape(-1)[: len(_SWISH_SPECIAL)] = _SWISH_SPECIAL
    (y,) = run_ours("Swish", [x], 24, {"alpha": alpha})
    assert y.dtype == np.float32 and y.shape == x.shape
    atol = 1.2e-38 if accel_path == "accel" else 3e-37
    np.testing.assert_allclose(y.astype(np.float64), _swish_reference(x, alpha), rtol=4.8e-7, atol=atol)
    # NaN stays NaN; -inf gives NaN (-inf / inf) on both paths, as numpy's formula does.
    flat = y.reshape(-1)
    if x.size > len(_SWISH_SPECIAL):
        assert np.isnan(flat[0]) and flat[1] == np.inf and np.isnan(flat[2])
        assert np.signbit(flat[4]) and flat[3] == 0


@needs_accel
def test_silu_fusion_paths_agree_with_onnxruntime() -> None:
    """The SiLU fusion of an EfficientNet-style ``x * Sigmoid(x)`` on both paths, and ``intermediates=True`` (the
    nodes as written), against the value in double (4 ulp) and onnxruntime's unfused nodes."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    import onnxcore

    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 24, 30, 31])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 24, 30, 31])],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    model = m.SerializeToString()
    x = _rand((1, 24, 30, 31), np.float32, -12, 12, seed=22)
    (want,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    ref = _swish_reference(x, 1.0)
    s = onnxcore.Session(model)
    for on in (False, True):
        with accel.use(on):
            (y,) = s.run(None, {"x": x})
            (yw,), _ = s.run(None, {"x": x}, intermediates=True)
        np.testing.assert_allclose(y, ref, rtol=4.8e-7, atol=0)
        np.testing.assert_allclose(yw, ref, rtol=4.8e-7, atol=0)
        # onnxruntime's own logistic is an approximation (about 1e-7 absolute).
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-6)


# ---------------------------------------------------------------------------------------------
# LayerNormalization, RMSNormalization (rows of any length: the sixteen partial sums and their tail)
# ---------------------------------------------------------------------------------------------

ROWS = [(3, 1), (2, 15), (4, 17), (2, 5, 64), (7, 768), (3, 1000)]


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("shape", ROWS, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm_vs_onnxruntime(shape: tuple[int, ...], bias: bool) -> None:
    pytest.importorskip("onnxruntime")
    x = _rand(shape, np.float32, -3, 5, seed=11)
    scale = _rand(shape[-1:], np.float32, seed=12)
    inputs = [x, scale] + ([_rand(shape[-1:], np.float32, seed=13)] if bias else [])
    compare("LayerNormalization", inputs, 17, {"axis": -1}, n_outputs=3, rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("shape", ROWS, ids=str)
def test_rms_norm_vs_onnxruntime(shape: tuple[int, ...]) -> None:
    pytest.importorskip("onnxruntime")
    x = _rand(shape, np.float32, -3, 5, seed=14)
    compare("RMSNormalization", [x, _rand(shape[-1:], np.float32, seed=15)], 23, {"axis": -1}, rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("shape", ROWS, ids=str)
def test_norms_float64_against_the_formula(shape: tuple[int, ...]) -> None:
    x = _rand(shape, np.float64, -3, 5, seed=16)
    scale, bias = _rand(shape[-1:], np.float64, seed=17), _rand(shape[-1:], np.float64, seed=18)
    y, mean, inv = run_ours("LayerNormalization", [x, scale, bias], 17, {"axis": -1, "stash_type": 11})
    m = x.mean(-1, keepdims=True)
    ref_inv = 1 / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(mean, m, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(inv, ref_inv, rtol=1e-12)
    np.testing.assert_allclose(y, (x - m) * ref_inv * scale + bias, rtol=1e-12, atol=1e-12)
    (r,) = run_ours("RMSNormalization", [x, scale], 23, {"axis": -1, "stash_type": 11})
    np.testing.assert_allclose(r, x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * scale, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Depthwise convolution
# ---------------------------------------------------------------------------------------------

DEPTHWISE = [
    # (N, C, H, W), kernel, strides, dilations, pads (top, left, bottom, right)
    ((1, 8, 14, 14), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    ((2, 5, 9, 11), (5, 5), (1, 1), (1, 1), (2, 2, 2, 2)),
    ((1, 6, 13, 17), (7, 7), (1, 1), (1, 1), (3, 3, 3, 3)),
    ((1, 4, 15, 16), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)),
    ((1, 3, 17, 19), (3, 5), (2, 3), (1, 1), (0, 2, 1, 0)),
    ((2, 3, 12, 12), (3, 3), (1, 1), (2, 3), (2, 3, 2, 3)),
    ((1, 4, 10, 9), (4, 2), (3, 1), (2, 2), (0, 0, 0, 0)),
    ((1, 2, 5, 6), (1, 1), (1, 1), (1, 1), (1, 0, 0, 1)),
    ((1, 3, 7, 7), (7, 7), (1, 1), (1, 1), (0, 0, 0, 0)),
    ((1, 2, 1, 1), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    ((1, 16, 3, 40), (1, 9), (1, 4), (1, 1), (0, 4, 0, 4)),
    # 64 channels or more on small images: the channels-last loop; a large strided image: the phase-split one.
    ((1, 64, 7, 9), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    ((2, 96, 15, 13), (5, 5), (2, 2), (1, 1), (2, 1, 2, 2)),
    ((1, 72, 11, 12), (3, 3), (2, 1), (2, 2), (2, 2, 1, 1)),
    ((1, 64, 70, 66), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)),
    ((1, 64, 40, 41), (7, 7), (3, 2), (1, 2), (3, 3, 3, 3)),
    # Planes of more outputs than one tile of sums (1,024); a column stride of 2 with an even and an odd left pad
    # and an odd width (the pairwise de-interleaving and its last column).
    ((1, 5, 60, 61), (5, 5), (1, 1), (1, 1), (2, 2, 2, 2)),
    ((1, 3, 90, 91), (3, 3), (2, 2), (1, 1), (1, 0, 1, 1)),
    ((1, 3, 80, 77), (3, 3), (2, 2), (2, 2), (2, 3, 2, 3)),
    ((1, 2, 33, 35), (5, 5), (1, 2), (1, 1), (2, 2, 2, 2)),
]


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize(("xs", "k", "st", "dil", "pads"), DEPTHWISE, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_depthwise_vs_onnxruntime(
    xs: tuple[int, ...],
    k: tuple[int, int],
    st: tuple[int, int],
    dil: tuple[int, int],
    pads: tuple[int, ...],
    bias: bool,
) -> None:
    pytest.importorskip("onnxruntime")
    c = xs[1]
    x = _rand(xs, np.float32, seed=1)
    w = _rand((c, 1, *k), np.float32, -1, 1, seed=2)
    inputs = [x, w] + ([_rand((c,), np.float32, seed=3)] if bias else [])
    attrs = {"group": c, "strides": list(st), "dilations": list(dil), "pads": list(pads)}
    compare("Conv", inputs, 11, attrs, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize(("xs", "k", "st", "dil", "pads"), DEPTHWISE, ids=str)
def test_depthwise_float64_against_direct_sums(
    xs: tuple[int, ...], k: tuple[int, int], st: tuple[int, int], dil: tuple[int, int], pads: tuple[int, ...]
) -> None:
    """float64 (onnxruntime has no double Conv): against the direct sum over the taps written here."""
    c = xs[1]
    x = _rand(xs, np.float64, seed=4)
    w = _rand((c, 1, *k), np.float64, -1, 1, seed=5)
    b = _rand((c,), np.float64, seed=6)
    attrs = {"group": c, "strides": list(st), "dilations": list(dil), "pads": list(pads)}
    (y,) = run_ours("Conv", [x, w, b], 11, attrs)
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (xp.shape[2] - dil[0] * (k[0] - 1) - 1) // st[0] + 1
    ow = (xp.shape[3] - dil[1] * (k[1] - 1) - 1) // st[1] + 1
    ref = np.zeros((xs[0], c, oh, ow)) + b[:, None, None]
    for i in range(k[0]):
        for j in range(k[1]):
            win = xp[:, :, i * dil[0] :, j * dil[1] :][
                :, :, : (oh - 1) * st[0] + 1 : st[0], : (ow - 1) * st[1] + 1 : st[1]
            ]
            ref += win * w[None, :, 0, i, j, None, None]
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12)


@needs_accel
@pytest.mark.parametrize("kw", [1, 2, 3, 4, 5, 6, 7, 11])
@pytest.mark.parametrize(("sx", "dx"), [(1, 1), (2, 1), (3, 1), (1, 2), (2, 2)])
def test_planar_depthwise_rows_of_taps(kw: int, sx: int, dx: int) -> None:
    """The planar compiled loops take a kernel row's taps in dense runs (column dilation 1: consecutive places, or
    with a column stride each phase's consecutive places) or one slice per tap: every row width up to 7 and 11
    (runs of 5 and remainders), strides and dilations, against the direct sum over the taps, in float64."""
    c, kh = 3, 3
    x = _rand((2, c, 9, 17), np.float64, seed=kw * 10 + sx)
    w = _rand((c, 1, kh, kw), np.float64, -1, 1, seed=dx)
    b = _rand((c,), np.float64, seed=3)
    pads, st, dil = (1, kw // 2), (1, sx), (1, dx)
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[0]), (pads[1], pads[1])))
    oh = xp.shape[2] - (kh - 1) - 1 + 1
    ow = (xp.shape[3] - dx * (kw - 1) - 1) // sx + 1
    ref = np.zeros((2, c, oh, ow)) + b[:, None, None]
    for i in range(kh):
        for j in range(kw):
            ref += xp[:, :, i : i + oh, j * dx :][:, :, :, : (ow - 1) * sx + 1 : sx] * w[None, :, 0, i, j, None, None]
    y = depthwise_accel(x, w, pads, st, dil, (oh, ow), b, channels_last=False)
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12)


@needs_accel
@pytest.mark.parametrize(("kh", "kw"), [(1, 1), (3, 3), (5, 2), (7, 7)])
@pytest.mark.parametrize(("sy", "sx", "dy", "dx"), [(1, 1, 1, 1), (2, 2, 1, 1), (1, 3, 2, 1), (2, 1, 1, 2)])
@pytest.mark.parametrize(("c", "m", "groups"), [(3, 5, 1), (8, 6, 2)])
def test_planar_conv_against_direct_sums(
    kh: int, kw: int, sy: int, sx: int, dy: int, dx: int, c: int, m: int, groups: int
) -> None:
    """The plane-by-plane loop (every tap of a group's input planes in passes of up to nine, read at unsigned
    offsets into the planes' phases): in float64 against the direct sum over the taps, any kernel, stride,
    dilation, uneven pads, groups, bias or none."""
    x = _rand((2, c, 13, 11), np.float64, seed=kh * 7 + sx)
    w = _rand((m, c // groups, kh, kw), np.float64, -1, 1, seed=dy + 3 * dx)
    b = _rand((m,), np.float64, seed=5)
    pt, pl, pbot, pr = kh // 2, kw // 2, (kh - 1) // 2, 1
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pbot), (pl, pr)))
    oh = (xp.shape[2] - dy * (kh - 1) - 1) // sy + 1
    ow = (xp.shape[3] - dx * (kw - 1) - 1) // sx + 1
    cg, mg = c // groups, m // groups
    ref = np.zeros((2, m, oh, ow))
    for o in range(m):
        g = o // mg
        for ci in range(cg):
            for i in range(kh):
                for j in range(kw):
                    win = xp[:, g * cg + ci, i * dy :, j * dx :][:, : (oh - 1) * sy + 1 : sy, : (ow - 1) * sx + 1 : sx]
                    ref[:, o] += win * w[o, ci, i, j]
    run = planar_for_shape(x.shape, x.dtype, w.shape, (pt, pl), (sy, sx), (dy, dx), (oh, ow))
    np.testing.assert_allclose(run(x, w, b), ref + b[:, None, None], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(run(x, w, None), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.usefixtures("accel_path")
def test_depthwise_empty_and_non_contiguous() -> None:
    pytest.importorskip("onnxruntime")
    w = _rand((6, 1, 3, 3), np.float32, seed=7)
    attrs = {"group": 6, "pads": [1, 1, 1, 1]}
    (y,) = run_ours("Conv", [np.zeros((0, 6, 5, 5), np.float32), w], 11, attrs)
    assert y.shape == (0, 6, 5, 5)
    x = _rand((2, 12, 9, 14), np.float32, seed=8)[:, ::2, :, ::-2]  # every other channel, columns reversed
    assert not x.flags.c_contiguous
    compare("Conv", [x, w], 11, attrs, rtol=1e-5, atol=1e-5)


@needs_accel
def test_depthwise_paths_agree() -> None:
    """The compiled loops and numpy's einsum sum the taps in other orders: within float32's rounding of the sum."""
    x = _rand((2, 64, 20, 23), np.float32, seed=9)
    w = _rand((64, 1, 5, 5), np.float32, -1, 1, seed=10)
    attrs = {"group": 64, "pads": [2, 2, 2, 2], "strides": [1, 2]}
    with accel.use(False):
        (a,) = run_ours("Conv", [x, w], 11, attrs)
    with accel.use(True):
        (b,) = run_ours("Conv", [x, w], 11, attrs)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * float(np.abs(a).max()))


# ---------------------------------------------------------------------------------------------
# AveragePool, stride 1, output of the input's extents (the compiled separable box mean)
# ---------------------------------------------------------------------------------------------

BOX = [
    # (N, C, H, W), kernel, pads (top, left, bottom, right)
    ((1, 48, 56, 56), (3, 3), (1, 1, 1, 1)),  # EfficientFormer's pooling mixer: one plane per block
    ((1, 448, 7, 7), (3, 3), (1, 1, 1, 1)),  # many small planes per block, and a partial last block
    ((2, 3, 9, 11), (5, 3), (2, 0, 2, 2)),
    ((1, 2, 4, 5), (5, 5), (2, 2, 2, 2)),  # windows wider than the image
    ((1, 3, 8, 8), (2, 2), (1, 1, 0, 0)),  # even kernel, the padding on one side
    ((1, 2, 1, 1), (3, 3), (1, 1, 1, 1)),
    ((1, 5, 3, 40), (1, 7), (0, 3, 0, 3)),
]


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize(("xs", "k", "pads"), BOX, ids=str)
@pytest.mark.parametrize("include_pad", [0, 1])
def test_box_mean_vs_onnxruntime(
    xs: tuple[int, ...], k: tuple[int, int], pads: tuple[int, ...], include_pad: int
) -> None:
    pytest.importorskip("onnxruntime")
    x = _rand(xs, np.float32, seed=31)
    attrs = {"kernel_shape": list(k), "pads": list(pads), "count_include_pad": include_pad}
    compare("AveragePool", [x], 19, attrs, rtol=1e-5, atol=1e-6)


@pytest.mark.usefixtures("accel_path")
def test_box_mean_keeps_values_in_their_windows() -> None:
    """An infinity and a NaN reach exactly the outputs whose windows hold them (the neighbouring row's or plane's
    values are selected away, never multiplied by zero); float64 and a non-contiguous input against the direct
    sum over the window written here."""
    x = _rand((2, 3, 6, 7), np.float64, seed=32)
    x[0, 1, 2, 6] = np.inf
    x[1, 0, 0, 0] = np.nan
    xin = np.ascontiguousarray(np.swapaxes(x, 0, 1)).swapaxes(0, 1)  # the same values, another memory order
    assert not xin.flags.c_contiguous
    (y,) = run_ours("AveragePool", [xin], 19, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ones = np.pad(np.ones(x.shape[2:]), 1)
    ref = np.zeros(x.shape)
    for i in range(6):
        for j in range(7):
            with np.errstate(invalid="ignore"):
                ref[:, :, i, j] = xp[:, :, i : i + 3, j : j + 3].sum(axis=(2, 3)) / ones[i : i + 3, j : j + 3].sum()
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-15)
    assert np.isinf(y[0, 1]).sum() == 6 and np.isnan(y[1, 0]).sum() == 4 and np.isfinite(y[:, 2]).all()


# ---------------------------------------------------------------------------------------------
# Tree ensembles: hostile models on the compiled path
# ---------------------------------------------------------------------------------------------

_BASE = dict(
    nodes_treeids=[0, 0, 0, 0, 0],
    nodes_nodeids=[0, 1, 2, 3, 4],
    nodes_featureids=[0, 1, 0, 0, 0],
    nodes_modes=["BRANCH_LEQ", "BRANCH_LT", "LEAF", "LEAF", "LEAF"],
    nodes_values=[0.0, 0.5, 0.0, 0.0, 0.0],
    nodes_truenodeids=[1, 3, 0, 0, 0],
    nodes_falsenodeids=[2, 4, 0, 0, 0],
    target_treeids=[0, 0, 0],
    target_nodeids=[2, 3, 4],
    target_ids=[0, 0, 0],
    target_weights=[1.0, 2.0, 3.0],
    n_targets=1,
)


def _regress(x: np.ndarray, **changes: Any) -> np.ndarray:
    fn = lookup("ai.onnx.ml", "TreeEnsembleRegressor", 3).fn
    return np.asarray(fn(x, **dict(_BASE, **changes)))


@pytest.mark.usefixtures("accel_path")
def test_tree_small_model_routes_rows() -> None:
    x = np.array([[1.0, 0.0], [-1.0, 0.0], [-1.0, 1.0], [np.nan, 0.0]], np.float32)
    assert _regress(x).ravel().tolist() == [1.0, 2.0, 3.0, 1.0]
    # NaN routed to the true child where the node says so (the general walk).
    y = _regress(x, nodes_missing_value_tracks_true=[1, 0, 0, 0, 0])
    assert y.ravel().tolist() == [1.0, 2.0, 3.0, 2.0]


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize(
    "changes",
    [
        {"nodes_featureids": [0, 2, 0, 0, 0]},  # X has 2 features
        {"nodes_featureids": [0, 2**40, 0, 0, 0]},
        {"nodes_featureids": [-1, 1, 0, 0, 0]},
        {"nodes_truenodeids": [1, 9, 0, 0, 0]},
        {"nodes_falsenodeids": [2, -4, 0, 0, 0]},
        {"nodes_modes": ["BRANCH_LEQ", "BRANCH_MEMBER", "LEAF", "LEAF", "LEAF"]},  # no member set
        {"target_nodeids": [2, 3, 7]},
    ],
    ids=str,
)
def test_tree_hostile_indices_are_refused(changes: dict[str, Any]) -> None:
    x = np.array([[1.0, 0.0], [-1.0, 2.0]], np.float32)
    with pytest.raises(EvaluationError):
        _regress(x, **changes)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize(
    "changes",
    [
        {"nodes_featureids": [0, 5]},
        {"nodes_truenodeids": [1, 2]},
        {"nodes_falseleafs": [1, 1], "nodes_falsenodeids": [0, 3]},
        {"tree_roots": [2]},
        {"tree_roots": [-1]},
    ],
    ids=str,
)
def test_tree_ensemble_5_hostile_indices_are_refused(changes: dict[str, Any]) -> None:
    attrs: dict[str, Any] = dict(
        nodes_featureids=[0, 1],
        nodes_modes=np.array([0, 0], np.uint8),
        nodes_splits=np.array([0.0, 0.5], np.float32),
        nodes_truenodeids=[1, 0],
        nodes_falsenodeids=[0, 1],
        nodes_trueleafs=[0, 1],
        nodes_falseleafs=[1, 1],
        leaf_targetids=[0, 0],
        leaf_weights=np.array([1.0, 2.0], np.float32),
        tree_roots=[0],
    )
    fn = lookup("ai.onnx.ml", "TreeEnsemble", 5).fn
    x = np.array([[1.0, 0.0], [-1.0, 2.0]], np.float32)
    fn(x, **attrs)  # the valid model runs
    with pytest.raises(EvaluationError):
        fn(x, **dict(attrs, **changes))


@needs_accel
def test_tree_tables_are_checked_before_the_compiled_walk() -> None:
    """Defence in depth: a table corrupted after validation (which no model can do) is refused by the check made
    before the first compiled walk, not followed."""
    from onnxcore.kernels._tree_eval import CompiledForest
    from onnxcore.kernels.ml_tree import _legacy_forest

    forest, _ = _legacy_forest(_BASE, "target", 1, "target_ids")
    x = np.array([[1.0, 0.0]], np.float32)
    for corrupt in ("child", "roots", "state_mode"):
        compiled = CompiledForest(forest)
        table = getattr(compiled, corrupt).copy()
        table[0] = 100 if corrupt == "state_mode" else 10**6
        setattr(compiled, corrupt, table)
        with accel.use(True), pytest.raises(EvaluationError, match="out of range"):
            compiled.states(x)


# ---------------------------------------------------------------------------------------------
# The switch
# ---------------------------------------------------------------------------------------------


def _python(code: str, **env: str) -> str:
    full = dict(os.environ, **env)
    full["PYTHONPATH"] = os.pathsep.join(p for p in [str(_src()), full.get("PYTHONPATH", "")] if p)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=full).stdout


def _src() -> Any:
    from pathlib import Path

    return Path(__file__).resolve().parents[2] / "src"


def test_import_onnxcore_loads_no_numba() -> None:
    code = "import sys, onnxcore, onnxcore.kernels; onnxcore.kernels.load_all(); print('numba' in sys.modules)"
    assert _python(code).strip() == "False"


def test_environment_variable_turns_it_off() -> None:
    code = (
        "import sys, numpy as np\n"
        "from onnxcore.kernels import accel, run\n"
        "y = run('Erf', 13, np.ones(3, np.float32))\n"
        "print(accel.available(), accel.enabled(), 'numba' in sys.modules)\n"
    )
    assert _python(code, ONNXCORE_ACCEL="0").split() == ["False", "False", "False"]


@needs_accel
def test_loaded_says_whether_numba_is_in_without_importing_it() -> None:
    """``accel.loaded()`` (small arrays take a compiled loop only once numba is in) never imports numba; it turns
    true with the first kernel that asks, and false while the compiled path is switched off."""
    code = (
        "import sys\n"
        "from onnxcore.kernels import accel\n"
        "before = accel.loaded(), 'numba' in sys.modules\n"
        "accel.enabled()\n"
        "with accel.use(False):\n"
        "    off = accel.loaded()\n"
        "print(*before, accel.loaded(), off)\n"
    )
    assert _python(code).split() == ["False", "False", "True", "False"]


def test_a_broken_numba_leaves_the_numpy_path() -> None:
    """numba installed but unusable (here a module without ``njit``): the kernels run on numpy, no error."""
    code = (
        "import sys, types, importlib.machinery as im, numpy as np\n"
        "m = types.ModuleType('numba'); m.__spec__ = im.ModuleSpec('numba', None); sys.modules['numba'] = m\n"
        "from onnxcore.kernels import accel, run\n"
        "(y,) = run('Erf', 13, np.ones(2, np.float32))\n"
        "print(accel.available(), accel.enabled(), y.dtype)\n"
    )
    assert _python(code).split() == ["False", "False", "float32"]


@needs_accel
def test_use_switches_the_path() -> None:
    assert accel.enabled()
    with accel.use(False):
        assert not accel.enabled()
        with accel.use(True):
            assert accel.enabled()
        assert not accel.enabled()
    assert accel.enabled()


_MUTATION_CHILD = r"""
import sys
import numpy as np
from onnxcore.errors import OnnxCoreError
from onnxcore.kernels import accel
from onnxcore.kernels.registry import lookup

rng = np.random.default_rng(int(sys.argv[1]))
regress = lookup("ai.onnx.ml", "TreeEnsembleRegressor", 3).fn
ensemble = lookup("ai.onnx.ml", "TreeEnsemble", 5).fn
WILD = [-1, -(2**31), 2**31, 2**40, 15, 16, 45, 4, 5, 1000]


def wild() -> int:
    return int(rng.choice(WILD)) if rng.random() < 0.7 else int(rng.integers(-50, 50))


def legacy() -> dict:
    a = {k: [] for k in ("nodes_treeids nodes_nodeids nodes_featureids nodes_modes nodes_values nodes_truenodeids "
                         "nodes_falsenodeids nodes_missing_value_tracks_true target_treeids target_nodeids target_ids "
                         "target_weights").split()}
    for t in range(3):
        for i in range(15):
            leaf = i >= 7
            modes = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_EQ"]
            for k, v in (("nodes_treeids", t), ("nodes_nodeids", i), ("nodes_featureids", int(rng.integers(4))),
                         ("nodes_modes", "LEAF" if leaf else modes[int(rng.integers(4))]),
                         ("nodes_values", float(rng.standard_normal())),
                         ("nodes_truenodeids", 0 if leaf else 2 * i + 1),
                         ("nodes_falsenodeids", 0 if leaf else 2 * i + 2),
                         ("nodes_missing_value_tracks_true", int(rng.integers(2)))):
                a[k].append(v)
            if leaf:
                for k, v in (("target_treeids", t), ("target_nodeids", i), ("target_ids", int(rng.integers(2))),
                             ("target_weights", float(rng.standard_normal()))):
                    a[k].append(v)
    a["n_targets"] = 2
    return a


def v5() -> dict:
    # Two trees of 3 interior nodes each (a root and two children), 4 leaves each.
    return dict(
        nodes_featureids=[int(rng.integers(4)) for _ in range(6)],
        nodes_modes=np.array(rng.integers(0, 6, 6), np.uint8),
        nodes_splits=rng.standard_normal(6).astype(np.float32),
        nodes_truenodeids=[1, 0, 2, 4, 4, 6], nodes_falsenodeids=[2, 1, 3, 5, 5, 7],
        nodes_trueleafs=[0, 1, 1, 0, 1, 1], nodes_falseleafs=[0, 1, 1, 0, 1, 1],
        leaf_targetids=[0] * 8, leaf_weights=rng.standard_normal(8).astype(np.float32), tree_roots=[0, 3],
        nodes_missing_value_tracks_true=[int(rng.integers(2)) for _ in range(6)],
    )


for it in range(int(sys.argv[2])):
    legacy_model = it % 2 == 0
    a = legacy() if legacy_model else v5()
    keys = [k for k, v in a.items() if isinstance(v, list) and v and isinstance(v[0], int)]
    for _ in range(int(rng.integers(1, 4))):
        k = keys[int(rng.integers(len(keys)))]
        a[k][int(rng.integers(len(a[k])))] = wild()
    x = rng.standard_normal((int(rng.integers(0, 40)), int(rng.integers(1, 6))))
    x = x.astype(np.float32 if rng.random() < 0.5 else np.float64)
    x[rng.random(x.shape) < 0.1] = np.nan
    try:
        with np.errstate(all="ignore"):
            (regress if legacy_model else ensemble)(x, **a)
    except OnnxCoreError:
        pass
print("ok", accel.enabled())
"""


@pytest.mark.usefixtures("accel_path")
def test_tree_index_mutations_never_crash(accel_path: str) -> None:
    """Seeded random out-of-range indices in every id attribute of tree models (legacy encoding and TreeEnsemble-5),
    run in a child process (a read outside an array could kill it): each run gives a result or our error."""
    full = dict(os.environ, ONNXCORE_ACCEL="1" if accel_path == "accel" else "0")
    full["PYTHONPATH"] = os.pathsep.join(p for p in [str(_src()), full.get("PYTHONPATH", "")] if p)
    proc = subprocess.run(
        [sys.executable, "-c", _MUTATION_CHILD, "7", "600"], capture_output=True, text=True, env=full, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["ok", str(accel_path == "accel")]


@needs_accel
@pytest.mark.parametrize("activation", ["SiLU", "GELU", "HardSwish"])
@pytest.mark.parametrize("shape", [(1, 96, 80, 80), (2, 7, 3, 5), (1, 1152, 5, 5)], ids=str)
def test_conv_epilogue_in_place_is_the_pass_into_a_new_array(activation: str, shape: tuple[int, ...]) -> None:
    """ConvActivation's bias and activation on the Conv's fresh output in place (its own loops: the two-array loops
    run scalar when both arrays are one): the same bits as into a new array, the output itself returned; an output
    that is not contiguous takes the pass into a new array."""
    passes = {
        "SiLU": lambda y, b, inplace: swish_accel(y, 1.0, b, inplace=inplace),
        "GELU": lambda y, b, inplace: gelu_bias_accel(y, b, inplace=inplace),
        "HardSwish": lambda y, b, inplace: hard_swish_bias_accel(y, b, inplace=inplace),
    }
    run = passes[activation]
    y = _rand(shape, np.float32, -8, 8, seed=21)
    y.reshape(-1)[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-40]
    b = _rand((shape[1],), np.float32, -1, 1, seed=22)
    want = run(y.copy(), b, False)
    got = y.copy()
    assert run(got, b, True) is got
    assert got.tobytes() == want.tobytes()
    strided = np.repeat(y, 2, axis=-1)[..., ::2]
    assert not strided.flags.c_contiguous
    other = run(strided, b, True)
    assert other is not strided and other.tobytes() == want.tobytes()


_ML_CACHE_CHILD = """
import hashlib
import numpy as np
from onnxcore.kernels import accel
from onnxcore.kernels.ml import _Imputer, _Normalizer, _Scaler
from onnxcore.kernels.ml_linear import _LinearClassifier, _LinearRegressor

rng = np.random.default_rng(5)
digest = hashlib.sha256()
for f in (7, 300, 1500):
    x = rng.standard_normal((3, f)).astype(np.float32)
    x[1, 2] = np.nan
    kernels = [_Normalizer(norm=n) for n in ("MAX", "L1", "L2")]
    kernels += [_Scaler(offset=[0.5], scale=[2.0]), _Imputer(imputed_value_floats=[1.0], replaced_value_float=np.nan)]
    kernels += [_LinearClassifier(coefficients=list(rng.standard_normal(3 * f)), classlabels_ints=[1, 2, 3],
                                  post_transform="SOFTMAX"),
                _LinearRegressor(coefficients=list(rng.standard_normal(f)), post_transform="LOGISTIC")]
    for k in kernels:
        out = k(x)
        for a in out if isinstance(out, tuple) else (out,):
            digest.update(a.tobytes())
print(accel.enabled(), digest.hexdigest())
"""


@needs_accel
def test_ml_loops_load_from_numbas_disk_cache_in_a_later_process(tmp_path: Any) -> None:
    """The ML family's compiled loops (_jit_ml: the linear models, Scaler, Normalizer with numpy's pairwise sums
    over 128 values, Imputer) compiled in one process and loaded from numba's disk cache in the next give the same
    bits. numba's cache does not load a recursive function (the second process dies without a word), so the
    pairwise sum walks its halves with a stack; this run in two fresh processes is what holds that."""
    env = {"ONNXCORE_ACCEL": "1", "NUMBA_CACHE_DIR": str(tmp_path)}
    first = _python(_ML_CACHE_CHILD, **env).split()
    assert any(tmp_path.rglob("*_jit_ml*.nbi")), "the first process wrote no cache entries"
    second = _python(_ML_CACHE_CHILD, **env).split()
    assert first[0] == "True" and second == first
