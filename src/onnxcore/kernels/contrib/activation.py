"""com.microsoft activations and fused element-wise steps: Gelu, FastGelu, BiasGelu, QuickGelu, BiasAdd,
BiasSoftmax; and CDist (pairwise distances).

The Gelu formulas are ai.onnx Gelu-20's (``onnxcore.kernels.elementwise.gelu``: the erf form, or the tanh
approximation for FastGelu), applied after the fused bias addition. float16 and bfloat16 compute in float32 and
round once, as the ai.onnx kernels do.

Taken from onnxruntime where its definitions are silent:

- the bias of FastGelu and BiasGelu is 1-D of the input's last extent (onnxruntime refuses another shape);
- BiasSoftmax normalizes over the axes ``[axis, rank)`` taken together (as ai.onnx Softmax-1..11); a bias of the
  data's rank broadcasts numpy-style; one of lower rank is aligned to the trailing axes, or, with
  ``is_inner_broadcast`` 1, its leading axes to the data's leading axes and its last ``rank - axis`` to the
  softmax axes (the axes between are broadcast). onnxruntime has BiasSoftmax and BiasAdd for CUDA only, so these
  two are tested against a formula of the documentation (tests/kernels/contrib);
- CDist's metrics are ``sqeuclidean`` and ``euclidean`` only (any other is refused, as onnxruntime does); the
  distances come from one matrix product in float64 (onnxruntime's float32 product leaves a residue of about
  eps |a|^2 where onnxcore gives 0 for equal points).
"""

from __future__ import annotations

import math

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels import accel
from onnxcore.kernels._util import float_unary
from onnxcore.kernels.conv import work_dtype
from onnxcore.kernels.elementwise import gelu
from onnxcore.kernels.registry import kernel
from onnxcore.kernels.threads import MIN_PARALLEL_ELEMENTS, active_threads, parallel_for

__all__: list[str] = []

MS = "com.microsoft"


def _last_axis_bias(x: np.ndarray, bias: np.ndarray, op: str, name: str = "bias") -> None:
    if bias.ndim != 1 or x.ndim < 1 or bias.shape[0] != x.shape[-1]:
        raise ShapeError(f"{op}: {name} must be 1-D of the last extent of the input {x.shape}, got {bias.shape}")


def _add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a + b`` in the working type, rounded to a's type (one rounding, as onnxruntime's fused kernels)."""
    wd = work_dtype(a.dtype)
    return (a.astype(wd) + b.astype(wd)).astype(a.dtype)


@kernel("Gelu", 1, domain=MS)
def gelu_ms(X: np.ndarray) -> np.ndarray:
    """com.microsoft Gelu: ``0.5 x (1 + erf(x / sqrt 2))``."""
    return gelu(X, approximate="none")


@kernel("BiasGelu", 1, domain=MS)
def bias_gelu(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """BiasGelu: Gelu (erf form) of ``A + B``, B 1-D of A's last extent."""
    _last_axis_bias(A, B, "BiasGelu", "B")
    if A.dtype == np.float32 and B.dtype == np.float32 and A.size and accel.enabled():
        # The compiled loop: the addition and the GELU in one pass (the same results as the two steps below).
        x = np.ascontiguousarray(A).reshape(-1, A.shape[-1])
        out = np.empty(x.shape, np.float32)
        fn = accel.jit().bias_gelu32
        bias, scale = np.ascontiguousarray(B), np.float32(1.0 / math.sqrt(2.0))

        def run(a: int, b: int) -> None:
            fn(x, bias, out, scale, a, b)

        parallel_for(run, x.shape[0], threads=active_threads() if A.size >= MIN_PARALLEL_ELEMENTS else 1)
        return out.reshape(A.shape)
    return gelu(_add(A, B), approximate="none")


