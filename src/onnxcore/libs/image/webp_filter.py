"""The VP8 loop filter (RFC 6386 section 15) over a whole reconstructed frame (private).

Section 15.1 fixes the order: macroblocks in raster order, and in each one the left edge, the inner
vertical edges, the top edge, then the inner horizontal edges; pixels touched by two edges see them in
that order. A macroblock's filters read and write only rows [16y-4, 16y+15] x columns [16x, 16x+15] and
rows [16y, 16y+15] x columns [16x-4, 16x+15], so two macroblocks with the same x + 2y never touch a
common pixel, and every overlapping pair is ordered the same way by x + 2y as by the raster scan. The
macroblocks of one such anti-diagonal are therefore filtered together, edge by edge, as one numpy
batch; the chroma planes are laid side by side so that U and V blocks form a single batch.
"""

from __future__ import annotations

import numpy as np

__all__ = ["loop_filter"]

_AR8 = np.arange(-4, 4)


def _c(v: np.ndarray) -> np.ndarray:
    # The RFC's c(): clamp to a signed 8-bit value.
    return np.minimum(np.maximum(v, -128), 127)


def _gather(
    plane: np.ndarray, r0: np.ndarray, c0: np.ndarray, length: int, vertical: bool, k: int
) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """Segments across one edge of each block: index arrays and values shaped (8, n, length)."""
    along = np.arange(length)
    if vertical:  # edge between columns c0+k-1 and c0+k
        rows = (r0[:, None] + along)[:, :, None]
        cols = (c0[:, None] + k + _AR8)[:, None, :]
        idx = (np.broadcast_to(rows, (len(r0), length, 8)), np.broadcast_to(cols, (len(r0), length, 8)))
        seg = plane[idx].astype(np.int32).transpose(2, 0, 1)
        return idx, seg
    rows = (r0[:, None] + k + _AR8)[:, :, None]
    cols = (c0[:, None] + along)[:, None, :]
    idx = (np.broadcast_to(rows, (len(r0), 8, length)), np.broadcast_to(cols, (len(r0), 8, length)))
    seg = plane[idx].astype(np.int32).transpose(1, 0, 2)
    return idx, seg


def _scatter(plane: np.ndarray, idx: tuple[np.ndarray, np.ndarray], seg: np.ndarray, vertical: bool) -> None:
    plane[idx] = seg.transpose(1, 2, 0) if vertical else seg.transpose(1, 0, 2)


def _filter_segments(seg: np.ndarray, lim: np.ndarray, ilim: np.ndarray, hev_t: np.ndarray, kind: int) -> None:
    """Filter (8, n, L) segments in place. kind 0: simple (15.2), 1: macroblock edge, 2: sub-block edge (15.3).

    lim, ilim, hev_t are (n, 1): the edge limit, interior limit and high-edge-variance threshold.
    """
    p3, p2, p1, p0, q0, q1, q2, q3 = seg
    mask = (np.abs(p0 - q0) * 2 + (np.abs(p1 - q1) >> 1)) <= lim
    if kind:
        for a, b in ((p3, p2), (p2, p1), (p1, p0), (q1, q0), (q2, q1), (q3, q2)):
            mask &= np.abs(a - b) <= ilim
    if not mask.any():
        return
    ps1, ps0, qs0, qs1 = p1 - 128, p0 - 128, q0 - 128, q1 - 128
    outer = _c(ps1 - qs1)
    if kind == 0:
        a = _c(outer + 3 * (qs0 - ps0))
        seg[3] = np.where(mask, _c(ps0 + (_c(a + 3) >> 3)) + 128, p0)
        seg[4] = np.where(mask, _c(qs0 - (_c(a + 4) >> 3)) + 128, q0)
        return
    hev = (np.abs(p1 - p0) > hev_t) | (np.abs(q1 - q0) > hev_t)
    if kind == 1:
        w = _c(outer + 3 * (qs0 - ps0))
        f1 = _c(w + 4) >> 3
        f2 = _c(w + 3) >> 3
        a27 = _c((27 * w + 63) >> 7)
        a18 = _c((18 * w + 63) >> 7)
        a9 = _c((9 * w + 63) >> 7)
        m_hev = mask & hev
        m_full = mask & ~hev
        ps2, qs2 = p2 - 128, q2 - 128
        seg[3] = np.where(m_hev, _c(ps0 + f2) + 128, np.where(m_full, _c(ps0 + a27) + 128, p0))
        seg[4] = np.where(m_hev, _c(qs0 - f1) + 128, np.where(m_full, _c(qs0 - a27) + 128, q0))
        seg[2] = np.where(m_full, _c(ps1 + a18) + 128, p1)
        seg[5] = np.where(m_full, _c(qs1 - a18) + 128, q1)
        seg[1] = np.where(m_full, _c(ps2 + a9) + 128, p2)
        seg[6] = np.where(m_full, _c(qs2 - a9) + 128, q2)
        return
    a = _c(np.where(hev, outer, 0) + 3 * (qs0 - ps0))
    f1 = _c(a + 4) >> 3
    f2 = _c(a + 3) >> 3
    a2 = (f1 + 1) >> 1
    m_soft = mask & ~hev
    seg[3] = np.where(mask, _c(ps0 + f2) + 128, p0)
    seg[4] = np.where(mask, _c(qs0 - f1) + 128, q0)
    seg[2] = np.where(m_soft, _c(ps1 + a2) + 128, p1)
    seg[5] = np.where(m_soft, _c(qs1 - a2) + 128, q1)


