"""The compiled kernels (numba ``@njit``), imported only by :func:`onnxcore.kernels.accel.available`.

Every function works on arrays its caller made contiguous and of one of two element types (float32, float64), so
each compiles to at most two signatures (on first use; numba caches the machine code on disk). numba does not
check bounds: every index these loops follow has been validated by the caller (see each docstring).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from llvmlite import ir as llvm_ir
from numba.core import types
from numba.extending import intrinsic

from onnxcore.kernels._rational_coef import ERF_CLAMP, ERF_P, ERF_Q, TANH_CLAMP, TANH_P, TANH_Q

__all__ = [
    "add_row_bias",
    "add_row_vector",
    "add_row_vector_relu",
    "attention_scores4",
    "clip_flat",
    "clip_inplace",
    "relu_flat",
    "relu_inplace",
    "attention_normalize",
    "tanh32",
    "tanh_gelu_inner",
    "tanh_gelu_outer",
    "hard_swish_rows",
    "gelu32_rows",
    "group_norm_rows",
    "bias_gelu32",
    "erf32",
    "hard_sigmoid",
    "hard_swish",
    "layer_norm_rows",
    "logsumexp_shift",
    "rms_norm_rows",
    "row_sums",
    "swish32",
]

# error_model="numpy": a float division by zero gives inf/NaN as in numpy instead of raising, which also lets LLVM
# vectorise the loops (a Python-style check per division would not). No fastmath: IEEE operations in the order
# written, so results match the numpy kernels'.
_njit: Any = numba.njit(cache=True, nogil=True, error_model="numpy")
# The same, inlined into each caller (numba's IR inlining), for the family modules, which do not import numba:
# _jit_tree's _walk16.
_njit_inline: Any = numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
# For functions generated at run time (no source file, so nothing numba could cache on disk): _jit_ew's.
_njit_generated: Any = numba.njit(nogil=True, error_model="numpy")

_P0, _P1, _P2, _P3, _P4, _P5, _P6 = ERF_P
_Q0, _Q1, _Q2, _Q3, _Q4, _Q5 = ERF_Q
_HI = ERF_CLAMP


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _erf_of(v: Any) -> Any:  # pragma: no cover - compiled
    """erf of the float64 ``v`` rounded once to float32: the numpy kernel's rational approximation (clamped at
    ``ERF_CLAMP``, float64 polynomials), operation for operation; inlined into each loop that calls it (numba's
    IR inlining), so those loops still vectorise."""
    # NaN fails both comparisons and propagates; -0.0 keeps its sign.
    if v > _HI:
        v = _HI
    elif v < -_HI:
        v = -_HI
    u = v * v
    p = u * _P6 + _P5
    p = p * u + _P4
    p = p * u + _P3
    p = p * u + _P2
    p = p * u + _P1
    p = p * u + _P0
    q = u * _Q5 + _Q4
    q = q * u + _Q3
    q = q * u + _Q2
    q = q * u + _Q1
    q = q * u + _Q0
    return np.float32(p * v / q)


_T0, _T1, _T2, _T3, _T4, _T5 = TANH_P
_U0, _U1, _U2, _U3, _U4, _U5 = TANH_Q
_TANH_HI = TANH_CLAMP


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _tanh_of(v: Any) -> Any:  # pragma: no cover - compiled
    """tanh of the float64 ``v`` rounded once to float32: the numpy kernel's rational approximation (clamped at
    ``TANH_CLAMP``, float64 polynomials), operation for operation; inlined into the loop that calls it."""
    # NaN fails both comparisons and propagates; -0.0 keeps its sign.
    if v > _TANH_HI:
        v = _TANH_HI
    elif v < -_TANH_HI:
        v = -_TANH_HI
    u = v * v
    p = u * _T5 + _T4
    p = p * u + _T3
    p = p * u + _T2
    p = p * u + _T1
    p = p * u + _T0
    q = u * _U5 + _U4
    q = q * u + _U3
    q = q * u + _U2
    q = q * u + _U1
    q = q * u + _U0
    return np.float32(p * v / q)


@_njit
def tanh32(x: Any, out: Any, gelu: bool, k: Any, c: Any) -> None:  # pragma: no cover - compiled
    """``out = tanh(x)`` (float32, 1-D, same size), or with ``gelu`` the tanh GELU ``0.5 * x * (1 + tanh((((x *
    x) * k + 1) * x) * c))`` (the argument in float32, Gelu-20's order): the numpy kernel's formula
    (:mod:`onnxcore.kernels._rational`), operation for operation, so the results are the same bit for bit."""
    one = np.float32(1.0)
    half = np.float32(0.5)
    for i in range(x.size):
        xi = x[i]
        a = (((xi * xi) * k + one) * xi) * c if gelu else xi
        r = _tanh_of(np.float64(a))
        if gelu:
            r = r + one
            r = r * xi
            r = r * half
        out[i] = r


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _gelu_of(a: Any, scale: Any) -> Any:  # pragma: no cover - compiled
    """The erf GELU of the float32 ``a``, :func:`erf32`'s operations in its order: ``erf(a * scale)`` (the product
    rounded to float32), plus one, times ``a``, times one half; inlined into the loops that call it."""
    e = _erf_of(np.float64(a * scale))
    e = e + np.float32(1.0)
    e = e * a
    return e * np.float32(0.5)


@_njit
def erf32(x: Any, out: Any, scale: Any, scaled: bool, gelu: bool) -> None:  # pragma: no cover - compiled
    """``out = erf(scale * x)`` (float32, 1-D, same size; the product rounded to float32 first when ``scaled``),
    or with ``gelu`` ``out = 0.5 * x * (1 + erf(scale * x))``: the numpy kernel's formula, operation for
    operation (float64 polynomials, one rounding to float32), so the results are the same bit for bit."""
    one = np.float32(1.0)
    half = np.float32(0.5)
    for i in range(x.size):
        xi = x[i]
        a = xi * scale if scaled else xi
        v = np.float64(a)
        r = _erf_of(v)
        if gelu:
            r = r + one
            r = r * xi
            r = r * half
        out[i] = r


@_njit
def bias_gelu32(x: Any, bias: Any, out: Any, scale: Any, start: int, stop: int) -> None:  # pragma: no cover
    """com.microsoft BiasGelu in float32 for the rows ``start..stop`` of ``x`` ``(rows, C)``: ``a = x + bias``
    rounded to float32 (as the numpy kernel's addition), then :func:`erf32`'s GELU of ``a``; one pass, the same
    results bit for bit."""
    c_count = x.shape[1]
    for r in range(start, stop):
        xr = x[r]
        orow = out[r]
        for i in range(c_count):
            orow[i] = _gelu_of(xr[i] + bias[i], scale)


@_njit
def gelu32_rows(x: Any, bias: Any, out: Any, scale: Any, start: int, stop: int) -> None:  # pragma: no cover
    """The erf GELU of ``x[r] + bias[r % len(bias)]`` for the rows ``start..stop`` of ``x`` ``(rows, inner)``
    (float32; a Conv's output, its rows the planes of its channels, and the Conv's bias): ``a = x + b`` rounded to
    float32 (as the Conv kernel adds its bias), then :func:`erf32`'s GELU of ``a``; one pass, the same results bit
    for bit as the Conv's bias and the Gelu kernel one after the other."""
    nb = bias.size
    for r in range(start, stop):
        xr = x[r]
        orow = out[r]
        b = bias[r % nb]
        for i in range(xr.size):
            orow[i] = _gelu_of(xr[i] + b, scale)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _hard_swish_of(xi: Any, sixth: Any, half: Any) -> Any:  # pragma: no cover - compiled
    """``xi * clip(xi * sixth + half, 0, 1)`` in the numpy kernel's order, inlined into the loops that call it."""
    y = xi * sixth + half
    # numpy.maximum / minimum: NaN stays NaN; the bounds are +0 and 1.
    if y < half - half:
        y = half - half
    if y > half + half:
        y = half + half
    return y * xi


@_njit
def hard_sigmoid(x: Any, out: Any, alpha: Any, beta: Any) -> None:  # pragma: no cover - compiled
    """``out = min(max(x * alpha + beta, 0), 1)`` (1-D, float32 or float64; ``alpha`` and ``beta`` of the element
    type): the numpy kernel's operations in its order, numpy's maximum and minimum included (a NaN stays; an equal
    bound, -0.0 against +0.0 too, gives the bound, the second operand)."""
    zero = alpha - alpha
    one = zero + 1
    for i in range(x.size):
        y = x[i] * alpha
        y = y + beta
        y = y if (y > zero or y != y) else zero
        out[i] = y if (y < one or y != y) else one


@_njit
def hard_swish(x: Any, out: Any, sixth: Any, half: Any) -> None:  # pragma: no cover - compiled
    """``out = x * clip(x / 6 + 1/2, 0, 1)`` (1-D, float32 or float64; ``sixth`` and ``half`` of the element
    type): the numpy kernel's operations in its order."""
    for i in range(x.size):
        out[i] = _hard_swish_of(x[i], sixth, half)


@_njit
def hard_swish_rows(
    x: Any, bias: Any, out: Any, sixth: Any, half: Any, start: int, stop: int
) -> None:  # pragma: no cover
    """:func:`hard_swish` of ``x[r] + bias[r % len(bias)]`` for the rows ``start..stop`` of ``x`` ``(rows, inner)``
    (a Conv's output, its rows the planes of its channels, and the Conv's bias): the addition rounded to the element
    type (as the Conv kernel adds its bias), then the numpy kernel's operations in its order; one pass, the same
    results bit for bit as the Conv's bias and the HardSwish kernel one after the other."""
    nb = bias.size
    for r in range(start, stop):
        xr = x[r]
        orow = out[r]
        b = bias[r % nb]
        for i in range(xr.size):
            orow[i] = _hard_swish_of(xr[i] + b, sixth, half)


@_njit
def relu_flat(x: Any, out: Any, zero: Any, start: int, stop: int) -> None:  # pragma: no cover - compiled
    """``out[i] = maximum(x[i], 0)`` for ``i`` in ``start..stop`` (1-D, float32 or float64, ``out`` another array;
    ``zero`` of the element type): numpy's maximum bit for bit, NaN kept, ``-0`` made ``+0`` (the second operand
    when the two are equal). The loop runs over slices: over ``range(start, stop)`` LLVM does not vectorise it."""
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        os[i] = zero if v <= zero else v


@_njit
def relu_inplace(x: Any, zero: Any, start: int, stop: int) -> None:  # pragma: no cover - compiled
    """:func:`relu_flat` of ``x`` into ``x`` (one array: the loop vectorises, where two that may alias do not)."""
    xs = x[start:stop]
    for i in range(xs.size):
        v = xs[i]
        xs[i] = zero if v <= zero else v


@_njit
def clip_flat(x: Any, out: Any, lo: Any, hi: Any, start: int, stop: int) -> None:  # pragma: no cover - compiled
    """``out[i] = clip(x[i], lo, hi)`` for ``i`` in ``start..stop`` (1-D, float32 or float64, ``out`` another array;
    the bounds of the element type): numpy's clip bit for bit, ``min(hi, max(lo, x))`` with each taking its second
    operand unless the first is strictly beyond it (NaN kept, ``-0`` kept, ``hi`` where ``lo > hi``)."""
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        t = lo if lo > v else v
        os[i] = hi if hi < t else t


@_njit
def clip_inplace(x: Any, lo: Any, hi: Any, start: int, stop: int) -> None:  # pragma: no cover - compiled
    """:func:`clip_flat` of ``x`` into ``x``."""
    xs = x[start:stop]
    for i in range(xs.size):
        v = xs[i]
        t = lo if lo > v else v
        xs[i] = hi if hi < t else t


@_njit
def add_row_bias(x: Any, bias: Any, start: int, stop: int) -> None:  # pragma: no cover - compiled
    """``x[r] += bias[r % len(bias)]`` for the rows ``start..stop`` of ``x`` ``(rows, inner)`` in place (a Conv's
    output, its rows the planes of its channels, and its bias): the additions numpy's broadcast makes."""
    nb = bias.size
    for r in range(start, stop):
        xr = x[r]
        b = bias[r % nb]
        for i in range(xr.size):
            xr[i] += b


@_njit
def add_row_vector(x: Any, bias: Any, start: int, stop: int) -> None:  # pragma: no cover - compiled
    """``x[r] += bias`` for the rows ``start..stop`` of ``x`` ``(rows, n)`` in place, ``bias`` of ``n`` values (a
    linear layer's product and its bias): the additions numpy's broadcast makes, without its iterator's cost per
    row (1,000 x 64 float32: 23 -> 8 us)."""
    n = bias.size
    for r in range(start, stop):
        xr = x[r]
        for i in range(n):
            xr[i] += bias[i]


@_njit
def add_row_vector_relu(x: Any, bias: Any, zero: Any, start: int, stop: int) -> None:  # pragma: no cover
    """``x[r] = maximum(x[r] + bias, 0)`` for the rows ``start..stop`` in place (a linear layer's bias and the Relu
    after it): :func:`add_row_vector` then :func:`relu_inplace` in one pass, the same values bit for bit."""
    n = bias.size
    for r in range(start, stop):
        xr = x[r]
        for i in range(n):
            v = xr[i] + bias[i]
            xr[i] = zero if v <= zero else v


# float32 exp(u) for u <= 0, vectorised (numba has no vectorised exp: a loop calling exp is scalar): u = n ln 2 + r,
# |r| <= ln 2 / 2 (Cody and Waite's split of ln 2: n * _LN2_HI is exact for |n| < 2^14), exp(r) by its Taylor
# polynomial of degree 7 (truncation below 0.1 ulp for |r| <= 0.35) in Estrin's order (a short dependency chain),
# 2^n as the product of two powers of two made from their exponent bits (each a normal float down to n = -150,
# where exp underflows to zero anyway).
_LOG2E = np.float32(1.4426950408889634)
_LN2_HI = np.float32(0.693359375)
_LN2_LO = np.float32(0.6931471805599453 - 0.693359375)
_EXP_LO = np.float32(-104.0)  # below, exp(u) < 2^-150: the product of the two powers rounds to zero
_EXP_C = tuple(np.float32(1.0 / math.factorial(k)) for k in range(8))

# Multiply-adds may be fused (fastmath "contract" only: no reassociation, no finite-math assumption): the
# polynomial then takes half the instructions. Used only where a bound in ulp is stated, never where a kernel
# promises the numpy path's results bit for bit.
_njit_fma = numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})


