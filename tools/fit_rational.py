"""Fit the rational approximations of erf and tanh used for float32 and narrower inputs (dev-only).

Usage: ``python tools/fit_rational.py [erf|tanh]`` (both when none is named): prints the coefficients that
``onnxcore/kernels/_rational_coef.py`` holds (``ERF_P``/``ERF_Q``, ``TANH_P``/``TANH_Q``) and each approximation's
largest relative error on its interval.

Both functions are odd, so f(x) ~ x P(x^2) / Q(x^2) on [0, HI] with Q(0) = 1; beyond HI the kernels clamp the
argument, where f rounds to +-1 in float32 (erf from 3.92, tanh from 9.01; HI is a float32 value, so a clamp in
float32 and one in float64 agree). erf: P of degree 6, Q of degree 5 on [0, 4]; tanh: both of degree 5 on
[0, 9.125]. The fit linearises the relative error, x P - f Q = 0 weighted by 1 / (f Q_previous), and reweights the
points by their error a few times (Lawson's iteration), on Chebyshev points plus a uniform grid of [0, HI]. The
monomials are in u = (x / HI)^2, within [0, 1], for a well-conditioned system; the printed coefficients are
rescaled to x^2.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

import numpy as np

# name -> (the function in double, HI, degree of P, degree of Q, points per grid, rounds): the figures that made
# the coefficients the kernels hold.
FUNCTIONS: dict[str, tuple[Callable[[float], float], float, int, int, int, int]] = {
    "erf": (math.erf, 4.0, 6, 5, 4000, 12),
    "tanh": (math.tanh, 9.125, 5, 5, 6000, 16),
}


def fit(
    fn: Callable[[float], float], hi: float, p: int, q: int, n: int, rounds: int
) -> tuple[float, np.ndarray, np.ndarray]:
    """Largest relative error, numerator and denominator coefficients (lowest degree first, in x^2)."""
    cheb = (np.cos(np.pi * (np.arange(n) + 0.5) / n) + 1.0) / 2.0 * hi
    xs = np.concatenate([cheb, np.linspace(1e-4, hi, n)])
    f = np.array([fn(float(v)) for v in xs])
    u = (xs / hi) ** 2
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
    return worst, num * hi ** (-2.0 * np.arange(p + 1)), den * hi ** (-2.0 * np.arange(q + 1))


def main(argv: list[str]) -> int:
    names = argv or list(FUNCTIONS)
    for name in names:
        if name not in FUNCTIONS:
            print(f"unknown function {name!r}: one of {', '.join(FUNCTIONS)}", file=sys.stderr)
            return 2
        worst, num, den = fit(*FUNCTIONS[name])
        hi = FUNCTIONS[name][1]
        print(f"# {name}: largest relative error of the fit on [0, {hi}]: {worst:.2e}")
        print(f"{name.upper()}_P = (" + ", ".join(repr(float(c)) for c in num) + ")")
        print(f"{name.upper()}_Q = (" + ", ".join(repr(float(c)) for c in den) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
