"""The ONNX textual syntax read into our messages, as ``onnx.parser`` reads it (docs: onnx/docs/Syntax.md)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from onnxcore.proto import (
    AttributeProto,
    FunctionProto,
    GraphProto,
    ModelProto,
    NodeProto,
    OperatorSetIdProto,
    SparseTensorProto,
    StringStringEntryProto,
    TensorProto,
    TensorShapeProto,
    TypeProto,
    ValueInfoProto,
)
from onnxcore.text.lexer import TextSyntaxError, Token, tokenize
from onnxcore.text.printer import ATTRIBUTE_TYPE_NAMES, ELEMENT_NAMES

__all__ = ["parse_function", "parse_graph", "parse_model", "parse_node"]

_ELEMENTS = {name: code for code, name in ELEMENT_NAMES.items()}  # "undefined" (0) too: a type written so reads back
_ATTR_TYPES = {name: code for code, name in ATTRIBUTE_TYPE_NAMES.items() if code}
_FLOATS = (1, 11, 14, 15)
_MODEL_INTS = ("ir_version", "model_version")
_MODEL_STRS = ("producer_name", "producer_version", "domain", "doc_string")
_LIST_OF: dict[int, int] = {
    AttributeProto.FLOATS: AttributeProto.FLOAT,
    AttributeProto.INTS: AttributeProto.INT,
    AttributeProto.STRINGS: AttributeProto.STRING,
    AttributeProto.TENSORS: AttributeProto.TENSOR,
    AttributeProto.GRAPHS: AttributeProto.GRAPH,
    AttributeProto.SPARSE_TENSORS: AttributeProto.SPARSE_TENSOR,
    AttributeProto.TYPE_PROTOS: AttributeProto.TYPE_PROTO,
}
_LIST_FIELD: dict[int, str] = {
    AttributeProto.FLOATS: "floats",
    AttributeProto.INTS: "ints",
    AttributeProto.STRINGS: "strings",
    AttributeProto.TENSORS: "tensors",
    AttributeProto.GRAPHS: "graphs",
    AttributeProto.SPARSE_TENSORS: "sparse_tensors",
    AttributeProto.TYPE_PROTOS: "type_protos",
}


def _describe(tok: Token) -> str:
    if tok.kind == "eof":
        return "the end of the text"
    if tok.kind == "str":
        return f"string {tok.text!r}"
    return repr(tok.text)


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = tokenize(text)
        self.pos = 0

    # -- tokens --------------------------------------------------------------------------------------------

    @property
    def tok(self) -> Token:
        return self.toks[self.pos]

    def peek(self, ahead: int = 1) -> Token:
        return self.toks[min(self.pos + ahead, len(self.toks) - 1)]

    def error(self, message: str, tok: Token | None = None) -> TextSyntaxError:
        t = tok or self.tok
        return TextSyntaxError(f"{message}, found {_describe(t)}", t.line, t.column)

    def at(self, kind: str) -> bool:
        return self.tok.kind == kind

    def take(self, kind: str) -> bool:
        if self.tok.kind == kind:
            self.pos += 1
            return True
        return False

    def expect(self, kind: str, what: str | None = None) -> Token:
        t = self.tok
        if t.kind != kind:
            raise self.error(f"expected {what or repr(kind)}")
        self.pos += 1
        return t

    def end(self) -> None:
        if not self.at("eof"):
            raise self.error("expected the end of the text")

    def ident(self, what: str = "a name") -> str:
        return self.expect("id", what).text

    def quotable(self, what: str = "a name") -> str:
        if self.at("str"):
            return self.expect("str").text
        return self.ident(what)

    def qualified(self) -> str:
        parts = [self.ident("an operator name")]
        while self.take("."):
            parts.append(self.ident("a name after '.'"))
        return ".".join(parts)

    def string(self) -> str:
        return self.expect("str", "a quoted string").text

    def integer(self) -> int:
        return int(self.expect("int", "an integer").text)

    def number(self, *, floating: bool) -> int | float:
        t = self.tok
        negative = False
        if t.kind in ("-", "+") and self.peek().kind == "id":
            negative = t.kind == "-"
            self.pos += 1
            t = self.tok
        if t.kind == "id" and t.text in ("inf", "nan", "infinity"):
            self.pos += 1
            v = math.inf if t.text != "nan" else math.nan
            return -v if negative else v
        if t.kind == "int":
            self.pos += 1
            return float(t.text) if floating else int(t.text)
        if t.kind == "float" and floating:
            self.pos += 1
            return float(t.text)
        raise self.error("expected a float" if floating else "expected an integer")

    # -- types ---------------------------------------------------------------------------------------------

    def elem_type(self) -> int:
        t = self.tok
        name = self.ident("an element type")
        if name not in _ELEMENTS:
            raise TextSyntaxError(f"unknown element type {name!r}", t.line, t.column)
        return _ELEMENTS[name]

    def is_type_start(self) -> bool:
        t = self.tok
        if t.kind != "id":
            return False
        if t.text in _ELEMENTS:
            return True
        return t.text in ("seq", "map", "optional", "sparse_tensor", "opaque") and self.peek().kind == "("

    def shape(self) -> TensorShapeProto | None:
        if not self.take("["):
            return TensorShapeProto()
        if self.take("]"):
            return None
        dims = []
        while True:
            if self.take("?"):
                dims.append(TensorShapeProto.Dimension())
            elif self.at("int"):
                dims.append(TensorShapeProto.Dimension(dim_value=self.integer()))
            else:
                dims.append(TensorShapeProto.Dimension(dim_param=self.quotable("a dimension")))
            if not self.take(","):
                break
        self.expect("]", "',' or ']' in the dimensions")
        return TensorShapeProto(dim=dims)

    def type(self) -> TypeProto:
        t = self.tok
        name = self.ident("a type")
        if name in _ELEMENTS:
            return TypeProto(tensor_type=TypeProto.Tensor(elem_type=_ELEMENTS[name], shape=self.shape()))
        if name not in ("seq", "optional", "map", "sparse_tensor", "opaque"):
            raise TextSyntaxError(f"unknown type {name!r}", t.line, t.column)
        self.expect("(", f"'(' after {name!r}")
        if name == "seq":
            out = TypeProto(sequence_type=TypeProto.Sequence(elem_type=self.type()))
        elif name == "optional":
            out = TypeProto(optional_type=TypeProto.Optional(elem_type=self.type()))
        elif name == "map":
            key = self.elem_type()
            self.expect(",", "',' after the key type")
            out = TypeProto(map_type=TypeProto.Map(key_type=key, value_type=self.type()))
        elif name == "sparse_tensor":
            elem = self.elem_type()
            out = TypeProto(sparse_tensor_type=TypeProto.SparseTensor(elem_type=elem, shape=self.shape()))
        else:  # opaque(), opaque(name), opaque(domain, name) and (as onnx prints a nameless one) opaque(domain,)
            first = self.qualified() if self.at("id") else ""
            if self.take(","):
                second = self.qualified() if self.at("id") else ""
                out = TypeProto(opaque_type=TypeProto.Opaque(domain=first, name=second))
            else:
                out = TypeProto(opaque_type=TypeProto.Opaque(name=first) if first else TypeProto.Opaque())
        self.expect(")", "')' closing the type")
        return out

    def value_info(self) -> ValueInfoProto:
        tp = self.type()
        return ValueInfoProto(name=self.quotable(), type=tp)

    def maybe_typed(self) -> ValueInfoProto:
        """``type name`` or a bare ``name`` (a value info without a type)."""
        if self.is_type_start() or (self.at("id") and self.peek().kind in ("[", "id", "str")):
            return self.value_info()  # (an unknown type name is reported as such)
        return ValueInfoProto(name=self.quotable())

    # -- tensors -------------------------------------------------------------------------------------------

    def tensor_data(self, t: TensorProto) -> None:
        """``{values}`` or the external-data list ``["location": "...", ...]`` into ``t``."""
        if self.take("["):
            entries = []
            while not self.at("]"):
                key = self.string()
                self.expect(":", "':' after the key")
                entries.append(StringStringEntryProto(key=key, value=self.string()))
                if not self.take(","):
                    break
            self.expect("]", "',' or ']' in the external data")
            t.external_data = entries
            t.data_location = TensorProto.EXTERNAL
            t.mark_present("data_location")
            return
        self.expect("{", "'{' opening the values")
        dt = t.data_type
        vals: list[Any] = []
        while not self.at("}"):
            if dt == TensorProto.STRING:
                vals.append(self.string().encode("utf-8"))
            else:
                vals.append(self.number(floating=dt in _FLOATS))
            if not self.take(","):
                break
        self.expect("}", "',' or '}' in the values")
        if dt == TensorProto.STRING:
            t.string_data = vals
        elif dt in (TensorProto.FLOAT, TensorProto.COMPLEX64):
            t.float_data = [_single(v) for v in vals]
        elif dt in (TensorProto.DOUBLE, TensorProto.COMPLEX128):
            t.double_data = vals
        elif dt == TensorProto.INT64:
            t.int64_data = vals
        elif dt in (TensorProto.UINT32, TensorProto.UINT64):
            t.uint64_data = vals
        else:
            t.int32_data = vals

    def tensor_type_head(self) -> TensorProto:
        dt = self.elem_type()
        dims: list[int] = []
        if self.take("["):
            while not self.at("]"):
                dims.append(self.integer())
                if not self.take(","):
                    break
            self.expect("]", "',' or ']' in the dimensions")
        return TensorProto(data_type=dt, dims=dims)

    def tensor_constant(self) -> TensorProto:
        t = self.tensor_type_head()
        t.name = self.quotable() if self.at("id") or self.at("str") else ""
        t.mark_present("name")  # as onnx's parser: a name, empty when the text gives none
        self.take("=")
        self.tensor_data(t)
        return t

    def sparse_tensor(self) -> SparseTensorProto:
        # Our printer's form (onnx's syntax has none): sparse_tensor[dims](values, indices).
        self.expect("id", "'sparse_tensor'")
        dims: list[int] = []
        self.expect("[", "'[' after sparse_tensor")
        while not self.at("]"):
            dims.append(self.integer())
            if not self.take(","):
                break
        self.expect("]", "']' closing the dimensions")
        self.expect("(", "'(' before the values")
        values = self.tensor_constant()
        self.expect(",", "',' between the values and the indices")
        indices = self.tensor_constant()
        self.expect(")", "')' after the indices")
        return SparseTensorProto(values=values, indices=indices, dims=dims)

    # -- attributes ----------------------------------------------------------------------------------------

    def attribute(self) -> AttributeProto:
        name = self.ident("an attribute name")
        atype = 0
        if self.take(":"):
            t = self.tok
            tname = self.ident("an attribute type")
            if tname not in _ATTR_TYPES:
                raise TextSyntaxError(f"unknown attribute type {tname!r}", t.line, t.column)
            atype = _ATTR_TYPES[tname]
        self.expect("=", f"'=' after attribute {name!r}")
        if self.take("@"):
            ref = self.ident("the name of the attribute referred to")
            return AttributeProto(name=name, type=atype, ref_attr_name=ref)
        a = AttributeProto(name=name)
        if self.at("["):
            opening = self.tok
            self.pos += 1
            elem = _LIST_OF.get(atype, 0)
            items: list[tuple[int, Any]] = []
            while not self.at("]"):
                items.append(self.single_value(elem))
                if not self.take(","):
                    break
            self.expect("]", "',' or ']' in the list")
            if not atype:
                kinds = {k for k, _ in items}
                if kinds == {AttributeProto.INT, AttributeProto.FLOAT}:
                    kinds = {AttributeProto.FLOAT}
                if len(kinds) != 1:
                    raise TextSyntaxError(
                        f"cannot tell the type of list attribute {name!r}; write it with its type ({name}: ints = ...)",
                        opening.line,
                        opening.column,
                    )
                single = kinds.pop()
                atype = next(k for k, v in _LIST_OF.items() if v == single)
            field = _LIST_FIELD.get(atype)
            if field is None:
                raise self.error(f"a list given for attribute {name!r} of a single type")
            setattr(a, field, [_single(v) if atype == AttributeProto.FLOATS else v for _, v in items])
        else:
            kind, value = self.single_value(atype)
            atype = atype or kind
            _set_single(a, atype, value)
        a.type = atype
        a.mark_present("type")
        return a

    def single_value(self, atype: int) -> tuple[int, Any]:
        t = self.tok
        if atype == AttributeProto.TYPE_PROTO:
            return atype, self.type()
        if atype == AttributeProto.SPARSE_TENSOR:
            return atype, self.sparse_tensor()
        if atype == AttributeProto.GRAPH:
            return atype, self.graph()
        if atype == AttributeProto.TENSOR:
            return atype, self.tensor_constant()
        if atype == AttributeProto.FLOAT:
            return atype, self.number(floating=True)
        if atype == AttributeProto.INT:
            return atype, self.number(floating=False)
        if atype == AttributeProto.STRING:
            return atype, self.string().encode("utf-8")
        if t.kind == "str":
            if self.peek().kind == "(":
                return AttributeProto.GRAPH, self.graph()
            return AttributeProto.STRING, self.string().encode("utf-8")
        if t.kind == "int":
            return AttributeProto.INT, self.number(floating=False)
        if t.kind == "float" or t.kind in ("-", "+"):
            return AttributeProto.FLOAT, self.number(floating=True)
        if t.kind == "id":
            if t.text in _ELEMENTS:
                return AttributeProto.TENSOR, self.tensor_constant()
            if t.text in ("inf", "nan"):
                return AttributeProto.FLOAT, self.number(floating=True)
            return AttributeProto.GRAPH, self.graph()
        raise self.error("expected an attribute value")

    def attributes(self) -> list[AttributeProto]:
        self.expect("<", "'<'")
        out = []
        while True:
            out.append(self.attribute())
            if not self.take(","):
                break
        self.expect(">", "',' or '>' after the attributes")
        return out

    # -- nodes and graphs ----------------------------------------------------------------------------------

    def names(self, close: str) -> list[str]:
        """A node's comma-separated input or output names up to ``close``, as onnx's parser reads them: a place
        left blank is an empty name (an optional input or output left out: ``Resize(x, , , sizes)``), the same
        as a quoted ``""``; a comma just before ``close`` ends the list without adding a name."""
        out: list[str] = []
        while not self.at(close):
            out.append("" if self.at(",") else self.quotable())
            if not self.take(","):
                break
        return out

    def node(self) -> NodeProto:
        n = NodeProto()
        if self.take("["):
            n.name = self.quotable("a node name")
            n.mark_present("name")
            self.expect("]", "']' after the node name")
        n.output = self.names("=")
        self.expect("=", "'=' after the outputs of a node" if n.output else "'=' or an output name")
        qualified = self.qualified()
        domain, _, op = qualified.rpartition(".")
        n.op_type = op
        n.domain = domain
        n.mark_present("op_type")
        n.mark_present("domain")
        if self.take(":"):
            n.overload = self.ident("an overload name")
            n.mark_present("overload")
        if self.at("<"):
            n.attribute = self.attributes()
        self.expect("(", f"'(' opening the inputs of {qualified!r}")
        n.input = self.names(")")
        self.expect(")", "',' or ')' in the inputs")
        if self.at("<") and not n.attribute:
            n.attribute = self.attributes()
        return n

    def nodes(self) -> list[NodeProto]:
        self.expect("{", "'{' opening the nodes")
        out = []
        while not self.take("}"):
            if self.at("eof"):
                raise self.error("expected '}' closing the nodes")
            out.append(self.node())
        return out

    def typed_entries(self, close: str, g: GraphProto | None, into: list[ValueInfoProto]) -> None:
        """``type name [= data]`` entries up to ``close``: value infos into ``into``, data into ``g``."""
        while not self.at(close):
            start = self.pos
            vi = self.maybe_typed()
            if self.take("="):
                if g is None:
                    raise self.error("an initializer outside a graph")
                self.pos = start
                t = self.tensor_type_head()
                t.name = self.quotable()
                t.mark_present("name")
                self.expect("=", "'='")
                self.tensor_data(t)
                g.initializer.append(t)
                if close == ")":
                    into.append(vi)
            else:
                into.append(vi)
            if not self.take(","):
                break
        self.expect(close, f"',' or {close!r}")

    def graph(self) -> GraphProto:
        g = GraphProto(name=self.quotable("a graph name"))
        self.expect("(", "'(' opening the graph inputs")
        self.typed_entries(")", g, g.input)
        self.expect("=>", "'=>' after the graph inputs")
        self.expect("(", "'(' opening the graph outputs")
        while not self.at(")"):
            g.output.append(self.maybe_typed())
            if not self.take(","):
                break
        self.expect(")", "',' or ')' in the graph outputs")
        if self.take("<"):
            self.typed_entries(">", g, g.value_info)
        g.node = self.nodes()
        return g

    def opsets(self) -> list[OperatorSetIdProto]:
        self.expect("[", "'[' opening the opset imports")
        out = []
        while not self.at("]"):
            domain = self.string()
            self.expect(":", "':' after the domain")
            out.append(OperatorSetIdProto(domain=domain, version=self.integer()))
            if not self.take(","):
                break
        self.expect("]", "',' or ']' in the opset imports")
        return out

    def props(self) -> list[StringStringEntryProto]:
        self.expect("[", "'['")
        out = []
        while not self.at("]"):
            key = self.string()
            self.expect(":", "':' after the key")
            out.append(StringStringEntryProto(key=key, value=self.string()))
            if not self.take(","):
                break
        self.expect("]", "',' or ']'")
        return out

    def header(self, msg: ModelProto | FunctionProto) -> None:
        if not self.take("<"):
            return
        while not self.at(">"):
            t = self.tok
            key = self.ident("a key")
            self.expect(":", f"':' after {key!r}")
            if key == "opset_import":
                msg.opset_import = self.opsets()
            elif isinstance(msg, ModelProto) and key == "metadata_props":
                msg.metadata_props = self.props()
            elif isinstance(msg, ModelProto) and key in _MODEL_INTS:
                setattr(msg, key, self.integer())
                msg.mark_present(key)
            elif key in _MODEL_STRS or (isinstance(msg, FunctionProto) and key == "overload"):
                if isinstance(msg, FunctionProto) and key not in ("domain", "overload", "doc_string"):
                    raise TextSyntaxError(f"a function has no {key!r}", t.line, t.column)
                setattr(msg, key, self.string())
                msg.mark_present(key)
            else:
                raise TextSyntaxError(f"unknown key {key!r}", t.line, t.column)
            if not self.take(","):
                break
        self.expect(">", "',' or '>' after the keys")

    def function(self) -> FunctionProto:
        f = FunctionProto()
        self.header(f)
        f.name = self.quotable("a function name")
        f.mark_present("name")
        if self.take("<"):
            while True:
                if self.peek().kind in (":", "="):
                    f.attribute_proto.append(self.attribute())
                else:
                    f.attribute.append(self.ident("an attribute name"))
                if not self.take(","):
                    break
            self.expect(">", "',' or '>' after the attributes")
        for names, close in ((f.input, ")"), (f.output, ")")):
            self.expect("(", "'('")
            while not self.at(close):
                if self.is_type_start():
                    vi = self.value_info()
                    f.value_info.append(vi)
                    names.append(vi.name)
                else:
                    names.append(self.quotable())
                if not self.take(","):
                    break
            self.expect(close, f"',' or {close!r}")
            if names is f.input:
                self.expect("=>", "'=>' after the function inputs")
        if self.take("<"):
            while not self.at(">"):
                f.value_info.append(self.value_info())
                if not self.take(","):
                    break
            self.expect(">", "',' or '>' after the value infos")
        f.node = self.nodes()
        return f

    def model(self) -> ModelProto:
        m = ModelProto()
        self.header(m)
        m.graph = self.graph()
        while not self.at("eof"):
            m.functions.append(self.function())
        return m


def _single(v: float) -> float:
    """``v`` rounded to float32, as a float field holds it."""
    return float(np.float32(v))


def _set_single(a: AttributeProto, atype: int, value: Any) -> None:
    if atype == AttributeProto.FLOAT:
        a.f = _single(value)
        a.mark_present("f")
    elif atype == AttributeProto.INT:
        a.i = int(value)
        a.mark_present("i")
    elif atype == AttributeProto.STRING:
        a.s = value
        a.mark_present("s")
    elif atype == AttributeProto.TENSOR:
        a.t = value
    elif atype == AttributeProto.GRAPH:
        a.g = value
    elif atype == AttributeProto.SPARSE_TENSOR:
        a.sparse_tensor = value
    elif atype == AttributeProto.TYPE_PROTO:
        a.tp = value
    else:
        raise ValueError(f"attribute type {atype} takes a list")


def parse_model(text: str) -> ModelProto:
    """A model from its text: ``<key: value, ...> graph function*``.

    Raises:
        TextSyntaxError: The text is not a model; the message names the line and column.
    """
    p = _Parser(text)
    m = p.model()
    p.end()
    return m


def parse_graph(text: str) -> GraphProto:
    """A graph from its text: ``name (inputs) => (outputs) <initializers> { nodes }``.

    Raises:
        TextSyntaxError: The text is not a graph; the message names the line and column.
    """
    p = _Parser(text)
    g = p.graph()
    p.end()
    return g


def parse_node(text: str) -> NodeProto:
    """A node from its text: ``[name] outputs = domain.Op <attributes> (inputs)``.

    Raises:
        TextSyntaxError: The text is not a node; the message names the line and column.
    """
    p = _Parser(text)
    n = p.node()
    p.end()
    return n


def parse_function(text: str) -> FunctionProto:
    """A function from its text: ``<domain: ..., opset_import: [...]> name <attributes> (in) => (out) {...}``.

    Raises:
        TextSyntaxError: The text is not a function; the message names the line and column.
    """
    p = _Parser(text)
    f = p.function()
    p.end()
    return f
