"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.linalg`: matrix products,
Einsum, Trilu; and the helpers the other families' products, reductions and ``ai.onnx.ml`` rules share.

Definitions are those of ONNX 1-2 (``onnx.defs``); the version noted is the since_version where the shape
behaviour changed. Where a definition leaves a shape open (the ``ai.onnx.ml`` score columns, 1-D inputs
read as one row) the rule states what the runtimes agree on, and nothing where they do not.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    ShapeIncompatible,
    ShapeT,
    broadcast,
    shape_rule,
    unidirectional,
    unify,
)
from onnxcore.infer.shape_ops.tensor import Shapes

__all__: list[str] = []

_ML = "ai.onnx.ml"


def _scalar(ctx: ShapeContext, i: int) -> int | None:
    """The statically known value of a one-element integer input ``i`` (a size, a length, an axis)."""
    v = ctx.ints(i) if ctx.present(i) else None
    return v[0] if v is not None and len(v) == 1 else None


# --- matrix products ----------------------------------------------------------------------------


def _matmul(ctx: ShapeContext, a: ShapeT | None, b: ShapeT | None) -> ShapeT | None:
    """``numpy.matmul`` shapes: a 1-D operand is a row (A) or a column (B) whose axis is then dropped;
    the batch axes broadcast (Clause 6.6.2); the inner extents are equal."""
    if a is None or b is None:
        return None
    if not a or not b:
        ctx.fail("a matrix product operand must have rank >= 1 (numpy.matmul semantics)")
    a2 = a if len(a) > 1 else (1, *a)
    b2 = b if len(b) > 1 else (*b, 1)
    unify(ctx, a2[-1], b2[-2], "inner extents of the matrix product")
    batch = broadcast(ctx, [a2[:-2], b2[:-2]])
    assert batch is not None
    rows = a2[-2:-1] if len(a) > 1 else ()
    cols = b2[-1:] if len(b) > 1 else ()
    return (*batch, *rows, *cols)


@shape_rule("MatMul")
def _matmul_rule(ctx: ShapeContext) -> list[ShapeT | None]:
    return [_matmul(ctx, ctx.shape(0), ctx.shape(1))]


@shape_rule("Gemm")
def _gemm(ctx: ShapeContext) -> list[ShapeT | None]:
    return gemm_shapes(ctx, old_broadcast=ctx.since < 7)


def gemm_shapes(ctx: ShapeContext, *, old_broadcast: bool) -> list[ShapeT | None]:
    """Gemm's output shape; ``old_broadcast``: Gemm-1/6's rule for C (the ``broadcast`` attribute)."""
    a, b = ctx.shape(0), ctx.shape(1)
    # A is (M, K) and B is (K, N), transposed by transA/transB.
    for name, s in (("A", a), ("B", b)):
        if s is not None and len(s) != 2:
            ctx.fail(f"Gemm {name} must have rank 2, got rank {len(s)}")
    m, ka = (None, None) if a is None else (a[::-1] if ctx.attr("transA", 0) else a)
    kb, n = (None, None) if b is None else (b[::-1] if ctx.attr("transB", 0) else b)
    unify(ctx, ka, kb, "Gemm inner extent K of A and B")
    c = ctx.shape(2) if ctx.present(2) else None
    if c is not None:
        mn = [m, n]
        if old_broadcast and not ctx.attr("broadcast", 0):
            # Gemm-1/6 without broadcast: C has the shape (M, N) of the output.
            if len(c) != 2:
                ctx.fail(f"C of rank {len(c)} is not (M, N) (broadcast=0 before opset 7)")
            mn = [unify(ctx, mn[j], c[j], f"C and the output (M, N), axis {j}") for j in (0, 1)]
        else:
            # C is unidirectionally broadcastable to (M, N) (Clause 6.6.3): a fixed extent other than 1 is M or N.
            mn = list(unidirectional(ctx, (m, n), c) or (m, n))
        m, n = mn
    return [(m, n)]


