"""Shape rules (Clause 9) of onnxruntime's normalizations: com.microsoft's SkipLayerNormalization,
SkipSimplifiedLayerNormalization and EmbedLayerNormalization, and the default-domain extension
SimplifiedLayerNormalization (LayerNormalization-1 shares ai.onnx LayerNormalization's rule in
``shape_ops/normalization.py``): the family of :mod:`onnxcore.kernels.contrib.normalization`.

The shapes are those onnxruntime's kernels produce (tests/kernels/contrib checks them against it); extents are
computed from fixed integers only and dimension variables pass through unchanged (Clause 9.3).
"""

from __future__ import annotations

from onnxcore.infer.shape_core import ShapeContext, ShapeT, dim_at, norm_axis, require_rank, shape_rule, unify
from onnxcore.infer.shape_ops.contrib.activation import last_extent_param

__all__: list[str] = []

MS = "com.microsoft"


def _skip_norm(ctx: ShapeContext, params: tuple[tuple[int, str], ...]) -> list[ShapeT | None]:
    """output and input_skip_bias_sum: the input's shape; mean and inv_std_var: its shape with the last extent 1."""
    x = ctx.shape(0)
    require_rank(ctx, x, (2, 3), "input")
    skip = ctx.shape(1)
    if x is not None and skip is not None and len(skip) in (2, 3) and len(x) >= 2:
        unify(ctx, skip[-1], x[-1], "the hidden sizes of input and skip")
        unify(ctx, skip[-2], x[-2], "the sequence lengths of input and skip")
    for i, name in params:
        last_extent_param(ctx, x, i, name)
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
