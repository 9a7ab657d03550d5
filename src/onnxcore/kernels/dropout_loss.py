"""Dropout and the loss kernels (Clause 8; ONNX 1-2 definitions): Dropout,
NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.

Dropout in training mode draws its keep-mask from ``numpy.random.RandomState(seed).uniform`` when a
``seed`` is given (reproducible, and what the ONNX 1-3 test vectors were generated with), else
from the session's generator. Float16 and the narrow floats compute in float32, rounded once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels._util import scalar_of
from onnxcore.kernels.conv import work_dtype
from onnxcore.kernels.registry import KernelContext, kernel

__all__: list[str] = []


# ---------------------------------------------------------------------------------------------
# Dropout
# ---------------------------------------------------------------------------------------------


def _keep_mask(ctx: KernelContext | None, shape: tuple[int, ...], ratio: float, seed: int | None) -> np.ndarray:
    if seed is not None:
        draws = np.random.RandomState(int(seed) & 0xFFFFFFFF).uniform(0.0, 1.0, shape)
    else:
        rng = ctx.rng if ctx is not None and ctx.rng is not None else np.random.default_rng()
        draws = rng.random(shape)
    return np.asarray(draws >= ratio)


def _dropout_train(
    ctx: KernelContext | None, x: np.ndarray, ratio: float, seed: int | None
) -> tuple[np.ndarray, np.ndarray]:
    if not 0.0 <= ratio < 1.0:
        raise EvaluationError(f"Dropout ratio must be in [0, 1), got {ratio}")
    keep = _keep_mask(ctx, x.shape, ratio, seed)
    wd = work_dtype(x.dtype)
    y = np.where(keep, x.astype(wd) * wd.type(1.0 / (1.0 - ratio)), wd.type(0))
    return np.asarray(y).astype(x.dtype, copy=False), keep


def _wants_mask(ctx: KernelContext) -> bool:
    return len(ctx.outputs_requested) > 1 and bool(ctx.outputs_requested[1])


@kernel("Dropout", 1, context=True)
def dropout_1(
    ctx: KernelContext, data: np.ndarray, *, consumed_inputs: list[int] | None = None, is_test: int = 0,
    ratio: float = 0.5,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Dropout-1: as -6 (``consumed_inputs`` is a legacy hint without effect)."""
    return dropout_6(ctx, data, is_test=is_test, ratio=ratio)


