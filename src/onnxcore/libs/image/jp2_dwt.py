"""JPEG 2000 inverse wavelet and component transforms (private): T.800 Annex F and Annex G.

The 1-D synthesis (1D_SR, F.3.6 - F.3.8) runs on whole rows or columns at once with numpy: the
signal is first given its periodic symmetric extension (F.3.7, which is numpy's ``reflect`` padding,
repeated for short signals), then the lifting steps run on the even and odd positions of the absolute
(tile-component) coordinates, so odd origins come out right.
"""

from __future__ import annotations

import numpy as np

__all__ = ["idwt_level", "inverse_ict", "inverse_rct"]

# Lifting parameters of the irreversible 9-7 filter, T.800 Table F.4, in single precision: the
# 9-7 path runs in float32 like OpenJPEG, whose results we reproduce.
_ALPHA = np.float32(-1.586134342)
_BETA = np.float32(-0.052980118)
_GAMMA = np.float32(0.882911075)
_DELTA = np.float32(0.443506852)
_K = np.float32(1.230174105)
# High-pass scaling 2/K instead of the 1/K of F-7: the high-pass sub-bands then come in at half the
# step size of E-3 per high-pass direction (R_b without the sub-band gain, see the dequantisation),
# which is the same product, OpenJPEG's convention and so its rounding.
_TWO_INV_K = np.float32(1.625732422)


def _neighbours(m: int, first: int) -> tuple[slice, slice, slice]:
    # Positions of one parity that have both neighbours inside the extended signal, and those neighbours.
    start = first if first >= 1 else first + 2
    cnt = len(range(start, m - 1, 2))
    return (
        slice(start, start + 2 * cnt, 2),
        slice(start - 1, start - 1 + 2 * cnt, 2),
        slice(start + 1, start + 1 + 2 * cnt, 2),
    )


def _sr_1d(y: np.ndarray, i0: int, reversible: bool) -> np.ndarray:
    """1D_SR along axis 0 of ``y`` (interleaved coefficients whose first sample has coordinate i0)."""
    n = y.shape[0]
    if n == 1:
        # F.3.7: a lone sample is low-pass if its coordinate is even, else a doubled high-pass one.
        if i0 % 2 == 0 or not reversible:
            return y  # (with the 2/K convention the halving is already in the step size)
        return np.sign(y) * (np.abs(y) // 2)
    pad = 2 if reversible else 4
    widths = [(pad, pad)] + [(0, 0)] * (y.ndim - 1)
    e = np.pad(y, widths, mode="reflect")
    # Index j of ``e`` holds coordinate i0 - pad + j; ``ev``/``od`` are the first even/odd indices.
    ev = (pad - i0) % 2
    od = 1 - ev
    m = e.shape[0]
    if reversible:
        # F-5 (the 5-3 reversible lifting): even samples first, then odd ones from the updated evens.
        mid, left, right = _neighbours(m, ev)
        e[mid] -= (e[left] + e[right] + 2) >> 2
        mid, left, right = _neighbours(m, od)
        e[mid] += (e[left] + e[right]) >> 1
    else:
        # F-7 (the 9-7 irreversible lifting): scaling, then four lifting steps.
        e = e.astype(np.float32)
        e[ev::2] *= _K
        e[od::2] *= _TWO_INV_K
        for step, first in ((_DELTA, ev), (_GAMMA, od), (_BETA, ev), (_ALPHA, od)):
            mid, left, right = _neighbours(m, first)
            e[mid] -= step * (e[left] + e[right])
    return e[pad : pad + n]


def idwt_level(
    ll: np.ndarray,
    hl: np.ndarray,
    lh: np.ndarray,
    hh: np.ndarray,
    x0: int,
    y0: int,
    x1: int,
    y1: int,
    reversible: bool,
) -> np.ndarray:
    """One level of 2D_SR (T.800 F.3.2): interleave the four sub-bands, then filter rows, then columns.

    Args:
        ll: Low-pass sub-band (the previous resolution).
        hl: Horizontally high-pass sub-band.
        lh: Vertically high-pass sub-band.
        hh: High-pass sub-band in both directions.
        x0: Resolution bounds on its own grid (trx0, try0, trx1, try1 of B-14).
        y0: See x0.
        x1: See x0.
        y1: See x0.
        reversible: 5-3 integer filter (True) or 9-7 (False).

    Returns:
        The resolution's samples, shape (y1 - y0, x1 - x0).
    """
    h, w = y1 - y0, x1 - x0
    a = np.zeros((h, w), dtype=np.int64 if reversible else np.float32)
    if h == 0 or w == 0:
        return a
    lx, ly = x0 & 1, y0 & 1
    a[ly::2, lx::2] = ll
    a[ly::2, 1 - lx :: 2] = hl
    a[1 - ly :: 2, lx::2] = lh
    a[1 - ly :: 2, 1 - lx :: 2] = hh
    a = _sr_1d(a.T, x0, reversible).T
    return _sr_1d(a, y0, reversible)


def inverse_rct(y0: np.ndarray, y1: np.ndarray, y2: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inverse reversible component transform, T.800 G.2 (G-6)."""
    g = y0 - ((y2 + y1) >> 2)
    return y2 + g, g, y1 + g


def inverse_ict(y0: np.ndarray, y1: np.ndarray, y2: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inverse irreversible component transform, T.800 G.3 (G-9), in float32 (see the 9-7 note)."""
    f = np.float32
    return y0 + y2 * f(1.402), y0 - y1 * f(0.34413) - y2 * f(0.71414), y0 + y1 * f(1.772)
