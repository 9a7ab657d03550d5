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
    "box_mean2d",
    "depthwise2d",
    "depthwise2d_nhwc",
    "depthwise2d_strided",
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
_njit = numba.njit(cache=True, nogil=True, error_model="numpy")

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


_DW_TILE = 1024  # outputs of a depthwise plane summed through every tap at a time (4 KiB of float32 sums)


@_njit
def _group(left: int) -> int:  # pragma: no cover - compiled
    """How many of the ``left`` taps of a kernel row :func:`_add_taps` takes next: 5, 3, 2 or 1 (a 7-tap row: 5 + 2)."""
    if left >= 5:
        return 5
    if left >= 3:
        return 3
    return left


@_njit
def _add_taps(
    part: Any,
    buf: Any,
    g: int,
    o0: int,
    o1: int,
    o2: int,
    o3: int,
    o4: int,
    w0: Any,
    w1: Any,
    w2: Any,
    w3: Any,
    w4: Any,
) -> None:  # pragma: no cover - compiled
    """``part[q] += w0 * buf[o0 + q]``, then ``+= w1 * buf[o1 + q]`` ... for the first ``g`` (1 to 5) taps, in that
    order (the same sums as one tap at a time, bit for bit), in one pass over ``part``: its sums are loaded and
    stored once for ``g`` taps instead of ``g`` times. The caller keeps every ``o + len(part)`` within ``buf``."""
    n = part.size
    t0 = buf[o0 : o0 + n]
    if g == 1:
        for q in range(n):
            part[q] += w0 * t0[q]
        return
    t1 = buf[o1 : o1 + n]
    if g == 2:
        for q in range(n):
            part[q] = (part[q] + w0 * t0[q]) + w1 * t1[q]
        return
    t2 = buf[o2 : o2 + n]
    if g == 3:
        for q in range(n):
            part[q] = ((part[q] + w0 * t0[q]) + w1 * t1[q]) + w2 * t2[q]
        return
    t3 = buf[o3 : o3 + n]
    t4 = buf[o4 : o4 + n]
    for q in range(n):
        part[q] = ((((part[q] + w0 * t0[q]) + w1 * t1[q]) + w2 * t2[q]) + w3 * t3[q]) + w4 * t4[q]


