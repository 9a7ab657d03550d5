"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.quantize`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    same_as_input,
    shape_rule,
)
from onnxcore.infer.shape_ops.linalg import _matmul, _matmul_rule
from onnxcore.infer.shape_ops.windows import _conv_out

__all__: list[str] = []


@shape_rule("ConvInteger")
def _conv_integer(ctx: ShapeContext) -> list[ShapeT | None]:
    return [_conv_out(ctx, 0, 1, None)]


@shape_rule("QLinearConv")
def _qlinear_conv(ctx: ShapeContext) -> list[ShapeT | None]:
    # Inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B.
    return [_conv_out(ctx, 0, 3, 8)]


@shape_rule("QuantizeLinear")
def _quantize(ctx: ShapeContext) -> list[ShapeT | None]:
    return [ctx.shape(0)]


@shape_rule("DynamicQuantizeLinear")
def _dynamic_quantize(ctx: ShapeContext) -> list[ShapeT | None]:
    return [ctx.shape(0), (), ()]


shape_rule("DequantizeLinear")(same_as_input)


@shape_rule("QLinearMatMul")
def _qlinear_matmul(ctx: ShapeContext) -> list[ShapeT | None]:
    return [_matmul(ctx, ctx.shape(0), ctx.shape(3))]  # inputs: a, a_scale, a_zero_point, b, ...


shape_rule("MatMulInteger")(_matmul_rule)