@intrinsic
def _f32_from_bits_intrinsic(typingctx: Any, bits: Any) -> Any:  # pragma: no cover - compiled
    """The float32 whose bit pattern is the int32 ``bits`` (an LLVM bitcast: vectorises, no memory)."""
    sig = types.float32(types.int32)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], llvm_ir.FloatType())

    return sig, codegen


# Called as ``_f32_from_bits(bits)`` in compiled code (numba supplies the typing context; the type checker does not
# know that).
_f32_from_bits: Any = _f32_from_bits_intrinsic


@numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"}, inline="always")
def _swish1(v: Any, alpha: Any) -> Any:  # pragma: no cover - compiled
    """``v * sigmoid(alpha * v)`` of one float32 (inlined into the loops of :func:`swish32`, which vectorise)."""
    c0, c1, c2, c3, c4, c5, c6, c7 = _EXP_C
    a = v * alpha
    u = -abs(a)
    # Beyond _EXP_LO (NaN too: it fails the comparison) e is zero; the reduction is made for _EXP_LO instead.
    far = not u >= _EXP_LO
    if far:
        u = _EXP_LO
    nf = np.floor(u * _LOG2E + np.float32(0.5))
    r = (u - nf * _LN2_HI) - nf * _LN2_LO
    r2 = r * r
    q = ((c7 * r + c6) * r2 + (c5 * r + c4)) * (r2 * r2) + ((c3 * r + c2) * r2 + (c1 * r + c0))
    n = np.int32(nf)
    h = n >> 1
    qf = q * _f32_from_bits(np.int32((h + 127) << 23))
    if far:
        qf = np.float32(0.0)
    f2 = _f32_from_bits(np.int32((n - h + 127) << 23))
    e = qf * f2
    # v * e with the last power of two applied last: where e is subnormal (a < -87) the product still rounds once,
    # to the result's precision.
    num = v if a >= 0 else (v * qf) * f2
    return num / (np.float32(1.0) + e)


