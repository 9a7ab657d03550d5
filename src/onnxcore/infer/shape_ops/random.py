"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.random`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    same_as_input,
    shape_rule,
)

__all__: list[str] = []


@shape_rule("RandomNormal", "RandomUniform")
def _random(ctx: ShapeContext) -> list[ShapeT | None]:
    shape = ctx.attr("shape")
    return [None if shape is None else tuple(int(d) for d in shape)]


@shape_rule("Multinomial")
def _multinomial(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    return [None if x is None or len(x) != 2 else (x[0], int(ctx.attr("sample_size", 1)))]


shape_rule("RandomNormalLike", "RandomUniformLike", "Bernoulli")(same_as_input)
