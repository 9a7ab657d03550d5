"""The compiled pooling loops against the numpy path, bit for bit, and against onnxruntime.

MaxPool without Indices in 1-D and 2-D runs on the accelerator's separable loops (``accel.jit_cnn().max_pool2d``)
when numba is present; the numpy path is the reference: every maximum (and its NaN rule, numpy's ``np.maximum``)
must be the same, over random shapes, pads, strides, dilations, ceil_mode and auto_pad, and the opset 22 rule that
drops a ceil_mode window starting in the end padding.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kernels import assert_same, run_ort
from kernels.test_pool import _pool_combo, ours
from onnxcore.kernels import accel

pytest.importorskip("onnx")  # test_pool.ours binds the kernels by version with onnx.defs


def _needs_accel() -> None:
    if not accel.available():
        pytest.skip("the accelerator is not available (numba not installed, or ONNXCORE_ACCEL=0)")


def _both(op: str, x: np.ndarray, opset: int, attrs: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The numpy path's result and the compiled path's, checking that the second did call the compiled loop."""
    with accel.use(False):
        (ref,) = ours(op, [x], opset, attrs)
    cnn = accel.jit_cnn()
    loop = cnn.max_pool2d
    calls = []

    def counted(*args: Any) -> None:
        calls.append(1)
        loop(*args)

    cnn.max_pool2d = counted
    try:
        with accel.use(True):
            (got,) = ours(op, [x], opset, attrs)
    finally:
        cnn.max_pool2d = loop
    assert calls or ref.size == 0, "the compiled loop was not used"
    return ref, got


def _assert_bits(ref: np.ndarray, got: np.ndarray) -> None:
    assert got.dtype == ref.dtype and got.shape == ref.shape
    # The same value at every place, NaN where the numpy path has NaN; no input holds a zero, so no sign of zero is
    # left to the order of the maxima.
    np.testing.assert_array_equal(got, ref, strict=True)


