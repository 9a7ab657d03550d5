"""Reduction kernels: Reduce*, ArgMax/ArgMin, CumSum/CumProd, Softmax/LogSoftmax/Hardmax, TopK.

Axes (every version): an axis may be negative, counting from the back; an axis repeated or out of
range is refused. Before opset 13 (ReduceSum) or 18 (the other Reduce ops) the axes are an
attribute, and an absent attribute reduces over every axis. From then on they are an optional
input; an absent or empty input reduces over every axis unless ``noop_with_empty_axes`` is 1, in
which case the input is returned unchanged.

A reduction over an empty set yields the operation's identity, as the definitions state: 0 for
ReduceSum, ReduceSumSquare, ReduceL1 and ReduceL2; 1 for ReduceProd; -inf for ReduceLogSum and
ReduceLogSumExp; -inf (or the least value of an integer type, ``False`` for bool) for ReduceMax;
+inf (or the greatest value) for ReduceMin. ReduceMean of an empty set is undefined by its
definition; onnxcore gives NaN (0/0) for floating-point types (onnxruntime gives 0) and 0 for
integer types.

ReduceMax/ReduceMin propagate NaN (IEEE 754 ``maximum``/``minimum``, see Clause 11.3 and the
module docstring of :mod:`onnxcore.kernels.elementwise_binary`).

Accumulation (Clause 11.4): float16 and the narrow floats accumulate in float32, integers in
their own type (wrapping), float32/float64 by numpy's pairwise summation.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels import accel
from onnxcore.kernels._rowwise import softmax_rows_last, within_shift_bound
from onnxcore.kernels._util import (
    BLAS_SUM_MIN,
    SHORT_ROWS,
    SQUARE_SUM_MIN,
    axes_from_input,
    consecutive_blocks,
    float_sum,
    normalize_axes,
    normalize_axis,
    out_for,
    reduced_shape,
    scalar_of,
    short_sum,
)
from onnxcore.kernels.registry import kernel

__all__ = ["reduce_values"]

Array = np.ndarray

# Typed as Any: numpy's stubs reject a non-literal ``keepdims`` on ufunc.reduce.
_ADD: Any = np.add
_MUL: Any = np.multiply
_MAX: Any = np.maximum
_FEW = 16  # up to this many values a check reads them as a Python list (one call, not a ufunc and a reduction)
# float32 and float64, which sums accumulate in as they are (a set: ``dt == np.float32`` converts the type, 0.1 us)
_F32_F64 = frozenset((np.dtype(np.float32), np.dtype(np.float64)))
# Row length up to which ReduceLogSumExp over the last axis takes the accelerator's shift and row sums (numpy's sum of
# a row of up to 128 values is one block, which _jit.row_sums repeats step for step).
_LSE_ROW = 128


def _acc_input(x: Array) -> Array:
    """``x`` in the type sums accumulate in (float32 for float16 and narrow floats)."""
    if x.dtype.kind == "V" or x.dtype == np.float16:
        return x.astype(np.float32)
    return x


def _finish(y: Any, dt: np.dtype[Any]) -> Array:
    r = np.asarray(y)
    return r if r.dtype == dt else r.astype(dt)


def _lowest(dt: np.dtype[Any]) -> Any:
    if dt.kind == "b":
        return False
    if dt.kind in "iu":
        return np.iinfo(dt).min
    return -np.inf


def _highest(dt: np.dtype[Any]) -> Any:
    if dt.kind == "b":
        return True
    if dt.kind in "iu":
        return np.iinfo(dt).max
    return np.inf


# From this many elements _extreme halves short rows whatever their count (below, only many of them: next).
_HALVING_MIN = 1 << 14
# Below _HALVING_MIN elements, rows are still halved when there are SHORT_ROWS of them (outputs) and at least
# _SHORT_ROWS_MIN elements: the class scores of a classifier's batch, (1,000, 4) float32, whose maximum per row took
# 38 us in maximum.reduce against 3 us in two halving passes.
_SHORT_ROWS_MIN = 1 << 8


def _extreme(uf: Any, xc: Array, ax: tuple[int, ...] | None, keepdims: bool) -> Array:
    """Max or min (``uf``) of a non-empty ``xc`` over ``ax``.

    numpy reduces short rows one row at a time, with a set-up cost per row that dominates below a few
    hundred elements (measured, 2-10x). Reduced axes followed by at most 64 elements are therefore
    halved instead: the max of the two halves is one long elementwise pass. Over trailing axes the
    flat data is halved (its even and odd elements) while rows have even length, then an odd rest is
    reduced by elementwise passes over its columns (up to 16) or one ``reduceat``. Same values: max
    and min do not round.
    """
    blocks = consecutive_blocks(xc, ax) if xc.size >= _SHORT_ROWS_MIN else None
    if blocks is None:
        return uf.reduce(xc, axis=ax, keepdims=keepdims)
    a, r, b = blocks
    if xc.size < _HALVING_MIN and a * b < SHORT_ROWS:
        return uf.reduce(xc, axis=ax, keepdims=keepdims)  # (a few rows: the reduction's per-row cost is small)
    if b != 1:
        if b > 64 or r % 2:
            return uf.reduce(xc, axis=ax, keepdims=keepdims)
        y3 = xc.reshape(a, r, b)
        while r % 2 == 0:
            r //= 2
            y3 = uf(y3[:, :r], y3[:, r:])
        return reduced_shape(uf.reduce(y3, axis=1) if r > 1 else y3[:, 0], xc.shape, ax, keepdims)
    if r >= 1024:
        return uf.reduce(xc, axis=ax, keepdims=keepdims)
    flat = y = xc.reshape(-1)
    odd = r
    while odd % 2 == 0:
        odd //= 2
    if r < 256 and odd <= 16:
        while r % 2 == 0:
            y = uf(y[0::2], y[1::2])
            r //= 2
    if r > 16:
        y = uf.reduceat(y, np.arange(0, a * r, r))
    elif r > 1 or y is flat:  # never return a view of the input
        rows = y.reshape(a, r)
        y = rows[:, 0].copy()
        for j in range(1, r):
            uf(y, rows[:, j], out=y)
    return reduced_shape(y, xc.shape, ax, keepdims)


@functools.lru_cache(maxsize=1024)
def _row_sum_geometry(
    shape: tuple[int, ...], ax: tuple[int, ...], keepdims: bool
) -> tuple[int, int, tuple[int, ...]] | None:
    """``(A, R, output shape)`` when summing a C-contiguous array of ``shape`` over ``ax`` is summing the rows of its
    ``(A, R)`` view (the reduced axes are the trailing ones, ``A > 1``) and :func:`float_sum` would do it as the BLAS
    product with ones (at least ``BLAS_SUM_MIN`` elements); else None. The same for every run of a node (the
    squeeze-and-excitation blocks' ReduceMean over H, W), so worked out once per geometry."""
    nd = len(shape)
    axes = sorted({a % nd for a in ax})
    if not axes or axes != list(range(axes[0], nd)):
        return None
    a, r = math.prod(shape[: axes[0]]), math.prod(shape[axes[0] :])
    if a <= 1 or a * r < BLAS_SUM_MIN:
        return None
    return a, r, reduced_shape(np.empty(a, np.int8), shape, ax, keepdims).shape


@functools.lru_cache(maxsize=256)
def _ones(r: int, dt: str) -> Array:
    """A read-only vector of ``r`` ones of type ``dt`` (the right operand of :func:`float_sum`'s row sums)."""
    v = np.ones(r, dt)
    v.flags.writeable = False
    return v


def _row_sum(op: str, x: Array, ax: tuple[int, ...], keepdims: bool) -> Array | None:
    """ReduceSum or ReduceMean of a float32/float64 ``x`` over its trailing axes as :func:`float_sum` computes it (the
    same BLAS product with ones, so the same bits; the mean then divided by the count) without its per-call
    geometry and allocations: the per-step cost of the small reductions of a CNN. None where it does not apply."""
    if not x.flags.c_contiguous:
        return None
    g = _row_sum_geometry(x.shape, ax, keepdims)
    if g is None:
        return None
    a, r, oshape = g
    y = x.reshape(a, r) @ _ones(r, x.dtype.str)
    if op == "mean":
        np.true_divide(y, r, out=y)
    return y.reshape(oshape)


def reduce_values(op: str, x: Array, axes: tuple[int, ...] | None, keepdims: bool) -> Array:
    """Reduce ``x`` over ``axes`` (``None``: all, normalised otherwise) with the named reduction (``"sum"``,
    ``"mean"``, ``"sumsquare"``, ``"l1"``, ``"l2"``, ...): what the Reduce kernels compute once their axes are read."""
    dt = x.dtype
    ax = axes if axes is None else tuple(axes)
    f32_f64 = dt in _F32_F64
    if f32_f64 and ((op == "sum" and x.size < BLAS_SUM_MIN) or (op == "sumsquare" and x.size < SQUARE_SUM_MIN)):
        # A small float sum: numpy's reduction, which is what float_sum gives below BLAS_SUM_MIN elements (and
        # _row_sum does not take), without the calls that find it out.
        xs = np.square(x) if op == "sumsquare" else x
        y = short_sum(xs, ax, keepdims)
        return np.asarray(_ADD.reduce(xs, axis=ax, keepdims=keepdims)) if y is None else y
    if f32_f64 and op == "logsumexp":
        # (what the chain below gives: float32/float64 accumulate in their type, and _logsumexp keeps it; 1 us of
        # the chain's tests at one row)
        if 0 < x.size <= _FEW and ax is not None and len(ax) == 1 and x.shape[ax[0]] == x.size:
            y = _logsumexp_row(x, ax, keepdims)
            if y is not None:
                return np.asarray(y)  # (computed in dt: _finish's conversion has nothing to do)
        n = x.shape[-1] if x.ndim else 0
        if (
            ax is not None
            and len(ax) == 1
            and ax[0] == x.ndim - 1
            and 0 < n <= _LSE_ROW
            and x.flags.c_contiguous
            and accel.enabled()
        ):
            # A classifier's class scores (rows of a few values): the chain below's values (numpy's exp and log, the
            # sums in its order) with its shift one compiled pass, where the maximum of short rows, the test of it
            # and the subtraction make three to five numpy calls (a naive Bayes model's [16, 3]: 7.6 -> 4.2 us;
            # [1000, 3]: 47 -> 32 us).
            fns = accel.jit()
            x2 = x.reshape(-1, n)
            e = np.empty(x2.shape, dt)
            m = np.empty(x2.shape[0], dt)
            fns.logsumexp_shift(x2, e, m)
            np.exp(e, out=e)
            if x.size < BLAS_SUM_MIN:
                s = np.empty(x2.shape[0], dt)
                fns.row_sums(e, s)  # (numpy's order of a short row's sum: the reduction the chain makes here)
            else:
                # the chain's own sums (BLAS's order); a fresh array, or a view of e (ours) for rows of one value
                s = np.asarray(float_sum(e.reshape(x.shape), ax, False)).reshape(-1)
                s = s if s.flags.writeable else s.copy()
            np.log(s, out=s)
            np.add(s, m, out=s)
            return s.reshape(x.shape[:-1] + ((1,) if keepdims else ()))
        return _finish(_logsumexp(x, ax, keepdims), dt)
    if op == "prod" and f32_f64:
        # (what the chain below gives a float32/float64 product: numpy's reduction in the type, without the chain)
        y = _short_product(x, ax, keepdims)
        return np.asarray(_MUL.reduce(x, axis=ax, keepdims=keepdims)) if y is None else y
    if (op == "mean" or op == "sum") and ax and f32_f64:
        y = _row_sum(op, x, ax, keepdims)
        if y is not None:
            return y
    if op in ("max", "min"):
        xc = x.astype(np.float32) if dt.kind == "V" else x
        uf: Any = np.maximum if op == "max" else np.minimum
        empty = x.size == 0
        if empty:
            init = _lowest(xc.dtype) if op == "max" else _highest(xc.dtype)
            y = uf.reduce(xc, axis=ax, keepdims=keepdims, initial=init)
        else:
            y = _extreme(uf, xc, ax, keepdims)
        return _finish(y, dt)
    if dt.kind in "iu":
        return _reduce_int(op, x, ax, keepdims)
    xc = _acc_input(x)
    if op == "sum":
        y = float_sum(xc, ax, keepdims)
    elif op == "mean":
        n = _count(x.shape, ax)
        y = float_sum(xc, ax, keepdims)
        y = np.true_divide(y, n) if n else np.full(np.shape(y), np.nan, dtype=xc.dtype)
    elif op == "prod":
        y = _short_product(xc, ax, keepdims)
        if y is None:
            y = _MUL.reduce(xc, axis=ax, keepdims=keepdims)
    elif op == "sumsquare":
        y = float_sum(xc, ax, keepdims, square=True)
    elif op == "l1":
        y = float_sum(np.abs(xc), ax, keepdims)
    elif op == "l2":
        y = np.sqrt(float_sum(xc, ax, keepdims, square=True))
    elif op == "logsum":
        y = np.log(float_sum(xc, ax, keepdims))
    elif op == "logsumexp":
        y = _logsumexp(xc, ax, keepdims)
    else:  # pragma: no cover - the table below names only the ops above
        raise EvaluationError(f"unknown reduction {op}")
    return _finish(y, dt)


def _short_product(xc: Array, ax: tuple[int, ...] | None, keepdims: bool) -> Array | None:
    """The product over a short last axis as a fold of its columns, or None elsewhere. numpy's product reduction
    multiplies in order (never pairwise, unlike its sums), so the fold is the same arithmetic; over a last axis of
    a few values the reduction's inner loop runs once per output (55,000 products of 2 values: 808 against 20 us)."""
    if ax is None or len(ax) != 1 or ax[0] != xc.ndim - 1:
        return None
    m = xc.shape[-1]
    if not 2 <= m <= _SHORT_AXIS or (m > 2 and xc.size < m * SHORT_ROWS):
        return None  # (a few outputs: the reduction's one call costs less than m - 1 calls)
    y = _MUL(xc[..., 0], xc[..., 1])
    for j in range(2, m):
        _MUL(y, xc[..., j], out=y)
    return y[..., None] if keepdims else y


_SHORT_AXIS = 8


def _count(shape: tuple[int, ...], ax: tuple[int, ...] | None) -> int:
    n = 1
    for i in range(len(shape)) if ax is None else ax:
        n *= shape[i]
    return n


def _logsumexp(xc: Array, ax: tuple[int, ...] | None, keepdims: bool) -> Array:
    if xc.size == 0:
        return np.log(_ADD.reduce(xc, axis=ax, keepdims=keepdims))
    m = np.asarray(_extreme(_MAX, xc, ax, True))  # (the same maxima: max does not round)
    # Where the max is infinite (all -inf, or some +inf) shifting would give NaN; shift by 0 there. A few maxima
    # (a row's, at a few rows) are tested as Python floats first: when all are finite there is nothing to replace.
    if m.size > _FEW or not all(map(math.isfinite, m.ravel().tolist())):
        m = np.where(np.isfinite(m), m, np.zeros((), m.dtype))
    e = np.asarray(np.subtract(xc, m))
    np.exp(e, out=e)
    # (below BLAS_SUM_MIN float_sum is this very reduction; the log and the shift then in place, on the fresh sums)
    s = np.asarray(_ADD.reduce(e, axis=ax, keepdims=keepdims) if e.size < BLAS_SUM_MIN else float_sum(e, ax, keepdims))
    s = np.log(s, out=out_for(s))
    return np.add(s, m if keepdims else m.reshape(s.shape), out=out_for(s))


def _logsumexp_row(xc: Array, ax: tuple[int, ...], keepdims: bool) -> Array | None:
    """:func:`_logsumexp` of one row of at most :data:`_FEW` finite float32/float64 values (a classifier's scores:
    the one axis reduced holds them all), its maximum taken on Python floats (exact, as the reduction's) and the row
    shifted by it as a scalar, without the reduction and the broadcast of a [1, 1] array. None for a row holding NaN
    or +-inf, or whose maximum is 0 (which the reduction may give as -0.0): the general path's."""
    vals = xc.ravel().tolist()
    total = sum(vals)
    if total - total != 0:  # NaN: an infinity or a NaN in the row (or a float64 sum beyond the range)
        return None
    top = max(vals)
    if top == 0:
        return None
    m = xc.dtype.type(top)
    e = np.subtract(xc, m)
    np.exp(e, out=e)
    # (below BLAS_SUM_MIN: float_sum's reduction; one sum, so the log and the shift as new arrays, out_for's choice)
    return np.add(np.log(_ADD.reduce(e, axis=ax, keepdims=keepdims)), m)


def _reduce_int(op: str, x: Array, ax: tuple[int, ...] | None, keepdims: bool) -> Array:
    dt = x.dtype
    if op == "sum":
        return _finish(_ADD.reduce(x, axis=ax, keepdims=keepdims, dtype=dt), dt)
    if op == "prod":
        return _finish(_MUL.reduce(x, axis=ax, keepdims=keepdims, dtype=dt), dt)
    if op == "sumsquare":
        return _finish(_ADD.reduce(np.multiply(x, x), axis=ax, keepdims=keepdims, dtype=dt), dt)
    if op == "l1":
        return _finish(_ADD.reduce(np.abs(x), axis=ax, keepdims=keepdims, dtype=dt), dt)
    # The rest leave the integers: compute in float64 and truncate back like a C cast.
    xf: Any = x.astype(np.float64)
    y: Any
    if op == "mean":
        n = _count(x.shape, ax)
        s = _ADD.reduce(xf, axis=ax, keepdims=keepdims)
        y = s / n if n else np.zeros(np.shape(s))
    elif op == "l2":
        y = np.sqrt(_ADD.reduce(xf * xf, axis=ax, keepdims=keepdims))
    elif op == "logsum":
        y = np.log(_ADD.reduce(xf, axis=ax, keepdims=keepdims))
    else:
        y = _logsumexp(xf, ax, keepdims)
    # A non-finite result (log of 0) has no integer value; 0 is what a C cast gives on x86.
    y = np.asarray(y)
    if not np.isfinite(y).all():
        y = np.where(np.isfinite(y), y, 0.0)
    return _finish(y, dt)


def _axes_attr(x: Array, axes: list[int] | None) -> tuple[int, ...] | None:
    # An absent or empty ``axes`` attribute reduces over every dimension (the attribute forms
    # have no noop_with_empty_axes; onnxruntime reads an empty list the same way).
    if not axes:
        return None
    if len(axes) == 1 and type(axes[0]) is int and -x.ndim <= axes[0] < x.ndim:
        return (axes[0] % x.ndim,)  # one axis in range (the common case), without normalize_axes' general loop
    return normalize_axes(axes, x.ndim)


def _make_attr_kernel(op: str, name: str, versions: tuple[int, ...]) -> None:
    def k(data: Array, *, axes: list[int] | None = None, keepdims: int = 1) -> Array:
        return reduce_values(op, data, _axes_attr(data, axes), bool(keepdims))

    k.__name__ = k.__qualname__ = f"{name}_attr"
    kernel(name, *versions)(k)


def _make_input_kernel(op: str, name: str, versions: tuple[int, ...]) -> None:
    def k(data: Array, axes: Array | None = None, *, keepdims: int = 1, noop_with_empty_axes: int = 0) -> Array:
        if type(axes) is np.ndarray and axes.size == 1 and axes.ndim <= 1 and axes.dtype.kind in "iu":
            # One axis (the common case: a classifier's row reduction), read as axes_from_input and normalize_axes
            # read it, without their general loops (1-2 us of a small node).
            a, r = axes.item(), data.ndim if type(data) is np.ndarray else np.ndim(data)
            if -r <= a < r:
                return reduce_values(op, data, (a % r,), bool(keepdims))
        ax = axes_from_input(axes)
        if not ax:
            if noop_with_empty_axes:
                return reduce_values(op, data, (), bool(keepdims))
            return reduce_values(op, data, None, bool(keepdims))
        return reduce_values(op, data, normalize_axes(ax, data.ndim), bool(keepdims))

    k.__name__ = k.__qualname__ = f"{name}_input"
    kernel(name, *versions)(k)


for _op, _name, _attr_versions, _input_versions in (
    ("sum", "ReduceSum", (1, 11), (13,)),
    ("mean", "ReduceMean", (1, 11, 13), (18,)),
    ("prod", "ReduceProd", (1, 11, 13), (18,)),
    ("sumsquare", "ReduceSumSquare", (1, 11, 13), (18,)),
    ("l1", "ReduceL1", (1, 11, 13), (18,)),
    ("l2", "ReduceL2", (1, 11, 13), (18,)),
    ("logsum", "ReduceLogSum", (1, 11, 13), (18, 28)),
    ("logsumexp", "ReduceLogSumExp", (1, 11, 13), (18, 28)),
    # ReduceMax/Min-20 add bool (False < True) with the same definition.
    ("max", "ReduceMax", (1, 11, 12, 13), (18, 20)),
    ("min", "ReduceMin", (1, 11, 12, 13), (18, 20)),
):
    _make_attr_kernel(_op, _name, _attr_versions)
    _make_input_kernel(_op, _name, _input_versions)


# --- ArgMax / ArgMin --------------------------------------------------------------------------

_INT64 = np.dtype(np.int64)


def _arg(x: Array, axis: int, keepdims: int, select_last_index: int, largest: bool) -> Array:
    if not select_last_index and type(x) is np.ndarray and -x.ndim <= axis < x.ndim and x.shape[axis]:
        # The first index along an axis in range (a classifier's label): the call below without the axis
        # normalisation and the int64 conversion of an index array that is int64 already (1-row ArgMax: 0.9 -> 0.5 us)
        if x.dtype.kind != "V":
            idx = (
                x.argmax(axis=axis, keepdims=bool(keepdims))
                if largest
                else x.argmin(axis=axis, keepdims=bool(keepdims))
            )
            return idx if type(idx) is np.ndarray and idx.dtype is _INT64 else np.asarray(idx, dtype=np.int64)
    a = normalize_axis(axis, x.ndim) if x.ndim else 0
    if x.ndim == 0:
        raise EvaluationError("ArgMax/ArgMin: input must have rank >= 1")
    if x.shape[a] == 0:
        raise EvaluationError(f"ArgMax/ArgMin: axis {a} has extent 0")
    xc = x.astype(np.float32) if x.dtype.kind == "V" else x
    if select_last_index:
        n = xc.shape[a]
        xc = np.flip(xc, axis=a)
    # (the ndarray methods: np.argmax's own loop without its Python wrapper, a microsecond a call at a few rows)
    idx = xc.argmax(axis=a, keepdims=bool(keepdims)) if largest else xc.argmin(axis=a, keepdims=bool(keepdims))
    if select_last_index:
        idx = (n - 1) - idx
    return np.asarray(idx, dtype=np.int64)


@kernel("ArgMax", 1, 11)
def argmax_1(data: Array, *, axis: int = 0, keepdims: int = 1) -> Array:
    """ArgMax-1/11: index of the first maximum along ``axis``."""
    return _arg(data, axis, keepdims, 0, True)


@kernel("ArgMax", 12, 13)
def argmax(data: Array, *, axis: int = 0, keepdims: int = 1, select_last_index: int = 0) -> Array:
    """ArgMax-12/13: first or last maximum along ``axis``."""
    return _arg(data, axis, keepdims, select_last_index, True)


@kernel("ArgMin", 1, 11)
def argmin_1(data: Array, *, axis: int = 0, keepdims: int = 1) -> Array:
    """ArgMin-1/11: index of the first minimum along ``axis``."""
    return _arg(data, axis, keepdims, 0, False)


@kernel("ArgMin", 12, 13)
def argmin(data: Array, *, axis: int = 0, keepdims: int = 1, select_last_index: int = 0) -> Array:
    """ArgMin-12/13: first or last minimum along ``axis``."""
    return _arg(data, axis, keepdims, select_last_index, False)


# --- CumSum / CumProd -------------------------------------------------------------------------


def _accumulate(uf: Any, src: Array, out: Array, inner: int) -> None:
    """Inclusive running ``uf`` of ``src`` along axis 0 into ``out`` (same shape, axis 0 first).

    numpy's ``ufunc.accumulate`` walks the axis element by element in its inner loop; when each
    step is a slab with ``inner`` contiguous elements (the extents after the axis in memory),
    one vectorized operation per step is several times faster.
    """
    n = src.shape[0]
    if n == 0:
        return
    if inner >= 32 and n <= 4096:
        out[0] = src[0]
        for i in range(1, n):
            uf(out[i - 1], src[i], out=out[i])
    else:
        uf.accumulate(src, axis=0, dtype=out.dtype, out=out)


def _cumulative(x: Array, axis: Array, exclusive: int, reverse: int, prod: bool) -> Array:
    if x.ndim == 0:
        raise EvaluationError("CumSum/CumProd: input must have rank >= 1")
    a = normalize_axis(int(scalar_of(axis, name="axis")), x.ndim)
    dt = x.dtype
    xc = _acc_input(x)
    y = np.empty(xc.shape, dtype=xc.dtype)
    # Work on views with the axis first (and reversed for ``reverse``); y is written through them. (A transpose, not
    # np.moveaxis: the same view at a tenth of the cost.)
    first = (a, *(i for i in range(x.ndim) if i != a))
    src = xc.transpose(first)
    dst = y.transpose(first)
    if reverse:
        src = src[::-1]
        dst = dst[::-1]
    uf = np.multiply if prod else np.add
    inner = math.prod(x.shape[a + 1 :])
    if exclusive:
        if dst.shape[0]:
            dst[0] = 1 if prod else 0
        _accumulate(uf, src[:-1], dst[1:], inner)
    else:
        _accumulate(uf, src, dst, inner)
    return _finish(y, dt)


@kernel("CumSum", 11, 14)
def cumsum(x: Array, axis: Array, *, exclusive: int = 0, reverse: int = 0) -> Array:
    """CumSum-11/14: cumulative sum along the axis given as a 0-D (or 1-element) tensor."""
    plain = not exclusive and not reverse and type(x) is np.ndarray and x.ndim
    if plain and type(axis) is np.ndarray and axis.ndim == 0:
        # A running sum along the last axis (an AdaBoost model's weights, a mask's positions): numpy's accumulate
        # straight on x, without the general path's views and buffer (a [1, 50]: 10.6 -> 4.2 us on a slow machine).
        # _cumulative runs the same accumulate for a last axis (inner extent 1), so the same bits.
        a = int(axis)
        if (a == -1 or a == x.ndim - 1) and x.dtype.kind in "fiu" and x.dtype != np.float16:
            return np.asarray(_ADD.accumulate(x, axis=-1, dtype=x.dtype))
    return _cumulative(x, axis, exclusive, reverse, prod=False)


@kernel("CumProd", 26)
def cumprod(x: Array, axis: Array, *, exclusive: int = 0, reverse: int = 0) -> Array:
    """CumProd-26: cumulative product along ``axis``."""
    return _cumulative(x, axis, exclusive, reverse, prod=True)


# --- Softmax, LogSoftmax, Hardmax -------------------------------------------------------------


def _softmax_axis(x: Array, a: int, log: bool) -> Array:
    dt = x.dtype
    if not log and a == x.ndim - 1:
        # Over the last axis (attention, classifiers): by blocks of rows, on the kernel threads.
        rows = softmax_rows_last(x)
        if rows is not None:
            return rows
    xc = x.astype(np.float32) if (dt.kind == "V" or dt == np.float16) else x
    if xc.size == 0:
        return x.copy()
    if within_shift_bound(xc):
        shifted = xc
        e = np.exp(xc)
    else:
        m = np.asarray(_MAX.reduce(xc, axis=a, keepdims=True))
        if not np.isfinite(m).all():
            # A row of -inf (or holding +inf) would give NaN from inf - inf; shift such rows by 0.
            m = np.where(np.isfinite(m), m, np.zeros((), xc.dtype))
        shifted = np.asarray(np.subtract(xc, m))
        e = np.exp(shifted) if log else np.exp(shifted, out=shifted)
    s = float_sum(e, (a,), True)
    if log:
        np.log(s, out=s)
        out = np.asarray(np.subtract(shifted, s))
        return _finish(out, dt)
    # Multiplying by the reciprocal (one more rounding) is several times faster than dividing
    # by a broadcast row sum.
    np.reciprocal(s, out=s)
    e *= s
    return _finish(e, dt)


def _hardmax_axis(x: Array, a: int) -> Array:
    xc = x.astype(np.float32) if x.dtype.kind == "V" else x
    out = np.zeros(x.shape, dtype=x.dtype)
    if x.size == 0:
        return out
    idx = np.argmax(xc, axis=a, keepdims=True)
    np.put_along_axis(out, idx, np.ones((), dtype=x.dtype), axis=a)
    return out


def _coerced(x: Array, axis: int, fn: Any) -> Array:
    """Apply ``fn`` along axis 1 of ``x`` coerced to 2-D at ``axis`` (definitions before 13)."""
    a = normalize_axis(axis, x.ndim) if x.ndim else 0
    n = int(np.prod(x.shape[:a], dtype=np.int64))
    d = int(np.prod(x.shape[a:], dtype=np.int64))
    return np.asarray(fn(x.reshape(n, d), 1)).reshape(x.shape)


def _along(x: Array, axis: int, fn: Any) -> Array:
    if x.ndim == 0:
        return np.asarray(fn(x.reshape(1), 0)).reshape(())
    return np.asarray(fn(x, normalize_axis(axis, x.ndim)))


@kernel("Softmax", 1, 11)
def softmax_1(input: Array, *, axis: int = 1) -> Array:
    """Softmax-1/11: over the input coerced to 2-D [a_0*..*a_{k-1}, a_k*..*a_{n-1}]."""
    return _coerced(input, axis, lambda v, a: _softmax_axis(v, a, False))


@kernel("Softmax", 13)
def softmax(input: Array, *, axis: int = -1) -> Array:
    """Softmax-13: along one axis."""
    if type(input) is np.ndarray and input.ndim and (axis == -1 or axis == input.ndim - 1):
        # The last axis (a classifier's probabilities, attention) straight to the rows' kernel, without the axis
        # normalisation and dispatch of the general path (a [1, 3] Softmax: 6.3 -> 4.8 us): the same rows.
        rows = softmax_rows_last(input)
        if rows is not None:
            return rows
    return _along(input, axis, lambda v, a: _softmax_axis(v, a, False))


@kernel("LogSoftmax", 1, 11)
def log_softmax_1(input: Array, *, axis: int = 1) -> Array:
    """LogSoftmax-1/11: over the input coerced to 2-D."""
    return _coerced(input, axis, lambda v, a: _softmax_axis(v, a, True))


@kernel("LogSoftmax", 13)
def log_softmax(input: Array, *, axis: int = -1) -> Array:
    """LogSoftmax-13: along one axis."""
    return _along(input, axis, lambda v, a: _softmax_axis(v, a, True))


@kernel("Hardmax", 1, 11)
def hardmax_1(input: Array, *, axis: int = 1) -> Array:
    """Hardmax-1/11: 1 at the first maximum of each row of the input coerced to 2-D."""
    return _coerced(input, axis, _hardmax_axis)


@kernel("Hardmax", 13)
def hardmax(input: Array, *, axis: int = -1) -> Array:
    """Hardmax-13: 1 at the first maximum along ``axis``, 0 elsewhere."""
    return _along(input, axis, _hardmax_axis)


# --- TopK -------------------------------------------------------------------------------------


def _stable_order(v: Array, largest: int) -> Array:
    """Order of ``v`` along the last axis, best first, equal values by ascending index."""
    if largest:
        # A stable ascending sort of the reversed axis, read backwards, puts the largest first
        # and keeps equal values in ascending index order.
        n = v.shape[-1]
        order = np.argsort(v[..., ::-1], axis=-1, kind="stable")[..., ::-1]
        return (n - 1) - order
    return np.argsort(v, axis=-1, kind="stable")


_COMPILED_TOPK = 16  # with the accelerator, a k up to this many of each row is chosen by one compiled pass
_TOPK_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _topk_last(xm: Array, k: int, largest: int) -> Array:
    """Indices (int64) of the top ``k`` along the last axis of ``xm``, in TopK order."""
    n = xm.shape[-1]
    few = 0 < k and 4 * k < n
    # (NaN matters only to the two ways of choosing a few: not looked for otherwise, 1.3 us of a [1, 50] TopK of 50)
    nan = few and xm.dtype.kind == "f" and bool(np.isnan(xm).any())
    if few and k <= _COMPILED_TOPK and xm.dtype in _TOPK_TYPES and not nan and accel.enabled():
        # A few of many (k-nearest neighbours): one pass per row keeping the best k in order, the stable sort's
        # indices (ties by ascending index), where the partition below costs some 10 ns an element.
        rows = np.ascontiguousarray(xm).reshape(-1, n)
        out = np.empty((rows.shape[0], k), np.int64)
        accel.jit_ml().top_k_rows(rows, k, bool(largest), np.empty(k, xm.dtype), out)
        return out.reshape(*xm.shape[:-1], k)
    use_partition = few and not nan
    if not use_partition:
        return np.array(_stable_order(xm, largest)[..., :k], dtype=np.int64, order="C")  # (one copy)
    # Selection in O(n) by partition. The chosen set is right unless the k-th best value also
    # occurs outside it (a tie across the boundary), where the definition wants the equal
    # elements of lowest index: detected by counting, and then chosen explicitly.
    pos = n - k if largest else k - 1
    part = np.argpartition(xm, pos, axis=-1)
    cols = part[..., pos:] if largest else part[..., :k]
    kth = np.take_along_axis(xm, part[..., pos : pos + 1], axis=-1)
    cand = np.take_along_axis(xm, cols, axis=-1)
    if not np.array_equal(np.count_nonzero(cand == kth, axis=-1), np.count_nonzero(xm == kth, axis=-1)):
        better = xm > kth if largest else xm < kth
        need = k - np.count_nonzero(better, axis=-1, keepdims=True)
        eq = xm == kth
        chosen = np.cumsum(eq, axis=-1, dtype=np.int64)
        np.less_equal(chosen, need, out=eq, where=eq)
        better |= eq
        cols = np.nonzero(better)[-1].reshape(xm.shape[:-1] + (k,))
    else:
        cols = np.sort(cols, axis=-1)  # ascending index, so the stable sort below keeps tie order
    cand = np.take_along_axis(xm, cols, axis=-1)
    return np.take_along_axis(cols, _stable_order(cand, largest), axis=-1).astype(np.int64)


def _topk(x: Array, k: int, axis: int, largest: int) -> tuple[Array, Array]:
    if x.ndim == 0:
        raise EvaluationError("TopK: input must have rank >= 1")
    a = normalize_axis(axis, x.ndim)
    n = x.shape[a]
    if k < 0 or k > n:
        raise EvaluationError(f"TopK: k={k} is outside [0, {n}] for axis {a}")
    xc = x.astype(np.float32) if x.dtype.kind == "V" else x
    if a == x.ndim - 1 and k and x.size:
        # Along the last axis (a classifier's scores, a neighbour search's distances): no axis moved, and the values
        # read by one index of the rows as 2-D (np.moveaxis and np.take_along_axis cost microseconds each).
        idx = np.ascontiguousarray(_topk_last(xc, k, largest))
        if x.size == n:  # one row: a take (0.7 us against 1.7 for the index of the rows)
            return x.reshape(n).take(idx.reshape(k)).reshape(idx.shape), idx
        rows = x.reshape(-1, n)
        picked = rows[np.arange(rows.shape[0])[:, None], idx.reshape(-1, k)]
        return picked.reshape(idx.shape), idx
    idx = _topk_last(np.moveaxis(xc, a, -1), k, largest)
    idx = np.ascontiguousarray(np.moveaxis(idx, -1, a))
    values = np.take_along_axis(x, idx, axis=a)
    return values, idx


@kernel("TopK", 1)
def topk_1(X: Array, *, k: int, axis: int = -1) -> tuple[Array, Array]:
    """TopK-1: k largest along ``axis`` (k an attribute)."""
    return _topk(X, int(k), axis, 1)


def _k_of(K: Array) -> int:
    return int(scalar_of(K, name="K"))


@kernel("TopK", 10)
def topk_10(X: Array, K: Array, *, axis: int = -1) -> tuple[Array, Array]:
    """TopK-10: k largest along ``axis`` (K an input)."""
    return _topk(X, _k_of(K), axis, 1)


@kernel("TopK", 11, 24)
def topk(X: Array, K: Array, *, axis: int = -1, largest: int = 1, sorted: int = 1) -> tuple[Array, Array]:
    """TopK-11/24: k largest or smallest; always returned sorted (allowed when sorted=0)."""
    return _topk(X, _k_of(K), axis, largest)
