"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.ml_tree`.

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


@shape_rule("TreeEnsembleClassifier", domain=_ML)
def _tree_ensemble_classifier(ctx: ShapeContext) -> list[ShapeT | None]:
    n = _batch(ctx.shape(0))
    return [(n,), (n, _count(ctx, "classlabels_int64s", "classlabels_strings"))]


@shape_rule("TreeEnsembleRegressor", "TreeEnsemble", domain=_ML)
def _tree_ensemble(ctx: ShapeContext) -> list[ShapeT | None]:
    return [(_batch(ctx.shape(0)), ctx.attr("n_targets"))]
