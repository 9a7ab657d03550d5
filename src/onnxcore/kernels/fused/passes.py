"""Compiled activation passes (the ``accel`` extra) with an optional per-channel bias: SiLU / Swish, the erf GELU and
HardSwish of ``x`` or of ``x + bias`` along axis 1, one pass each; and :func:`silu`, the plan's SiLU.

A Conv followed by one of these activations runs its bias and the activation together here
(:class:`onnxcore.kernels.fused.conv.ConvActivation`), and Swish-24 and the plan's SiLU fusion run the plain
SiLU. Each returns None where the compiled loop does not take the input (the accelerator off, another type): the
caller then runs the numpy kernels, the reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from onnxcore.kernels import accel
from onnxcore.kernels.threads import MIN_PARALLEL_ELEMENTS, active_threads, parallel_for

__all__ = ["gelu_bias_accel", "hard_swish_bias_accel", "silu", "swish_accel"]

Array = np.ndarray
_BLOCK = 1 << 14  # elements per block of the plain SiLU (a block for a kernel thread)
_NO_BIAS = np.zeros(0, np.float32)
# HardSwish's 1/6 and 1/2 in each type the compiled loop takes (a numpy scalar made per call costs a microsecond)
_HARD_SWISH_CONSTANTS = {np.dtype(t): (t(1.0 / 6.0), t(0.5)) for t in (np.float32, np.float64)}


def swish_accel(x: Array, alpha: float, bias: Array | None = None, *, inplace: bool = False) -> Array | None:
    """``x * sigmoid(alpha * x)`` by the compiled loop (float32 with the accelerator enabled; within 4 ulp of the
    float64 value, ``tools/swish_accel_ulp.py``), in blocks over the kernel threads; with ``bias`` (one float32 per
    channel of an ``(N, C, ...)`` ``x``), of ``x + bias`` along axis 1 in the same pass (a Conv's bias and the SiLU
    that follows it). None on other inputs (the caller computes ``x / (1 + exp(-alpha * x))`` with numpy, the
    reference). ``inplace`` (with ``bias``): into ``x`` itself, returned, when it is C-contiguous and writeable (a
    Conv's fresh output: no second array of its size, whose pages the system would fault in again on every run)."""
    if x.dtype != np.float32 or not accel.enabled():
        return None
    if bias is not None and (x.ndim < 2 or bias.dtype != np.float32 or bias.shape != (x.shape[1],)):
        return None
    if inplace and bias is not None and x.flags.c_contiguous and x.flags.writeable:
        fi, a = accel.jit_cnn().swish32_inplace, np.float32(alpha)
        return _channel_rows_inplace(x, bias, lambda x2, b, i, j: fi(x2, a, b, i, j))
    size = x.size
    if bias is None and 0 < size < MIN_PARALLEL_ELEMENTS:
        # One thread: the whole array as one row, without the blocks' views and closure (a decoder's SiLU of a few
        # thousand values: 7.8 -> 5 us). Each element is computed alone, so the values are the blocks' own.
        res = np.empty(x.shape, np.float32)
        accel.jit().swish32(
            np.ascontiguousarray(x).reshape(1, size), res.reshape(1, size), np.float32(alpha), _NO_BIAS, 0, 1
        )
        return res
    if bias is None:
        # Rows of _BLOCK (and a last, shorter one): blocks for the kernel threads.
        rows, inner = (-(-size // _BLOCK), _BLOCK) if size > _BLOCK else (1, size)
        b = np.zeros(0, np.float32)
    else:
        rows = x.shape[0] * x.shape[1]
        inner = size // rows if rows else 0
        b = np.ascontiguousarray(bias)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(size, np.float32)
    fn, a = accel.jit().swish32, np.float32(alpha)
    full = size // inner if inner else 0  # whole rows; a shorter last one when the size is not a multiple
    x2, o2 = flat[: full * inner].reshape(full, inner), out[: full * inner].reshape(full, inner)

    def run(i: int, j: int) -> None:
        fn(x2, o2, a, b, i, j)

    parallel_for(run, full, threads=active_threads() if size >= MIN_PARALLEL_ELEMENTS else 1)
    if full * inner < size:
        fn(flat[full * inner :].reshape(1, -1), out[full * inner :].reshape(1, -1), a, b, 0, 1)
    return out.reshape(x.shape)


def silu(x: np.ndarray) -> np.ndarray:
    """``x * sigmoid(x)`` as ``x / (1 + exp(-x))``: three passes in one buffer (for very negative ``x``, ``exp``
    overflows to infinity and the quotient is -0, the limit). float32 with the accelerator: its compiled loop, one
    pass within 4 ulp of these (:func:`swish_accel`)."""
    fast = swish_accel(x, 1.0)
    if fast is not None:
        return fast
    y = np.negative(x)
    np.exp(y, out=y)
    y += 1
    np.divide(x, y, out=y)
    return y


def gelu_bias_accel(x: Array, bias: Array, *, inplace: bool = False) -> Array | None:
    """The erf GELU of ``x + bias`` along axis 1 (``x`` ``(N, C, ...)`` float32, ``bias`` ``(C,)``: a Conv's output
    and bias) by the compiled loop in one pass, the same results bit for bit as the addition then :func:`gelu`;
    None when the accelerator is off or the types differ (the caller adds and calls :func:`gelu`). ``inplace``: into
    ``x``, as :func:`swish_accel`."""
    if x.dtype != np.float32 or bias.dtype != np.float32 or x.ndim < 2 or bias.shape != (x.shape[1],):
        return None
    if not accel.enabled():
        return None
    sc = np.float32(1.0 / math.sqrt(2.0))
    if inplace and x.flags.c_contiguous and x.flags.writeable:
        fi = accel.jit_cnn().gelu32_rows_inplace
        return _channel_rows_inplace(x, bias, lambda x2, b, i, j: fi(x2, b, sc, i, j))
    fn = accel.jit().gelu32_rows
    return _channel_rows(x, bias, lambda x2, b, out, i, j: fn(x2, b, out, sc, i, j))


def hard_swish_bias_accel(x: Array, bias: Array, *, inplace: bool = False) -> Array | None:
    """HardSwish of ``x + bias`` along axis 1 (``x`` ``(N, C, ...)``, ``bias`` ``(C,)`` of its type, float32 or
    float64: a Conv's output and bias) by the compiled loop in one pass, the same results bit for bit as the
    addition then the HardSwish kernel; None when the accelerator is off or the types differ. ``inplace``: into
    ``x``, as :func:`swish_accel`."""
    if x.dtype not in (np.float32, np.float64) or bias.dtype != x.dtype or x.ndim < 2 or bias.shape != (x.shape[1],):
        return None
    if not accel.enabled():
        return None
    sixth, half = _HARD_SWISH_CONSTANTS[x.dtype]
    if inplace and x.flags.c_contiguous and x.flags.writeable:
        fi = accel.jit_cnn().hard_swish_rows_inplace
        return _channel_rows_inplace(x, bias, lambda x2, b, i, j: fi(x2, b, sixth, half, i, j))
    fn = accel.jit().hard_swish_rows
    return _channel_rows(x, bias, lambda x2, b, out, i, j: fn(x2, b, out, sixth, half, i, j))


def _channel_rows(x: Array, bias: Array, call: Callable[..., None]) -> Array | None:
    """A Conv epilogue's pass: ``x`` ``(N, C, ...)`` as the rows of its channels' planes, ``call(x2, bias, out,
    start, stop)`` over blocks of rows on the kernel threads; None for an empty ``x`` (the caller's numpy path)."""
    rows = x.shape[0] * x.shape[1]
    if rows == 0 or x.size == 0:
        return None
    x2 = np.ascontiguousarray(x).reshape(rows, -1)
    out = np.empty(x2.shape, x.dtype)
    b = np.ascontiguousarray(bias)
    if x.size < MIN_PARALLEL_ELEMENTS:
        call(x2, b, out, 0, rows)  # (one thread: the pass called directly, without parallel_for's closure and calls)
    else:
        parallel_for(lambda i, j: call(x2, b, out, i, j), rows, threads=active_threads())
    return out.reshape(x.shape)


def _channel_rows_inplace(x: Array, bias: Array, call: Callable[..., None]) -> Array | None:
    """:func:`_channel_rows` into ``x`` itself (``call(x2, bias, start, stop)``; ``x`` C-contiguous and writeable),
    returned."""
    rows = x.shape[0] * x.shape[1]
    if rows == 0 or x.size == 0:
        return None
    x2 = x.reshape(rows, -1)
    b = np.ascontiguousarray(bias)
    if x.size < MIN_PARALLEL_ELEMENTS:
        call(x2, b, 0, rows)  # (as _channel_rows)
    else:
        parallel_for(lambda i, j: call(x2, b, i, j), rows, threads=active_threads())
    return x
