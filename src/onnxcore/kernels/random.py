"""Random generators, every version of the default domain (ONNX 1-2).

RandomNormal, RandomUniform, RandomNormalLike, RandomUniformLike, Bernoulli and Multinomial.
Version 22 of each only adds bfloat16 to the admitted types (checked against ``onnx.defs``), so
one kernel serves both versions.

These operators are non-deterministic (Clause 8.5, 11.6): only the distribution is specified.
With the ``seed`` attribute, the numbers come from a generator seeded with the bits of that
float, so the same seed gives the same numbers within onnxcore (not the numbers of another
runtime). Without it, the session's generator (``KernelContext.rng``) is used, else a fresh
``numpy.random.default_rng()``. Samples are drawn in float64 and rounded once to the output type.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels._util import check_elements, is_float
from onnxcore.kernels.registry import KernelContext, kernel
from onnxcore.types.elements import ElementType

__all__: list[str] = []

_FLOAT_OUT = (ElementType.FLOAT16, ElementType.FLOAT, ElementType.DOUBLE, ElementType.BFLOAT16)


def _rng(ctx: KernelContext | None, seed: float | None) -> np.random.Generator:
    if seed is not None:
        bits = struct.unpack("<Q", struct.pack("<d", float(seed)))[0]
        return np.random.default_rng(bits)
    rng = getattr(ctx, "rng", None)
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng()


def _float_type(tag: Any, what: str) -> np.dtype[Any]:
    try:
        et = ElementType(int(tag))
    except ValueError:
        raise EvaluationError(f"{what}: dtype {tag} is not an element type") from None
    if et not in _FLOAT_OUT:
        raise EvaluationError(f"{what}: dtype {et.name} is not a floating-point type")
    return np.dtype(et.np_dtype)


def _shape(shape: Any, what: str) -> tuple[int, ...]:
    dims = tuple(int(d) for d in shape)
    check_elements(dims, what, itemsize=8)  # numpy draws float64 samples, then casts
    return dims


def _like_type(x: np.ndarray, dtype: int | None, what: str) -> np.dtype[Any]:
    if dtype is not None:
        return _float_type(dtype, what)
    if not is_float(x.dtype) or x.dtype == np.dtype(object):
        raise EvaluationError(f"{what}: the input type {x.dtype} is not a float type; give the dtype attribute")
    return _float_type(ElementType.from_dtype(x.dtype), what)


def _check_scale(scale: float, what: str) -> None:
    """A standard deviation below zero names no distribution: refused. NaN and infinity are IEEE's (NaN, +-inf)."""
    if scale < 0:
        raise EvaluationError(f"{what}: scale (the standard deviation) is {scale}, below zero")


@kernel("RandomNormal", 1, 22, context=True)
def random_normal(
    ctx: KernelContext,
    *,
    shape: list[int],
    dtype: int = 1,
    mean: float = 0.0,
    scale: float = 1.0,
    seed: float | None = None,
) -> np.ndarray:
    """RandomNormal: samples of N(mean, scale**2) of the given shape."""
    dims = _shape(shape, "RandomNormal")
    dt = _float_type(dtype, "RandomNormal")
    _check_scale(scale, "RandomNormal")
    return _rng(ctx, seed).normal(mean, scale, dims).astype(dt)


@kernel("RandomUniform", 1, 22, context=True)
def random_uniform(
    ctx: KernelContext,
    *,
    shape: list[int],
    dtype: int = 1,
    low: float = 0.0,
    high: float = 1.0,
    seed: float | None = None,
) -> np.ndarray:
    """RandomUniform: samples of U[low, high) of the given shape."""
    dims = _shape(shape, "RandomUniform")
    dt = _float_type(dtype, "RandomUniform")
    return _uniform(_rng(ctx, seed), low, high, dims, dt)


def _uniform(rng: np.random.Generator, low: float, high: float, dims: tuple[int, ...], dt: np.dtype[Any]) -> np.ndarray:
    if not (math.isfinite(low) and math.isfinite(high)) or high < low:
        raise EvaluationError(f"RandomUniform: [{low}, {high}) is not a finite interval")
    y = rng.uniform(low, high, dims).astype(dt)
    # Rounding to a narrower type can reach ``high`` itself: keep the half-open interval.
    if high > low and y.size:
        top = np.asarray(high).astype(dt)
        if float(top) >= high:
            top = _step_down(top)
        y = np.where(y.astype(np.float64) >= high, top, y).astype(dt)
    return np.asarray(y)


