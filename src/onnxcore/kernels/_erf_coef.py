"""The coefficients of the float32 erf approximation, shared by the numpy kernel
(:mod:`onnxcore.kernels.elementwise`) and the compiled one (:mod:`onnxcore.kernels.accel`).

erf(x) ~ x P(x^2) / Q(x^2) for x clamped to [-4, 4] (beyond, erf rounds to +-1 in float32), P of degree 6 and Q of
degree 5, lowest degree first, fitted by tools/fit_erf.py (largest relative error 2.1e-9). Evaluated in float64
and rounded once, the float32 result is within 0.54 ulp.
"""

from __future__ import annotations

__all__ = ["ERF_CLAMP", "ERF_P", "ERF_Q"]

ERF_CLAMP = 4.0
ERF_P = (
    1.1283791693188876,
    0.18520813543134979,
    0.054317090626296013,
    0.00384975590574145,
    0.00037959243941912895,
    4.684200353731014e-06,
    -1.3199527003987944e-08,
)
ERF_Q = (
    1.0,
    0.4974698494620066,
    0.11396002961004417,
    0.015462314205319827,
    0.0013075780396357602,
    6.310522002533626e-05,
)
