"""Helpers shared by the ``ai.onnx.ml`` kernels (:mod:`onnxcore.kernels.ml`, :mod:`onnxcore.kernels.ml_linear`,
:mod:`onnxcore.kernels.ml_tree`): STRING attributes as ``bytes``, inputs as rows, and the score post-transforms with
the row reductions they use (column by column for tall arrays of narrow rows, on Python floats for one row, each
with numpy's values).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels import accel

__all__ = [
    "NARROW",
    "POST_TRANSFORMS",
    "again_rows",
    "as_rows",
    "check_post_transform",
    "encode_strings",
    "max_of_row",
    "post_transform_rows",
    "probit",
    "row_max",
    "row_sum",
    "sigmoid",
    "softmax_rows",
    "softmax_zero_rows",
    "string_array",
    "sum_of_row",
]

POST_TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")

# ---------------------------------------------------------------------------------------------
# Shared helpers (used by ml_linear and ml_tree)
# ---------------------------------------------------------------------------------------------


def encode_strings(values: Sequence[str | bytes] | None) -> list[bytes]:
    """STRINGS attribute values as ``bytes`` (the representation of STRING tensor elements)."""
    return [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in (values or [])]


def string_array(values: Sequence[bytes], shape: tuple[int, ...] | None = None) -> np.ndarray:
    """An object array of ``bytes`` (never a numpy ``S`` array), reshaped to ``shape`` if given."""
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out if shape is None else out.reshape(shape)


_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)  # (numpy's dtypes of built-in types: single objects)


def again_rows(x: Any, feats: int) -> bool:
    """Whether ``x`` is rows of ``feats`` features as an earlier call of a prepared ML kernel took into its compiled
    loop (a C-contiguous float32/float64 ``[N, feats]`` array, the accelerator on), so that this call goes straight
    to the loop: that call checked the attributes against ``feats`` (the kernel keeps -1 until then). A pipeline's
    one-row call costs a third less: each of these tests is a fraction of the general path's."""
    return (
        type(x) is np.ndarray
        and x.ndim == 2
        and x.shape[1] == feats
        and (x.dtype is _F32 or x.dtype is _F64)
        and x.flags.c_contiguous
        and accel.enabled()
    )


def as_rows(x: np.ndarray, *, name: str = "X") -> np.ndarray:
    """``x`` as a 2-D ``[N, F]`` array: a 1-D input is one row (the ML operators read ``[F]`` as ``[1, F]``)."""
    arr = np.asarray(x)
    if arr.ndim == 1:
        return arr.reshape(1, -1)
    if arr.ndim == 2:
        return arr
    if arr.ndim == 0:
        raise EvaluationError(f"{name} must have rank 1 or 2, got a scalar")
    raise EvaluationError(f"{name} must have rank 1 or 2, got shape {arr.shape}")


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function, without overflow for large ``|x|``."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


# Acklam's rational approximation of the standard normal quantile function (relative error
# below 1.2e-9 on (0, 1)), far finer than the float32 the scores are returned in.
_A = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02,
      -3.066479806614716e01, 2.506628277459239e00)  # fmt: skip
_B = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01,
      -1.328068155288572e01)  # fmt: skip
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00,
      4.374664141464968e00, 2.938163982698783e00)  # fmt: skip
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)


def _polyval(coefs: Sequence[float], x: np.ndarray) -> np.ndarray:
    acc = np.full_like(x, coefs[0])
    for c in coefs[1:]:
        acc = acc * x + c
    return acc


def probit(p: np.ndarray) -> np.ndarray:
    """The quantile function of the standard normal distribution, ``sqrt(2) * erfinv(2p - 1)``.

    Values outside ``(0, 1)`` give ``-inf`` (at 0), ``inf`` (at 1) or NaN.
    """
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    low = 0.02425
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = (p > 0) & (p < low)
        hi = (p > 1 - low) & (p < 1)
        mid = (p >= low) & (p <= 1 - low)
        q = np.sqrt(-2 * np.log(np.where(lo, p, 0.5)))
        out = np.where(lo, _polyval(_C, q) / (_polyval(_D, q) * q + 1), out)
        q = np.sqrt(-2 * np.log(np.where(hi, 1 - p, 0.5)))
        out = np.where(hi, -_polyval(_C, q) / (_polyval(_D, q) * q + 1), out)
        q = np.where(mid, p - 0.5, 0.0)
        r = q * q
        out = np.where(mid, _polyval(_A, r) * q / (_polyval(_B, r) * r + 1), out)
    out = np.where(p == 0, -np.inf, out)
    return np.where(p == 1, np.inf, out)


