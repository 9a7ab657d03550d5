"""Compiled loops of the transformer operators of opset 23 (numba ``@njit``): Attention's softmax, a small
Attention as one loop, and RotaryEmbedding. Split from :mod:`onnxcore.kernels.accel._jit` by family (reach them as
``accel.jit_tx().NAME``); numba itself is imported by ``_jit`` alone, whose decorators and row reductions these use.
Every function works on float32 or float64 arrays its caller made (C-contiguous unless it says otherwise), and
numba does not check bounds: the shapes are the caller's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.kernels.accel._jit import _njit, _njit_sum, _row_max, _row_sum

__all__ = ["attention_small", "rotary_heads", "softmax_divide", "softmax_shift"]


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


@_njit_sum  # (reassociated sums: the dot products vectorise)
def attention_small(
    q: Any, k: Any, v: Any, bias: Any, kind: int, scale: Any, out: Any
) -> bool:  # pragma: no cover - compiled
    """``softmax(q * scale @ k^T + bias) @ v`` into ``out`` ``(B, Hq, Sq, Dv)``, one query row at a time: the
    Attention kernel's computation (``kernels/attention._attention``) for the few rows of a decoder step, where
    its dozen numpy calls cost more than the arithmetic. ``q`` ``(B, Hq, Sq, D)``, ``k`` ``(B, Hkv, T, D)``, ``v``
    ``(B, Hkv, T, Dv)`` in one float type, any strides; query head ``h`` reads key/value head ``h // (Hq / Hkv)``.
    ``bias`` is 4-D, each extent 1 (broadcast) or the full one; ``kind`` says what it is: 0 none (not read), 1 a
    float bias added to the scores, 2 a bool mask (False: the key is not attended, as a bias of -inf). Each value
    is rounded to the type as numpy's steps round it (the scaled query, the score, the biased score, the shifted
    exponential, the probability); the dot products and sums add in another order than BLAS and numpy, within the
    type's rounding.

    Returns False, having written only some rows, when a score is NaN or +inf: the caller then runs the numpy
    path, whose rules for such rows (NaN rows, a row that attends nothing) this loop does not repeat.
    """
    nb, hq, sq, d = q.shape
    hkv = k.shape[1]
    t_len = k.shape[2]
    dv = v.shape[3]
    r = hq // hkv
    zero = scale - scale
    qs = np.empty(d, q.dtype)
    s = np.empty(t_len, q.dtype)
    acc = np.empty(dv, q.dtype)
    bb1, bh1, bi1 = bias.shape[0] > 1, bias.shape[1] > 1, bias.shape[2] > 1
    for b in range(nb):
        for h in range(hq):
            kg = k[b, h // r]  # (rows of one head, sliced once: the inner loops index 1-D rows from 0 up)
            vg = v[b, h // r]
            for i in range(sq):
                qr = q[b, h, i]
                for j in range(d):
                    qs[j] = qr[j] * scale
                # One pass per step, each a plain loop that vectorises (a branch or a call inside would not).
                for t in range(t_len):
                    kr = kg[t]
                    a = zero
                    for j in range(d):
                        a += qs[j] * kr[j]
                    s[t] = a
                brow = bias[b if bb1 else 0, h if bh1 else 0, i if bi1 else 0]
                if kind == 1:
                    for t in range(t_len):
                        s[t] = s[t] + brow[t]
                elif kind == 2:
                    for t in range(t_len):
                        s[t] = s[t] if brow[t] else s[t] - np.inf  # (a NaN stays NaN)
                m = -np.inf
                bad = 0
                for t in range(t_len):
                    a = s[t]
                    bad += (a != a) | (a == np.inf)
                    m = a if a > m else m
                if bad:
                    return False
                if m == -np.inf:
                    m = zero  # a row that attends nothing: exp gives zeros, as the numpy path's shift by 0
                for t in range(t_len):
                    s[t] = np.exp(s[t] - m)
                total = zero
                for t in range(t_len):
                    total += s[t]
                if total == zero:
                    total = zero + 1
                for t in range(t_len):
                    s[t] = s[t] / total
                for j in range(dv):
                    acc[j] = zero
                for t in range(t_len):
                    p = s[t]
                    vr = vg[t]
                    for j in range(dv):
                        acc[j] += p * vr[j]
                orow = out[b, h, i]
                for j in range(dv):
                    orow[j] = acc[j]
    return True