@kernel("FastGelu", 1, domain=MS)
def fast_gelu(X: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """FastGelu: the tanh approximation of Gelu of ``X + bias`` (bias optional, 1-D of X's last extent)."""
    if bias is not None:
        _last_axis_bias(X, bias, "FastGelu")
        X = _add(X, bias)
    return gelu(X, approximate="tanh")


@kernel("QuickGelu", 1, domain=MS)
def quick_gelu(X: np.ndarray, *, alpha: float = 1.702) -> np.ndarray:
    """QuickGelu: ``x * sigmoid(alpha * x)``."""

    def f(v: np.ndarray) -> np.ndarray:
        e = v * np.asarray(-alpha, v.dtype)
        with np.errstate(over="ignore"):
            np.exp(e, out=e)
        e += 1
        return np.divide(v, e, out=e)

    return float_unary(X, f)


@kernel("BiasAdd", 1, domain=MS)
def bias_add(X: np.ndarray, bias: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """BiasAdd: ``X + bias + skip``; X and skip of shape (N, S, C), bias of shape (C)."""
    if X.ndim != 3 or skip.shape != X.shape:
        raise ShapeError(f"BiasAdd: X and skip must both be (N, S, C), got {X.shape} and {skip.shape}")
    _last_axis_bias(X, bias, "BiasAdd")
    wd = work_dtype(X.dtype)
    return (X.astype(wd) + bias.astype(wd) + skip.astype(wd)).astype(X.dtype)


@kernel("BiasSoftmax", 1, domain=MS)
def bias_softmax(data: np.ndarray, bias: np.ndarray, *, axis: int = 1, is_inner_broadcast: int) -> np.ndarray:
    """BiasSoftmax: softmax of ``data + bias`` over the axes ``[axis, rank)`` taken together."""
    r = data.ndim
    a = axis + r if axis < 0 else axis
    if not 0 <= a < max(r, 1):
        raise EvaluationError(f"BiasSoftmax: axis {axis} is out of range for rank {r}")
    if is_inner_broadcast not in (0, 1):
        raise EvaluationError(f"BiasSoftmax: is_inner_broadcast must be 0 or 1, got {is_inner_broadcast}")
    b = bias
    if b.ndim < r and is_inner_broadcast:
        # Leading axes aligned: (d0, .., dk, da, .., dn) -> (d0, .., dk, 1, .., 1, da, .., dn).
        lead = b.ndim - (r - a)
        if lead < 0:
            raise ShapeError(
                f"BiasSoftmax: bias {bias.shape} has fewer axes than the softmax axes of data {data.shape}"
            )
        b = b.reshape(b.shape[:lead] + (1,) * (r - b.ndim) + b.shape[lead:])
    try:
        wd = work_dtype(data.dtype)
        x = np.add(data.astype(wd), b.astype(wd))
    except ValueError as e:
        raise ShapeError(f"BiasSoftmax: bias {bias.shape} does not broadcast to data {data.shape}") from e
    if x.shape != data.shape:
        raise ShapeError(f"BiasSoftmax: bias {bias.shape} does not broadcast to data {data.shape}")
    outer = math.prod(data.shape[:a])
    x2 = x.reshape(outer, -1) if x.size else x.reshape(outer, math.prod(data.shape[a:]))
    if x2.shape[1]:
        x2 = x2 - x2.max(axis=1, keepdims=True)
        np.exp(x2, out=x2)
        x2 /= x2.sum(axis=1, keepdims=True)
    return x2.reshape(data.shape).astype(data.dtype)


@kernel("CDist", 1, domain=MS)
def cdist(A: np.ndarray, B: np.ndarray, *, metric: str = "sqeuclidean") -> np.ndarray:
    """CDist: the distance of every row of A (N, K) to every row of B (M, K): C (N, M)."""
    if metric not in ("sqeuclidean", "euclidean"):
        raise EvaluationError(f"CDist: metric {metric!r} is not supported (sqeuclidean, euclidean)")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise ShapeError(f"CDist: A and B must be (N, K) and (M, K), got {A.shape} and {B.shape}")
    # |a - b|^2 = |a|^2 + |b|^2 - 2 a.b: one matrix product (no N x M x K intermediate), in float64 so that the
    # cancellation for near points stays far below the type's rounding; clamped at 0.
    a, b = A.astype(np.float64), B.astype(np.float64)
    c = np.einsum("nk,nk->n", a, a)[:, None] + np.einsum("mk,mk->m", b, b)[None, :]
    c -= 2 * (a @ b.T)
    np.maximum(c, 0, out=c)
    if metric == "euclidean":
        np.sqrt(c, out=c)
    return c.astype(A.dtype)
