"""Compiled loops of the transformer operators of opset 23 (numba ``@njit``): Attention's softmax and
RotaryEmbedding. Split from :mod:`onnxcore.kernels.accel._jit` by family (reach them as ``accel.jit_tx().NAME``);
numba itself is imported by ``_jit`` alone, whose decorator and row reductions these use. Every function works on
C-contiguous float32 or float64 arrays its caller made, and numba does not check bounds: the shapes are the
caller's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.kernels.accel._jit import _njit, _row_max, _row_sum

__all__ = ["rotary_heads", "softmax_divide", "softmax_shift"]


@_njit
def softmax_shift(x: Any) -> None:  # pragma: no cover - compiled
    """Each row of ``x`` (2-D) minus its maximum, in place: the first step of the Attention kernel's softmax
    (``kernels/attention._softmax_inplace``). A row whose maximum is -inf is shifted by 0 (``exp`` then gives
    zeros, never NaN); a row holding a NaN becomes NaN, as ``x - max(x)`` does in numpy."""
    rows, n = x.shape
    for r in range(rows):
        row = x[r]
        nans = 0
        for j in range(n):
            nans += row[j] != row[j]
        if nans:
            for j in range(n):
                row[j] = np.nan
            continue
        m = _row_max(row)
        if m == -np.inf:
            continue
        for j in range(n):
            row[j] = row[j] - m


@_njit
def softmax_divide(e: Any) -> int:  # pragma: no cover - compiled
    """Each row of ``e`` (2-D: the exponentials of shifted scores) divided by its sum, in place, a sum of 0 taken
    as 1 (a row that attends nothing stays zeros); returns how many rows had a NaN sum."""
    rows, n = e.shape
    bad = 0
    one = e.dtype.type(1)
    for r in range(rows):
        row = e[r]
        total = _row_sum(row)
        if total == 0:
            total = one
        elif total != total:
            bad += 1
        for j in range(n):
            row[j] = row[j] / total
    return bad


@_njit
def rotary_heads(
    x: Any, cos: Any, sin: Any, out: Any, seq_axis: int, half: int, rot: int, interleaved: bool
) -> None:  # pragma: no cover - compiled
    """RotaryEmbedding-23 on ``x`` (4-D ``(B, H, S, D)`` when ``seq_axis`` is 2, ``(B, S, H, D)`` when 1) into
    ``out``, with ``cos`` and ``sin`` ``(Bc, Sc, half)`` (``Bc`` 1 or B, ``Sc`` 1 or S: an extent of 1 broadcasts):
    ``cos * x1 - sin * x2`` and ``sin * x1 + cos * x2`` per pair, each product rounded to the element type, then
    their difference or sum (no fused multiply-add): ``kernels/attention.rotary_rotate``'s values bit for bit.
    Features from ``rot`` on are copied."""
    nb, n1, n2, d = x.shape
    per_batch = cos.shape[0] > 1
    per_pos = cos.shape[1] > 1
    for b in range(nb):
        bi = b if per_batch else 0
        for i1 in range(n1):
            for i2 in range(n2):
                s = i1 if seq_axis == 1 else i2
                si = s if per_pos else 0
                xr = x[b, i1, i2]
                orow = out[b, i1, i2]
                c = cos[bi, si]
                sn = sin[bi, si]
                if interleaved:
                    for i in range(half):
                        x1 = xr[2 * i]
                        x2 = xr[2 * i + 1]
                        orow[2 * i] = c[i] * x1 - sn[i] * x2
                        orow[2 * i + 1] = sn[i] * x1 + c[i] * x2
                else:
                    for i in range(half):
                        x1 = xr[i]
                        x2 = xr[i + half]
                        orow[i] = c[i] * x1 - sn[i] * x2
                        orow[i + half] = sn[i] * x1 + c[i] * x2
                for i in range(rot, d):
                    orow[i] = xr[i]
