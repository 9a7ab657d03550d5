"""Fit the rational approximation of erf used for float32 and narrower inputs (dev-only).

Usage: ``python tools/fit_erf.py``: prints the coefficients that ``onnxcore/runtime/ops/elementwise.py``
holds as ``_ERF_P`` and ``_ERF_Q``, and the approximation's largest relative error.

erf(x) ~ x P(x^2) / Q(x^2) on [0, 4] (erf is odd; beyond 4, erf rounds to +-1 in float32), P of degree 6
and Q of degree 5 with Q(0) = 1. The fit linearises the relative error, x P - erf Q = 0 weighted by
1 / (erf Q_previous), and reweights the points by their error a few times (Lawson's iteration), on
Chebyshev points plus a uniform grid in x / 4. The monomials are in u = (x / 4)^2, within [0, 1], for a
well-conditioned system; the printed coefficients are rescaled to x^2.
"""

from __future__ import annotations

import math

import numpy as np

HI = 4.0
P_DEGREE, Q_DEGREE = 6, 5


def fit(p: int = P_DEGREE, q: int = Q_DEGREE, n: int = 4000, rounds: int = 12) -> tuple[float, np.ndarray, np.ndarray]:
    """Largest relative error, numerator and denominator coefficients (lowest degree first, in x^2)."""
    cheb = (np.cos(np.pi * (np.arange(n) + 0.5) / n) + 1.0) / 2.0 * HI
    xs = np.concatenate([cheb, np.linspace(1e-4, HI, n)])
    f = np.array([math.erf(float(v)) for v in xs])
    u = (xs / HI) ** 2
    weight = 1.0 / f
    q_prev = np.ones_like(u)
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for _ in range(rounds):
        a_cols = xs[:, None] * u[:, None] ** np.arange(p + 1)
        b_cols = -f[:, None] * u[:, None] ** np.arange(1, q + 1)
        w = weight / np.abs(q_prev)
        sol = np.linalg.lstsq(np.concatenate([a_cols, b_cols], axis=1) * w[:, None], f * w, rcond=None)[0]
        num, den = sol[: p + 1], np.concatenate([[1.0], sol[p + 1 :]])
        q_prev = np.polynomial.polynomial.polyval(u, den)
        rel = np.abs(xs * np.polynomial.polynomial.polyval(u, num) / q_prev - f) / f
        worst = float(rel.max())
        if best is None or worst < best[0]:
            best = (worst, num, den)
        weight = weight * (1.0 + rel / worst)
    assert best is not None
    worst, num, den = best
    scale_p = HI ** (-2.0 * np.arange(p + 1))
    scale_q = HI ** (-2.0 * np.arange(q + 1))
    return worst, num * scale_p, den * scale_q


def main() -> None:
    worst, num, den = fit()
    print(f"# largest relative error of the fit on [0, {HI}]: {worst:.2e}")
    print("_ERF_P = (" + ", ".join(repr(float(c)) for c in num) + ")")
    print("_ERF_Q = (" + ", ".join(repr(float(c)) for c in den) + ")")


if __name__ == "__main__":
    main()