@_njit_fma
def swish32(x: Any, out: Any, alpha: Any, bias: Any, start: int, stop: int) -> None:  # pragma: no cover - compiled
    """``out[r] = s(x[r] + bias[r % len(bias)])`` for the rows ``start..stop`` of ``x`` ``(rows, inner)`` (float32,
    C-contiguous, ``out`` alike; no addition when ``bias`` is empty: a Conv's bias and the SiLU after it in one
    pass), ``s(v) = v * sigmoid(alpha * v)`` (SiLU with ``alpha = 1``) as ``v / (1 + exp(-a))`` with ``a = alpha *
    v`` rounded to float32, written as ``v / (1 + e)`` for ``a >= 0`` and ``v * e / (1 + e)`` below, ``e =
    exp(-|a|)`` (never overflows); one loop per row, vectorised. Within 4 ulp of the value computed in float64
    rounded to float32 (``tools/swish_accel_ulp.py`` measures the bound over every float32 of a range; subnormal
    results within a few subnormal ulp; ``e`` is zero for ``a < -104``); NaN stays NaN, ``+inf`` gives ``+inf`` and
    ``-inf`` NaN, as the numpy kernel's ``x / (1 + exp(-a))``."""
    nb = bias.size
    for row in range(start, stop):
        xr = x[row]
        orow = out[row]
        if nb:
            b = bias[row % nb]
            for t in range(xr.size):
                orow[t] = _swish1(xr[t] + b, alpha)
        else:
            for t in range(xr.size):
                orow[t] = _swish1(xr[t], alpha)


