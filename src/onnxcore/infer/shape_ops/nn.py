"""Shape rules (Clause 9): nn operators — convolutions, pools, normalizations, recurrent networks,
attention blocks, resampling, detection, losses and image decoding.

Definitions are those of ONNX 1-2 (``onnx.defs``); the version noted is the since_version where the shape
behaviour changed. Extents are computed only from fixed integers; a dimension variable passes through where
the definition makes the output extent equal to the input extent whatever its value (a window of one with
stride one, ``SAME`` padding at stride one, a scale of exactly 1), Clause 9.3.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    ShapeT,
    dim_add,
    dim_mul,
    dim_prod,
    norm_axis,
    same_as_input,
    shape_rule,
    unify,
    unify_shapes,
)

__all__: list[str] = []

_SAME = ("SAME_UPPER", "SAME_LOWER")
_AUTO_PADS = ("NOTSET", "VALID", *_SAME)


# --- helpers --------------------------------------------------------------------------------------


def _dim(s: ShapeT | None, i: int) -> Extent:
    """Extent ``i`` of ``s`` (negative counts from the end); None when the rank is unknown or too small."""
    if s is None or not -len(s) <= i < len(s):
        return None
    return s[i]


def _div(ctx: ShapeContext, a: Extent, b: Extent, what: str) -> Extent:
    """``a / b`` where the definition makes ``a`` a multiple of ``b`` (fails when both are fixed and it is not)."""
    if b == 1:
        return a
    if isinstance(a, int) and isinstance(b, int) and b > 0:
        if a % b:
            ctx.fail(f"{what}: {a} is not a multiple of {b}")
        return a // b
    return None


def _same(ctx: ShapeContext, dims: Sequence[Extent], what: str) -> Extent:
    """Extents the definition requires equal, unified (fails on two fixed ones that differ)."""
    out: Extent = None
    for d in dims:
        out = unify(ctx, out, d, what)
    return out


def _rank_is(ctx: ShapeContext, s: ShapeT | None, ranks: Sequence[int], what: str) -> None:
    if s is not None and len(s) not in ranks:
        ctx.fail(f"{what} has rank {len(s)}, the definition requires {' or '.join(map(str, ranks))}")


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
    m = _dim(w, 0)
    if group >= 1:
        # C == W.shape[1] * group, and the M output channels are divided into the groups.
        c, wc = _dim(x, 1), _dim(w, 1)
        if isinstance(c, int) and isinstance(wc, int) and c != wc * group:
            ctx.fail(f"X has {c} channels, W.shape[1] * group = {wc} * {group} = {wc * group}")
        if isinstance(m, int) and m % group:
            ctx.fail(f"W has {m} output channels, not a multiple of group {group}")
    if bi is not None and ctx.present(bi):
        b = ctx.shape(bi)
        _rank_is(ctx, b, (1,), "B")
        m = unify(ctx, m, _dim(b, 0), "W.shape[0] and the length of B")
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
        _rank_is(ctx, s, (nd + 2,), what)
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
    c = unify(ctx, _dim(x, 1), _dim(w, 0), "X channels and W.shape[0]")
    if isinstance(c, int) and group >= 1 and c % group:
        ctx.fail(f"X has {c} channels, not a multiple of group {group}")
    m = dim_mul(_dim(w, 1), group) if group >= 1 else None
    if ctx.present(2):
        b = ctx.shape(2)
        _rank_is(ctx, b, (1,), "B")
        m = unify(ctx, m, _dim(b, 0), "W.shape[1] * group and the length of B")
    kernel = _kernel(ctx, w, nd)
    n = _dim(x, 0)
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
    _rank_is(ctx, x, (3,), "input")
    img, blk = ctx.ints(1), ctx.ints(2)
    if img is not None and blk is not None and len(img) != len(blk):
        ctx.fail(f"image_shape {img} and block_shape {blk} have different lengths")
    c = _div(ctx, _dim(x, 1), math.prod(blk), "input.shape[1] and prod(block_shape)") if blk is not None else None
    if img is not None:
        spatial: tuple[Extent, ...] = tuple(img)
    else:
        s = ctx.shape(1)
        n = _dim(s, 0) if s is not None and len(s) == 1 else None
        if not isinstance(n, int):
            return [None]
        spatial = (None,) * n
    return [(_dim(x, 0), c, *spatial)]


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
    _rank_is(ctx, x, (4,), "X")
    _rank_is(ctx, rois, (2,), "rois")
    unify(ctx, _dim(rois, 1), 5, "rois.shape[1]")
    ps = ctx.attr("pooled_shape", None)
    hw: tuple[Extent, ...] = (int(ps[0]), int(ps[1])) if isinstance(ps, list) and len(ps) == 2 else (None, None)
    return [(_dim(rois, 0), _dim(x, 1), *hw)]


@shape_rule("RoiAlign")
def _roi_align(ctx: ShapeContext) -> list[ShapeT | None]:
    x, rois, idx = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    _rank_is(ctx, x, (4,), "X")
    _rank_is(ctx, rois, (2,), "rois")
    _rank_is(ctx, idx, (1,), "batch_indices")
    unify(ctx, _dim(rois, 1), 4, "rois.shape[1]")
    n = unify(ctx, _dim(rois, 0), _dim(idx, 0), "rois.shape[0] and the length of batch_indices")
    return [(n, _dim(x, 1), int(ctx.attr("output_height", 1)), int(ctx.attr("output_width", 1)))]


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
        n = _dim(s, 0) if s is not None and len(s) == 1 else None
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


# --- normalizations -------------------------------------------------------------------------------


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
    c = (1 if len(x) == 1 and ctx.since >= 9 else _dim(x, 1)) if x is not None else None
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
    _channel_params(ctx, _dim(x, 1), (1, 2), ("scale", "B"))
    return [x]


@shape_rule("GroupNormalization")
def _group_norm(ctx: ShapeContext) -> list[ShapeT | None]:
    # GroupNormalization-18: scale and bias of shape (num_groups); -21: of shape (C). C is a multiple of
    # num_groups in both.
    x = ctx.shape(0)
    c = _dim(x, 1)
    g = ctx.attr("num_groups", None)
    if isinstance(g, int) and g > 0:
        _div(ctx, c, g, "channel count and num_groups")
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


shape_rule("LRN", "MeanVarianceNormalization", "RotaryEmbedding")(same_as_input)


# --- recurrent networks ---------------------------------------------------------------------------

_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


@shape_rule("RNN", "GRU", "LSTM")
def _recurrent(ctx: ShapeContext) -> list[ShapeT | None]:
    """Y (seq, dirs, batch, hidden), Y_h and Y_c (dirs, batch, hidden); with layout=1 (from 14) batch first:
    Y (batch, seq, dirs, hidden), Y_h and Y_c (batch, dirs, hidden)."""
    g = _GATES[ctx.op_type]
    x, w, r, b = ctx.shape(0), ctx.shape(1), ctx.shape(2), ctx.shape(3) if ctx.present(3) else None
    for s, name in ((x, "X"), (w, "W"), (r, "R")):
        _rank_is(ctx, s, (3,), name)
    _rank_is(ctx, b, (2,), "B")
    layout = int(ctx.attr("layout", 0)) if ctx.since >= 14 else 0
    states = [ctx.shape(i) for i in ((5, 6) if ctx.op_type == "LSTM" else (5,)) if ctx.present(i)]
    dirs: Extent = 2 if ctx.attr("direction", "forward") == "bidirectional" else 1
    dirs = _same(ctx, [dirs, _dim(w, 0), _dim(r, 0), _dim(b, 0)], "num_directions")
    hs = ctx.attr("hidden_size", None)
    hidden = _same(
        ctx,
        [
            hs if isinstance(hs, int) else None,
            _dim(r, 2),
            _div(ctx, _dim(r, 1), g, "R.shape[1] and the gate count"),
            _div(ctx, _dim(w, 1), g, "W.shape[1] and the gate count"),
            _div(ctx, _dim(b, 1), 2 * g, "B.shape[1] and twice the gate count"),
        ],
        "hidden_size",
    )
    seq, batch = (_dim(x, 0), _dim(x, 1)) if layout == 0 else (_dim(x, 1), _dim(x, 0))
    lens = ctx.shape(4) if ctx.present(4) else None
    batch = _same(ctx, [batch, _dim(lens, 0), *(_dim(s, 1 - layout) for s in states)], "batch size")
    for s in states:
        _rank_is(ctx, s, (3,), "initial state")
        unify(ctx, _dim(s, layout), dirs, "initial state, num_directions")
        unify(ctx, _dim(s, 2), hidden, "initial state, hidden_size")
    if layout == 0:
        return [(seq, dirs, batch, hidden), (dirs, batch, hidden), (dirs, batch, hidden)]
    return [(batch, seq, dirs, hidden), (batch, dirs, hidden), (batch, dirs, hidden)]


# --- attention ------------------------------------------------------------------------------------


def _heads(ctx: ShapeContext, s: ShapeT | None, heads: Extent, what: str) -> tuple[Extent, Extent, Extent]:
    """(heads, sequence, head size) of a 4-D (B, H, S, D) or 3-D (B, S, H*D) input."""
    if s is None:
        return None, None, None
    if len(s) == 4:
        return s[1], s[2], s[3]
    return heads, s[1], _div(ctx, s[2], heads, f"{what} hidden size and its head count")


def _packed(q_heads: Extent, kv_heads: Extent, v_hidden: Extent, v_head: Extent) -> Extent:
    """q_num_heads * v_head_size of a 3-D output; V's own extent when the head counts are equal."""
    if q_heads == kv_heads and q_heads is not None:
        return v_hidden
    return dim_mul(q_heads, v_head)


