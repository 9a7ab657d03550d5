"""Normalization kernels: ONNX 1-3 vectors, differential tests against onnxruntime, and the
definitions' formulas written out in float64 where onnxruntime lacks a version or a mode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from kernels import assert_same, compare, run_ort, run_ours, single_node_cases
from onnxcore.kernels.normalization import lrn

pytest.importorskip("onnx")  # the oracle run_ours binds versions with (onnx.defs)

NORM_OPS = {
    "BatchNormalization", "InstanceNormalization", "LayerNormalization", "GroupNormalization", "LRN",
    "LpNormalization", "MeanVarianceNormalization", "RMSNormalization",
}  # fmt: skip

RNG = np.random.default_rng(41)


@pytest.mark.parametrize("case_dir", single_node_cases(NORM_OPS))
def test_onnx_node_case(case_dir: Path) -> None:
    """Every single-node ONNX 1-3 case of these operators (rtol 1e-3, atol 1e-7)."""
    from node_harness import assert_close, run_single_node_case

    result = run_single_node_case(case_dir)
    assert result is not None, "kernel not registered"
    actual, expected = result
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_close(a, e)


def _ctx_call(op: str, version: int, inputs: list[Any], attrs: dict[str, Any], n_outputs: int) -> Any:
    from onnxcore.kernels.registry import KernelContext, lookup

    k = lookup("", op, version)
    assert k is not None
    if k.context:
        return k.fn(KernelContext(None, since_version=version, opset_version=version, num_outputs=n_outputs),
                    *inputs, **attrs)  # fmt: skip
    return k.fn(*inputs, **attrs)


def _check_ctx(op: str, inputs: list[Any], opset: int, attrs: dict[str, Any], n_outputs: int = 1) -> None:
    """Like ``compare`` for kernels registered with a KernelContext."""
    import onnx

    since = onnx.defs.get_schema(op, opset, "").since_version
    mine = _ctx_call(op, since, inputs, attrs, n_outputs)
    mine = list(mine) if isinstance(mine, tuple) else [mine]
    theirs = run_ort(op, inputs, n_outputs, opset, attrs)
    for a, e in zip(mine, theirs):
        assert_same(a, e, rtol=1e-5, atol=1e-5)


def _bn_params(c: int) -> list[np.ndarray]:
    return [
        RNG.standard_normal(c).astype(np.float32),
        RNG.standard_normal(c).astype(np.float32),
        RNG.standard_normal(c).astype(np.float32),
        RNG.uniform(0.5, 2.0, c).astype(np.float32),
    ]


@pytest.mark.parametrize("opset", [9, 14, 15])
def test_batch_norm_inference_vs_ort(opset: int) -> None:
    pytest.importorskip("onnxruntime")
    for shape in [(2, 3), (2, 3, 5), (1, 4, 6, 7), (2, 2, 3, 4, 5)]:
        x = RNG.standard_normal(shape).astype(np.float32)
        _check_ctx("BatchNormalization", [x, *_bn_params(shape[1])], opset, {"epsilon": 1e-3})


def test_batch_norm_training_14() -> None:
    """training_mode: Y from the batch statistics, running = input * momentum + batch * (1 - momentum)."""
    x = RNG.standard_normal((3, 4, 5, 2)).astype(np.float32)
    s, b, m, v = _bn_params(4)
    y, rm, rv = run_ours("BatchNormalization", [x, s, b, m, v], 15, {"training_mode": 1, "momentum": 0.8})
    x64 = x.astype(np.float64)
    bm, bv = x64.mean(axis=(0, 2, 3)), x64.var(axis=(0, 2, 3))
    sh = (1, -1, 1, 1)
    ref = (x64 - bm.reshape(sh)) / np.sqrt(bv.reshape(sh) + 1e-5) * s.reshape(sh) + b.reshape(sh)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rm, m * 0.8 + bm * 0.2, rtol=1e-5)
    np.testing.assert_allclose(rv, v * 0.8 + bv * 0.2, rtol=1e-5)


def test_batch_norm_legacy_modes() -> None:
    """v6 is_test=1 is inference; is_test=0 (the default) trains; v7/v9 train when more than Y is
    declared; spatial=0 keeps one statistic per feature."""
    x = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    s, b, m, v = _bn_params(3)
    y = _ctx_call("BatchNormalization", 9, [x, s, b, m, v], {}, 1)
    inf = _ctx_call("BatchNormalization", 6, [x, s, b, m, v], {"is_test": 1}, 1)
    np.testing.assert_allclose(inf, y, rtol=1e-6)
    train6 = _ctx_call("BatchNormalization", 6, [x, s, b, m, v], {}, 5)
    train9 = _ctx_call("BatchNormalization", 9, [x, s, b, m, v], {}, 5)
    assert len(train6) == 5 and len(train9) == 5
    bm = x.astype(np.float64).mean(axis=(0, 2))
    np.testing.assert_allclose(train9[3], bm, rtol=1e-5)
    np.testing.assert_allclose(train9[1], m * 0.9 + bm * 0.1, rtol=1e-5)
    for a, e in zip(train6, train9):
        np.testing.assert_allclose(a, e, rtol=1e-6)
    # spatial=0: statistics of shape (C, D1), reduced over N only.
    s2, b2, m2 = (RNG.standard_normal((3, 2)).astype(np.float32) for _ in range(3))
    v2 = RNG.uniform(0.5, 2, (3, 2)).astype(np.float32)
    y0 = _ctx_call("BatchNormalization", 7, [x, s2, b2, m2, v2], {"spatial": 0}, 1)
    ref = (x - m2) / np.sqrt(v2 + 1e-5) * s2 + b2
    np.testing.assert_allclose(y0, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.usefixtures("accel_path")
def test_instance_norm_vs_ort() -> None:
    pytest.importorskip("onnxruntime")
    for shape in [(2, 3, 5), (1, 4, 6, 7), (2, 2, 3, 4, 5)]:
        x = RNG.standard_normal(shape).astype(np.float32)
        s, b = RNG.standard_normal(shape[1]).astype(np.float32), RNG.standard_normal(shape[1]).astype(np.float32)
        compare("InstanceNormalization", [x, s, b], 6, {"epsilon": 1e-4}, rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("axis", [-3, -1, 0, 1, 2])
def test_layer_norm_vs_ort(axis: int) -> None:
    pytest.importorskip("onnxruntime")
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    norm_shape = x.shape[axis % 3 :]
    scale = RNG.standard_normal(norm_shape).astype(np.float32)
    bias = RNG.standard_normal(norm_shape).astype(np.float32)
    compare("LayerNormalization", [x, scale, bias], 17, {"axis": axis}, n_outputs=3, rtol=1e-4, atol=1e-5)
    compare("LayerNormalization", [x, scale], 17, {"axis": axis, "epsilon": 0.1}, n_outputs=1, rtol=1e-4, atol=1e-5)


def test_layer_norm_float16_stash_float32() -> None:
    """Stage one in float32 (stash_type 1) for float16 X; Mean/InvStdDev are float32."""
    x = RNG.standard_normal((3, 8)).astype(np.float16)
    scale = np.ones(8, np.float16)
    y, mean, inv = run_ours("LayerNormalization", [x, scale], 17, {})
    assert y.dtype == np.float16 and mean.dtype == np.float32 and inv.dtype == np.float32
    x32 = x.astype(np.float32)
    ref = (x32 - x32.mean(1, keepdims=True)) / np.sqrt(x32.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y.astype(np.float32), ref, rtol=2e-3, atol=2e-3)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("version", [18, 21])
def test_group_norm_definition(version: int) -> None:
    """GroupNormalization-18 takes one scale/bias per group, -21 one per channel."""
    x = RNG.standard_normal((2, 6, 3, 2)).astype(np.float32)
    g = 3
    n = 6 if version == 21 else g
    scale, bias = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    (y,) = run_ours("GroupNormalization", [x, scale, bias], version, {"num_groups": g, "epsilon": 1e-3})
    xg = x.astype(np.float64).reshape(2, g, -1)
    norm = ((xg - xg.mean(2, keepdims=True)) / np.sqrt(xg.var(2, keepdims=True) + 1e-3)).reshape(x.shape)
    per_c = (lambda p: p) if version == 21 else (lambda p: np.repeat(p, 2))
    ref = norm * per_c(scale).reshape(1, -1, 1, 1) + per_c(bias).reshape(1, -1, 1, 1)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
def test_lrn_vs_ort(size: int) -> None:
    pytest.importorskip("onnxruntime")
    x = RNG.standard_normal((2, 7, 3, 4)).astype(np.float32)
    if size % 2 == 0:
        # onnxruntime refuses even sizes; the definition's window is [c - floor((size-1)/2), c + ceil((size-1)/2)].
        (y,) = run_ours("LRN", [x], 13, {"size": size, "alpha": 1e-2, "beta": 0.75, "bias": 1.5})
        sq = np.zeros_like(x, dtype=np.float64)
        for c in range(7):
            lo, hi = max(0, c - (size - 1) // 2), min(6, c + -(-(size - 1) // 2))
            sq[:, c] = (x[:, lo : hi + 1].astype(np.float64) ** 2).sum(axis=1)
        np.testing.assert_allclose(y, x / (1.5 + 1e-2 / size * sq) ** 0.75, rtol=1e-5)
        return
    compare("LRN", [x], 13, {"size": size, "alpha": 1e-2, "beta": 0.75, "bias": 1.5}, rtol=1e-5, atol=1e-6)
    compare("LRN", [x], 1, {"size": size, "alpha": 2e-2, "beta": 0.6}, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization_vs_ort(p: int) -> None:
    pytest.importorskip("onnxruntime")
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    x[0, :, 0] = 0  # a zero norm along axis 1 gives zeros
    for axis in (-1, 0, 1):
        compare("LpNormalization", [x], 1, {"axis": axis, "p": p}, rtol=1e-5, atol=1e-6)


def test_mean_variance_normalization_vs_ort() -> None:
    pytest.importorskip("onnxruntime")
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    compare("MeanVarianceNormalization", [x], 13, {}, rtol=1e-4, atol=1e-5)
    compare("MeanVarianceNormalization", [x], 9, {"axes": [1, -1]}, rtol=1e-4, atol=1e-5)


def test_rms_normalization_definition() -> None:
    """RMSNormalization-23 with a bfloat16 scale: Y has the scale's type."""
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    scale = RNG.standard_normal(4).astype(ml_dtypes.bfloat16)
    (y,) = run_ours("RMSNormalization", [x, scale], 23, {"axis": -1, "epsilon": 1e-3})
    assert y.dtype == np.dtype(ml_dtypes.bfloat16)
    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + 1e-3) * scale.astype(np.float64)
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=1e-2, atol=1e-2)


