"""Compiled loops of the ``ai.onnx.ml`` kernels (numba ``@njit``): Scaler, Normalizer and the linear models at a
few rows, the SVM classifier's votes and pairwise coupling of probabilities (one row: a pass before numpy's exp and
one after), and TopK's choice of a few of many along rows (the nearest neighbours of the converters' k-nearest
neighbour models, one row of distances per query). Split from :mod:`onnxcore.kernels.accel._jit` by family (reach
them as ``accel.jit_ml().NAME``); numba itself is imported by ``_jit`` alone, whose decorator these use. Every
function works on contiguous arrays its caller made (float64, or the input's float type), and numba does not check
bounds: the shapes are the caller's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.kernels.accel._jit import _njit, _pairwise_leaf

__all__ = [
    "couple_rows",
    "impute_rows",
    "linear_exp_finish",
    "linear_finish",
    "linear_rows",
    "linear_scores_pass",
    "normalize_rows",
    "rbf_exponents",
    "scale_rows",
    "svc_row_couple",
    "svc_row_votes",
    "top_k_rows",
]


@_njit
def couple_rows(r: Any, iters: int, q: Any, qp: Any, out: Any) -> None:  # pragma: no cover - compiled
    """``out[n] = `` the class probabilities of row ``n`` from its pairwise ones ``r[n, i, j]`` (libsvm's
    fixed-point iteration, Wu, Lin and Weng 2004, method 2), operation for operation as
    :func:`onnxcore.kernels.ml_linear._couple_row` does on Python floats: every sum from its first term in index
    order, no fused multiply-add, so the bits are the numpy path's. ``q`` ``[k, k]`` and ``qp`` ``[k]`` are
    scratch."""
    n, k = r.shape[0], r.shape[1]
    eps = 0.005 / k
    for row in range(n):
        for t in range(k):
            for j in range(k):
                q[t, j] = -r[row, j, t] * r[row, t, j]
        for t in range(k):
            s = 0.0
            for j in range(k):
                if j != t:
                    s += r[row, j, t] * r[row, j, t]
            q[t, t] = s
        p = out[row]
        for t in range(k):
            p[t] = 1.0 / k
        for _ in range(iters):
            for i in range(k):
                s = 0.0
                for j in range(k):
                    s += q[i, j] * p[j]
                qp[i] = s
            pqp = 0.0
            for i in range(k):
                pqp += p[i] * qp[i]
            err = 0.0
            for i in range(k):
                e = abs(qp[i] - pqp)
                if e > err:
                    err = e
            if err < eps:
                break
            for t in range(k):
                qtt = q[t, t]
                diff = (-qp[t] + pqp) / qtt
                p[t] += diff
                pqp = (pqp + diff * (diff * qtt + 2 * qp[t])) / (1 + diff) / (1 + diff)
                for j in range(k):
                    qp[j] = (qp[j] + diff * q[t, j]) / (1 + diff)
                for j in range(k):
                    p[j] = p[j] / (1 + diff)


@_njit
def svc_row_votes(
    dec: Any, pa: Any, pb: Any, first: Any, second: Any, votes: Any, t: Any, u: Any
) -> int:  # pragma: no cover - compiled
    """One row's one-vs-one votes and, with ``pa``/``pb`` given (one per pair, else empty), its Platt arguments: pair
    ``p`` (classes ``first[p] < second[p]``) votes its first class when its decision ``dec[p]`` is positive (a NaN
    votes the second), the class of most votes first among equals is returned (``votes``: ``[k]`` scratch);
    ``t[p] = dec[p] * pa[p] + pb[p]`` and ``u[p] = -|t[p]|`` (each operation rounded as numpy's, no fused
    multiply-add), the argument of numpy's exp that :func:`svc_row_couple` then reads."""
    for c in range(votes.size):
        votes[c] = 0
    for p in range(dec.size):
        d = dec[p]
        if d > 0:
            votes[first[p]] += 1
        else:
            votes[second[p]] += 1
        if pa.size:
            v = d * pa[p] + pb[p]
            t[p] = v
            u[p] = -abs(v)
    best = 0
    for c in range(1, votes.size):
        if votes[c] > votes[best]:
            best = c
    return best


