"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.text`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    broadcast,
    same_as_input,
    shape_rule,
)

__all__: list[str] = []


@shape_rule("StringConcat")
def _string_concat(ctx: ShapeContext) -> list[ShapeT | None]:
    return [broadcast(ctx, [ctx.shape(0), ctx.shape(1)])]


shape_rule("RegexFullMatch")(same_as_input)


@shape_rule("StringNormalizer")
def _string_normalizer(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    if x is None:
        return [None]
    # X is [C] or [1, C]; stop words remove an unknown number of elements.
    if len(x) not in (1, 2) or (len(x) == 2 and isinstance(x[0], int) and x[0] != 1):
        ctx.fail(f"StringNormalizer accepts [C] and [1, C] inputs, got {list(x)}")
    if not ctx.attr("stopwords"):
        return [x]
    return [(None,) if len(x) == 1 else (1, None)]


@shape_rule("StringSplit")
def _string_split(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    return [None if x is None else (*x, None), x]


@shape_rule("TfIdfVectorizer")
def _tfidf(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    idx = ctx.attr("ngram_indexes") or []
    width = max(idx) + 1 if idx else None
    if x is None:
        return [None]
    if len(x) not in (1, 2):
        ctx.fail(f"TfIdfVectorizer accepts [C] and [N, C] inputs, got rank {len(x)}")
    return [(width,) if len(x) == 1 else (x[0], width)]