def _spice(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Special values and ties at random places: NaN, both infinities, repeated values."""
    x = x.copy()
    flat = x.reshape(-1)
    for v in (np.nan, np.inf, -np.inf, 1.5, 1.5):
        flat[rng.integers(0, flat.size, size=max(1, flat.size // 50))] = v
    return x


@pytest.mark.parametrize("nd", [1, 2])
@pytest.mark.parametrize("seed", range(4))
def test_max_pool_accel_equals_numpy(seed: int, nd: int) -> None:
    """Random 1-D and 2-D MaxPool geometries (opsets 10, 12 and 22), float32, with NaN, infinities and ties."""
    _needs_accel()
    rng = np.random.default_rng(seed)
    for _ in range(40):
        opset = int(rng.choice([10, 12, 22]))
        x, attrs = _pool_combo(rng, nd, dilations=True, ceil=True)
        if rng.random() < 0.5:
            x = _spice(x, rng)
        ref, got = _both("MaxPool", x, opset, attrs)
        _assert_bits(ref, got)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize(
    ("shape", "attrs"),
    [
        ((1, 64, 111, 111), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),  # SqueezeNet's
        ((1, 64, 112, 112), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),  # ResNet's
        ((1, 24, 56, 56), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),  # ShuffleNet's
        ((2, 8, 20, 20), {"kernel_shape": [2, 2], "strides": [2, 2]}),  # VGG's
        ((1, 4, 13, 17), {"kernel_shape": [5, 3], "strides": [1, 3], "dilations": [2, 1], "ceil_mode": 1}),
        ((1, 3, 9, 9), {"kernel_shape": [9, 9]}),  # one window over the whole image
        ((1, 3, 5, 6), {"kernel_shape": [2, 2], "strides": [4, 4], "pads": [1, 1, 1, 1], "ceil_mode": 1}),
    ],
)
def test_max_pool_cnn_shapes(shape: tuple[int, ...], attrs: dict[str, Any], dtype: Any) -> None:
    """The CNNs' pools and edge geometries, each element type the compiled loops take (float16 through float32)."""
    _needs_accel()
    rng = np.random.default_rng(sum(shape))
    x = _spice(rng.standard_normal(shape), rng).astype(dtype)
    for opset in (12, 22):
        ref, got = _both("MaxPool", x, opset, attrs)
        _assert_bits(ref, got)


def test_max_pool_window_wholly_in_padding() -> None:
    """Before version 22 a ceil_mode window may lie in the end padding: -inf on both paths."""
    _needs_accel()
    x = np.arange(1.0, 26.0, dtype=np.float32).reshape(1, 1, 5, 5)
    attrs = {"kernel_shape": [2, 2], "strides": [3, 3], "pads": [0, 0, 1, 1], "ceil_mode": 1}
    ref, got = _both("MaxPool", x, 12, attrs)
    _assert_bits(ref, got)
    assert got.shape == (1, 1, 3, 3) and np.isneginf(got[0, 0, 2]).all() and np.isneginf(got[0, 0, :, 2]).all()
    assert got[0, 0, 1, 1] == 25


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [1, 2, 3])
@pytest.mark.parametrize("width", [29, 30, 31, 32, 33, 41])
def test_max_pool_split_columns(width: int, kw: int, dtype: Any) -> None:
    """Stride-2 column taps (1 to 3) on both sides of the de-interleaving pass's threshold (``_jit_pool._SPLIT_COLUMNS``
    output columns: 15 or 16 from 29 to 33 input columns), even and odd left padding, one to five tap rows (the
    one-pass three and the row-by-row rest, rows cut by the padding), row dilation, batches of two: bit for bit."""
    _needs_accel()
    from onnxcore.kernels.accel import _jit_pool

    rng = np.random.default_rng(width * 7 + kw)
    x = _spice(rng.standard_normal((2, 3, 9, width)), rng).astype(dtype)
    split = 0
    for kh, dy in [(1, 1), (2, 1), (3, 1), (3, 2), (5, 1)]:
        for pl in range(kw):
            attrs = {"kernel_shape": [kh, kw], "strides": [2, 2], "dilations": [dy, 1], "pads": [kh // 2, pl, 0, pl]}
            ref, got = _both("MaxPool", x, 12, attrs)
            _assert_bits(ref, got)
            split += got.shape[3] >= _jit_pool._SPLIT_COLUMNS
    assert split > 0 or width < 31


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("shape", "kernel"),
    [
        ((2, 37, 16, 16), [3, 3]),  # flat: 32 planes a run, a partial second run
        ((1, 5, 32, 32), [3, 3]),  # flat: the largest plane of three columns
        ((1, 5, 32, 34), [3, 3]),  # by rows: just larger
        ((1, 7, 20, 20), [2, 2]),  # flat: the largest plane of two columns
        ((1, 7, 20, 22), [2, 2]),  # by rows: just larger
        ((3, 4, 9, 14), [2, 3]),  # flat: two rows, three columns, the last row unused
        ((3, 4, 10, 12), [3, 2]),
        ((1, 6, 16, 15), [3, 3]),  # by rows: an odd width
    ],
)
def test_max_pool_flat_small_planes(shape: tuple[int, ...], kernel: list[int], dtype: Any) -> None:
    """Stride-2 pools without padding of small planes run as flat passes over several planes at a time
    (``_jit_pool._max_pool_flat2``), on both sides of its size limits and width rule: bit for bit the numpy path's,
    whole and for any range of planes (a thread's share, not a whole number of runs)."""
    _needs_accel()
    from onnxcore.kernels.accel import _jit_pool

    rng = np.random.default_rng(sum(shape) + kernel[1])
    x = _spice(rng.standard_normal(shape), rng).astype(dtype)
    attrs = {"kernel_shape": kernel, "strides": [2, 2]}
    ref, got = _both("MaxPool", x, 12, attrs)
    _assert_bits(ref, got)
    planes = x.reshape(-1, *shape[2:])
    part = np.full((planes.shape[0], *ref.shape[2:]), 7.0, dtype)
    low = np.dtype(dtype).type(-np.inf)
    for a, b in ((0, 3), (3, 36), (36, planes.shape[0])):
        if a < planes.shape[0]:
            _jit_pool.max_pool2d(planes, part, *kernel, 0, 0, 2, 2, 1, 1, low, a, min(b, planes.shape[0]))
    np.testing.assert_array_equal(part, ref.reshape(part.shape), strict=True)


def test_max_pool_non_contiguous_input() -> None:
    """A strided view (every other channel, a column slice) pools as its contiguous copy does."""
    _needs_accel()
    rng = np.random.default_rng(3)
    x = _spice(rng.standard_normal((2, 8, 40, 50)).astype(np.float32), rng)
    view = x[:, ::2, :, 3:45]
    assert not view.flags.c_contiguous
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    ref, got = _both("MaxPool", np.ascontiguousarray(view), 12, attrs)
    with accel.use(True):
        (viewed,) = ours("MaxPool", [view], 12, attrs)
    _assert_bits(ref, got)
    _assert_bits(ref, viewed)


def test_max_pool_setup_cached_per_geometry() -> None:
    """The pool's validated geometry is cached by shape and attributes: other attributes (lists or arrays) give other
    results, and a bad attribute raises on every call, not just the first."""
    from onnxcore.errors import EvaluationError
    from onnxcore.kernels import pool

    x = np.arange(2.0 * 2 * 8 * 8, dtype=np.float32).reshape(2, 2, 8, 8)
    a = pool._setup(x, [3, 3], [2, 2], None, [1, 1, 1, 1], "NOTSET", 0)
    assert a == ([3, 3], [2, 2], [1, 1], [1, 1], [1, 1], [4, 4])
    assert pool._setup(x, np.array([3, 3]), (2, 2), None, [1, 1, 1, 1], "NOTSET", 0) == a
    assert pool._setup(x, [3, 3], [1, 1], None, [1, 1, 1, 1], "NOTSET", 0)[5] == [8, 8]
    assert pool._setup(x[:, :, :6], [3, 3], [2, 2], None, [1, 1, 1, 1], "NOTSET", 0)[5] == [3, 4]
    for _ in range(2):
        with pytest.raises(EvaluationError, match="strides"):
            pool._setup(x, [3, 3], [0, 2], None, None, "NOTSET", 0)


def test_max_pool_accel_vs_ort() -> None:
    """The compiled path against onnxruntime over random geometries and the CNN shapes (no NaN: onnxruntime's rule
    for NaN is its own)."""
    _needs_accel()
    rng = np.random.default_rng(7)
    cases = [_pool_combo(rng, 2, dilations=True, ceil=True) for _ in range(30)]
    x = rng.standard_normal((1, 64, 111, 111)).astype(np.float32)
    cases.append((x, {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}))
    with accel.use(True):
        for x, attrs in cases:
            (mine,) = ours("MaxPool", [x], 12, attrs)
            (theirs,) = run_ort("MaxPool", [x], 1, 12, attrs)
            if mine.shape != theirs.shape:
                # Before version 22 a ceil_mode window starting in the end padding is kept (test_pool.check says why).
                mine = mine[tuple(slice(0, d) for d in theirs.shape)]
            assert_same(mine, theirs, rtol=0, atol=0)


@pytest.mark.parametrize("op", [np.maximum, np.add])
def test_strided_rows_pass_same_values(op: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The numpy path's stride-2 pass over an outer axis by whole blocks of rows (``pool._axis_reduce_rows``) gives
    what the pass by strided taps gives (each output the same operations in the same order), bit for bit."""
    from onnxcore.kernels import pool

    rng = np.random.default_rng(11)
    rows = pool._axis_reduce_rows
    calls = []

    def counted(*args: Any) -> np.ndarray:
        calls.append(1)
        return rows(*args)

    monkeypatch.setattr(pool, "_axis_reduce_rows", counted)
    for _ in range(60):
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 5)), int(rng.integers(3, 30)), int(rng.integers(1, 20)))
        k, d = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        n = shape[2]
        if (k - 1) * d >= n:
            continue
        o = int(rng.integers(1, (n - 1 - (k - 1) * d) // 2 + 2))
        x = _spice(rng.standard_normal(shape).astype(np.float32), rng)
        x.reshape(-1)[rng.integers(0, x.size, size=x.size // 4)] = rng.choice([0.0, -0.0], size=x.size // 4)
        # A copy inside a larger array is not contiguous: the strided taps' route, the reference.
        wide = np.zeros(shape[:3] + (shape[3] + 1,), np.float32)
        wide[..., :-1] = x
        before = len(calls)
        with np.errstate(invalid="ignore"):  # inf + -inf
            ref = pool._axis_reduce(wide[..., :-1], 2, k, 2, d, 0, o, op, 0)
            assert len(calls) == before
            got = pool._axis_reduce(x, 2, k, 2, d, 0, o, op, 0)
        assert len(calls) == before + 1
        np.testing.assert_array_equal(got, ref, strict=True)
        # Signs of zeros too: the same order of operations.
        np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_global_average_pool_accel_equals_numpy(dtype: Any) -> None:
    """GlobalAveragePool's compiled row means (``accel.jit_cnn().row_means``: numpy's pairwise sums, rows of up to
    two leaves) against numpy's ``mean``, bit for bit (zero signs included), over every row length to 300 (the
    longer ones stay on numpy), 1-D to 3-D images, with special values; the compiled loop runs where it applies."""
    _needs_accel()
    from onnxcore.kernels import pool

    rng = np.random.default_rng(5)
    fn = pool.global_average_pool
    cnn = accel.jit_cnn()
    loop = cnn.row_means
    calls = []

    def counted(*args: Any) -> None:
        calls.append(1)
        loop(*args)

    shapes = [(2, 3, n) for n in range(1, 301)] + [(1, 96, 14, 14), (1, 576, 7, 7), (2, 5, 4, 4, 4), (1, 4, 8, 16)]
    cnn.row_means = counted
    try:
        for shape in shapes:
            x = (rng.standard_normal(shape) * 10 ** rng.uniform(-3, 3, shape)).astype(dtype)
            if rng.random() < 0.3:
                x = _spice(x, rng)
            x.reshape(-1)[rng.integers(0, x.size, size=max(1, x.size // 8))] = -0.0
            with accel.use(False), np.errstate(invalid="ignore"):
                ref = fn(x)
            before = len(calls)
            with accel.use(True), np.errstate(invalid="ignore"):
                got = fn(x)
            np.testing.assert_array_equal(got, ref, strict=True)
            # Zero signs too (a NaN's sign bit is not a value: inf - inf gives either).
            num = ~np.isnan(ref)
            np.testing.assert_array_equal(np.signbit(got[num]), np.signbit(ref[num]))
            n = int(np.prod(shape[2:]))
            assert (len(calls) > before) == pool._short_pairwise(n)
    finally:
        cnn.row_means = loop
    assert pool._short_pairwise(49) and pool._short_pairwise(196) and not pool._short_pairwise(255)
