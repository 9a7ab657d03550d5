"""Unary elementwise and activation kernels (ONNX 1-2 operator definitions, default domain).

Binary, variadic, comparison, logical and bitwise kernels are in
:mod:`onnxcore.kernels.elementwise_binary`.

Numerics (Clause 11): a single correctly rounded function (Exp, Sin, ...) computes natively for
float16, float32 and float64; composite formulas (Sigmoid, Elu, HardSwish, Gelu, ...) compute
float16 in float32 and round once. bfloat16 and the 8-bit float types always compute in float32
and are rounded once to the element type at the end.
IEEE 754 special values propagate as numpy's ufuncs propagate them (Clause 11.3).
``Erf`` (which numpy lacks): in float64 a Taylor series below 1/2 and exp(-x^2) times a Chebyshev-fitted
polynomial above (see ``_ErfApprox``), within 2e-15 relative; float32 and narrower by a rational
approximation evaluated in float64 and rounded once (:mod:`onnxcore.kernels._rational`), within 0.54 ulp of
float32; the tanh GELU's tanh in float32 likewise, within 0.501 ulp.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels import accel
from onnxcore.kernels._epilogue import relu_into
from onnxcore.kernels._rational import BLOCK, erf32, over_blocks, tanh32
from onnxcore.kernels._util import NARROW_FLOAT_DTYPES, check_unidirectional, float_unary, from_compute, select
from onnxcore.kernels.fused.passes import swish_accel
from onnxcore.kernels.registry import kernel

__all__ = ["erf"]

Array = np.ndarray


def _register_unary(op: str, fn: Callable[[Array], Any], versions: tuple[int, ...], legacy: bool = False) -> None:
    """Register ``fn`` for ``versions``; with ``legacy`` also version 1 accepting ``consumed_inputs``.

    ``consumed_inputs`` (opset 1) is an in-place hint for the legacy optimizer with no effect on
    the values computed, so the opset-1 kernel is the same function.
    """

    def k(X: Array) -> Array:
        return fn(X)

    k.__name__ = k.__qualname__ = op.lower()
    if versions:
        kernel(op, *versions)(k)
    if legacy:

        def k1(X: Array, *, consumed_inputs: list[int] | None = None) -> Array:
            return fn(X)

        k1.__name__ = k1.__qualname__ = op.lower() + "_1"
        kernel(op, 1)(k1)


def _ufunc(uf: Any) -> Callable[[Array], Array]:
    """A kernel from a numpy ufunc: narrow floats computed in float32; other types natively
    (integers keep their type and wrap like C)."""

    def f(x: Array) -> Array:
        if x.dtype.kind == "V":
            return np.asarray(uf(x.astype(np.float32))).astype(x.dtype)
        return np.asarray(uf(x))

    return f


# --- trigonometric, hyperbolic, exp/log, rounding ---------------------------------------------

_TRIG: tuple[tuple[str, Any, tuple[int, ...]], ...] = (
    ("Acos", np.arccos, (7, 22)),
    ("Asin", np.arcsin, (7, 22)),
    ("Atan", np.arctan, (7, 22)),
    ("Cos", np.cos, (7, 22)),
    ("Sin", np.sin, (7, 22)),
    ("Tan", np.tan, (7, 22)),
    ("Acosh", np.arccosh, (9, 22)),
    ("Asinh", np.arcsinh, (9, 22)),
    ("Atanh", np.arctanh, (9, 22)),
    ("Cosh", np.cosh, (9, 22)),
    ("Sinh", np.sinh, (9, 22)),
    # Round: halves to even, as numpy's rint (Round-11 definition).
    ("Round", np.rint, (11, 22)),
)
for _op, _uf, _versions in _TRIG:
    _register_unary(_op, _ufunc(_uf), _versions)

_CLASSIC: tuple[tuple[str, Any], ...] = (
    ("Ceil", np.ceil),
    ("Floor", np.floor),
    ("Exp", np.exp),
    ("Log", np.log),
    ("Sqrt", np.sqrt),
    ("Tanh", np.tanh),
)
for _op, _uf in _CLASSIC:
    _register_unary(_op, _ufunc(_uf), (6, 13), legacy=True)

# Abs and Neg take integers from opset 6; two's complement wrap (Abs(-128) = -128 for int8).
_register_unary("Abs", _ufunc(np.absolute), (6, 13), legacy=True)
_register_unary("Neg", _ufunc(np.negative), (6, 13), legacy=True)


def _reciprocal(x: Array) -> Array:
    if x.dtype.kind == "V":
        return np.asarray(np.reciprocal(x.astype(np.float32))).astype(x.dtype)
    return np.asarray(np.reciprocal(x))


_register_unary("Reciprocal", _reciprocal, (6, 13), legacy=True)


def _sigmoid(x: Array) -> Array:
    def f(v: Array) -> Array:
        # 1/(1+exp(-x)) overflows harmlessly to 0 for very negative x; exp(-x) -> inf gives 1/inf = 0.
        e = np.negative(v)
        np.exp(e, out=e)
        e += 1
        return np.reciprocal(e, out=e)

    return float_unary(x, f)


_register_unary("Sigmoid", _sigmoid, (6, 13), legacy=True)


def _relu(x: Array) -> Array:
    if x.dtype.kind == "V":
        return np.asarray(np.maximum(x.astype(np.float32), 0)).astype(x.dtype)
    if type(x) is np.ndarray and x.ndim:
        return relu_into(x)  # float32/64: one compiled pass with the accelerator; numpy's maximum otherwise
    # A Python 0 is a weak scalar (NEP 50): the result keeps x's dtype.
    r = np.maximum(x, 0)
    return r if type(r) is np.ndarray else np.asarray(r)


# Relu-14 adds signed integer types with the same definition.
_register_unary("Relu", _relu, (6, 13, 14), legacy=True)


def _softplus(x: Array) -> Array:
    # ln(exp(x) + 1) without overflow: logaddexp(0, x).
    return float_unary(x, lambda v: np.logaddexp(np.zeros((), v.dtype), v))


_register_unary("Softplus", _softplus, (1, 22))


def _softsign(x: Array) -> Array:
    def f(v: Array) -> Array:
        d = np.abs(v)
        d += 1
        return np.divide(v, d, out=d)

    return float_unary(x, f)


_register_unary("Softsign", _softsign, (1, 22))


def _sign(x: Array) -> Array:
    if x.dtype.kind == "V":
        return np.asarray(np.sign(x.astype(np.float32))).astype(x.dtype)
    if x.dtype.kind == "u":
        return np.asarray(x != 0).astype(x.dtype)
    return np.asarray(np.sign(x))


_register_unary("Sign", _sign, (9, 13))


def _isnan(x: Array) -> Array:
    if x.dtype.kind == "V":
        return np.asarray(np.isnan(x.astype(np.float32)))
    return np.asarray(np.isnan(x))


# IsNaN-20 adds the float8 types; float8e4m3fn/e4m3fnuz/e5m2fnuz have NaN but no infinity.
_register_unary("IsNaN", _isnan, (9, 13, 20))


@kernel("IsInf", 10, 20)
def isinf(X: Array, *, detect_negative: int = 1, detect_positive: int = 1) -> Array:
    """IsInf-10/20: infinities of the selected signs."""
    x = X.astype(np.float32) if X.dtype.kind == "V" else X
    if detect_negative and detect_positive:
        return np.asarray(np.isinf(x))
    if detect_positive:
        return np.asarray(np.isposinf(x))
    if detect_negative:
        return np.asarray(np.isneginf(x))
    return np.zeros(x.shape, dtype=bool)


@kernel("Not", 1)
def not_(X: Array) -> Array:
    """Not-1: logical negation of a bool tensor."""
    return np.asarray(np.logical_not(X))


@kernel("BitwiseNot", 18)
def bitwise_not(X: Array) -> Array:
    """BitwiseNot-18."""
    return np.asarray(np.invert(X))


# --- Erf ------------------------------------------------------------------------------------
#
# numpy has no erf. float64: below |x| < 1/2 the odd Taylor series of erf is summed (Horner in x^2,
# all terms smaller than 1, so no cancellation); above, erfc(x) = exp(-x^2) * R(x) where R is smooth
# and is approximated by a polynomial in s = (x - 2)/(x + 2), fitted at import time by Chebyshev
# interpolation of the standard library's math.erfc. Beyond a cut-off erfc is below half an ulp
# of 1 and erf(x) = sign(x). Whole-array in-place evaluation (no gathers, no Python loop over
# elements). Max relative error ~2e-15.


class _ErfApprox:
    __slots__ = ("dtype", "hi", "offset", "poly", "scale", "taylor")

    def __init__(self, dtype: Any, degree: int, taylor_terms: int, hi: float) -> None:
        from numpy.polynomial import chebyshev

        self.dtype = np.dtype(dtype)
        self.hi = hi
        lo_u = (0.5 - 2.0) / (0.5 + 2.0)
        hi_u = (hi - 2.0) / (hi + 2.0)
        n = 4 * degree + 40
        nodes = np.cos(np.pi * (np.arange(n) + 0.5) / n)
        us = lo_u + (nodes + 1.0) * (hi_u - lo_u) / 2.0
        xs = 2.0 * (1.0 + us) / (1.0 - us)
        vals = [math.erfc(float(v)) * math.exp(float(v) * float(v)) for v in xs]
        # Power basis in the interval variable t in [-1, 1], highest degree first (Horner).
        self.poly = [self.dtype.type(c) for c in chebyshev.cheb2poly(chebyshev.chebfit(nodes, vals, degree))[::-1]]
        self.scale = self.dtype.type(2.0 / (hi_u - lo_u))
        self.offset = self.dtype.type(-(lo_u + hi_u) / (hi_u - lo_u))
        coef = [(-1) ** k / (math.factorial(k) * (2 * k + 1)) * _TWO_OVER_SQRT_PI for k in range(taylor_terms)]
        self.taylor = [self.dtype.type(c) for c in coef[::-1]]

    # Elements per block: the ~30 passes of the evaluation then stay in the L2 cache and reuse
    # the same small allocations (no page faults), several times faster than whole-array passes.
    BLOCK = 1 << 15

    def __call__(self, x: Array) -> Array:
        if x.ndim == 0:
            return self._eval(x.reshape(1)).reshape(())  # in-place steps need arrays, not scalars
        if x.size <= self.BLOCK:
            return self._eval(x)
        flat = np.ascontiguousarray(x).reshape(-1)
        out = np.empty(flat.shape, dtype=self.dtype)
        for i in range(0, flat.size, self.BLOCK):
            out[i : i + self.BLOCK] = self._eval(flat[i : i + self.BLOCK])
        return out.reshape(x.shape)

    def _eval(self, x: Array) -> Array:
        t = self.dtype.type
        ax = np.abs(x)
        # The series is only used below 1/2; clamping keeps it finite (no overflow) elsewhere.
        xs = np.clip(x, t(-0.5), t(0.5))
        x2 = np.square(xs)
        small = np.full(x.shape, self.taylor[0], dtype=self.dtype)
        for c in self.taylor[1:]:
            small *= x2
            small += c
        small *= xs
        a = np.clip(ax, t(0.5), t(self.hi))
        s = np.subtract(a, t(2.0))
        s /= a + t(2.0)
        s *= self.scale
        s += self.offset
        r = np.full(x.shape, self.poly[0], dtype=self.dtype)
        for c in self.poly[1:]:
            r *= s
            r += c
        e = np.square(a)
        np.negative(e, out=e)
        np.exp(e, out=e)
        e *= r
        np.subtract(t(1.0), e, out=e)
        np.copysign(e, x, out=e)
        # Past the cut-off, a is clamped to it and 1 - erfc(hi) rounds to exactly 1; NaN is false
        # in the comparison and propagates from the polynomial branch.
        return select(ax < t(0.5), small, e)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@functools.cache
def _erf64_approx() -> _ErfApprox:
    # Fitted on the first float64 erf, not at import: the fit and numpy.polynomial are 3-4 ms of every process that
    # imports this family, nearly every session's (issue 42, item 3: time to first result).
    return _ErfApprox(np.float64, 20, 14, 6.0)


def _erf64(x: Array, *, scale: float = 1.0, gelu: bool = False) -> Array:
    """erf of a float64 array (fresh result); with ``gelu``, ``0.5 x (1 + erf(scale x))``. (No compiled path:
    without a vectorised ``exp`` a compiled loop is no faster than these blocked passes.)"""
    y = np.asarray(_erf64_approx()(x * np.float64(scale) if scale != 1.0 else x))
    if gelu:
        y += 1.0
        y *= x
        y *= 0.5
    return y


def erf(x: Array) -> Array:
    """The error function, elementwise, in ``x``'s dtype (integers truncate like a C cast)."""
    dt = x.dtype
    if dt == np.float64:
        return _erf64(x)
    if dt == np.float32:
        return erf32(x)
    if dt.kind in "fV":
        return erf32(x.astype(np.float32)).astype(dt)
    return from_compute(_erf64_approx()(x.astype(np.float64)), dt)


