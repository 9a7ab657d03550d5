"""Models, graphs, nodes and functions written in the ONNX textual syntax (as ``onnx.printer`` writes it)."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

import numpy as np

from onnxcore.proto import (
    AttributeProto,
    FunctionProto,
    GraphProto,
    ModelProto,
    NodeProto,
    SparseTensorProto,
    TensorProto,
    TypeProto,
    ValueInfoProto,
)
from onnxcore.proto.bridge import as_message

__all__ = ["ATTRIBUTE_TYPE_NAMES", "ELEMENT_NAMES", "format_float", "to_text"]

# The element type names of the syntax: the data type's name in lower case.
ELEMENT_NAMES: dict[int, str] = {int(t): t.name.lower() for t in TensorProto.DataType}
ATTRIBUTE_TYPE_NAMES: dict[int, str] = {int(t): t.name.lower() for t in AttributeProto.AttributeType}
_PLAIN_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_STEP = "   "

# The typed field a tensor's values live in, by data type (Annex B, TensorProto).
_INT32_TYPES = frozenset({2, 3, 4, 5, 6, 9, 10, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28})
_RAW_DTYPES: dict[int, str] = {
    1: "<f4",
    2: "u1",
    3: "i1",
    4: "<u2",
    5: "<i2",
    6: "<i4",
    7: "<i8",
    9: "u1",
    10: "<u2",
    11: "<f8",
    12: "<u4",
    13: "<u8",
    14: "<f4",
    15: "<f8",
    16: "<u2",
}


def format_float(value: float, *, single: bool) -> str:
    """``value`` in the fewest characters that read back to it (float32 when ``single``), fixed or exponent.

    The shortest digits, placed in fixed notation or as ``d.ddde+XX``, whichever is shorter (fixed on a tie);
    an integral value in fixed notation is written exactly.
    """
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    shortest = str(np.float32(value)) if single else repr(float(value))
    sign, digits, exp = Decimal(shortest).as_tuple()
    assert isinstance(exp, int)
    ds = "".join(map(str, digits)).lstrip("0") or "0"
    if ds == "0":
        return "-0" if sign else "0"
    trailing = len(ds) - len(ds.rstrip("0"))
    ds = ds.rstrip("0") or "0"
    exp += trailing
    point = len(ds) + exp  # digits before the decimal point
    minus = "-" if sign else ""
    e = point - 1
    sci = ds[0] + ("." + ds[1:] if len(ds) > 1 else "") + ("e-" if e < 0 else "e+") + f"{abs(e):02d}"
    if exp >= 0:
        fixed = str(abs(int(value)))
    elif point > 0:
        fixed = ds[:point] + "." + ds[point:]
    else:
        fixed = "0." + "0" * -point + ds
    return minus + (fixed if len(fixed) <= len(sci) else sci)


def _quote(s: str) -> str:
    """``s`` as a quoted string of the syntax."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _id(name: str) -> str:
    return name if _PLAIN_ID.match(name) else _quote(name)


def _bytes_str(b: bytes) -> str:
    return _quote(b.decode("utf-8", errors="replace"))


def _type(tp: TypeProto | None) -> str:
    if tp is None:
        return ""
    which = tp.which_oneof("value")
    if which == "tensor_type" and tp.tensor_type is not None:
        return _tensor_type(tp.tensor_type.elem_type, tp.tensor_type.shape)
    if which == "sequence_type" and tp.sequence_type is not None:
        return f"seq({_type(tp.sequence_type.elem_type)})"
    if which == "map_type" and tp.map_type is not None:
        return f"map({ELEMENT_NAMES.get(tp.map_type.key_type, '?')}, {_type(tp.map_type.value_type)})"
    if which == "optional_type" and tp.optional_type is not None:
        return f"optional({_type(tp.optional_type.elem_type)})"
    if which == "sparse_tensor_type" and tp.sparse_tensor_type is not None:
        st = tp.sparse_tensor_type
        return f"sparse_tensor({_tensor_type(st.elem_type, st.shape)})"
    if which == "opaque_type" and tp.opaque_type is not None:
        o = tp.opaque_type
        return f"opaque({o.domain},{o.name})" if o.domain else f"opaque({o.name})"
    return ""


def _tensor_type(elem: int, shape: Any) -> str:
    name = ELEMENT_NAMES.get(elem, str(elem))
    if shape is None:
        return name + "[]"
    if not shape.dim:
        return name
    dims = []
    for d in shape.dim:
        if d.has("dim_value"):
            dims.append(str(d.dim_value))
        elif d.has("dim_param"):
            dims.append(_id(d.dim_param))
        else:
            dims.append("?")
    return f"{name}[{','.join(dims)}]"