@kernel("Dropout", 6, context=True)
def dropout_6(
    ctx: KernelContext, data: np.ndarray, *, is_test: int = 0, ratio: float = 0.5
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Dropout-6: identity when ``is_test`` is set, else a random dropout scaled by
    ``1/(1-ratio)``; the mask has the data's type (1 kept, 0 dropped)."""
    if is_test:
        y, keep = data, np.ones(data.shape, dtype=bool)
    else:
        y, keep = _dropout_train(ctx, data, float(ratio), None)
    if not _wants_mask(ctx):
        return y
    return y, keep.astype(data.dtype)


@kernel("Dropout", 7, context=True)
def dropout_7(
    ctx: KernelContext, data: np.ndarray, *, ratio: float = 0.5
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Dropout-7: no training switch, so inference: identity, mask of ones in the data's type."""
    if not _wants_mask(ctx):
        return data
    return data, np.ones(data.shape, dtype=data.dtype)


@kernel("Dropout", 10, context=True)
def dropout_10(
    ctx: KernelContext, data: np.ndarray, *, ratio: float = 0.5
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Dropout-10: inference identity; the mask is boolean (all true)."""
    if not _wants_mask(ctx):
        return data
    return data, np.ones(data.shape, dtype=bool)


@kernel("Dropout", 12, 13, 22, context=True)
def dropout(
    ctx: KernelContext, data: np.ndarray, ratio: np.ndarray | None = None, training_mode: np.ndarray | None = None,
    *, seed: int | None = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Dropout-12/13/22: identity unless ``training_mode`` is true; then
    ``output = data * mask / (1 - ratio)`` (ratio defaults to 0.5)."""
    training = training_mode is not None and bool(scalar_of(training_mode, name="training_mode"))
    r = 0.5 if ratio is None else float(scalar_of(ratio, name="ratio"))
    if not 0.0 <= r < 1.0:
        # The definition gives ratio the range [0, 1) whether or not it is used (onnxruntime refuses too).
        raise EvaluationError(f"Dropout ratio must be in [0, 1), got {r}")
    if training and r != 0.0:
        y, keep = _dropout_train(ctx, data, r, seed)
    else:
        y, keep = data, np.ones(data.shape, dtype=bool)
    if not _wants_mask(ctx):
        return y
    return y, keep


# ---------------------------------------------------------------------------------------------
# NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
# ---------------------------------------------------------------------------------------------

_REDUCTIONS = ("none", "sum", "mean")


def _nll(
    logp: np.ndarray, target: np.ndarray, weight: np.ndarray | None, ignore_index: int | None, reduction: str
) -> np.ndarray:
    """NLL of ``logp`` (``(N, C, d...)`` in the work dtype) at ``target`` (``(N, d...)``)."""
    if reduction not in _REDUCTIONS:
        raise EvaluationError(f"reduction {reduction!r} is not one of {', '.join(_REDUCTIONS)}")
    if logp.ndim < 2:
        raise ShapeError(f"input must have rank >= 2 (N, C, ...), got {logp.shape}")
    if target.shape != (logp.shape[0], *logp.shape[2:]):
        raise ShapeError(f"target shape {target.shape} must be {(logp.shape[0], *logp.shape[2:])}")
    c = logp.shape[1]
    if weight is not None and weight.shape != (c,):
        raise ShapeError(f"weight must have shape ({c},), got {weight.shape}")
    t = target.astype(np.int64)
    ignored = (t == ignore_index) if ignore_index is not None else np.zeros(t.shape, dtype=bool)
    bad = ~ignored & ((t < 0) | (t >= c))
    if bad.any():
        raise EvaluationError(f"target values must lie in [0, {c}) or equal ignore_index")
    tc = np.where(ignored, 0, t)
    picked = np.take_along_axis(logp, tc[:, None], axis=1)[:, 0]
    wd = logp.dtype
    w = weight.astype(wd)[tc] if weight is not None else np.ones(t.shape, dtype=wd)
    w = np.where(ignored, wd.type(0), w)
    loss = -picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.asarray(loss.sum(), dtype=wd)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(loss.sum() / w.sum(), dtype=wd)


@kernel("NegativeLogLikelihoodLoss", 12, 13, 22)
def negative_log_likelihood_loss(
    input: np.ndarray, target: np.ndarray, weight: np.ndarray | None = None, *, ignore_index: int | None = None,
    reduction: str = "mean",
) -> np.ndarray:  # fmt: skip
    """NegativeLogLikelihoodLoss: ``-input[n, target[n, d], d] * weight[target]``, ignored targets
    contribute zero; ``mean`` divides by the sum of the applied weights."""
    wd = work_dtype(input.dtype)
    loss = _nll(input.astype(wd), target, weight, ignore_index, reduction)
    return np.asarray(loss).astype(input.dtype, copy=False)


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    m = x.max(axis=axis, keepdims=True)
    z = x - m
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


@kernel("SoftmaxCrossEntropyLoss", 12, 13)
def softmax_cross_entropy_loss(
    scores: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None, *, ignore_index: int | None = None,
    reduction: str = "mean",
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """SoftmaxCrossEntropyLoss: NLL of ``log(softmax(scores, axis=1))``; returns (output, log_prob)."""
    if scores.ndim < 2:
        raise ShapeError(f"scores must have rank >= 2 (N, C, ...), got {scores.shape}")
    wd = work_dtype(scores.dtype)
    logp = _log_softmax(scores.astype(wd), 1)
    loss = _nll(logp, labels, weights, ignore_index, reduction)
    dt: Any = scores.dtype
    return np.asarray(loss).astype(dt, copy=False), logp.astype(dt, copy=False)
