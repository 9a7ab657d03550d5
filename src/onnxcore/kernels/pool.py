"""Window pooling kernels (Clause 8; ONNX 1-2 definitions): AveragePool, MaxPool, LpPool and the
global pools (MaxUnpool and the region pools are in :mod:`onnxcore.kernels.roi_pool`).

Window pools loop over the kernel offsets only (a handful), each step a vectorized operation over
every output element at once on a strided slice of the padded input; averages divide by a count
that is separable per spatial axis. Float16 and the narrow floats compute in float32 and round
once at the end; integer MaxPool stays exact in its own type.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels import accel
from onnxcore.kernels._util import check_elements, float_sum, int_list
from onnxcore.kernels.conv import conv_pads, pad_spatial, spatial_attr, work_dtype
from onnxcore.kernels.registry import KernelContext, kernel
from onnxcore.kernels.threads import MIN_PARALLEL_ELEMENTS, active_threads, parallel_for

__all__: list[str] = []

# Above this many kernel offsets the separable reduction (sum of the extents, not their product)
# beats one pass per offset even for short rows.
_MANY_OFFSETS = 48


def _setup(
    x: np.ndarray,
    kernel_shape: Any,
    strides: Any,
    dilations: Any,
    pads: Any,
    auto_pad: str,
    ceil_mode: int,
    drop_tail: bool = False,
) -> tuple[list[int], list[int], list[int], list[int], list[int], list[int]]:
    """``(kernel, strides, dilations, pads begin, pads end, output extents)`` of a pool of ``x``'s shape, validated;
    the lists are shared by every call of one shape and attributes (read them, never change them)."""
    if x.ndim < 3:
        raise ShapeError(f"X must have rank >= 3 (N, C, spatial...), got shape {x.shape}")
    # Cached: the attribute checks and the padding arithmetic are ~10 us of Python, more than a small plane's pool.
    key = (_attr_key(kernel_shape), _attr_key(strides), _attr_key(dilations), _attr_key(pads))
    return _setup_of(x.shape, *key, auto_pad, int(ceil_mode), bool(drop_tail))


def _attr_key(value: Any) -> tuple[int, ...] | None:
    """An INTS attribute as a hashable tuple (None stays None: the attribute's default)."""
    if value is None:
        return None
    # A list of Python ints (a node's attribute) as it is: np.asarray's conversion costs more than the cached call.
    return tuple(value) if isinstance(value, list) else tuple(int_list(value))


@functools.lru_cache(maxsize=1024)
def _setup_of(
    shape: tuple[int, ...],
    kernel_shape: tuple[int, ...] | None,
    strides: tuple[int, ...] | None,
    dilations: tuple[int, ...] | None,
    pads: tuple[int, ...] | None,
    auto_pad: str,
    ceil_mode: int,
    drop_tail: bool,
) -> tuple[list[int], list[int], list[int], list[int], list[int], list[int]]:
    """:func:`_setup` for a shape and hashable attributes (an error is raised again on every call: not cached)."""
    nd = len(shape) - 2
    if kernel_shape is None:
        raise EvaluationError("kernel_shape is required")
    kernel = spatial_attr(kernel_shape, nd, 1, "kernel_shape", least=1)
    st = spatial_attr(strides, nd, 1, "strides", least=1)
    dil = spatial_attr(dilations, nd, 1, "dilations", least=1)
    pb, pe, out = conv_pads(shape[2:], kernel, st, dil, pads, auto_pad, ceil_mode=ceil_mode, drop_tail=drop_tail)
    check_elements([*shape[:2], *(s + b + e for s, b, e in zip(shape[2:], pb, pe))], "pool (padded input)")
    check_elements([*shape[:2], *out], "pool")
    return kernel, st, dil, pb, pe, out


def _padded(
    x: np.ndarray,
    kernel: Sequence[int],
    st: Sequence[int],
    dil: Sequence[int],
    pb: Sequence[int],
    pe: Sequence[int],
    out: Sequence[int],
    value: Any,
) -> np.ndarray:
    """``x`` padded so every window of ``out`` fits (ceil_mode windows may overrun ``pe``)."""
    need = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out, st, kernel, dil)]
    pe2 = [max(e, n - i - b) for e, n, i, b in zip(pe, need, x.shape[2:], pb)]
    return pad_spatial(x, pb, pe2, value)


def _offset_slices(offs: Sequence[int], st: Sequence[int], dil: Sequence[int], out: Sequence[int]) -> tuple[slice, ...]:
    return (slice(None), slice(None)) + tuple(
        slice(k * d, k * d + (o - 1) * s + 1, s) for k, d, s, o in zip(offs, dil, st, out)
    )


