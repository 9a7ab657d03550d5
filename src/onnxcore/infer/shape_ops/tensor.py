"""Shape rules (Clause 9): tensor manipulation and indexing operators.

Reshape, Flatten, Transpose, Concat, Split, Squeeze, Unsqueeze, Slice, Gather, GatherElements, GatherND,
Scatter, ScatterElements, ScatterND, TensorScatter, Pad, Tile, Expand, OneHot, NonZero, Compress, Unique,
Trilu, CenterCropPad, DepthToSpace, SpaceToDepth, ReverseSequence and TopK, every version of the default
domain (ONNX 1-2 definitions; the version noted is the since_version where the shape behaviour changed).

Where a shape-like operand (a target shape, axes, pads, repeats, K, ...) is statically known the extents are
computed exactly; where it is not, only what holds whatever its value is stated (usually the rank, and the
extents of the axes it cannot touch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    ShapeT,
    broadcast,
    dim_add,
    dim_mul,
    dim_prod,
    norm_axis,
    shape_from_input,
    shape_rule,
    unify,
    unify_shapes,
)

__all__: list[str] = []

Shapes = list[ShapeT | None]

# Slice bounds a producer writes to mean "to the end" of an axis whose extent it does not know (Slice-13).
_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)


# --- helpers ------------------------------------------------------------------------------------


def _with(x: ShapeT, axis: int, extent: Extent) -> ShapeT:
    """``x`` with the extent at ``axis`` replaced."""
    return x[:axis] + (extent,) + x[axis + 1 :]


def _fixed(x: ShapeT | None) -> bool:
    return x is not None and all(isinstance(d, int) for d in x)


def _input_len(ctx: ShapeContext, i: int) -> int | None:
    """The static length of 1-D input ``i`` (its value may be unknown), or None."""
    s = ctx.shape(i)
    if s is not None and len(s) == 1 and isinstance(s[0], int):
        return s[0]
    return None


def _list_operand(ctx: ShapeContext, i: int, attr: str, input_since: int) -> tuple[bool, list[int] | None]:
    """A list of ints that is attribute ``attr`` before ``input_since`` and optional input ``i`` from it.

    Returns:
        ``(True, values)``; ``(True, None)`` when it is not given; ``(False, None)`` when it is an input
        whose value is not statically known.
    """
    if ctx.since < input_since:
        v = ctx.attr(attr, None)
        return True, None if v is None else [int(a) for a in v]
    if not ctx.present(i):
        return True, None
    vals = ctx.ints(i)
    return vals is not None, vals


def _numbers(ctx: ShapeContext, i: int) -> list[int] | None:
    """The statically known values of input ``i`` as ints, of an integer tensor or of a floating-point one
    holding whole numbers (Split-1's sizes and Tile-1's operands are float tensors), or None."""
    v = ctx.value(i)
    if v is None or not isinstance(v, np.ndarray) or v.dtype.kind not in "iubf":
        return None
    flat = v.reshape(-1)
    if v.dtype.kind == "f" and not (np.isfinite(flat).all() and (flat == np.trunc(flat)).all()):
        return None
    return [int(e) for e in flat]


def _scalar_int(ctx: ShapeContext, i: int) -> int | None:
    """The single value of input ``i`` as an int (a float is truncated, as a cast to int64 does), or None."""
    v = ctx.value(i)
    if v is None or not isinstance(v, np.ndarray) or v.size != 1 or v.dtype.kind not in "iubf":
        return None
    e = v.reshape(-1)[0]
    if v.dtype.kind == "f" and not np.isfinite(e):
        return None
    return int(e)


def _axes(ctx: ShapeContext, axes: Sequence[int], rank: int) -> list[int]:
    return [norm_axis(ctx, a, rank, "axes") for a in axes]


# --- reshaping ----------------------------------------------------------------------------------


@shape_rule("Reshape")
def _reshape(ctx: ShapeContext) -> Shapes:
    x = ctx.shape(0)
    if ctx.since < 5:
        attr = ctx.attr("shape", None)  # Reshape-1: the target is an attribute
        if attr is None:
            return [None]
        dims: list[Extent] = [int(d) for d in attr]
    else:
        known = ctx.dims(1)  # fixed, or extents carried from a Shape (symbolic.py)
        if known is None:
            n = _input_len(ctx, 1)  # the target's length is the output's rank whatever its values
            return [None if n is None else (None,) * n]
        dims = known
    allowzero = ctx.since >= 14 and bool(ctx.attr("allowzero", 0))
    if any(isinstance(d, int) and d < -1 for d in dims):
        ctx.fail(f"shape {dims} holds an extent below -1")
    if dims.count(-1) > 1:
        ctx.fail(f"shape {dims} holds more than one -1")
    if allowzero and -1 in dims and 0 in dims:
        ctx.fail(f"with allowzero=1, shape {dims} holds both 0 and -1 (Reshape-14)")
    out: list[Extent] = []
    for i, d in enumerate(dims):
        if d == 0 and not allowzero:
            # 0 copies the input's extent at the same position.
            if x is not None and i >= len(x):
                ctx.fail(f"0 at position {i} of shape {dims} has no extent of the rank-{len(x)} input to copy")
            out.append(None if x is None else x[i])
        elif isinstance(d, int) or allowzero:
            out.append(d)
        else:
            # An extent that is a variable (or unknown) could be 0 at run time, which copies the input's extent:
            # it is certain only where that extent is the same variable.
            out.append(d if x is not None and i < len(x) and x[i] == d else None)
    total = None if x is None else dim_prod(x)
    if -1 in dims:
        k = dims.index(-1)
        rest = dim_prod(out[:k] + out[k + 1 :])
        if rest == 0:
            ctx.fail(f"the -1 of shape {dims} cannot be inferred when the other extents hold no element")
        out[k] = None
        if isinstance(rest, int) and isinstance(total, int):
            if total % rest:
                ctx.fail(f"{total} elements cannot be reshaped to {dims}")
            out[k] = total // rest
        elif x is not None:
            out[k] = _cancelled(list(x), out[:k] + out[k + 1 :])
    elif isinstance(total, int) and _fixed(tuple(out)):
        n = math.prod(d for d in out if isinstance(d, int))
        if n != total:
            ctx.fail(f"{total} elements cannot be reshaped to {n} (shape {dims})")
    return [tuple(out)]


def _cancelled(num: list[Extent], den: list[Extent]) -> Extent:
    """``prod(num) / prod(den)`` when each dimension variable of ``den`` also occurs in ``num`` and what is
    left is fixed or one variable: ``(N, 3, 4)`` reshaped to ``[0, -1]`` gives 12 for the -1, and to
    ``[-1, 12]`` gives N. Nothing is concluded about N
    (Clause 9.3): the factors cancel whatever it is (were it 0, the -1 could not be resolved and the node
    would fail)."""
    num = list(num)
    for d in den:
        if isinstance(d, str) and d in num:
            num.remove(d)
        elif not isinstance(d, int):
            return None
    fixed_num = [d for d in num if isinstance(d, int)]
    left = [d for d in num if not isinstance(d, int)]
    a = math.prod(fixed_num)
    b = math.prod(d for d in den if isinstance(d, int))
    if b == 0 or a % b:
        return None
    if not left:
        return a // b
    # One variable left over with the fixed factors cancelling too: the -1 is that variable ((N, 3, 4) to
    # [-1, 12] gives N); anything else would be arithmetic on a variable.
    return left[0] if len(left) == 1 and isinstance(left[0], str) and a == b else None


@shape_rule("Flatten")
def _flatten(ctx: ShapeContext) -> Shapes:
    x = ctx.shape(0)
    if x is None:
        return [(None, None)]
    r = len(x)
    axis = int(ctx.attr("axis", 1))
    lo = -r if ctx.since >= 11 else 0  # negative axes from Flatten-11
    if not lo <= axis <= r:
        ctx.fail(f"axis {axis} is out of range [{lo}, {r}]")
    a = axis + r if axis < 0 else axis
    return [(dim_prod(x[:a]), dim_prod(x[a:]))]


@shape_rule("Transpose")
def _transpose(ctx: ShapeContext) -> Shapes:
    x = ctx.shape(0)
    perm = ctx.attr("perm", None)
    if perm is None:
        return [None if x is None else x[::-1]]
    p = [int(a) for a in perm]
    if x is None:
        return [(None,) * len(p)]
    if sorted(p) != list(range(len(x))):
        ctx.fail(f"perm {p} is not a permutation of the {len(x)} axes")
    return [tuple(x[a] for a in p)]


@shape_rule("Squeeze")
def _squeeze(ctx: ShapeContext) -> Shapes:
    x = ctx.shape(0)
    known, axes = _list_operand(ctx, 1, "axes", 13)
    if not known:
        # Which axes go is unknown; not even the rank is (a repeated axis is not an error for Squeeze).
        if _input_len(ctx, 1) != 0:
            return [None]
        axes = []
    if x is None:
        return [None]
    if not axes:
        # Every extent of 1 goes (an empty axes input is read as an absent one, as onnxruntime does): only
        # certain when no extent is a variable or unknown, any of which may be 1.
        return [tuple(d for d in x if d != 1) if _fixed(x) else None]
    drop = set(_axes(ctx, axes, len(x)))
    for a in sorted(drop):
        if isinstance(x[a], int) and x[a] != 1:
            ctx.fail(f"axis {a} has extent {x[a]}, not 1")
    return [tuple(d for i, d in enumerate(x) if i not in drop)]


@shape_rule("Unsqueeze")
def _unsqueeze(ctx: ShapeContext) -> Shapes:
    x = ctx.shape(0)
    known, axes = _list_operand(ctx, 1, "axes", 13)
    if axes is None:
        n = None if known else _input_len(ctx, 1)
        return [None if x is None or n is None else (None,) * (len(x) + n)]
    if x is None:
        return [None]
    r = len(x) + len(axes)  # axes are positions in the output (Unsqueeze-11)
    ins = _axes(ctx, axes, r)
    if len(set(ins)) != len(ins):
        ctx.fail(f"axes {axes} repeat an axis")
    rest = iter(x)
    return [tuple(1 if i in ins else next(rest) for i in range(r))]


# --- joining and splitting ----------------------------------------------------------------------


@shape_rule("Concat")
def _concat(ctx: ShapeContext) -> Shapes:
    axis = ctx.attr("axis", 1 if ctx.since < 4 else None)  # Concat-1 defaults to 1; required from 4
    if axis is None:
        return [None]
    shapes = [ctx.shape(i) for i in range(ctx.n_inputs) if ctx.present(i)]
    known = [s for s in shapes if s is not None]
    if not known:
        return [None]
    r = len(known[0])
    for s in known:
        if len(s) != r:
            ctx.fail(f"inputs of ranks {r} and {len(s)}")
    a = norm_axis(ctx, int(axis), r)
    out: list[Extent] = []
    for j in range(r):
        if j == a:
            total: Extent = 0 if len(known) == len(shapes) else None
            for s in known:
                total = dim_add(total, s[a])
            out.append(total)
        else:
            e: Extent = None
            for s in known:
                e = unify(ctx, e, s[j], f"axis {j} of the inputs")
            out.append(e)
    return [tuple(out)]


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


# --- slicing ------------------------------------------------------------------------------------


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


# --- gathering and scattering -------------------------------------------------------------------


@shape_rule("Gather")
def _gather(ctx: ShapeContext) -> Shapes:
    x, q = ctx.shape(0), ctx.shape(1)
    if x is None:
        return [None]
    if not x:
        ctx.fail("data is a scalar (rank >= 1 is required)")
    a = norm_axis(ctx, int(ctx.attr("axis", 0)), len(x))
    return [None if q is None else x[:a] + q + x[a + 1 :]]


@shape_rule("GatherElements")
def _gather_elements(ctx: ShapeContext) -> Shapes:
    x, ind = ctx.shape(0), ctx.shape(1)
    if x is not None:
        if not x:
            ctx.fail("data is a scalar (rank >= 1 is required)")
        norm_axis(ctx, int(ctx.attr("axis", 0)), len(x))
        if ind is not None and len(ind) != len(x):
            ctx.fail(f"indices of rank {len(ind)} for data of rank {len(x)}")
    # The output has the shape of indices (GatherElements-11).
    if ind is not None:
        return [ind]
    return [None if x is None else (None,) * len(x)]


@shape_rule("GatherND")
def _gather_nd(ctx: ShapeContext) -> Shapes:
    x, ind = ctx.shape(0), ctx.shape(1)
    if x is None or ind is None:
        return [None]
    b = int(ctx.attr("batch_dims", 0)) if ctx.since >= 12 else 0
    r, q = len(x), len(ind)
    if r < 1 or q < 1:
        ctx.fail(f"data of rank {r} and indices of rank {q} (both >= 1 are required)")
    if not 0 <= b < min(r, q):
        ctx.fail(f"batch_dims={b} is not below both ranks {r} and {q}")
    batch = tuple(unify(ctx, x[i], ind[i], f"batch axis {i} of data and indices") for i in range(b))
    k = ind[-1]
    if not isinstance(k, int):
        return [None]  # the rank depends on the length of the index tuples
    if k > r - b:
        ctx.fail(f"index tuples of length {k} exceed rank {r} - batch_dims {b}")
    return [batch + ind[b:-1] + x[b + k :]]


@shape_rule("Scatter", "ScatterElements")
def _scatter_elements(ctx: ShapeContext) -> Shapes:
    x, ind, upd = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    ranks = {len(s) for s in (x, ind, upd) if s is not None}
    if len(ranks) > 1:
        ctx.fail(f"data, indices and updates of ranks {sorted(ranks)} (one rank is required)")
    unify_shapes(ctx, ind, upd, "indices and updates")
    if x is not None:
        if not x:
            ctx.fail("data is a scalar (rank >= 1 is required)")
        norm_axis(ctx, int(ctx.attr("axis", 0)), len(x))
        return [x]
    return [(None,) * ranks.pop() if ranks else None]


@shape_rule("ScatterND")
def _scatter_nd(ctx: ShapeContext) -> Shapes:
    x, ind, upd = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    if (x is not None and not x) or (ind is not None and not ind):
        ctx.fail("data and indices must have rank >= 1")
    if ind is None or upd is None or not isinstance(ind[-1], int):
        return [x]
    k, q = ind[-1], len(ind)
    if x is None:
        # updates = indices.shape[:-1] ++ data.shape[k:] (ScatterND-11): data's tail is updates'.
        return [(None,) * k + upd[q - 1 :] if len(upd) >= q - 1 else None]
    if k > len(x):
        ctx.fail(f"index tuples of length {k} exceed the rank {len(x)} of data")
    want = ind[:-1] + x[k:]
    merged = unify_shapes(ctx, upd, want, "updates against indices.shape[:-1] ++ data.shape[k:]")
    assert merged is not None
    return [x[:k] + merged[q - 1 :]]


@shape_rule("TensorScatter")
def _tensor_scatter(ctx: ShapeContext) -> Shapes:
    cache, upd, wi = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    base = cache if cache is not None else upd
    if base is None:
        return [None]
    r = len(base)
    if r < 2:
        ctx.fail(f"rank {r} (the cache has a batch and a sequence axis)")
    a = norm_axis(ctx, int(ctx.attr("axis", -2)), r)
    if a == 0:
        ctx.fail("axis is the batch axis 0")
    if cache is not None and upd is not None and len(upd) != r:
        ctx.fail(f"past_cache of rank {r} and update of rank {len(upd)}")
    # The output has the shape of past_cache; update has it too off the sequence axis.
    out: list[Extent] = [None] * r
    for i in range(r):
        c = None if cache is None else cache[i]
        u = None if upd is None else upd[i]
        out[i] = c if i == a else unify(ctx, c, u, f"axis {i} of past_cache and update")
    su, sc = (None if upd is None else upd[a]), out[a]
    if isinstance(su, int) and isinstance(sc, int) and su > sc:
        ctx.fail(f"sequence length {su} exceeds the cache's {sc}")
    if wi is not None and len(wi) == 1:
        out[0] = unify(ctx, out[0], wi[0], "write_indices against the batch size")
    return [tuple(out)]


# --- padding, tiling, broadcasting --------------------------------------------------------------


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


@shape_rule("Tile")
def _tile(ctx: ShapeContext) -> Shapes:
    x = ctx.shape(0)
    if ctx.since < 6:
        # Tile-1: ``tiles`` copies along ``axis``, both scalar inputs.
        if x is None:
            return [None]
        tv, av = _numbers(ctx, 1), _numbers(ctx, 2)
        t = tv[0] if tv is not None and len(tv) == 1 else None
        axis = av[0] if av is not None and len(av) == 1 else None
        if t == 1:
            return [x]
        if axis is None:
            return [tuple(dim_mul(d, None) for d in x)]
        a = norm_axis(ctx, axis, len(x))
        return [_with(x, a, dim_mul(x[a], t))]
    reps = ctx.ints(1)
    if reps is None:
        # The rank is kept; an extent of 0 stays 0 whatever it is repeated by.
        if x is None:
            n = _input_len(ctx, 1)
            return [None if n is None else (None,) * n]
        return [tuple(dim_mul(d, None) for d in x)]
    if any(k < 0 for k in reps):
        ctx.fail(f"negative repeats {reps}")
    if x is None:
        return [tuple(0 if k == 0 else None for k in reps)]
    if len(reps) != len(x):
        ctx.fail(f"{len(reps)} repeats for an input of rank {len(x)}")
    return [tuple(dim_mul(d, k) for d, k in zip(x, reps))]


@shape_rule("Expand")
def _expand(ctx: ShapeContext) -> Shapes:
    # The input and the target shape broadcast multidirectionally (Clause 6.6.2); a target not known holds
    # unknown extents, which leave a fixed extent other than 1 of the input as it is.
    return [broadcast(ctx, [ctx.shape(0), shape_from_input(ctx, 1)])]


@shape_rule("OneHot")
def _one_hot(ctx: ShapeContext) -> Shapes:
    ind = ctx.shape(0)
    if ind is None:
        return [None]
    q = len(ind)
    axis = int(ctx.attr("axis", -1))
    if not -q - 1 <= axis <= q:
        ctx.fail(f"axis {axis} is out of range [{-q - 1}, {q}]")
    a = axis + q + 1 if axis < 0 else axis
    depth = _scalar_int(ctx, 1)  # a non-integer depth is cast to int64
    if depth is not None and depth < 0:
        ctx.fail(f"depth {depth} is negative")
    return [ind[:a] + (depth,) + ind[a:]]


# --- data-dependent extents ---------------------------------------------------------------------


@shape_rule("NonZero")
def _non_zero(ctx: ShapeContext) -> Shapes:
    x = ctx.shape(0)
    if x is None or not x:
        # A scalar: NonZero-13 states (0, N), onnxruntime (and the kernel) give (1, N): left unknown.
        return [(None, None)]
    return [(len(x), 0 if 0 in x else None)]


@shape_rule("Compress")
def _compress(ctx: ShapeContext) -> Shapes:
    x, cond = ctx.shape(0), ctx.shape(1)
    if cond is not None and len(cond) != 1:
        ctx.fail(f"condition of rank {len(cond)} (1-D is required)")
    axis = ctx.attr("axis", None)
    if axis is None:
        return [(None,)]  # the flattened input's selected elements
    if x is None:
        return [None]
    a = norm_axis(ctx, int(axis), len(x))
    return [_with(x, a, None)]


@shape_rule("Unique")
def _unique(ctx: ShapeContext) -> Shapes:
    x = ctx.shape(0)
    axis = ctx.attr("axis", None)
    # The count of unique entries is data-dependent, except that 0 or 1 entries are all unique.
    y: ShapeT | None = None
    if axis is None:
        n = None if x is None else dim_prod(x)  # entries of the flattened input
        u = n if isinstance(n, int) and n <= 1 else None
        y = (u,)
    else:
        n = u = None
        if x is not None:
            a = norm_axis(ctx, int(axis), len(x))
            n = x[a]
            u = n if isinstance(n, int) and n <= 1 else None
            y = _with(x, a, u)
    outs: Shapes = [y, (u,), (n,), (u,)]  # Y, indices, inverse_indices (one per entry), counts
    return outs[: ctx.n_outputs]


@shape_rule("TopK")
def _top_k(ctx: ShapeContext) -> Shapes:
    x = ctx.shape(0)
    if ctx.since < 10:
        k = ctx.attr("k", None)  # TopK-1: an attribute
    else:
        ks = ctx.ints(1)
        if ks is not None and len(ks) != 1:
            ctx.fail(f"K holds {len(ks)} values (one is required)")
        k = None if ks is None else ks[0]
    if x is None:
        return [None, None]
    a = norm_axis(ctx, int(ctx.attr("axis", -1)), len(x))
    if k is not None:
        k = int(k)
        if k < 0:
            ctx.fail(f"K={k} is negative")
        d = x[a]
        if isinstance(d, int) and k > d:
            ctx.fail(f"K={k} exceeds the extent {d} of axis {a}")
    out = _with(x, a, k)
    return [out, out]


# --- same shape as the input --------------------------------------------------------------------


@shape_rule("Trilu")
def _trilu(ctx: ShapeContext) -> Shapes:
    x = ctx.shape(0)
    if x is not None and len(x) < 2:
        ctx.fail(f"input of rank {len(x)} (rank >= 2 is required)")
    return [x]


@shape_rule("ReverseSequence")
def _reverse_sequence(ctx: ShapeContext) -> Shapes:
    x, lens = ctx.shape(0), ctx.shape(1)
    ba, ta = int(ctx.attr("batch_axis", 1)), int(ctx.attr("time_axis", 0))
    if {ba, ta} != {0, 1}:
        ctx.fail(f"batch_axis={ba} and time_axis={ta} are not 0 and 1")
    if lens is not None and len(lens) != 1:
        ctx.fail(f"sequence_lens of rank {len(lens)} (1-D is required)")
    if x is None:
        return [None]
    if len(x) < 2:
        ctx.fail(f"input of rank {len(x)} (rank >= 2 is required)")
    # One sequence length per batch entry: the batch extent is that of sequence_lens too.
    return [x if lens is None else _with(x, ba, unify(ctx, x[ba], lens[0], "the batch size and sequence_lens"))]


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