@_njit
def depthwise2d(
    x: Any,
    w: Any,
    bias: Any,
    out: Any,
    pads: Any,
    strides: Any,
    dilations: Any,
    start: int,
    stop: int,
) -> None:  # pragma: no cover - compiled
    """Depthwise 2-D convolution of the planes ``start..stop`` of ``(N * C)``: ``out[n, c, oy, ox] = sum over taps
    (i, j) of w[c, i, j] * x[n, c, oy * sy - pt + i * dy, ox * sx - pl + j * dx]``, then ``+ bias[c]``, taps
    outside the image being zero. ``x`` ``(N, C, H, W)``, ``w`` ``(C, kh, kw)``, ``bias`` ``(C,)`` (zeros when
    the node has none), ``out`` ``(N, C, oh, ow)``, all C-contiguous of one type; ``pads`` (top, left),
    ``strides`` and ``dilations`` (rows, columns) positive, ``oh`` and ``ow`` those of the convolution.

    Each plane is copied into a zero-padded buffer whose row pitch ``wp`` is a multiple of the column stride, so
    that output ``(oy, ox)`` of tap ``(i, j)`` reads ``buf[sx * q + i * dy * wp + j * dx]`` with ``q = oy * wq +
    ox`` and ``wq = sy * wp / sx``: one loop over ``q`` per tap, long and branch-free (it vectorises), computing
    the columns ``ow..wq`` of each output row too, and a few more after the last row (discarded). The buffer
    holds every index read, so no index depends on data and none leaves the buffer. Used for stride 1 (with a
    stride, the loop reads every sx-th element and computes sy times the rows: :func:`depthwise2d_strided` splits
    the plane into phases instead)."""
    c_count, h, wd = x.shape[1], x.shape[2], x.shape[3]
    kh, kw = w.shape[1], w.shape[2]
    oh, ow = out.shape[2], out.shape[3]
    pt, pl = pads[0], pads[1]
    sy, sx = strides[0], strides[1]
    dy, dx = dilations[0], dilations[1]
    # Row pitch: the padded image's width, at least sx * ow + the kernel's reach, a multiple of sx.
    wp = max(wd + pl, sx * ow + (kw - 1) * dx)
    wp = (wp + sx - 1) // sx * sx
    wq = sy * wp // sx
    # Outputs computed per plane, rounded up to a multiple of 16 (whole vectors; no scalar remainder loop).
    m = (oh * wq + 15) // 16 * 16
    # Room for the image (and its top padding) and for the largest index read.
    size = max((h + pt) * wp, sx * (m - 1) + (kh - 1) * dy * wp + (kw - 1) * dx + 1)
    buf = np.zeros(size, x.dtype)
    acc = np.empty(m, x.dtype)
    for plane in range(start, stop):
        n = plane // c_count
        c = plane - n * c_count
        src = x[n, c]
        for r in range(h):
            line = buf[(r + pt) * wp + pl : (r + pt) * wp + pl + wd]
            srow = src[r]
            for col in range(wd):
                line[col] = srow[col]
        acc[:] = 0
        # A tile of outputs at a time through every tap: its sums stay in the L1 cache (a 112 x 112 plane's do not).
        for q0 in range(0, m, _DW_TILE):
            q1 = min(m, q0 + _DW_TILE)
            part = acc[q0:q1]
            for i in range(kh):
                if sx == 1:
                    # The taps of a kernel row up to five at a time (one pass over the sums for a 3 x 3 or 5 x 5 row).
                    j = 0
                    while j < kw:
                        g = _group(kw - j)
                        o = i * dy * wp + j * dx + q0
                        wr = w[c, i]
                        _add_taps(
                            part, buf, g, o, o + dx, o + 2 * dx, o + 3 * dx, o + 4 * dx,
                            wr[j], wr[min(j + 1, kw - 1)], wr[min(j + 2, kw - 1)], wr[min(j + 3, kw - 1)],
                            wr[min(j + 4, kw - 1)],
                        )  # fmt: skip
                        j += g
                    continue
                for j in range(kw):
                    wv = w[c, i, j]
                    off = i * dy * wp + j * dx + sx * q0
                    # A view per tap indexed from 0 (an index ``off + q`` would keep LLVM from vectorising).
                    taps = buf[off : off + sx * (q1 - q0 - 1) + 1 : sx]
                    for q in range(q1 - q0):
                        part[q] += wv * taps[q]
        b = bias[c]
        dst = out[n, c]
        for oy in range(oh):
            arow = acc[oy * wq : oy * wq + ow]
            drow = dst[oy]
            for ox in range(ow):
                drow[ox] = arow[ox] + b


