"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.ml_maps`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import ShapeContext, ShapeT, shape_rule
from onnxcore.infer.shape_ops.linalg import _ML, _count

__all__: list[str] = []


@shape_rule("FeatureVectorizer", domain=_ML)
def _feature_vectorizer(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    n = None if x is None else (1 if len(x) <= 1 else x[0])
    dims = ctx.attr("inputdimensions")
    return [(n, sum(dims) if dims else None)]


@shape_rule("DictVectorizer", domain=_ML)
def _dict_vectorizer(ctx: ShapeContext) -> list[ShapeT | None]:
    # The definition says "1-D"; onnxruntime and this runtime both give one row [1, V].
    return [(1, _count(ctx, "int64_vocabulary", "string_vocabulary"))]


@shape_rule("CastMap", domain=_ML)
def _cast_map(ctx: ShapeContext) -> list[ShapeT | None]:
    dense = ctx.attr("map_form", "DENSE") == "DENSE"
    return [(1, None if dense else int(ctx.attr("max_map", 1)))]


@shape_rule("ZipMap", domain=_ML)
def _zip_map(ctx: ShapeContext) -> list[ShapeT | None]:
    return [None]  # a sequence of maps
