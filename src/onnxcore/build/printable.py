"""``onnx.helper``'s one-line summaries: ``printable_node``, ``printable_graph``, ``printable_attribute``, ...

The text is onnx's, character for character (tested against onnx): ``%y = Relu(%x)``, attributes sorted as
text, a float attribute as ``%.15g`` of its binary32 value, a graph's inputs split into those without and with
a matching initializer, subgraphs printed after their graph. The ONNX textual syntax (``onnx.printer``) is
another format: :mod:`onnxcore.text`.
"""

from __future__ import annotations

import struct
from typing import Any, Literal, overload

from onnxcore.proto.bridge import as_message
from onnxcore.proto.messages import AttributeProto, GraphProto, NodeProto, TensorProto, TensorShapeProto, TypeProto
from onnxcore.proto.messages import ValueInfoProto as _ValueInfo
from onnxcore.types.elements import ElementType
from onnxcore.types.tensors import typed_field

__all__ = [
    "printable_attribute",
    "printable_dim",
    "printable_graph",
    "printable_node",
    "printable_tensor_proto",
    "printable_type",
    "printable_value_info",
]

_F32 = struct.Struct("<f")
_SHORT = 64  # onnx shortens a printed string past this many characters


def _binary32(v: float) -> float:
    # A float attribute is a binary32 field: the value printed is the stored one.
    try:
        return float(_F32.unpack(_F32.pack(v))[0])
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


def _float_text(v: float) -> str:
    return f"{_binary32(v):.15g}"


def _short_text(s: str | bytes) -> str:
    text = s.decode("utf-8", errors="ignore") if isinstance(s, bytes) else str(s)
    return text if len(text) < _SHORT else f"{text[:_SHORT]}...<+len={len(text) - _SHORT}>"


def _type_name(tag: int) -> str:
    # The name of TensorProto.DataType, as onnx prints it (a tag outside it as the number).
    try:
        return TensorProto.DataType.Name(tag)
    except ValueError:
        return str(tag)


def _listed(items: list[str]) -> str:
    # onnx joins "[", the items (each but the last with a comma) and "]" with spaces.
    return " ".join(["[", *[item + "," for item in items[:-1]], items[-1], "]"])


def _attribute_value(attr: AttributeProto) -> tuple[str, list[GraphProto]]:
    # The first kind present, in onnx's order of looking: singular values, then lists.
    if attr.has("f"):
        return _float_text(attr.f), []
    if attr.has("i"):
        return str(attr.i), []
    if attr.has("s"):
        return repr(_short_text(attr.s)), []
    if attr.t is not None:
        if attr.t.dims:
            return "<Tensor>", []
        try:
            stored = getattr(attr.t, typed_field(ElementType(attr.t.data_type)))
        except ValueError:
            stored = attr.t.int32_data
        return f"<Scalar Tensor {list(stored)!r}>", []
    if attr.g is not None:
        return f"<graph {attr.g.name}>", [attr.g]
    if attr.tp is not None:
        return f"<Type Proto {attr.tp}>", []
    if attr.sparse_tensor is not None:
        return "<Sparse Tensor>", []
    if attr.floats:
        return "[" + ", ".join(_float_text(v) for v in attr.floats) + "]", []
    if attr.ints:
        return "[" + ", ".join(str(v) for v in attr.ints) + "]", []
    if attr.strings:
        return str([_short_text(s) for s in attr.strings]), []
    if attr.tensors:
        return "[<Tensor>, ...]", []
    if attr.sparse_tensors:
        return "[<Sparse Tensor>, ...]", []
    if attr.type_protos:
        return _listed([f"<Type Proto {tp}>" for tp in attr.type_protos]), []
    if attr.graphs:
        return _listed([f"<graph {g.name}>" for g in attr.graphs]), list(attr.graphs)
    return "<Unknown>", []


@overload
def printable_attribute(attr: Any, subgraphs: Literal[False] = False) -> str: ...
@overload
def printable_attribute(attr: Any, subgraphs: Literal[True]) -> tuple[str, list[GraphProto]]: ...
def printable_attribute(attr: Any, subgraphs: bool = False) -> str | tuple[str, list[GraphProto]]:
    """``name = value`` of an attribute, as onnx prints it (``alpha = 0.5``, ``body = <graph loop>``).

    Args:
        attr: An AttributeProto (onnxcore's or onnx's).
        subgraphs: Also return the graphs the attribute holds, for the caller to print.
    """
    attr = as_message(attr, AttributeProto, "printable_attribute")
    value, graphs = _attribute_value(attr)
    text = f"{attr.name} = {value}"
    return (text, graphs) if subgraphs else text