@shape_rule("Attention")
def _attention(ctx: ShapeContext) -> list[ShapeT | None]:
    """Attention-23/24/25: Y, present_key, present_value, qk_matmul_output.

    total_sequence_length = past_sequence_length + kv_sequence_length; 3-D inputs are (B, S, heads * D) with
    the head counts from q_num_heads / kv_num_heads.
    """
    q, k, v = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    for s, name in ((q, "Q"), (k, "K"), (v, "V")):
        _rank_is(ctx, s, (3, 4), name)
    qa, ka = ctx.attr("q_num_heads", None), ctx.attr("kv_num_heads", None)
    hq, sq, dq = _heads(ctx, q, qa if isinstance(qa, int) and qa > 0 else None, "Q")
    hk, skv, dk = _heads(ctx, k, ka if isinstance(ka, int) and ka > 0 else None, "K")
    hv, skv_v, dv = _heads(ctx, v, ka if isinstance(ka, int) and ka > 0 else None, "V")
    batch = _same(ctx, [_dim(q, 0), _dim(k, 0), _dim(v, 0)], "batch size of Q, K and V")
    hk = unify(ctx, hk, hv, "head counts of K and V")
    skv = unify(ctx, skv, skv_v, "sequence lengths of K and V")
    unify(ctx, dq, dk, "head sizes of Q and K")
    past_k = ctx.shape(4) if ctx.present(4) else None
    past_v = ctx.shape(5) if ctx.present(5) else None
    total = skv
    if ctx.present(4):
        past = unify(ctx, _dim(past_k, 2), _dim(past_v, 2), "past sequence lengths of past_key and past_value")
        total = dim_add(past, skv)
    if q is not None and len(q) == 3:
        y: ShapeT | None = (batch, sq, _packed(hq, hk, _dim(v, 2) if v is not None and len(v) == 3 else None, dv))
    else:
        y = (batch, hq, sq, dv) if q is not None else None
    return [y, (batch, hk, total, dk), (batch, hk, total, dv), (batch, hq, sq, total)]


