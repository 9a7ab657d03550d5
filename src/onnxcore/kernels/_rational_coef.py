"""The coefficients of the float32 erf and tanh approximations, shared by the numpy kernels
(:mod:`onnxcore.kernels._rational`) and the compiled ones (:mod:`onnxcore.kernels.accel`).

Both functions are odd: f(x) ~ x P(x^2) / Q(x^2) for x clamped to [-HI, HI] (beyond, f rounds to +-1 in float32),
the coefficients lowest degree first, fitted by ``tools/fit_rational.py`` (which reproduces them to about ten
digits). Evaluated in float64 and rounded once to float32:

- erf: P of degree 6, Q of degree 5, HI = 4; largest relative error 2.1e-9, the float32 result within 0.54 ulp;
- tanh: P and Q of degree 5, HI = 9.125 (tanh rounds to 1 in float32 from 9.01); largest relative error 4.3e-11,
  the float32 result within 0.501 ulp (numpy 2.4's float32 ``tanh`` on x86-64 with AVX2, measured on a grid of
  two million points of [0, 10]: within 1.37 ulp, rounded correctly at 62 % of them).
"""

from __future__ import annotations

__all__ = ["ERF_CLAMP", "ERF_P", "ERF_Q", "TANH_CLAMP", "TANH_P", "TANH_Q"]

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

TANH_CLAMP = 9.125
TANH_P = (
    0.9999999999586662,
    0.14095424363076642,
    0.004420901402574918,
    4.2143397392910875e-05,
    1.1042526880477628e-07,
    3.6273953669102406e-11,
)
TANH_Q = (
    1.0,
    0.47428757650800013,
    0.029183427732721617,
    0.0004998624147996134,
    2.5917265404715765e-06,
    2.923291004839822e-09,
)
