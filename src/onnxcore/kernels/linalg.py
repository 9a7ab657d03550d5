"""Linear-algebra kernels: MatMul, Gemm, Einsum, Det, Trilu.

float16, bfloat16 and the narrow floats are multiplied in float32 (BLAS) and rounded once to the
element type (Clause 11.4 permits the wider accumulation). Integers multiply in their own type
and wrap.

Small products: a product of two 2-D float32 or float64 arrays is ``np.dot``, not ``np.matmul``. Both call the
same BLAS routine, with the same bits for every shape and layout tried (``tests/kernels/test_linalg.py``), but
``np.matmul`` is a ufunc, and its machinery costs 0.3-0.4 us per call. That is a quarter of a small product: a
decoder step's linear layer, or a one-row classifier.

A few rows by a large matrix (:func:`dot_2d`): two or three rows times a matrix of at least 2**18 elements are
multiplied one row at a time, by BLAS's matrix-vector product. OpenBLAS's matrix product packs the whole matrix on
every call, which for two rows costs 2-4x the arithmetic (a batch of two in a decoder step: 768 x 3072 weights, 815
us as one product, 192 us as two). Each row's values are then those of that row alone (one row is a matrix-vector
product either way), which is also what numpy's stacked ``matmul`` gives a batch of single rows. Below 2**18
elements whether the packing still costs more than the second pass over the matrix depends on the BLAS's kernels
(OpenBLAS's Haswell kernels, also those of AMD's Zen: two rows by 128 x 512 weights 21 us as one product, 9 us as two;
kernels with a small-matrix path need no packing), so from 2**12 elements it is measured, once per shape and
layout in a process (:func:`rows_one_by_one`): a decoder step's projections at a batch of two or three.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels._util import check_elements, check_unidirectional, scalar_of
from onnxcore.kernels.registry import kernel

__all__ = ["check_product", "clear_row_choices", "dot_2d", "rows_one_by_one"]

Array = np.ndarray


def _widen(x: Array) -> Array:
    dt = x.dtype
    if dt.kind == "V" or dt == np.float16:
        return x.astype(np.float32)
    return x


def _narrow(y: Array, dt: np.dtype[Any]) -> Array:
    return y if y.dtype == dt else y.astype(dt)


# --- MatMul -----------------------------------------------------------------------------------


def check_product(a: tuple[int, ...], b: tuple[int, ...], itemsize: int, what: str = "MatMul") -> None:
    """Refuse a matrix product whose result would exceed the limits (Clause 15.4), before BLAS allocates it.

    The result's size comes from the data: a broadcast view of a few octets (a feed, an Expand) can stand for
    millions of rows, each of which the product writes out. Shapes that do not match are left to the product's
    own error. Used by MatMul and Gemm, and by the plan's fused linear step (the same product on the same rows).
    """
    if not a or not b:
        return
    rows = a[:-1] if len(a) > 1 else ()
    cols = b[-1:] if len(b) > 1 else ()
    lead_a, lead_b = a[:-2], b[:-2]
    rank = max(len(lead_a), len(lead_b))
    lead = []
    for k in range(rank):
        da = lead_a[k - rank + len(lead_a)] if k - rank + len(lead_a) >= 0 else 1
        db = lead_b[k - rank + len(lead_b)] if k - rank + len(lead_b) >= 0 else 1
        lead.append(0 if 0 in (da, db) else max(da, db))
    check_elements([*lead, *rows[-1:], *cols], what, itemsize=itemsize)


_FAST_GEMM = (np.dtype(np.float32), np.dtype(np.float64))

_ROWS_ONE_BY_ONE = 3  # at most this many rows (and at least two) ...
_MATRIX_ONE_BY_ONE = 1 << 18  # ... by a matrix of at least this many elements: a matrix-vector product per row
_MATRIX_MEASURED = 1 << 12  # ... by a smaller one of at least this many: as measured (rows_one_by_one)
_MEASURED_ROUNDS = 5  # runs of each way, taking turns; the first of each is a warm-up as any other
_MARGIN = 0.85  # the rows one by one only when their best time is below this fraction of the product's
# (rows, K, N, the matrix's strides, type) -> whether its rows go one by one. Process-wide: every session multiplies
# a shape alike, whatever its threads (as kernels/_conv_choice.py's choices).
_ROW_CHOICES: dict[tuple[Any, ...], bool] = {}
_ROW_LOCK = threading.Lock()


def rows_one_by_one(a: Array, b: Array) -> bool:
    """Whether :func:`dot_2d` multiplies the rows of ``a`` (2-D, 2 or 3 rows) by ``b`` one at a time: always for a
    matrix of at least 2**18 elements, never below 2**12, between them as measured the first time the shape and
    layout arrive in this process (both ways timed on these arrays, taking turns; the rows one by one chosen only
    when clearly faster). Both ways compute the same sums in the same type, in BLAS's orders for each."""
    size = b.size
    if size >= _MATRIX_ONE_BY_ONE:
        return True
    if size < _MATRIX_MEASURED:
        return False
    key = (a.shape[0], *b.shape, b.strides, a.dtype.char)
    got = _ROW_CHOICES.get(key)
    if got is None:
        measured = _measure_rows(a, b)
        with _ROW_LOCK:  # two threads measuring one shape keep the first's choice, so both compute the same bits
            got = _ROW_CHOICES.setdefault(key, measured)
    return got


