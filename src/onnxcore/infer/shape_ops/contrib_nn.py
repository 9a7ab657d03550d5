"""Shape rules (Clause 9) of onnxruntime's operators: the com.microsoft activations, fused additions and
normalizations, CDist and Tokenizer, and the default-domain extension SimplifiedLayerNormalization
(LayerNormalization-1 shares ai.onnx LayerNormalization's rule in ``nn.py``).

The shapes are those onnxruntime's kernels produce (tests/kernels/contrib checks them against it); extents are
computed from fixed integers only and dimension variables pass through unchanged (Clause 9.3).
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    dim_at,
    norm_axis,
    require_rank,
    same_as_input,
    shape_rule,
    unify,
)

__all__: list[str] = []

MS = "com.microsoft"


def _last_extent_param(ctx: ShapeContext, x: ShapeT | None, i: int, name: str) -> None:
    """Input ``i`` (when given) is 1-D of x's last extent."""
    p = ctx.shape(i) if ctx.present(i) else None
    if p is None:
        return
    require_rank(ctx, p, (1,), name)
    if x:
        unify(ctx, p[0], x[-1], f"the length of {name} and the last extent of the input")


@shape_rule("Gelu", "QuickGelu", domain=MS)
def _activation(ctx: ShapeContext) -> list[ShapeT | None]:
    return same_as_input(ctx)


@shape_rule("FastGelu", "BiasGelu", domain=MS)
def _bias_activation(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    _last_extent_param(ctx, x, 1, "the bias")
    return [x]


@shape_rule("BiasAdd", domain=MS)
def _bias_add(ctx: ShapeContext) -> list[ShapeT | None]:
    x, skip = ctx.shape(0), ctx.shape(2)
    require_rank(ctx, x, (3,), "X")
    _last_extent_param(ctx, x, 1, "bias")
    if x is not None and skip is not None and len(skip) == 3:
        x = tuple(unify(ctx, a, b, "X and skip") for a, b in zip(x, skip, strict=True))
    return [x]


@shape_rule("BiasSoftmax", domain=MS)
def _bias_softmax(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    if x is not None and x:
        norm_axis(ctx, int(ctx.attr("axis", 1)), len(x))
    return [x]


@shape_rule("CDist", domain=MS)
def _cdist(ctx: ShapeContext) -> list[ShapeT | None]:
    a, b = ctx.shape(0), ctx.shape(1)
    require_rank(ctx, a, (2,), "A")
    require_rank(ctx, b, (2,), "B")
    if a is not None and b is not None:
        unify(ctx, a[1], b[1], "the row lengths of A and B")
    return [(dim_at(a, 0), dim_at(b, 0))]


def _skip_norm(ctx: ShapeContext, params: tuple[tuple[int, str], ...]) -> list[ShapeT | None]:
    """output and input_skip_bias_sum: the input's shape; mean and inv_std_var: its shape with the last extent 1."""
    x = ctx.shape(0)
    require_rank(ctx, x, (2, 3), "input")
    skip = ctx.shape(1)
    if x is not None and skip is not None and len(skip) in (2, 3) and len(x) >= 2:
        unify(ctx, skip[-1], x[-1], "the hidden sizes of input and skip")
        unify(ctx, skip[-2], x[-2], "the sequence lengths of input and skip")
    for i, name in params:
        _last_extent_param(ctx, x, i, name)
    stat = None if x is None else (*x[:-1], 1)
    return [x, stat, stat, x]


@shape_rule("SkipLayerNormalization", domain=MS)
def _skip_layer_norm(ctx: ShapeContext) -> list[ShapeT | None]:
    return _skip_norm(ctx, ((2, "gamma"), (3, "beta"), (4, "bias")))


@shape_rule("SkipSimplifiedLayerNormalization", domain=MS)
def _skip_simplified_layer_norm(ctx: ShapeContext) -> list[ShapeT | None]:
    return _skip_norm(ctx, ((2, "gamma"), (3, "bias")))


@shape_rule("EmbedLayerNormalization", domain=MS)
def _embed_layer_norm(ctx: ShapeContext) -> list[ShapeT | None]:
    """output and embedding_sum (B, S, H), H the embeddings' width; mask_index (B)."""
    ids, word = ctx.shape(0), ctx.shape(2)
    require_rank(ctx, ids, (2,), "input_ids")
    require_rank(ctx, word, (2,), "word_embedding")
    h = dim_at(word, 1)
    for i, name in ((3, "position_embedding"), (4, "segment_embedding")):
        s = ctx.shape(i) if ctx.present(i) else None
        if s is not None and len(s) == 2:
            h = unify(ctx, s[1], h, f"the widths of {name} and word_embedding")
    for i, name in ((5, "gamma"), (6, "beta")):
        s = ctx.shape(i) if ctx.present(i) else None
        if s is not None and len(s) == 1:
            h = unify(ctx, s[0], h, f"the length of {name} and the embedding width")
    for i, name in ((1, "segment_ids"), (7, "mask")):
        s = ctx.shape(i) if ctx.present(i) else None
        if s is not None and ids is not None and len(s) == 2:
            for a, b in zip(s, ids, strict=True):
                unify(ctx, a, b, f"the shapes of {name} and input_ids")
    out = None if ids is None else (ids[0], ids[1], h)
    return [out, (dim_at(ids, 0),), out]


@shape_rule("SimplifiedLayerNormalization")
def _simplified_layer_norm(ctx: ShapeContext) -> list[ShapeT | None]:
    # onnxruntime's extension of the default domain: Y is X's shape; inv_std_var keeps the extents before axis.
    x = ctx.shape(0)
    if x is None:
        return [None, None]
    axis = norm_axis(ctx, int(ctx.attr("axis", -1)), len(x))
    return [x, (*x[:axis], *([1] * (len(x) - axis)))]


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