@_njit
def svc_row_couple(
    t: Any, e: Any, first: Any, second: Any, iters: int, r: Any, q: Any, qp: Any, out: Any
) -> None:  # pragma: no cover - compiled
    """One row's class probabilities from its Platt arguments ``t`` and ``e = exp(-|t|)`` (numpy's exp): pair ``p``'s
    probability ``1 - sigmoid(t)`` (``1 / (1 + e)`` for ``t >= 0``, else ``e / (1 + e)``) kept within ``[1e-7,
    1 - 1e-7]`` (a NaN stays, as Python's ``max``/``min`` and numpy's keep it) at ``r[0, i, j]`` and its complement at
    ``r[0, j, i]`` (``r`` ``[1, k, k]``, the diagonal 0), then :func:`couple_rows` into ``out`` ``[1, k]``: the
    one-row path's operations in its order, so the same bits."""
    k = r.shape[1]
    for i in range(k):
        for j in range(k):
            r[0, i, j] = 0.0
    lo = 1e-7
    hi = 1 - 1e-7
    for p in range(t.size):
        ep = e[p]
        sig = 1.0 / (1.0 + ep) if t[p] >= 0 else ep / (1.0 + ep)
        pr = 1.0 - sig
        if lo > pr:
            pr = lo
        if hi < pr:
            pr = hi
        r[0, first[p], second[p]] = pr
        r[0, second[p], first[p]] = 1.0 - pr
    couple_rows(r, iters, q, qp, out)


@_njit
def top_k_rows(x: Any, k: int, largest: bool, vals: Any, out: Any) -> None:  # pragma: no cover - compiled
    """``out[r]`` = the indices of the ``k`` largest (or smallest) values of row ``r`` of ``x`` (2-D, no NaN,
    ``1 <= k <=`` its length), best first and equal values by ascending index: TopK's order, the stable sort's.
    One pass per row keeping the best ``k`` in order by insertion: a value enters only when strictly better than
    the last kept (an equal value of a later index stays out), and moves before kept values strictly worse than it.
    ``vals`` ``[k]`` is scratch of ``x``'s type."""
    n, m = x.shape
    for r in range(n):
        row = x[r]
        idx = out[r]
        kept = 0
        for j in range(m):
            v = row[j]
            if kept == k:
                if largest:
                    if not v > vals[k - 1]:
                        continue
                elif not v < vals[k - 1]:
                    continue
                p = k - 1
            else:
                p = kept
                kept += 1
            if largest:
                while p > 0 and vals[p - 1] < v:
                    vals[p] = vals[p - 1]
                    idx[p] = idx[p - 1]
                    p -= 1
            else:
                while p > 0 and vals[p - 1] > v:
                    vals[p] = vals[p - 1]
                    idx[p] = idx[p - 1]
                    p -= 1
            vals[p] = v
            idx[p] = j


@_njit
def _pairwise(a: Any, lo: int, n: int) -> float:  # pragma: no cover - compiled
    """The sum of ``a[lo:lo + n]`` (float64) as numpy's reduction of a contiguous row adds it: blocks of at most 128
    values (``_jit._pairwise_leaf``), longer runs halved at a multiple of eight and the halves' sums added: the same
    bits. The halving is walked with an explicit stack (numba's on-disk cache does not load a recursive function)."""
    if n <= 128:
        return _pairwise_leaf(a, lo, n, 0.0)
    # a frame per pending range: its start, length and stage (0 new, 1 left half summed, 2 both); the sums on vals
    los = np.empty(64, np.int64)
    ns = np.empty(64, np.int64)
    stage = np.empty(64, np.int64)
    vals = np.empty(64)
    top = 0
    nv = 0
    los[0], ns[0], stage[0] = lo, n, 0
    while top >= 0:
        m = ns[top]
        if m <= 128:
            vals[nv] = _pairwise_leaf(a, los[top], m, 0.0)
            nv += 1
            top -= 1
            continue
        half = m // 2
        half -= half % 8
        if stage[top] == 0:
            stage[top] = 1
            top += 1
            los[top], ns[top], stage[top] = los[top - 1], half, 0
        elif stage[top] == 1:
            stage[top] = 2
            top += 1
            los[top], ns[top], stage[top] = los[top - 1] + half, m - half, 0
        else:
            nv -= 1
            vals[nv - 1] = vals[nv - 1] + vals[nv]
            top -= 1
    return vals[0]


