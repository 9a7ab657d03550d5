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


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _explicit_terms(eq: str, inputs: tuple[Array, ...]) -> tuple[list[str], str] | None:
    """The input terms and output term with every ellipsis spelled out as fresh letters and the
    implicit output made explicit (Einsum definition), or ``None`` if letters run out."""
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    used = set(eq)
    free = [c for c in _LETTERS if c not in used]
    width = max((x.ndim - (len(t) - 3) for t, x in zip(terms, inputs) if "..." in t), default=0)
    if width > len(free) or width < 0:
        return None
    ell = "".join(free[:width])
    terms = [t.replace("...", ell) for t in terms]
    if arrow:
        out = rhs.replace("...", ell)
    else:
        # Implicit form: the ellipsis dimensions first, then the letters used exactly once in
        # increasing ASCII order (upper case before lower case).
        counts: dict[str, int] = {}
        for t in terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    return terms, out


def _einsum2_matmul(ta: str, tb: str, out: str, a: Array, b: Array) -> Array | None:
    """A two-operand einsum as one batched matmul (None where that lowering does not apply)."""
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb) or len(set(out)) != len(out):
        return None  # diagonals: numpy.einsum
    if a.ndim != len(ta) or b.ndim != len(tb) or not set(out) <= set(ta) | set(tb):
        return None
    sa, sb, so = set(ta), set(tb), set(out)
    # Letters of one operand absent from the other and from the output are summed out first.
    a_sum = tuple(i for i, c in enumerate(ta) if c not in sb and c not in so)
    if a_sum:
        a = a.sum(axis=a_sum)
        ta = "".join(c for i, c in enumerate(ta) if i not in a_sum)
    b_sum = tuple(i for i, c in enumerate(tb) if c not in sa and c not in so)
    if b_sum:
        b = b.sum(axis=b_sum)
        tb = "".join(c for i, c in enumerate(tb) if i not in b_sum)
    da = dict(zip(ta, a.shape))
    db = dict(zip(tb, b.shape))
    batch = [c for c in out if c in da and c in db]
    contract = [c for c in ta if c in db and c not in so]
    left = [c for c in out if c in da and c not in db]
    right = [c for c in out if c in db and c not in da]
    if any(da[c] != db[c] for c in batch + contract):
        return None  # extents broadcasting against 1: numpy.einsum
    nb = int(np.prod([da[c] for c in batch], dtype=np.int64))
    nl = int(np.prod([da[c] for c in left], dtype=np.int64))
    nc = int(np.prod([da[c] for c in contract], dtype=np.int64))
    nr = int(np.prod([db[c] for c in right], dtype=np.int64))
    ap = a.transpose([ta.index(c) for c in batch + left + contract]).reshape(nb, nl, nc)
    bp = b.transpose([tb.index(c) for c in batch + contract + right]).reshape(nb, nc, nr)
    y = np.matmul(ap, bp)
    order = batch + left + right
    y = y.reshape([da[c] for c in batch] + [da[c] for c in left] + [db[c] for c in right])
    return y.transpose([order.index(c) for c in out])


@kernel("Einsum", 12, 28)
def einsum(*Inputs: Array, equation: str) -> Array:
    """Einsum-12/28: Einstein summation (explicit or implicit output, ellipsis broadcasting).

    Two operands without repeated letters run as one batched ``numpy.matmul`` (BLAS); other
    forms go to ``numpy.einsum`` with contraction-order optimization.
    """
    if not Inputs:
        raise EvaluationError("Einsum: at least one input is required")
    dt = Inputs[0].dtype
    eq = _check_equation(equation, Inputs)
    ops = [_widen(x) for x in Inputs]
    y: Any = None
    if len(ops) == 2 and ops[0].dtype == ops[1].dtype:
        spelled = _explicit_terms(eq, Inputs)
        if spelled is not None:
            (ta, tb), out = spelled
            y = _einsum2_matmul(ta, tb, out, ops[0], ops[1])
    if y is None:
        try:
            y = np.einsum(eq, *ops, optimize=len(ops) > 1)
        except ValueError as e:
            raise ShapeError(f"Einsum {equation!r}: {e}") from None
    y = np.asarray(y)
    if not y.flags.c_contiguous:
        y = y.copy()  # np.ascontiguousarray would turn a rank-0 result into rank 1
    return _narrow(y, dt)


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
