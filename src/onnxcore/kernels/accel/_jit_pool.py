"""Compiled max pooling (numba ``@njit``): 2-D MaxPool without the Indices output.

Split from :mod:`onnxcore.kernels.accel._jit_cnn` for size and reached through it (``accel.jit_cnn().max_pool2d``);
numba itself is imported by ``_jit`` alone, whose decorator these use. As there, every function works on arrays its
caller made contiguous and of one element type (float32 or float64), and numba does not check bounds: every index
these loops follow has been validated by the caller (see each docstring).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.kernels.accel._jit import _njit

__all__ = ["max_pool2d"]

# Planes of up to this many values take the flat stride-2 loop when it applies, with windows of three columns
# (measured: 1.1x to 2x faster up to 32 x 32, slower from 40 x 40, whose rows are long enough); with two columns
# up to a quarter of that (20 x 20).
_FLAT_PLANE = 1024
# Values of the planes the flat loop takes at a time (its buffers stay in the L1 and L2 caches).
_FLAT_RUN = 8192

# Output rows of at least this many columns take the de-interleaving column pass of a stride-2 pool of three columns
# (measured: 2x faster on 56-column rows; on 7-column rows its second pass costs more than the interleaved loads it
# saves).
_SPLIT_COLUMNS = 16


@_njit
def max_pool2d(
    x: Any,
    out: Any,
    kh: int,
    kw: int,
    pt: int,
    pl: int,
    sy: int,
    sx: int,
    dy: int,
    dx: int,
    low: Any,
    start: int,
    stop: int,
) -> None:  # pragma: no cover - compiled
    """2-D MaxPool without the Indices output, for the planes ``start..stop`` of ``x`` ``(P, H, W)`` into ``out``
    ``(P, oh, ow)`` (both C-contiguous, one type): ``out[p, oy, ox] = max over taps (i, j) inside the image of
    x[p, oy * sy - pt + i * dy, ox * sx - pl + j * dx]``, ``low`` (the type's lowest value, -inf) where no tap is
    inside. Each step is numpy's ``np.maximum`` (a NaN on either side wins; of two equal values the second is kept),
    a select per element, so the loops vectorise. Padding never wins, so no padded copy is made.

    Separable, as the numpy path: per output row, the maximum of its valid input rows, in their order, into a row
    buffer with ``pl`` places of ``low`` before the image's columns and enough after for the widest window (one
    pass for up to three tap rows), then the column taps over that buffer with the column stride, in their order.
    Row and column taps lie inside the image or the buffer by construction (the caller gives ``oh``, ``ow`` of the
    pool, whose windows start inside the padded extents), so no index leaves the arrays. Small planes of a stride-2
    pool without padding take :func:`_max_pool_flat2` (the same maxima in the same order)."""
    h, w = x.shape[1], x.shape[2]
    oh, ow = out.shape[1], out.shape[2]
    flat = _FLAT_PLANE if kw == 3 else _FLAT_PLANE * 2 // 5
    if (
        pt == 0 and pl == 0 and sy == 2 and sx == 2 and dy == 1 and dx == 1 and 2 <= kh <= 3 and 2 <= kw <= 3
        and w % 2 == 0 and h * w <= flat and (oh - 1) * 2 + kh <= h and (ow - 1) * 2 + kw <= w
    ):  # fmt: skip
        _max_pool_flat2(x, out, kh, kw, start, stop)
        return
    # One place more than the widest window reads: the even-column copy below reads place 2 * ow.
    size = max(pl + w, (ow - 1) * sx + (kw - 1) * dx + 1) + 1
    buf = np.empty(size, x.dtype)
    for t in range(size):
        buf[t] = low
    mid = buf[pl : pl + w]
    ev = np.empty(ow + 1, x.dtype)
    od = np.empty(ow + 1, x.dtype)
    split = sx == 2 and dx == 1 and kw == 3 and ow >= _SPLIT_COLUMNS
    for p in range(start, stop):
        xp = x[p]
        op = out[p]
        for oy in range(oh):
            # The tap rows inside the image: ilo..ihi (a window wholly in the padding rows, a ceil_mode window
            # before version 22, has none).
            i0 = oy * sy - pt
            ilo = (-i0 + dy - 1) // dy if i0 < 0 else 0
            ihi = min(kh, (h - 1 - i0) // dy + 1) if i0 + (kh - 1) * dy >= h else kh
            rows = ihi - ilo
            if rows <= 0:
                for t in range(w):
                    mid[t] = low
            elif rows == 1:
                s0 = xp[i0 + ilo * dy]
                for t in range(w):
                    mid[t] = s0[t]
            else:
                s0 = xp[i0 + ilo * dy]
                s1 = xp[i0 + (ilo + 1) * dy]
                if rows == 3:
                    # The CNNs' three rows in one pass (the numpy order: the first two, then the third).
                    s2 = xp[i0 + (ilo + 2) * dy]
                    for t in range(w):
                        a = s0[t]
                        b = s1[t]
                        m = a if (a > b) | (a != a) else b
                        c = s2[t]
                        mid[t] = m if (m > c) | (m != m) else c
                else:
                    for t in range(w):
                        a = s0[t]
                        b = s1[t]
                        mid[t] = a if (a > b) | (a != a) else b
                    for i in range(ilo + 2, ihi):
                        src = xp[i0 + i * dy]
                        for t in range(w):
                            a = mid[t]
                            b = src[t]
                            mid[t] = a if (a > b) | (a != a) else b
            dst = op[oy]
            if split:
                # Stride 2, three columns, long rows: the even and odd places apart first (a load pair LLVM
                # de-interleaves with shuffles), then the taps over contiguous runs (three interleaved loads would
                # be gathers).
                for q in range(ow):
                    ev[q] = buf[2 * q]
                    od[q] = buf[2 * q + 1]
                ev[ow] = buf[2 * ow]
                ev1 = ev[1:]
                for q in range(ow):
                    a = ev[q]
                    b = od[q]
                    m = a if (a > b) | (a != a) else b
                    c = ev1[q]
                    dst[q] = m if (m > c) | (m != m) else c
            elif sx == 2 and dx == 1 and kw == 3:
                # Short rows: the three taps of an output in one step (an interleaved load).
                for q in range(ow):
                    a = buf[2 * q]
                    b = buf[2 * q + 1]
                    c = buf[2 * q + 2]
                    m = a if (a > b) | (a != a) else b
                    dst[q] = m if (m > c) | (m != m) else c
            elif sx == 2 and dx == 1 and kw == 2:
                for q in range(ow):
                    a = buf[2 * q]
                    b = buf[2 * q + 1]
                    dst[q] = a if (a > b) | (a != a) else b
            else:
                # Any other stride and columns: the taps in their order, over the buffer with the column stride
                # (written here: a helper called for it, inlined, made the loops above measurably slower).
                for q in range(ow):
                    dst[q] = buf[q * sx]
                for j in range(1, kw):
                    tap = buf[j * dx :]
                    for q in range(ow):
                        a = dst[q]
                        b = tap[q * sx]
                        dst[q] = a if (a > b) | (a != a) else b


@_njit
def _max_pool_flat2(x: Any, out: Any, kh: int, kw: int, start: int, stop: int) -> None:  # pragma: no cover - compiled
    """:func:`max_pool2d` of stride 2 without padding, windows of 2 or 3 rows and columns all inside the image, an even
    image width, for small planes (:data:`_FLAT_PLANE`): a few planes at a time as one flat run, so
    every pass is one long vectorised loop where a loop per row of a small plane costs more than its maxima.

    The row maxima ``m[u] = max(x[u], x[u + W](, x[u + 2W]))`` for every place ``u`` of the run (the rows past a
    plane's last window mix two planes, and are never read), then the column maxima at the even places ``v[t] =
    max(m[2t], m[2t + 1](, m[2t + 2]))`` (an even place is an even column, W being even; an output's taps never
    pass its row's end), then each output row copied out of ``v``: the numpy path's maxima in its order, no index
    outside the run."""
    h, w = x.shape[1], x.shape[2]
    oh, ow = out.shape[1], out.shape[2]
    hw = h * w
    per = max(1, _FLAT_RUN // hw)
    m = np.empty(per * hw, x.dtype)
    v = np.empty(per * hw // 2, x.dtype)
    ev = np.empty(per * hw // 2 + 1, x.dtype)
    od = np.empty(per * hw // 2, x.dtype)
    flat = x.reshape(-1)
    for p0 in range(start, stop, per):
        cp = min(per, stop - p0)
        nm = cp * hw - (kh - 1) * w
        src = flat[p0 * hw : p0 * hw + cp * hw]
        a0 = src[0:nm]
        a1 = src[w : w + nm]
        if kh == 3:
            a2 = src[2 * w : 2 * w + nm]
            for u in range(nm):
                a = a0[u]
                b = a1[u]
                c = a2[u]
                ab = a if (a > b) | (a != a) else b
                m[u] = ab if (ab > c) | (ab != ab) else c
        else:
            for u in range(nm):
                a = a0[u]
                b = a1[u]
                m[u] = a if (a > b) | (a != a) else b
        nv = (nm - kw) // 2 + 1
        # The even and odd places apart first (a load pair LLVM de-interleaves with shuffles), then the taps over
        # contiguous runs.
        for t in range(nv):
            ev[t] = m[2 * t]
            od[t] = m[2 * t + 1]
        if kw == 3:
            ev[nv] = m[2 * nv]
            ev1 = ev[1:]
            for t in range(nv):
                a = ev[t]
                b = od[t]
                c = ev1[t]
                r = a if (a > b) | (a != a) else b
                v[t] = r if (r > c) | (r != r) else c
        else:
            for t in range(nv):
                a = ev[t]
                b = od[t]
                v[t] = a if (a > b) | (a != a) else b
        for k in range(cp):
            dst = out[p0 + k]
            for oy in range(oh):
                row = v[k * (hw // 2) + oy * w :]
                drow = dst[oy]
                for q in range(ow):
                    drow[q] = row[q]
