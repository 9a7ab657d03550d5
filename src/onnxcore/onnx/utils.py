"""``onnx.utils``: ``extract_model`` (:mod:`onnxcore.build.interface`; re-exports only)."""

from __future__ import annotations

from onnxcore.build.interface import extract_model, extract_model_proto

__all__ = ["extract_model", "extract_model_proto"]
