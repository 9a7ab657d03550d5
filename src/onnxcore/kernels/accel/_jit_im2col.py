"""Compiled im2col for dense 2-D convolutions (numba ``@njit``): the column matrix BLAS multiplies, built straight
from the unpadded input, the padding's zeros written only where a window reaches past the image.

numpy builds the same columns in two copies (the padded image, then the strided window view), the second with a
short strided inner loop per column row (a stride-2 layer of 40-wide outputs copies rows of 40 values two apart):
for the strided layers of a CNN and its RGB stems the two copies cost half as much as the product. Here each input
plane is first split, zero-padded, into the stride phases its taps read (one pass over the plane, in the cache),
after which every column row is a contiguous run of one phase: 3-4x less time than numpy's two copies for the
stride-2 layers measured.

Reach it as ``accel.jit_im2col().im2col2d``; numba itself is imported by ``_jit`` alone, whose decorator this uses.
As there, the arrays are contiguous and of one element type (float32 or float64), and numba does not check bounds:
the caller validates the geometry (see the docstring).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.kernels.accel._jit import _njit

__all__ = ["groups_to_nchw", "im2col2d", "nhwc_padded", "window_runs"]

# Indices are made unsigned where the loops read and write: numba adds a test for negative (wrapped-around)
# indices to every signed one, which keeps LLVM from vectorising the copies.
_U = np.uint64


@_njit
def _gather(
    x: Any, cols: Any, pt: int, pl: int, sy: int, sx: int, r0: int, start: int, stop: int
) -> None:  # pragma: no cover - compiled
    """:func:`im2col2d` for a 1 x 1 kernel (a strided 1 x 1 layer, ResNet's downsampling): each column row read from
    its image row directly (the phases would copy the plane twice)."""
    h, wd = x.shape[2], x.shape[3]
    rows, ow = cols.shape[4], cols.shape[5]
    xf = x.reshape(-1)
    cf = cols.reshape(-1)
    zero = x.dtype.type(0)
    last = wd - 1 + pl
    hi = max(0, min(ow, last // sx + 1))
    lo = min((pl + sx - 1) // sx, hi)
    for unit in range(start, stop):
        for r in range(rows):
            d = (unit * rows + r) * ow
            iy = (r0 + r) * sy - pt
            if iy < 0 or iy >= h:
                for q in range(ow):
                    cf[_U(d + q)] = zero
                continue
            for q in range(lo):
                cf[_U(d + q)] = zero
            for q in range(hi, ow):
                cf[_U(d + q)] = zero
            first = (unit * h + iy) * wd + lo * sx - pl
            dl = d + lo
            if sx == 2:
                for q in range(hi - lo):
                    cf[_U(dl + q)] = xf[_U(first + 2 * q)]
            else:
                for q in range(hi - lo):
                    cf[_U(dl + q)] = xf[_U(first + sx * q)]


@_njit
def im2col2d(
    x: Any,
    cols: Any,
    pt: int,
    pl: int,
    sy: int,
    sx: int,
    dy: int,
    dx: int,
    r0: int,
    start: int,
    stop: int,
) -> None:  # pragma: no cover - compiled
    """The columns of output rows ``r0 .. r0 + rows`` of a 2-D convolution, for the units ``start..stop`` of
    ``(N * C)``: ``cols[n, c, i, j, r, q] = x[n, c, (r0 + r) * sy - pt + i * dy, q * sx - pl + j * dx]``, zero where
    that place is outside the image (the padding).

    ``x`` ``(N, C, H, W)``, ``cols`` ``(N, C, kh, kw, rows, ow)``, both C-contiguous of one type; pads non-negative,
    strides and dilations positive (any place outside the image is written as zero, so any geometry is safe).

    Output row ``r`` and tap ``i`` read padded row ``(r0 + r + i * dy // sy) * sy + i * dy % sy``: phase
    ``i * dy % sy``, phase row ``r + i * dy // sy`` (and the same along the columns). Each plane's rows are split
    once into the phases its taps use (a buffer of about the plane's size, in the cache); each column row is then a
    contiguous run of ``ow`` values of one phase."""
    h, wd = x.shape[2], x.shape[3]
    kh, kw, rows, ow = cols.shape[2], cols.shape[3], cols.shape[4], cols.shape[5]
    if kh * kw == 1:
        _gather(x, cols, pt, pl, sy, sx, r0, start, stop)
        return
    hph = rows + (kh - 1) * dy // sy
    wph = ow + (kw - 1) * dx // sx
    size = hph * wph
    py_used = np.zeros(sy, np.bool_)
    px_used = np.zeros(sx, np.bool_)
    for i in range(kh):
        py_used[i * dy % sy] = True
    for j in range(kw):
        px_used[j * dx % sx] = True
    pbuf = np.empty(sy * sx * size, x.dtype)
    # Phase place b holds padded column b * sx + px, image column b * sx + px - pl: inside for b in lo[px]..hi[px].
    lo = np.zeros(sx, np.int64)
    hi = np.zeros(sx, np.int64)
    for px in range(sx):
        last = wd - 1 + pl - px
        h1 = min(wph, last // sx + 1) if last >= 0 else 0
        l1 = min(max(0, (pl - px + sx - 1) // sx), wph)
        lo[px], hi[px] = l1, max(h1, l1)
    # Stride 2, both column phases used, no padding cut inside the row: one loop reading the row in order (a phase
    # at a time is a strided gather, several times slower).
    pair = sx == 2 and px_used[0] and px_used[1]
    xf = x.reshape(-1)
    cf = cols.reshape(-1)
    zero = x.dtype.type(0)
    for unit in range(start, stop):
        plane = unit * h * wd
        for py in range(sy):
            if not py_used[py]:
                continue
            for a in range(hph):
                iy = (r0 + a) * sy + py - pt
                base = py * sx * size + a * wph
                if iy < 0 or iy >= h:
                    for px in range(sx):
                        if px_used[px]:
                            seg = base + px * size
                            for b in range(wph):
                                pbuf[_U(seg + b)] = zero
                    continue
                src = plane + iy * wd
                for px in range(sx):
                    if px_used[px]:
                        seg = base + px * size
                        for b in range(lo[px]):
                            pbuf[_U(seg + b)] = zero
                        for b in range(hi[px], wph):
                            pbuf[_U(seg + b)] = zero
                if pair:
                    # Image columns 2t - pl % 2 ... : phase (pl + c) % 2 place (c + pl) // 2 for image column c.
                    ka = base + (pl % 2) * size + pl // 2
                    kb = base + (1 - pl % 2) * size + (pl + 1) // 2
                    half = max(0, min(wd // 2, hi[pl % 2] - pl // 2, hi[1 - pl % 2] - (pl + 1) // 2))
                    for t in range(half):
                        pbuf[_U(ka + t)] = xf[_U(src + 2 * t)]
                        pbuf[_U(kb + t)] = xf[_U(src + 2 * t + 1)]
                    for c in range(2 * half, wd):
                        pc = c + pl
                        b = pc // 2
                        if b < wph:
                            pbuf[_U(base + (pc % 2) * size + b)] = xf[_U(src + c)]
                    continue
                for px in range(sx):
                    if not px_used[px]:
                        continue
                    seg = base + px * size + lo[px]
                    first = src + lo[px] * sx + px - pl
                    if sx == 1:
                        for b in range(hi[px] - lo[px]):
                            pbuf[_U(seg + b)] = xf[_U(first + b)]
                    elif sx == 2:
                        for b in range(hi[px] - lo[px]):
                            pbuf[_U(seg + b)] = xf[_U(first + 2 * b)]
                    else:
                        for b in range(hi[px] - lo[px]):
                            pbuf[_U(seg + b)] = xf[_U(first + sx * b)]
        for i in range(kh):
            ai = i * dy
            for j in range(kw):
                aj = j * dx
                src0 = ((ai % sy) * sx + aj % sx) * size + (ai // sy) * wph + aj // sx
                dst0 = ((unit * kh + i) * kw + j) * rows * ow
                for r in range(rows):
                    d = dst0 + r * ow
                    s = src0 + r * wph
                    for q in range(ow):
                        cf[_U(d + q)] = pbuf[_U(s + q)]


# ------------------------------------------------------------------------------------ channels-last columns


@_njit
def nhwc_padded(x: Any, xp: Any, pt: int, pl: int) -> None:  # pragma: no cover - compiled
    """``x`` ``(N, C, H, W)`` into ``xp`` ``(N, Hp, Wp, C)`` at rows ``pt..pt + H`` and columns ``pl..pl + W``, zero
    elsewhere (``Hp >= pt + H``, ``Wp >= pl + W``; both C-contiguous of one type).

    Each image row is transposed eight channels at a time (eight input rows read side by side, the output written in
    runs of eight): numpy's transposed copy reads one value per channel plane in turn, which for planes of a power of
    two bytes falls into one cache set (a 64 x 32 x 32 image: 250 us against 30)."""
    n, c, h, w = x.shape
    hp, wp = xp.shape[1], xp.shape[2]
    xf = x.reshape(-1)
    pf = xp.reshape(-1)
    zero = x.dtype.type(0)
    for i in range(n):
        for a in range(hp):
            iy = a - pt
            row = (i * hp + a) * wp * c
            if iy < 0 or iy >= h:
                for q in range(wp * c):
                    pf[_U(row + q)] = zero
                continue
            for q in range(pl * c):
                pf[_U(row + q)] = zero
            for q in range((pl + w) * c, wp * c):
                pf[_U(row + q)] = zero
            for c0 in range(0, c, 8):
                for ch in range(c0, min(c, c0 + 8)):
                    s = ((i * c + ch) * h + iy) * w
                    d = row + pl * c + ch
                    for ix in range(w):
                        pf[_U(d + ix * c)] = xf[_U(s + ix)]


@_njit
def window_runs(
    xp: Any, cols: Any, oh: int, ow: int, kh: int, kw: int, sy: int, sx: int, dy: int, dx: int
) -> None:  # pragma: no cover - compiled
    """The channels-last columns of a 2-D convolution of the padded ``xp`` ``(N, Hp, Wp, C)``: ``cols`` ``(G, N * oh *
    ow, kh * kw * C/G)``, row ``(n, oy, ox)`` of group ``g`` holding, tap by tap (row, then column), the group's
    ``C/G`` channels at padded place ``(oy * sy + i * dy, ox * sx + j * dx)``: what numpy's copy of the strided
    window view gives, each run copied by a short loop (numpy's copy costs a strided inner loop per run). With one
    group and dilation 1 along the columns, a tap row's ``kw * C`` values are one run. The caller checked that every
    window lies inside ``xp``."""
    n, hp, wp, c = xp.shape
    g = cols.shape[0]
    cg = c // g
    pf = xp.reshape(-1)
    cf = cols.reshape(-1)
    d = 0
    whole = g == 1 and dx == 1
    for gi in range(g):
        for i in range(n):
            for oy in range(oh):
                for ox in range(ow):
                    for ky in range(kh):
                        s = ((i * hp + oy * sy + ky * dy) * wp + ox * sx) * c + gi * cg
                        if whole:
                            for q in range(kw * c):
                                cf[_U(d + q)] = pf[_U(s + q)]
                            d += kw * c
                            continue
                        for kx in range(kw):
                            t = s + kx * dx * c
                            for q in range(cg):
                                cf[_U(d + q)] = pf[_U(t + q)]
                            d += cg


@_njit
def groups_to_nchw(yt: Any, bias: Any, has_bias: bool, y: Any) -> None:  # pragma: no cover - compiled
    """``yt`` ``(G, N * P, M/G)`` (the products of :func:`window_runs`'s columns) into ``y`` ``(N, M, P)``, plus
    ``bias`` (``M`` values) when ``has_bias``: ``y[n, g * M/G + o, p] = yt[g, n * P + p, o] (+ bias[...])``, one
    float addition as numpy's."""
    g, _rows, mg = yt.shape
    n, m, p = y.shape
    tf = yt.reshape(-1)
    yf = y.reshape(-1)
    for gi in range(g):
        for i in range(n):
            for o in range(mg):
                ch = gi * mg + o
                dst = (i * m + ch) * p
                src = (gi * n * p + i * p) * mg + o
                if has_bias:
                    b = bias[ch]
                    for q in range(p):
                        yf[_U(dst + q)] = tf[_U(src + q * mg)] + b
                else:
                    for q in range(p):
                        yf[_U(dst + q)] = tf[_U(src + q * mg)]
