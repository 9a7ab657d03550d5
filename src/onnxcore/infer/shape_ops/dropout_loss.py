"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.dropout_loss`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    dim_at,
    require_rank,
    shape_rule,
    unify,
    unify_shapes,
)

__all__: list[str] = []


@shape_rule("Dropout")
def _dropout(ctx: ShapeContext) -> list[ShapeT | None]:
    return [ctx.shape(0), ctx.shape(0)]


@shape_rule("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss")
def _loss(ctx: ShapeContext) -> list[ShapeT | None]:
    # input/scores (N, C, d1, ..., dk), target/labels (N, d1, ..., dk): reduction none gives target's shape,
    # mean and sum a scalar. SoftmaxCrossEntropyLoss's log_prob has the scores' shape.
    x, t = ctx.shape(0), ctx.shape(1)
    if x is not None and len(x) < 2:
        ctx.fail(f"input must have rank >= 2 (N, C, ...), has rank {len(x)}")
    if x is not None and t is not None:
        t = unify_shapes(ctx, (x[0], *x[2:]), t, "target and input without the class axis")
    if ctx.present(2):
        w = ctx.shape(2)
        require_rank(ctx, w, (1,), "weight")
        unify(ctx, dim_at(w, 0), dim_at(x, 1), "the length of weight and the class count")
    if x is not None and t is None:
        t = (x[0], *x[2:])
    reduction = ctx.attr("reduction", "mean")
    loss = t if reduction == "none" else (() if reduction in ("mean", "sum") else None)
    return [loss, x]
