"""Dense 2-D convolution by the accelerator's compiled im2col (:mod:`onnxcore.kernels.accel._jit_im2col`) and one
BLAS product per group: the columns built straight from the unpadded input (no padded copy, no strided numpy copy),
a band of output rows at a time when they are large, so that the product reads them from the cache.

The Conv kernel (:func:`onnxcore.kernels.conv._conv_paths`) takes this path for float32 and float64 2-D layers that
neither the flat stride-1 layout nor a depthwise loop takes, when the accelerator is on: the strided layers of a CNN,
its RGB stems, stride-1 layers on maps too small for the flat layout, and (columns only) the strided 1 x 1 layers.
The columns hold the same values as numpy's window view, so the products are the same.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from onnxcore.kernels import accel, threads
from onnxcore.kernels._scratch import scratch
from onnxcore.kernels.threads import MIN_PARALLEL_ELEMENTS, active_threads

__all__ = ["BAND_BYTES", "channels_last_padded", "compiled_columns", "im2col_conv"]

BAND_BYTES = 1 << 21
"""Columns larger than twice this are built and multiplied a band of output rows at a time (each band about this
size, so that it stays in the L2 cache between the copy and the product)."""


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def channels_last_padded(x: np.ndarray, xp: np.ndarray, pt: int, pl: int) -> None:
    """``x`` ``(N, C, H, W)`` written channels-last into ``xp`` ``(N, Hp, Wp, C)`` at rows ``pt..pt + H`` and columns
    ``pl..pl + W``, zero elsewhere (the padded copy the channels-last convolutions read).

    With the accelerator the compiled copy (``accel.jit_im2col().nhwc_padded``), else numpy's transposed copy. numpy
    reads one value of each channel plane in turn, and planes of a power of two bytes fall into one cache set: a
    64 x 32 x 32 float32 image took 225 us that way against 30 us compiled (a ResNet at 128 x 128 has four such
    layers); at other sizes the two cost the same."""
    n, c, h, w = x.shape
    if (
        x.dtype in _FLOATS
        and xp.dtype == x.dtype
        and x.flags.c_contiguous
        and xp.flags.c_contiguous
        and xp.shape[0] == n
        and xp.shape[3] == c
        and xp.shape[1] >= pt + h
        and xp.shape[2] >= pl + w
        and accel.enabled()
    ):
        accel.jit_im2col().nhwc_padded(x, xp, pt, pl)
        return
    xp.fill(0)
    xp[:, pt : pt + h, pl : pl + w] = x.transpose(0, 2, 3, 1)


def compiled_columns(
    x: np.ndarray,
    kernel: Sequence[int],
    pb: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out: Sequence[int],
    r0: int = 0,
    r1: int | None = None,
    name: str = "conv.cols",
) -> np.ndarray:
    """The im2col columns ``(N, C, kh, kw, rows, ow)`` of output rows ``r0..r1`` (all by default) of a 2-D
    convolution of the C-contiguous float32 or float64 ``x`` ``(N, C, H, W)``, in this thread's scratch buffer
    ``name`` (consumed by the caller before its next request); the planes split over the kernel threads when large."""
    n_img, c = x.shape[:2]
    r1 = out[0] if r1 is None else r1
    kh, kw = kernel
    cols = scratch(name, (n_img, c, kh, kw, r1 - r0, out[1]), x.dtype)
    fn = accel.jit_im2col().im2col2d
    pt, pl = int(pb[0]), int(pb[1])
    sy, sx = int(strides[0]), int(strides[1])
    dy, dx = int(dilations[0]), int(dilations[1])
    n_threads = active_threads() if cols.size >= MIN_PARALLEL_ELEMENTS else 1
    if n_threads <= 1:
        fn(x, cols, pt, pl, sy, sx, dy, dx, r0, 0, n_img * c)
    else:  # (through the module: the tests observe the splits)
        threads.parallel_for(
            lambda a, b: fn(x, cols, pt, pl, sy, sx, dy, dx, r0, a, b), n_img * c, threads=n_threads, size=cols.size
        )
    return cols


def im2col_conv(
    x: np.ndarray,
    w: np.ndarray,
    group: int,
    pb: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out: Sequence[int],
) -> np.ndarray:
    """A 2-D convolution (no bias) of float32 or float64 ``x`` ``(N, C, H, W)`` by ``w`` ``(M, C/group, kh, kw)``:
    ``(N, M, *out)``, through :func:`compiled_columns` and one product per group (per band of output rows when the
    columns are large)."""
    x = np.ascontiguousarray(x)
    n_img, c = x.shape[:2]
    m = w.shape[0]
    kernel = w.shape[2:]
    cg, mg = c // group, m // group
    kk = math.prod(kernel)
    rows, ow = out
    wm = w.reshape(group, mg, cg * kk)
    total = n_img * c * kk * rows * ow * x.itemsize
    if total <= 2 * BAND_BYTES:
        cols = compiled_columns(x, kernel, pb, strides, dilations, out)
        if n_img == 1 and group == 1:
            # One image, one group: the 2-D product (np.matmul's stack broadcasting costs microseconds).
            return np.dot(wm[0], cols.reshape(cg * kk, rows * ow)).reshape(1, m, rows, ow)
        return np.matmul(wm, cols.reshape(n_img, group, cg * kk, rows * ow)).reshape(n_img, m, rows, ow)
    step = max(1, BAND_BYTES // max(n_img * c * kk * ow * x.itemsize, 1))
    y = np.empty((n_img, group, mg, rows, ow), dtype=x.dtype)
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        cols = compiled_columns(x, kernel, pb, strides, dilations, out, r0, r1)
        y[:, :, :, r0:r1, :] = np.matmul(wm, cols.reshape(n_img, group, cg * kk, (r1 - r0) * ow)).reshape(
            n_img, group, mg, r1 - r0, ow
        )
    return y.reshape(n_img, m, rows, ow)
