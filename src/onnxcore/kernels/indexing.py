"""Indexing kernels: gathers, scatters and index-producing operators.

Gather, GatherElements, GatherND, NonZero, OneHot, ReverseSequence, Scatter, ScatterElements,
ScatterND, Unique, Compress and TensorScatter, every version of the default domain.

Indices may be negative (counting from the back of their axis) wherever the operator
definition accepts ``[-s, s-1]``; an index outside that range is refused with
:class:`~onnxcore.errors.EvaluationError`, never left to numpy's ``IndexError``.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels._util import NARROW_FLOAT_DTYPES, check_elements, normalize_axis, scalar_of
from onnxcore.kernels.registry import kernel

__all__: list[str] = []


def _indices(indices: np.ndarray, size: int, what: str) -> np.ndarray:
    """``indices`` as int64 with negative values counted from the back, checked against ``size``."""
    idx = np.asarray(indices)
    if idx.dtype.kind not in "iu":
        raise EvaluationError(f"{what}: indices must be integers, got {idx.dtype}")
    idx = idx.astype(np.int64, copy=False)
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < -size or hi >= size:
            bad = lo if lo < -size else hi
            raise EvaluationError(f"{what}: index {bad} is out of bounds [{-size}, {size - 1}]")
        if lo < 0:
            idx = np.where(idx < 0, idx + size, idx)
    return idx


def _element_grid(indices: np.ndarray, axis: int) -> list[np.ndarray]:
    """Open index grids over ``indices.shape`` with the grid of ``axis`` replaced by ``indices`` (what ``np.ogrid``
    gives, made by ``arange``: ogrid's index machinery costs some ten microseconds a call)."""
    nd = indices.ndim
    return [
        indices if d == axis else np.arange(n).reshape((1,) * d + (n,) + (1,) * (nd - d - 1))
        for d, n in enumerate(indices.shape)
    ]


# ---------------------------------------------------------------------------------------------
# Gather, GatherElements, GatherND
# ---------------------------------------------------------------------------------------------


@kernel("Gather", 1, 11, 13)
def gather(data: np.ndarray, indices: np.ndarray, *, axis: int = 0) -> np.ndarray:
    """Gather: entries of ``axis`` picked by ``indices``; output rank ``q + r - 1``."""
    x = np.asarray(data)
    if x.ndim == 0:
        raise EvaluationError("Gather: data must have rank >= 1")
    a = normalize_axis(axis, x.ndim)
    ind = np.asarray(indices)
    if ind.dtype.kind == "i":
        # numpy's take accepts exactly ONNX's range [-size, size - 1] (a negative index counted from the back) and
        # refuses the rest: no separate check (an embedding lookup's min and max cost more than the take).
        try:
            return np.take(x, ind, axis=a)
        except IndexError:
            pass  # _indices names the index out of bounds
    idx = _indices(ind, x.shape[a], "Gather")
    return np.take(x, idx, axis=a)


@kernel("GatherElements", 11, 13)
def gather_elements(data: np.ndarray, indices: np.ndarray, *, axis: int = 0) -> np.ndarray:
    """GatherElements: ``out[i][j][k] = data[i][index[i][j][k]][k]`` (for axis 1); shape of indices."""
    x = np.asarray(data)
    ind = np.asarray(indices)
    if x.ndim == 0 or ind.ndim != x.ndim:
        raise EvaluationError(f"GatherElements: data {x.shape} and indices {ind.shape} must share rank >= 1")
    a = normalize_axis(axis, x.ndim)
    for i, (di, ii) in enumerate(zip(x.shape, ind.shape)):
        if i != a and ii > di:
            raise EvaluationError(f"GatherElements: indices {ind.shape} exceed data {x.shape} on axis {i}")
    if 0 < ind.size <= _FEW_ELEMENTS and ind.dtype.kind in "iu":
        vals = ind.ravel().tolist()
        if 0 <= min(vals) and max(vals) < x.shape[a]:
            # A few indices in range (a regressor's chosen column): their flat positions in ``x`` as an offset per
            # position plus the index times the axis' stride, both kept per geometry, and one take of the flat data
            # instead of two reductions, the grids and a fancy index (a [1, 1] of a [1, 50]: 5.7 -> 2.6 us)
            base, step = _flat_grid(x.shape, ind.shape, a)
            i64 = ind.astype(np.int64, copy=False)
            return x.take(np.add(base, i64) if step == 1 else base + i64 * step)
    idx = _indices(ind, x.shape[a], "GatherElements")
    return x[tuple(_element_grid(idx, a))]


_FEW_ELEMENTS = 16  # up to this many indices GatherElements reads them as a Python list


@functools.lru_cache(maxsize=256)
def _flat_grid(shape: tuple[int, ...], ind_shape: tuple[int, ...], axis: int) -> tuple[np.ndarray, int]:
    """``(base, step)``: the C-order flat position in an array of ``shape`` of each position of ``ind_shape`` with its
    ``axis`` coordinate 0 (int64, read-only), and the flat distance between neighbours along ``axis``."""
    strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
    base = sum(g * strides[d] for d, g in enumerate(_element_grid(np.zeros(ind_shape, np.int64), axis)))
    base = np.ascontiguousarray(np.broadcast_to(base, ind_shape), dtype=np.int64)
    base.flags.writeable = False
    return base, strides[axis]


def _gather_nd(x: np.ndarray, indices: np.ndarray, batch_dims: int) -> np.ndarray:
    ind = np.asarray(indices)
    b = int(batch_dims)
    if x.ndim < 1 or ind.ndim < 1:
        raise EvaluationError(f"GatherND: data {x.shape} and indices {ind.shape} need rank >= 1")
    if b < 0 or b >= min(x.ndim, ind.ndim):
        raise EvaluationError(f"GatherND: batch_dims={b} must be below both ranks ({x.ndim}, {ind.ndim})")
    if x.shape[:b] != ind.shape[:b]:
        raise EvaluationError(f"GatherND: batch dims of data {x.shape} and indices {ind.shape} differ")
    k = ind.shape[-1]
    if k > x.ndim - b:
        raise EvaluationError(f"GatherND: index tuples of length {k} exceed rank {x.ndim} - batch_dims {b}")
    if ind.dtype.kind not in "iu":
        raise EvaluationError(f"GatherND: indices must be integers, got {ind.dtype}")
    batch = x.shape[:b]
    nb = math.prod(batch)  # (Python ints: np.prod costs microseconds, as much as a small gather)
    rest = x.shape[b + k :]
    mid = ind.shape[b:-1]
    out_shape = batch + mid + rest
    xr = x.reshape((nb,) + x.shape[b:])
    ir = ind.reshape(nb, math.prod(mid), k).astype(np.int64, copy=False)
    cols = [_indices(ir[..., j], x.shape[b + j], "GatherND") for j in range(k)]
    bidx = np.arange(nb).reshape(nb, 1)
    if k == 0:
        picked = np.broadcast_to(xr[:, None], (nb, ir.shape[1]) + rest)
        return np.array(picked).reshape(out_shape)
    return xr[(bidx,) + tuple(cols)].reshape(out_shape)


@kernel("GatherND", 11)
def gather_nd_11(data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """GatherND-11: slices of ``data`` at the index tuples of the last axis of ``indices``."""
    return _gather_nd(np.asarray(data), indices, 0)


@kernel("GatherND", 12, 13)
def gather_nd_12(data: np.ndarray, indices: np.ndarray, *, batch_dims: int = 0) -> np.ndarray:
    """GatherND-12 and later: the leading ``batch_dims`` dims are shared batch dims."""
    return _gather_nd(np.asarray(data), indices, batch_dims)


# ---------------------------------------------------------------------------------------------
# Scatter, ScatterElements, ScatterND
# ---------------------------------------------------------------------------------------------

_REDUCERS: dict[str, np.ufunc] = {
    "add": np.add,
    "mul": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
}


def _scatter_into(x: np.ndarray, where: tuple[np.ndarray, ...], updates: np.ndarray, reduction: str) -> np.ndarray:
    """A copy of ``x`` with ``updates`` written (or reduced) at the advanced index ``where``."""
    if reduction == "none":
        out = x.copy()
        out[where] = updates
        return out
    ufunc = _REDUCERS[reduction]
    narrow = x.dtype in NARROW_FLOAT_DTYPES
    # Narrow floats reduce in float32 and round once at the end (ml_dtypes has no ufunc.at).
    out = x.astype(np.float32) if narrow else x.copy()
    ufunc.at(out, where, updates.astype(np.float32) if narrow else updates)
    return out.astype(x.dtype) if narrow else out


def _check_reduction(reduction: str, allowed: tuple[str, ...], op: str) -> None:
    if reduction not in allowed:
        raise EvaluationError(f"{op}: reduction {reduction!r} is not one of {', '.join(allowed)}")


def _scatter_elements(
    data: np.ndarray, indices: np.ndarray, updates: np.ndarray, axis: int, reduction: str
) -> np.ndarray:
    x = np.asarray(data)
    ind = np.asarray(indices)
    upd = np.asarray(updates)
    if x.ndim == 0 or ind.ndim != x.ndim or upd.shape != ind.shape:
        raise EvaluationError(
            f"ScatterElements: data {x.shape}, indices {ind.shape} and updates {upd.shape} "
            "need one rank >= 1, and indices and updates one shape"
        )
    a = normalize_axis(axis, x.ndim)
    for i, (di, ii) in enumerate(zip(x.shape, ind.shape)):
        if i != a and ii > di:
            raise EvaluationError(f"ScatterElements: indices {ind.shape} exceed data {x.shape} on axis {i}")
    if upd.dtype != x.dtype:
        raise EvaluationError(f"ScatterElements: updates are {upd.dtype}, data is {x.dtype}")
    idx = _indices(ind, x.shape[a], "ScatterElements")
    return _scatter_into(x, tuple(_element_grid(idx, a)), upd, reduction)


@kernel("Scatter", 9, 11)
def scatter(data: np.ndarray, indices: np.ndarray, updates: np.ndarray, *, axis: int = 0) -> np.ndarray:
    """Scatter (deprecated at 11, still evaluated per Clause 14.5): ScatterElements without reduction."""
    return _scatter_elements(data, indices, updates, axis, "none")


@kernel("ScatterElements", 11, 13)
def scatter_elements_11(data: np.ndarray, indices: np.ndarray, updates: np.ndarray, *, axis: int = 0) -> np.ndarray:
    """ScatterElements-11, -13: ``output[i][indices[i][j]] = updates[i][j]`` (for axis 1)."""
    return _scatter_elements(data, indices, updates, axis, "none")


@kernel("ScatterElements", 16)
def scatter_elements_16(
    data: np.ndarray, indices: np.ndarray, updates: np.ndarray, *, axis: int = 0, reduction: str = "none"
) -> np.ndarray:
    """ScatterElements-16: ``reduction`` none, add or mul."""
    _check_reduction(reduction, ("none", "add", "mul"), "ScatterElements")
    return _scatter_elements(data, indices, updates, axis, reduction)


@kernel("ScatterElements", 18)
def scatter_elements_18(
    data: np.ndarray, indices: np.ndarray, updates: np.ndarray, *, axis: int = 0, reduction: str = "none"
) -> np.ndarray:
    """ScatterElements-18: adds the max and min reductions."""
    _check_reduction(reduction, ("none", "add", "mul", "max", "min"), "ScatterElements")
    return _scatter_elements(data, indices, updates, axis, reduction)


def _scatter_nd(data: np.ndarray, indices: np.ndarray, updates: np.ndarray, reduction: str) -> np.ndarray:
    x = np.asarray(data)
    ind = np.asarray(indices)
    upd = np.asarray(updates)
    if x.ndim < 1 or ind.ndim < 1:
        raise EvaluationError(f"ScatterND: data {x.shape} and indices {ind.shape} need rank >= 1")
    k = ind.shape[-1]
    if k > x.ndim:
        raise EvaluationError(f"ScatterND: index tuples of length {k} exceed the rank of data {x.shape}")
    want = ind.shape[:-1] + x.shape[k:]
    if upd.shape != want:
        raise EvaluationError(f"ScatterND: updates have shape {upd.shape}, expected {want}")
    if upd.dtype != x.dtype:
        raise EvaluationError(f"ScatterND: updates are {upd.dtype}, data is {x.dtype}")
    if ind.dtype.kind not in "iu":
        raise EvaluationError(f"ScatterND: indices must be integers, got {ind.dtype}")
    flat = ind.reshape(math.prod(ind.shape[:-1]), k)
    cols = tuple(_indices(flat[:, j], x.shape[j], "ScatterND") for j in range(k))
    u = upd.reshape((flat.shape[0],) + x.shape[k:])
    if k == 0:
        # Every update replaces (or reduces into) the whole of data.
        cols = (np.zeros(flat.shape[0], dtype=np.int64),)
        xv = x.reshape((1,) + x.shape)
        return _scatter_into(xv, cols, u, reduction).reshape(x.shape)
    return _scatter_into(x, cols, u, reduction)


@kernel("ScatterND", 11, 13)
def scatter_nd_11(data: np.ndarray, indices: np.ndarray, updates: np.ndarray) -> np.ndarray:
    """ScatterND-11, -13: ``output[indices[idx]] = updates[idx]``."""
    return _scatter_nd(data, indices, updates, "none")


@kernel("ScatterND", 16)
def scatter_nd_16(data: np.ndarray, indices: np.ndarray, updates: np.ndarray, *, reduction: str = "none") -> np.ndarray:
    """ScatterND-16: ``reduction`` none, add or mul."""
    _check_reduction(reduction, ("none", "add", "mul"), "ScatterND")
    return _scatter_nd(data, indices, updates, reduction)


@kernel("ScatterND", 18)
def scatter_nd_18(data: np.ndarray, indices: np.ndarray, updates: np.ndarray, *, reduction: str = "none") -> np.ndarray:
    """ScatterND-18: adds the max and min reductions."""
    _check_reduction(reduction, ("none", "add", "mul", "max", "min"), "ScatterND")
    return _scatter_nd(data, indices, updates, reduction)


@kernel("TensorScatter", 24)
def tensor_scatter(
    past_cache: np.ndarray,
    update: np.ndarray,
    write_indices: np.ndarray | None = None,
    *,
    mode: str = "linear",
    axis: int = -2,
) -> np.ndarray:
    """TensorScatter: write ``update`` into the cache along ``axis`` from each batch's write index."""
    cache = np.asarray(past_cache)
    upd = np.asarray(update)
    if cache.ndim < 2 or upd.ndim != cache.ndim:
        raise EvaluationError(f"TensorScatter: past_cache {cache.shape} and update {upd.shape} need one rank >= 2")
    a = normalize_axis(axis, cache.ndim)
    if a == 0:
        raise EvaluationError("TensorScatter: axis cannot be 0 (the batch dimension)")
    if mode not in ("linear", "circular"):
        raise EvaluationError(f"TensorScatter: mode {mode!r} is not linear or circular")
    if upd.shape[:a] != cache.shape[:a] or upd.shape[a + 1 :] != cache.shape[a + 1 :]:
        raise EvaluationError(f"TensorScatter: update {upd.shape} differs from past_cache {cache.shape} off axis {a}")
    if upd.dtype != cache.dtype:
        raise EvaluationError(f"TensorScatter: update is {upd.dtype}, past_cache is {cache.dtype}")
    batch, max_len, seq_len = cache.shape[0], cache.shape[a], upd.shape[a]
    if seq_len > max_len:
        raise EvaluationError(f"TensorScatter: sequence length {seq_len} exceeds the cache's {max_len}")
    if write_indices is None:
        wi = np.zeros(batch, dtype=np.int64)
    else:
        wi = np.asarray(write_indices).astype(np.int64).reshape(-1)
        if wi.shape[0] != batch:
            raise EvaluationError(f"TensorScatter: {wi.shape[0]} write indices for batch size {batch}")
    if wi.size and int(wi.min()) < 0:
        raise EvaluationError("TensorScatter: write indices must be non-negative")
    if mode == "linear" and wi.size and int(wi.max()) + seq_len > max_len:
        raise EvaluationError(f"TensorScatter: write index + {seq_len} exceeds max_sequence_length {max_len}")
    out = cache.copy()
    if upd.size == 0:
        return out
    grid = list(np.ogrid[tuple(slice(0, d) for d in upd.shape)])
    pos = wi.reshape((batch,) + (1,) * (upd.ndim - 1)) + grid[a]
    grid[a] = pos % max_len if mode == "circular" else pos
    out[tuple(grid)] = upd
    return out


# ---------------------------------------------------------------------------------------------
# NonZero, OneHot, Compress, ReverseSequence, Unique
# ---------------------------------------------------------------------------------------------


@kernel("NonZero", 9, 13)
def non_zero(X: np.ndarray) -> np.ndarray:
    """NonZero: the indices of the non-zero elements, one row per dim, in row-major order."""
    x = np.asarray(X)
    if x.dtype == np.dtype(object):
        x = np.vectorize(bool, otypes=[np.bool_])(x) if x.size else np.zeros(x.shape, dtype=np.bool_)
    elif x.dtype in NARROW_FLOAT_DTYPES:
        x = x.astype(np.float32)
    if x.ndim == 0:
        # A scalar is treated as a 1-element vector: one row, one column if it is non-zero.
        return np.zeros((1, 1 if bool(x) else 0), dtype=np.int64)
    return np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)


def _one_hot(indices: np.ndarray, depth: np.ndarray, values: np.ndarray, axis: int, negative: bool) -> np.ndarray:
    ind = np.asarray(indices)
    vals = np.asarray(values)
    if vals.size != 2:
        raise EvaluationError(f"OneHot: values must hold [off_value, on_value], got shape {vals.shape}")
    d = scalar_of(depth, name="depth")
    # Non-integer depth and indices are converted to int64 by truncation (the definition's cast).
    dn = int(d)
    if dn < 0:
        raise EvaluationError(f"OneHot: depth {d} must be non-negative")
    idx = np.trunc(ind).astype(np.int64) if ind.dtype.kind == "f" else ind.astype(np.int64)
    a = normalize_axis(axis, ind.ndim, allow_end=True)
    check_elements(list(ind.shape) + [dn], "OneHot")
    if negative:
        idx = np.where(idx < 0, idx + dn, idx)
    classes = np.arange(dn, dtype=np.int64).reshape((dn,) + (1,) * (ind.ndim - a))
    hot = np.expand_dims(idx, a) == classes
    flat = vals.reshape(-1)
    return np.where(hot, flat[1], flat[0]).astype(vals.dtype)


@kernel("OneHot", 9)
def one_hot_9(indices: np.ndarray, depth: np.ndarray, values: np.ndarray, *, axis: int = -1) -> np.ndarray:
    """OneHot-9: indices outside ``[0, depth)`` give all ``off_value``."""
    return _one_hot(indices, depth, values, axis, negative=False)


@kernel("OneHot", 11, 28)
def one_hot_11(indices: np.ndarray, depth: np.ndarray, values: np.ndarray, *, axis: int = -1) -> np.ndarray:
    """OneHot-11 and later: indices in ``[-depth, -1]`` count from the back."""
    return _one_hot(indices, depth, values, axis, negative=True)


@kernel("Compress", 9, 11, 28)
def compress(input: np.ndarray, condition: np.ndarray, *, axis: int | None = None) -> np.ndarray:
    """Compress: the slices along ``axis`` (of the flattened input if absent) where condition holds."""
    x = np.asarray(input)
    cond = np.asarray(condition)
    if cond.ndim != 1:
        raise EvaluationError(f"Compress: condition must be 1-D, got shape {cond.shape}")
    cond = cond.astype(np.bool_, copy=False)
    if axis is None:
        x = x.reshape(-1)
        a = 0
    else:
        a = normalize_axis(axis, x.ndim)
    n = x.shape[a]
    if cond.shape[0] > n:
        if cond[n:].any():
            raise EvaluationError(f"Compress: condition selects beyond the extent {n} of axis {a}")
        cond = cond[:n]
    return np.take(x, np.flatnonzero(cond), axis=a)


@kernel("ReverseSequence", 10, 28)
def reverse_sequence(
    input: np.ndarray, sequence_lens: np.ndarray, *, batch_axis: int = 1, time_axis: int = 0
) -> np.ndarray:
    """ReverseSequence: reverse the first ``sequence_lens[b]`` steps of each batch entry ``b``."""
    x = np.asarray(input)
    if x.ndim < 2:
        raise EvaluationError(f"ReverseSequence: input must have rank >= 2, got shape {x.shape}")
    if {batch_axis, time_axis} != {0, 1}:
        raise EvaluationError(f"ReverseSequence: batch_axis={batch_axis}, time_axis={time_axis} must be 0 and 1")
    if np.ndim(sequence_lens) != 1:
        raise EvaluationError(
            f"ReverseSequence: sequence_lens must be 1-D [batch_size], got shape {np.shape(sequence_lens)}"
        )
    lens = np.asarray(sequence_lens).astype(np.int64)
    nb, nt = x.shape[batch_axis], x.shape[time_axis]
    if lens.shape[0] != nb:
        raise EvaluationError(f"ReverseSequence: {lens.shape[0]} sequence lengths for batch size {nb}")
    if lens.size and (int(lens.min()) < 0 or int(lens.max()) > nt):
        raise EvaluationError(f"ReverseSequence: sequence lengths must lie in [0, {nt}]")
    t = np.arange(nt).reshape(nt, 1)
    src = np.where(t < lens, lens - 1 - t, t)  # (time, batch)
    if batch_axis == 0:
        src = src.T
    src = src.reshape(src.shape + (1,) * (x.ndim - 2))
    return np.take_along_axis(x, np.broadcast_to(src, x.shape), axis=time_axis)


def _unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted unique rows: (first index of each, inverse, counts); rows compared lexicographically."""
    n = rows.shape[0]
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    if rows.dtype == np.dtype(object):
        keys = [tuple(r) for r in rows]
        order = np.array(sorted(range(n), key=lambda i: keys[i]), dtype=np.int64)
        same = np.array([keys[order[i]] == keys[order[i - 1]] for i in range(1, n)], dtype=np.bool_)
    else:
        r = rows.astype(np.float32) if rows.dtype in NARROW_FLOAT_DTYPES else rows
        # Stable lexicographic sort: the first occurrence leads each run of equal rows.
        order = np.lexsort(r.T[::-1]) if r.shape[1] else np.arange(n)
        srt = r[order]
        eq = srt[1:] == srt[:-1]
        if srt.dtype.kind in "fc":
            # NaN equals NaN here, as in numpy.unique (which the definition cites); sorting puts
            # NaNs last, so they form one run.
            eq |= np.isnan(srt[1:]) & np.isnan(srt[:-1])
        same = np.all(eq, axis=1)
    starts = np.concatenate(([True], ~same))
    group = np.cumsum(starts) - 1
    first = order[starts]
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = group
    counts = np.diff(np.concatenate((np.flatnonzero(starts), [n])))
    return first.astype(np.int64), inverse, counts.astype(np.int64)


@kernel("Unique", 11, 28)
def unique(
    X: np.ndarray, *, axis: int | None = None, sorted: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Unique: (Y, indices of first occurrence, inverse indices, counts), sorted or in input order."""
    x = np.asarray(X)
    if axis is None:
        rows = x.reshape(-1, 1)
        a = 0
        moved = x.reshape(-1)
    else:
        a = normalize_axis(axis, x.ndim)
        moved = np.moveaxis(x, a, 0)
        rows = moved.reshape(moved.shape[0], math.prod(moved.shape[1:]))
    first, inverse, counts = _unique_rows(rows)
    if not sorted:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.shape[0])
        first, counts, inverse = first[order], counts[order], rank[inverse]
    y = moved[first]
    if axis is not None:
        y = np.moveaxis(y, 0, a)
    return y, first, inverse.astype(np.int64), counts
