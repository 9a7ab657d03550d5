"""Kernels of onnxruntime's ``com.microsoft`` domain, one module per family (imported by ``load_all``).

The reference for each operator is onnxruntime's ContribOperators definition; what it leaves open is taken
from onnxruntime's behaviour and listed in each module's docstring.
"""

from __future__ import annotations

__all__ = ["FAMILIES"]

# The contrib families, imported in this order by onnxcore.kernels.load_all. Add a module here when you add one.
FAMILIES: tuple[str, ...] = (
    "attention",
    "gqa",
)