@_njit
def _row_max(a: Any, n: int) -> float:  # pragma: no cover - compiled
    """``np.maximum.reduce`` of ``a[:n]`` (n >= 1): NaN when any value is NaN."""
    m = a[0]
    for i in range(1, n):
        v = a[i]
        if v != v:
            return v
        if v > m:
            m = v
    return m


@_njit
def _post_row(s: Any, k: int, post: int) -> None:  # pragma: no cover - compiled
    """The post transform of one row of ``k`` float64 scores in place: 0 NONE, 1 SOFTMAX (shift by the row's
    maximum, exp, division by the pairwise sum: numpy's ``softmax_rows`` step for step, the exp libm's), 2 LOGISTIC
    (``1 / (1 + e)`` or ``e / (1 + e)`` of ``e = exp(-|s|)``, as ``sigmoid``)."""
    if post == 1:
        m = _row_max(s, k)
        for j in range(k):
            s[j] = np.exp(s[j] - m)
        total = _pairwise(s, 0, k)
        for j in range(k):
            s[j] /= total
    elif post == 2:
        for j in range(k):
            v = s[j]
            e = np.exp(-abs(v))
            s[j] = 1.0 / (1.0 + e) if v >= 0 else e / (1.0 + e)


@_njit
def _finish_row(s: Any, t: int, b: Any, post: int, mode: int, z: Any, best: Any, r: int) -> None:  # pragma: no cover
    """Row ``r`` of a linear model from its ``t`` float64 scores ``s`` (overwritten): :func:`linear_rows` from the
    intercepts on."""
    if b.size:
        for j in range(t):
            s[j] += b[j]
    if mode == 1:
        v = s[0]
        best[r] = 1 if v > 0 else 0
        if post == 1:
            s[0] = -v
            s[1] = v
            _post_row(s, 2, 1)
            z[r, 0] = np.float32(s[0])
            z[r, 1] = np.float32(s[1])
        else:
            _post_row(s, 1, post)
            z[r, 0] = np.float32(1.0 - s[0])
            z[r, 1] = np.float32(s[0])
        return
    if best.size:
        k = 0
        m = s[0]
        if m == m:
            for j in range(1, t):
                v = s[j]
                if v != v:
                    k = j
                    break
                if v > m:
                    m = v
                    k = j
        best[r] = k
    _post_row(s, t, post)
    for j in range(t):
        z[r, j] = np.float32(s[j])


@_njit
def linear_rows(x: Any, wt: Any, b: Any, post: int, mode: int, z: Any, best: Any) -> None:  # pragma: no cover
    """LinearClassifier and LinearRegressor on a few rows: ``s = x[r] @ wt`` in float64 (``x`` ``[N, F]``
    float32 or float64, ``wt`` ``[F, T]``, every sum over the features from the first term in order; BLAS may
    add in another order: the scores agree within float64's rounding), plus ``b`` ``[T]`` unless it is empty, then
    per ``mode``: 0 the scores transformed (``post``, see :func:`_post_row`) into ``z`` ``[N, T]`` (float32) and,
    for a classifier (``best`` not empty), the index of each row's largest raw score (the first; the first NaN)
    into ``best``; 1 one score per row as a binary classifier's two columns (``z`` ``[N, 2]``: the complement
    ``1 - t`` and the transformed ``t``, or the SOFTMAX of ``[-s, s]``) and whether it is positive into ``best``."""
    n, f = x.shape
    t = wt.shape[1]
    s = np.empty(max(t, 2))
    for r in range(n):
        for j in range(t):
            s[j] = 0.0
        for i in range(f):
            xi = np.float64(x[r, i])
            for j in range(t):
                s[j] += xi * wt[i, j]
        _finish_row(s, t, b, post, mode, z, best, r)


