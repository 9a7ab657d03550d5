"""Conformance (Clause 4, 11, Annex A): the test-package runner, tolerances and the conformance statement."""

from __future__ import annotations

from onnxcore.conformance.compare import Comparison, compare_values
from onnxcore.conformance.runner import CaseResult, discover, run_case, run_package, summarize_by_operator

__all__ = ["CaseResult", "Comparison", "compare_values", "discover", "run_case", "run_package", "summarize_by_operator"]
