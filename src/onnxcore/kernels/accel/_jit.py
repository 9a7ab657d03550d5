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

from onnxcore.kernels._erf_coef import ERF_CLAMP, ERF_P, ERF_Q

__all__ = [
    "hard_swish_rows",
    "gelu32_rows",
    "bias_gelu32",
    "erf32",
    "hard_swish",
    "layer_norm_rows",
    "rms_norm_rows",
    "swish32",
    "tree_predict_groups",
    "tree_predict_rows",
    "tree_states",
    "tree_states_uniform",
    "tree_sum_groups",
    "tree_sum_rows",
]

# error_model="numpy": a float division by zero gives inf/NaN as in numpy instead of raising, which also lets LLVM
# vectorise the loops (a Python-style check per division would not). No fastmath: IEEE operations in the order
# written, so results match the numpy kernels'.
_njit: Any = numba.njit(cache=True, nogil=True, error_model="numpy")

_P0, _P1, _P2, _P3, _P4, _P5, _P6 = ERF_P
_Q0, _Q1, _Q2, _Q3, _Q4, _Q5 = ERF_Q
_HI = ERF_CLAMP


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
        p = p * v
        r = np.float32(p / q)
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
    one = np.float32(1.0)
    half = np.float32(0.5)
    c_count = x.shape[1]
    for r in range(start, stop):
        xr = x[r]
        orow = out[r]
        for i in range(c_count):
            a = xr[i] + bias[i]
            v = np.float64(a * scale)
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
            p = p * v
            e = np.float32(p / q)
            e = e + one
            e = e * a
            orow[i] = e * half


@_njit
def gelu32_rows(x: Any, bias: Any, out: Any, scale: Any, start: int, stop: int) -> None:  # pragma: no cover
    """The erf GELU of ``x[r] + bias[r % len(bias)]`` for the rows ``start..stop`` of ``x`` ``(rows, inner)``
    (float32; a Conv's output, its rows the planes of its channels, and the Conv's bias): ``a = x + b`` rounded to
    float32 (as the Conv kernel adds its bias), then :func:`erf32`'s GELU of ``a``; one pass, the same results bit
    for bit as the Conv's bias and the Gelu kernel one after the other."""
    one = np.float32(1.0)
    half = np.float32(0.5)
    nb = bias.size
    for r in range(start, stop):
        xr = x[r]
        orow = out[r]
        b = bias[r % nb]
        for i in range(xr.size):
            a = xr[i] + b
            v = np.float64(a * scale)
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
            p = p * v
            e = np.float32(p / q)
            e = e + one
            e = e * a
            orow[i] = e * half


@_njit
def hard_swish(x: Any, out: Any, sixth: Any, half: Any) -> None:  # pragma: no cover - compiled
    """``out = x * clip(x / 6 + 1/2, 0, 1)`` (1-D, float32 or float64; ``sixth`` and ``half`` of the element
    type): the numpy kernel's operations in its order."""
    zero = half - half
    one = half + half
    for i in range(x.size):
        xi = x[i]
        y = xi * sixth + half
        # numpy.maximum / minimum: NaN stays NaN; the bounds are +0 and 1.
        if y < zero:
            y = zero
        if y > one:
            y = one
        out[i] = y * xi


@_njit
def hard_swish_rows(
    x: Any, bias: Any, out: Any, sixth: Any, half: Any, start: int, stop: int
) -> None:  # pragma: no cover
    """:func:`hard_swish` of ``x[r] + bias[r % len(bias)]`` for the rows ``start..stop`` of ``x`` ``(rows, inner)``
    (a Conv's output, its rows the planes of its channels, and the Conv's bias): the addition rounded to the element
    type (as the Conv kernel adds its bias), then the numpy kernel's operations in its order; one pass, the same
    results bit for bit as the Conv's bias and the HardSwish kernel one after the other."""
    zero = half - half
    one = half + half
    nb = bias.size
    for r in range(start, stop):
        xr = x[r]
        orow = out[r]
        b = bias[r % nb]
        for i in range(xr.size):
            xi = xr[i] + b
            y = xi * sixth + half
            if y < zero:
                y = zero
            if y > one:
                y = one
            orow[i] = y * xi


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


_LANES_SUM = 16  # partial sums of a row reduction (vectorised; no fastmath, so the order is written out)


@_njit
def _row_sum(xr: Any, part: Any) -> Any:  # pragma: no cover - compiled
    """The sum of ``xr`` in its type: sixteen partial sums over the row, then added in order, then the tail."""
    d = xr.size
    d16 = d - d % _LANES_SUM
    part[:] = 0
    for i in range(0, d16, _LANES_SUM):
        blk = xr[i : i + _LANES_SUM]
        for lane in range(_LANES_SUM):
            part[lane] += blk[lane]
    s = part[0]
    for lane in range(1, _LANES_SUM):
        s += part[lane]
    for i in range(d16, d):
        s += xr[i]
    return s


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
    part = np.empty(_LANES_SUM, x.dtype)
    n = x.shape[1]
    for r in range(start, stop):
        xr = x[r]
        orow = out[r]
        m = _row_sum(xr, part) / d
        for i in range(n):
            orow[i] = xr[i] - m
        v = np.sqrt(_sum_squares(orow, part) / d + eps)
        iv = d / d / v  # 1 / v in the element type
        if has_bias:
            for i in range(n):
                orow[i] = orow[i] * iv * scale[i] + bias[i]
        else:
            for i in range(n):
                orow[i] = orow[i] * iv * scale[i]
        mean[r] = m
        inv[r] = iv


