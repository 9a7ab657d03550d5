"""Compiled convolution and pooling kernels (numba ``@njit``): depthwise 2-D convolution, a Conv's bias with the
activation after it in place (Relu, Clip, SiLU, the erf GELU, HardSwish), the stride-1 box mean, max pooling and short
row means.

Split from :mod:`onnxcore.kernels.accel._jit` for size (reach them as ``accel.jit_cnn().depthwise2d``; max pooling and
the channels-last depthwise loop live in :mod:`onnxcore.kernels.accel._jit_pool` and ``_jit_dw``, reached here too);
numba itself is imported by ``_jit`` alone, whose decorator these use. As there, every function works on arrays its
caller made contiguous and of one element type (float32 or float64), and numba does not check bounds: every index
these loops follow has been validated by the caller (see each docstring).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.kernels.accel._jit import _gelu_of, _hard_swish_of, _njit, _njit_fma, _pairwise_leaf, _swish1
from onnxcore.kernels.accel._jit_dw import depthwise2d_nchw_cl
from onnxcore.kernels.accel._jit_pool import max_pool2d

__all__ = [
    "add_row_bias_clip",
    "add_row_bias_relu",
    "gelu32_rows_inplace",
    "hard_swish_rows_inplace",
    "box_mean2d",
    "conv2d_planar",
    "depthwise2d",
    "depthwise2d_nchw_cl",
    "depthwise2d_strided",
    "max_pool2d",
    "row_means",
    "swish32_inplace",
]

_DW_TILE = 1024  # outputs of a depthwise plane summed through every tap at a time (4 KiB of float32 sums)


@_njit
def _group(left: int) -> int:  # pragma: no cover - compiled
    """How many of the ``left`` taps of a kernel row :func:`_add_taps` takes next: 5, 3, 2 or 1 (a 7-tap row: 5 + 2)."""
    if left >= 5:
        return 5
    if left >= 3:
        return 3
    return left


@_njit
def _add_taps(
    part: Any,
    buf: Any,
    g: int,
    o0: int,
    o1: int,
    o2: int,
    o3: int,
    o4: int,
    w0: Any,
    w1: Any,
    w2: Any,
    w3: Any,
    w4: Any,
) -> None:  # pragma: no cover - compiled
    """``part[q] += w0 * buf[o0 + q]``, then ``+= w1 * buf[o1 + q]`` ... for the first ``g`` (1 to 5) taps, in that
    order (the same sums as one tap at a time, bit for bit), in one pass over ``part``: its sums are loaded and
    stored once for ``g`` taps instead of ``g`` times. The caller keeps every ``o + len(part)`` within ``buf``."""
    n = part.size
    t0 = buf[o0 : o0 + n]
    if g == 1:
        for q in range(n):
            part[q] += w0 * t0[q]
        return
    t1 = buf[o1 : o1 + n]
    if g == 2:
        for q in range(n):
            part[q] = (part[q] + w0 * t0[q]) + w1 * t1[q]
        return
    t2 = buf[o2 : o2 + n]
    if g == 3:
        for q in range(n):
            part[q] = ((part[q] + w0 * t0[q]) + w1 * t1[q]) + w2 * t2[q]
        return
    t3 = buf[o3 : o3 + n]
    t4 = buf[o4 : o4 + n]
    for q in range(n):
        part[q] = ((((part[q] + w0 * t0[q]) + w1 * t1[q]) + w2 * t2[q]) + w3 * t3[q]) + w4 * t4[q]


@_njit
def _add_dense_taps(
    part: Any, buf: Any, g: int, o: int, w0: Any, w1: Any, w2: Any, w3: Any, w4: Any
) -> None:  # pragma: no cover - compiled
    """:func:`_add_taps` for taps at consecutive places ``o, o + 1, ...`` (a kernel row of column dilation 1 at
    stride 1), the same sums in the same order. The taps are read through one slice at constant distances: two
    arrays in the loop, so the compiler's overlap test before the vector loop is one comparison where a slice per
    tap made it ten (measured: a third of the time of a 5 x 5 depthwise layer of 8 x 8 planes)."""
    n = part.size
    t = buf[o : o + n + g - 1]
    if g == 1:
        for q in range(n):
            part[q] += w0 * t[q]
        return
    if g == 2:
        for q in range(n):
            part[q] = (part[q] + w0 * t[q]) + w1 * t[q + 1]
        return
    if g == 3:
        for q in range(n):
            part[q] = ((part[q] + w0 * t[q]) + w1 * t[q + 1]) + w2 * t[q + 2]
        return
    for q in range(n):
        part[q] = ((((part[q] + w0 * t[q]) + w1 * t[q + 1]) + w2 * t[q + 2]) + w3 * t[q + 3]) + w4 * t[q + 4]


@_njit
def _add_tap_list(part: Any, buf: Any, lo: int, offs: Any, wts: Any) -> None:  # pragma: no cover - compiled
    """``part[q] += wts[k] * buf[lo + offs[k] + q]`` for every tap ``k`` in order (the same sums as one tap at a time,
    bit for bit), nine taps per pass over ``part`` (then three, then one): its sums are loaded and stored once for
    nine taps. ``offs`` (uint64, any order, each ``>= 0``) and ``wts`` of one length; the caller keeps every ``lo +
    offs[k] + len(part)`` within ``buf``.

    The taps are read through one slice of ``buf`` at unsigned distances: two arrays in the loop (one overlap test
    before the vector loop), and no index the compiler must check for a negative value (a signed one makes numba
    wrap it around, which keeps the loop scalar). Measured 1.6x faster than a pass per kernel row on an RGB stem's
    long planes (of 4,096 outputs and more), where a stride splits a row into runs of one or two taps; on the small
    planes of depthwise layers slower than the rows of up to five taps the depthwise loops keep. Three pass widths
    only: each is compiled on a machine's first use (seconds, cold)."""
    t = buf[lo:]
    total = offs.size
    k = 0
    while k + 9 <= total:
        _taps9(part, t, offs, wts, k)
        k += 9
    while k + 3 <= total:
        _taps3(part, t, offs, wts, k)
        k += 3
    while k < total:
        _taps1(part, t, offs, wts, k)
        k += 1


