"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.elementwise`: the
elementwise operators of one operand (and PRelu).

Definitions are those of ONNX 1-2 (``onnx.defs``); the version noted is the since_version where the shape
behaviour changed.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    same_as_input,
    shape_rule,
    unidirectional,
)

__all__: list[str] = []

# Output 0 has the shape of input 0 (other inputs are parameters or scalars).
shape_rule(
    "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "BitwiseNot", "Ceil", "Celu",
    "Clip", "Cos", "Cosh", "Elu", "Erf", "Exp", "Floor", "Gelu", "HardSigmoid", "HardSwish", "IsInf",
    "IsNaN", "LeakyRelu", "Log", "Mish", "Neg", "Not", "Reciprocal", "Relu", "Round", "Selu", "Shrink", "Sigmoid",
    "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt", "Swish", "Tan", "Tanh", "ThresholdedRelu",
)(same_as_input)  # fmt: skip


@shape_rule("PRelu")
def _prelu(ctx: ShapeContext) -> list[ShapeT | None]:
    x, slope = ctx.shape(0), ctx.shape(1)
    if ctx.since >= 7:
        return [unidirectional(ctx, x, slope)]  # slope is unidirectionally broadcastable to X (Clause 6.6.3)
    return [x]
