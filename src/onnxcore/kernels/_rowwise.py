"""Row-wise kernels over the last axes by blocks of rows: Softmax, LayerNormalization and RMSNormalization of
float32 and float64 tensors normalised over their trailing axes (what transformers run), and GroupNormalization and
InstanceNormalization as rows of groups (with the accelerator).

Over a whole tensor each numpy step is a pass through memory (a 64 x 128 x 768 float32 tensor is 25 MB); by
blocks of rows that fit the L2 cache, every step after the first reads the cache, and the per-row reductions
(``sum`` along a contiguous row, ``einsum`` for the sum of squares) need no temporaries. Blocks depend on the
shape alone and run on the kernel threads (:mod:`onnxcore.kernels.threads`), so results are the same for any
number of threads. Each function returns ``None`` when its fast path does not apply; the kernel then runs its
general code.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from onnxcore.kernels import accel
from onnxcore.kernels._util import out_for
from onnxcore.kernels.threads import MIN_PARALLEL_ELEMENTS, active_threads, blockwise, parallel_for

__all__ = [
    "group_norm_compiled",
    "layer_norm_compiled",
    "layer_norm_last_axis",
    "layer_norm_rows",
    "rms_norm_compiled",
    "rms_norm_last_axis",
    "rms_norm_rows",
    "row_max",
    "softmax_rows_last",
    "softmax_zero_rows",
    "within_shift_bound",
]

# Below this magnitude exp cannot overflow or leave the normal range (float32: e^60 ~ 1e26 and e^-60 ~ 1e-26), so
# Softmax needs no shift by the row maxima: two global reductions cost much less than a per-row maximum and the
# subtraction it feeds.
_NO_SHIFT_BOUND = 60.0


_ROW_TYPES = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


def _rows_of(x: np.ndarray, axis: int) -> int | None:
    """The row length when ``x`` is a C-contiguous float32/float64 array reduced over ``[axis, rank)``."""
    # (a set of dtypes: ``x.dtype in (np.float32, np.float64)`` converts each type to a dtype to compare, ~0.3 us)
    if x.dtype not in _ROW_TYPES or not x.flags.c_contiguous or x.size == 0:
        return None
    d = math.prod(x.shape[axis:])  # Python ints: np.prod costs microseconds, as much as a small row block
    return d if d > 0 else None


def _contiguous_rows(x: np.ndarray) -> np.ndarray:
    """A float32/float64 ``x`` that is not C-contiguous (a transposed view: a convolution's output read as (batch,
    time, channels)) copied into rows: one pass, where the kernel's general code makes several over the view."""
    if x.dtype in _ROW_TYPES and not x.flags.c_contiguous:
        return np.ascontiguousarray(x)
    return x


def _param(p: np.ndarray | None, x: np.ndarray, axis: int, d: int) -> np.ndarray | bool | None:
    """``p`` as a row of ``d`` values in ``x``'s dtype when it broadcasts along the rows only; False otherwise."""
    if p is None:
        return None
    if p.ndim == 1 and axis == x.ndim - 1 and p.shape[0] == d and p.dtype == x.dtype and p.flags.c_contiguous:
        return p  # the common case (a weight vector over the last axis) without the checks' calls
    k = x.ndim - axis
    if p.size != d or tuple(p.shape[-k:] if p.ndim >= k else p.shape) != x.shape[axis:] or p.ndim > x.ndim:
        return False
    return np.ascontiguousarray(p, dtype=x.dtype).reshape(d)


_ROW_BLOCK = 1 << 16  # elements per block of rows (256 KB of float32: the L2 cache)