@_njit
def _taps9(part: Any, t: Any, offs: Any, wts: Any, k: int) -> None:  # pragma: no cover - compiled
    """Taps ``k..k + 9`` of :func:`_add_tap_list` in one pass (added left to right)."""
    w0, w1, w2, w3, w4 = wts[k], wts[k + 1], wts[k + 2], wts[k + 3], wts[k + 4]
    w5, w6, w7, w8 = wts[k + 5], wts[k + 6], wts[k + 7], wts[k + 8]
    e0, e1, e2, e3, e4 = offs[k], offs[k + 1], offs[k + 2], offs[k + 3], offs[k + 4]
    e5, e6, e7, e8 = offs[k + 5], offs[k + 6], offs[k + 7], offs[k + 8]
    for q in range(np.uint64(part.size)):
        a = part[q] + w0 * t[q + e0] + w1 * t[q + e1] + w2 * t[q + e2]
        a = a + w3 * t[q + e3] + w4 * t[q + e4] + w5 * t[q + e5]
        part[q] = a + w6 * t[q + e6] + w7 * t[q + e7] + w8 * t[q + e8]


@_njit
def _taps3(part: Any, t: Any, offs: Any, wts: Any, k: int) -> None:  # pragma: no cover - compiled
    """Taps ``k..k + 3`` of :func:`_add_tap_list` in one pass (added left to right)."""
    w0, w1, w2 = wts[k], wts[k + 1], wts[k + 2]
    e0, e1, e2 = offs[k], offs[k + 1], offs[k + 2]
    for q in range(np.uint64(part.size)):
        part[q] = part[q] + w0 * t[q + e0] + w1 * t[q + e1] + w2 * t[q + e2]