# Erf-9 also admits integer types; Erf-13 is float only; the function is the same.
_register_unary("Erf", erf, (9, 13))


# --- activations with attributes ----------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _largest(dt: np.dtype[Any]) -> float:
    return float(np.finfo(dt).max)


def _finite(alpha: float, dt: np.dtype[Any]) -> bool:
    """Whether ``alpha`` stays finite in ``dt``: the select-free forms below multiply it by 0 on the other side
    of the definition's two cases, which an infinite or NaN alpha would turn into NaN. (A value that rounds down
    to the largest finite one counts as infinite: the select is right for every alpha, only slower.)"""
    return math.isfinite(alpha) and abs(alpha) <= _largest(dt)


def _elu(X: Array, alpha: float) -> Array:
    def f(v: Array) -> Array:
        a = np.asarray(alpha, v.dtype)
        if not _finite(alpha, v.dtype):
            with np.errstate(invalid="ignore"):
                return np.where(v >= 0, v, a * np.expm1(v))  # f(x) = x for x >= 0
        # max(x, 0) + alpha*(exp(min(x, 0)) - 1): equal to the two-sided definition, and without
        # a select (np.where is several times slower than two passes of maximum/minimum).
        y = np.expm1(np.minimum(v, 0))
        y *= a
        y += np.maximum(v, 0)
        return y

    return float_unary(X, f)