# The row sums of LayerNormalization and RMSNormalization with reassociation allowed (and nothing else of
# fastmath): LLVM then adds the row in vector registers, in partial sums of its choosing, which an order written
# out in the source never got it to do (each row's sum ran element by element: two thirds of a LayerNormalization
# of 128-value rows). The numpy path sums by BLAS in BLAS's order: the two agree within the type's rounding of a
# row's sum, as before.
_njit_sum = numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})


@_njit_sum
def _row_sum(xr: Any) -> Any:  # pragma: no cover - compiled
    """The sum of ``xr`` in its type (in vector partial sums)."""
    s = xr[0] - xr[0]
    for i in range(xr.size):
        s += xr[i]
    return s


@_njit
def _centred(xr: Any, orow: Any, d: Any, eps: Any) -> tuple[Any, Any]:  # pragma: no cover - compiled
    """``orow = xr - mean`` for one row of ``d`` values (``d`` and ``eps`` of its type), and ``(mean, 1 / sqrt(mean
    of the squares of orow + eps))``, each in the element type: the statistics of LayerNormalization's and the
    group normalizations' rows."""
    m = _row_sum(xr) / d
    for i in range(xr.size):
        orow[i] = xr[i] - m
    return m, d / d / np.sqrt(_sum_squares(orow) / d + eps)  # (d / d: 1 in the element type)