@_njit
def _taps1(part: Any, t: Any, offs: Any, wts: Any, k: int) -> None:  # pragma: no cover - compiled
    """Tap ``k`` of :func:`_add_tap_list`."""
    w0, e0 = wts[k], offs[k]
    for q in range(np.uint64(part.size)):
        part[q] += w0 * t[q + e0]


@_njit
def depthwise2d(
    x: Any,
    w: Any,
    bias: Any,
    out: Any,
    pads: Any,
    strides: Any,
    dilations: Any,
    start: int,
    stop: int,
) -> None:  # pragma: no cover - compiled
    """Depthwise 2-D convolution of the planes ``start..stop`` of ``(N * C)``: ``out[n, c, oy, ox] = sum over taps
    (i, j) of w[c, i, j] * x[n, c, oy * sy - pt + i * dy, ox * sx - pl + j * dx]``, then ``+ bias[c]``, taps
    outside the image being zero. ``x`` ``(N, C, H, W)``, ``w`` ``(C, kh, kw)``, ``bias`` ``(C,)`` (zeros when
    the node has none), ``out`` ``(N, C, oh, ow)``, all C-contiguous of one type; ``pads`` (top, left),
    ``strides`` and ``dilations`` (rows, columns) positive, ``oh`` and ``ow`` those of the convolution.

    Each plane is copied into a zero-padded buffer whose row pitch ``wp`` is a multiple of the column stride, so
    that output ``(oy, ox)`` of tap ``(i, j)`` reads ``buf[sx * q + i * dy * wp + j * dx]`` with ``q = oy * wq +
    ox`` and ``wq = sy * wp / sx``: one loop over ``q`` per tap, long and branch-free (it vectorises), computing
    the columns ``ow..wq`` of each output row too, and a few more after the last row (discarded). The buffer
    holds every index read, so no index depends on data and none leaves the buffer. Used for stride 1 (with a
    stride, the loop reads every sx-th element and computes sy times the rows: :func:`depthwise2d_strided` splits
    the plane into phases instead)."""
    c_count, h, wd = x.shape[1], x.shape[2], x.shape[3]
    kh, kw = w.shape[1], w.shape[2]
    oh, ow = out.shape[2], out.shape[3]
    pt, pl = pads[0], pads[1]
    sy, sx = strides[0], strides[1]
    dy, dx = dilations[0], dilations[1]
    # Row pitch: the padded image's width, at least sx * ow + the kernel's reach, a multiple of sx.
    wp = max(wd + pl, sx * ow + (kw - 1) * dx)
    wp = (wp + sx - 1) // sx * sx
    wq = sy * wp // sx
    # Outputs computed per plane, rounded up to a multiple of 16 (whole vectors; no scalar remainder loop).
    m = (oh * wq + 15) // 16 * 16
    # Room for the image (and its top padding) and for the largest index read.
    size = max((h + pt) * wp, sx * (m - 1) + (kh - 1) * dy * wp + (kw - 1) * dx + 1)
    buf = np.zeros(size, x.dtype)
    acc = np.empty(m, x.dtype)
    for plane in range(start, stop):
        n = plane // c_count
        c = plane - n * c_count
        src = x[n, c]
        for r in range(h):
            line = buf[(r + pt) * wp + pl : (r + pt) * wp + pl + wd]
            srow = src[r]
            for col in range(wd):
                line[col] = srow[col]
        acc[:] = 0
        # A tile of outputs at a time through every tap: its sums stay in the L1 cache (a 112 x 112 plane's do not).
        for q0 in range(0, m, _DW_TILE):
            q1 = min(m, q0 + _DW_TILE)
            part = acc[q0:q1]
            for i in range(kh):
                if sx == 1:
                    # The taps of a kernel row up to five at a time (one pass over the sums for a 3 x 3 or 5 x 5 row;
                    # measured faster on small planes than :func:`_add_tap_list`'s passes of nine).
                    j = 0
                    while j < kw:
                        g = _group(kw - j)
                        o = i * dy * wp + j * dx + q0
                        wr = w[c, i]
                        w0, w1, w2 = wr[j], wr[min(j + 1, kw - 1)], wr[min(j + 2, kw - 1)]
                        w3, w4 = wr[min(j + 3, kw - 1)], wr[min(j + 4, kw - 1)]
                        if dx == 1:
                            _add_dense_taps(part, buf, g, o, w0, w1, w2, w3, w4)
                        else:
                            _add_taps(part, buf, g, o, o + dx, o + 2 * dx, o + 3 * dx, o + 4 * dx, w0, w1, w2, w3, w4)
                        j += g
                    continue
                for j in range(kw):
                    wv = w[c, i, j]
                    off = i * dy * wp + j * dx + sx * q0
                    # A view per tap indexed from 0 (an index ``off + q`` would keep LLVM from vectorising).
                    taps = buf[off : off + sx * (q1 - q0 - 1) + 1 : sx]
                    for q in range(q1 - q0):
                        part[q] += wv * taps[q]
        b = bias[c]
        dst = out[n, c]
        for oy in range(oh):
            arow = acc[oy * wq : oy * wq + ow]
            drow = dst[oy]
            for ox in range(ow):
                drow[ox] = arow[ox] + b


