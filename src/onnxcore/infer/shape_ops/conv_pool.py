"""Shape rules (Clause 9): convolutions and pools, with the sliding-window arithmetic they share.

Definitions are those of ONNX 1-2 (``onnx.defs``); the version noted is the since_version where the shape
behaviour changed. Extents are computed only from fixed integers; a dimension variable passes through where
the definition makes the output extent equal to the input extent whatever its value (a window of one with
stride one, ``SAME`` padding at stride one), Clause 9.3.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    ShapeT,
    dim_at,
    dim_div,
    dim_mul,
    dim_prod,
    require_rank,
    shape_rule,
    unify,
    unify_shapes,
)

__all__: list[str] = []

_SAME = ("SAME_UPPER", "SAME_LOWER")
_AUTO_PADS = ("NOTSET", "VALID", *_SAME)


def _per_axis(ctx: ShapeContext, name: str, n: int, default: int) -> list[int] | None:
    """An INTS attribute with one value per spatial axis (``default`` everywhere when unset); None when unusable.

    A list of the wrong non-zero length contradicts the definition; an empty one is left unknown (some
    runtimes read it as unset).
    """
    v = ctx.attr(name, None)
    if v is None:
        return [default] * n
    if not isinstance(v, list) or not v:
        return None
    if len(v) != n:
        ctx.fail(f"{name} has {len(v)} values for {n} spatial axes")
    return [int(x) for x in v]


def _pads(ctx: ShapeContext, n: int) -> tuple[list[int], list[int]] | None:
    """``pads`` as (begins, ends); None when unusable (empty or negative)."""
    p = _per_axis(ctx, "pads", 2 * n, 0)
    if p is None or any(x < 0 for x in p):
        return None
    return p[:n], p[n:]


def _window(
    d: Extent, k: Extent, s: int, dil: int, pb: int, pe: int, mode: str, ceil_mode: bool, drop_tail: bool
) -> Extent:
    """Output extent of a sliding window along one axis (Conv and the pools).

    NOTSET: ``floor((in + pb + pe - ek) / s) + 1`` (``ceil`` with ceil_mode; from the version-22 pools a
    ceil_mode window that would start in the end padding is dropped); VALID: the same with no padding (its
    ceil_mode form ``ceil((in - ek + 1) / s)`` is the same integer); SAME_*: ``ceil(in / s)``. ``ek`` is the
    dilated kernel ``(k - 1) * dil + 1``.
    """
    if s < 1 or dil < 1:
        return None
    if mode in _SAME:
        if s == 1:
            return d
        return -(-d // s) if isinstance(d, int) else None
    if mode == "VALID":
        pb = pe = 0
    if not isinstance(k, int) or k < 1:
        return None
    off = pb + pe - (k - 1) * dil - 1  # out = (in + off) // s + 1
    if not isinstance(d, int):
        return d if s == 1 and off == -1 else None
    span = d + off
    if span < 0:
        return None  # the padded input is shorter than the kernel: no extent the definition gives
    if ceil_mode and mode == "NOTSET":
        o = -(-span // s) + 1
        if drop_tail and (o - 1) * s >= d + pb:
            o -= 1
        return o
    return span // s + 1


def _spatial_out(
    ctx: ShapeContext,
    x: ShapeT,
    kernel: Sequence[Extent],
    *,
    auto_pad: bool = True,
    dilations: bool = True,
    ceil_mode: bool = False,
    drop_tail: bool = False,
) -> list[Extent]:
    """The spatial output extents of a convolution or pool over ``x`` (N, C, D1, ...)."""
    nd = len(x) - 2
    unknown: list[Extent] = [None] * nd
    mode = ctx.attr("auto_pad", "NOTSET") if auto_pad else "NOTSET"
    if mode not in _AUTO_PADS:
        return unknown
    strides = _per_axis(ctx, "strides", nd, 1)
    dil = _per_axis(ctx, "dilations", nd, 1) if dilations else [1] * nd
    pads = _pads(ctx, nd) if mode == "NOTSET" else ([0] * nd, [0] * nd)
    if strides is None or dil is None or pads is None:
        return unknown
    return [
        _window(x[2 + i], kernel[i], strides[i], dil[i], pads[0][i], pads[1][i], mode, ceil_mode, drop_tail)
        for i in range(nd)
    ]


def _kernel(ctx: ShapeContext, w: ShapeT | None, nd: int) -> list[Extent]:
    """The kernel extents: the ``kernel_shape`` attribute, unified with W's spatial extents when W is known."""
    ks = _per_axis(ctx, "kernel_shape", nd, 0) if ctx.has_attr("kernel_shape") else None
    out: list[Extent] = list(ks) if ks is not None else [None] * nd
    if w is not None and len(w) == nd + 2:
        out = [unify(ctx, a, b, f"kernel_shape and W, spatial axis {i}") for i, (a, b) in enumerate(zip(out, w[2:]))]
    return out