def test_normalization_rejects_bad_shapes() -> None:
    from onnxcore.errors import EvaluationError, ShapeError

    x = np.zeros((2, 4, 3), np.float32)
    with pytest.raises(ShapeError):
        run_ours("InstanceNormalization", [x, np.ones(3, np.float32), np.ones(4, np.float32)], 6, {})
    with pytest.raises(EvaluationError):
        run_ours("GroupNormalization", [x, np.ones(4, np.float32), np.ones(4, np.float32)], 21, {"num_groups": 3})
    with pytest.raises(EvaluationError):
        run_ours("LayerNormalization", [x, np.ones(3, np.float32)], 17, {"axis": 3})


@pytest.mark.parametrize("size", [15, 2**32 - 1])
def test_lrn_window_wider_than_the_channels(size: int) -> None:
    """A window wider than the channels sums every channel: the kernel stops at the channel count (a size of
    2^32 - 1 looped over (size - 1) / 2 neighbours before, for minutes; issue 29)."""
    x = RNG.standard_normal((2, 7, 3, 4)).astype(np.float32)
    y = lrn(x, alpha=1e-2, beta=0.75, bias=1.5, size=size)
    sq = (x.astype(np.float64) ** 2).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(y, x / (1.5 + 1e-2 / size * sq) ** 0.75, rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("shape", "groups"), [((2, 6, 3, 2), 3), ((1, 64, 3199), 64), ((3, 8, 5), 1), ((2, 4, 2, 3, 2), 2), ((1, 3, 1), 3)]
)
def test_group_norm_compiled_agrees_with_numpy(shape: tuple[int, ...], groups: int, dtype: type) -> None:
    """The accelerator's rows of groups (GroupNormalization and InstanceNormalization) against the numpy kernels'
    passes: the same values within the rounding of a group's sums, NaN where a group holds one, a constant group
    at the bias (its variance 0), far from zero too (the mean taken out before the squares)."""
    from onnxcore.kernels import accel
    from onnxcore.kernels._rowwise import group_norm_compiled

    if not accel.available():
        pytest.skip("the accelerator is not available (numba not installed, or ONNXCORE_ACCEL=0)")
    x = (RNG.standard_normal(shape) * 3 + 1000).astype(dtype)
    x[0, 0].flat[0] = np.nan  # channel 0's group: NaN throughout
    x[-1, -1] = 7.0  # the last channel constant (its group too, for InstanceNormalization)
    c = shape[1]
    scale, bias = RNG.standard_normal(c).astype(dtype), RNG.standard_normal(c).astype(dtype)
    instance = groups == c
    with accel.use(True):
        got = group_norm_compiled(x, scale, bias, groups, 1e-5, instance)
    assert got is not None and got.dtype == x.dtype and got.shape == x.shape
    op, version = ("InstanceNormalization", 6) if instance else ("GroupNormalization", 21)
    attrs = (
        {"epsilon": 1e-5}
        if instance
        else {"epsilon": 1e-5, "num_groups": groups, "stash_type": 11 if dtype == np.float64 else 1}
    )
    with accel.use(False):
        (ref,) = run_ours(op, [x, scale, bias], version, attrs)
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    assert np.isnan(got[0, : c // groups]).all()
    # Against the values in extended precision: as close as the numpy kernel comes. A group of 3,199 float32 values
    # near 1,000 loses about 1e-4 of its mean's accuracy either way (Clause 11.4).
    xg = x.astype(np.longdouble).reshape(shape[0], groups, -1)
    norm = ((xg - xg.mean(2, keepdims=True)) / np.sqrt(xg.var(2, keepdims=True) + 1e-5)).reshape(shape)
    cs = (1, c) + (1,) * (len(shape) - 2)
    exact = norm * scale.astype(np.longdouble).reshape(cs) + bias.astype(np.longdouble).reshape(cs)
    ok = ~np.isnan(exact)
    err_got, err_ref = np.abs(got - exact)[ok].max(), np.abs(ref - exact)[ok].max()
    assert err_got <= 2 * err_ref + 16 * np.finfo(dtype).eps, (err_got, err_ref)
    if instance:
        np.testing.assert_allclose(got[-1, -1], np.full(shape[2:], bias[-1]), rtol=1e-5, atol=1e-5)


def test_group_norm_compiled_declines() -> None:
    """The compiled rows take C-contiguous float32/float64 tensors with parameters of their type; anything else
    is left to the numpy code (None)."""
    from onnxcore.kernels import accel
    from onnxcore.kernels._rowwise import group_norm_compiled

    x = RNG.standard_normal((2, 4, 6)).astype(np.float32)
    p = np.ones(4, np.float32)
    with accel.use(False):
        assert group_norm_compiled(x, p, p, 2, 1e-5, False) is None
    if not accel.available():
        pytest.skip("the accelerator is not available (numba not installed, or ONNXCORE_ACCEL=0)")
    with accel.use(True):
        assert group_norm_compiled(x, p, p, 2, 1e-5, False) is not None
        assert group_norm_compiled(x[:, :, ::2], p, p, 2, 1e-5, False) is None  # not contiguous
        assert (
            group_norm_compiled(x.astype(np.float16), p.astype(np.float16), p.astype(np.float16), 2, 1e-5, False)
            is None
        )
        assert group_norm_compiled(x, p.astype(np.float64), p, 2, 1e-5, False) is None  # parameters of another type
        assert group_norm_compiled(x, p, p, 3, 1e-5, False) is None  # groups not dividing C
        assert group_norm_compiled(x[:, :, :0], p, p, 2, 1e-5, False) is None  # empty groups


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("op", ["LayerNormalization", "RMSNormalization"])
def test_row_norms_of_a_transposed_view(op: str) -> None:
    """A transposed view (a convolution's (batch, channels, time) output read as (batch, time, channels), what
    wav2vec2's feature projection normalizes) gives what its contiguous copy gives, bit for bit: the rows are
    copied once and take the row loops (they ran the general code over the view, 4x slower)."""
    x = RNG.standard_normal((2, 64, 49)).astype(np.float32).transpose(0, 2, 1)
    assert not x.flags.c_contiguous
    scale, bias = RNG.standard_normal(64).astype(np.float32), RNG.standard_normal(64).astype(np.float32)
    ins, version = ([scale, bias], 17) if op == "LayerNormalization" else ([scale], 23)
    got = run_ours(op, [x, *ins], version, {})
    want = run_ours(op, [np.ascontiguousarray(x), *ins], version, {})
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
