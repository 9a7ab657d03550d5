"""Normalization kernels (Clause 8; ONNX 1-2 definitions): BatchNormalization, InstanceNormalization,
LayerNormalization, GroupNormalization, LRN, LpNormalization, MeanVarianceNormalization,
RMSNormalization.

Statistics are computed in float32 for float16 and the narrow floats (float64 stays float64) and
every output is rounded once; where a definition has ``stash_type`` the first stage uses it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels._rowwise import group_norm_compiled, layer_norm_rows, rms_norm_rows
from onnxcore.kernels._util import check_unidirectional, float_sum, normalize_axes, normalize_axis, short_sum
from onnxcore.kernels.conv import work_dtype
from onnxcore.kernels.registry import KernelContext, kernel
from onnxcore.types.elements import ElementType

__all__: list[str] = []


def _channel_shape(x: np.ndarray) -> tuple[int, ...]:
    return (1, -1) + (1,) * (x.ndim - 2)


def _check_channel_param(p: np.ndarray, name: str, expected: tuple[int, ...]) -> None:
    if p.shape != expected:
        raise ShapeError(f"{name} must have shape {expected}, got {p.shape}")


# ---------------------------------------------------------------------------------------------
# BatchNormalization
# ---------------------------------------------------------------------------------------------


def _bn_inference(
    x: np.ndarray, scale: np.ndarray, b: np.ndarray, mean: np.ndarray, var: np.ndarray, epsilon: float,
    pshape: tuple[int, ...],
) -> np.ndarray:  # fmt: skip
    wd = work_dtype(x.dtype)
    # Fold the statistics into one multiply-add per element: y = x * inv + (B - mean * inv).
    s = scale.astype(wd, copy=False).reshape(pshape)
    inv = (s / np.sqrt(var.astype(wd, copy=False).reshape(pshape) + wd.type(epsilon))).astype(wd, copy=False)
    shift = (b.astype(wd, copy=False).reshape(pshape) - mean.astype(wd, copy=False).reshape(pshape) * inv).astype(
        wd, copy=False
    )
    y = np.multiply(x, inv, dtype=wd)
    y += shift
    return y.astype(x.dtype, copy=False)


def _bn_training(
    x: np.ndarray, scale: np.ndarray, b: np.ndarray, mean: np.ndarray, var: np.ndarray, epsilon: float,
    momentum: float, axes: tuple[int, ...], pshape: tuple[int, ...],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Y from the batch statistics; running mean/var; batch mean and (population) variance."""
    wd = work_dtype(x.dtype)
    xw = x.astype(wd)
    bmean = xw.mean(axis=axes)
    bvar = xw.var(axis=axes)
    y = _bn_inference(x, scale, b, bmean, bvar, epsilon, pshape)
    pdt = mean.dtype
    mw = work_dtype(pdt)
    run_mean = mean.astype(mw) * mw.type(momentum) + bmean.astype(mw) * mw.type(1 - momentum)
    run_var = var.astype(mw) * mw.type(momentum) + bvar.astype(mw) * mw.type(1 - momentum)
    return (
        y,
        run_mean.astype(pdt),
        run_var.astype(pdt),
        np.asarray(bmean).astype(pdt),
        np.asarray(bvar).astype(pdt),
    )


def _bn_legacy(
    x: np.ndarray, scale: np.ndarray, b: np.ndarray, mean: np.ndarray, var: np.ndarray, *,
    epsilon: float, momentum: float, spatial: int, training: bool,
) -> np.ndarray | tuple[np.ndarray, ...]:  # fmt: skip
    if x.ndim < 2:
        raise ShapeError(f"X must have rank >= 2 (N, C, ...), got {x.shape}")
    if spatial:
        expected: tuple[int, ...] = (x.shape[1],)
        axes = (0, *range(2, x.ndim))
        pshape = _channel_shape(x)
    else:
        # Non-spatial: one statistic per feature (C x D1 x ... x Dn), reduced over the batch only.
        expected = tuple(x.shape[1:])
        axes = (0,)
        pshape = (1, *x.shape[1:])
    for p, name in ((scale, "scale"), (b, "B"), (mean, "mean"), (var, "var")):
        if p.size != int(np.prod(expected)):
            raise ShapeError(f"{name} must have {expected} elements, got shape {p.shape}")
    if not training:
        return _bn_inference(x, scale, b, mean, var, epsilon, pshape)
    y, rm, rv, sm, sv = _bn_training(x, scale, b, mean, var, epsilon, momentum, axes, pshape)
    return y, rm.reshape(mean.shape), rv.reshape(var.shape), sm.reshape(mean.shape), sv.reshape(var.shape)


