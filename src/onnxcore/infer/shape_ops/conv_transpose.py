"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.conv_transpose`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

import math

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    ShapeT,
    dim_at,
    dim_div,
    dim_mul,
    require_rank,
    shape_rule,
    unify,
)
from onnxcore.infer.shape_ops.windows import _AUTO_PADS, _SAME, _image_rank, _kernel, _pads, _per_axis

__all__: list[str] = []


@shape_rule("ConvTranspose")
def _conv_transpose(ctx: ShapeContext) -> list[ShapeT | None]:
    # Y = (N, W.shape[1] * group, spatial...) with W (C, M/group, k1, ...). Spatial: output_shape when set;
    # SAME_*: in * stride; else stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pads.
    x, w = ctx.shape(0), ctx.shape(1)
    r = _image_rank(ctx, x, w, "ConvTranspose")
    if r is None:
        return [None]
    nd = r - 2
    group = int(ctx.attr("group", 1))
    c = unify(ctx, dim_at(x, 1), dim_at(w, 0), "X channels and W.shape[0]")
    if isinstance(c, int) and group >= 1 and c % group:
        ctx.fail(f"X has {c} channels, not a multiple of group {group}")
    m = dim_mul(dim_at(w, 1), group) if group >= 1 else None
    if ctx.present(2):
        b = ctx.shape(2)
        require_rank(ctx, b, (1,), "B")
        m = unify(ctx, m, dim_at(b, 0), "W.shape[1] * group and the length of B")
    kernel = _kernel(ctx, w, nd)
    n = dim_at(x, 0)
    unknown = (n, m, *([None] * nd))
    mode = ctx.attr("auto_pad", "NOTSET")
    target = ctx.attr("output_shape", None)
    if isinstance(target, list) and target:
        if len(target) == nd + 2:  # some producers include N and C; the spatial part is what counts
            target = target[2:]
        if len(target) != nd:
            ctx.fail(f"output_shape has {len(target)} values for {nd} spatial axes")
        return [(n, m, *(int(t) for t in target))]
    if x is None or mode not in _AUTO_PADS:
        return [unknown]
    strides = _per_axis(ctx, "strides", nd, 1)
    dil = _per_axis(ctx, "dilations", nd, 1)
    opad = _per_axis(ctx, "output_padding", nd, 0)
    pads = _pads(ctx, nd) if mode == "NOTSET" else ([0] * nd, [0] * nd)
    if strides is None or dil is None or opad is None or pads is None:
        return [unknown]
    spatial: list[Extent] = []
    for i in range(nd):
        d, k, s = x[2 + i], kernel[i], strides[i]
        if mode in _SAME:
            spatial.append(dim_mul(d, s))
            continue
        if not isinstance(k, int):
            spatial.append(None)
            continue
        off = opad[i] + (k - 1) * dil[i] + 1 - pads[0][i] - pads[1][i]  # out = s * (in - 1) + off
        if isinstance(d, int):
            spatial.append(s * (d - 1) + off if s * (d - 1) + off > 0 else None)
        else:
            spatial.append(d if s == 1 and off == 1 else None)
    return [(n, m, *spatial)]


@shape_rule("Col2Im")
def _col2im(ctx: ShapeContext) -> list[ShapeT | None]:
    # Col2Im-18: input (N, C * prod(block_shape), L) -> (N, C, *image_shape).
    x = ctx.shape(0)
    require_rank(ctx, x, (3,), "input")
    img, blk = ctx.ints(1), ctx.ints(2)
    if img is not None and blk is not None and len(img) != len(blk):
        ctx.fail(f"image_shape {img} and block_shape {blk} have different lengths")
    c = dim_div(ctx, dim_at(x, 1), math.prod(blk), "input.shape[1] and prod(block_shape)") if blk is not None else None
    if img is not None:
        spatial: tuple[Extent, ...] = tuple(img)
    else:
        s = ctx.shape(1)
        n = dim_at(s, 0) if s is not None and len(s) == 1 else None
        if not isinstance(n, int):
            return [None]
        spatial = (None,) * n
    return [(dim_at(x, 0), c, *spatial)]