def _by_rows(a: Array, b: Array) -> Array:
    """``a @ b`` one row of ``a`` at a time (BLAS's matrix-vector product per row)."""
    y = np.empty((a.shape[0], b.shape[1]), a.dtype)
    for i in range(a.shape[0]):
        np.dot(a[i], b, out=y[i])
    return y


def _measure_rows(a: Array, b: Array) -> bool:
    whole = rows = math.inf
    clock = time.perf_counter
    for _ in range(_MEASURED_ROUNDS):
        t0 = clock()
        np.dot(a, b)
        t1 = clock()
        _by_rows(a, b)
        t2 = clock()
        whole, rows = min(whole, t1 - t0), min(rows, t2 - t1)
    return rows < _MARGIN * whole


def clear_row_choices() -> None:
    """Forget every measured choice of :func:`rows_one_by_one` (tests; a process measures each shape once)."""
    with _ROW_LOCK:
        _ROW_CHOICES.clear()


def dot_2d(a: Array, b: Array) -> Array:
    """``np.dot(a, b)`` of two 2-D arrays of one float type (float32 or float64) whose inner extents agree: a few rows
    by a large matrix one row at a time (module docstring, a few rows by a large matrix).

    Used by MatMul, Gemm and the plan's fused linear steps, so that a product of the same rows by the same matrix
    has the same values whichever step computes it.
    """
    m = a.shape[0]
    if 1 < m <= _ROWS_ONE_BY_ONE and rows_one_by_one(a, b):
        return _by_rows(a, b)
    return np.dot(a, b)