@kernel("BatchNormalization", 1)
def batch_normalization_1(
    X: np.ndarray, scale: np.ndarray, B: np.ndarray, mean: np.ndarray, var: np.ndarray, *,
    consumed_inputs: list[int] | None = None, epsilon: float = 1e-5, is_test: int = 0,
    momentum: float = 0.9, spatial: int = 1,
) -> np.ndarray | tuple[np.ndarray, ...]:  # fmt: skip
    """BatchNormalization-1: as -6 (``consumed_inputs`` is a legacy hint without effect)."""
    return batch_normalization_6(X, scale, B, mean, var, epsilon=epsilon, is_test=is_test, momentum=momentum,
                                 spatial=spatial)  # fmt: skip


@kernel("BatchNormalization", 6)
def batch_normalization_6(
    X: np.ndarray, scale: np.ndarray, B: np.ndarray, mean: np.ndarray, var: np.ndarray, *,
    epsilon: float = 1e-5, is_test: int = 0, momentum: float = 0.9, spatial: int = 1,
) -> np.ndarray | tuple[np.ndarray, ...]:  # fmt: skip
    """BatchNormalization-6: ``is_test`` selects inference; otherwise training mode (batch
    statistics; outputs mean, var = running statistics, saved_mean, saved_var = batch mean and
    population variance). ``spatial=0`` keeps one statistic per feature."""
    return _bn_legacy(X, scale, B, mean, var, epsilon=epsilon, momentum=momentum, spatial=spatial,
                      training=not is_test)  # fmt: skip


@kernel("BatchNormalization", 7, context=True)
def batch_normalization_7(
    ctx: KernelContext, X: np.ndarray, scale: np.ndarray, B: np.ndarray, mean: np.ndarray, var: np.ndarray, *,
    epsilon: float = 1e-5, momentum: float = 0.9, spatial: int = 1,
) -> np.ndarray | tuple[np.ndarray, ...]:  # fmt: skip
    """BatchNormalization-7: training mode when the node declares more than the output Y."""
    return _bn_legacy(X, scale, B, mean, var, epsilon=epsilon, momentum=momentum, spatial=spatial,
                      training=ctx.num_outputs > 1)  # fmt: skip


@kernel("BatchNormalization", 9, context=True)
def batch_normalization_9(
    ctx: KernelContext, X: np.ndarray, scale: np.ndarray, B: np.ndarray, mean: np.ndarray, var: np.ndarray, *,
    epsilon: float = 1e-5, momentum: float = 0.9,
) -> np.ndarray | tuple[np.ndarray, ...]:  # fmt: skip
    """BatchNormalization-9: per-channel statistics; training mode when the node declares more
    than the output Y."""
    return _bn_legacy(X, scale, B, mean, var, epsilon=epsilon, momentum=momentum, spatial=1,
                      training=ctx.num_outputs > 1)  # fmt: skip


@kernel("BatchNormalization", 14, 15)
def batch_normalization(
    X: np.ndarray, scale: np.ndarray, B: np.ndarray, input_mean: np.ndarray, input_var: np.ndarray, *,
    epsilon: float = 1e-5, momentum: float = 0.9, training_mode: int = 0,
) -> np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """BatchNormalization-14/15: inference, or with ``training_mode`` Y from the batch statistics
    plus running_mean and running_var (population variance)."""
    if X.ndim < 2:
        raise ShapeError(f"X must have rank >= 2 (N, C, ...), got {X.shape}")
    c = (X.shape[1],)
    for p, name in ((scale, "scale"), (B, "B"), (input_mean, "input_mean"), (input_var, "input_var")):
        _check_channel_param(p, name, c)
    pshape = _channel_shape(X)
    if not training_mode:
        return _bn_inference(X, scale, B, input_mean, input_var, epsilon, pshape)
    axes = (0, *range(2, X.ndim))
    y, rm, rv, _, _ = _bn_training(X, scale, B, input_mean, input_var, epsilon, momentum, axes, pshape)
    return y, rm, rv


# ---------------------------------------------------------------------------------------------
# InstanceNormalization, GroupNormalization
# ---------------------------------------------------------------------------------------------


