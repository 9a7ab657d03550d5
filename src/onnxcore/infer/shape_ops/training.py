"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.training`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    broadcast,
    shape_rule,
)

__all__: list[str] = []


_TRAINING = "ai.onnx.preview.training"


_OPTIMIZERS: dict[str, tuple[int, tuple[tuple[int, ...], ...]]] = {
    "Adagrad": (3, ((0, 1, 2), (0, 1, 2))),  # X, G, H -> X_new, H_new
    "Adam": (4, ((0, 1, 2, 3), (0, 1, 2), (0, 1, 3))),  # X, G, V, H -> X_new, V_new, H_new
    "Momentum": (3, ((0, 1, 2), (0, 1, 2))),  # X, G, V -> X_new, V_new
}


@shape_rule("Adagrad", "Adam", "Momentum", domain=_TRAINING)
def _optimizer(ctx: ShapeContext) -> list[ShapeT | None]:
    kinds, outs = _OPTIMIZERS[ctx.op_type]
    count, rest = divmod(ctx.n_inputs - 2, kinds)  # inputs: R, T, then the tensors kind after kind
    if rest or count < 1:
        return [None] * ctx.n_outputs
    return [broadcast(ctx, [ctx.shape(2 + kind * count + i) for kind in uses]) for uses in outs for i in range(count)]


@shape_rule("Gradient", domain=_TRAINING)
def _gradient(ctx: ShapeContext) -> list[ShapeT | None]:
    return [None] * ctx.n_outputs  # the shapes of the xs tensors, named by attribute, not seen here
