"""Shape rules (Clause 9): sequences and optionals.

The shape the engine holds for a sequence value is the shape its elements share (extents they all agree on,
the others unknown; unknown when its elements are not known), and for an optional the shape of its tensor, as
:func:`onnxcore.types.valuetypes.declared_shape` reads an optional type. So ``SequenceAt`` of a sequence built by
``SplitToSequence`` has a shape.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    norm_axis,
    shape_rule,
)
from onnxcore.infer.shape_ops.control_flow import join

__all__: list[str] = []


@shape_rule("Optional")
def _optional(ctx: ShapeContext) -> list[ShapeT | None]:
    return [ctx.shape(0) if ctx.present(0) else None]


@shape_rule("SequenceEmpty")
def _sequence_empty(ctx: ShapeContext) -> list[ShapeT | None]:
    return [None]


@shape_rule("SequenceConstruct")
def _sequence_construct(ctx: ShapeContext) -> list[ShapeT | None]:
    shapes = [ctx.shape(i) for i in range(ctx.n_inputs)]
    if not shapes:
        return [None]
    out = shapes[0]
    for s in shapes[1:]:
        out = join(out, s)
    return [out]


@shape_rule("SequenceInsert")
def _sequence_insert(ctx: ShapeContext) -> list[ShapeT | None]:
    return [join(ctx.shape(0), ctx.shape(1))]


@shape_rule("SequenceErase", "SequenceAt")
def _element(ctx: ShapeContext) -> list[ShapeT | None]:
    return [ctx.shape(0)]


@shape_rule("SplitToSequence")
def _split_to_sequence(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    if x is None or not x:
        return [None]
    a = norm_axis(ctx, int(ctx.attr("axis", 0)), len(x))
    d = x[a]
    if not ctx.present(1):
        # Pieces of one along the axis, which keepdims=0 removes.
        return [x[:a] + x[a + 1 :] if not ctx.attr("keepdims", 1) else x[:a] + (1,) + x[a + 1 :]]
    split = ctx.ints(1)
    v = ctx.value(1)
    piece = None
    if split is not None and v is not None:
        if v.ndim == 0:
            k = split[0]
            if k <= 0:
                ctx.fail(f"split {k} is not positive")
            # Every piece is k long, but the last when k does not divide the extent.
            piece = k if isinstance(d, int) and d % k == 0 else None
        elif split and len(set(split)) == 1:
            piece = split[0]
        if v.ndim == 1 and isinstance(d, int) and sum(split) != d:
            ctx.fail(f"split {split} does not add up to the extent {d} of axis {a}")
    return [x[:a] + (piece,) + x[a + 1 :]]


@shape_rule("ConcatFromSequence")
def _concat_from_sequence(ctx: ShapeContext) -> list[ShapeT | None]:
    e = ctx.shape(0)
    if e is None:
        return [None]
    r = len(e)
    axis = int(ctx.attr("axis"))
    if ctx.attr("new_axis", 0):
        a = norm_axis(ctx, axis, r + 1)
        return [e[:a] + (None,) + e[a:]]  # one entry per element: their number is not known
    if r == 0:
        ctx.fail("elements of rank 0 cannot be concatenated without new_axis")
    a = norm_axis(ctx, axis, r)
    return [e[:a] + (None,) + e[a + 1 :]]


@shape_rule("OptionalGetElement")
def _optional_get_element(ctx: ShapeContext) -> list[ShapeT | None]:
    # Since version 18 a tensor input is returned as is; an optional input has no tensor shape here.
    return [ctx.shape(0)]


@shape_rule("OptionalHasElement", "SequenceLength")
def _scalar_output(ctx: ShapeContext) -> list[ShapeT | None]:
    return [()]
