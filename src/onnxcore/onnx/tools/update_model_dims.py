"""``onnx.tools.update_model_dims``: :func:`onnxcore.build.interface.update_inputs_outputs_dims` (re-export)."""

from __future__ import annotations

from onnxcore.build.interface import update_inputs_outputs_dims

__all__ = ["update_inputs_outputs_dims"]