@_njit
def layer_norm_rows(
    x: Any,
    scale: Any,
    bias: Any,
    has_bias: bool,
    d: Any,
    eps: Any,
    out: Any,
    mean: Any,
    inv: Any,
    start: int,
    stop: int,
) -> None:  # pragma: no cover - compiled
    """LayerNormalization of the rows ``start..stop`` of ``x`` ``(rows, D)`` in its type: ``mean[r]``, ``inv[r] = 1
    / sqrt(mean((x - mean)^2) + eps)``, ``out = (x - mean) * inv * scale (+ bias)`` (the numpy kernel's steps; its
    sums are made in another order, so the results agree within the type's rounding of a row's sums). ``d`` and
    ``eps`` are of the element type; all arrays C-contiguous, ``scale`` and ``bias`` of ``D`` values."""
    n = x.shape[1]
    for r in range(start, stop):
        orow = out[r]
        m, iv = _centred(x[r], orow, d, eps)
        if has_bias:
            for i in range(n):
                orow[i] = orow[i] * iv * scale[i] + bias[i]
        else:
            for i in range(n):
                orow[i] = orow[i] * iv * scale[i]
        mean[r] = m
        inv[r] = iv


@_njit
def group_norm_rows(
    x: Any,
    scale: Any,
    bias: Any,
    per_row: int,
    d: Any,
    eps: Any,
    instance: bool,
    out: Any,
    start: int,
    stop: int,
) -> None:  # pragma: no cover - compiled
    """GroupNormalization or InstanceNormalization of the rows ``start..stop`` of ``x`` ``(rows, D)`` in its type:
    each row a group of ``per_row`` channels of ``D / per_row`` values, channel ``k`` of row ``r`` being ``(r *
    per_row + k) % C`` of the ``C`` values of ``scale`` and ``bias``; ``mean``, ``inv = 1 / sqrt(mean((x -
    mean)^2) + eps)`` as :func:`layer_norm_rows` makes them, then ``(x - mean) * (inv * scale[c]) + bias[c]``
    (``instance``) or ``(x - mean) * inv * scale[c] + bias[c]`` (a group's), the numpy kernels' orders (their sums
    are made in another order: the results agree within the type's rounding of a row's sums). ``d`` and ``eps``
    are of the element type; all arrays C-contiguous."""
    n = x.shape[1]
    cc = scale.size
    inner = n // per_row
    for r in range(start, stop):
        orow = out[r]
        _m, iv = _centred(x[r], orow, d, eps)
        for k in range(per_row):
            c = (r * per_row + k) % cc
            sc = scale[c]
            b = bias[c]
            lo = k * inner
            if instance:
                f = iv * sc
                for i in range(lo, lo + inner):
                    orow[i] = orow[i] * f + b
            else:
                for i in range(lo, lo + inner):
                    orow[i] = orow[i] * iv * sc + b


