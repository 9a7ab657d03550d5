"""Compiled loops of the ``ai.onnx.ml`` kernels (numba ``@njit``): the SVM classifier's pairwise coupling of
probabilities, and TopK's choice of a few of many along rows (the nearest neighbours of the converters' k-nearest
neighbour models, one row of distances per query). Split from :mod:`onnxcore.kernels.accel._jit` by family (reach
them as ``accel.jit_ml().NAME``); numba itself is imported by ``_jit`` alone, whose decorator these use. Every
function works on contiguous arrays its caller made (float64, or the TopK input's float type), and numba does not
check bounds: the shapes are the caller's.
"""

from __future__ import annotations

from typing import Any

from onnxcore.kernels.accel._jit import _njit

__all__ = ["couple_rows", "top_k_rows"]


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