NARROW = 7  # rows of at most this many values are reduced column by column (row_max, row_sum)
_TALL = 32  # ... when there are at least this many rows


def row_max(s: np.ndarray) -> np.ndarray:
    """``np.maximum.reduce(s, axis=1, keepdims=True)`` of a 2-D array. A tall array of narrow rows (a classifier's
    scores: a few classes, many rows) is reduced column by column, a pass per column: numpy's reduction pays per
    row, some 30 ns, more than its arithmetic there. The maximum is exact and NaN wins either way."""
    n, k = s.shape
    if 2 <= k <= NARROW and n >= _TALL:
        acc = s[:, 0]
        for j in range(1, k):
            acc = np.maximum(acc, s[:, j])
        return acc[:, None]
    return np.maximum.reduce(s, axis=1, keepdims=True)


def row_sum(s: np.ndarray) -> np.ndarray:
    """``np.add.reduce(s, axis=1, keepdims=True)`` of a 2-D array, tall arrays of narrow rows column by column as
    :func:`row_max` does: the same bits, since numpy adds a row of fewer than eight values one after the other from
    its first (its pairwise summation starts at eight), as the column passes do."""
    n, k = s.shape
    if 2 <= k <= NARROW and n >= _TALL:
        acc = s[:, 0] + s[:, 1]
        for j in range(2, k):
            np.add(acc, s[:, j], out=acc)
        return acc[:, None]
    return np.add.reduce(s, axis=1, keepdims=True)


def max_of_row(vals: list[float]) -> float:
    """The maximum of one row's values as numpy's reduction gives it (NaN when any is NaN), on Python floats."""
    m = max(vals)
    return m if m == m and not any(v != v for v in vals) else math.nan


def sum_of_row(vals: list[float]) -> float:
    """The sum of one row of at most ``NARROW`` values as numpy's reduction adds it (in order from the first:
    its pairwise summation starts at eight values), on Python floats."""
    total = vals[0]
    for v in vals[1:]:
        total += v
    return total


def softmax_rows(s: np.ndarray) -> np.ndarray:
    """Row-wise softmax of a 2-D array."""
    n, k = s.shape
    if k == 0:
        return s
    if n == 1 and k <= NARROW:
        # One row (a request of one): its maximum and sum on Python floats, the same values as the reductions
        # below without their calls; the elementwise steps are numpy's as below.
        e = s - max_of_row(s[0].tolist())
        np.exp(e, e)
        e /= sum_of_row(e[0].tolist())
        return e
    # exp(s - max) / sum, each step into the one new array (the same values, one allocation not three)
    # (in-place operators: the same ufuncs, dispatched more cheaply than a call with out=)
    e = s - row_max(s)
    np.exp(e, e)
    e /= row_sum(e)
    return e


def softmax_zero_rows(s: np.ndarray) -> np.ndarray:
    """Row-wise softmax that leaves the (near-)zero scores at zero (SOFTMAX_ZERO).

    A score within 1e-7 of zero counts as absent: it stays 0 and takes no share of the total.
    """
    if s.shape[1] == 0:
        return s
    nz = np.abs(s) > 1e-7
    m = s.max(axis=1, keepdims=True)
    e = np.where(nz, np.exp(s - m), 0.0)
    total = e.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, e / np.where(total > 0, total, 1.0), 0.0)


def post_transform_rows(scores: np.ndarray, post_transform: str) -> np.ndarray:
    """Apply a post_transform (``NONE``, ``SOFTMAX``, ``LOGISTIC``, ``SOFTMAX_ZERO``, ``PROBIT``) to ``[N, E]`` scores.

    Raises:
        EvaluationError: an unknown transform name.
    """
    s = np.asarray(scores, dtype=np.float64)
    if post_transform == "NONE":
        return s
    if post_transform == "SOFTMAX":
        return softmax_rows(s)
    if post_transform == "LOGISTIC":
        return sigmoid(s)
    if post_transform == "SOFTMAX_ZERO":
        return softmax_zero_rows(s)
    if post_transform == "PROBIT":
        return probit(s)
    raise EvaluationError(f"unknown post_transform {post_transform!r} (one of {', '.join(POST_TRANSFORMS)})")


def check_post_transform(name: str) -> str:
    """Refuse an unknown post_transform name early."""
    if name not in POST_TRANSFORMS:
        raise EvaluationError(f"unknown post_transform {name!r} (one of {', '.join(POST_TRANSFORMS)})")
    return name
