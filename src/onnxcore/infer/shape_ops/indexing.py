"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.indexing`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

import numpy as np

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    ShapeT,
    dim_prod,
    norm_axis,
    shape_rule,
    unify,
    unify_shapes,
)
from onnxcore.infer.shape_ops.tensor import Shapes, _with

__all__: list[str] = []


def _scalar_int(ctx: ShapeContext, i: int) -> int | None:
    """The single value of input ``i`` as an int (a float is truncated, as a cast to int64 does), or None."""
    v = ctx.value(i)
    if v is None or not isinstance(v, np.ndarray) or v.size != 1 or v.dtype.kind not in "iubf":
        return None
    e = v.reshape(-1)[0]
    if v.dtype.kind == "f" and not np.isfinite(e):
        return None
    return int(e)


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
