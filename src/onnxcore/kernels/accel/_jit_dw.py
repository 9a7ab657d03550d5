"""Compiled channels-last depthwise 2-D convolution of ``NCHW`` tensors (numba ``@njit``).

Split from :mod:`onnxcore.kernels.accel._jit_cnn` for size and reached through it
(``accel.jit_cnn().depthwise2d_nchw_cl``); numba itself is imported by ``_jit`` alone, whose decorator these use. As
there, every function works on arrays its caller made contiguous and of one element type (float32 or float64), and
numba does not check bounds: every index these loops follow has been validated by the caller (see each docstring).
"""

from __future__ import annotations

from typing import Any

from onnxcore.kernels.accel._jit import _njit

__all__ = ["depthwise2d_nchw_cl"]


@_njit
def depthwise2d_nchw_cl(
    x: Any,
    w: Any,
    bias: Any,
    out: Any,
    pads: Any,
    strides: Any,
    dilations: Any,
    xl: Any,
    tile: Any,
    start: int,
    stop: int,
) -> None:  # pragma: no cover - compiled
    """Depthwise 2-D convolution channels-last, reading and writing ``NCHW``, for the output rows ``start..stop`` of
    ``(N * oh)``: ``out[n, c, oy, ox] = sum over taps (i, j) inside the image of w[i, j, c] * x[n, c, oy * sy - pt +
    i * dy, ox * sx - pl + j * dx]``, then ``+ bias[c]``. ``x`` ``(N, C, H, W)``, ``w`` ``(kh, kw, C)``, ``bias``
    ``(C,)`` (zeros when the node has none), ``out`` ``(N, C, oh, ow)``; ``xl`` ``(H, W, C)`` and ``tile`` ``(ow,
    C)`` this call's scratch (any contents); all C-contiguous of one type; pads, strides and dilations as
    :func:`~onnxcore.kernels.accel._jit_cnn.depthwise2d`'s.

    For small images with many channels: the input rows the output rows read are copied channels-last into ``xl``
    (a copy of the rows this call needs, not a numpy transpose of the whole tensor, and no second one out), each
    output row is summed channels-last into ``tile`` (the innermost loop over the channels, contiguous, vectorised;
    the taps of a kernel row inside the image in one pass, so the sums are loaded and stored once a row), in the
    order of the planar loops (taps row by row, then the bias), and copied out to its place in every plane.
    Taps outside the image are skipped by the row and column tests, so every index read is inside ``x``."""
    h, wd = x.shape[2], x.shape[3]
    kh, kw = w.shape[0], w.shape[1]
    oh, ow = out.shape[2], out.shape[3]
    c_count = x.shape[1]
    pt, pl = pads[0], pads[1]
    sy, sx = strides[0], strides[1]
    dy, dx = dilations[0], dilations[1]
    row = start
    while row < stop:
        n = row // oh
        oy0 = row - n * oh
        oy1 = min(oh, oy0 + stop - row)
        # The input rows of this image the output rows oy0..oy1 read, channels-last.
        r0 = max(0, oy0 * sy - pt)
        r1 = min(h, (oy1 - 1) * sy - pt + (kh - 1) * dy + 1)
        xn = x[n]
        c4 = c_count - c_count % 4
        for r in range(r0, r1):
            dst = xl[r]
            # Four channels a pass (measured up to 1.5x faster than one: a row's loop is short).
            for c in range(0, c4, 4):
                s0, s1, s2, s3 = xn[c, r], xn[c + 1, r], xn[c + 2, r], xn[c + 3, r]
                for ix in range(wd):
                    d = dst[ix]
                    d[c] = s0[ix]
                    d[c + 1] = s1[ix]
                    d[c + 2] = s2[ix]
                    d[c + 3] = s3[ix]
            for c in range(c4, c_count):
                src = xn[c, r]
                for ix in range(wd):
                    dst[ix, c] = src[ix]
        for oy in range(oy0, oy1):
            for ox in range(ow):
                acc = tile[ox]
                for c in range(c_count):
                    acc[c] = 0
                ix0 = ox * sx - pl
                inner = ix0 >= 0 and ix0 + (kw - 1) * dx < wd
                for i in range(kh):
                    iy = oy * sy - pt + i * dy
                    if iy < 0 or iy >= h:
                        continue
                    xr = xl[iy]
                    wr = w[i]
                    if inner and kw == 3:
                        s0, s1, s2 = xr[ix0], xr[ix0 + dx], xr[ix0 + 2 * dx]
                        w0, w1, w2 = wr[0], wr[1], wr[2]
                        for c in range(c_count):
                            acc[c] = ((acc[c] + w0[c] * s0[c]) + w1[c] * s1[c]) + w2[c] * s2[c]
                    elif inner and kw == 5:
                        # Three taps, then two: five would take LLVM past its limit of run-time overlap checks
                        # (it would not vectorise the loop).
                        s0, s1, s2 = xr[ix0], xr[ix0 + dx], xr[ix0 + 2 * dx]
                        w0, w1, w2 = wr[0], wr[1], wr[2]
                        for c in range(c_count):
                            acc[c] = ((acc[c] + w0[c] * s0[c]) + w1[c] * s1[c]) + w2[c] * s2[c]
                        s3, s4, w3, w4 = xr[ix0 + 3 * dx], xr[ix0 + 4 * dx], wr[3], wr[4]
                        for c in range(c_count):
                            acc[c] = (acc[c] + w3[c] * s3[c]) + w4[c] * s4[c]
                    else:
                        for j in range(kw):
                            ix = ix0 + j * dx
                            if ix < 0 or ix >= wd:
                                continue
                            src = xr[ix]
                            wj = wr[j]
                            for c in range(c_count):
                                acc[c] += wj[c] * src[c]
                for c in range(c_count):
                    acc[c] += bias[c]
            on = out[n]
            for c in range(c_count):
                orow = on[c, oy]
                for ox in range(ow):
                    orow[ox] = tile[ox, c]
        row += oy1 - oy0