@shape_rule("FlexAttention", domain="ai.onnx.preview")
def _flex_attention(ctx: ShapeContext) -> list[ShapeT | None]:
    # Q (B, Hq, L, E), K (B, Hkv, S, E), V (B, Hkv, S, Ev) -> Y (B, Hq, L, Ev).
    q, k, v = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    for s, name in ((q, "Q"), (k, "K"), (v, "V")):
        _rank_is(ctx, s, (4,), name)
    batch = _same(ctx, [_dim(q, 0), _dim(k, 0), _dim(v, 0)], "batch size of Q, K and V")
    unify(ctx, _dim(q, 3), _dim(k, 3), "head sizes of Q and K")
    unify(ctx, _dim(k, 2), _dim(v, 2), "sequence lengths of K and V")
    return [(batch, _dim(q, 1), _dim(q, 2), _dim(v, 3))]


@shape_rule("SwiGLU")
def _swiglu(ctx: ShapeContext) -> list[ShapeT | None]:
    # SwiGLU-28: A and B have identical shapes (no broadcasting).
    return [unify_shapes(ctx, ctx.shape(0), ctx.shape(1), "A and B")]


@shape_rule("LinearAttention")
def _linear_attention(ctx: ShapeContext) -> list[ShapeT | None]:
    """LinearAttention-27: query (B, T, Hq*dk), key (B, T, Hkv*dk), value (B, T, Hkv*dv) -> output
    (B, T, Hq*dv), present_state (B, Hkv, dk, dv)."""
    q, k, v = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    for s, name in ((q, "query"), (k, "key"), (v, "value")):
        _rank_is(ctx, s, (3,), name)
    qa, ka = ctx.attr("q_num_heads", None), ctx.attr("kv_num_heads", None)
    hq = qa if isinstance(qa, int) and qa > 0 else None
    hk = ka if isinstance(ka, int) and ka > 0 else None
    batch = _same(ctx, [_dim(q, 0), _dim(k, 0), _dim(v, 0)], "batch size of query, key and value")
    t = _same(ctx, [_dim(q, 1), _dim(k, 1), _dim(v, 1)], "sequence length of query, key and value")
    dk = _same(
        ctx,
        [_div(ctx, _dim(q, 2), hq, "query hidden size and q_num_heads"), _div(ctx, _dim(k, 2), hk, "key hidden size")],
        "d_k of query and key",
    )
    dv = _div(ctx, _dim(v, 2), hk, "value hidden size and kv_num_heads")
    state: ShapeT = (batch, hk, dk, dv)
    if ctx.present(3):
        state = unify_shapes(ctx, state, ctx.shape(3), "past_state") or state
    return [(batch, t, _packed(hq, hk, _dim(v, 2), dv)), state]


