"""The passes a kernel runs over its fresh result: a per-channel bias, a Relu, a Clip, the bias with either.

numpy's ``maximum`` and ``clip`` against a scalar, and an addition broadcast along the channels of an ``(N, C, H,
W)`` array, run several times slower than a plain addition on some machines (numpy 2.4 on an AMD EPYC with
AVX-512, 72 x 3136 float32 values: a Relu 85 us, a Clip 87 us, the channel bias 39 us, an addition of a scalar 14
us). In a CNN they follow nearly every convolution (a Conv's bias, then its Relu or ReLU6), so with the
accelerator each is one compiled pass at the addition's speed, split over the kernel threads, and a Conv's bias
with the Relu or Clip after it one pass for both (the plan's WithRelu and ConvActivation steps of a Conv): the same
values bit for bit as numpy's (``maximum(x, 0)`` keeps NaN and makes ``-0`` ``+0``; ``clip`` keeps NaN and ``-0``,
and gives ``hi`` where ``lo > hi``), which the tests hold over the special values. Without the accelerator, for
another element type or a non-contiguous array, or below ``_MIN_COMPILED`` elements (``_MIN_LOADED`` once numba is
loaded), numpy's own calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from onnxcore.kernels import accel
from onnxcore.kernels.threads import MIN_PARALLEL_ELEMENTS, active_threads, parallel_for

__all__ = [
    "add_channel_bias",
    "add_row_vector",
    "bias_clip_into",
    "bias_relu_into",
    "clip_into",
    "relu_into",
    "row_vector_relu_into",
]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_BLOCK = 1 << 15  # elements per block of the kernel threads, at least
# Below this many elements numpy's call costs a few microseconds: the compiled loops would save little and, on a
# model's first use, cost the import of numba (0.4 s; an MLP's Relu, a tabular model's Clip never load it).
_MIN_COMPILED = 1 << 14
# Once numba is loaded (an earlier kernel took a compiled loop: a CNN's depthwise or pooling layers), from this
# many: numpy's maximum, clip and broadcast addition cost 4-7 us on 15,000 float32 values (the small layers of a
# mobile CNN) where the compiled pass takes 1-2 us.
_MIN_LOADED = 1 << 11


def _worth(size: int) -> bool:
    """Whether a pass over ``size`` elements is worth a compiled loop (the accelerator's state asked last: only a
    large array may import numba)."""
    return (size >= _MIN_COMPILED or (size >= _MIN_LOADED and accel.loaded())) and accel.enabled()


def _compiled(x: np.ndarray, out: np.ndarray) -> bool:
    """Whether the compiled loops take ``x`` into ``out``: one float type, both contiguous, the accelerator on."""
    return (
        x.dtype in _FLOATS
        and out.dtype == x.dtype
        and x.shape == out.shape
        and x.flags.c_contiguous
        and out.flags.c_contiguous
        and _worth(x.size)
    )


def _blocks(size: int, run: Callable[[int, int], Any]) -> None:
    """``run(start, stop)`` over the flat range ``0..size``, in blocks on the kernel threads when it is large."""
    threads = active_threads() if size >= MIN_PARALLEL_ELEMENTS else 1
    parallel_for(run, size, threads=threads, min_block=_BLOCK)


def relu_into(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``np.maximum(x, 0)`` into ``out`` (a new array when None; ``x`` itself for in place), returned."""
    # numpy's maximum against a zero of x's own type (the same values): with a Python 0 it takes a path twice as
    # slow on small arrays (1.2 against 0.6 us on 64 values).
    if out is None:
        if x.size < _MIN_LOADED or not (x.dtype in _FLOATS and x.flags.c_contiguous):
            return np.maximum(x, x.dtype.type(0))  # (no compiled loop takes fewer than _MIN_LOADED: numpy's call)
        out = np.empty_like(x)
    if not _compiled(x, out):
        return np.maximum(x, x.dtype.type(0), out=out)
    jit, xf, zero = accel.jit(), x.reshape(-1), x.dtype.type(0)
    if out is x:
        inplace = jit.relu_inplace
        _blocks(x.size, lambda a, b: inplace(xf, zero, a, b))
    else:
        fn, of = jit.relu_flat, out.reshape(-1)
        _blocks(x.size, lambda a, b: fn(xf, of, zero, a, b))
    return out


