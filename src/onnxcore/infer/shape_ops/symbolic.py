"""Values of shape computations with dimension variables (Clause 9.3): data propagation.

``Shape`` of a tensor of shape ``(N, 3, 224, 224)`` is not a constant, yet its elements are the extents
``N, 3, 224, 224``; exporters slice, gather and concatenate such values into the target of a ``Reshape``.
These rules carry the elements through those operators as a :class:`SymbolicValue` (rank 0 or 1), so the
``Reshape`` keeps ``N``. Only operators that move elements are followed: nothing is computed over a variable.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import ShapeContext, ShapeT, SymbolicValue, value_rule

__all__: list[str] = []

_INT_TYPES = frozenset({2, 3, 4, 5, 6, 7, 12, 13})  # TensorProto element types of the integers


def _shape_elements(ctx: ShapeContext) -> ShapeT | None:
    """The extents ``Shape`` returns: its input's, sliced by ``start`` and ``end`` from Shape-15 (clamped)."""
    x = ctx.shape(0)
    if x is None:
        return None
    r = len(x)
    start, end = 0, r
    if ctx.since >= 15:
        s = int(ctx.attr("start", 0))
        e = ctx.attr("end", None)
        start = min(max(s + r if s < 0 else s, 0), r)
        end = r if e is None else min(max(int(e) + r if int(e) < 0 else int(e), 0), r)
    return x[start:end] if end > start else ()


@value_rule("Shape")
def _shape(ctx: ShapeContext) -> SymbolicValue | None:
    # All fixed, the engine stores these as an ordinary int64 value.
    dims = _shape_elements(ctx)
    return None if dims is None else SymbolicValue(dims)


@value_rule("Identity")
def _identity(ctx: ShapeContext) -> SymbolicValue | None:
    return ctx.symbolic(0)


@value_rule("Cast")
def _cast(ctx: ShapeContext) -> SymbolicValue | None:
    return ctx.symbolic(0) if ctx.attr("to", None) in _INT_TYPES else None


@value_rule("Gather")
def _gather(ctx: ShapeContext) -> SymbolicValue | None:
    data = ctx.symbolic(0)
    idx = ctx.symbolic(1)
    if data is None or data.scalar or idx is None or int(ctx.attr("axis", 0)) not in (0, -1):
        return None
    n = len(data.extents)
    picked = []
    for i in idx.extents:
        if not isinstance(i, int) or not -n <= i < n:
            return None
        picked.append(data.extents[i])
    return SymbolicValue(picked, scalar=idx.scalar)


@value_rule("Concat")
def _concat(ctx: ShapeContext) -> SymbolicValue | None:
    if int(ctx.attr("axis", 0)) not in (0, -1):
        return None
    out: list = []
    for i in range(ctx.n_inputs):
        if not ctx.present(i):
            continue
        part = ctx.symbolic(i)
        if part is None or part.scalar:
            return None
        out.extend(part.extents)
    return SymbolicValue(out)


def _axes(ctx: ShapeContext, i: int) -> list[int] | None:
    """Squeeze's and Unsqueeze's axes: an attribute before 13, an input from 13."""
    if ctx.since < 13:
        a = ctx.attr("axes", None)
        return None if a is None else [int(v) for v in a]
    return ctx.ints(i) if ctx.present(i) else None


@value_rule("Unsqueeze")
def _unsqueeze(ctx: ShapeContext) -> SymbolicValue | None:
    x = ctx.symbolic(0)
    if x is None or not x.scalar or _axes(ctx, 1) not in ([0], [-1]):
        return None
    return SymbolicValue(x.extents)


@value_rule("Squeeze")
def _squeeze(ctx: ShapeContext) -> SymbolicValue | None:
    x = ctx.symbolic(0)
    if x is None or x.scalar or len(x.extents) != 1 or _axes(ctx, 1) not in (None, [0], [-1]):
        return None
    return SymbolicValue(x.extents, scalar=True)


@value_rule("Slice")
def _slice(ctx: ShapeContext) -> SymbolicValue | None:
    x = ctx.symbolic(0)
    if x is None or x.scalar:
        return None
    if ctx.since < 10:
        starts, ends, axes, steps = ctx.attr("starts", None), ctx.attr("ends", None), ctx.attr("axes", None), None
    else:
        starts, ends = ctx.ints(1), ctx.ints(2)
        axes = ctx.ints(3) if ctx.present(3) else None
        steps = ctx.ints(4) if ctx.present(4) else None
        if (ctx.present(3) and axes is None) or (ctx.present(4) and steps is None):
            return None
    if starts is None or ends is None or len(starts) != 1 or len(ends) != 1:
        return None
    if axes is not None and [int(a) for a in axes] not in ([0], [-1]):
        return None
    step = 1 if steps is None else int(steps[0])
    if step == 0:
        return None
    # A 1-D value sliced along its only axis: Python's slice clamps its bounds as Slice does.
    return SymbolicValue(x.extents[int(starts[0]) : int(ends[0]) : step])
