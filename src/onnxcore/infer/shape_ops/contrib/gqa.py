"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.contrib.gqa`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    ShapeT,
    dim_at,
    dim_div,
    dim_mul,
    require_rank,
    shape_rule,
)
from onnxcore.infer.shape_ops.contrib.attention import _MS

__all__: list[str] = []


@shape_rule("GroupQueryAttention", domain=_MS)
def _group_query_attention(ctx: ShapeContext) -> list[ShapeT | None]:
    """output (B, S, N*H); present_key/value (B, Nkv, max(past, total), H); output_qk (B, N, S, total)."""
    q = ctx.shape(0)
    require_rank(ctx, q, (3,), "query")
    n, nkv = ctx.attr("num_heads", None), ctx.attr("kv_num_heads", None)
    n = n if isinstance(n, int) and n > 0 else None
    nkv = nkv if isinstance(nkv, int) and nkv > 0 else None
    width = dim_at(q, 2)
    if ctx.present(1):
        head = dim_div(ctx, width, n, "query hidden size and num_heads") if n is not None else None
    elif n is not None and nkv is not None:
        head = dim_div(ctx, width, n + 2 * nkv, "packed QKV width and num_heads + 2 * kv_num_heads")
    else:
        head = None
    batch, seq = dim_at(q, 0), dim_at(q, 1)
    tot = ctx.ints(6)
    total: Extent = tot[0] if tot is not None and len(tot) == 1 else None
    present_len: Extent = total
    if ctx.present(3):
        pk = ctx.shape(3)
        require_rank(ctx, pk, (4,), "past_key")
        cap = dim_at(pk, 2)
        present_len = max(cap, total) if isinstance(cap, int) and isinstance(total, int) else None
    out_hidden = dim_mul(n, head)
    present = (batch, nkv, present_len, head)
    return [(batch, seq, out_hidden), present, present, (batch, n, seq, total)]
