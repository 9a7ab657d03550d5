"""``onnx.reference``: :class:`ReferenceEvaluator` and :class:`OpRun` over :class:`onnxcore.Session`.

onnx's reference evaluator is a second implementation of the operators; here the names evaluate with onnxcore's
session (one evaluator in the package), leniently as onnx's evaluator does (it does not validate a model first), and
a user's :class:`OpRun` subclass becomes a custom kernel of that session.
"""

from __future__ import annotations

from onnxcore.onnx.reference.evaluator import ReferenceEvaluator
from onnxcore.onnx.reference.op_run import OpRun

__all__ = ["OpRun", "ReferenceEvaluator"]