def printable_dim(dim: Any) -> str:
    """A dimension as onnx prints it: its value, its parameter, or ``?``."""
    dim = as_message(dim, TensorShapeProto.Dimension, "printable_dim")
    which = dim.which_oneof("value")
    return "?" if which is None else str(getattr(dim, which))


def printable_type(t: Any) -> str:
    """A tensor type as onnx prints it (``FLOAT, 1x3x?``, ``INT64, scalar``); another kind is named as unknown."""
    t = as_message(t, TypeProto, "printable_type")
    which = t.which_oneof("value")
    if which is None:
        return ""
    if which != "tensor_type":
        return f"Unknown type {which}"
    tensor = t.tensor_type
    text = _type_name(tensor.elem_type)
    if tensor.shape is not None:
        text += (", " + "x".join(printable_dim(d) for d in tensor.shape.dim)) if tensor.shape.dim else ", scalar"
    return text


def printable_value_info(v: Any) -> str:
    """``%name[type]`` as onnx prints a value info (``%x[]`` when it has no type, as onnx prints it)."""
    v = as_message(v, _ValueInfo, "printable_value_info")
    return f"%{v.name}[{'' if v.type is None else printable_type(v.type)}]"


def printable_tensor_proto(t: Any) -> str:
    """``%name[TYPE, 2x3]`` (or ``scalar``) as onnx prints a tensor's summary."""
    t = as_message(t, TensorProto, "printable_tensor_proto")
    dims = ", " + "x".join(str(d) for d in t.dims) if t.dims else ", scalar"
    return f"%{t.name}[{_type_name(t.data_type)}{dims}]"


@overload
def printable_node(node: Any, prefix: str = "", subgraphs: Literal[False] = False) -> str: ...
@overload
def printable_node(node: Any, prefix: str, subgraphs: Literal[True]) -> tuple[str, list[GraphProto]]: ...
def printable_node(node: Any, prefix: str = "", subgraphs: bool = False) -> str | tuple[str, list[GraphProto]]:
    """One node as onnx prints it: ``%y = Conv[kernel_shape = [3, 3]](%x, %w)``.

    Args:
        node: A NodeProto (onnxcore's or onnx's).
        prefix: Text put before the line.
        subgraphs: Also return the graphs its attributes hold, for the caller to print.
    """
    node = as_message(node, NodeProto, "printable_node")
    graphs: list[GraphProto] = []
    attrs = []
    for a in node.attribute:
        text, held = printable_attribute(a, True)
        attrs.append(text)
        graphs.extend(held)
    call = ", ".join(f"%{name}" for name in node.input)
    body = f"{node.op_type}[{', '.join(sorted(attrs))}]({call})" if node.attribute else f"{node.op_type}({call})"
    outputs = ", ".join(f"%{name}" for name in node.output)
    line = prefix + (f"{outputs} = {body}" if node.output else body)
    return (line, graphs) if subgraphs else line


def printable_graph(graph: Any, prefix: str = "") -> str:
    """A graph as onnx's ``printable_graph`` prints it: a header of its inputs, one line per node, ``return``,
    then each subgraph the nodes hold, printed the same way.

    Args:
        graph: A GraphProto (onnxcore's or onnx's).
        prefix: Text put before every line of this graph (not of its subgraphs, as onnx does).
    """
    graph = as_message(graph, GraphProto, "printable_graph")
    lines: list[str] = []
    header = ["graph", graph.name]
    initialized = {t.name for t in graph.initializer}
    if graph.input:
        plain = [printable_value_info(v) for v in graph.input if v.name not in initialized]
        with_init = [printable_value_info(v) for v in graph.input if v.name in initialized]
        header.append("(")
        if plain:
            lines.append(prefix + " ".join(header))
            lines.extend(f"{prefix}  {text}" for text in plain)
            header = []
        header.append(")")
        if with_init:
            header.append("optional inputs with matching initializers (")
            lines.append(prefix + " ".join(header))
            lines.extend(f"{prefix}  {text}" for text in with_init)
            header = [")"]
        if len(with_init) < len(initialized):
            # From IR version 4 an initializer need not be an input: those are listed too.
            inputs = {v.name for v in graph.input}
            header.append("initializers (")
            lines.append(prefix + " ".join(header))
            lines.extend(f"{prefix}  {printable_tensor_proto(t)}" for t in graph.initializer if t.name not in inputs)
            header = [")"]
    header.append("{")
    lines.append(prefix + " ".join(header))
    inner = prefix + "  "
    held: list[GraphProto] = []
    for node in graph.node:
        text, graphs = printable_node(node, inner, True)
        lines.append(text)
        held.extend(graphs)
    outputs = ", ".join(f"%{v.name}" for v in graph.output)
    lines.append(inner + ("return " + outputs if graph.output else "return"))
    lines.append(prefix + "}")
    lines.extend("\n" + printable_graph(g) for g in held)
    return "\n".join(lines)
