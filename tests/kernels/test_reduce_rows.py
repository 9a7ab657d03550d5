"""ReduceMean and ReduceSum over trailing axes (the squeeze-and-excitation blocks' mean over H, W): the short path of
:func:`onnxcore.kernels.reduction._row_sum` gives the general path's bits (the same BLAS product with ones), for
every shape, axis order, keepdims and both versions (axes an attribute, axes an input)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from onnxcore.kernels import reduction
from onnxcore.kernels.registry import lookup


def _general(monkeypatch: pytest.MonkeyPatch, fn: Any, *args: Any, **kw: Any) -> np.ndarray:
    """The kernel's result with the short path turned off (float_sum's general route)."""
    with monkeypatch.context() as m:
        m.setattr(reduction, "_row_sum", lambda *a: None)
        return np.asarray(fn(*args, **kw))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum"])
def test_row_sum_same_bits(op: str, dtype: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    attr = lookup("", op, 11 if op == "ReduceMean" else 1)
    inp = lookup("", op, 18 if op == "ReduceMean" else 13)
    assert attr is not None and inp is not None
    shapes = [(1, 16, 56, 56), (1, 96, 14, 14), (2, 576, 7, 7), (3, 5, 40, 41), (1, 120, 28, 28), (64, 300),
              (1, 576, 2, 2), (1, 96, 4, 4), (2, 8, 4, 4)]  # fmt: skip
    taken = 0
    for shape in shapes:
        x = (rng.standard_normal(shape) * 10 ** rng.uniform(-3, 3, shape)).astype(dtype)
        nd = len(shape)
        for axes in ([nd - 1], [nd - 2, nd - 1], [-1, -2], [1, 2, 3][: nd - 1], [0, 1]):
            for keepdims in (0, 1):
                got = np.asarray(attr.fn(x, axes=axes, keepdims=keepdims))
                ref = _general(monkeypatch, attr.fn, x, axes=axes, keepdims=keepdims)
                np.testing.assert_array_equal(got, ref, strict=True)
                got2 = np.asarray(inp.fn(x, np.array(axes, np.int64), keepdims=keepdims))
                np.testing.assert_array_equal(got2, ref, strict=True)
                taken += reduction._row_sum(op[6:].lower(), x, tuple(a % nd for a in axes), bool(keepdims)) is not None
                # And the value itself: numpy's mean or sum, within the type's rounding of a sum of that many terms.
                want = (np.mean if op == "ReduceMean" else np.sum)(x.astype(np.float64), axis=tuple(axes))
                scale = np.sum(np.abs(x.astype(np.float64)), axis=tuple(axes))
                scale = scale / (x.size / scale.size) if op == "ReduceMean" else scale
                tol = 1e-5 if dtype == np.float32 else 1e-13
                assert np.all(np.abs(got.reshape(want.shape) - want) <= tol * scale + 1e-30)
    assert taken >= 20  # the short path did run (most of the cases reduce trailing axes of 16,384 elements or more)


def test_row_sum_declines() -> None:
    """Not contiguous, leading axes, too small, float16: the general path (None here)."""
    x = np.ones((1, 64, 32, 32), np.float32)
    assert reduction._row_sum("mean", x[:, :, :, ::2], (2, 3), True) is None
    assert reduction._row_sum("mean", x, (0, 1), True) is None
    assert reduction._row_sum("mean", np.ones((1, 4, 4, 4), np.float32), (2, 3), True) is None  # 64 < 256 elements
    assert reduction._row_sum("mean", x, (2, 3), True) is not None
    assert reduction._row_sum("mean", x.reshape(1, -1), (1,), True) is None  # one row: numpy's pairwise sum


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsumexp_rows_compiled(dtype: Any) -> None:
    """ReduceLogSumExp over the last axis of rows of at most 128 values takes the accelerator's shift around numpy's
    exp and log: the numpy path's bits (its shift; its sums: numpy's order of a row below ``BLAS_SUM_MIN`` elements,
    by the compiled row sums, BLAS's product with ones from there on, the numpy path's own call), the same specials
    (a row with NaN gives NaN, all -inf gives -inf, +inf gives +inf), for both kernel versions and keepdims; other
    axes, non-contiguous inputs and longer rows keep the numpy path."""
    from onnxcore.kernels import accel

    if not accel.available():
        pytest.skip("the accelerator is not available (numba not installed, or ONNXCORE_ACCEL=0)")
    rng = np.random.default_rng(7)
    attr, inp = lookup("", "ReduceLogSumExp", 13), lookup("", "ReduceLogSumExp", 18)
    assert attr is not None and inp is not None
    calls: dict[str, list[Any]] = {"shift": [], "sums": []}
    fns = accel.jit()
    real_shift, real_sums = fns.logsumexp_shift, fns.row_sums

    def shift(*a: Any) -> None:
        calls["shift"].append(a)
        real_shift(*a)

    def sums(*a: Any) -> None:
        calls["sums"].append(a)
        real_sums(*a)

    small = [(1, 3), (16, 3), (1, 20), (2, 5, 7), (1, 1), (40, 3), (1, 128), (2, 9, 14)]
    large = [(1000, 3), (300, 17), (64, 128), (40, 7, 5), (5000, 2), (300, 1)]  # sums by BLAS on the numpy path
    for shape in small + large:
        x = (rng.standard_normal(shape) * 40).astype(dtype)
        x[0, ..., 0] = np.nan
        if shape[-1] > 1 and x.size > shape[-1]:
            x.reshape(-1, shape[-1])[1] = -np.inf
            x.reshape(-1, shape[-1])[-1, 0] = np.inf
        for keepdims in (0, 1):
            with accel.use(False):
                want = np.asarray(attr.fn(x, axes=[-1], keepdims=keepdims))
            with accel.use(True):
                try:
                    fns.logsumexp_shift, fns.row_sums = shift, sums
                    got_attr = np.asarray(attr.fn(x, axes=[-1], keepdims=keepdims))
                    got_inp = np.asarray(inp.fn(x, np.array([x.ndim - 1]), keepdims=keepdims))
                finally:
                    fns.logsumexp_shift, fns.row_sums = real_shift, real_sums
            for got in (got_attr, got_inp):
                np.testing.assert_array_equal(got, want, strict=True)
    assert len(calls["shift"]) == len(small + large) * 2 * 2  # every shape took the compiled shift
    assert len(calls["sums"]) == len(small) * 2 * 2  # and the compiled sums below BLAS_SUM_MIN elements
    calls["shift"].clear()
    x = rng.standard_normal((4, 6)).astype(dtype)
    with accel.use(True):
        try:
            fns.logsumexp_shift, fns.row_sums = shift, sums
            attr.fn(x, axes=[0], keepdims=1)  # another axis
            attr.fn(np.asfortranarray(x), axes=[1], keepdims=1)  # not C-contiguous
            attr.fn(rng.standard_normal((1, 129)).astype(dtype), axes=[1], keepdims=1)  # a row past one block
        finally:
            fns.logsumexp_shift, fns.row_sums = real_shift, real_sums
    assert not calls["shift"]