def _tensor_values(t: TensorProto) -> list[Any]:
    """The values of ``t`` as the syntax writes them: numbers (raw octets decoded) or byte strings."""
    dt = t.data_type
    if t.has("raw_data") and dt in _RAW_DTYPES:
        arr = np.frombuffer(bytes(t.raw_data), dtype=_RAW_DTYPES[dt])
        return [float(x) for x in arr] if arr.dtype.kind == "f" else [int(x) for x in arr]
    if dt == 8:
        return list(t.string_data)
    if dt in (1, 14):
        return list(t.float_data)
    if dt in (11, 15):
        return list(t.double_data)
    if dt == 7:
        return list(t.int64_data)
    if dt in (12, 13):
        return list(t.uint64_data)
    if dt in _INT32_TYPES:
        return list(t.int32_data)
    return []


def _values(t: TensorProto, max_elements: int | None) -> str:
    vals = _tensor_values(t)
    more = max_elements is not None and len(vals) > max_elements
    if more:
        vals = vals[: max(max_elements or 0, 0)]
    if t.data_type == 8:
        body = ", ".join(_bytes_str(bytes(v)) for v in vals)
    else:
        single = t.data_type in (1, 14)
        body = ",".join(format_float(v, single=single) if isinstance(v, float) else str(v) for v in vals)
    if more:
        body += ("," if body else "") + "..."
    # onnx's printer puts a space before the values of a number tensor, none before strings.
    return ("{" if t.data_type == 8 else " {") + body + "}"


def _tensor_type_of(t: TensorProto) -> str:
    name = ELEMENT_NAMES.get(t.data_type, str(t.data_type))
    return name + (f"[{','.join(map(str, t.dims))}]" if t.dims else "")


def _tensor_constant(t: TensorProto, max_elements: int | None) -> str:
    name = f" {_id(t.name)}" if t.has("name") and t.name else ""
    return f"{_tensor_type_of(t)}{name}{_values(t, max_elements)}"


def _initializer(t: TensorProto, max_elements: int | None) -> str:
    head = f"{_tensor_type_of(t)} {_id(t.name)} = "
    if t.data_location == TensorProto.EXTERNAL:
        return head + "[" + ", ".join(f"{_quote(e.key)}: {_quote(e.value)}" for e in t.external_data) + "]"
    return head + _values(t, max_elements)