@kernel("Elu", 1)
def elu_1(X: Array, *, alpha: float = 1.0, consumed_inputs: list[int] | None = None) -> Array:
    """Elu-1."""
    return _elu(X, alpha)


@kernel("Elu", 6, 22)
def elu(X: Array, *, alpha: float = 1.0) -> Array:
    """Elu-6/22: x for x >= 0, alpha*(exp(x)-1) otherwise."""
    return _elu(X, alpha)


def _celu(X: Array, alpha: float) -> Array:
    def f(v: Array) -> Array:
        a = np.asarray(alpha, v.dtype)
        y = np.minimum(v, 0)
        y /= a
        np.expm1(y, out=y)
        y *= a
        y += np.maximum(v, 0)
        return y

    return float_unary(X, f)


@kernel("Celu", 12, 28)
def celu(X: Array, *, alpha: float = 1.0) -> Array:
    """Celu-12/28: max(0,x) + min(0, alpha*(exp(x/alpha)-1))."""
    return _celu(X, alpha)


def _hard_sigmoid(X: Array, alpha: float, beta: float) -> Array:
    if type(X) is np.ndarray and X.dtype in (np.float32, np.float64) and accel.enabled():
        # The compiled loop: the operations below in one pass (the same results), where they are four numpy calls
        # of a microsecond or more each on a squeeze-and-excitation block's gate of a few hundred values.
        flat = np.ascontiguousarray(X).reshape(-1)
        out = np.empty(flat.shape, X.dtype)
        fn, t = accel.jit().hard_sigmoid, X.dtype.type
        a, b = t(alpha), t(beta)
        if flat.size <= BLOCK:
            fn(flat, out, a, b)  # (one block: the loop called directly, without over_blocks' closure and calls)
        else:
            over_blocks(flat.size, lambda i, j: fn(flat[i:j], out[i:j], a, b))
        return out.reshape(X.shape)

    def f(v: Array) -> Array:
        y = v * np.asarray(alpha, v.dtype)
        y += np.asarray(beta, v.dtype)
        # maximum then minimum in place: the same as clip(y, 0, 1), with less call overhead.
        np.maximum(y, 0, out=y)
        return np.minimum(y, 1, out=y)

    return float_unary(X, f)


