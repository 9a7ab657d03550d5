"""Building models in code: ``onnx.helper``'s functions (:mod:`onnxcore.build.helper`) and the least IR version.

A plain re-export list, one line a name, so the modules added beside these merge without conflict.
"""

from __future__ import annotations

from onnxcore.build import helper
from onnxcore.build.helper import AttributeTypeError, HelperError
from onnxcore.build.ir import least_ir_version

__all__ = [
    "AttributeTypeError",
    "HelperError",
    "helper",
    "least_ir_version",
]
