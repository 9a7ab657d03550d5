"""The sliding-window arithmetic of convolutions and pools (Clause 9), shared by the shape rules of ``conv``,
``conv_transpose``, ``pool``, ``roi_pool``, ``quantize`` and onnxruntime's fused and quantized convolutions.

Definitions are those of ONNX 1-2 (``onnx.defs``); the version noted is the since_version where the shape
behaviour changed. Extents are computed only from fixed integers; a dimension variable passes through where
the definition makes the output extent equal to the input extent whatever its value (a window of one with
stride one, ``SAME`` padding at stride one), Clause 9.3.
"""

from __future__ import annotations

from collections.abc import Sequence

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    ShapeT,
    dim_at,
    require_rank,
    unify,
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