def clip_into(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``np.clip(x, lo, hi)`` of scalar bounds of ``x``'s type into ``out`` (a new array when None; ``x`` itself for
    in place), returned."""
    if out is None:
        if x.size < _MIN_LOADED or not (x.dtype in _FLOATS and x.flags.c_contiguous):
            return np.clip(x, lo, hi)  # (as relu_into)
        out = np.empty_like(x)
    bounds = np.asarray(lo), np.asarray(hi)
    if not _compiled(x, out) or any(v.ndim or v.dtype != x.dtype for v in bounds):
        return np.clip(x, lo, hi, out=out)
    jit, xf, t = accel.jit(), x.reshape(-1), x.dtype.type
    low, high = t(lo), t(hi)
    if out is x:
        inplace = jit.clip_inplace
        _blocks(x.size, lambda a, b: inplace(xf, low, high, a, b))
    else:
        fn, of = jit.clip_flat, out.reshape(-1)
        _blocks(x.size, lambda a, b: fn(xf, of, low, high, a, b))
    return out


def add_channel_bias(y: np.ndarray, b: np.ndarray) -> None:
    """``y += b`` along axis 1 of ``y`` ``(N, C, ...)`` in place, ``b`` of shape ``(C,)`` and ``y``'s type (a Conv's
    bias on its output)."""
    if not _rows_compiled(y, b):
        y += b.reshape((1, -1) + (1,) * (y.ndim - 2))
        return
    fn, y2, bc = accel.jit().add_row_bias, _planes(y), np.ascontiguousarray(b)
    if y.size < MIN_PARALLEL_ELEMENTS:
        fn(y2, bc, 0, y2.shape[0])  # (one thread: the loop called directly, as _row_blocks would)
        return
    _row_blocks(y, lambda a, z: fn(y2, bc, a, z))


def bias_relu_into(y: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """``y = maximum(y + b, 0)`` along axis 1 of ``y`` ``(N, C, ...)`` in place (a Conv's output without its bias,
    its bias and the Relu after it: one pass where the compiled loops take it), returned. The same values as
    :func:`add_channel_bias` then :func:`relu_into`, bit for bit."""
    if b is None:
        return relu_into(y, y)
    if y.size < _MIN_LOADED:
        # (what add_channel_bias and relu_into do below _MIN_LOADED, without their tests: a few microseconds of the
        # 1x1 convolutions of a squeeze-and-excitation block)
        y += b.reshape((1, -1) + (1,) * (y.ndim - 2))
        return np.maximum(y, y.dtype.type(0), out=y)
    if not _rows_compiled(y, b):
        add_channel_bias(y, b)
        return relu_into(y, y)
    fn, y2, bc = accel.jit_cnn().add_row_bias_relu, _planes(y), np.ascontiguousarray(b)
    zero = y.dtype.type(0)
    if y.size < MIN_PARALLEL_ELEMENTS:
        # One thread (a mobile CNN's small layers): the loop called directly, without the blocks' closure and calls
        # (4.5 -> 2.1 us on a 512 x 5 x 5 output, the pass itself 2 us).
        fn(y2, bc, zero, 0, y2.shape[0])
        return y
    _row_blocks(y, lambda a, z: fn(y2, bc, zero, a, z))
    return y


def bias_clip_into(y: np.ndarray, b: np.ndarray | None, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``y = clip(y + b, lo, hi)`` along axis 1 of ``y`` in place (a Conv's bias and the ReLU6 after it), ``lo`` and
    ``hi`` scalars of ``y``'s type, returned: :func:`add_channel_bias` then :func:`clip_into`, bit for bit."""
    bounds = np.asarray(lo), np.asarray(hi)
    if b is None or not _rows_compiled(y, b) or any(v.ndim or v.dtype != y.dtype for v in bounds):
        if b is not None:
            add_channel_bias(y, b)
        return clip_into(y, lo, hi, y)
    fn, y2, bc = accel.jit_cnn().add_row_bias_clip, _planes(y), np.ascontiguousarray(b)
    t = y.dtype.type
    low, high = t(lo), t(hi)
    if y.size < MIN_PARALLEL_ELEMENTS:
        fn(y2, bc, low, high, 0, y2.shape[0])  # (as bias_relu_into)
        return y
    _row_blocks(y, lambda a, z: fn(y2, bc, low, high, a, z))
    return y


