"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.deform_conv`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    dim_mul,
    dim_prod,
    require_rank,
    shape_rule,
    unify,
)
from onnxcore.infer.shape_ops.windows import _conv_out, _kernel

__all__: list[str] = []


@shape_rule("DeformConv")
def _deform_conv(ctx: ShapeContext) -> list[ShapeT | None]:
    # DeformConv-19/22: explicit pads only; offset (N, og*k1*..*kn*n, o1, ...) and mask (N, og*k1*..*kn, o1, ...)
    # carry the output's spatial extents.
    y = _conv_out(ctx, 0, 1, 3)
    if y is None:
        return [None]
    out = list(y)
    nd = len(out) - 2
    kk = dim_prod(_kernel(ctx, ctx.shape(1), nd))
    og = int(ctx.attr("offset_group", 1))
    for i, per, what in ((2, nd, "offset"), (4, 1, "mask")):
        s = ctx.shape(i) if ctx.present(i) else None
        if s is None:
            continue
        require_rank(ctx, s, (nd + 2,), what)
        out[0] = unify(ctx, out[0], s[0], f"X and {what}, batch axis")
        unify(ctx, s[1], dim_mul(dim_mul(kk, og), per), f"{what} channels (offset_group * kernel size * {per})")
        for j in range(nd):
            out[2 + j] = unify(ctx, out[2 + j], s[2 + j], f"output and {what}, spatial axis {j}")
    return [tuple(out)]