@_njit
def logsumexp_shift(x: Any, e: Any, m: Any) -> None:  # pragma: no cover - compiled
    """The first step of ReduceLogSumExp over the rows of ``x`` ``(rows, n)``: ``m[r]`` the row's maximum, or 0
    where that is not finite (a row holding NaN or +inf, or all -inf), and ``e[r] = x[r] - m[r]`` (the numpy kernel's
    shift, ``kernels/reduction._logsumexp``: the same values, a maximum and a subtraction do not depend on order)."""
    rows, n = x.shape
    zero = x.dtype.type(0)
    for r in range(rows):
        row = x[r]
        mx = row[0]
        for j in range(1, n):
            v = row[j]
            if v != v:
                mx = v
                break
            if v > mx:
                mx = v
        if mx - mx != zero:  # NaN or an infinity
            mx = zero
        m[r] = mx
        er = e[r]
        for j in range(n):
            er[j] = row[j] - mx


@_njit
def row_sums(e: Any, s: Any) -> None:  # pragma: no cover - compiled
    """``s[r]`` the sum of row ``r`` of ``e`` ``(rows, n)``, ``n <= 128``, as numpy's reduction of a contiguous row
    adds it (:func:`_pairwise_leaf`): the same bits."""
    rows, n = e.shape
    zero = e.dtype.type(0)
    for r in range(rows):
        s[r] = _pairwise_leaf(e[r], 0, n, zero)