@kernel("HardSigmoid", 1)
def hard_sigmoid_1(
    X: Array, *, alpha: float = 0.20000000298023224, beta: float = 0.5, consumed_inputs: list[int] | None = None
) -> Array:
    """HardSigmoid-1."""
    return _hard_sigmoid(X, alpha, beta)


@kernel("HardSigmoid", 6, 22)
def hard_sigmoid(X: Array, *, alpha: float = 0.20000000298023224, beta: float = 0.5) -> Array:
    """HardSigmoid-6/22: max(0, min(1, alpha*x + beta))."""
    return _hard_sigmoid(X, alpha, beta)


def _hard_swish(X: Array) -> Array:
    if X.dtype in (np.float32, np.float64) and accel.enabled():
        # The compiled loop: the same operations in one pass (the same results).
        flat = np.ascontiguousarray(X).reshape(-1)
        out = np.empty(flat.shape, X.dtype)
        fn, t = accel.jit().hard_swish, X.dtype.type

        def span(i: int, j: int) -> None:
            fn(flat[i:j], out[i:j], t(1.0 / 6.0), t(0.5))

        over_blocks(flat.size, span)
        return out.reshape(X.shape)

    def f(v: Array) -> Array:
        y = v * np.asarray(1.0 / 6.0, v.dtype)
        y += np.asarray(0.5, v.dtype)
        np.maximum(y, 0, out=y)
        np.minimum(y, 1, out=y)
        y *= v
        return y

    return float_unary(X, f)


