"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.ml`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    dim_prod,
    same_as_input,
    shape_rule,
)
from onnxcore.infer.shape_ops.linalg import _ML, _count

__all__: list[str] = []


shape_rule("Binarizer", "CategoryMapper", "Imputer", "LabelEncoder", "Normalizer", "Scaler", domain=_ML)(same_as_input)


@shape_rule("ArrayFeatureExtractor", domain=_ML)
def _array_feature_extractor(ctx: ShapeContext) -> list[ShapeT | None]:
    x, y = ctx.shape(0), ctx.shape(1)
    if x is None or not x:
        return [None]
    k = None if y is None else dim_prod(y)  # every index of Y selects one element of the last axis
    return [(1, k) if len(x) == 1 else (*x[:-1], k)]


@shape_rule("OneHotEncoder", domain=_ML)
def _one_hot_encoder(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    return [None if x is None else (*x, _count(ctx, "cats_int64s", "cats_strings"))]
