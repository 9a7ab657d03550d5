"""Making models in Python: an opset-aware graph builder (:mod:`onnxcore.build.builder`)."""

from __future__ import annotations

from onnxcore.build.builder import BuildError, GraphBuilder, OpFunction, Opset, Value, min_ir_version

__all__ = ["BuildError", "GraphBuilder", "OpFunction", "Opset", "Value", "min_ir_version"]
