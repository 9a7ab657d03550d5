"""``onnx.printer``: the ONNX textual syntax written by :mod:`onnxcore.text` (re-exports only)."""

from __future__ import annotations

from onnxcore.text import to_text

__all__ = ["to_text"]
