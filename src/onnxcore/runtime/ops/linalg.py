"""Linear-algebra kernels: MatMul, Gemm, Einsum, Det, Trilu.

float16, bfloat16 and the narrow floats are multiplied in float32 (BLAS) and rounded once to the
element type (Clause 11.4 permits the wider accumulation). Integers multiply in their own type
and wrap.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.runtime.ops._util import check_unidirectional, scalar_of
from onnxcore.runtime.registry import kernel

__all__: list[str] = []

Array = np.ndarray


def _widen(x: Array) -> Array:
    dt = x.dtype
    if dt.kind == "V" or dt == np.float16:
        return x.astype(np.float32)
    return x


def _narrow(y: Array, dt: np.dtype[Any]) -> Array:
    return y if y.dtype == dt else y.astype(dt)


# --- MatMul -----------------------------------------------------------------------------------


def _matmul(A: Array, B: Array) -> Array:
    dt = A.dtype
    if A.ndim == 0 or B.ndim == 0:
        raise ShapeError("MatMul: inputs must have rank >= 1")
    try:
        y = np.matmul(_widen(A), _widen(B))
    except ValueError:
        raise ShapeError(f"MatMul: shapes {A.shape} and {B.shape} do not match (numpy.matmul semantics)") from None
    return _narrow(np.asarray(y), dt)


@kernel("MatMul", 1, 9, 13)
def matmul(A: Array, B: Array) -> Array:
    """MatMul-1/9/13: matrix product with numpy.matmul's broadcasting and 1-D promotion."""
    return _matmul(A, B)


# --- Gemm -------------------------------------------------------------------------------------


def _gemm(A: Array, B: Array, C: Array | None, alpha: float, beta: float, transA: int, transB: int) -> Array:
    if A.ndim != 2 or B.ndim != 2:
        raise ShapeError(f"Gemm: A and B must be 2-D, got {A.shape} and {B.shape}")
    dt = A.dtype
    a = _widen(A)
    b = _widen(B)
    if transA:
        a = a.T
    if transB:
        b = b.T
    if a.shape[1] != b.shape[0]:
        raise ShapeError(f"Gemm: inner dimensions differ: {a.shape} x {b.shape}")
    exact_int = dt.kind in "iu" and float(alpha).is_integer() and float(beta).is_integer()
    if dt.kind in "iu" and not exact_int:
        a = a.astype(np.float64)
        b = b.astype(np.float64)
    y = np.matmul(a, b)
    if alpha != 1.0:
        y *= y.dtype.type(alpha)
    if C is not None:
        check_unidirectional(C.shape, y.shape)
        c = _widen(C)
        if c.dtype != y.dtype:
            c = c.astype(y.dtype)
        if beta == 1.0:
            y += c
        else:
            y += c * y.dtype.type(beta)
    return _narrow(y, dt)


@kernel("Gemm", 1)
def gemm_1(
    A: Array,
    B: Array,
    C: Array,
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    broadcast: int = 0,
    transA: int = 0,
    transB: int = 0,
) -> Array:
    """Gemm-1/6: C of shape (M, N), or broadcast to it when ``broadcast`` is set."""
    return gemm_6(A, B, C, alpha=alpha, beta=beta, broadcast=broadcast, transA=transA, transB=transB)


@kernel("Gemm", 6)
def gemm_6(
    A: Array,
    B: Array,
    C: Array,
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    broadcast: int = 0,
    transA: int = 0,
    transB: int = 0,
) -> Array:
    """Gemm-6: as Gemm-1 (no ``consumed_inputs``-like differences in the computation)."""
    if not broadcast:
        m = A.shape[1] if transA else A.shape[0]
        n = B.shape[0] if transB else B.shape[1]
        if tuple(C.shape) != (m, n):
            raise ShapeError(f"Gemm: C has shape {C.shape}, expected ({m}, {n}) with broadcast=0")
    return _gemm(A, B, C, alpha, beta, transA, transB)


@kernel("Gemm", 7, 9)
def gemm_7(
    A: Array, B: Array, C: Array, *, alpha: float = 1.0, beta: float = 1.0, transA: int = 0, transB: int = 0
) -> Array:
    """Gemm-7/9: C required, unidirectionally broadcast to (M, N)."""
    return _gemm(A, B, C, alpha, beta, transA, transB)


@kernel("Gemm", 11, 13)
def gemm(
    A: Array,
    B: Array,
    C: Array | None = None,
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    transA: int = 0,
    transB: int = 0,
) -> Array:
    """Gemm-11/13: Y = alpha * A' B' + beta * C, C optional."""
    return _gemm(A, B, C, alpha, beta, transA, transB)


# --- Einsum -----------------------------------------------------------------------------------


def _check_equation(equation: str, inputs: tuple[Array, ...]) -> str:
    eq = equation.replace(" ", "")
    lhs = eq.split("->", 1)[0]
    terms = lhs.split(",")
    if len(terms) != len(inputs):
        raise EvaluationError(f"Einsum: equation {equation!r} has {len(terms)} terms for {len(inputs)} inputs")
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.,->")
    if not set(eq) <= allowed:
        raise EvaluationError(f"Einsum: invalid characters in equation {equation!r}")
    # Every ellipsis stands for the same number of dimensions (Einsum definition), unlike numpy,
    # which also broadcasts ellipses of different lengths.
    widths = {x.ndim - (len(t) - 3) for t, x in zip(terms, inputs) if "..." in t}
    if len(widths) > 1:
        raise ShapeError(f"Einsum {equation!r}: ellipses represent different numbers of dimensions")
    return eq


@kernel("Einsum", 12, 28)
def einsum(*Inputs: Array, equation: str) -> Array:
    """Einsum-12/28: Einstein summation (explicit or implicit output, ellipsis broadcasting)."""
    if not Inputs:
        raise EvaluationError("Einsum: at least one input is required")
    dt = Inputs[0].dtype
    eq = _check_equation(equation, Inputs)
    ops = [_widen(x) for x in Inputs]
    try:
        y = np.einsum(eq, *ops, optimize=len(ops) > 1)
    except ValueError as e:
        raise ShapeError(f"Einsum {equation!r}: {e}") from None
    return _narrow(np.asarray(y), dt)


# --- Det --------------------------------------------------------------------------------------


@kernel("Det", 11, 22)
def det(X: Array) -> Array:
    """Det-11/22: determinant of each square matrix in the last two dimensions."""
    if X.ndim < 2 or X.shape[-1] != X.shape[-2]:
        raise ShapeError(f"Det: input must be [*, M, M], got {X.shape}")
    dt = X.dtype
    x = _widen(X)
    return _narrow(np.asarray(np.linalg.det(x)), dt)


# --- Trilu ------------------------------------------------------------------------------------


@kernel("Trilu", 14)
def trilu(input: Array, k: Array | None = None, *, upper: int = 1) -> Array:
    """Trilu-14: keep the upper (or lower) triangle relative to diagonal ``k`` of the last two dims."""
    x = input
    if x.ndim < 2:
        raise ShapeError(f"Trilu: input must have rank >= 2, got {x.shape}")
    kk = 0 if k is None else int(scalar_of(k, name="k"))
    n, m = x.shape[-2], x.shape[-1]
    rows = np.arange(n).reshape(n, 1)
    cols = np.arange(m).reshape(1, m)
    keep = (cols - rows >= kk) if upper else (cols - rows <= kk)
    zero = np.asarray(b"", dtype=object) if x.dtype == object else np.zeros((), dtype=x.dtype)
    return np.where(keep, x, zero)