@_njit
def linear_finish(scores: Any, b: Any, post: int, mode: int, z: Any, best: Any) -> None:  # pragma: no cover
    """:func:`linear_rows` from products already made (``scores`` ``[N, T]`` float64, BLAS's; overwritten)."""
    n, t = scores.shape
    s = np.empty(max(t, 2))
    for r in range(n):
        for j in range(t):
            s[j] = scores[r, j]
        _finish_row(s, t, b, post, mode, z, best, r)


@_njit
def _first_max(scores: Any, r: int, t: int) -> int:  # pragma: no cover - compiled
    """The index of the first largest of ``scores[r, :t]`` (t >= 1), the first NaN's when the row holds one: what
    numpy's argmax gives."""
    k = 0
    m = scores[r, 0]
    if m == m:
        for j in range(1, t):
            v = scores[r, j]
            if v != v:
                return j
            if v > m:
                m = v
                k = j
    return k


@_njit
def linear_scores_pass(
    scores: Any, b: Any, post: int, e: Any, z: Any, best: Any, binary: bool
) -> None:  # pragma: no cover - compiled
    """The first pass of a linear model on many rows (``scores`` ``[N, T]`` float64, BLAS's product): per row the
    intercepts ``b`` added (unless empty) and the first largest raw score's index (:func:`_first_max`) into
    ``best`` (unless empty); then without a transform (0) the scores rounded to float32 into ``z``, done; else the
    arguments of the transform's exp, which numpy's vectorised exp then takes, into ``e`` (``[N, T]`` float64): for
    SOFTMAX (1) the row shifted by its maximum (NaN when the row holds one), for LOGISTIC (2) ``-|s|``, ``scores``
    keeping the raw scores for :func:`linear_exp_finish`. Each value as numpy's steps (``+=``, ``argmax``,
    ``softmax_rows``/``sigmoid``, ``astype``) make it. ``binary``: one score ``s`` per row (``T`` 1) of a classifier
    of two classes, ``best`` whether it is positive, and without a transform ``z`` ``[N, 2]`` holding ``1 - s`` and
    ``s``."""
    n, t = scores.shape
    for r in range(n):
        if b.size:
            for j in range(t):
                scores[r, j] += b[j]
        if binary:
            best[r] = 1 if scores[r, 0] > 0 else 0
        elif best.size:
            best[r] = _first_max(scores, r, t)
        if post == 0:
            if binary:
                z[r, 0] = np.float32(1.0 - scores[r, 0])
                z[r, 1] = np.float32(scores[r, 0])
            else:
                for j in range(t):
                    z[r, j] = np.float32(scores[r, j])
        elif post == 1:
            m = scores[r, 0]
            for j in range(1, t):
                v = scores[r, j]
                if v != v:
                    m = v
                    break
                if v > m:
                    m = v
            for j in range(t):
                e[r, j] = scores[r, j] - m
        else:
            for j in range(t):
                e[r, j] = -abs(scores[r, j])


@_njit
def linear_exp_finish(scores: Any, e: Any, post: int, z: Any, binary: bool) -> None:  # pragma: no cover - compiled
    """The passes after the exp of :func:`linear_scores_pass` (``e`` holding the exponentials): SOFTMAX (1) each row
    divided by its sum in numpy's order (``_pairwise``), LOGISTIC (2) ``1 / (1 + e)`` where the raw score is at
    least 0, else ``e / (1 + e)``; rounded to float32 into ``z``. ``binary`` (LOGISTIC of one score per row): ``z``
    ``[N, 2]`` holding ``1 - p`` and ``p``."""
    n, t = e.shape
    for r in range(n):
        if binary:
            v = e[r, 0]
            p = 1.0 / (1.0 + v) if scores[r, 0] >= 0 else v / (1.0 + v)
            z[r, 0] = np.float32(1.0 - p)
            z[r, 1] = np.float32(p)
        elif post == 1:
            if t < 8:  # (numpy adds fewer than eight values in order: the sum inline, no call per row)
                total = e[r, 0]
                for j in range(1, t):
                    total += e[r, j]
            else:
                total = _pairwise(e[r], 0, t)
            for j in range(t):
                z[r, j] = np.float32(e[r, j] / total)
        else:
            for j in range(t):
                v = e[r, j]
                z[r, j] = np.float32(1.0 / (1.0 + v) if scores[r, j] >= 0 else v / (1.0 + v))