@_njit
def _phase_geometry(
    h: int, wd: int, oh: int, ow: int, kh: int, kw: int, pt: int, pl: int, sy: int, sx: int, dy: int, dx: int
) -> tuple[int, int, int]:  # pragma: no cover - compiled
    """``(wph, m, size)`` of :func:`_to_phases`' layout: the row pitch of a phase, the outputs computed per plane
    (rounded up to a multiple of 16: whole vectors, no scalar remainder loop) and the length of one phase."""
    # The padded extents every output reads (and the image with its top and left padding).
    hp = max(h + pt, (oh - 1) * sy + (kh - 1) * dy + 1)
    wp = max(wd + pl, (ow - 1) * sx + (kw - 1) * dx + 1)
    hph = (hp + sy - 1) // sy
    wph = (wp + sx - 1) // sx
    m = (oh * wph + 15) // 16 * 16
    size = max(hph * wph, m + ((kh - 1) * dy // sy) * wph + (kw - 1) * dx // sx)
    return wph, m, size


@_njit
def _to_phases(
    src: Any, buf: Any, base: int, size: int, wph: int, pt: int, pl: int, sy: int, sx: int
) -> None:  # pragma: no cover - compiled
    """Copy the plane ``src`` ``(H, W)``, zero-padded, into the ``sy * sx`` phases of ``buf`` from ``base`` (padded
    row ``r``, column ``q`` go to phase ``(r % sy, q % sx)`` at ``(r // sy, q // sx)``, row pitch ``wph``, each
    phase ``size`` long). Only the image's places are written: the padding is what the buffer held (zeros)."""
    h, wd = src.shape[0], src.shape[1]
    for r in range(h):
        pr = r + pt
        srow = src[r]
        rbase = base + (pr // sy) * wph
        if sx == 1:
            start = (pr % sy) * size + rbase + pl
            line = buf[start : start + wd]
            for col in range(wd):
                line[col] = srow[col]
            continue
        if sx == 2:
            # Columns 2t and 2t + 1 of the image (padded columns 2t + pl and 2t + 1 + pl) go to place t + pl // 2
            # of phase pl % 2 and place t + (pl + 1) // 2 of the other: one loop reading the row in order, its
            # stride a constant (vectorised; a phase at a time with a variable stride is a scalar loop 8x slower).
            half = wd // 2
            pa = pl % 2
            ka = ((pr % sy) * 2 + pa) * size + rbase + pl // 2
            kb = ((pr % sy) * 2 + 1 - pa) * size + rbase + (pl + 1) // 2
            la = buf[ka : ka + half]
            lb = buf[kb : kb + half]
            for t in range(half):
                la[t] = srow[2 * t]
                lb[t] = srow[2 * t + 1]
            if wd % 2:
                buf[ka + half] = srow[wd - 1]
            continue
        for p in range(sx):
            # The columns of phase p: col0, col0 + sx, ... at consecutive places from (col0 + pl) // sx.
            col0 = (p - pl) % sx
            k = ((pr % sy) * sx + p) * size + rbase + (col0 + pl) // sx
            seg = srow[col0::sx]
            line = buf[k : k + seg.size]
            for col in range(seg.size):
                line[col] = seg[col]


@_njit
def _add_phase_row(
    part: Any, buf: Any, rbase: int, wr: Any, size: int, sx: int, dx: int
) -> None:  # pragma: no cover - compiled
    """``part`` += the taps ``wr`` of one kernel row, read from :func:`_to_phases`' layout, ``rbase`` the place of
    the row's first tap in phase column 0 (and of the tile's first output)."""
    kw = wr.size
    if dx == 1:
        # Column dilation 1: the taps p, p + sx, p + 2 sx ... of column phase p sit at consecutive places of that
        # phase, read as dense runs (phase by phase: another order of the same sums), up to five at a time.
        for p in range(min(sx, kw)):
            run = (kw - p + sx - 1) // sx
            last = p + (run - 1) * sx
            k = 0
            while k < run:
                g = _group(run - k)
                j = p + k * sx
                _add_dense_taps(
                    part, buf, g, rbase + p * size + k, wr[j], wr[min(j + sx, last)], wr[min(j + 2 * sx, last)],
                    wr[min(j + 3 * sx, last)], wr[min(j + 4 * sx, last)],
                )  # fmt: skip
                k += g
        return
    j = 0
    while j < kw:
        g = _group(kw - j)
        o0 = rbase + ((j * dx) % sx) * size + (j * dx) // sx
        jj = min(j + 1, kw - 1)
        o1 = rbase + ((jj * dx) % sx) * size + (jj * dx) // sx
        jj = min(j + 2, kw - 1)
        o2 = rbase + ((jj * dx) % sx) * size + (jj * dx) // sx
        jj = min(j + 3, kw - 1)
        o3 = rbase + ((jj * dx) % sx) * size + (jj * dx) // sx
        jj = min(j + 4, kw - 1)
        o4 = rbase + ((jj * dx) % sx) * size + (jj * dx) // sx
        _add_taps(
            part, buf, g, o0, o1, o2, o3, o4, wr[j], wr[min(j + 1, kw - 1)], wr[min(j + 2, kw - 1)],
            wr[min(j + 3, kw - 1)], wr[min(j + 4, kw - 1)],
        )  # fmt: skip
        j += g


@_njit
def _phase_offsets(
    planes: int, kh: int, kw: int, span: int, size: int, wph: int, sy: int, sx: int, dy: int, dx: int
) -> Any:  # pragma: no cover - compiled
    """Where tap ``(c, i, j)`` (in that order, a kernel's weights flattened) reads its first output's value in
    :func:`_to_phases`' layout of ``planes`` planes ``span`` apart: uint64 offsets for :func:`_add_tap_list`."""
    offs = np.empty(planes * kh * kw, np.uint64)
    k = 0
    for c in range(planes):
        for i in range(kh):
            row = c * span + ((i * dy) % sy) * sx * size + ((i * dy) // sy) * wph
            for j in range(kw):
                offs[k] = row + ((j * dx) % sx) * size + (j * dx) // sx
                k += 1
    return offs


@_njit
def depthwise2d_strided(
    x: Any,
    w: Any,
    bias: Any,
    out: Any,
    pads: Any,
    strides: Any,
    dilations: Any,
    start: int,
    stop: int,
) -> None:  # pragma: no cover - compiled
    """:func:`depthwise2d` with strides (any; measured faster than it where a stride exceeds 1).

    Each plane is copied, zero-padded, into ``sy * sx`` phase buffers (:func:`_to_phases`), so that tap ``(i, j)``
    reads, for output ``(oy, ox)``, element ``(oy + i * dy // sy) * wph + ox + j * dx // sx`` of phase ``(i * dy %
    sy, j * dx % sx)``: one contiguous loop over ``q = oy * wph + ox`` per tap, long and branch-free (it
    vectorises), computing the columns ``ow..wph`` of each output row too and a few more after the last
    (discarded). Each phase buffer holds every index read, so no index depends on data and none leaves a buffer."""
    c_count, h, wd = x.shape[1], x.shape[2], x.shape[3]
    kh, kw = w.shape[1], w.shape[2]
    oh, ow = out.shape[2], out.shape[3]
    pt, pl = pads[0], pads[1]
    sy, sx = strides[0], strides[1]
    dy, dx = dilations[0], dilations[1]
    wph, m, size = _phase_geometry(h, wd, oh, ow, kh, kw, pt, pl, sy, sx, dy, dx)
    # One flat buffer, phase after phase: 1-D slices of it are contiguous to numba (2-D ones are not).
    buf = np.zeros(sy * sx * size, x.dtype)
    acc = np.empty(m, x.dtype)
    for plane in range(start, stop):
        n = plane // c_count
        c = plane - n * c_count
        _to_phases(x[n, c], buf, 0, size, wph, pt, pl, sy, sx)
        acc[:] = 0
        for q0 in range(0, m, _DW_TILE):
            q1 = min(m, q0 + _DW_TILE)
            part = acc[q0:q1]
            for i in range(kh):
                rbase = ((i * dy) % sy) * sx * size + ((i * dy) // sy) * wph + q0
                _add_phase_row(part, buf, rbase, w[c, i], size, sx, dx)
        b = bias[c]
        dst = out[n, c]
        for oy in range(oh):
            arow = acc[oy * wph : oy * wph + ow]
            drow = dst[oy]
            for ox in range(ow):
                drow[ox] = arow[ox] + b


@_njit
def conv2d_planar(
    x: Any,
    w: Any,
    bias: Any,
    out: Any,
    pads: Any,
    strides: Any,
    dilations: Any,
    start: int,
    stop: int,
) -> None:  # pragma: no cover - compiled
    """A 2-D convolution of few input channels per group (an RGB stem's three, a grouped layer's sixteen) plane by
    plane: ``out[n, m] = sum over the group's input channels c and taps (i, j) of w[m, c, i, j] * x[n, c] shifted``,
    then ``+ bias[m]``, for the units ``start..stop`` of ``(N * groups)``. ``x`` ``(N, C, H, W)``, ``w`` ``(M, C /
    groups, kh, kw)``, ``bias`` ``(M,)`` (zeros when the node has none), ``out`` ``(N, M, oh, ow)``, all C-contiguous
    of one type; pads, strides and dilations as :func:`depthwise2d`'s.

    A unit's input planes are copied once into :func:`_to_phases`' layout; each of its output planes then sums
    every tap of every input plane with the tap's weight a scalar over long contiguous runs (vectorised), a tile
    of :data:`_DW_TILE` outputs at a time in the L1 cache, as :func:`depthwise2d_strided` does for one input plane.
    im2col and BLAS multiply small matrices there (sixteen rows), where BLAS packs more than it computes."""
    c_count, h, wd = x.shape[1], x.shape[2], x.shape[3]
    m_count, cg, kh, kw = w.shape[0], w.shape[1], w.shape[2], w.shape[3]
    oh, ow = out.shape[2], out.shape[3]
    groups = c_count // cg
    mg = m_count // groups
    pt, pl = pads[0], pads[1]
    sy, sx = strides[0], strides[1]
    dy, dx = dilations[0], dilations[1]
    wph, m, size = _phase_geometry(h, wd, oh, ow, kh, kw, pt, pl, sy, sx, dy, dx)
    span = sy * sx * size
    buf = np.zeros(cg * span, x.dtype)
    acc = np.empty(m, x.dtype)
    offs = _phase_offsets(cg, kh, kw, span, size, wph, sy, sx, dy, dx)
    for unit in range(start, stop):
        n = unit // groups
        g = unit - n * groups
        for c in range(cg):
            _to_phases(x[n, g * cg + c], buf, c * span, size, wph, pt, pl, sy, sx)
        for k in range(mg):
            mo = g * mg + k
            wts = w[mo].reshape(-1)
            acc[:] = 0
            for q0 in range(0, m, _DW_TILE):
                _add_tap_list(acc[q0 : min(m, q0 + _DW_TILE)], buf, q0, offs, wts)
            b = bias[mo]
            dst = out[n, mo]
            for oy in range(oh):
                arow = acc[oy * wph : oy * wph + ow]
                drow = dst[oy]
                for ox in range(ow):
                    drow[ox] = arow[ox] + b


@_njit
def box_mean2d(
    x: Any,
    kh: int,
    kw: int,
    pt: int,
    pl: int,
    w: int,
    plane: int,
    hmask: Any,
    vmask: Any,
    divt: Any,
    hs: Any,
    out: Any,
    start: int,
    stop: int,
) -> None:  # pragma: no cover - compiled
    """2-D AveragePool with stride 1 and dilation 1 whose output has the input's extents (``pt + pb = kh - 1``,
    ``pl + pr = kw - 1``), on the flattened planes: for the planes ``start..stop`` of ``x`` (``plane = h * w``
    values each, rows of ``w``), ``out[q] = (sum over i < kh, j < kw of x[q + (i - pt) * w + j - pl], the taps
    outside the plane left out) / divt[q % L]``.

    Separable, ``per = L // plane`` planes at a time (``L = len(divt)``): the ``kw``-sums along the rows into
    ``hs`` as one long loop per tap, then the ``kh``-sums down the columns as one long loop per tap, then the
    division; every loop vectorised and long however narrow the image (a loop per row of a 7 x 7 plane would not
    be), no padded copy. A tap is taken where ``hmask[j, t]`` (its column inside the row) and ``vmask[i, t]`` (its
    row inside the plane) say, ``t`` the place in the block: a select, so a value of another row or plane (an
    infinity, a NaN) never enters. Each tap's loop covers only the places whose source index is inside ``x`` (or
    the block's row sums), so no index leaves the arrays."""
    n = x.size
    per = divt.size // plane
    zero = np.zeros(1, x.dtype)[0]
    for p0 in range(start, stop, per):
        base = p0 * plane
        length = (min(stop, p0 + per) - p0) * plane
        h_ = hs[0:length]
        for t in range(length):
            h_[t] = zero
        for j in range(kw):
            off = j - pl
            lo = max(0, -(base + off))
            hi = min(length, n - base - off)
            if hi <= lo:
                continue
            src = x[base + lo + off : base + hi + off]
            m = hmask[j, lo:hi]
            dst = hs[lo:hi]
            for t in range(hi - lo):
                dst[t] += src[t] if m[t] else zero
        a = out[base : base + length]
        for t in range(length):
            a[t] = zero
        for i in range(kh):
            off = (i - pt) * w
            lo = max(0, -off)
            hi = min(length, length - off)
            if hi <= lo:
                continue
            src = hs[lo + off : hi + off]
            m = vmask[i, lo:hi]
            dst = out[base + lo : base + hi]
            for t in range(hi - lo):
                dst[t] += src[t] if m[t] else zero
        d = divt[0:length]
        for t in range(length):
            a[t] = a[t] / d[t]


@_njit
def row_means(x: Any, out: Any, n: int, zero: Any) -> None:  # pragma: no cover - compiled
    """``out[r] = (0 + pairwise sum of x[r * n : (r + 1) * n]) / n`` for every row of the flat ``x`` (``out.size``
    rows of ``n`` values, one type; the caller keeps ``n`` where numpy's pairwise sum is one leaf or two: ``n <=
    128``, or its halves ``n2 = n // 2 - (n // 2) % 8`` and ``n - n2`` both at most 128). numpy's ``mean`` over the
    trailing axes of a contiguous array bit for bit: its reduction adds the row's pairwise sum to the identity 0 and
    divides by the count (a float32 quotient rounds the same from float32 as from float64). GlobalAveragePool's
    short rows (7 x 7, 14 x 14) without numpy's per-row reduction machinery."""
    d = zero + n
    for r in range(out.size):
        lo = r * n
        if n <= 128:
            s = _pairwise_leaf(x, lo, n, zero)
        else:
            n2 = n // 2
            n2 -= n2 % 8
            s = _pairwise_leaf(x, lo, n2, zero) + _pairwise_leaf(x, lo + n2, n - n2, zero)
        out[r] = (zero + s) / d


@_njit
def add_row_bias_relu(x: Any, bias: Any, zero: Any, start: int, stop: int) -> None:  # pragma: no cover - compiled
    """``x[r] = maximum(x[r] + bias[r % len(bias)], 0)`` for the rows ``start..stop`` of ``x`` ``(rows, inner)`` in
    place (a Conv's planes, its bias, then its Relu): ``_jit.add_row_bias`` then ``_jit.relu_inplace`` in one pass,
    the same values bit for bit (the sum rounded in the element type, then numpy's maximum)."""
    nb = bias.size
    for r in range(start, stop):
        xr = x[r]
        b = bias[r % nb]
        for i in range(xr.size):
            v = xr[i] + b
            xr[i] = zero if v <= zero else v


@_njit
def add_row_bias_clip(x: Any, bias: Any, lo: Any, hi: Any, start: int, stop: int) -> None:  # pragma: no cover
    """``x[r] = clip(x[r] + bias[r % len(bias)], lo, hi)`` for the rows ``start..stop`` in place (a Conv's bias,
    then its ReLU6): ``_jit.add_row_bias`` then ``_jit.clip_inplace`` in one pass, the same values bit for bit."""
    nb = bias.size
    for r in range(start, stop):
        xr = x[r]
        b = bias[r % nb]
        for i in range(xr.size):
            v = xr[i] + b
            t = lo if lo > v else v
            xr[i] = hi if hi < t else t


# A Conv's bias and activation in place (ConvActivation on the Conv's fresh output). Each is ``_jit``'s loop of the
# same name without ``_inplace`` with ``out`` being ``x``, the same values; a loop of its own because LLVM checks
# whether two arrays overlap before taking the vector loop, and for the same array twice takes the scalar one
# (measured: SiLU 17x, GELU 5x, HardSwish 7x slower than into another array).


@_njit_fma
def swish32_inplace(x: Any, alpha: Any, bias: Any, start: int, stop: int) -> None:  # pragma: no cover - compiled
    """``_jit.swish32`` of ``x`` into ``x`` (rows ``start..stop``; ``bias`` empty: no addition)."""
    nb = bias.size
    for row in range(start, stop):
        xr = x[row]
        if nb:
            b = bias[row % nb]
            for t in range(xr.size):
                xr[t] = _swish1(xr[t] + b, alpha)
        else:
            for t in range(xr.size):
                xr[t] = _swish1(xr[t], alpha)


@_njit
def gelu32_rows_inplace(x: Any, bias: Any, scale: Any, start: int, stop: int) -> None:  # pragma: no cover
    """``_jit.gelu32_rows`` of ``x`` into ``x``."""
    nb = bias.size
    for r in range(start, stop):
        xr = x[r]
        b = bias[r % nb]
        for i in range(xr.size):
            xr[i] = _gelu_of(xr[i] + b, scale)


@_njit
def hard_swish_rows_inplace(
    x: Any, bias: Any, sixth: Any, half: Any, start: int, stop: int
) -> None:  # pragma: no cover - compiled
    """``_jit.hard_swish_rows`` of ``x`` into ``x``."""
    nb = bias.size
    for r in range(start, stop):
        xr = x[r]
        b = bias[r % nb]
        for i in range(xr.size):
            xr[i] = _hard_swish_of(xr[i] + b, sixth, half)
