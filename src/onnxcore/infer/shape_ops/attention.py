"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.attention`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
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
    unify_shapes,
)

__all__: list[str] = []


def _heads(ctx: ShapeContext, s: ShapeT | None, heads: Extent, what: str) -> tuple[Extent, Extent, Extent]:
    """(heads, sequence, head size) of a 4-D (B, H, S, D) or 3-D (B, S, H*D) input."""
    if s is None:
        return None, None, None
    if len(s) == 4:
        return s[1], s[2], s[3]
    return heads, s[1], dim_div(ctx, s[2], heads, f"{what} hidden size and its head count")


def _packed(q_heads: Extent, kv_heads: Extent, v_hidden: Extent, v_head: Extent) -> Extent:
    """q_num_heads * v_head_size of a 3-D output; V's own extent when the head counts are equal."""
    if q_heads == kv_heads and q_heads is not None:
        return v_hidden
    return dim_mul(q_heads, v_head)


@shape_rule("Attention")
def _attention(ctx: ShapeContext) -> list[ShapeT | None]:
    """Attention-23/24/25: Y, present_key, present_value, qk_matmul_output.

    total_sequence_length = past_sequence_length + kv_sequence_length; 3-D inputs are (B, S, heads * D) with
    the head counts from q_num_heads / kv_num_heads.
    """
    q, k, v = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    for s, name in ((q, "Q"), (k, "K"), (v, "V")):
        require_rank(ctx, s, (3, 4), name)
    qa, ka = ctx.attr("q_num_heads", None), ctx.attr("kv_num_heads", None)
    hq, sq, dq = _heads(ctx, q, qa if isinstance(qa, int) and qa > 0 else None, "Q")
    hk, skv, dk = _heads(ctx, k, ka if isinstance(ka, int) and ka > 0 else None, "K")
    hv, skv_v, dv = _heads(ctx, v, ka if isinstance(ka, int) and ka > 0 else None, "V")
    batch = unify_all(ctx, [dim_at(q, 0), dim_at(k, 0), dim_at(v, 0)], "batch size of Q, K and V")
    hk = unify(ctx, hk, hv, "head counts of K and V")
    skv = unify(ctx, skv, skv_v, "sequence lengths of K and V")
    unify(ctx, dq, dk, "head sizes of Q and K")
    past_k = ctx.shape(4) if ctx.present(4) else None
    past_v = ctx.shape(5) if ctx.present(5) else None
    total = skv
    if ctx.present(4):
        past = unify(ctx, dim_at(past_k, 2), dim_at(past_v, 2), "past sequence lengths of past_key and past_value")
        total = dim_add(past, skv)
    if q is not None and len(q) == 3:
        y: ShapeT | None = (batch, sq, _packed(hq, hk, dim_at(v, 2) if v is not None and len(v) == 3 else None, dv))
    else:
        y = (batch, hq, sq, dv) if q is not None else None
    return [y, (batch, hk, total, dk), (batch, hk, total, dv), (batch, hq, sq, total)]


@shape_rule("SwiGLU")
def _swiglu(ctx: ShapeContext) -> list[ShapeT | None]:
    # SwiGLU-28: A and B have identical shapes (no broadcasting).
    return [unify_shapes(ctx, ctx.shape(0), ctx.shape(1), "A and B")]


@shape_rule("LinearAttention")
def _linear_attention(ctx: ShapeContext) -> list[ShapeT | None]:
    """LinearAttention-27: query (B, T, Hq*dk), key (B, T, Hkv*dk), value (B, T, Hkv*dv) -> output
    (B, T, Hq*dv), present_state (B, Hkv, dk, dv)."""
    q, k, v = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    for s, name in ((q, "query"), (k, "key"), (v, "value")):
        require_rank(ctx, s, (3,), name)
    qa, ka = ctx.attr("q_num_heads", None), ctx.attr("kv_num_heads", None)
    hq = qa if isinstance(qa, int) and qa > 0 else None
    hk = ka if isinstance(ka, int) and ka > 0 else None
    batch = unify_all(ctx, [dim_at(q, 0), dim_at(k, 0), dim_at(v, 0)], "batch size of query, key and value")
    t = unify_all(ctx, [dim_at(q, 1), dim_at(k, 1), dim_at(v, 1)], "sequence length of query, key and value")
    dk = unify_all(
        ctx,
        [
            dim_div(ctx, dim_at(q, 2), hq, "query hidden size and q_num_heads"),
            dim_div(ctx, dim_at(k, 2), hk, "key hidden size"),
        ],
        "d_k of query and key",
    )
    dv = dim_div(ctx, dim_at(v, 2), hk, "value hidden size and kv_num_heads")
    state: ShapeT = (batch, hk, dk, dv)
    if ctx.present(3):
        state = unify_shapes(ctx, state, ctx.shape(3), "past_state") or state
    return [(batch, t, _packed(hq, hk, dim_at(v, 2), dv)), state]


@shape_rule("CausalConvWithState")
def _causal_conv(ctx: ShapeContext) -> list[ShapeT | None]:
    # CausalConvWithState-27: input (B, C, L), weight (C, 1, k) -> output (B, C, L), present_state (B, C, k - 1).
    x, w = ctx.shape(0), ctx.shape(1)
    require_rank(ctx, x, (3,), "input")
    require_rank(ctx, w, (3,), "weight")
    c = unify(ctx, dim_at(x, 1), dim_at(w, 0), "input channels and weight.shape[0]")
    unify(ctx, dim_at(w, 1), 1, "weight.shape[1]")
    if ctx.present(2):
        c = unify(ctx, c, dim_at(ctx.shape(2), 0), "channels and the length of bias")
    k = dim_at(w, 2)
    state: ShapeT | None = (dim_at(x, 0), c, k - 1 if isinstance(k, int) and k >= 1 else None)
    if ctx.present(3):
        state = unify_shapes(ctx, state, ctx.shape(3), "past_state")
    y = None if x is None else (x[0], c, x[2])
    return [y, state]


shape_rule("RotaryEmbedding")(same_as_input)
