"""Shape rules (Clause 9): elementwise operators, broadcasting, casts, quantization, constants and generators.

Definitions are those of ONNX 1-2 (``onnx.defs``); the version noted is the since_version where the shape
behaviour changed.
"""

from __future__ import annotations

import math

import numpy as np

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    broadcast,
    same_as_input,
    shape_from_input,
    shape_rule,
    unidirectional,
    unify_shapes,
)

__all__: list[str] = []

# Output 0 has the shape of input 0 (other inputs are parameters or scalars).
shape_rule(
    "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "BitwiseNot", "Cast", "CastLike", "Ceil", "Celu",
    "Clip", "Cos", "Cosh", "Elu", "Erf", "Exp", "Floor", "Gelu", "HardSigmoid", "HardSwish", "Identity", "IsInf",
    "IsNaN", "LeakyRelu", "Log", "Mish", "Neg", "Not", "Reciprocal", "Relu", "Round", "Selu", "Shrink", "Sigmoid",
    "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt", "Swish", "Tan", "Tanh", "ThresholdedRelu",
    "DequantizeLinear", "BitCast", "RandomNormalLike", "RandomUniformLike", "Bernoulli",
)(same_as_input)  # fmt: skip


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


@shape_rule("PRelu")
def _prelu(ctx: ShapeContext) -> list[ShapeT | None]:
    x, slope = ctx.shape(0), ctx.shape(1)
    if ctx.since >= 7:
        return [unidirectional(ctx, x, slope)]  # slope is unidirectionally broadcastable to X (Clause 6.6.3)
    return [x]


@shape_rule("Dropout")
def _dropout(ctx: ShapeContext) -> list[ShapeT | None]:
    return [ctx.shape(0), ctx.shape(0)]


@shape_rule("QuantizeLinear")
def _quantize(ctx: ShapeContext) -> list[ShapeT | None]:
    return [ctx.shape(0)]


@shape_rule("DynamicQuantizeLinear")
def _dynamic_quantize(ctx: ShapeContext) -> list[ShapeT | None]:
    return [ctx.shape(0), (), ()]


# --- shapes as values ---------------------------------------------------------------------------


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


@shape_rule("RandomNormal", "RandomUniform")
def _random(ctx: ShapeContext) -> list[ShapeT | None]:
    shape = ctx.attr("shape")
    return [None if shape is None else tuple(int(d) for d in shape)]


@shape_rule("Multinomial")
def _multinomial(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    return [None if x is None or len(x) != 2 else (x[0], int(ctx.attr("sample_size", 1)))]


@shape_rule("EyeLike")
def _eye_like(ctx: ShapeContext) -> list[ShapeT | None]:
    return [ctx.shape(0)]


@shape_rule("Range")
def _range(ctx: ShapeContext) -> list[ShapeT | None]:
    return [(None,)]
