"""Shape rules of onnxruntime's operators, one module per family of :mod:`onnxcore.kernels.contrib` (the same
names). The list of modules is explicit: importing this package registers every rule."""

from __future__ import annotations

from onnxcore.infer.shape_ops.contrib import (
    activation,
    attention,
    fused,
    gqa,
    matmul_nbits,
    normalization,
    quantized,
    text,
)

__all__ = ["activation", "attention", "fused", "gqa", "matmul_nbits", "normalization", "quantized", "text"]