def _image_rank(ctx: ShapeContext, x: ShapeT | None, w: ShapeT | None, what: str) -> int | None:
    """The rank of X (N, C, D1, ...) in a convolution, from X or W; fails when they differ or it is below 3."""
    if x is not None and w is not None and len(x) != len(w):
        ctx.fail(f"{what}: X has rank {len(x)} and W rank {len(w)}")
    r = len(x) if x is not None else (len(w) if w is not None else None)
    if r is not None and r < 3:
        ctx.fail(f"{what}: X must have rank >= 3 (N, C, D1, ...), has rank {r}")
    return r


# --- convolutions ---------------------------------------------------------------------------------


def _conv_out(ctx: ShapeContext, xi: int, wi: int, bi: int | None) -> ShapeT | None:
    """Y of Conv, ConvInteger, QLinearConv, DeformConv: (N, M, spatial...), W being (M, C/group, k1, ...)."""
    x, w = ctx.shape(xi), ctx.shape(wi)
    r = _image_rank(ctx, x, w, ctx.op_type)
    if r is None:
        return None
    nd = r - 2
    group = int(ctx.attr("group", 1))
    m = dim_at(w, 0)
    if group >= 1:
        # C == W.shape[1] * group, and the M output channels are divided into the groups.
        c, wc = dim_at(x, 1), dim_at(w, 1)
        if isinstance(c, int) and isinstance(wc, int) and c != wc * group:
            ctx.fail(f"X has {c} channels, W.shape[1] * group = {wc} * {group} = {wc * group}")
        if isinstance(m, int) and m % group:
            ctx.fail(f"W has {m} output channels, not a multiple of group {group}")
    if bi is not None and ctx.present(bi):
        b = ctx.shape(bi)
        require_rank(ctx, b, (1,), "B")
        m = unify(ctx, m, dim_at(b, 0), "W.shape[0] and the length of B")
    kernel = _kernel(ctx, w, nd)
    if x is None:
        return (None, m, *([None] * nd))
    spatial = _spatial_out(ctx, x, kernel, auto_pad=ctx.op_type != "DeformConv")
    return (x[0], m, *spatial)


@shape_rule("Conv")
def _conv(ctx: ShapeContext) -> list[ShapeT | None]:
    # Conv-1/11/22: SAME_* gives ceil(in / stride) (the text of Conv-1 says "match the input", which is the
    # same at stride 1; every runtime and the later text use the ceil form).
    return [_conv_out(ctx, 0, 1, 2)]


@shape_rule("ConvInteger")
def _conv_integer(ctx: ShapeContext) -> list[ShapeT | None]:
    return [_conv_out(ctx, 0, 1, None)]


@shape_rule("QLinearConv")
def _qlinear_conv(ctx: ShapeContext) -> list[ShapeT | None]:
    # Inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B.
    return [_conv_out(ctx, 0, 3, 8)]


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


# --- pools ----------------------------------------------------------------------------------------


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