@shape_rule("Det")
def _det(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    if x is None:
        return [None]
    if len(x) < 2:
        ctx.fail(f"Det needs square matrices [*, M, M], got rank {len(x)}")
    unify(ctx, x[-2], x[-1], "Det: the matrices are square")
    return [x[:-2]]


# --- Einsum -------------------------------------------------------------------------------------

_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _einsum_term(term: str) -> tuple[str, str | None] | None:
    """The letters before an ellipsis and those after it (None without one); None if malformed."""
    head, ell, tail = term.partition("...")
    if not set(head + tail) <= _LETTERS:
        return None
    return head, tail if ell else None


def _letter_extent(ctx: ShapeContext, eq: str, c: str, a: Extent, b: Extent) -> Extent:
    """Two extents of one letter: they broadcast against 1 (onnxruntime and numpy both allow it)."""
    try:
        out = broadcast(ctx, [(a,), (b,)])
    except ShapeIncompatible:
        ctx.fail(f"letter {c!r} of the equation {eq!r} has extents {a} and {b}")
    assert out is not None
    return out[0]


@shape_rule("Einsum")
def _einsum(ctx: ShapeContext) -> list[ShapeT | None]:
    eq = str(ctx.attr("equation") or "").replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    parsed = [_einsum_term(t) for t in lhs.split(",")]
    out_term = _einsum_term(rhs) if arrow else None
    terms = [p for p in parsed if p is not None]
    if len(terms) < len(parsed) or (arrow and out_term is None):
        return [None]  # a malformed equation: nothing is concluded from it
    if len(terms) != ctx.n_inputs:
        ctx.fail(f"equation {eq!r} has {len(terms)} input terms for {ctx.n_inputs} inputs")
    extent: dict[str, Extent] = {}
    ellipses: list[ShapeT | None] = []  # the dimensions each ellipsis stands for; None if unknown
    for i, (head, tail) in enumerate(terms):
        x = ctx.shape(i)
        fixed = len(head) + len(tail or "")
        if x is not None and (len(x) < fixed if tail is not None else len(x) != fixed):
            ctx.fail(f"input {i} of rank {len(x)} does not fit its term of the equation {eq!r}")
        dims: list[Extent] = [None] * fixed if x is None else [*x[: len(head)], *x[len(x) - len(tail or "") :]]
        if tail is not None:
            ellipses.append(None if x is None else x[len(head) : len(x) - len(tail)])
        for c, d in zip(head + (tail or ""), dims):
            extent[c] = _letter_extent(ctx, eq, c, extent[c], d) if c in extent else d
    known = [e for e in ellipses if e is not None]
    widths = {len(e) for e in known}
    if len(widths) > 1:
        # Every ellipsis stands for the same number of dimensions (Einsum definition).
        ctx.fail(f"the ellipses of the equation {eq!r} stand for {sorted(widths)} dimensions")
    ell: ShapeT | None = ()
    if known:
        groups = list(known)
        if len(known) < len(ellipses):
            # An ellipsis of unknown rank is as long as the others; its extents may broadcast a 1 away.
            groups.append((None,) * len(known[0]))
        ell = broadcast(ctx, groups)
    elif ellipses:
        ell = None
    if out_term is not None:
        out_head, out_tail = out_term
        if not set(out_head + (out_tail or "")) <= set(extent):
            return [None]
    else:
        # Implicit output: the ellipsis dimensions, then the letters used exactly once, in ASCII order.
        used = "".join(head + (tail or "") for head, tail in terms)
        once = "".join(sorted(c for c in set(used) if used.count(c) == 1))
        out_head, out_tail = ("", once) if ellipses else (once, None)
    if ell is None or (out_tail is None and ell):
        return [None]  # unknown ellipsis dimensions, or some the output drops (which fails at run time)
    middle = ell if out_tail is not None else ()
    return [(*(extent[c] for c in out_head), *middle, *(extent[c] for c in out_tail or ""))]


# --- ai.onnx.ml ---------------------------------------------------------------------------------


def _batch(x: ShapeT | None) -> Extent:
    """N of an ``[N, F]`` input; a 1-D input is one sample (what the runtimes do)."""
    if x is None or len(x) not in (1, 2):
        return None
    return 1 if len(x) == 1 else x[0]


def _count(ctx: ShapeContext, *names: str) -> int | None:
    """The length of the one list attribute of ``names`` that is set (None if none or several disagree)."""
    lengths = {len(ctx.attr(n)) for n in names if ctx.attr(n)}
    return lengths.pop() if len(lengths) == 1 else None


# --- ai.onnx.preview.training -------------------------------------------------------------------

# Per optimizer: the number of input kinds (X, G, then the states), and for each output kind the input
# kinds its pseudo code combines element-wise (with broadcasting), e.g. Adam's V_new = alpha*V + (1-alpha)*(X, G).


@shape_rule("Trilu")
def _trilu(ctx: ShapeContext) -> Shapes:
    x = ctx.shape(0)
    if x is not None and len(x) < 2:
        ctx.fail(f"input of rank {len(x)} (rank >= 2 is required)")
    return [x]