def _matmul(A: Array, B: Array) -> Array:
    dt = A.dtype
    if A.ndim == 2 and B.ndim == 2 and dt in _FAST_GEMM and B.dtype == dt and A.shape[1] == B.shape[0]:
        check_elements((A.shape[0], B.shape[1]), "MatMul", itemsize=dt.itemsize)  # check_product's bound for 2-D
        return dot_2d(A, B)  # (module docstring: small products)
    if A.ndim > 2 and B.ndim == 2 and dt in _FAST_GEMM and B.dtype == dt and A.shape[-1] == B.shape[0]:
        # A stack of rows by one matrix (a transformer's projections): the rows as one 2-D product, as the fused
        # linear steps compute them (so a MatMul gives the same values fused with its Add or not).
        lead = A.shape[:-1]
        check_elements((*lead, B.shape[1]), "MatMul", itemsize=dt.itemsize)
        return dot_2d(A.reshape(math.prod(lead), B.shape[0]), B).reshape(*lead, B.shape[1])
    if A.ndim == 0 or B.ndim == 0:
        raise ShapeError("MatMul: inputs must have rank >= 1")
    check_product(A.shape, B.shape, max(4, dt.itemsize))
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
    if dt in _FAST_GEMM and B.dtype == dt and (C is None or C.dtype == dt):
        # The common case (float32 or float64 throughout): the same operations as below without the widening and
        # the general shape rules, which cost what a small product costs (issue 42: a 15x4 Gemm at numpy's price).
        a = A.T if transA else A
        b = B.T if transB else B
        m, k = a.shape
        k2, n = b.shape
        check_elements((m, n), "Gemm", itemsize=max(4, dt.itemsize))  # check_product's bound for 2-D operands
        if k != k2:
            raise ShapeError(f"Gemm: inner dimensions differ: {a.shape} x {b.shape}")
        y = dot_2d(a, b)  # (module docstring: small products)
        if alpha != 1.0:
            y *= dt.type(alpha)
        if C is not None:
            cs = C.shape
            # (the shapes exporters write, accepted by comparison: a bias row, a full C, a column or one value)
            if not (
                cs == (n,) or cs == (m, n) or cs == (1, n) or cs == (1, 1) or cs == (m, 1) or cs == (1,) or cs == ()
            ):
                check_unidirectional(cs, y.shape)
            if beta == 1.0:
                y += C
            else:
                y += C * dt.type(beta)
        return y
    a = _widen(A)
    b = _widen(B)
    if transA:
        a = a.T
    if transB:
        b = b.T
    check_product(a.shape, b.shape, max(4, dt.itemsize), "Gemm")
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


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ALLOWED = frozenset(_LETTERS + ".,->")

# A two-operand einsum lowered to one batched matmul: the axes summed out of each operand first,
# the transposition and 3-D shape of each, then the shape and transposition of the product.
_Plan2 = tuple[
    tuple[int, ...],
    tuple[int, ...],
    tuple[int, int, int],
    tuple[int, ...],
    tuple[int, ...],
    tuple[int, int, int],
    tuple[int, ...],
    tuple[int, ...],
]


