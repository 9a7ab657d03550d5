"""The validator (Clause 10): every violation of a model, each with a severity, a clause and a place.

``check(model_or_path, *, full=True, limits=None, base_dir=None) -> Report``. Each rule is a small
function with a stable code (``E-...`` errors, ``W-...`` warnings), registered explicitly in
:mod:`onnxcore.validate.catalog`; the catalogue is ``docs/validation.md``.

The package is ``validate`` and the function ``check``, so that ``onnxcore.check`` is always the
function, whichever modules are imported.
"""

from __future__ import annotations

from onnxcore.validate.catalog import CHECK_RULES, CheckRule, rules_by_code
from onnxcore.validate.checker import check
from onnxcore.validate.report import Finding, Report

__all__ = ["CHECK_RULES", "Finding", "Report", "CheckRule", "check", "rules_by_code"]