@_njit
def depthwise2d_strided(
    x: Any,
    w: Any,
    bias: Any,
    out: Any,
    pads: Any,
    strides: Any,
    dilations: Any,
    start: int,
    stop: int,
) -> None:  # pragma: no cover - compiled
    """:func:`depthwise2d` with strides (any; measured faster than it where a stride exceeds 1).

    Each plane is copied, zero-padded, into ``sy * sx`` phase buffers (padded row ``r``, column ``q`` go to
    phase ``(r % sy, q % sx)`` at ``(r // sy, q // sx)``, row pitch ``wph``), so that tap ``(i, j)`` reads, for
    output ``(oy, ox)``, element ``(oy + i * dy // sy) * wph + ox + j * dx // sx`` of phase ``(i * dy % sy, j * dx
    % sx)``: one contiguous loop over ``q = oy * wph + ox`` per tap, long and branch-free (it vectorises),
    computing the columns ``ow..wph`` of each output row too and a few more after the last (discarded). Each
    phase buffer holds every index read, so no index depends on data and none leaves a buffer."""
    c_count, h, wd = x.shape[1], x.shape[2], x.shape[3]
    kh, kw = w.shape[1], w.shape[2]
    oh, ow = out.shape[2], out.shape[3]
    pt, pl = pads[0], pads[1]
    sy, sx = strides[0], strides[1]
    dy, dx = dilations[0], dilations[1]
    # The padded extents every output reads (and the image with its top and left padding).
    hp = max(h + pt, (oh - 1) * sy + (kh - 1) * dy + 1)
    wp = max(wd + pl, (ow - 1) * sx + (kw - 1) * dx + 1)
    hph = (hp + sy - 1) // sy
    wph = (wp + sx - 1) // sx
    # Outputs computed per plane, rounded up to a multiple of 16 (whole vectors; no scalar remainder loop).
    m = (oh * wph + 15) // 16 * 16
    size = max(hph * wph, m + ((kh - 1) * dy // sy) * wph + (kw - 1) * dx // sx)
    # One flat buffer, phase after phase: 1-D slices of it are contiguous to numba (2-D ones are not).
    buf = np.zeros(sy * sx * size, x.dtype)
    acc = np.empty(m, x.dtype)
    for plane in range(start, stop):
        n = plane // c_count
        c = plane - n * c_count
        src = x[n, c]
        for r in range(h):
            pr = r + pt
            srow = src[r]
            rbase = (pr // sy) * wph
            if sx == 1:
                base = (pr % sy) * size + rbase + pl
                line = buf[base : base + wd]
                for col in range(wd):
                    line[col] = srow[col]
                continue
            if sx == 2:
                # Columns 2t and 2t + 1 of the image (padded columns 2t + pl and 2t + 1 + pl) go to place t + pl // 2
                # of phase pl % 2 and place t + (pl + 1) // 2 of the other: one loop reading the row in order, its
                # stride a constant (vectorised; a phase at a time with a variable stride is a scalar loop 8x slower).
                half = wd // 2
                pa = pl % 2
                ka = ((pr % sy) * 2 + pa) * size + rbase + pl // 2
                kb = ((pr % sy) * 2 + 1 - pa) * size + rbase + (pl + 1) // 2
                la = buf[ka : ka + half]
                lb = buf[kb : kb + half]
                for t in range(half):
                    la[t] = srow[2 * t]
                    lb[t] = srow[2 * t + 1]
                if wd % 2:
                    buf[ka + half] = srow[wd - 1]
                continue
            for p in range(sx):
                # The columns of phase p: col0, col0 + sx, ... at consecutive places from (col0 + pl) // sx.
                col0 = (p - pl) % sx
                k = ((pr % sy) * sx + p) * size + rbase + (col0 + pl) // sx
                seg = srow[col0::sx]
                line = buf[k : k + seg.size]
                for col in range(seg.size):
                    line[col] = seg[col]
        acc[:] = 0
        for q0 in range(0, m, _DW_TILE):
            q1 = min(m, q0 + _DW_TILE)
            part = acc[q0:q1]
            for i in range(kh):
                # The taps of a kernel row up to five at a time (each in its phase; one pass over the sums for a
                # 3 x 3 or 5 x 5 row).
                rbase = ((i * dy) % sy) * sx * size + ((i * dy) // sy) * wph + q0
                wr = w[c, i]
                j = 0
                while j < kw:
                    g = _group(kw - j)
                    o0 = rbase + ((j * dx) % sx) * size + (j * dx) // sx
                    jj = min(j + 1, kw - 1)
                    o1 = rbase + ((jj * dx) % sx) * size + (jj * dx) // sx
                    jj = min(j + 2, kw - 1)
                    o2 = rbase + ((jj * dx) % sx) * size + (jj * dx) // sx
                    jj = min(j + 3, kw - 1)
                    o3 = rbase + ((jj * dx) % sx) * size + (jj * dx) // sx
                    jj = min(j + 4, kw - 1)
                    o4 = rbase + ((jj * dx) % sx) * size + (jj * dx) // sx
                    _add_taps(
                        part, buf, g, o0, o1, o2, o3, o4, wr[j], wr[min(j + 1, kw - 1)], wr[min(j + 2, kw - 1)],
                        wr[min(j + 3, kw - 1)], wr[min(j + 4, kw - 1)],
                    )  # fmt: skip
                    j += g
        b = bias[c]
        dst = out[n, c]
        for oy in range(oh):
            arow = acc[oy * wph : oy * wph + ow]
            drow = dst[oy]
            for ox in range(ow):
                drow[ox] = arow[ox] + b


@_njit
def depthwise2d_nhwc(
    x: Any,
    w: Any,
    bias: Any,
    out: Any,
    pads: Any,
    strides: Any,
    dilations: Any,
    start: int,
    stop: int,
) -> None:  # pragma: no cover - compiled
    """:func:`depthwise2d` channels-last, for small images with many channels: ``x`` ``(N, H, W, C)``, ``w`` ``(kh,
    kw, C)``, ``out`` ``(N, oh, ow, C)``, for the output rows ``start..stop`` of ``(N * oh)``. The innermost loop
    runs over the channels (contiguous, vectorised); the taps are added in the same order as
    :func:`depthwise2d`'s, then the bias. Taps outside the image are skipped by the row and column tests, so
    every index read is inside ``x``."""
    h, wd, c_count = x.shape[1], x.shape[2], x.shape[3]
    kh, kw = w.shape[0], w.shape[1]
    oh, ow = out.shape[1], out.shape[2]
    pt, pl = pads[0], pads[1]
    sy, sx = strides[0], strides[1]
    dy, dx = dilations[0], dilations[1]
    for row in range(start, stop):
        n = row // oh
        oy = row - n * oh
        for ox in range(ow):
            acc = out[n, oy, ox]
            for c in range(c_count):
                acc[c] = 0
            for i in range(kh):
                iy = oy * sy - pt + i * dy
                if iy < 0 or iy >= h:
                    continue
                for j in range(kw):
                    ix = ox * sx - pl + j * dx
                    if ix < 0 or ix >= wd:
                        continue
                    src = x[n, iy, ix]
                    wr = w[i, j]
                    for c in range(c_count):
                        acc[c] += wr[c] * src[c]
            for c in range(c_count):
                acc[c] += bias[c]


@_njit
def box_mean2d(
    x: Any,
    kh: int,
    kw: int,
    pt: int,
    pl: int,
    w: int,
    plane: int,
    hmask: Any,
    vmask: Any,
    divt: Any,
    hs: Any,
    out: Any,
    start: int,
    stop: int,
) -> None:  # pragma: no cover - compiled
    """2-D AveragePool with stride 1 and dilation 1 whose output has the input's extents (``pt + pb = kh - 1``,
    ``pl + pr = kw - 1``), on the flattened planes: for the planes ``start..stop`` of ``x`` (``plane = h * w``
    values each, rows of ``w``), ``out[q] = (sum over i < kh, j < kw of x[q + (i - pt) * w + j - pl], the taps
    outside the plane left out) / divt[q % L]``.

    Separable, ``per = L // plane`` planes at a time (``L = len(divt)``): the ``kw``-sums along the rows into
    ``hs`` as one long loop per tap, then the ``kh``-sums down the columns as one long loop per tap, then the
    division; every loop vectorised and long however narrow the image (a loop per row of a 7 x 7 plane would not
    be), no padded copy. A tap is taken where ``hmask[j, t]`` (its column inside the row) and ``vmask[i, t]`` (its
    row inside the plane) say, ``t`` the place in the block: a select, so a value of another row or plane (an
    infinity, a NaN) never enters. Each tap's loop covers only the places whose source index is inside ``x`` (or
    the block's row sums), so no index leaves the arrays."""
    n = x.size
    per = divt.size // plane
    zero = np.zeros(1, x.dtype)[0]
    for p0 in range(start, stop, per):
        base = p0 * plane
        length = (min(stop, p0 + per) - p0) * plane
        h_ = hs[0:length]
        for t in range(length):
            h_[t] = zero
        for j in range(kw):
            off = j - pl
            lo = max(0, -(base + off))
            hi = min(length, n - base - off)
            if hi <= lo:
                continue
            src = x[base + lo + off : base + hi + off]
            m = hmask[j, lo:hi]
            dst = hs[lo:hi]
            for t in range(hi - lo):
                dst[t] += src[t] if m[t] else zero
        a = out[base : base + length]
        for t in range(length):
            a[t] = zero
        for i in range(kh):
            off = (i - pt) * w
            lo = max(0, -off)
            hi = min(length, length - off)
            if hi <= lo:
                continue
            src = hs[lo + off : hi + off]
            m = vmask[i, lo:hi]
            dst = out[base + lo : base + hi]
            for t in range(hi - lo):
                dst[t] += src[t] if m[t] else zero
        d = divt[0:length]
        for t in range(length):
            a[t] = a[t] / d[t]


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