_register_unary("HardSwish", _hard_swish, (14, 22))


def _leaky_relu(X: Array, alpha: float) -> Array:
    def f(v: Array) -> Array:
        a = np.asarray(alpha, v.dtype)
        if not _finite(alpha, v.dtype):
            with np.errstate(invalid="ignore"):
                return np.where(v >= 0, v, a * v)
        if 0.0 <= alpha <= 1.0:
            # alpha*x <= x exactly when x >= 0, so the definition is max(x, alpha*x).
            y = v * a
            return np.maximum(v, y, out=y)
        if alpha > 1.0:
            y = v * a
            return np.minimum(v, y, out=y)
        y = np.minimum(v, 0)
        y *= a
        y += np.maximum(v, 0)
        return y

    return float_unary(X, f)


@kernel("LeakyRelu", 1)
def leaky_relu_1(X: Array, *, alpha: float = 0.009999999776482582, consumed_inputs: list[int] | None = None) -> Array:
    """LeakyRelu-1."""
    return _leaky_relu(X, alpha)


@kernel("LeakyRelu", 6, 16)
def leaky_relu(X: Array, *, alpha: float = 0.009999999776482582) -> Array:
    """LeakyRelu-6/16: x for x >= 0, alpha*x otherwise."""
    return _leaky_relu(X, alpha)


def _selu(X: Array, alpha: float, gamma: float) -> Array:
    def f(v: Array) -> Array:
        a = np.asarray(alpha, v.dtype)
        g = np.asarray(gamma, v.dtype)
        if not _finite(alpha, v.dtype):
            with np.errstate(invalid="ignore"):
                return np.where(v > 0, g * v, g * (a * np.expm1(v)))
        y = np.expm1(np.minimum(v, 0))
        y *= a
        y += np.maximum(v, 0)
        y *= g
        return y

    return float_unary(X, f)


@kernel("Selu", 1)
def selu_1(
    X: Array,
    *,
    alpha: float = 1.673200011253357,
    gamma: float = 1.0506999492645264,
    consumed_inputs: list[int] | None = None,
) -> Array:
    """Selu-1 (its defaults differ from Selu-6's in the fourth decimal)."""
    return _selu(X, alpha, gamma)