@shape_rule("CausalConvWithState")
def _causal_conv(ctx: ShapeContext) -> list[ShapeT | None]:
    # CausalConvWithState-27: input (B, C, L), weight (C, 1, k) -> output (B, C, L), present_state (B, C, k - 1).
    x, w = ctx.shape(0), ctx.shape(1)
    _rank_is(ctx, x, (3,), "input")
    _rank_is(ctx, w, (3,), "weight")
    c = unify(ctx, _dim(x, 1), _dim(w, 0), "input channels and weight.shape[0]")
    unify(ctx, _dim(w, 1), 1, "weight.shape[1]")
    if ctx.present(2):
        c = unify(ctx, c, _dim(ctx.shape(2), 0), "channels and the length of bias")
    k = _dim(w, 2)
    state: ShapeT | None = (_dim(x, 0), c, k - 1 if isinstance(k, int) and k >= 1 else None)
    if ctx.present(3):
        state = unify_shapes(ctx, state, ctx.shape(3), "past_state")
    y = None if x is None else (x[0], c, x[2])
    return [y, state]


# --- resampling -----------------------------------------------------------------------------------


def _floor_scaled(n: int, s: float, span: float = 1.0) -> int | None:
    """``floor(n * span * s)``, or None when single and double precision disagree (a product landing on an
    integer within rounding error: runtimes compute it either way)."""
    f64 = math.floor(n * span * s)
    with np.errstate(all="ignore"):
        f32 = math.floor(float(np.float32(n) * np.float32(span) * np.float32(s)))
    tol = math.floor(n * span * s + 1e-9)
    return f64 if f64 == f32 == tol else None


