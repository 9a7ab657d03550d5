"""Shape rules (Clause 9) of onnxruntime's ``com.microsoft`` attention family.

Attention, MultiHeadAttention, GroupQueryAttention and RotaryEmbedding, as onnxruntime's ContribOperators
definitions state their output shapes (and its 1.31 CPU kernels compute them: GroupQueryAttention's present
is as long as the larger of past_key's length and ``total_sequence_length``). Extents are computed only from
fixed integers; a dimension variable passes through where an output extent equals an input extent.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    ShapeT,
    dim_add,
    dim_at,
    dim_div,
    dim_mul,
    require_rank,
    same_as_input,
    shape_rule,
    unify,
    unify_all,
)

__all__: list[str] = []

_MS = "com.microsoft"


def _heads(ctx: ShapeContext) -> int | None:
    n = ctx.attr("num_heads", None)
    return n if isinstance(n, int) and n > 0 else None


@shape_rule("Attention", domain=_MS)
def _attention(ctx: ShapeContext) -> list[ShapeT | None]:
    """output (B, S, v_hidden); present (2, B, N, past + S, head_size)."""
    x, w = ctx.shape(0), ctx.shape(1)
    require_rank(ctx, x, (3,), "input")
    require_rank(ctx, w, (2,), "weights")
    unify(ctx, dim_at(x, 2), dim_at(w, 0), "input hidden size and weights' first extent")
    n = _heads(ctx)
    sizes = ctx.attr("qkv_hidden_sizes", None)
    width = dim_at(w, 1)
    hidden: Extent
    v_hidden: Extent
    if sizes:
        hidden, v_hidden = int(sizes[0]), int(sizes[2])
        if isinstance(width, int) and width != sum(int(d) for d in sizes):
            ctx.fail(f"weights width {width} is not the sum of qkv_hidden_sizes {list(sizes)}")
    else:
        hidden = v_hidden = dim_div(ctx, width, 3, "weights width (3 * hidden_size)")
    head = dim_div(ctx, hidden, n, "hidden size and num_heads") if n is not None else None
    batch, seq = dim_at(x, 0), dim_at(x, 1)
    total = seq
    if ctx.present(4):
        past = ctx.shape(4)
        require_rank(ctx, past, (5,), "past")
        batch = unify(ctx, batch, dim_at(past, 1), "batch size of input and past")
        total = dim_add(dim_at(past, 3), seq)
    return [(batch, seq, v_hidden), (2, batch, n, total, head)]


@shape_rule("MultiHeadAttention", domain=_MS)
def _multi_head_attention(ctx: ShapeContext) -> list[ShapeT | None]:
    """output (B, S, v_hidden); present_key/value (B, N, past + L, H); qk (B, N, S, total)."""
    q = ctx.shape(0)
    require_rank(ctx, q, (3, 5), "query")
    n = _heads(ctx)
    k = ctx.shape(1) if ctx.present(1) else None
    v = ctx.shape(2) if ctx.present(2) else None
    batch, seq = dim_at(q, 0), dim_at(q, 1)
    if q is not None and len(q) == 5:  # packed QKV (B, L, N, 3, H)
        head = v_head = dim_at(q, 4)
        kv_len: Extent = seq
        v_hidden = dim_mul(n, v_head)
    elif k is not None and len(k) == 4:  # key/value already in BNSH
        batch = unify_all(ctx, [batch, dim_at(k, 0), dim_at(v, 0)], "batch size of query, key and value")
        kv_len = unify(ctx, dim_at(k, 2), dim_at(v, 2), "sequence lengths of key and value")
        head, v_head = dim_at(k, 3), dim_at(v, 3)
        v_hidden = dim_mul(n, v_head)
    else:
        head = dim_div(ctx, dim_at(q, 2), n, "query hidden size and num_heads") if n is not None else None
        if k is not None and len(k) == 5:  # packed KV (B, L, N, 2, H)
            kv_len, v_head = dim_at(k, 1), dim_at(k, 4)
            v_hidden = dim_mul(n, v_head)
        else:
            kv_len = unify(ctx, dim_at(k, 1), dim_at(v, 1), "sequence lengths of key and value")
            v_hidden = dim_at(v, 2)
            v_head = dim_div(ctx, v_hidden, n, "value hidden size and num_heads") if n is not None else None
    total = present_len = kv_len
    if ctx.present(6):
        pk = ctx.shape(6)
        require_rank(ctx, pk, (4,), "past_key")
        if ctx.present(8):  # past and present share one buffer of past_key's length
            present_len = dim_at(pk, 2)
            lens = ctx.ints(8)
            total = dim_add(lens[0], kv_len) if lens is not None and len(lens) == 1 else None
        else:
            total = present_len = dim_add(dim_at(pk, 2), kv_len)
    presents = [(batch, n, present_len, head), (batch, n, present_len, v_head)]
    return [(batch, seq, v_hidden), *presents, (batch, n, seq, total)]


shape_rule("RotaryEmbedding", domain=_MS)(same_as_input)
