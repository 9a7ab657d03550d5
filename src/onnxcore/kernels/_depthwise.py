"""Depthwise 2-D convolution (one input channel per group, one output channel per group) without per-channel
products.

im2col plus a batched matmul makes a depthwise convolution C tiny ``(1 x kk) @ (kk x P)`` products and copies the
image ``kk`` times; with many channels and a small image most of the time goes to that copy and to the per-matrix
overhead. Here the padded image is laid out channels-last once, viewed (no copy) as its windows
``(rows, cols, kh, kw, C)``, and one ``einsum`` per band of output rows sums the taps with the channels as the
contiguous inner loop. Bands have a size fixed by the shape alone and run on the kernel threads
(:mod:`onnxcore.kernels.threads`): the result is the same for any number of threads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from onnxcore.kernels._im2col import channels_last_padded
from onnxcore.kernels._scratch import scratch
from onnxcore.kernels.threads import active_threads, parallel_for

__all__ = ["depthwise_pays", "depthwise_conv2d"]

_BAND_ELEMENTS = 1 << 14  # output elements per band (per einsum call)


def depthwise_pays(c: int, out: Sequence[int]) -> bool:
    """Whether :func:`depthwise_conv2d` beats im2col for ``c`` channels and output extents ``out`` (measured:
    faster from about 128 channels, or for images of up to 32 x 32 outputs)."""
    return len(out) == 2 and (c >= 128 or out[0] * out[1] <= 1024)


def depthwise_conv2d(
    x: np.ndarray,
    w: np.ndarray,
    pb: Sequence[int],
    pe: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out: Sequence[int],
    bias: np.ndarray | None,
) -> np.ndarray:
    """``(N, C, *out)``: the depthwise convolution of ``x`` ``(N, C, H, W)`` with ``w`` ``(C, 1, kh, kw)``, plus
    ``bias`` ``(C,)`` when given."""
    n_img, c, h, wd = x.shape
    kh, kw = w.shape[2:]
    oh, ow = out
    xp = scratch("depthwise.x", (n_img, h + pb[0] + pe[0], wd + pb[1] + pe[1], c), x.dtype)
    channels_last_padded(x, xp, int(pb[0]), int(pb[1]))
    s = xp.strides
    win = as_strided(
        xp,
        shape=(n_img, oh, ow, kh, kw, c),
        strides=(s[0], s[1] * strides[0], s[2] * strides[1], s[1] * dilations[0], s[2] * dilations[1], s[3]),
        writeable=False,
    )
    wt = np.ascontiguousarray(w.reshape(c, kh, kw).transpose(1, 2, 0))
    y = scratch("depthwise.y", (n_img, oh, ow, c), x.dtype)
    rows = max(1, _BAND_ELEMENTS // max(1, ow * c))
    bands = [(i, r) for i in range(n_img) for r in range(0, oh, rows)]

    def run(a: int, b: int) -> None:
        for i, r in bands[a:b]:
            band = y[i, r : r + rows]
            np.einsum("hwijc,ijc->hwc", win[i, r : r + rows], wt, out=band)
            if bias is not None:
                band += bias

    parallel_for(run, len(bands), threads=active_threads() if y.size >= 1 << 16 else 1)
    return y.transpose(0, 3, 1, 2).copy()  # a copy always: y is a scratch buffer