@_njit
def _sum_squares(xr: Any, part: Any) -> Any:  # pragma: no cover - compiled
    """The sum of ``xr * xr`` in its type, as :func:`_row_sum` adds."""
    d = xr.size
    d16 = d - d % _LANES_SUM
    part[:] = 0
    for i in range(0, d16, _LANES_SUM):
        blk = xr[i : i + _LANES_SUM]
        for lane in range(_LANES_SUM):
            part[lane] += blk[lane] * blk[lane]
    s = part[0]
    for lane in range(1, _LANES_SUM):
        s += part[lane]
    for i in range(d16, d):
        s += xr[i] * xr[i]
    return s


@_njit
def rms_norm_rows(x: Any, scale: Any, d: Any, eps: Any, out: Any, start: int, stop: int) -> None:  # pragma: no cover
    """RMSNormalization of the rows ``start..stop`` of ``x`` ``(rows, D)`` in its type: ``out = x / sqrt(mean(x^2)
    + eps) * scale`` (the numpy kernel's steps, its sum in another order)."""
    part = np.empty(_LANES_SUM, x.dtype)
    n = x.shape[1]
    for r in range(start, stop):
        xr = x[r]
        orow = out[r]
        ms = np.sqrt(_sum_squares(xr, part) / d + eps)
        for i in range(n):
            orow[i] = xr[i] / ms * scale[i]


_LEAF = 7
_LANES = 16  # rows walked together through one tree
_MEMBER = 6


@_njit
def tree_states(
    x: Any,
    feature: Any,
    threshold: Any,
    child: Any,
    mode: Any,
    miss: Any,
    member_row: Any,
    member_sets: Any,
    roots: Any,
    depth: Any,
    out: Any,
    start: int,
    stop: int,
) -> None:  # pragma: no cover - compiled
    """For trees ``start..stop`` and every row of ``x`` ``(N, F)``: the state ``2 * leaf`` the row reaches,
    into ``out[tree, row]``. Tables by state ``s = 2 * node`` (``feature``, ``threshold``, ``mode`` (0-5 the
    comparisons of BRANCH_LEQ..BRANCH_NEQ, 6 BRANCH_MEMBER, 7 a leaf), ``miss``, ``member_row``) and ``child``
    (``child[s]`` the false child's state, ``child[s + 1]`` the true one's).

    The caller has validated (``CompiledForest._validated_tables``): every child, root and state in
    ``[0, len(child))``, even; every feature of an interior node in ``[0, F)``; every member row of a
    BRANCH_MEMBER node in ``[0, len(member_sets))``; ``depth[t]`` bounds the walk (a leaf ends it sooner)."""
    n = x.shape[0]
    lanes = np.empty(_LANES, np.intp)
    for t in range(start, stop):
        root = roots[t]
        steps = depth[t]
        # _LANES rows walk the tree together: independent chains of loads the processor overlaps.
        for r0 in range(0, n, _LANES):
            k = min(_LANES, n - r0)
            for lane in range(k):
                lanes[lane] = root
            for _ in range(steps):
                for lane in range(k):
                    s = lanes[lane]
                    md = mode[s]
                    if md == _LEAF:
                        continue
                    v = x[r0 + lane, feature[s]]
                    th = threshold[s]
                    if md == 0:
                        c = v <= th
                    elif md == 1:
                        c = v < th
                    elif md == 2:
                        c = v >= th
                    elif md == 3:
                        c = v > th
                    elif md == 4:
                        c = v == th
                    elif md == 5:
                        c = v != th
                    else:
                        c = False
                        sets = member_sets[member_row[s]]
                        for j in range(sets.size):
                            if sets[j] == v:
                                c = True
                                break
                    if miss[s] and v != v:
                        c = True
                    # An index, not a branch: the outcome is data, a branch on it mispredicts half the time.
                    lanes[lane] = child[s + np.intp(c)]
            for lane in range(k):
                out[t, r0 + lane] = lanes[lane]


@_njit
def _compare(code: int, v: Any, th: Any) -> bool:  # pragma: no cover - compiled
    """``v <mode> th`` for the comparison codes 0-5 (BRANCH_LEQ, LT, GTE, GT, EQ, NEQ)."""
    if code == 0:
        return v <= th
    if code == 1:
        return v < th
    if code == 2:
        return v >= th
    if code == 3:
        return v > th
    if code == 4:
        return v == th
    return v != th


