"""Readings the conformance statement states: where a definition can be read two ways and the implementations
that onnxcore is compared with read it differently, which reading onnxcore takes and why.

Each reading is a section of docs/conformance.md (:func:`render_readings_markdown`), placed after the known
divergences; the tests named in each back it.
"""

from __future__ import annotations

__all__ = ["render_readings_markdown"]

_TREE_VOTES = (
    "TreeEnsembleRegressor and TreeEnsembleClassifier (ai.onnx.ml 1, 3) say: 'All fields prefixed with "
    "target_ [class_] are tuples of votes at the leaves. A leaf may have multiple votes, where each vote is "
    "weighted by the associated target_weights index.' onnxcore reads it as written: every vote of a reached leaf "
    "adds its weight to its target, so two votes of one leaf for one target add up (before the aggregation over "
    "trees). onnx.reference reads it so, and onnxruntime too when the ensemble has two or more targets; with one "
    "target onnxruntime keeps the leaf's first vote only. skl2onnx's `decision_path` option depends on the "
    "difference: for a classifier it writes one vote per class at every leaf, each weighing the leaf's node id, "
    "so onnxruntime returns the leaf id (and scikit-learn's path string) where onnxcore and onnx.reference return "
    "the number of classes times it (not a key of the LabelEncoder that follows: its default). The walk is the "
    "same: with one vote per leaf, as skl2onnx writes the path of a regressor or a forest regressor, onnxcore's "
    "paths equal scikit-learn's `decision_path`. The difference is the converted model's, not the reading's: "
    "onnxcore keeps the definition's (tests/kernels/test_ml_decision_path.py)."
)


def render_readings_markdown() -> list[str]:
    """The readings' section of docs/conformance.md, as lines."""
    return ["## Tree ensembles: several votes of one leaf", "", _TREE_VOTES]