def _step_down(v: np.ndarray) -> np.ndarray:
    """The greatest value of ``v``'s (IEEE-like binary float) type below the 0-d ``v``."""
    ut = np.dtype(f"u{v.dtype.itemsize}")
    bits = int(np.asarray(v).reshape(()).view(ut))
    sign = 1 << (8 * v.dtype.itemsize - 1)
    if float(v) > 0:
        bits -= 1
    elif float(v) == 0:
        bits = sign | 1
    else:
        bits += 1
    return np.asarray(bits, dtype=ut).view(v.dtype)


@kernel("RandomNormalLike", 1, 22, context=True)
def random_normal_like(
    ctx: KernelContext,
    input: np.ndarray,
    *,
    dtype: int | None = None,
    mean: float = 0.0,
    scale: float = 1.0,
    seed: float | None = None,
) -> np.ndarray:
    """RandomNormalLike: RandomNormal with the input's shape (and type unless ``dtype`` is given)."""
    x = np.asarray(input)
    dt = _like_type(x, dtype, "RandomNormalLike")
    _check_scale(scale, "RandomNormalLike")
    return _rng(ctx, seed).normal(mean, scale, x.shape).astype(dt)


@kernel("RandomUniformLike", 1, 22, context=True)
def random_uniform_like(
    ctx: KernelContext,
    input: np.ndarray,
    *,
    dtype: int | None = None,
    low: float = 0.0,
    high: float = 1.0,
    seed: float | None = None,
) -> np.ndarray:
    """RandomUniformLike: RandomUniform with the input's shape (and type unless ``dtype`` is given)."""
    x = np.asarray(input)
    dt = _like_type(x, dtype, "RandomUniformLike")
    return _uniform(_rng(ctx, seed), low, high, x.shape, dt)


@kernel("Bernoulli", 15, 22, context=True)
def bernoulli(
    ctx: KernelContext, input: np.ndarray, *, dtype: int | None = None, seed: float | None = None
) -> np.ndarray:
    """Bernoulli: 1 with probability ``input`` (each element in [0, 1]), else 0, as ``dtype`` (default: the input's)."""
    p = np.asarray(input)
    if not is_float(p.dtype):
        raise EvaluationError(f"Bernoulli: the input must be a float tensor, got {p.dtype}")
    pf = p.astype(np.float64)
    if np.any((pf < 0) | (pf > 1) | np.isnan(pf)):
        raise EvaluationError("Bernoulli: probabilities must lie in [0, 1]")
    if dtype is None:
        out: np.dtype[Any] = p.dtype
    else:
        try:
            out = np.dtype(ElementType(int(dtype)).np_dtype)
        except ValueError:
            raise EvaluationError(f"Bernoulli: dtype {dtype} is not an element type") from None
    u = _rng(ctx, seed).random(p.shape)
    return (u < pf).astype(out)


@kernel("Multinomial", 7, 22, context=True)
def multinomial(
    ctx: KernelContext, input: np.ndarray, *, dtype: int = 6, sample_size: int = 1, seed: float | None = None
) -> np.ndarray:
    """Multinomial: ``sample_size`` class indices per batch row, drawn with probabilities softmax(input row).

    The input ``[batch, classes]`` holds unnormalized log-probabilities; output ``[batch,
    sample_size]`` of int32 (default) or int64.
    """
    x = np.asarray(input)
    if x.ndim != 2:
        raise EvaluationError(f"Multinomial: input must be [batch, classes], got shape {x.shape}")
    if int(dtype) not in (ElementType.INT32, ElementType.INT64):
        raise EvaluationError(f"Multinomial: dtype must be int32 or int64, got {dtype}")
    out = np.dtype(ElementType(int(dtype)).np_dtype)
    batch, classes = x.shape
    if sample_size < 0:
        raise EvaluationError(f"Multinomial: sample_size {sample_size} is negative")
    check_elements((batch, sample_size), "Multinomial")
    if batch == 0 or sample_size == 0:
        return np.zeros((batch, sample_size), out)
    if classes == 0:
        raise EvaluationError("Multinomial: no classes to draw from")
    logits = x.astype(np.float64)
    logits = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    cdf = np.cumsum(probs, axis=1)
    cdf /= cdf[:, -1:]
    u = _rng(ctx, seed).random((batch, sample_size))
    # Inverse-CDF sampling of every row in one search: row r's CDF is shifted into [r, r + 1].
    rows = np.arange(batch, dtype=np.float64)[:, None]
    flat = (cdf + rows).ravel()
    idx = np.searchsorted(flat, (u + rows).ravel(), side="right").reshape(batch, sample_size)
    idx = idx - np.arange(batch)[:, None] * classes
    return np.clip(idx, 0, classes - 1).astype(out)
