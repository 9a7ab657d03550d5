"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.pool`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    ShapeT,
    shape_rule,
)
from onnxcore.infer.shape_ops.windows import _per_axis, _spatial_out

__all__: list[str] = []


@shape_rule("AveragePool", "MaxPool", "LpPool")
def _pool(ctx: ShapeContext) -> list[ShapeT | None]:
    """Y (and MaxPool's Indices, from 8): (N, C, spatial...).

    ceil_mode: AveragePool and MaxPool from 10, LpPool from 18; dilations: MaxPool from 10, LpPool from 18,
    AveragePool from 19. From version 22 (all three pools) a ceil_mode window that would start in the end
    padding is dropped; before 22 the plain ceil formula holds. AveragePool-11's "floor" forms for auto_pad
    with ceil_mode off contradict its own auto_pad text (``ceil(in / stride)``) and were corrected in 19: the
    ceil forms are used in every version.
    """
    x = ctx.shape(0)
    if x is None:
        return [None, None]
    if len(x) < 3:
        ctx.fail(f"X must have rank >= 3 (N, C, D1, ...), has rank {len(x)}")
    nd = len(x) - 2
    op, v = ctx.op_type, ctx.since
    has_ceil = v >= (18 if op == "LpPool" else 10)
    has_dil = v >= {"MaxPool": 10, "LpPool": 18, "AveragePool": 19}[op]
    if op == "LpPool" and v == 1:
        # LpPool-1: kernel_shape optional and pads "along each axis"; only the per-spatial-axis form is read.
        ks, p = ctx.attr("kernel_shape", None), ctx.attr("pads", None)
        if not isinstance(ks, list) or len(ks) != nd or (p is not None and len(p) != 2 * nd):
            return [(x[0], x[1], *([None] * nd))]
    ks = _per_axis(ctx, "kernel_shape", nd, 0)
    kernel: list[Extent] = list(ks) if ks is not None else [None] * nd
    ceil = has_ceil and bool(ctx.attr("ceil_mode", 0))
    spatial = _spatial_out(ctx, x, kernel, dilations=has_dil, ceil_mode=ceil, drop_tail=v >= 22)
    y = (x[0], x[1], *spatial)
    return [y, y]


@shape_rule("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def _global_pool(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    if x is None:
        return [None]
    if len(x) < 2:
        ctx.fail(f"X must have rank >= 2 (N, C, ...), has rank {len(x)}")
    return [(x[0], x[1], *([1] * (len(x) - 2)))]
