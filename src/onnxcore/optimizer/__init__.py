"""``onnxcore.optimize``: a model simplifier that never changes what a model computes, at any size.

The passes are the model rewrites of :mod:`onnxcore.runtime.optimize.model_passes` (one contract with the plan's
rewrites), run over every graph of the model by :mod:`onnxcore.runtime.rewrite_model`; this package adds what a
producer tool needs above the runtime: the proof (:mod:`.verify`, evaluation of both models), the report
(:mod:`.report`) and the writing of the result beside its external data (:mod:`.write`). Named ``optimizer`` so that
the package never shadows the function ``onnxcore.optimize``.
"""

from __future__ import annotations

from onnxcore.errors import OptimizeError
from onnxcore.optimizer.api import LEVELS, optimize
from onnxcore.optimizer.report import OptimizeReport, op_counts
from onnxcore.optimizer.write import save_optimized
from onnxcore.runtime.optimize.model_passes import MODEL_REWRITE_NAMES as PASSES

__all__ = ["LEVELS", "PASSES", "OptimizeError", "OptimizeReport", "op_counts", "optimize", "save_optimized"]
