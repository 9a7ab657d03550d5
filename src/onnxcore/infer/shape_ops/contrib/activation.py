"""Shape rules (Clause 9) of onnxruntime's com.microsoft activations, fused additions and CDist: the family of
:mod:`onnxcore.kernels.contrib.activation`.

The shapes are those onnxruntime's kernels produce (tests/kernels/contrib checks them against it); extents are
computed from fixed integers only and dimension variables pass through unchanged (Clause 9.3).
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    dim_at,
    norm_axis,
    require_rank,
    same_as_input,
    shape_rule,
    unify,
)

__all__: list[str] = []

MS = "com.microsoft"


def last_extent_param(ctx: ShapeContext, x: ShapeT | None, i: int, name: str) -> None:
    """Input ``i`` (when given) is 1-D of x's last extent."""
    p = ctx.shape(i) if ctx.present(i) else None
    if p is None:
        return
    require_rank(ctx, p, (1,), name)
    if x:
        unify(ctx, p[0], x[-1], f"the length of {name} and the last extent of the input")


@shape_rule("Gelu", "QuickGelu", domain=MS)
def _activation(ctx: ShapeContext) -> list[ShapeT | None]:
    return same_as_input(ctx)


@shape_rule("FastGelu", "BiasGelu", domain=MS)
def _bias_activation(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    last_extent_param(ctx, x, 1, "the bias")
    return [x]


@shape_rule("BiasAdd", domain=MS)
def _bias_add(ctx: ShapeContext) -> list[ShapeT | None]:
    x, skip = ctx.shape(0), ctx.shape(2)
    require_rank(ctx, x, (3,), "X")
    last_extent_param(ctx, x, 1, "bias")
    if x is not None and skip is not None and len(skip) == 3:
        x = tuple(unify(ctx, a, b, "X and skip") for a, b in zip(x, skip, strict=True))
    return [x]


@shape_rule("BiasSoftmax", domain=MS)
def _bias_softmax(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    if x is not None and x:
        norm_axis(ctx, int(ctx.attr("axis", 1)), len(x))
    return [x]


@shape_rule("CDist", domain=MS)
def _cdist(ctx: ShapeContext) -> list[ShapeT | None]:
    a, b = ctx.shape(0), ctx.shape(1)
    require_rank(ctx, a, (2,), "A")
    require_rank(ctx, b, (2,), "B")
    if a is not None and b is not None:
        unify(ctx, a[1], b[1], "the row lengths of A and B")
    return [(dim_at(a, 0), dim_at(b, 0))]
