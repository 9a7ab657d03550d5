"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.normalization`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from collections.abc import Sequence

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    ShapeT,
    dim_at,
    dim_div,
    norm_axis,
    same_as_input,
    shape_rule,
    unify,
)

__all__: list[str] = []


def _channel_params(ctx: ShapeContext, c: Extent, inputs: Sequence[int], names: Sequence[str]) -> None:
    """Rank-1 parameters the definition gives the shape (C): a fixed length other than C contradicts it."""
    for i, name in zip(inputs, names):
        s = ctx.shape(i) if ctx.present(i) else None
        if s is not None and len(s) == 1:
            unify(ctx, s[0], c, f"the length of {name} and the channel count")


@shape_rule("BatchNormalization")
def _batch_norm(ctx: ShapeContext) -> list[ShapeT | None]:
    # Y is X; running mean/var (and, before 14, saved mean/var) have the shape of the statistics: (C), or
    # before 9 with spatial=0 (C x D1 x ... x Dn), that of the mean and var inputs. From 9 a 1-D X has C = 1.
    x = ctx.shape(0)
    spatial = ctx.since >= 9 or bool(ctx.attr("spatial", 1))
    c = (1 if len(x) == 1 and ctx.since >= 9 else dim_at(x, 1)) if x is not None else None
    stats: list[ShapeT | None] = [ctx.shape(3), ctx.shape(4)]
    if spatial:
        _channel_params(ctx, c, (1, 2, 3, 4), ("scale", "B", "mean", "var"))
        for k, s in enumerate(stats):
            if s is None and x is not None:
                stats[k] = (c,)
            elif s is not None and len(s) == 1:
                stats[k] = (unify(ctx, s[0], c, "statistics and channel count"),)
    return [x, stats[0], stats[1], stats[0], stats[1]]


@shape_rule("InstanceNormalization")
def _instance_norm(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    _channel_params(ctx, dim_at(x, 1), (1, 2), ("scale", "B"))
    return [x]


@shape_rule("GroupNormalization")
def _group_norm(ctx: ShapeContext) -> list[ShapeT | None]:
    # GroupNormalization-18: scale and bias of shape (num_groups); -21: of shape (C). C is a multiple of
    # num_groups in both.
    x = ctx.shape(0)
    c = dim_at(x, 1)
    g = ctx.attr("num_groups", None)
    if isinstance(g, int) and g > 0:
        dim_div(ctx, c, g, "channel count and num_groups")
        _channel_params(ctx, c if ctx.since >= 21 else g, (1, 2), ("scale", "bias"))
    return [x]


@shape_rule("LayerNormalization")
def _layer_norm(ctx: ShapeContext) -> list[ShapeT | None]:
    # Mean and InvStdDev: X's extents before axis, 1 from axis on.
    x = ctx.shape(0)
    if x is None:
        return [None, None, None]
    axis = norm_axis(ctx, int(ctx.attr("axis", -1)), len(x))
    stat = (*x[:axis], *([1] * (len(x) - axis)))
    return [x, stat, stat]


@shape_rule("LpNormalization", "RMSNormalization")
def _normalize_along_axis(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    if x is not None and len(x) > 0:
        norm_axis(ctx, int(ctx.attr("axis", -1)), len(x))
    return [x]


shape_rule("LRN", "MeanVarianceNormalization")(same_as_input)
