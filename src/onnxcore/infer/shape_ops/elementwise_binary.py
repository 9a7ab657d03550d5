"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.elementwise_binary`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    broadcast,
    same_as_input,
    shape_rule,
    unify_shapes,
)

__all__: list[str] = []


def _binary(ctx: ShapeContext) -> list[ShapeT | None]:
    a, b = ctx.shape(0), ctx.shape(1)
    if ctx.since < 7 and ctx.attr("broadcast", 0):
        # Before opset 7: B is broadcast to A, aligned at ``axis`` (or at the end) (ONNX 1-2, -6 definitions).
        if a is None or b is None:
            return [a]
        if len(b) > len(a):
            ctx.fail(f"with broadcast=1, B of rank {len(b)} is longer than A of rank {len(a)}")
        axis = ctx.attr("axis")
        start = len(a) - len(b) if axis is None else (axis + len(a) if axis < 0 else axis)
        for j, d in enumerate(b):
            x = a[start + j] if 0 <= start + j < len(a) else None
            if isinstance(d, int) and isinstance(x, int) and d not in (1, x):
                ctx.fail(f"with broadcast=1, B's extent {d} does not match A's {x} at axis {start + j}")
        return [a]
    if ctx.since < 7:
        return [unify_shapes(ctx, a, b, "A and B (no broadcast before opset 7)")]
    return [broadcast(ctx, [a, b])]


shape_rule(
    "Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less", "GreaterOrEqual",
    "LessOrEqual", "Mod", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
)(_binary)  # fmt: skip


@shape_rule("Sum", "Max", "Min", "Mean")
def _variadic(ctx: ShapeContext) -> list[ShapeT | None]:
    shapes = [ctx.shape(i) for i in range(ctx.n_inputs) if ctx.present(i)]
    if ctx.since < 8:
        out: ShapeT | None = None
        for s in shapes:
            out = unify_shapes(ctx, out, s, "inputs (no broadcast before opset 8)")
        return [out]
    return [broadcast(ctx, shapes)]


@shape_rule("Where")
def _where(ctx: ShapeContext) -> list[ShapeT | None]:
    return [broadcast(ctx, [ctx.shape(0), ctx.shape(1), ctx.shape(2)])]


shape_rule("BitCast")(same_as_input)