def _round_scaled(n: int, s: float) -> int | None:
    """``round_int(s * n)`` (halfway up), None where single and double precision disagree."""
    f64 = math.floor(s * n + 0.5)
    with np.errstate(all="ignore"):
        f32 = math.floor(float(np.float32(s) * np.float32(n) + np.float32(0.5)))
    return f64 if f64 == f32 else None


def _opt_value(ctx: ShapeContext, i: int) -> np.ndarray | str | None:
    """Input ``i``: "absent", its known value as a flat array (an empty tensor counts as absent), or None."""
    if not ctx.present(i):
        return "absent"
    v = ctx.value(i)
    if v is not None:
        return "absent" if v.size == 0 else np.asarray(v).reshape(-1)
    s = ctx.shape(i)
    return "absent" if s is not None and len(s) == 1 and s[0] == 0 else None


def _rescale(ctx: ShapeContext, x: ShapeT, axes: list[int], scales: Sequence[float], spans: Sequence[float]) -> ShapeT:
    out = list(x)
    if len(scales) != len(axes):
        ctx.fail(f"{len(scales)} scales for {len(axes)} axes")
    for a, s, span in zip(axes, scales, spans):
        d = x[a]
        if isinstance(d, int):
            out[a] = _floor_scaled(d, float(s), span) if s > 0 else None
        else:
            out[a] = d if s == 1.0 and span == 1.0 else None
    return tuple(out)