def _separable_reduce(
    x: np.ndarray,
    kernel: Sequence[int],
    st: Sequence[int],
    dil: Sequence[int],
    pb: Sequence[int],
    out: Sequence[int],
    value: Any,
    op: str,
) -> np.ndarray:
    """Sum or max over every window, one spatial axis at a time (both are separable), unpadded.

    The outer axes go first: their passes read whole contiguous rows and shrink the array by the
    stride before the innermost axis, whose taps are strided, is reduced.
    """
    fn = np.add if op == "sum" else np.maximum
    arr = x
    for a in range(len(kernel)):
        arr = _axis_reduce(arr, 2 + a, kernel[a], st[a], dil[a], pb[a], out[a], fn, value)
    if arr is x:
        return x.copy()
    # The last pass may leave a strided view of its rows (:func:`_axis_reduce_rows`); results are contiguous.
    return arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)


def _axis_reduce(a: np.ndarray, ax: int, k: int, s: int, d: int, b: int, o: int, fn: Any, value: Any) -> np.ndarray:
    """Windows along axis ``ax``: ``res[j] = fn over t of a[j*s + t*d - b]``, padding taps skipped.

    No padded copy is made: each tap covers the outputs whose input index is inside ``a``; the two taps
    covering the most outputs initialise the result (one pass, not a copy and a pass) and the positions no
    tap covers hold ``value``.
    """
    n = a.shape[ax]
    if k == 1 and s == 1 and b == 0 and o == n:
        return a
    if s == 2 and ax < a.ndim - 1 and b == 0 and (k - 1) * d + (o - 1) * s < n and a.flags.c_contiguous:
        return _axis_reduce_rows(a, ax, k, s, d, o, fn)
    taps = []
    for t in range(k):
        off = t * d - b
        lo = 0 if off >= 0 else -(off // s)
        hi = min(o, (n - 1 - off) // s + 1) if off <= n - 1 else 0
        taps.append((lo, max(lo, hi), off))
    order = sorted(range(k), key=lambda t: taps[t][0] - taps[t][1])  # widest coverage first
    first = order[0]
    pre = (slice(None),) * ax

    def tap(t: int, lo: int, hi: int) -> np.ndarray:
        off = taps[t][2]
        return a[pre + (slice(lo * s + off, (hi - 1) * s + off + 1, s),)]

    res = np.empty(a.shape[:ax] + (o,) + a.shape[ax + 1 :], dtype=a.dtype)
    lo, hi, _ = taps[first]
    done = {first}
    second = order[1] if k > 1 else first
    lo2, hi2, _ = taps[second]
    if second != first and lo <= lo2 < hi2 <= hi:
        # The two widest taps combine straight into the result (no pass copying the first one).
        fn(tap(first, lo2, hi2), tap(second, lo2, hi2), out=res[pre + (slice(lo2, hi2),)])
        if lo < lo2:
            res[pre + (slice(lo, lo2),)] = tap(first, lo, lo2)
        if hi2 < hi:
            res[pre + (slice(hi2, hi),)] = tap(first, hi2, hi)
        done.add(second)
    else:
        res[pre + (slice(lo, hi),)] = tap(first, lo, hi)
    if lo > 0:
        res[pre + (slice(0, lo),)] = value
    if hi < o:
        res[pre + (slice(hi, o),)] = value
    for t, (lo, hi, _) in enumerate(taps):
        if t not in done and hi > lo:
            r = res[pre + (slice(lo, hi),)]
            fn(r, tap(t, lo, hi), out=r)
    return res


def _axis_reduce_rows(a: np.ndarray, ax: int, k: int, s: int, d: int, o: int, fn: Any) -> np.ndarray:
    """:func:`_axis_reduce` of an outer axis whose windows all lie inside ``a`` (no padding), strided: the windows at
    every start (stride 1) as one contiguous operation per tap over whole blocks of rows, then every ``s``-th
    kept, a strided view (the next pass reads it through its own strided taps). A strided window's taps are short
    rows, one numpy inner loop each; these are long, vectorised loops, which at stride 2 are the faster though they
    compute twice the windows. Each result is the same operations on the same taps in the same order (the taps
    first to last: with no padding every tap covers every output), so the same values."""
    outer = math.prod(a.shape[:ax])
    inner = math.prod(a.shape[ax + 1 :])
    rows = (o - 1) * s + 1
    flat = a.reshape(outer, -1)

    def tap(t: int) -> np.ndarray:
        return flat[:, t * d * inner : (t * d + rows) * inner]

    res = fn(tap(0), tap(1)) if k > 1 else tap(0).copy()
    for t in range(2, k):
        fn(res, tap(t), out=res)
    return res.reshape(a.shape[:ax] + (rows,) + a.shape[ax + 1 :])[(slice(None),) * ax + (slice(None, None, s),)]


# Rows shorter than this make numpy's per-row overhead dominate; the flat layout avoids rows.
_SHORT_ROW = 32


def _pool_reduce(
    x: np.ndarray,
    kernel: Sequence[int],
    st: Sequence[int],
    dil: Sequence[int],
    pb: Sequence[int],
    pe: Sequence[int],
    out: Sequence[int],
    value: Any,
    op: str,
) -> np.ndarray:
    """Sum or max over every window of ``x`` padded with ``value``.

    Strided windows, and rows long enough for numpy's per-row overhead not to matter, are reduced
    one axis at a time (:func:`_separable_reduce`). Stride-1 windows over short rows use the
    flattened padded image: each kernel offset is then one contiguous slice covering all outputs
    (plus surplus columns cropped at the end), so numpy runs one long inner loop per offset
    instead of one per output row.
    """
    nd = len(kernel)
    kk = math.prod(kernel)
    if all(o == 1 for o in out) and all(
        d == 1 and b >= 0 and k - 1 - b >= n - 1 for k, d, b, n in zip(kernel, dil, pb, x.shape[2:])
    ):
        # One window holding the whole image (ResNet's and Inception's closing pools): a reduction over the
        # spatial axes, where the separable passes would run one short row at a time.
        spatial = tuple(range(2, x.ndim))
        if op == "sum":
            return float_sum(x, spatial, True)
        return np.maximum.reduce(x, spatial, keepdims=True)
    if kk > _MANY_OFFSETS or any(v != 1 for v in st) or out[-1] >= _SHORT_ROW:
        return _separable_reduce(x, kernel, st, dil, pb, out, value, op)
    need = [(o - 1) + (k - 1) * d + 1 for o, k, d in zip(out, kernel, dil)]
    pe2 = [max(e, n - i - b) for e, n, i, b in zip(pe, need, x.shape[2:], pb)]
    padded = [i + b + e for i, b, e in zip(x.shape[2:], pb, pe2)]
    pitch = [math.prod(padded[i + 1 :]) for i in range(nd)]
    length = out[0] * math.prod(padded[1:])
    # Separable on the flat layout too: axis a's taps are slices offset by t * dil * pitch; each pass
    # keeps the positions the later (outer) passes still read.
    reach = [(k - 1) * d * p for k, d, p in zip(kernel, dil, pitch)]
    total = math.prod(padded)
    extra = max(0, length + sum(reach) - total)
    n_img, c = x.shape[:2]
    buf = np.full((n_img, c, total + extra), value, dtype=x.dtype)
    buf[:, :, :total].reshape(n_img, c, *padded)[
        (slice(None), slice(None)) + tuple(slice(b, b + i) for b, i in zip(pb, x.shape[2:]))
    ] = x
    fn = np.add if op == "sum" else np.maximum
    acc = buf
    for a in reversed(range(nd)):
        if kernel[a] == 1:
            continue
        span = length + sum(reach[:a])
        step = dil[a] * pitch[a]
        src = acc
        acc = fn(src[:, :, :span], src[:, :, step : step + span])
        for t in range(2, kernel[a]):
            fn(acc, src[:, :, t * step : t * step + span], out=acc)
    acc = acc[:, :, :length] if acc is not buf else buf[:, :, :length].copy()
    y = acc.reshape(n_img, c, out[0], *padded[1:])
    if list(padded[1:]) == list(out[1:]):
        return y
    return np.ascontiguousarray(y[(slice(None), slice(None), slice(None)) + tuple(slice(0, o) for o in out[1:])])


def _axis_counts(size: int, k: int, s: int, d: int, b: int, e: int, o: int, include_pad: bool) -> np.ndarray:
    """How many window taps of each output position along one axis fall in the counted region."""
    taps = np.arange(o)[:, None] * s - b + np.arange(k)[None, :] * d
    lo, hi = (-b, size + e) if include_pad else (0, size)
    return ((taps >= lo) & (taps < hi)).sum(axis=1)


def _divisor(x_sp: Sequence[int], kernel: Sequence[int], st: Sequence[int], dil: Sequence[int],
             pb: Sequence[int], pe: Sequence[int], out: Sequence[int], include_pad: bool) -> np.ndarray:  # fmt: skip
    """The count of each output's window taps (``(1, 1, *out)``), read-only: the same for every run of a node, so
    made once per geometry (tens of microseconds of small numpy calls otherwise)."""
    return _divisor_of(*(tuple(v) for v in (x_sp, kernel, st, dil, pb, pe, out)), include_pad)


@functools.lru_cache(maxsize=1024)
def _divisor_of(
    x_sp: tuple[int, ...],
    kernel: tuple[int, ...],
    st: tuple[int, ...],
    dil: tuple[int, ...],
    pb: tuple[int, ...],
    pe: tuple[int, ...],
    out: tuple[int, ...],
    include_pad: bool,
) -> np.ndarray:
    nd = len(kernel)
    cnt = np.ones((1, 1) + (1,) * nd, dtype=np.int64)
    for i in range(nd):
        c = _axis_counts(x_sp[i], kernel[i], st[i], dil[i], pb[i], pe[i], out[i], include_pad)
        shape = [1] * (nd + 2)
        shape[2 + i] = out[i]
        cnt = cnt * c.reshape(shape)
    cnt.flags.writeable = False
    return cnt


# ---------------------------------------------------------------------------------------------
# AveragePool
# ---------------------------------------------------------------------------------------------


def _average_pool(
    X: np.ndarray,
    *,
    auto_pad: str,
    ceil_mode: int,
    count_include_pad: int,
    dilations: list[int] | None,
    kernel_shape: list[int] | None,
    pads: list[int] | None,
    strides: list[int] | None,
    drop_tail: bool = False,
) -> np.ndarray:
    """AveragePool of every version (an attribute a version lacks has the default it implies).

    With ``count_include_pad`` the divisor counts taps inside the explicitly padded region; taps a
    ceil_mode window puts beyond that region never count (as in onnxruntime and the test vectors).
    For auto_pad SAME_* the output is ``ceil(in / stride)`` in every version (AveragePool-11's
    "floor" text was corrected in AveragePool-19 to an equivalent of the ceil form). Before
    version 22 a ceil_mode window may lie wholly in the end padding (its average is then NaN,
    or 0 with count_include_pad).
    """
    kernel, st, dil, pb, pe, out = _setup(X, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode, drop_tail)
    dt = X.dtype
    wd = work_dtype(dt)
    if any(o <= 0 for o in out) or X.size == 0:
        return np.zeros((*X.shape[:2], *out), dtype=dt)
    div = _divisor(X.shape[2:], kernel, st, dil, pb, pe, out, bool(count_include_pad))
    if (
        len(kernel) == 2
        and st == [1, 1]
        and dil == [1, 1]
        and list(out) == list(X.shape[2:])
        and wd in (np.float32, np.float64)
        and accel.enabled()
    ):
        # The "same" box mean (EfficientFormer's and PoolFormer's pooling mixer): compiled separable sums.
        return _box_mean_accel(X.astype(wd, copy=False), kernel, pb, div).astype(dt, copy=False)
    acc = _pool_reduce(X.astype(wd, copy=False), kernel, st, dil, pb, pe, out, 0, "sum")
    with np.errstate(divide="ignore", invalid="ignore"):
        acc /= div.astype(wd)
    return acc.astype(dt, copy=False)


_BOX_BLOCK = 4096  # elements summed together by the compiled box mean (small planes several at once)


@functools.lru_cache(maxsize=256)
def _box_tables(
    h: int, w: int, kh: int, kw: int, pt: int, pl: int, div_key: bytes, dtype: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For :func:`_box_mean_accel`: which taps of each place of a block of whole planes fall inside its row
    (``(kw, L)``) and its plane (``(kh, L)``), and the counts repeated over the block (``(L,)``), read-only."""
    plane = h * w
    per = max(1, _BOX_BLOCK // plane)
    t = np.arange(per * plane)
    col, row = t % w, (t // w) % h
    hmask = np.stack([(col + j - pl >= 0) & (col + j - pl < w) for j in range(kw)])
    vmask = np.stack([(row + i - pt >= 0) & (row + i - pt < h) for i in range(kh)])
    divt = np.tile(np.frombuffer(div_key, np.int64).astype(dtype), per)
    for a in (hmask, vmask, divt):
        a.flags.writeable = False
    return hmask, vmask, divt


def _box_mean_accel(x: np.ndarray, kernel: Sequence[int], pb: Sequence[int], div: np.ndarray) -> np.ndarray:
    """2-D stride-1 AveragePool whose output has the input's extents, by the compiled separable box sums
    (:mod:`onnxcore.kernels.accel`) on the flattened planes: row sums then column sums, divided by ``div`` (the
    counts); planes split over the kernel threads. The sums are the numpy path's in another order (the same terms;
    within the type's rounding of a sum of ``kh * kw``)."""
    n_img, c, h, w = x.shape
    kh, kw = kernel
    planes = n_img * c
    hmask, vmask, divt = _box_tables(h, w, kh, kw, pb[0], pb[1], div.astype(np.int64).tobytes(), x.dtype.str)
    xf = np.ascontiguousarray(x).reshape(-1)
    y = np.empty(xf.size, x.dtype)
    fn = accel.jit_cnn().box_mean2d

    def run(a: int, b: int) -> None:
        hs = np.empty(divt.size, x.dtype)
        fn(xf, kh, kw, pb[0], pb[1], w, h * w, hmask, vmask, divt, hs, y, a, b)

    parallel_for(run, planes, threads=active_threads() if y.size >= MIN_PARALLEL_ELEMENTS else 1, size=y.size)
    return y.reshape(x.shape)


@kernel("AveragePool", 1)
def average_pool_1(
    X: np.ndarray, *, auto_pad: str = "NOTSET", kernel_shape: list[int] | None = None,
    pads: list[int] | None = None, strides: list[int] | None = None,
) -> np.ndarray:  # fmt: skip
    """AveragePool-1: padding never counts."""
    return _average_pool(X, auto_pad=auto_pad, ceil_mode=0, count_include_pad=0, dilations=None,
                         kernel_shape=kernel_shape, pads=pads, strides=strides)  # fmt: skip


@kernel("AveragePool", 7)
def average_pool_7(
    X: np.ndarray, *, auto_pad: str = "NOTSET", count_include_pad: int = 0, kernel_shape: list[int] | None = None,
    pads: list[int] | None = None, strides: list[int] | None = None,
) -> np.ndarray:  # fmt: skip
    """AveragePool-7: adds count_include_pad."""
    return _average_pool(X, auto_pad=auto_pad, ceil_mode=0, count_include_pad=count_include_pad, dilations=None,
                         kernel_shape=kernel_shape, pads=pads, strides=strides)  # fmt: skip


@kernel("AveragePool", 10, 11)
def average_pool_10(
    X: np.ndarray, *, auto_pad: str = "NOTSET", ceil_mode: int = 0, count_include_pad: int = 0,
    kernel_shape: list[int] | None = None, pads: list[int] | None = None, strides: list[int] | None = None,
) -> np.ndarray:  # fmt: skip
    """AveragePool-10/11: adds ceil_mode."""
    return _average_pool(X, auto_pad=auto_pad, ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                         dilations=None, kernel_shape=kernel_shape, pads=pads, strides=strides)  # fmt: skip


@kernel("AveragePool", 19)
def average_pool_19(
    X: np.ndarray, *, auto_pad: str = "NOTSET", ceil_mode: int = 0, count_include_pad: int = 0,
    dilations: list[int] | None = None, kernel_shape: list[int] | None = None, pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> np.ndarray:  # fmt: skip
    """AveragePool-19: adds dilations."""
    return _average_pool(X, auto_pad=auto_pad, ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                         dilations=dilations, kernel_shape=kernel_shape, pads=pads, strides=strides)  # fmt: skip


@kernel("AveragePool", 22)
def average_pool(
    X: np.ndarray, *, auto_pad: str = "NOTSET", ceil_mode: int = 0, count_include_pad: int = 0,
    dilations: list[int] | None = None, kernel_shape: list[int] | None = None, pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> np.ndarray:  # fmt: skip
    """AveragePool-22: a ceil_mode window that would start in the end padding is dropped."""
    return _average_pool(X, auto_pad=auto_pad, ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                         dilations=dilations, kernel_shape=kernel_shape, pads=pads, strides=strides,
                         drop_tail=True)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# MaxPool
# ---------------------------------------------------------------------------------------------


def _lowest(dt: np.dtype[Any]) -> Any:
    if dt.kind in "iu":
        return np.iinfo(dt).min
    return -np.inf


def _maxpool(
    x: np.ndarray,
    want_indices: bool,
    *,
    auto_pad: str,
    ceil_mode: int,
    dilations: Any,
    kernel_shape: Any,
    pads: Any,
    storage_order: int,
    strides: Any,
    drop_tail: bool = False,
) -> tuple[np.ndarray, np.ndarray | None]:
    kernel, st, dil, pb, pe, out = _setup(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode, drop_tail)
    dt = x.dtype
    wd = work_dtype(dt) if dt.kind not in "iu" else dt
    nd = len(kernel)
    if any(o <= 0 for o in out) or x.size == 0:
        empty = np.zeros((*x.shape[:2], *out), dtype=dt)
        return empty, (np.zeros(empty.shape, dtype=np.int64) if want_indices else None)
    low = _lowest(np.dtype(wd))
    if not want_indices and nd <= 2 and wd in (np.float32, np.float64) and accel.enabled():
        return _max_pool_accel(x.astype(wd, copy=False), kernel, st, dil, pb, out, low).astype(dt, copy=False), None
    if not want_indices:
        return _pool_reduce(x.astype(wd, copy=False), kernel, st, dil, pb, pe, out, low, "max").astype(
            dt, copy=False
        ), None
    xp = _padded(x.astype(wd, copy=False), kernel, st, dil, pb, pe, out, low)
    sp = list(x.shape[2:])
    if storage_order:
        mult = [math.prod(sp[:i]) for i in range(nd)]
    else:
        mult = [math.prod(sp[i + 1 :]) for i in range(nd)]
    # Spatial linear index of each output position's window origin, per axis, broadcastable.
    base_axes = []
    for i in range(nd):
        shape = [1] * nd
        shape[i] = out[i]
        base_axes.append((np.arange(out[i]) * st[i] - pb[i]).reshape(shape))
    nc = (np.arange(x.shape[0] * x.shape[1], dtype=np.int64) * math.prod(sp)).reshape(
        (x.shape[0], x.shape[1]) + (1,) * nd
    )
    oshape = (x.shape[0], x.shape[1], *out)
    acc = np.full(oshape, low, dtype=wd)
    idx = np.full(oshape, -1, dtype=np.int64)
    for offs in itertools.product(*(range(k) for k in kernel)):
        vals = xp[_offset_slices(offs, st, dil, out)]
        pos = [base_axes[i] + offs[i] * dil[i] for i in range(nd)]
        lin = sum((p * m for p, m in zip(pos, mult)), np.zeros((1,) * nd, np.int64))
        # A padding tap never wins, even against a real element equal to the padding value.
        inside = np.ones((1,) * nd, dtype=bool)
        for i in range(nd):
            inside = inside & (pos[i] >= 0) & (pos[i] < sp[i])
        better = ((vals > acc) | (idx < 0)) & inside
        np.copyto(acc, vals, where=better)
        np.copyto(idx, np.broadcast_to(lin, oshape), where=better)
    idx = np.where(idx < 0, 0, idx)  # windows wholly in padding (before version 22)
    return acc.astype(dt, copy=False), (idx + nc).astype(np.int64, copy=False)


def _max_pool_accel(
    x: np.ndarray,
    kernel: Sequence[int],
    st: Sequence[int],
    dil: Sequence[int],
    pb: Sequence[int],
    out: Sequence[int],
    low: Any,
) -> np.ndarray:
    """1-D or 2-D MaxPool without Indices by the compiled separable loops (:mod:`onnxcore.kernels.accel`), planes split
    over the kernel threads: the numpy path's maxima (``np.maximum``'s NaN rule), without its strided passes. A 1-D
    pool is the 2-D one over planes of one row (a kernel, stride and dilation of 1 down the columns, no padding)."""
    if x.ndim == 3:
        y = _max_pool_accel(x[:, :, None, :], (1, *kernel), (1, *st), (1, *dil), (0, *pb), (1, *out), low)
        return y[:, :, 0, :]
    n_img, c, h, w = x.shape
    planes = n_img * c
    xs = np.ascontiguousarray(x).reshape(planes, h, w)
    y = np.empty((planes, *out), x.dtype)
    fn = accel.jit_cnn().max_pool2d
    lo = x.dtype.type(low)

    def run(a: int, b: int) -> None:
        fn(xs, y, kernel[0], kernel[1], pb[0], pb[1], st[0], st[1], dil[0], dil[1], lo, a, b)

    parallel_for(run, planes, threads=active_threads() if x.size >= MIN_PARALLEL_ELEMENTS else 1, size=x.size)
    return y.reshape(n_img, c, *out)


@kernel("MaxPool", 1)
def max_pool_1(
    X: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    kernel_shape: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> np.ndarray:
    """MaxPool-1: max over each window (padding never wins)."""
    y, _ = _maxpool(X, False, auto_pad=auto_pad, ceil_mode=0, dilations=None, kernel_shape=kernel_shape,
                    pads=pads, storage_order=0, strides=strides)  # fmt: skip
    return y


@kernel("MaxPool", 8, context=True)
def max_pool_8(
    ctx: KernelContext, X: np.ndarray, *, auto_pad: str = "NOTSET", kernel_shape: list[int] | None = None,
    pads: list[int] | None = None, storage_order: int = 0, strides: list[int] | None = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """MaxPool-8: adds the Indices output and storage_order (no ceil_mode, no dilations)."""
    return _max_pool_ctx(ctx, X, auto_pad=auto_pad, kernel_shape=kernel_shape, pads=pads,
                         storage_order=storage_order, strides=strides)  # fmt: skip


def _max_pool_ctx(
    ctx: KernelContext,
    X: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    ceil_mode: int = 0,
    dilations: list[int] | None = None,
    kernel_shape: list[int] | None = None,
    pads: list[int] | None = None,
    storage_order: int = 0,
    strides: list[int] | None = None,
    drop_tail: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """MaxPool-8..22 with the optional Indices output (flat over N x C x D1.. x Dn, without padding;
    ``storage_order=1`` numbers the spatial positions column-major). Ties keep the first tap."""
    want = len(ctx.outputs_requested) > 1 and bool(ctx.outputs_requested[1])
    y, i = _maxpool(X, want, auto_pad=auto_pad, ceil_mode=ceil_mode, dilations=dilations,
                    kernel_shape=kernel_shape, pads=pads, storage_order=storage_order, strides=strides,
                    drop_tail=drop_tail)  # fmt: skip
    if i is None:
        return y
    return y, i


@kernel("MaxPool", 10, 11, 12, context=True)
def max_pool_10(
    ctx: KernelContext, X: np.ndarray, *, auto_pad: str = "NOTSET", ceil_mode: int = 0,
    dilations: list[int] | None = None, kernel_shape: list[int] | None = None, pads: list[int] | None = None,
    storage_order: int = 0, strides: list[int] | None = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """MaxPool-10/11/12 (int8/uint8 from 12): adds ceil_mode and dilations. A ceil_mode window
    wholly in the end padding yields the type's lowest value (-inf for floats)."""
    return _max_pool_ctx(ctx, X, auto_pad=auto_pad, ceil_mode=ceil_mode, dilations=dilations,
                         kernel_shape=kernel_shape, pads=pads, storage_order=storage_order,
                         strides=strides)  # fmt: skip


@kernel("MaxPool", 22, context=True)
def max_pool(
    ctx: KernelContext, X: np.ndarray, *, auto_pad: str = "NOTSET", ceil_mode: int = 0,
    dilations: list[int] | None = None, kernel_shape: list[int] | None = None, pads: list[int] | None = None,
    storage_order: int = 0, strides: list[int] | None = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """MaxPool-22: a ceil_mode window that would start in the end padding is dropped."""
    return _max_pool_ctx(ctx, X, auto_pad=auto_pad, ceil_mode=ceil_mode, dilations=dilations,
                         kernel_shape=kernel_shape, pads=pads, storage_order=storage_order, strides=strides,
                         drop_tail=True)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# LpPool and the global pools
# ---------------------------------------------------------------------------------------------


def _lp_root(s: np.ndarray, p: float) -> np.ndarray:
    if p == 0:
        # The definitions give no meaning to an L0 "norm": its 1/p-th root divides by zero.
        raise EvaluationError("p must not be 0: the norm's 1/p-th root is undefined")
    if p == 1:
        return s
    if p == 2:
        return np.sqrt(s, out=s)
    return np.power(s, 1.0 / p, out=s)


@kernel("LpPool", 1, 2, 11)
def lp_pool_1(
    X: np.ndarray, *, auto_pad: str = "NOTSET", kernel_shape: list[int] | None = None, p: float = 2,
    pads: list[int] | None = None, strides: list[int] | None = None,
) -> np.ndarray:  # fmt: skip
    """LpPool-1/2/11 (``p`` a float in v1, an int from v2; no ceil_mode, no dilations)."""
    return _lp_pool(X, auto_pad=auto_pad, kernel_shape=kernel_shape, p=p, pads=pads, strides=strides)


@kernel("LpPool", 18)
def lp_pool_18(
    X: np.ndarray, *, auto_pad: str = "NOTSET", ceil_mode: int = 0, dilations: list[int] | None = None,
    kernel_shape: list[int] | None = None, p: float = 2, pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> np.ndarray:  # fmt: skip
    """LpPool-18: adds ceil_mode and dilations."""
    return _lp_pool(X, auto_pad=auto_pad, ceil_mode=ceil_mode, dilations=dilations, kernel_shape=kernel_shape,
                    p=p, pads=pads, strides=strides)  # fmt: skip


@kernel("LpPool", 22)
def lp_pool(
    X: np.ndarray, *, auto_pad: str = "NOTSET", ceil_mode: int = 0, dilations: list[int] | None = None,
    kernel_shape: list[int] | None = None, p: float = 2, pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> np.ndarray:  # fmt: skip
    """LpPool-22: a ceil_mode window that would start in the end padding is dropped."""
    return _lp_pool(X, auto_pad=auto_pad, ceil_mode=ceil_mode, dilations=dilations, kernel_shape=kernel_shape,
                    p=p, pads=pads, strides=strides, drop_tail=True)  # fmt: skip


def _lp_pool(
    X: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    ceil_mode: int = 0,
    dilations: list[int] | None = None,
    kernel_shape: list[int] | None = None,
    p: float = 2,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
    drop_tail: bool = False,
) -> np.ndarray:
    """``(sum |x|^p)^(1/p)`` over each window, padding contributing zero."""
    kernel, st, dil, pb, pe, out = _setup(X, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode, drop_tail)
    dt = X.dtype
    wd = work_dtype(dt)
    if any(o <= 0 for o in out) or X.size == 0:
        return np.zeros((*X.shape[:2], *out), dtype=dt)
    a = np.abs(X.astype(wd, copy=False))
    pw = a * a if p == 2 else (a if p == 1 else np.power(a, wd.type(p)))
    acc = _pool_reduce(pw, kernel, st, dil, pb, pe, out, 0, "sum")
    return _lp_root(acc, float(p)).astype(dt, copy=False)


def _global_axes(x: np.ndarray) -> tuple[int, ...]:
    if x.ndim < 2:
        raise ShapeError(f"X must have rank >= 2 (N, C, spatial...), got shape {x.shape}")
    return tuple(range(2, x.ndim))


@kernel("GlobalAveragePool", 1, 22)
def global_average_pool(X: np.ndarray) -> np.ndarray:
    """GlobalAveragePool: mean over every spatial axis, kept as extents of 1."""
    if type(X) is np.ndarray and X.flags.c_contiguous and accel.enabled():
        # A float32/float64 input the compiled means take (the squeeze-and-excitation blocks' pools, one per block on
        # every run): the path below without its conversions and tests, the geometry found once per shape.
        got = _row_means_geometry(X.shape, X.dtype)
        if got is not None:
            return _compiled_means(X, got)
    axes = _global_axes(X)
    wd = work_dtype(X.dtype)
    # numpy's mean (a pairwise sum per row): equal rows give equal means. A BLAS product with ones is 3-4x faster
    # but sums rows in blocks of different shapes, so equal rows may differ in the last bit: after SqueezeNet's
    # GlobalAveragePool a Softmax over logits of 7e9 turns that bit into a different class (the light zoo's test).
    xw = X.astype(wd, copy=False)
    got = _row_means_geometry(X.shape, np.dtype(wd)) if xw.flags.c_contiguous and accel.enabled() else None
    if got is not None:
        return _compiled_means(xw, got).astype(X.dtype, copy=False)
    return np.asarray(xw.mean(axis=axes, keepdims=True)).astype(X.dtype, copy=False)


@functools.lru_cache(maxsize=256)
def _row_means_geometry(shape: tuple[int, ...], dtype: np.dtype[Any]) -> tuple[tuple[int, ...], int, Any] | None:
    """For the means over every spatial axis of a C-contiguous array of ``shape`` and ``dtype``: (the output's shape,
    the terms of each mean, a zero of the type) when the accelerator's row means take them (the squeeze-and-excitation
    blocks' short rows: float32 or float64, a pairwise sum of one or two leaves), else None."""
    if len(shape) <= 2 or dtype not in (np.float32, np.float64):
        return None
    n = math.prod(shape[2:])
    return ((*shape[:2],) + (1,) * (len(shape) - 2), n, dtype.type(0)) if _short_pairwise(n) else None


def _compiled_means(xw: np.ndarray, got: tuple[tuple[int, ...], int, Any]) -> np.ndarray:
    """The means of the rows of ``xw`` (C-contiguous) by the accelerator: numpy's pairwise sums and division, the
    same bits as its mean."""
    out_shape, n, zero = got
    y = np.empty(out_shape, xw.dtype)
    accel.jit_cnn().row_means(xw.reshape(-1), y.reshape(-1), n, zero)
    return y


def _short_pairwise(n: int) -> bool:
    """Whether numpy's pairwise sum of ``n`` terms is one leaf (``n <= 128``) or two (``accel.jit_cnn().row_means``)."""
    if n <= 0 or n > 256:
        return False
    half = n // 2 - (n // 2) % 8
    return n <= 128 or n - half <= 128


@kernel("GlobalMaxPool", 1, 22)
def global_max_pool(X: np.ndarray) -> np.ndarray:
    """GlobalMaxPool: max over every spatial axis, kept as extents of 1."""
    axes = _global_axes(X)
    return np.asarray(X.max(axis=axes, keepdims=True))


@kernel("GlobalLpPool", 1, 2, 22)
def global_lp_pool(X: np.ndarray, *, p: float = 2) -> np.ndarray:
    """GlobalLpPool: ``(sum |x|^p)^(1/p)`` over every spatial axis (``p`` float in v1, int from v2)."""
    axes = _global_axes(X)
    wd = work_dtype(X.dtype)
    a = np.abs(X.astype(wd, copy=False))
    s = np.asarray((a * a if p == 2 else np.power(a, wd.type(p))).sum(axis=axes, keepdims=True))
    return _lp_root(s, float(p)).astype(X.dtype, copy=False)