@_njit_sum
def _sum_squares(xr: Any) -> Any:  # pragma: no cover - compiled
    """The sum of ``xr * xr`` in its type, as :func:`_row_sum` adds (the products rounded, then added)."""
    s = xr[0] - xr[0]
    for i in range(xr.size):
        s += xr[i] * xr[i]
    return s


@_njit
def rms_norm_rows(x: Any, scale: Any, d: Any, eps: Any, out: Any, start: int, stop: int) -> None:  # pragma: no cover
    """RMSNormalization of the rows ``start..stop`` of ``x`` ``(rows, D)`` in its type: ``out = x / sqrt(mean(x^2)
    + eps) * scale`` (the numpy kernel's steps, its sum in another order)."""
    n = x.shape[1]
    for r in range(start, stop):
        xr = x[r]
        orow = out[r]
        ms = np.sqrt(_sum_squares(xr) / d + eps)
        for i in range(n):
            orow[i] = xr[i] / ms * scale[i]


@_njit
def attention_scores4(
    s: Any, mask: Any, steps: Any, has_mask: bool, c: Any, mode: int
) -> None:  # pragma: no cover - compiled
    """The scores ``s`` (4-D, C-contiguous, float32 or float64) of an attention, in place, row by row along the
    last axis: times ``c`` (``mode`` 1) or divided by it (``mode`` 2) or neither (0), plus ``mask`` (4-D, of the
    same type, when ``has_mask``; ``steps`` holds 1 for each of its axes of ``s``'s extent and 0 for one of extent 1
    that broadcasts), then minus the row's maximum (NaN for a row holding a NaN, as numpy's ``max``): the fused
    attention's first steps in their order, each in the element type (``c`` is of it)."""
    nb, nh, nl, n = s.shape
    sb, sh, si, sj = steps[0], steps[1], steps[2], steps[3]
    for b in range(nb):
        for h in range(nh):
            for i in range(nl):
                row = s[b, h, i]
                if mode == 1:
                    for j in range(n):
                        row[j] = row[j] * c
                elif mode == 2:
                    for j in range(n):
                        row[j] = row[j] / c
                if has_mask:
                    mrow = mask[b * sb, h * sh, i * si]
                    if sj == 1:
                        for j in range(n):
                            row[j] = row[j] + mrow[j]
                    else:
                        for j in range(n):
                            row[j] = row[j] + mrow[0]
                nans = 0
                for j in range(n):
                    nans += row[j] != row[j]
                if nans:  # x - NaN for every x of the row
                    for j in range(n):
                        row[j] = np.nan
                else:
                    m = _row_max(row)
                    for j in range(n):
                        row[j] = row[j] - m


@numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"nnan", "nsz"})
def _row_max(row: Any) -> Any:  # pragma: no cover - compiled
    """The maximum of a row holding no NaN (the caller checked: ``nnan`` lets the maximum vectorise; ``nsz``: a
    maximum of -0.0 and 0.0 may be either, which no difference from it tells apart after ``exp``)."""
    m = row[0]
    for j in range(1, row.size):
        v = row[j]
        m = v if v > m else m
    return m


