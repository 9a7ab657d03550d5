"""The validator (Clause 10): every violation of a model, each with a severity, a clause and a place.

``check(model_or_path, *, full=True, limits=None, base_dir=None) -> Report``. Each rule is a small
function with a stable code (``E-...`` errors, ``W-...`` warnings), registered explicitly in
:mod:`onnxcore.check.registry`; the catalogue is ``docs/validation.md``.
"""

from __future__ import annotations

from onnxcore.check.registry import RULES, Rule, rules_by_code
from onnxcore.check.report import Finding, Report
from onnxcore.check.runner import check

__all__ = ["RULES", "Finding", "Report", "Rule", "check", "rules_by_code"]
