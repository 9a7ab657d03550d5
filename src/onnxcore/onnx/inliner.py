"""``onnx.inliner``: :mod:`onnxcore.build.inline` under onnx's module name (re-exports only)."""

from __future__ import annotations

from onnxcore.build.inline import inline_local_functions, inline_selected_functions

__all__ = ["inline_local_functions", "inline_selected_functions"]
