"""The validator (Clause 10): every violation of a model, each with a severity, a clause and a place.

``check(model_or_path, *, full=True, limits=None, base_dir=None) -> Report``. Each rule is a small
function with a stable code (``E-...`` errors, ``W-...`` warnings), registered explicitly in
:mod:`onnxcore.check.registry`; the catalogue is ``docs/validation.md``.

The package and the function share the name ``check``: once this package is imported, Python
binds ``onnxcore.check`` to the package, not to the function the top-level namespace exports. The
package is therefore callable, and calling it is calling :func:`check`, so ``onnxcore.check(path)``
works whichever of the two the name holds.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from onnxcore.check.registry import RULES, Rule, rules_by_code
from onnxcore.check.report import Finding, Report
from onnxcore.check.runner import check

__all__ = ["RULES", "Finding", "Report", "Rule", "check", "rules_by_code"]


class _CallablePackage(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Report:
        return check(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