@shape_rule("Resize", "Upsample")
def _resize(ctx: ShapeContext) -> list[ShapeT | None]:
    """Resize-10/11/13/18/19 and Upsample-1/7/9/10: ``floor(in * scale)`` per axis, or the ``sizes`` input.

    From Resize-11 the scaled extent is ``floor(in * (roi_end - roi_start) * scale)``; the roi takes effect
    with coordinate_transformation_mode tf_crop_and_resize only. From 18, ``axes`` selects the axes the
    scales/sizes refer to and keep_aspect_ratio_policy reinterprets ``sizes``.
    """
    x = ctx.shape(0)
    if x is None:
        return [None]
    r = len(x)
    op, v = ctx.op_type, ctx.since
    if op == "Upsample":
        if v == 1:
            _rank_is(ctx, x, (4,), "X")
            hs, ws = ctx.attr("height_scale", None), ctx.attr("width_scale", None)
            if hs is None or ws is None:
                return [(x[0], x[1], None, None)]
            return [_rescale(ctx, x, [2, 3], [hs, ws], [1.0, 1.0])]
        sc = ctx.attr("scales", None) if v == 7 else _opt_value(ctx, 1)
        if not isinstance(sc, (list, np.ndarray)):
            return [(None,) * r]
        return [_rescale(ctx, x, list(range(r)), [float(s) for s in sc], [1.0] * r)]
    axes = list(range(r))
    if v >= 18 and ctx.attr("axes", None) is not None:
        axes = [norm_axis(ctx, int(a), r, "axes") for a in ctx.attr("axes")]
    unknown = tuple(None if i in axes else d for i, d in enumerate(x))
    scales = _opt_value(ctx, 1 if v == 10 else 2)
    sizes = "absent" if v == 10 else _opt_value(ctx, 3)
    if isinstance(sizes, np.ndarray) and isinstance(scales, str):
        return [_sized(ctx, x, axes, [int(s) for s in sizes])]
    if not isinstance(scales, np.ndarray) or not isinstance(sizes, str):
        return [unknown]
    spans = [1.0] * len(axes)
    if v >= 11 and ctx.attr("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize":
        roi = _opt_value(ctx, 1)
        if not isinstance(roi, np.ndarray) or roi.size != 2 * len(axes):
            return [unknown]
        spans = [float(roi[len(axes) + i]) - float(roi[i]) for i in range(len(axes))]
    return [_rescale(ctx, x, axes, [float(s) for s in scales], spans)]


def _sized(ctx: ShapeContext, x: ShapeT, axes: list[int], sizes: list[int]) -> ShapeT:
    """Resize with the ``sizes`` input: the sizes themselves, or (from 18) scaled to keep the aspect ratio."""
    if len(sizes) != len(axes):
        ctx.fail(f"{len(sizes)} sizes for {len(axes)} axes")
    out = list(x)
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch") if ctx.since >= 18 else "stretch"
    if policy == "stretch":
        for a, s in zip(axes, sizes):
            out[a] = s if s >= 0 else None
        return tuple(out)
    ins = [x[a] for a in axes]
    if policy not in ("not_larger", "not_smaller") or not all(isinstance(d, int) and d > 0 for d in ins):
        return tuple(None if i in axes else d for i, d in enumerate(x))
    ratios = [s / int(d) for s, d in zip(sizes, ins) if isinstance(d, int)]
    scale = min(ratios) if policy == "not_larger" else max(ratios)
    for a, d in zip(axes, ins):
        out[a] = _round_scaled(int(d), scale) if isinstance(d, int) else None
    return tuple(out)


@shape_rule("GridSample")
def _grid_sample(ctx: ShapeContext) -> list[ShapeT | None]:
    # X (N, C, D1, ..., Dr), grid (N, D1_out, ..., Dr_out, r) -> (N, C, D1_out, ..., Dr_out); 4-D only in 16.
    x, grid = ctx.shape(0), ctx.shape(1)
    if ctx.since < 20:
        _rank_is(ctx, x, (4,), "X")
        _rank_is(ctx, grid, (4,), "grid")
    if x is not None and grid is not None and len(x) != len(grid):
        ctx.fail(f"X has rank {len(x)} and grid rank {len(grid)}")
    r = len(x) if x is not None else (len(grid) if grid is not None else None)
    if r is None:
        return [None]
    unify(ctx, _dim(grid, -1), r - 2, "grid's last extent and the number of spatial axes")
    n = unify(ctx, _dim(x, 0), _dim(grid, 0), "batch size of X and grid")
    return [(n, _dim(x, 1), *(grid[1:-1] if grid is not None else [None] * (r - 2)))]


@shape_rule("AffineGrid")
def _affine_grid(ctx: ShapeContext) -> list[ShapeT | None]:
    # AffineGrid-20: theta (N, 2, 3), size (N, C, H, W) -> (N, H, W, 2); theta (N, 3, 4), size (N, C, D, H, W)
    # -> (N, D, H, W, 3).
    theta = ctx.shape(0)
    _rank_is(ctx, theta, (3,), "theta")
    size = ctx.ints(1)
    if size is not None:
        if len(size) not in (4, 5):
            ctx.fail(f"size holds {len(size)} values, the definition requires 4 or 5")
        n = unify(ctx, _dim(theta, 0), size[0], "theta.shape[0] and size[0]")
        return [(n, *size[2:], len(size) - 2)]
    s = ctx.shape(1)
    m = _dim(s, 0) if s is not None and len(s) == 1 else None
    if not isinstance(m, int) or m not in (4, 5):
        return [None]
    return [(_dim(theta, 0), *([None] * (m - 2)), m - 2)]


# --- detection, losses, images --------------------------------------------------------------------


@shape_rule("NonMaxSuppression")
def _nms(ctx: ShapeContext) -> list[ShapeT | None]:
    # selected_indices (num_selected, 3): the count depends on the data.
    return [(None, 3)]


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
        _rank_is(ctx, w, (1,), "weight")
        unify(ctx, _dim(w, 0), _dim(x, 1), "the length of weight and the class count")
    if x is not None and t is None:
        t = (x[0], *x[2:])
    reduction = ctx.attr("reduction", "mean")
    loss = t if reduction == "none" else (() if reduction in ("mean", "sum") else None)
    return [loss, x]


@shape_rule("ImageDecoder")
def _image_decoder(ctx: ShapeContext) -> list[ShapeT | None]:
    # ImageDecoder-20: (H, W, C), C = 3 for RGB and BGR, 1 for Grayscale; H and W depend on the data.
    c = {"RGB": 3, "BGR": 3, "Grayscale": 1}.get(ctx.attr("pixel_format", "RGB"))
    return [None if c is None else (None, None, c)]