@_njit
def normalize_rows(x: Any, norm: int, out: Any) -> None:  # pragma: no cover - compiled
    """Normalizer: each row of ``x`` (``[N, C]``, C >= 1, any real type) in float64 divided by its norm (0 MAX, 1
    L1, 2 L2: numpy's maximum, pairwise sum of the absolute values or of the squares and its square root), a row
    whose norm is zero kept, into ``out`` (float32): the numpy kernel's values bit for bit."""
    n, c = x.shape
    row = np.empty(c)
    tmp = np.empty(c)
    for r in range(n):
        for j in range(c):
            row[j] = np.float64(x[r, j])
        if norm == 0:
            d = _row_max(row, c)
        elif c < 8:
            # (fewer than eight values: numpy adds them in order from the first; inline, no call per row)
            d = abs(row[0]) if norm == 1 else row[0] * row[0]
            for j in range(1, c):
                d += abs(row[j]) if norm == 1 else row[j] * row[j]
            if norm == 2:
                d = np.sqrt(d)
        elif norm == 1:
            for j in range(c):
                tmp[j] = abs(row[j])
            d = _pairwise(tmp, 0, c)
        else:
            for j in range(c):
                tmp[j] = row[j] * row[j]
            d = np.sqrt(_pairwise(tmp, 0, c))
        if d != 0:
            for j in range(c):
                out[r, j] = np.float32(row[j] / d)
        else:
            for j in range(c):
                out[r, j] = np.float32(row[j])


@_njit
def scale_rows(x: Any, off: Any, sc: Any, out: Any) -> None:  # pragma: no cover - compiled
    """Scaler: ``(x - off) * sc`` per feature (the last axis; ``off`` and ``sc`` float32 of one value or one per
    feature) into ``out`` (float32, ``x``'s shape as ``[N, F]``), ``x`` rounded to float32 first and each step in
    float32: the numpy kernel's values bit for bit."""
    n, f = x.shape
    one_off = off.size == 1
    one_sc = sc.size == 1
    for r in range(n):
        for j in range(f):
            o = off[0] if one_off else off[j]
            m = sc[0] if one_sc else sc[j]
            out[r, j] = (np.float32(x[r, j]) - o) * m


@_njit
def impute_rows(x: Any, fill: Any, nan: bool, replaced: Any, out: Any) -> None:  # pragma: no cover - compiled
    """Imputer: ``x`` (``[N, F]``, float32 or float64) into ``out`` with each element equal to ``replaced`` (with
    ``nan``: each NaN) replaced by its feature's ``fill`` (one value or one per feature, ``x``'s type)."""
    n, f = x.shape
    one = fill.size == 1
    for r in range(n):
        for j in range(f):
            v = x[r, j]
            if (v != v) if nan else (v == replaced):
                v = fill[0] if one else fill[j]
            out[r, j] = v


@_njit
def rbf_exponents(g: Any, rows: Any, sv_sq: Any, neg_gamma: float) -> None:  # pragma: no cover - compiled
    """The RBF kernel's exponents in place of the products ``g`` (``[N, V]`` float64, ``rows @ vectors.T``):
    ``-gamma * max(|x|^2 + |v|^2 - 2 x.v, 0)``, each step in the numpy kernel's order and type (``|x|^2`` the
    pairwise sum of the row's squares, NaN kept by the maximum): the same bits, one pass instead of six."""
    n, v = g.shape
    f = rows.shape[1]
    sq = np.empty(max(f, 1))
    for r in range(n):
        for i in range(f):
            sq[i] = rows[r, i] * rows[r, i]
        a = _pairwise(sq, 0, f)
        for j in range(v):
            d = (a + sv_sq[j]) - 2.0 * g[r, j]
            if d < 0.0:
                d = 0.0
            g[r, j] = neg_gamma * d
