"""Shape rule (Clause 9) of onnxruntime's com.microsoft Tokenizer: the family of
:mod:`onnxcore.kernels.contrib.text`."""

from __future__ import annotations

from onnxcore.infer.shape_core import ShapeContext, ShapeT, require_rank, shape_rule

__all__: list[str] = []

MS = "com.microsoft"


@shape_rule("Tokenizer", domain=MS)
def _tokenizer(ctx: ShapeContext) -> list[ShapeT | None]:
    # [C] -> [C, D], [N, C] -> [N, C, D], D known only from the strings; an input with no element keeps its shape.
    x = ctx.shape(0)
    require_rank(ctx, x, (1, 2), "X")
    if x is None:
        return [None]
    if any(d == 0 for d in x):
        return [x]
    return [(*x, None)]
