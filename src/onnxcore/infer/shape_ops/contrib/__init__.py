"""Shape rules of onnxruntime's operators, one module per family of :mod:`onnxcore.kernels.contrib` (the same
names). The list of modules is explicit (:data:`onnxcore.infer.shape_ops.CONTRIB_FAMILIES`); importing this package
imports none of them."""

from __future__ import annotations