class _Printer:
    def __init__(self, max_elements: int | None) -> None:
        self.max_elements = max_elements

    def value_infos(self, vis: list[ValueInfoProto]) -> str:
        return ", ".join(f"{_type(v.type)} {_id(v.name)}" for v in vis)

    def graph(self, g: GraphProto, indent: str) -> str:
        out = [f"{_id(g.name)} ({self.value_infos(g.input)}) => ({self.value_infos(g.output)}) "]
        extra = [_initializer(t, self.max_elements) for t in g.initializer]
        extra += [f"{_type(v.type)} {_id(v.name)}" for v in g.value_info]
        if extra:
            out.append(f"\n{indent}{_STEP}<{', '.join(extra)}>\n")
        out.append("{\n")
        out.append(self.nodes(g.node, indent + _STEP))
        out.append(indent + "}")
        return "".join(out)

    def nodes(self, nodes: list[NodeProto], indent: str) -> str:
        return "".join(self.node(n, indent) + "\n" for n in nodes)

    def node(self, n: NodeProto, indent: str) -> str:
        out = [indent]
        if n.name:
            out.append(f"[{_id(n.name)}] ")
        out.append(", ".join(_id(o) for o in n.output))
        out.append(" = ")
        out.append((n.domain + "." if n.domain else "") + n.op_type + (":" + n.overload if n.overload else ""))
        inputs = f" ({', '.join(_id(i) for i in n.input)})"
        attrs = f" <{', '.join(self.attribute(a, indent) for a in n.attribute)}>" if n.attribute else ""
        late = any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in n.attribute)
        out.append(inputs + attrs if late else attrs + inputs)
        return "".join(out)

    def attribute(self, a: AttributeProto, indent: str) -> str:
        head = f"{_id(a.name)}: {ATTRIBUTE_TYPE_NAMES.get(a.type, str(a.type))} = "
        if a.ref_attr_name:
            return head + "@" + a.ref_attr_name
        return head + self.attribute_value(a, indent)

    def attribute_value(self, a: AttributeProto, indent: str) -> str:
        t = a.type
        if t == AttributeProto.FLOAT:
            return format_float(a.f, single=True)
        if t == AttributeProto.INT:
            return str(a.i)
        if t == AttributeProto.STRING:
            return _bytes_str(a.s)
        if t == AttributeProto.TENSOR and a.t is not None:
            return _tensor_constant(a.t, self.max_elements)
        if t == AttributeProto.GRAPH and a.g is not None:
            return self.graph(a.g, indent)
        if t == AttributeProto.SPARSE_TENSOR and a.sparse_tensor is not None:
            return self.sparse(a.sparse_tensor)
        if t == AttributeProto.TYPE_PROTO:
            return _type(a.tp)
        items: list[str]
        if t == AttributeProto.FLOATS:
            items = [format_float(v, single=True) for v in a.floats]
        elif t == AttributeProto.INTS:
            items = [str(v) for v in a.ints]
        elif t == AttributeProto.STRINGS:
            items = [_bytes_str(v) for v in a.strings]
        elif t == AttributeProto.TENSORS:
            items = [_tensor_constant(v, self.max_elements) for v in a.tensors]
        elif t == AttributeProto.GRAPHS:
            items = [self.graph(v, indent) for v in a.graphs]
        elif t == AttributeProto.SPARSE_TENSORS:
            items = [self.sparse(v) for v in a.sparse_tensors]
        elif t == AttributeProto.TYPE_PROTOS:
            items = [_type(v) for v in a.type_protos]
        else:
            return ""
        return "[" + ", ".join(items) + "]"

    def sparse(self, s: SparseTensorProto) -> str:
        # onnx's printer writes nothing here and its parser reads no sparse tensor: ours writes the pieces.
        values = _tensor_constant(s.values, self.max_elements) if s.values is not None else ""
        indices = _tensor_constant(s.indices, self.max_elements) if s.indices is not None else ""
        return f"sparse_tensor[{','.join(map(str, s.dims))}]({values}, {indices})"

    def function(self, f: FunctionProto) -> str:
        head = [f"domain: {_quote(f.domain)}"]  # always, as onnx's printer
        if f.overload:
            head.append(f"overload: {_quote(f.overload)}")
        head.append("opset_import: [" + ", ".join(f"{_quote(o.domain)} : {o.version}" for o in f.opset_import) + "]")
        out = ["<\n  " + ",\n  ".join(head) + "\n>\n", _id(f.name), " "]
        attrs = [_id(a) for a in f.attribute] + [self.attribute(a, "") for a in f.attribute_proto]
        if attrs:
            out.append("<" + ", ".join(attrs) + ">")
        out.append(f"({', '.join(_id(i) for i in f.input)}) => ({', '.join(_id(o) for o in f.output)})\n")
        if f.value_info:
            out.append(f"<{self.value_infos(f.value_info)}>\n")
        out.append("{\n" + self.nodes(f.node, _STEP) + "}")
        return "".join(out)

    def model(self, m: ModelProto) -> str:
        head = []
        for key in ("ir_version", "opset_import", "producer_name", "producer_version", "domain", "model_version"):
            if key not in ("ir_version", "opset_import") and not m.has(key):
                continue  # onnx's printer writes those two always, the others when present
            v = getattr(m, key)
            if key == "opset_import":
                head.append("opset_import: [" + ", ".join(f"{_quote(o.domain)} : {o.version}" for o in v) + "]")
            else:
                head.append(f"{key}: {_quote(v) if isinstance(v, str) else v}")
        if m.has("doc_string"):
            head.append(f"doc_string: {_quote(m.doc_string)}")
        if m.metadata_props:
            head.append(
                "metadata_props: [" + ", ".join(f"{_quote(p.key)}: {_quote(p.value)}" for p in m.metadata_props) + "]"
            )
        out = ["<\n   " + ",\n   ".join(head) + "\n>\n"]
        out.append(self.graph(m.graph if m.graph is not None else GraphProto(), ""))
        for f in m.functions:
            out.append("\n" + self.function(f))
        return "".join(out)


def to_text(obj: Any, *, max_elements: int | None = None) -> str:
    """``obj`` (a model, graph, node or function, ours or the onnx package's) in the ONNX textual syntax.

    Args:
        obj: A ``ModelProto``, ``GraphProto``, ``NodeProto`` or ``FunctionProto``.
        max_elements: When given, a tensor of more elements shows only its first ``max_elements`` values and
            ``...`` (a summary for reading, which the parser refuses); by default every value is written.

    Returns:
        The text: what :mod:`onnxcore.text`'s parser (and ``onnx.parser``) reads back.
    """
    msg = as_message(obj, (ModelProto, GraphProto, NodeProto, FunctionProto), "to_text")
    p = _Printer(max_elements)
    if isinstance(msg, ModelProto):
        return p.model(msg)
    if isinstance(msg, GraphProto):
        return p.graph(msg, "")
    if isinstance(msg, NodeProto):
        return p.node(msg, _STEP) + "\n"
    assert isinstance(msg, FunctionProto)
    return p.function(msg)