def _standardize(
    xw: np.ndarray, axes: tuple[int, ...], epsilon: float, *, normalize: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(normalized, mean, inv_std) of ``xw`` over ``axes`` (keepdims), in ``xw``'s dtype.

    The normalized values are a new array (callers scale it in place); with ``normalize=False`` they
    are left centred only (``xw - mean``), for a caller that folds ``inv_std`` into its own scale. The
    sums are :func:`~onnxcore.kernels._util.float_sum` (BLAS for large float tensors; Clause 11.4).
    """
    n = math.prod(xw.shape[a] for a in axes)
    with np.errstate(divide="ignore", invalid="ignore"):  # an empty reduction gives NaN, as numpy's mean
        mean = float_sum(xw, axes, True) / np.asarray(n, xw.dtype)
        d = xw - mean
        var = float_sum(d, axes, True, square=True) / np.asarray(n, xw.dtype)
    inv = 1 / np.sqrt(var + xw.dtype.type(epsilon))
    if normalize:
        d *= inv
    return d, mean, inv


@kernel("InstanceNormalization", 1)
def instance_normalization_1(
    input: np.ndarray, scale: np.ndarray, B: np.ndarray, *, consumed_inputs: list[int] | None = None,
    epsilon: float = 1e-5,
) -> np.ndarray:  # fmt: skip
    """InstanceNormalization-1: as -6 (``consumed_inputs`` is a legacy hint without effect)."""
    return instance_normalization(input, scale, B, epsilon=epsilon)


@kernel("InstanceNormalization", 6, 22)
def instance_normalization(input: np.ndarray, scale: np.ndarray, B: np.ndarray, *, epsilon: float = 1e-5) -> np.ndarray:
    """InstanceNormalization: per (n, c) standardization over the spatial axes, then scale and B."""
    x = input
    if x.ndim < 3:
        raise ShapeError(f"input must have rank >= 3 (N, C, D1, ...), got {x.shape}")
    _check_channel_param(scale, "scale", (x.shape[1],))
    _check_channel_param(B, "B", (x.shape[1],))
    y = group_norm_compiled(x, scale, B, x.shape[1], epsilon, True)
    if y is not None:
        return y
    wd = work_dtype(x.dtype)
    y, _, inv = _standardize(x.astype(wd, copy=False), tuple(range(2, x.ndim)), epsilon, normalize=False)
    # One pass for 1/std and scale together (both per (n, c)).
    y *= inv * scale.astype(wd).reshape(_channel_shape(x))
    y += B.astype(wd).reshape(_channel_shape(x))
    return y.astype(x.dtype, copy=False)


def _group_norm(
    x: np.ndarray, scale: np.ndarray, bias: np.ndarray, num_groups: int, epsilon: float, per_channel: bool,
    stash: np.dtype[Any],
) -> np.ndarray:  # fmt: skip
    if x.ndim < 2:
        raise ShapeError(f"X must have rank >= 2 (N, C, ...), got {x.shape}")
    n, c = x.shape[:2]
    if num_groups <= 0 or c % num_groups:
        raise EvaluationError(f"num_groups={num_groups} must be positive and divide C={c}")
    expected = (c,) if per_channel else (num_groups,)
    _check_channel_param(scale, "scale", expected)
    _check_channel_param(bias, "bias", expected)
    wd = work_dtype(x.dtype)
    if stash == x.dtype == wd:
        # (per group: the parameters as the numpy code below makes them, one per channel)
        sc_c, bi_c = (
            (scale, bias) if per_channel else (np.repeat(scale, c // num_groups), np.repeat(bias, c // num_groups))
        )
        y = group_norm_compiled(x, sc_c, bi_c, num_groups, epsilon, False)
        if y is not None:
            return y
    xg = x.astype(stash, copy=False).reshape(n, num_groups, -1)
    norm, _, _ = _standardize(xg, (2,), epsilon)
    y = norm.reshape(x.shape).astype(x.dtype, copy=False).astype(wd, copy=False)
    sc, bi = scale.astype(wd), bias.astype(wd)
    if not per_channel:
        sc, bi = np.repeat(sc, c // num_groups), np.repeat(bi, c // num_groups)
    y *= sc.reshape(_channel_shape(x))  # y is new (norm, or a copy of it): scaled in place
    y += bi.reshape(_channel_shape(x))
    return y.astype(x.dtype, copy=False)


@kernel("GroupNormalization", 18)
def group_normalization_18(
    X: np.ndarray, scale: np.ndarray, bias: np.ndarray, *, epsilon: float = 1e-5, num_groups: int | None = None
) -> np.ndarray:
    """GroupNormalization-18: ``scale`` and ``bias`` hold one value per group."""
    if num_groups is None:
        raise EvaluationError("num_groups is required")
    return _group_norm(X, scale, bias, num_groups, epsilon, False, work_dtype(X.dtype))


@kernel("GroupNormalization", 21)
def group_normalization(
    X: np.ndarray, scale: np.ndarray, bias: np.ndarray, *, epsilon: float = 1e-5, num_groups: int | None = None,
    stash_type: int = 1,
) -> np.ndarray:  # fmt: skip
    """GroupNormalization-21: per-channel ``scale`` and ``bias``; stage one in ``stash_type``."""
    if num_groups is None:
        raise EvaluationError("num_groups is required")
    return _group_norm(X, scale, bias, num_groups, epsilon, True, _stash_dtype(stash_type))


# ---------------------------------------------------------------------------------------------
# LayerNormalization, RMSNormalization
# ---------------------------------------------------------------------------------------------

_STASH = {1: ElementType.FLOAT, 10: ElementType.FLOAT16, 11: ElementType.DOUBLE, 16: ElementType.BFLOAT16}
# Stage one's dtype per stash type (work_dtype of each: the 16-bit types run in float32), written out so that
# bfloat16's dtype (ml_dtypes) is looked up only by a model that asks for it.
_STASH_WORK: dict[int, np.dtype[Any]] = {
    1: np.dtype(np.float32),
    10: np.dtype(np.float32),
    11: np.dtype(np.float64),
    16: np.dtype(np.float32),
}


def _stash_dtype(stash_type: int) -> np.dtype[Any]:
    """The dtype stage one runs in (narrow stash types run in float32, outputs rounded to them)."""
    dt = _STASH_WORK.get(int(stash_type))
    if dt is None:
        raise EvaluationError(f"stash_type {stash_type} is not a floating-point element type")
    return dt


def _check_param(p: np.ndarray, x: np.ndarray) -> None:
    """Refuse a scale or bias that does not broadcast unidirectionally to ``x`` (a vector over the last axis,
    what transformers pass, needs no more than a look at one extent)."""
    if not (p.ndim == 1 and x.ndim >= 1 and p.shape[0] == x.shape[-1]):
        check_unidirectional(p.shape, x.shape)


@kernel("LayerNormalization", 17)
def layer_normalization(
    X: np.ndarray, Scale: np.ndarray, B: np.ndarray | None = None, *, axis: int = -1, epsilon: float = 1e-5,
    stash_type: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """LayerNormalization-17: standardize over ``[axis, rank)`` in ``stash_type``, cast back to
    X's type, then ``* Scale + B`` (unidirectional broadcasting). Returns Y, Mean, InvStdDev."""
    a = normalize_axis(axis, X.ndim)
    _check_param(Scale, X)
    if B is not None:
        _check_param(B, X)
    stash = _stash_dtype(stash_type)
    out_stash = _STASH[int(stash_type)].np_dtype
    if stash == X.dtype:
        # Stashed in X's own type (float32 with stash_type 1): by blocks of rows, on the kernel threads.
        fast = layer_norm_rows(X, Scale, B, a, epsilon)
        if fast is not None:
            # Mean and InvStdDev are fresh arrays: no copy when they already have the stash type.
            return fast[0], fast[1].astype(out_stash, copy=False), fast[2].astype(out_stash, copy=False)
    norm, mean, inv = _standardize(X.astype(stash, copy=False), tuple(range(a, X.ndim)), epsilon)
    wd = work_dtype(X.dtype)
    # Stage two starts from the normalized values in X's type (a rounding when the stash is wider).
    y = norm.astype(X.dtype, copy=False).astype(wd, copy=False)
    y *= Scale.astype(wd, copy=False)  # y is a new array of X's shape: Scale broadcasts to it
    if B is not None:
        y += B.astype(wd, copy=False)
    return y.astype(X.dtype, copy=False), mean.astype(out_stash), inv.astype(out_stash)


@kernel("RMSNormalization", 23)
def rms_normalization(
    X: np.ndarray, scale: np.ndarray, *, axis: int = -1, epsilon: float = 1e-5, stash_type: int = 1
) -> np.ndarray:
    """RMSNormalization-23: ``X / sqrt(mean(X^2 over [axis, rank)) + epsilon)`` in ``stash_type``,
    cast back to X's type, times ``scale``; Y has scale's type."""
    a = normalize_axis(axis, X.ndim)
    _check_param(scale, X)
    stash = _stash_dtype(stash_type)
    if stash == X.dtype:
        fast = rms_norm_rows(X, scale, a, epsilon)
        if fast is not None:
            return fast
    xs = X.astype(stash)
    ms = np.mean(xs * xs, axis=tuple(range(a, X.ndim)), keepdims=True)
    norm = (xs / np.sqrt(ms + stash.type(epsilon))).astype(X.dtype)
    wd = work_dtype(scale.dtype)
    return (norm.astype(wd) * scale.astype(wd)).astype(scale.dtype, copy=False)


# ---------------------------------------------------------------------------------------------
# LRN, LpNormalization, MeanVarianceNormalization
# ---------------------------------------------------------------------------------------------


@kernel("LRN", 1, 13)
def lrn(
    X: np.ndarray, *, alpha: float = 1e-4, beta: float = 0.75, bias: float = 1.0, size: int | None = None
) -> np.ndarray:
    """LRN: ``X / (bias + alpha/size * square_sum)^beta``, the sum over channels
    ``[c - floor((size-1)/2), c + ceil((size-1)/2)]`` clipped to ``[0, C)``."""
    if size is None or size <= 0:
        raise EvaluationError("LRN size must be a positive integer")
    if X.ndim < 3:
        raise ShapeError(f"X must have rank >= 3 (N, C, D1, ...), got {X.shape}")
    wd = work_dtype(X.dtype)
    xw = X.astype(wd)
    sq = xw * xw
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    c = X.shape[1]
    acc = sq.copy()
    # One shifted add per neighbour channel, each over the whole tensor. A neighbour c or more channels away is
    # outside the clipped window for every channel: the loops stop there, whatever the size (a size of 2^32 - 1
    # looped for minutes before).
    for k in range(1, min(before, c - 1) + 1):
        acc[:, k:] += sq[:, : c - k]
    for k in range(1, min(after, c - 1) + 1):
        acc[:, : c - k] += sq[:, k:]
    acc *= wd.type(alpha / size)
    acc += wd.type(bias)
    if beta == 0.75:
        den = np.sqrt(acc * np.sqrt(acc))
    elif beta == 0.5:
        den = np.sqrt(acc)
    else:
        den = np.power(acc, wd.type(beta))
    return (xw / den).astype(X.dtype, copy=False)


_FEW_NORMS = 16


@kernel("LpNormalization", 1, 22)
def lp_normalization(input: np.ndarray, *, axis: int = -1, p: int = 2) -> np.ndarray:
    """LpNormalization: ``x / ||x||_p`` along ``axis`` (p is 1 or 2); a zero norm gives zero."""
    if p not in (1, 2):
        raise EvaluationError(f"LpNormalization p must be 1 or 2, got {p}")
    a = normalize_axis(axis, input.ndim)
    wd = work_dtype(input.dtype)
    xw = input.astype(wd, copy=False)  # (read only: no copy of a float32/float64 input)
    # (numpy's sums, over a short last axis as passes over its columns: short_sum, the same bits)
    parts = np.abs(xw) if p == 1 else xw * xw
    norm = short_sum(parts, (a,), True)
    if norm is None:
        norm = parts.sum(axis=a, keepdims=True)
    if p == 2:
        norm = np.sqrt(norm)
    # (a few norms read as Python floats, one call, where a comparison and its any() cost 1.6 us: a classifier's
    # one row 4.8 -> 3.3 us; -0.0 is 0 there too, NaN is not)
    if norm.size <= _FEW_NORMS and 0.0 not in norm.ravel().tolist():
        return (xw / norm).astype(input.dtype, copy=False)
    zero = norm == 0
    if not zero.any():
        # No zero norm (a classifier's scores): the quotient alone, which is np.where's result then (6 -> 3 us at
        # one row: no where, no errstate).
        y = xw / norm
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            y = xw / norm
        np.copyto(y, 0, where=zero)
    return y.astype(input.dtype, copy=False)


@kernel("MeanVarianceNormalization", 9, 13)
def mean_variance_normalization(X: np.ndarray, *, axes: list[int] | None = None) -> np.ndarray:
    """MeanVarianceNormalization: ``(X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9)`` over ``axes``
    (default [0, 2, 3]); the 1e-9 is the operator's function body's."""
    ax = normalize_axes(axes if axes is not None else [0, 2, 3], X.ndim)
    wd = work_dtype(X.dtype)
    xw = X.astype(wd)
    mean = xw.mean(axis=ax, keepdims=True)
    ex2 = (xw * xw).mean(axis=ax, keepdims=True)
    std = np.sqrt(np.maximum(ex2 - mean * mean, 0))
    y = (xw - mean) / (std + wd.type(1e-9))
    return y.astype(X.dtype, copy=False)