@_njit
def tree_states_uniform(
    x: Any, feature: Any, threshold: Any, child: Any, code: int, roots: Any, depth: Any, out: Any, start: int, stop: int
) -> None:  # pragma: no cover - compiled
    """:func:`tree_states` when every interior node makes the comparison ``code`` (0-5) and no NaN is routed: node
    tables (``feature``, ``threshold`` by node; ``child[2 * i]`` the false child node of node ``i``,
    ``child[2 * i + 1]`` the true one; a leaf is its own child with feature 0), ``roots`` as nodes; writes states
    ``2 * leaf``. Each tree takes exactly ``depth[t]`` steps (a row at a leaf stays there), so the loop has no
    branch on the data.

    The caller has validated every child and root in ``[0, len(feature))`` and every feature in ``[0, F)`` (F >= 1
    whenever some depth is positive)."""
    n = x.shape[0]
    lanes = np.empty(_LANES, np.intp)
    if n < _LANES:
        # Few rows: sixteen trees walked together for each row (independent chains of loads overlap).
        for r in range(n):
            xr = x[r]
            for t0 in range(start, stop, _LANES):
                k = min(_LANES, stop - t0)
                most = 0
                for lane in range(k):
                    lanes[lane] = roots[t0 + lane]
                    most = max(most, depth[t0 + lane])
                for _ in range(most):
                    for lane in range(k):
                        s = lanes[lane]
                        c = _compare(code, xr[feature[s]], threshold[s])
                        # A tree past its depth is at a leaf, its own child: the step changes nothing.
                        lanes[lane] = child[2 * s + np.intp(c)]
                for lane in range(k):
                    out[t0 + lane, r] = 2 * lanes[lane]
        return
    for t in range(start, stop):
        root = roots[t]
        steps_t = depth[t]
        # Sixteen rows walk the tree together: independent chains of loads the processor overlaps.
        for r0 in range(0, n, _LANES):
            k = min(_LANES, n - r0)
            xb = x[r0 : r0 + k]
            for lane in range(k):
                lanes[lane] = root
            for _ in range(steps_t):
                for lane in range(k):
                    s = lanes[lane]
                    c = _compare(code, xb[lane, feature[s]], threshold[s])
                    lanes[lane] = child[2 * s + np.intp(c)]
            for lane in range(k):
                out[t, r0 + lane] = 2 * lanes[lane]


@_njit
def tree_sum_groups(states: Any, leaf_value: Any, order: Any, offsets: Any, acc: Any) -> None:  # pragma: no cover
    """Per target ``j`` and row ``r``: ``acc[r, j] += leaf_value[states[t, r]]`` for the trees ``t`` of
    ``order[offsets[j]:offsets[j + 1]]``, one after the other (the numpy path's order: the same sums bit for bit).
    Validated by the caller: ``order`` within ``states``' trees, ``offsets`` nondecreasing within ``order``, every
    state within ``leaf_value``."""
    n = states.shape[1]
    for j in range(offsets.size - 1):
        for p in range(offsets[j], offsets[j + 1]):
            srow = states[order[p]]
            for r in range(n):
                acc[r, j] += leaf_value[srow[r]]


@_njit
def tree_sum_rows(states: Any, w_row: Any, w_sum: Any, order: Any, acc: Any) -> None:  # pragma: no cover
    """``acc[r, :] += w_sum[w_row[states[t, r]], :]`` for the trees ``t`` of ``order``, one after the other (the
    numpy path's order). Validated by the caller: ``order`` within ``states``' trees, every state within ``w_row``,
    every weight row within ``w_sum``."""
    n, k = acc.shape
    for p in range(order.size):
        srow = states[order[p]]
        for r in range(n):
            wr = w_sum[w_row[srow[r]]]
            ar = acc[r]
            for j in range(k):
                ar[j] += wr[j]


@_njit
def tree_predict_groups(
    x: Any,
    feature: Any,
    threshold: Any,
    child: Any,
    code: int,
    roots: Any,
    depth: Any,
    leaf_value: Any,
    order: Any,
    offsets: Any,
    acc: Any,
) -> None:  # pragma: no cover - compiled
    """:func:`tree_states_uniform` over every tree, then :func:`tree_sum_groups` into ``acc``, in one call (a small
    batch pays one dispatch instead of two and no state array made by the caller). Validated by the caller as
    those two are."""
    states = np.empty((roots.size, x.shape[0]), np.intp)
    tree_states_uniform(x, feature, threshold, child, code, roots, depth, states, 0, roots.size)
    tree_sum_groups(states, leaf_value, order, offsets, acc)


@_njit
def tree_predict_rows(
    x: Any,
    feature: Any,
    threshold: Any,
    child: Any,
    code: int,
    roots: Any,
    depth: Any,
    w_row: Any,
    w_sum: Any,
    order: Any,
    acc: Any,
) -> None:  # pragma: no cover - compiled
    """:func:`tree_states_uniform` over every tree, then :func:`tree_sum_rows` into ``acc``, in one call. Validated by
    the caller as those two are."""
    states = np.empty((roots.size, x.shape[0]), np.intp)
    tree_states_uniform(x, feature, threshold, child, code, roots, depth, states, 0, roots.size)
    tree_sum_rows(states, w_row, w_sum, order, acc)
