"""Kernels of onnxruntime's operators: the ``com.microsoft`` domain and onnxruntime's extensions of the default
domain (``SimplifiedLayerNormalization``, ``LayerNormalization``-1), bound to onnxruntime's definitions
(``onnxcore.defs``, origin ``"onnxruntime"``). Where a definition leaves something open, onnxruntime's behaviour
is taken as the fact; each module lists what it took.

The family modules are listed explicitly (one line each); :func:`onnxcore.kernels.load_all` imports them.
"""

from __future__ import annotations

__all__ = ["CONTRIB_FAMILIES"]

# The modules of this subpackage, imported in this order by onnxcore.kernels.load_all. Add a line for a family.
CONTRIB_FAMILIES: tuple[str, ...] = (
    "text",
    "hashing",
    "activation",
    "normalization",
    "quantized",
    "fused",
    "matmul_nbits",
    "attention",
    "gqa",
)
