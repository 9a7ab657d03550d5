"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.flex_attention`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    dim_at,
    require_rank,
    shape_rule,
    unify,
    unify_all,
)

__all__: list[str] = []


@shape_rule("FlexAttention", domain="ai.onnx.preview")
def _flex_attention(ctx: ShapeContext) -> list[ShapeT | None]:
    # Q (B, Hq, L, E), K (B, Hkv, S, E), V (B, Hkv, S, Ev) -> Y (B, Hq, L, Ev).
    q, k, v = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    for s, name in ((q, "Q"), (k, "K"), (v, "V")):
        require_rank(ctx, s, (4,), name)
    batch = unify_all(ctx, [dim_at(q, 0), dim_at(k, 0), dim_at(v, 0)], "batch size of Q, K and V")
    unify(ctx, dim_at(q, 3), dim_at(k, 3), "head sizes of Q and K")
    unify(ctx, dim_at(k, 2), dim_at(v, 2), "sequence lengths of K and V")
    return [(batch, dim_at(q, 1), dim_at(q, 2), dim_at(v, 3))]
