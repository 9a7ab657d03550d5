"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.roi_pool`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    ShapeT,
    dim_at,
    require_rank,
    shape_rule,
    unify,
    unify_shapes,
)
from onnxcore.infer.shape_ops.windows import _pads, _per_axis

__all__: list[str] = []


@shape_rule("MaxRoiPool")
def _max_roi_pool(ctx: ShapeContext) -> list[ShapeT | None]:
    x, rois = ctx.shape(0), ctx.shape(1)
    require_rank(ctx, x, (4,), "X")
    require_rank(ctx, rois, (2,), "rois")
    unify(ctx, dim_at(rois, 1), 5, "rois.shape[1]")
    ps = ctx.attr("pooled_shape", None)
    hw: tuple[Extent, ...] = (int(ps[0]), int(ps[1])) if isinstance(ps, list) and len(ps) == 2 else (None, None)
    return [(dim_at(rois, 0), dim_at(x, 1), *hw)]


@shape_rule("RoiAlign")
def _roi_align(ctx: ShapeContext) -> list[ShapeT | None]:
    x, rois, idx = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    require_rank(ctx, x, (4,), "X")
    require_rank(ctx, rois, (2,), "rois")
    require_rank(ctx, idx, (1,), "batch_indices")
    unify(ctx, dim_at(rois, 1), 4, "rois.shape[1]")
    n = unify(ctx, dim_at(rois, 0), dim_at(idx, 0), "rois.shape[0] and the length of batch_indices")
    return [(n, dim_at(x, 1), int(ctx.attr("output_height", 1)), int(ctx.attr("output_width", 1)))]


@shape_rule("MaxUnpool")
def _max_unpool(ctx: ShapeContext) -> list[ShapeT | None]:
    # The output is output_shape when given; otherwise (in - 1) * stride + kernel - pads per spatial axis
    # (the size MaxPool with the same attributes inverts; the definition states no formula, this is the
    # one onnx's inference, its reference and the runtimes use).
    x = ctx.shape(0)
    x = unify_shapes(ctx, x, ctx.shape(1), "X and I")
    if ctx.present(2):
        given = ctx.ints(2)
        if given is not None:
            return [tuple(given)]
        s = ctx.shape(2)
        n = dim_at(s, 0) if s is not None and len(s) == 1 else None
        return [(None,) * n if isinstance(n, int) else None]
    if x is None:
        return [None]
    nd = len(x) - 2
    kernel = _per_axis(ctx, "kernel_shape", nd, 0)
    strides = _per_axis(ctx, "strides", nd, 1)
    pads = _pads(ctx, nd)
    if kernel is None or strides is None or pads is None:
        return [(x[0], x[1], *([None] * nd))]
    spatial: list[Extent] = []
    for i in range(nd):
        d, st, off = x[2 + i], strides[i], kernel[i] - pads[0][i] - pads[1][i]  # out = (in - 1) * st + off
        if isinstance(d, int):
            spatial.append((d - 1) * st + off if (d - 1) * st + off >= 0 else None)
        else:
            spatial.append(d if st == 1 and off == 1 else None)
    return [(x[0], x[1], *spatial)]
