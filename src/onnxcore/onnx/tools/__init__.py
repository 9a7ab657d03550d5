"""``onnx.tools``: ``update_model_dims`` (re-exports only)."""

from __future__ import annotations

from onnxcore.onnx.tools import update_model_dims

__all__ = ["update_model_dims"]
