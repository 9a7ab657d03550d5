"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.tensor`: reshaping, joining,
tiling and broadcasting, constants and generators, casts, Shape and Size; and the helpers the ``tensor_layout``,
``indexing`` and ``reduction`` rules share.

Every version of the default domain (ONNX 1-2 definitions; the version noted is the since_version where the shape
behaviour changed). Where a shape-like operand (a target shape, axes, repeats, ...) is statically known the
extents are computed exactly; where it is not, only what holds whatever its value is stated (usually the rank,
and the extents of the axes it cannot touch).
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
    same_as_input,
    shape_from_input,
    shape_rule,
    unify,
)
from onnxcore.infer.shape_ops.symbolic import _shape_elements

__all__: list[str] = []

Shapes = list[ShapeT | None]

# Slice bounds a producer writes to mean "to the end" of an axis whose extent it does not know (Slice-13).


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


# --- padding, tiling, broadcasting --------------------------------------------------------------


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


# --- same shape as the input --------------------------------------------------------------------


@shape_rule("Size")
def _size(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    if x is not None:
        fixed = [d for d in x if isinstance(d, int)]
        if len(fixed) == len(x):
            ctx.set_value(0, np.array(math.prod(fixed), dtype=np.int64))
    return [()]


@shape_rule("Constant")
def _constant(ctx: ShapeContext) -> list[ShapeT | None]:
    # Constant has no inputs, so the engine evaluates it with its kernel; this covers a value the kernel
    # refuses to materialise (a large tensor): its shape is still stated.
    for name in ("value", "sparse_value"):
        if ctx.has_attr(name):
            v = ctx.attr(name)
            shape = getattr(v, "shape", None) if name == "value" else getattr(v, "dims", None)
            return [None if shape is None else tuple(int(d) for d in shape)]
    for name in ("value_floats", "value_ints", "value_strings"):
        if ctx.has_attr(name):
            return [(len(ctx.attr(name)),)]
    for name in ("value_float", "value_int", "value_string"):
        if ctx.has_attr(name):
            return [()]
    return [None]


@shape_rule("ConstantOfShape")
def _constant_of_shape(ctx: ShapeContext) -> list[ShapeT | None]:
    return [shape_from_input(ctx, 0)]


@shape_rule("EyeLike")
def _eye_like(ctx: ShapeContext) -> list[ShapeT | None]:
    return [ctx.shape(0)]


@shape_rule("Range")
def _range(ctx: ShapeContext) -> list[ShapeT | None]:
    return [(None,)]


shape_rule("Cast", "CastLike", "Identity")(same_as_input)


@shape_rule("Shape")
def _shape_shape(ctx: ShapeContext) -> list[ShapeT | None]:
    dims = _shape_elements(ctx)
    return [None if dims is None else (len(dims),)]