def _block_rows(d: int) -> int:
    return max(1, _ROW_BLOCK // d) * d


def within_shift_bound(x: np.ndarray) -> bool:
    """Whether every value of ``x`` (float, not empty) lies within +-:data:`_NO_SHIFT_BOUND` (False when one is NaN):
    then Softmax's ``exp`` needs no shift by the row maxima. Up to :data:`_FEW_BOUNDS` values are read as Python
    floats (one ``tolist`` instead of reductions, each costing a microsecond)."""
    if x.size <= _FEW_BOUNDS:
        vals = x.ravel().tolist()
        total = sum(vals)  # NaN when one is NaN (min and max may step over a NaN that is not first)
        return -_NO_SHIFT_BOUND <= min(vals) and max(vals) <= _NO_SHIFT_BOUND and total == total
    if x.size <= _ABS_BOUNDS:
        # The greatest magnitude: one reduction (and abs) instead of min and max, 1.3 against 2 us at a few rows;
        # numpy's maximum propagates NaN, which fails the comparison.
        return float(_MAX_OF(np.abs(x), axis=None)) <= _NO_SHIFT_BOUND
    return -_NO_SHIFT_BOUND <= float(x.min()) and float(x.max()) <= _NO_SHIFT_BOUND  # False for NaN


_FEW_BOUNDS = 16
_ABS_BOUNDS = 4096  # beyond, abs's temporary costs more than a second reduction
_MAX_OF = np.maximum.reduce
_SOFTMAX_FEW = _ABS_BOUNDS  # up to this many values Softmax takes _softmax_few (always within one block)


@functools.lru_cache(maxsize=64)
def _ones(d: int, dt: str) -> np.ndarray:
    """A read-only row of ``d`` ones (BLAS's operand for row sums)."""
    v = np.ones(d, dt)
    v.flags.writeable = False
    return v


def _shifted(xr: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """The rows ``xr`` (2-D) minus their maxima, into ``out`` (None: a new array), which it returns; a row whose maximum
    is not finite (all -inf, or holding +inf or NaN) is shifted by 0, since inf - inf would make NaN of it. With numba
    already imported (:func:`accel.loaded`: a plain MLP does not import it for this) one compiled pass, the
    maximum, the test and the subtraction of numpy's three to four calls: the same values (a maximum and a
    subtraction do not round differently in any order; a classifier's [16, 3] Softmax 14 -> 10 us, [1000, 3] 79 ->
    32 us)."""
    if accel.loaded() and xr.dtype in _ROW_TYPES and xr.flags.c_contiguous:
        e = np.empty(xr.shape, xr.dtype) if out is None else out
        if e.flags.c_contiguous:
            accel.jit().logsumexp_shift(xr, e, np.empty(xr.shape[0], xr.dtype))
            return e
    m = xr.max(axis=1, keepdims=True)
    m[~np.isfinite(m)] = 0
    return np.subtract(xr, m, out=out)


def _softmax_block(xr: np.ndarray, orow: np.ndarray | None, ones: np.ndarray) -> np.ndarray:
    """Softmax of the rows ``xr`` (2-D) into ``orow`` (None: a new array), which it returns: shifted by their maxima
    unless every value is small."""
    if within_shift_bound(xr):
        orow = np.exp(xr, out=orow)
    else:
        orow = _shifted(xr, orow)
        np.exp(orow, out=orow)
    # Row sums by BLAS (numpy's reduction over short rows is slower); their reciprocals as a new array: numpy writes
    # into an array of one element (a classifier's one row) more slowly than it makes one.
    s = np.reciprocal(orow @ ones)
    orow *= s[:, None]
    return orow


# Row-sum operands of the few-value Softmax, as a row and as a column: the rows' sums come out as [rows, 1], ready
# to scale the rows without a [:, None] view, and one row's as a scalar (the same BLAS call: matmul treats a vector
# operand as a column).
_ONES_AS: dict[tuple[int, np.dtype[Any]], tuple[np.ndarray, np.ndarray]] = {}


def _softmax_few(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis of a C-contiguous float32/float64 ``x`` of rank >= 1 holding 1 to
    :data:`_SOFTMAX_FEW` values (one block of :func:`softmax_rows_last`): :func:`_softmax_block`'s operations on its
    rows without the block geometry, the cached ones' look-up and the reshapes (a classifier's ``[1, 3]``: 5.1 -> 3.3
    us)."""
    d = x.shape[-1]
    xr = x if x.ndim == 2 else x.reshape(-1, d)
    key = (d, x.dtype)
    ones = _ONES_AS.get(key)
    if ones is None:
        row = _ones(d, x.dtype.str)
        ones = (row, row.reshape(d, 1))
        if len(_ONES_AS) < 64:
            _ONES_AS[key] = ones
    if x.size <= _FEW_BOUNDS:
        vals = x.ravel().tolist()  # within_shift_bound's test, inline (0.2 us of a call)
        total = sum(vals)
        small = -_NO_SHIFT_BOUND <= min(vals) and max(vals) <= _NO_SHIFT_BOUND and total == total
    else:
        small = within_shift_bound(xr)
    if small:
        e = np.exp(xr)
    else:
        e = _shifted(xr, None)
        np.exp(e, out=e)
    if x.size == d:
        # One row: its sum a scalar, whose reciprocal and product cost less than a [1, 1]'s broadcast (0.4 us)
        s = np.reciprocal(e.reshape(d) @ ones[0])
    else:
        s = np.reciprocal(e @ ones[1])
    e = np.multiply(e, s, out=out_for(e))
    return e if e.shape == x.shape else e.reshape(x.shape)


def softmax_rows_last(x: np.ndarray) -> np.ndarray | None:
    """Softmax over the last axis (rows of a block shifted by their maxima unless the block is small in size)."""
    if x.size <= _SOFTMAX_FEW and x.ndim and x.size and x.dtype in _ROW_TYPES and x.flags.c_contiguous:
        return _softmax_few(x)
    d = _rows_of(x, x.ndim - 1)
    if d is None:
        return None
    ones = _ones(d, x.dtype.str)
    per_block = _block_rows(d)
    if x.size <= per_block:
        # One block (all blockwise would make of it): the rows at once, into a new array, without the blocks' calls
        # (a classifier's Softmax of one row: 9.6 -> 3.6 us).
        return _softmax_block(x.reshape(-1, d), None, ones).reshape(x.shape)
    out = np.empty(x.shape, x.dtype)

    def block(xb: np.ndarray, ob: np.ndarray) -> None:
        _softmax_block(xb.reshape(-1, d), ob.reshape(-1, d), ones)

    if not blockwise(block, x, out, block=per_block, min_size=1):
        return None
    return out


def layer_norm_rows(
    x: np.ndarray, scale: np.ndarray, bias: np.ndarray | None, axis: int, epsilon: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """LayerNormalization of ``x`` over ``[axis, rank)`` in its own dtype: ``(Y, Mean, InvStdDev)``."""
    x = _contiguous_rows(x)
    d = _rows_of(x, axis)
    sc, b = _param(scale, x, axis, d or 0), _param(bias, x, axis, d or 0)
    if d is None or sc is False or b is False:
        return None
    assert isinstance(sc, np.ndarray)
    if accel.enabled():
        return layer_norm_compiled(x, sc, b if isinstance(b, np.ndarray) else None, axis, d, epsilon)
    rows = x.size // d
    out = np.empty(x.shape, x.dtype)
    mean = np.empty(rows, x.dtype)
    inv = np.empty(rows, x.dtype)
    t = x.dtype.type
    keep = x.shape[:axis] + (1,) * (x.ndim - axis)
    per_block = _block_rows(d)
    ones = np.ones(d, x.dtype)

    def block(start: int, xb: np.ndarray, ob: np.ndarray) -> None:
        r0 = start // d
        xr, orow = xb.reshape(-1, d), ob.reshape(-1, d)
        m = mean[r0 : r0 + xr.shape[0]]
        np.divide(xr @ ones, t(d), out=m)
        np.subtract(xr, m[:, None], out=orow)
        v = inv[r0 : r0 + xr.shape[0]]
        np.einsum("ij,ij->i", orow, orow, out=v)
        v /= t(d)
        v += t(epsilon)
        np.sqrt(v, out=v)
        np.reciprocal(v, out=v)
        orow *= v[:, None]
        orow *= sc
        if isinstance(b, np.ndarray):
            orow += b

    blockwise(block, x, out, block=per_block, min_size=1, indexed=True)
    return out, mean.reshape(keep), inv.reshape(keep)


def rms_norm_rows(x: np.ndarray, scale: np.ndarray, axis: int, epsilon: float) -> np.ndarray | None:
    """RMSNormalization of ``x`` over ``[axis, rank)`` in its own dtype, times ``scale`` of the same dtype."""
    x = _contiguous_rows(x)
    d = _rows_of(x, axis)
    sc = _param(scale, x, axis, d or 0)
    if d is None or not isinstance(sc, np.ndarray) or scale.dtype != x.dtype:
        return None
    if accel.enabled():
        return rms_norm_compiled(x, sc, d, epsilon)
    out = np.empty(x.shape, x.dtype)
    t = x.dtype.type
    scratch_rows = max(1, _ROW_BLOCK // d)

    def block(xb: np.ndarray, ob: np.ndarray) -> None:
        xr, orow = xb.reshape(-1, d), ob.reshape(-1, d)
        ms = np.empty(min(scratch_rows, xr.shape[0]), x.dtype)[: xr.shape[0]]
        np.einsum("ij,ij->i", xr, xr, out=ms)
        ms /= t(d)
        ms += t(epsilon)
        np.sqrt(ms, out=ms)
        np.divide(xr, ms[:, None], out=orow)
        orow *= sc

    blockwise(block, x, out, block=_block_rows(d), min_size=1)
    return out


def layer_norm_compiled(
    x: np.ndarray, scale: np.ndarray, bias: np.ndarray | None, axis: int, d: int, epsilon: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`layer_norm_rows` by the accelerator's compiled loop (each row read once into the cache and finished
    there), for a C-contiguous ``x`` of rows of ``d`` values from ``axis`` on, ``scale`` and ``bias`` of ``d``
    values of its dtype (the caller checked all that, and that the accelerator is on)."""
    t = x.dtype.type
    bb, has_b, n, eps = scale if bias is None else bias, bias is not None, t(d), t(epsilon)
    if x.size < MIN_PARALLEL_ELEMENTS and axis == x.ndim - 1:
        return layer_norm_last_axis(x, scale, bb, has_b, n, eps)
    rows = x.size // d
    out = np.empty(x.shape, x.dtype)
    mean = np.empty(rows, x.dtype)
    inv = np.empty(rows, x.dtype)
    fn, x2, o2 = accel.jit().layer_norm_rows, x.reshape(rows, d), out.reshape(rows, d)
    if x.size < MIN_PARALLEL_ELEMENTS:
        fn(x2, scale, bb, has_b, n, eps, o2, mean, inv, 0, rows)  # one thread, without parallel_for's blocks
    else:
        parallel_for(lambda a, z: fn(x2, scale, bb, has_b, n, eps, o2, mean, inv, a, z), rows, threads=active_threads())
    keep = x.shape[:axis] + (1,) * (x.ndim - axis)
    return out, mean.reshape(keep), inv.reshape(keep)


def layer_norm_last_axis(
    x: np.ndarray, scale: np.ndarray, bb: np.ndarray, has_b: bool, n: Any, eps: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`layer_norm_compiled` over the last axis of an ``x`` below the kernel threads' size, in one thread, with
    its arguments made by the caller (``bb`` the bias, or the scale when ``has_b`` is false; ``n`` the row length
    and ``eps`` the epsilon as values of ``x``'s type): a plan step that made them once calls this on every run (a
    decoder step's LayerNormalization of one row of 128 values: 4.3 -> 3.7 us)."""
    d = x.shape[-1]
    rows = x.size // d
    out = np.empty(x.shape, x.dtype)
    mean = np.empty(rows, x.dtype)
    inv = np.empty(rows, x.dtype)
    accel.jit().layer_norm_rows(x.reshape(rows, d), scale, bb, has_b, n, eps, out.reshape(rows, d), mean, inv, 0, rows)
    keep = (*x.shape[:-1], 1)
    return out, mean.reshape(keep), inv.reshape(keep)


def rms_norm_last_axis(x: np.ndarray, scale: np.ndarray, n: Any, eps: Any) -> np.ndarray:
    """:func:`rms_norm_compiled` over the last axis of an ``x`` below the kernel threads' size, in one thread, with
    its arguments made by the caller (``n`` the row length and ``eps`` the epsilon as values of ``x``'s type): a
    plan step that made them once calls this on every run (as :func:`layer_norm_last_axis`)."""
    d = x.shape[-1]
    out = np.empty(x.shape, x.dtype)
    accel.jit().rms_norm_rows(x.reshape(-1, d), scale, n, eps, out.reshape(-1, d), 0, x.size // d)
    return out


def rms_norm_compiled(x: np.ndarray, scale: np.ndarray, d: int, epsilon: float) -> np.ndarray:
    """:func:`rms_norm_rows` by the accelerator's compiled loop, for a C-contiguous ``x`` of rows of ``d`` values
    and ``scale`` of ``d`` values of its dtype (the caller checked all that, and that the accelerator is on)."""
    rows = x.size // d
    out = np.empty(x.shape, x.dtype)
    t = x.dtype.type
    fn, x2, o2 = accel.jit().rms_norm_rows, x.reshape(rows, d), out.reshape(rows, d)
    n, eps = t(d), t(epsilon)
    if x.size < MIN_PARALLEL_ELEMENTS:
        fn(x2, scale, n, eps, o2, 0, rows)  # one thread, without parallel_for's blocks
    else:
        parallel_for(lambda a, z: fn(x2, scale, n, eps, o2, a, z), rows, threads=active_threads())
    return out


def group_norm_compiled(
    x: np.ndarray, scale: np.ndarray, bias: np.ndarray, groups: int, epsilon: float, instance: bool
) -> np.ndarray | None:
    """GroupNormalization (``groups`` groups of channels) or InstanceNormalization (``groups`` = C, ``instance``) of
    ``x`` ``(N, C, ...)`` by the accelerator's compiled loop, each group a row read once into the cache and
    finished there (numpy's kernel makes five passes over the tensor and two reductions); ``scale`` and ``bias`` hold
    one value per channel. None where it does not apply (the accelerator off; not a C-contiguous float32/float64
    ``x`` with parameters of its type; an empty group): the kernel's numpy code then runs."""
    if not accel.enabled() or x.ndim < 2 or scale.dtype != x.dtype or bias.dtype != x.dtype:
        return None
    n, c = x.shape[:2]
    d = _rows_of(x, 1)
    if d is None or groups <= 0 or c % groups or scale.shape != (c,) or bias.shape != (c,):
        return None
    rows = n * groups
    d //= groups
    if d == 0:
        return None
    out = np.empty(x.shape, x.dtype)
    t = x.dtype.type
    n_, eps = t(d), t(epsilon)
    sc, bi = np.ascontiguousarray(scale), np.ascontiguousarray(bias)
    fn, x2, o2, per_row = accel.jit().group_norm_rows, x.reshape(rows, d), out.reshape(rows, d), c // groups
    if x.size < MIN_PARALLEL_ELEMENTS:
        fn(x2, sc, bi, per_row, n_, eps, instance, o2, 0, rows)
    else:
        parallel_for(lambda a, z: fn(x2, sc, bi, per_row, n_, eps, instance, o2, a, z), rows, threads=active_threads())
    return out


_SHORT_ROW = 64  # rows up to this length: their maxima over a transposed copy


def row_max(s: np.ndarray) -> np.ndarray:
    """The maximum of each row along the last axis, keeping it (NaN when the row holds one, as ``max``).

    numpy's reduction costs about 50 ns per row of a short last axis (192 rows of 24: 9 us); over a transposed
    copy the rows are the columns of one reduction along the first axis, an elementwise maximum of whole rows
    (4 us). The maximum does not depend on the order of comparisons: the same values.
    """
    n = s.shape[-1]
    if n > _SHORT_ROW or n == 0 or s.size == 0:
        return s.max(axis=-1, keepdims=True)
    t = np.ascontiguousarray(s.reshape(-1, n).T)
    return t.max(axis=0).reshape(*s.shape[:-1], 1)


def softmax_zero_rows(x: np.ndarray) -> tuple[np.ndarray, bool]:
    """Softmax over the last axis of ``x`` (float32 or float64, not empty), overwriting it, and whether some row's
    sum is NaN. A row that is -inf everywhere is shifted by 0 and gives zeros (never NaN); a row holding a NaN
    gives NaN. What Attention's softmax computes (``kernels/attention.py``): by the accelerator's two row passes
    around numpy's ``exp`` for a C-contiguous ``x``, else numpy (the row maxima as :func:`row_max`, the row sums by
    BLAS, as the Softmax kernel makes them); the two agree within the type's rounding of a row's sum."""
    n = x.shape[-1]
    if accel.enabled() and x.flags.c_contiguous:
        x2 = x.reshape(-1, n)
        fns = accel.jit_tx()
        fns.softmax_shift(x2)
        np.exp(x2, out=x2)
        return x, fns.softmax_divide(x2) > 0
    m = row_max(x)
    m[np.isneginf(m)] = 0
    with np.errstate(invalid="ignore", over="ignore"):
        np.subtract(x, m, out=x)
        np.exp(x, out=x)
        sums = (x.reshape(-1, n) @ np.ones(n, x.dtype)).reshape(*x.shape[:-1], 1)
        sums[sums == 0] = 1
        np.divide(x, sums, out=x)
    return x, bool(np.isnan(sums).any())