@kernel("Selu", 6, 22)
def selu(X: Array, *, alpha: float = 1.6732631921768188, gamma: float = 1.0507010221481323) -> Array:
    """Selu-6/22: gamma*x for x > 0, gamma*alpha*(exp(x)-1) otherwise."""
    return _selu(X, alpha, gamma)


@kernel("ThresholdedRelu", 10, 22)
def thresholded_relu(X: Array, *, alpha: float = 1.0) -> Array:
    """ThresholdedRelu-10/22: x for x > alpha, 0 otherwise."""
    return float_unary(X, lambda v: np.where(v > np.asarray(alpha, v.dtype), v, np.zeros((), v.dtype)))


def _mish(X: Array) -> Array:
    def f(v: Array) -> Array:
        sp = np.logaddexp(np.zeros((), v.dtype), v)
        np.tanh(sp, out=sp)
        sp *= v
        return sp

    return float_unary(X, f)


_register_unary("Mish", _mish, (18, 22))


@kernel("Gelu", 20)
def gelu(X: Array, *, approximate: str = "none") -> Array:
    """Gelu-20: 0.5*x*(1+erf(x/sqrt(2))), or the tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise EvaluationError(f"Gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    dt = X.dtype
    if approximate == "tanh":
        # float32 and narrower: tanh by the rational approximation (within 0.501 ulp; numpy's float32 tanh is
        # within 1.37), compiled in one pass with the accelerator; float64: numpy's tanh.
        if dt == np.float32:
            return tanh32(X, gelu=True)
        if dt.kind in "fV" and dt != np.float64:
            return from_compute(tanh32(X.astype(np.float32), gelu=True), dt)

        def f(v: Array) -> Array:
            c = np.asarray(math.sqrt(2.0 / math.pi), v.dtype)
            inner = v * v
            inner *= np.asarray(0.044715, v.dtype)
            inner += 1
            inner *= v
            inner *= c
            np.tanh(inner, out=inner)
            inner += 1
            inner *= v
            inner *= np.asarray(0.5, v.dtype)
            return inner

        return float_unary(X, f)
    if dt == np.float32:
        # One blocked pass: erf and the products while each block is in cache.
        return erf32(X, scale=1.0 / math.sqrt(2.0), gelu=True)
    if dt == np.float64:
        return _erf64(X, scale=1.0 / math.sqrt(2.0), gelu=True)
    return from_compute(erf32(X.astype(np.float32), scale=1.0 / math.sqrt(2.0), gelu=True), dt)


@kernel("Swish", 24)
def swish(X: Array, *, alpha: float = 1.0) -> Array:
    """Swish-24: x * sigmoid(alpha * x)."""
    fast = swish_accel(X, alpha)
    if fast is not None:
        return fast

    def f(v: Array) -> Array:
        e = v * np.asarray(-alpha, v.dtype)
        np.exp(e, out=e)
        e += 1
        return np.divide(v, e, out=e)

    return float_unary(X, f)


@kernel("Shrink", 9)
def shrink(input: Array, *, bias: float = 0.0, lambd: float = 0.5) -> Array:
    """Shrink-9: x+bias for x < -lambd, x-bias for x > lambd, else 0 (integer types too)."""
    x = input
    dt = x.dtype
    xc = x.astype(np.float32) if dt in NARROW_FLOAT_DTYPES else x
    if dt.kind in "iu":
        # Compare and offset in float64 like the definition's float attributes, then cast back.
        xf = xc.astype(np.float64)
        y = np.where(xf < -lambd, xf + bias, np.where(xf > lambd, xf - bias, 0.0))
        return y.astype(dt)
    lam = np.asarray(lambd, xc.dtype)
    b = np.asarray(bias, xc.dtype)
    y = np.where(xc < -lam, xc + b, np.where(xc > lam, xc - b, np.zeros((), xc.dtype)))
    return from_compute(y, dt)


# --- Clip -------------------------------------------------------------------------------------


def _clip(x: Array, lo: Any, hi: Any) -> Array:
    dt = x.dtype
    xc = x.astype(np.float32) if dt.kind == "V" else x
    cd = xc.dtype
    y = xc
    if lo is not None and hi is not None and xc.size > 4096:
        # numpy.clip is Min(max, Max(input, min)) too (max wins when min > max), in one pass;
        # on small tensors its call overhead exceeds the two ufunc calls below.
        return from_compute(np.clip(xc, np.asarray(lo).astype(cd), np.asarray(hi).astype(cd)), dt)
    # Max(input, min) then Min(max, .): when min > max every element becomes max (Clip-13 text).
    if lo is not None:
        y = np.asarray(np.maximum(y, np.asarray(lo).astype(cd)))
    if hi is not None:
        hv = np.asarray(hi).astype(cd)
        y = np.minimum(y, hv, out=y) if y is not xc else np.asarray(np.minimum(y, hv))
    if y is x:
        y = x.copy()
    return from_compute(y, dt)


@kernel("Clip", 1)
def clip_1(
    input: Array,
    *,
    max: float | None = None,
    min: float | None = None,
    consumed_inputs: list[int] | None = None,
) -> Array:
    """Clip-1: bounds as attributes; an absent bound does not clip."""
    return _clip(input, min, max)


@kernel("Clip", 6)
def clip_6(input: Array, *, max: float = 3.4028234663852886e38, min: float = -3.4028234663852886e38) -> Array:
    """Clip-6: bounds as attributes defaulting to the float32 range."""
    return _clip(input, min, max)


@kernel("Clip", 11, 12, 13)
def clip(input: Array, min: Array | None = None, max: Array | None = None) -> Array:
    """Clip-11/12/13: bounds as optional scalar inputs (absent: no bound)."""
    for name, b in (("min", min), ("max", max)):
        if b is not None and np.asarray(b).size != 1:
            raise EvaluationError(f"Clip: {name} must be a scalar, got shape {np.asarray(b).shape}")
    lo = None if min is None else np.asarray(min).reshape(())
    hi = None if max is None else np.asarray(max).reshape(())
    return _clip(input, lo, hi)


# --- PRelu ------------------------------------------------------------------------------------


def _prelu(X: Array, slope: Array) -> Array:
    dt = X.dtype
    x = X.astype(np.float32) if dt.kind == "V" else X
    s = slope.astype(x.dtype) if slope.dtype != x.dtype else slope
    if x.dtype.kind == "f" and np.isfinite(s).all():
        # min(x, 0)*slope + max(x, 0) avoids a select; exact for finite slopes.
        y = np.asarray(np.minimum(x, 0))
        y = np.multiply(y, s, out=y if y.shape == np.broadcast_shapes(y.shape, s.shape) else None)
        y += np.maximum(x, 0)
        return from_compute(y, dt)
    return from_compute(np.where(x < 0, x * s, x), dt)


@kernel("PRelu", 1)
def prelu_1(X: Array, slope: Array, *, consumed_inputs: list[int] | None = None) -> Array:
    """PRelu-1: as PRelu-6."""
    return prelu_6(X, slope)


@kernel("PRelu", 6)
def prelu_6(X: Array, slope: Array) -> Array:
    """PRelu-6: one slope shared by every channel when of size 1, else one per channel.

    The definition (as Caffe2's, where it came from) speaks of channels: a 1-D slope of
    extent C = X.shape[1] applies along axis 1; any other shape must broadcast
    unidirectionally to X (the later definition's rule).
    """
    if slope.size == 1:
        slope = slope.reshape(())
    elif slope.ndim == 1 and X.ndim >= 2 and slope.shape[0] == X.shape[1]:
        slope = slope.reshape((-1,) + (1,) * (X.ndim - 2))
    else:
        check_unidirectional(slope.shape, X.shape)
    return _prelu(X, slope)


@kernel("PRelu", 7, 9, 16)
def prelu(X: Array, slope: Array) -> Array:
    """PRelu-7/9/16: slope unidirectionally broadcast to X (Clause 6.6.3)."""
    check_unidirectional(slope.shape, X.shape)
    return _prelu(X, slope)
