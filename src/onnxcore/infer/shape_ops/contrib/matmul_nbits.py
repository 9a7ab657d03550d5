"""Shape rule (Clause 9) of onnxruntime's ``com.microsoft`` MatMulNBits: the family of
:mod:`onnxcore.kernels.contrib.matmul_nbits`."""

from __future__ import annotations

from onnxcore.infer.shape_core import ShapeContext, ShapeT, dim_at, shape_rule, unify

__all__: list[str] = []

_MS = "com.microsoft"


@shape_rule("MatMulNBits", domain=_MS)
def _matmul_nbits(ctx: ShapeContext) -> list[ShapeT | None]:
    a = ctx.shape(0)
    if a is None:
        return [None]
    if not a:
        ctx.fail("MatMulNBits: A must have rank >= 1")
    unify(ctx, a[-1], int(ctx.attr("K")), "MatMulNBits: A's last axis and K")
    n = int(ctx.attr("N"))
    if ctx.present(5):
        unify(ctx, dim_at(ctx.shape(5), 0), n, "MatMulNBits: bias and N")
    return [(*a[:-1], n)]
