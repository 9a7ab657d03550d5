"""Compiled loops of the ``ai.onnx.ml`` kernels (numba ``@njit``): the SVM classifier's pairwise coupling of
probabilities. Split from :mod:`onnxcore.kernels.accel._jit` by family (reach them as ``accel.jit_ml().NAME``);
numba itself is imported by ``_jit`` alone, whose decorator these use. Every function works on contiguous float64
arrays its caller made, and numba does not check bounds: the shapes are the caller's.
"""

from __future__ import annotations

from typing import Any

from onnxcore.kernels.accel._jit import _njit

__all__ = ["couple_rows"]


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
