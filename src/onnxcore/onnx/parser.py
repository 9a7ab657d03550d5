"""``onnx.parser``: the ONNX textual syntax read by :mod:`onnxcore.text` (re-exports only)."""

from __future__ import annotations

from onnxcore.text import parse_function, parse_graph, parse_model, parse_node
from onnxcore.text.lexer import TextSyntaxError as ParseError

__all__ = ["ParseError", "parse_function", "parse_graph", "parse_model", "parse_node"]