def add_row_vector(y: np.ndarray, b: np.ndarray) -> None:
    """``y += b`` in place for ``y`` ``(..., n)`` and ``b`` of ``n`` values of ``y``'s type, 1-D or ``(1, n)`` (a
    linear layer's bias on its fresh product)."""
    if not _vector_compiled(y, b):
        y += b
        return
    fn, y2, bc = accel.jit().add_row_vector, y.reshape(-1, b.size), np.ascontiguousarray(b).reshape(-1)
    if y.size < MIN_PARALLEL_ELEMENTS:
        fn(y2, bc, 0, y2.shape[0])  # (one thread: the loop called directly)
        return
    _vector_blocks(y2, lambda a, z: fn(y2, bc, a, z))


def row_vector_relu_into(y: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``y = maximum(y + b, 0)`` in place (``y`` and ``b`` as :func:`add_row_vector`'s: a linear layer's bias and
    the Relu after it), returned: :func:`add_row_vector` then :func:`relu_into`, bit for bit, in one pass where
    the compiled loops take it."""
    if not _vector_compiled(y, b):
        add_row_vector(y, b)
        return relu_into(y, y)
    fn, y2, bc = accel.jit().add_row_vector_relu, y.reshape(-1, b.size), np.ascontiguousarray(b).reshape(-1)
    zero = y.dtype.type(0)
    if y.size < MIN_PARALLEL_ELEMENTS:
        fn(y2, bc, zero, 0, y2.shape[0])
        return y
    _vector_blocks(y2, lambda a, z: fn(y2, bc, zero, a, z))
    return y


def _vector_compiled(y: np.ndarray, b: np.ndarray) -> bool:
    """Whether the compiled row loops take ``y`` ``(..., n)`` and its bias row ``b`` (``n`` values) in place."""
    return (
        y.size >= _MIN_LOADED  # (fewer: no compiled loop takes them, _worth says; asked first, the cheapest test)
        and y.ndim >= 1
        and b.size == y.shape[-1]
        and b.ndim <= min(2, y.ndim)
        and b.dtype == y.dtype
        and y.dtype in _FLOATS
        and y.flags.c_contiguous
        and y.flags.writeable
        and _worth(y.size)
    )


def _vector_blocks(y2: np.ndarray, run: Callable[[int, int], Any]) -> None:
    """``run(start, stop)`` over the rows of ``y2`` ``(rows, n)`` on the kernel threads (``y2`` is large)."""
    parallel_for(run, y2.shape[0], threads=active_threads(), size=y2.size)


def _rows_compiled(y: np.ndarray, b: np.ndarray) -> bool:
    """Whether the compiled row loops take ``y`` ``(N, C, ...)`` and its bias ``b`` ``(C,)`` in place."""
    return (
        y.size >= _MIN_LOADED  # (fewer: no compiled loop takes them, _worth says; asked first, the cheapest test)
        and y.ndim >= 2
        and b.shape == (y.shape[1],)
        and b.dtype == y.dtype
        and y.dtype in _FLOATS
        and y.flags.c_contiguous
        and y.flags.writeable
        and _worth(y.size)
    )


def _planes(y: np.ndarray) -> np.ndarray:
    """``y`` ``(N, C, ...)`` as its ``N * C`` planes, ``(N * C, plane)`` (a view: ``y`` is C-contiguous)."""
    return y.reshape(y.shape[0] * y.shape[1], -1)


def _row_blocks(y: np.ndarray, run: Callable[[int, int], Any]) -> None:
    """``run(start, stop)`` over the ``N * C`` planes of ``y``, on the kernel threads when ``y`` is large."""
    threads = active_threads() if y.size >= MIN_PARALLEL_ELEMENTS else 1
    parallel_for(run, y.shape[0] * y.shape[1], threads=threads, size=y.size)
