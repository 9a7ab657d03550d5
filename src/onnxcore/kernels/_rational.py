"""float32 ``erf`` and ``tanh`` (and the two GELUs built on them) as rational approximations evaluated in float64
and rounded once (Clause 11: within 0.54 ulp for erf, 0.501 ulp for tanh; the coefficients and their errors in
:mod:`onnxcore.kernels._rational_coef`).

Two paths, one formula: numpy's whole-array passes over blocks of :data:`BLOCK` elements (their float64
temporaries stay in the L2 cache), and, when the accelerator is on, one compiled pass
(:mod:`onnxcore.kernels.accel`) doing the same operations in the same order in float64 registers, so the two give
the same bits. Blocks of a large array run on the kernel threads (:func:`over_blocks`).

numpy has no erf; its float32 ``tanh`` is not the tanh GELU's: within 1.37 ulp where this is within 0.501, and a
vectorised compiled pass of this formula costs less than numpy's ``tanh`` alone (24,576 values: 49 us against
81 us on an AMD EPYC, Zen 3 with AVX2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from onnxcore.kernels import accel
from onnxcore.kernels._rational_coef import ERF_CLAMP, ERF_P, ERF_Q, TANH_CLAMP, TANH_P, TANH_Q
from onnxcore.kernels._scratch import scratch
from onnxcore.kernels.threads import MIN_PARALLEL_ELEMENTS, active_threads, parallel_for

__all__ = ["BLOCK", "TANH_GELU_C", "TANH_GELU_K", "erf32", "over_blocks", "tanh32"]

Array = np.ndarray

BLOCK = 1 << 14
"""Elements per block: a block's float64 temporaries stay in the L2 cache."""

TANH_GELU_K = 0.044715
TANH_GELU_C = math.sqrt(2.0 / math.pi)
"""The tanh GELU's constants (Gelu-20, ``approximate="tanh"``): ``0.5 x (1 + tanh(C (x + K x^3)))``."""


