"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.ml_linear`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    shape_rule,
)
from onnxcore.infer.shape_ops.linalg import _ML, _batch, _count

__all__: list[str] = []


@shape_rule("LinearClassifier", domain=_ML)
def _linear_classifier(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    n = _batch(x)
    coef = ctx.attr("coefficients") or []
    intercepts = ctx.attr("intercepts")
    rows: int | None = len(intercepts) if intercepts else None
    f = x[-1] if x else None
    if rows is None and isinstance(f, int) and f > 0 and len(coef) % f == 0:
        rows = len(coef) // f
    # One row of coefficients with two labels is a binary classifier scoring both classes.
    scores = 2 if rows == 1 and _count(ctx, "classlabels_ints", "classlabels_strings") == 2 else rows
    return [(n,), (n, scores)]


@shape_rule("LinearRegressor", domain=_ML)
def _linear_regressor(ctx: ShapeContext) -> list[ShapeT | None]:
    return [(_batch(ctx.shape(0)), int(ctx.attr("targets", 1)))]


@shape_rule("SVMClassifier", domain=_ML)
def _svm_classifier(ctx: ShapeContext) -> list[ShapeT | None]:
    n = _batch(ctx.shape(0))
    k = _count(ctx, "classlabels_ints", "classlabels_strings")
    scores = k
    if k is not None and k > 2 and sum(ctx.attr("vectors_per_class") or []) > 0 and not ctx.attr("prob_a"):
        scores = k * (k - 1) // 2  # support vectors without probabilities: one decision value per class pair
    return [(n,), (n, scores)]


@shape_rule("SVMRegressor", domain=_ML)
def _svm_regressor(ctx: ShapeContext) -> list[ShapeT | None]:
    return [(_batch(ctx.shape(0)), 1)]
