"""Kernels of onnxruntime's ``com.microsoft`` operators, one module per family.

:func:`onnxcore.kernels.load_all` imports each module of :data:`FAMILIES` (registering its kernels) after the
default-domain families, whose code they reuse.
"""

from __future__ import annotations

__all__ = ["FAMILIES"]

# The com.microsoft operator families, imported in this order. Add a module here when you add a family.
FAMILIES: tuple[str, ...] = (
    "quantized",
    "fused",
    "matmul_nbits",
)