@functools.lru_cache(maxsize=1024)
def _einsum_plan(equation: str, shapes: tuple[tuple[int, ...], ...]) -> tuple[str, _Plan2 | None]:
    """Validate ``equation`` against the input shapes; return it without spaces and, for two
    operands that allow it, a matmul plan. Cached: a model calls one equation many times."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise EvaluationError(f"Einsum: equation {equation!r} has {len(terms)} terms for {len(shapes)} inputs")
    if not set(eq) <= _ALLOWED:
        raise EvaluationError(f"Einsum: invalid characters in equation {equation!r}")
    # Every ellipsis stands for the same number of dimensions (Einsum definition), unlike numpy,
    # which also broadcasts ellipses of different lengths.
    widths = {len(sh) - (len(t) - 3) for t, sh in zip(terms, shapes) if "..." in t}
    if len(widths) > 1:
        raise ShapeError(f"Einsum {equation!r}: ellipses represent different numbers of dimensions")
    # A letter names one extent (1 broadcasting, as numpy and onnxruntime allow); numpy does not check a
    # repeated letter of an empty operand.
    extents: dict[str, set[int]] = {}
    for t, sh in zip(terms, shapes):
        head, _, tail = t.partition("...")
        letters = list(head) + ([] if "..." not in t else [""] * (len(sh) - len(head) - len(tail))) + list(tail)
        for c, d in zip(letters, sh):
            if c:
                extents.setdefault(c, set()).add(int(d))
    for c, ds in extents.items():
        if len(ds - {1}) > 1:
            raise ShapeError(f"Einsum {equation!r}: letter {c!r} has extents {sorted(ds)}")
    if len(shapes) != 2:
        return eq, None
    # Spell every ellipsis as fresh letters and make an implicit output explicit: the ellipsis
    # dimensions first, then the letters used exactly once in increasing ASCII order.
    free = [c for c in _LETTERS if c not in eq]
    width = widths.pop() if widths else 0
    if width < 0 or width > len(free):
        return eq, None
    ell = "".join(free[:width])
    ta, tb = (t.replace("...", ell) for t in terms)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        once = [c for c in sorted(set(ta + tb)) if (ta + tb).count(c) == 1 and c not in ell]
        out = ell + "".join(once)
    return eq, _matmul_plan(ta, tb, out, shapes[0], shapes[1])


def _matmul_plan(ta: str, tb: str, out: str, sha: tuple[int, ...], shb: tuple[int, ...]) -> _Plan2 | None:
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb) or len(set(out)) != len(out):
        return None  # a repeated letter (diagonal): numpy.einsum
    if len(sha) != len(ta) or len(shb) != len(tb) or not set(out) <= set(ta) | set(tb):
        return None
    sa, sb, so = set(ta), set(tb), set(out)
    # Letters of one operand absent from the other and from the output are summed out first.
    a_sum = tuple(i for i, c in enumerate(ta) if c not in sb and c not in so)
    b_sum = tuple(i for i, c in enumerate(tb) if c not in sa and c not in so)
    ta2 = "".join(c for i, c in enumerate(ta) if i not in a_sum)
    tb2 = "".join(c for i, c in enumerate(tb) if i not in b_sum)
    da = {c: e for i, (c, e) in enumerate(zip(ta, sha)) if i not in a_sum}
    db = {c: e for i, (c, e) in enumerate(zip(tb, shb)) if i not in b_sum}
    batch = [c for c in out if c in da and c in db]
    contract = [c for c in ta2 if c in db and c not in so]
    left = [c for c in out if c in da and c not in db]
    right = [c for c in out if c in db and c not in da]
    if any(da[c] != db[c] for c in batch + contract):
        return None  # an extent broadcasting against 1: numpy.einsum

    def size(letters: list[str], d: dict[str, int]) -> int:
        n = 1
        for c in letters:
            n *= d[c]
        return n

    nb, nl, nc, nr = size(batch, da), size(left, da), size(contract, da), size(right, db)
    order = batch + left + right
    return (
        a_sum,
        tuple(ta2.index(c) for c in batch + left + contract),
        (nb, nl, nc),
        b_sum,
        tuple(tb2.index(c) for c in batch + contract + right),
        (nb, nc, nr),
        tuple([da[c] for c in batch] + [da[c] for c in left] + [db[c] for c in right]),
        tuple(order.index(c) for c in out),
    )


@kernel("Einsum", 12, 28)
def einsum(*Inputs: Array, equation: str) -> Array:
    """Einsum-12/28: Einstein summation (explicit or implicit output, ellipsis broadcasting).

    Two operands without repeated letters run as one batched ``numpy.matmul`` (BLAS); other
    forms go to ``numpy.einsum`` with contraction-order optimization.
    """
    if not Inputs:
        raise EvaluationError("Einsum: at least one input is required")
    dt = Inputs[0].dtype
    eq, plan = _einsum_plan(equation, tuple(x.shape for x in Inputs))
    ops = [_widen(x) for x in Inputs]
    y: Any
    if plan is not None and ops[0].dtype == ops[1].dtype:
        a_sum, a_perm, a3, b_sum, b_perm, b3, y_shape, y_perm = plan
        a = ops[0].sum(axis=a_sum) if a_sum else ops[0]
        b = ops[1].sum(axis=b_sum) if b_sum else ops[1]
        y = np.matmul(a.transpose(a_perm).reshape(a3), b.transpose(b_perm).reshape(b3))
        y = y.reshape(y_shape).transpose(y_perm)
    else:
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