def _edges(
    plane: np.ndarray,
    r0: np.ndarray,
    c0: np.ndarray,
    size: int,
    vertical: bool,
    offsets: tuple[int, ...],
    params: tuple[np.ndarray, np.ndarray, np.ndarray],
    kind: int,
) -> None:
    if len(r0) == 0:
        return
    lim, ilim, hev_t = (p[:, None] for p in params)
    for k in offsets:
        idx, seg = _gather(plane, r0, c0, size, vertical, k)
        _filter_segments(seg, lim, ilim, hev_t, kind)
        _scatter(plane, idx, seg, vertical)


def loop_filter(
    y: np.ndarray,
    uv: np.ndarray | None,
    limit: np.ndarray,
    ilimit: np.ndarray,
    hev_t: np.ndarray,
    inner: np.ndarray,
) -> None:
    """Filter the planes in place.

    Args:
        y: int16 luma plane (16 mbh, 16 mbw).
        uv: int16 chroma planes side by side (8 mbh, 16 mbw): U in the left half, V in the right; None
            for the simple filter, which leaves chroma alone.
        limit: (mbh, mbw) sub-block edge limit 2 * level + interior limit; 0 for an unfiltered macroblock
            (the macroblock edge limit is 4 more).
        ilimit: (mbh, mbw) interior limit.
        hev_t: (mbh, mbw) high edge variance threshold.
        inner: (mbh, mbw) bool, whether the inner edges are filtered.
    """
    mbh, mbw = limit.shape
    simple = uv is None
    half = 8 * mbw
    for t in range(mbw + 2 * mbh - 2):
        ys = np.arange(max(0, (t - mbw + 2) // 2), min(mbh - 1, t // 2) + 1)
        xs = t - 2 * ys
        keep = (xs >= 0) & (xs < mbw)
        ys, xs = ys[keep], xs[keep]
        lim = limit[ys, xs]
        on = lim > 0
        ys, xs, lim = ys[on], xs[on], lim[on]
        if len(ys) == 0:
            continue
        il = ilimit[ys, xs]
        ht = hev_t[ys, xs]
        inn = inner[ys, xs]
        for vertical, first in ((True, xs > 0), (False, ys > 0)):
            # The macroblock edge, then the inner edges across the same direction.
            for sel, lim_e, kind_mb, offs_y, offs_c in (
                (first, lim + 4, 1, (0,), (0,)),
                (inn, lim, 2, (4, 8, 12), (4,)),
            ):
                yy, xx = ys[sel], xs[sel]
                prm = (lim_e[sel], il[sel], ht[sel])
                _edges(y, 16 * yy, 16 * xx, 16, vertical, offs_y, prm, 0 if simple else kind_mb)
                if uv is not None and len(yy):
                    r0 = np.concatenate([8 * yy, 8 * yy])
                    c0 = np.concatenate([8 * xx, half + 8 * xx])
                    prm2 = tuple(np.concatenate([p, p]) for p in prm)
                    _edges(uv, r0, c0, 8, vertical, offs_c, prm2, kind_mb)  # type: ignore[arg-type]
