"""The ONNX textual syntax (onnx/docs/Syntax.md): :func:`to_text` writes it, the ``parse_*`` functions read it.

``to_text`` writes what ``onnx.printer.to_text`` writes; the parsers read it (and onnx's) back into our messages,
field for field as ``onnx.parser`` would. The syntax carries no doc strings of graphs, nodes and functions, no
training info and no sparse initializers; a model's other fields round-trip.
"""

from __future__ import annotations

from onnxcore.text.lexer import TextSyntaxError
from onnxcore.text.parser import parse_function, parse_graph, parse_model, parse_node
from onnxcore.text.printer import to_text

__all__ = ["TextSyntaxError", "parse_function", "parse_graph", "parse_model", "parse_node", "to_text"]
