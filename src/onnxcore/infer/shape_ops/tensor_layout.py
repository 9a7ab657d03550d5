"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.tensor_layout`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    dim_add,
    dim_mul,
    norm_axis,
    shape_rule,
)
from onnxcore.infer.shape_ops.tensor import Shapes, _axes, _input_len, _list_operand, _numbers, _with

__all__: list[str] = []


_INT64_MAX = 2**63 - 1


_INT64_MIN = -(2**63)


@shape_rule("Split")
def _split(ctx: ShapeContext) -> Shapes:
    n = ctx.n_outputs
    x = ctx.shape(0)
    if x is None:
        return [None] * n
    a = norm_axis(ctx, int(ctx.attr("axis", 0)), len(x))  # Split-1 states no default: 0, as its kernel
    d = x[a]
    if ctx.since < 13:
        known, sizes = True, ctx.attr("split", None)
        if ctx.since < 2 and ctx.present(1):  # Split-1 also takes the sizes as an optional input
            sizes = _numbers(ctx, 1)
            known = sizes is not None
    else:
        known, sizes = _list_operand(ctx, 1, "split", 13)
    num = ctx.attr("num_outputs", None) if ctx.since >= 18 else None
    if num is not None and (sizes is not None or not known):
        ctx.fail("both the split input and num_outputs are given (Split-18)")
    if sizes is not None:
        sizes = [int(s) for s in sizes]
        if len(sizes) != n:
            ctx.fail(f"{len(sizes)} split sizes for {n} outputs")
        if any(s < 0 for s in sizes):
            ctx.fail(f"negative split size in {sizes}")
        if isinstance(d, int) and sum(sizes) != d:
            ctx.fail(f"split sizes {sizes} do not sum to the extent {d} of axis {a}")
    elif known and num is not None:
        if num != n:
            ctx.fail(f"num_outputs={num} for {n} outputs")
        if isinstance(d, int):
            # Split-18: parts of ceil(d / n), the last one smaller.
            chunk = -(-d // n)
            sizes = [chunk] * (n - 1) + [d - chunk * (n - 1)]
            if sizes[-1] < 0:
                ctx.fail(f"extent {d} of axis {a} cannot be split into {n} parts of {chunk}")
    elif known and ctx.since >= 18:
        ctx.fail("neither the split input nor num_outputs is given (Split-18)")
    elif known and isinstance(d, int):
        # Equal parts before Split-18.
        if d % n:
            ctx.fail(f"extent {d} of axis {a} is not divisible into {n} equal parts")
        sizes = [d // n] * n
    if sizes is None:
        return [_with(x, a, d if n == 1 else None)] * n
    return [_with(x, a, s) for s in sizes]


def _slice_extent(d: Extent, s: int, e: int, k: int) -> Extent:
    """The extent of ``d`` sliced from ``s`` to ``e`` by ``k`` (the effective values of Slice-13)."""
    if not isinstance(d, int):
        # Of an extent not fixed only the whole axis is certain: bounds that clamp to it for any extent.
        if k == 1 and (s == 0 or s <= -_INT64_MAX) and e >= _INT64_MAX:
            return d
        if k == -1 and (s == -1 or s >= _INT64_MAX) and e <= _INT64_MIN:
            return d
        return None
    s = s + d if s < 0 else s
    e = e + d if e < 0 else e
    if k > 0:
        s, e = min(max(s, 0), d), min(max(e, 0), d)
        return max(0, -(-(e - s) // k))
    if d == 0:
        return 0
    s, e = min(max(s, 0), d - 1), min(max(e, -1), d - 1)
    return max(0, -(-(s - e) // -k))


@shape_rule("Slice")
def _slice(ctx: ShapeContext) -> Shapes:
    x = ctx.shape(0)
    if x is None:
        return [None]
    r = len(x)
    if ctx.since < 10:
        # Slice-1: attributes, step 1.
        starts, ends, axes = ctx.attr("starts", None), ctx.attr("ends", None), ctx.attr("axes", None)
        steps, axes_known, steps_known = None, True, True
    else:
        starts, ends = ctx.ints(1), ctx.ints(2)
        axes_known, axes = _list_operand(ctx, 3, "axes", 10)
        steps_known, steps = _list_operand(ctx, 4, "steps", 10)
    if starts is None or ends is None or not steps_known or not axes_known:
        # The bounds are not known: the axes they apply to keep nothing, the others keep their extents.
        if not axes_known:
            return [(None,) * r]
        if axes is None:
            count = len(starts) if starts is not None else len(ends) if ends is not None else _input_len(ctx, 1)
            if count is None:
                return [(None,) * r]
            axes = list(range(count))
        cut = set(_axes(ctx, axes, r))
        return [tuple(None if i in cut else d for i, d in enumerate(x))]
    starts, ends = [int(s) for s in starts], [int(e) for e in ends]
    n = len(starts)
    if len(ends) != n:
        ctx.fail(f"{n} starts but {len(ends)} ends")
    ax = _axes(ctx, range(n) if axes is None else axes, r)
    st = [1] * n if steps is None else [int(k) for k in steps]
    if len(ax) != n or len(st) != n:
        ctx.fail(f"{n} starts, {len(ax)} axes and {len(st)} steps")
    if 0 in st:
        ctx.fail("a step is 0")
    out = list(x)
    seen: set[int] = set()
    for a, s, e, k in zip(ax, starts, ends, st):
        # A repeated axis is undefined behaviour (Slice-13): its extent is left unknown.
        out[a] = None if a in seen else _slice_extent(x[a], s, e, k)
        seen.add(a)
    return [tuple(out)]


@shape_rule("Pad")
def _pad(ctx: ShapeContext) -> Shapes:
    x = ctx.shape(0)
    if ctx.since < 11:
        pads = ctx.attr("paddings" if ctx.since < 2 else "pads", None)  # attributes before Pad-11
        axes_known, axes = True, None
    else:
        pads = ctx.ints(1)
        axes_known, axes = _list_operand(ctx, 3, "axes", 11) if ctx.since >= 18 else (True, None)
    if x is None:
        # Without axes, pads holds two values per axis of the input.
        n = len(pads) if pads is not None else _input_len(ctx, 1) if ctx.since >= 11 else None
        return [(None,) * (n // 2) if axes_known and axes is None and n is not None and n % 2 == 0 else None]
    r = len(x)
    if not axes_known:
        return [(None,) * r]
    ax = list(range(r)) if axes is None else _axes(ctx, axes, r)
    if pads is None:
        return [tuple(None if i in ax else d for i, d in enumerate(x))]
    pads = [int(p) for p in pads]
    if len(pads) != 2 * len(ax):
        ctx.fail(f"{len(pads)} pads for {len(ax)} axes")
    out = list(x)
    seen: set[int] = set()
    for i, a in enumerate(ax):
        b, e = pads[i], pads[i + len(ax)]
        d = x[a]
        if isinstance(d, int) and d + b + e < 0:
            ctx.fail(f"pads {b}, {e} remove more than the extent {d} of axis {a}")
        if a in seen or (isinstance(d, int) and -min(b, 0) - min(e, 0) > d):
            out[a] = None  # a repeated axis (undefined) or a crop beyond the extent the runtimes disagree on
        else:
            out[a] = dim_add(d, b + e)
        seen.add(a)
    return [tuple(out)]


@shape_rule("CenterCropPad")
def _center_crop_pad(ctx: ShapeContext) -> Shapes:
    x = ctx.shape(0)
    target = ctx.ints(1)
    axes = ctx.attr("axes", None)
    if x is None:
        return [tuple(target) if axes is None and target is not None else None]
    ax = list(range(len(x))) if axes is None else _axes(ctx, axes, len(x))
    if target is None:
        return [tuple(None if i in ax else d for i, d in enumerate(x))]
    if len(target) != len(ax):
        ctx.fail(f"shape {target} for {len(ax)} axes")
    if any(t < 0 for t in target):
        ctx.fail(f"negative extent in shape {target}")
    out = list(x)
    for a, t in zip(ax, target):
        out[a] = t  # cropped or padded to exactly t, whatever the input's extent
    return [tuple(out)]


def _block_size(ctx: ShapeContext) -> int | None:
    b = ctx.attr("blocksize", None)
    if b is not None and int(b) < 1:
        ctx.fail(f"blocksize {b} is not positive")
    return None if b is None else int(b)


@shape_rule("DepthToSpace")
def _depth_to_space(ctx: ShapeContext) -> Shapes:
    x, b = ctx.shape(0), _block_size(ctx)
    if x is None or b is None:
        return [(None,) * 4]  # [N, C, H, W] in and out
    if len(x) != 4:
        ctx.fail(f"input of rank {len(x)} ([N, C, H, W] is required)")
    n, c, h, w = x
    if isinstance(c, int):
        if c % (b * b):
            ctx.fail(f"channels {c} are not divisible by blocksize^2 = {b * b}")
        c = c // (b * b)
    elif b != 1:
        c = None
    return [(n, c, dim_mul(h, b), dim_mul(w, b))]


@shape_rule("SpaceToDepth")
def _space_to_depth(ctx: ShapeContext) -> Shapes:
    x, b = ctx.shape(0), _block_size(ctx)
    if x is None or b is None:
        return [(None,) * 4]
    if len(x) != 4:
        ctx.fail(f"input of rank {len(x)} ([N, C, H, W] is required)")
    n, c, h, w = x
    spatial: list[Extent] = []
    for name, d in (("height", h), ("width", w)):
        if isinstance(d, int):
            if d % b:
                ctx.fail(f"{name} {d} is not divisible by blocksize {b}")
            d = d // b
        elif b != 1:
            d = None
        spatial.append(d)
    return [(n, dim_mul(c, b * b), *spatial)]