def over_blocks(size: int, span: Callable[[int, int], None]) -> None:
    """``span(i, j)`` over ``[0, size)`` cut at multiples of :data:`BLOCK`: one call per kernel thread's share
    (one thread below ``MIN_PARALLEL_ELEMENTS``)."""

    def run(a: int, b: int) -> None:
        span(a * BLOCK, min(b * BLOCK, size))

    parallel_for(run, -(-size // BLOCK), threads=active_threads() if size >= MIN_PARALLEL_ELEMENTS else 1)


def _odd_rational(
    xb: Array, ub: Array, pb: Array, qb: Array, out: Array, p: Sequence[float], q: Sequence[float]
) -> None:
    """``out = xb * P(xb^2) / Q(xb^2)`` rounded once to ``out``'s type (``xb``: the clamped float64 arguments;
    ``ub``, ``pb``, ``qb``: float64 scratch of its size); Horner's order, as the compiled loops evaluate it."""
    np.square(xb, out=ub)
    np.multiply(ub, p[-1], out=pb)
    pb += p[-2]
    for c in p[-3::-1]:
        pb *= ub
        pb += c
    np.multiply(ub, q[-1], out=qb)
    qb += q[-2]
    for c in q[-3::-1]:
        qb *= ub
        qb += c
    pb *= xb
    np.divide(pb, qb, out=out, casting="same_kind")


def _half_x_one_plus(out: Array, xin: Array) -> None:
    """``out = ((out + 1) * x) * 0.5`` in float32: both GELUs' last steps, done while the block is in cache."""
    out += np.float32(1.0)
    out *= xin
    out *= np.float32(0.5)


def _erf_block(xin: Array, out: Array, bufs: list[Array], scale: float, gelu: bool) -> None:
    """``out = erf(scale * xin)`` for a float32 block of at most :data:`BLOCK` elements (``bufs``: four float64
    and one float32 scratch arrays of that size); with ``gelu``, ``0.5 * xin * (1 + erf(scale * xin))``."""
    n = xin.size
    xb, ub, pb, qb, arg = (b[:n] for b in bufs)
    # Clamping keeps the polynomials finite; NaN passes through (and -0.0 keeps its sign).
    if scale != 1.0:
        # The argument rounded to float32 first, as Erf of a float32 Mul's result would see it.
        np.multiply(xin, np.float32(scale), out=arg)
        np.clip(arg, -ERF_CLAMP, ERF_CLAMP, out=xb)
    else:
        np.clip(xin, -ERF_CLAMP, ERF_CLAMP, out=xb)
    _odd_rational(xb, ub, pb, qb, out, ERF_P, ERF_Q)
    if gelu:
        _half_x_one_plus(out, xin)


def _tanh_block(xin: Array, out: Array, bufs: list[Array], gelu: bool) -> None:
    """``out = tanh(xin)`` for a float32 block (``bufs`` as :func:`_erf_block`'s); with ``gelu``, the tanh GELU:
    its argument ``(((x * x) * K + 1) * x) * C`` in float32 in Gelu-20's order, then ``0.5 * x * (1 + tanh)``."""
    n = xin.size
    xb, ub, pb, qb, arg = (b[:n] for b in bufs)
    if gelu:
        np.multiply(xin, xin, out=arg)
        arg *= np.float32(TANH_GELU_K)
        arg += np.float32(1.0)
        arg *= xin
        arg *= np.float32(TANH_GELU_C)
        # TANH_CLAMP is a float32 value: clamping in float32 here and in float64 in the compiled loop agree.
        np.clip(arg, -TANH_CLAMP, TANH_CLAMP, out=xb)
    else:
        np.clip(xin, -TANH_CLAMP, TANH_CLAMP, out=xb)
    _odd_rational(xb, ub, pb, qb, out, TANH_P, TANH_Q)
    if gelu:
        _half_x_one_plus(out, xin)


def _float32_blocks(
    x: Array, name: str, compiled: Callable[[Array, Array], None] | None, block: Callable[..., None]
) -> Array:
    """A fresh float32 array of ``x``'s shape: ``compiled(xin, out)`` over each thread's share when given, else
    ``block(xin, out, bufs)`` block by block with this thread's scratch buffers ``name.*``."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, np.float32)
    size = flat.size
    if compiled is not None:

        def span_jit(i: int, j: int) -> None:
            compiled(flat[i:j], out[i:j])

        over_blocks(size, span_jit)
        return out.reshape(x.shape)

    def span(i: int, j: int) -> None:
        m = min(size, BLOCK)
        bufs = [scratch(f"{name}.{k}", (m,), np.float64) for k in "xupq"] + [scratch(f"{name}.arg", (m,), np.float32)]
        for a in range(i, j, BLOCK):
            b = min(j, a + BLOCK)
            block(flat[a:b], out[a:b], bufs)

    over_blocks(size, span)
    return out.reshape(x.shape)


def erf32(x: Array, *, scale: float = 1.0, gelu: bool = False) -> Array:
    """erf of ``scale * x`` for a float32 array (a fresh float32 result; the product rounded to float32 first);
    with ``gelu``, ``0.5 * x * (1 + erf(scale * x))``."""
    compiled: Callable[[Array, Array], None] | None = None
    if accel.enabled():
        fn, sc, scaled = accel.jit().erf32, np.float32(scale), scale != 1.0

        def compiled(xin: Array, out: Array) -> None:
            fn(xin, out, sc, scaled, gelu)

    def block(xin: Array, out: Array, bufs: list[Array]) -> None:
        _erf_block(xin, out, bufs, scale, gelu)

    return _float32_blocks(x, "erf32", compiled, block)


def tanh32(x: Array, *, gelu: bool = False) -> Array:
    """tanh of a float32 array (a fresh float32 result); with ``gelu``, the tanh GELU of Gelu-20
    (``approximate="tanh"``), its argument in float32 in the kernel's order."""
    compiled: Callable[[Array, Array], None] | None = None
    if accel.enabled():
        fn, k, c = accel.jit().tanh32, np.float32(TANH_GELU_K), np.float32(TANH_GELU_C)

        def compiled(xin: Array, out: Array) -> None:
            fn(xin, out, gelu, k, c)

    def block(xin: Array, out: Array, bufs: list[Array]) -> None:
        _tanh_block(xin, out, bufs, gelu)

    return _float32_blocks(x, "tanh32", compiled, block)