@_njit
def attention_normalize(e: Any, guard: bool) -> None:  # pragma: no cover - compiled
    """Each row of ``e`` (2-D, C-contiguous: the exponentials of shifted scores) divided by its sum, in place; with
    ``guard``, the NaN entries of a row whose sum is NaN set to 0 (the exporters' ``Where(IsNaN(p), 0, p)``)."""
    rows, n = e.shape
    for r in range(rows):
        row = e[r]
        total = _row_sum(row)
        for j in range(n):
            row[j] = row[j] / total
        if guard and total != total:
            for j in range(n):
                if row[j] != row[j]:
                    row[j] = 0


@_njit
def tanh_gelu_inner(x: Any, out: Any, k: Any, c: Any) -> None:  # pragma: no cover - compiled
    """``out = (((x * x) * k + 1) * x) * c`` element by element in the type of ``x`` (1-D, C-contiguous; ``k`` and
    ``c`` of that type): the argument of the tanh GELU's tanh, in the Gelu kernel's order of operations."""
    one = x.dtype.type(1)
    for i in range(x.size):
        v = x[i]
        out[i] = (((v * v) * k + one) * v) * c


@_njit
def tanh_gelu_outer(x: Any, out: Any) -> None:  # pragma: no cover - compiled
    """``out = ((out + 1) * x) * 0.5`` element by element (``out`` holding the tanh): the tanh GELU's last steps."""
    one = x.dtype.type(1)
    half = x.dtype.type(0.5)
    for i in range(x.size):
        out[i] = ((out[i] + one) * x[i]) * half


@_njit
def rotary_rows(x: Any, c: Any, s: Any, crow: Any, srow: Any, h: int, out: Any) -> None:  # pragma: no cover
    """``out = x * c + rotate_half(x) * s`` over rows (2-D, C-contiguous, float32 or float64; ``rotate_half``
    negates the second half ``h:`` of a row and swaps it with the first): a rotary embedding, row ``r`` of ``x``
    with rows ``crow[r]`` of ``c`` and ``srow[r]`` of ``s``; each product and the sum rounded in the type as the
    graph's Mul, Mul and Add do (no contraction into a fused multiply-add). Both halves of a row in one loop, so it
    vectorises (a loop per half with shifted reads does not: 3x slower, measured)."""
    rows = x.shape[0]
    for r in range(rows):
        p = crow[r]
        q = srow[r]
        for i in range(h):
            a = x[r, i]
            b = x[r, i + h]
            out[r, i] = a * c[p, i] + (-b) * s[q, i]
            out[r, i + h] = b * c[p, i + h] + a * s[q, i + h]


@_njit
def _pairwise_leaf(v: Any, lo: int, n: int, zero: Any) -> Any:  # pragma: no cover - compiled
    """numpy's pairwise sum of ``v[lo : lo + n]`` for ``n <= 128`` (a leaf of ``pairwise_sum`` in its loops_utils;
    shared by the CNN family's means and the ML family's sums),
    step for step in the element type: under 8 terms one after the other from 0; else eight running sums (the
    ``k``-th takes the terms ``k, k + 8, ...``) combined as ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))``,
    then the terms after the last multiple of 8 one after the other."""
    if n < 8:
        res = zero
        for i in range(lo, lo + n):
            res += v[i]
        return res
    m = n - n % 8
    r0 = v[lo]
    r1 = v[lo + 1]
    r2 = v[lo + 2]
    r3 = v[lo + 3]
    r4 = v[lo + 4]
    r5 = v[lo + 5]
    r6 = v[lo + 6]
    r7 = v[lo + 7]
    for i in range(lo + 8, lo + m, 8):
        r0 += v[i]
        r1 += v[i + 1]
        r2 += v[i + 2]
        r3 += v[i + 3]
        r4 += v[i + 4]
        r5 += v[i + 5]
        r6 += v[i + 6]
        r7 += v[i + 7]
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(lo + m, lo + n):
        res += v[i]
    return res
