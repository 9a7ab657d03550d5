"""Make messages with the names and signatures of ``onnx.helper``: port a script by changing its import.

Every function returns onnxcore's messages (Annex B record classes), which :func:`onnxcore.to_onnx` turns into
the onnx package's. Messages given as arguments may be onnxcore's or onnx's. What differs from onnx's helper,
on purpose:

* :func:`make_model` declares the least IR version the model needs (:func:`least_ir_version`, Table 12 and the
  imported operator set versions) rather than the newest, and, when no ``opset_imports`` are given, imports
  every domain the graph's nodes use: a domain ONNX 1-2 defines at the newest version onnxcore knows, any
  other at version 1.
* An attribute list of ``bool`` is taken as ``INTS`` (onnx refuses it).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from onnxcore.build.helper_values import (
    get_all_tensor_dtypes,
    make_map,
    make_optional,
    make_sequence,
    make_training_info,
    tensor_dtype_to_field,
    tensor_dtype_to_storage_tensor_dtype,
    tensor_dtype_to_string,
)
from onnxcore.build.ir_version import least_ir_version
from onnxcore.build.printable import (
    printable_attribute,
    printable_dim,
    printable_graph,
    printable_node,
    printable_tensor_proto,
    printable_type,
    printable_value_info,
)
from onnxcore.defs.binding import canonical_domain, domain_versions
from onnxcore.errors import MessageTypeError, OnnxCoreError
from onnxcore.proto.bridge import as_message, is_onnx_message
from onnxcore.proto.message import Message
from onnxcore.proto.message_walk import walk_messages
from onnxcore.proto.messages import (
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
    TrainingInfoProto,
    TypeProto,
    ValueInfoProto,
)
from onnxcore.types.convert import cast_array
from onnxcore.types.elements import ElementType, element_type
from onnxcore.types.tensors import from_array

__all__ = [
    "AttributeTypeError",
    "HelperError",
    "get_all_tensor_dtypes",
    "get_attribute_value",
    "get_node_attr_value",
    "least_ir_version",
    "make_attribute",
    "make_attribute_ref",
    "make_empty_tensor_value_info",
    "make_function",
    "make_graph",
    "make_map",
    "make_map_type_proto",
    "make_model",
    "make_node",
    "make_operatorsetid",
    "make_opsetid",
    "make_optional",
    "make_optional_type_proto",
    "make_sequence",
    "make_sequence_type_proto",
    "make_sparse_tensor",
    "make_sparse_tensor_type_proto",
    "make_sparse_tensor_value_info",
    "make_tensor",
    "make_tensor_sequence_value_info",
    "make_tensor_type_proto",
    "make_tensor_value_info",
    "make_training_info",
    "make_value_info",
    "np_dtype_to_tensor_dtype",
    "printable_attribute",
    "printable_dim",
    "printable_graph",
    "printable_node",
    "printable_tensor_proto",
    "printable_type",
    "printable_value_info",
    "set_metadata_props",
    "set_model_props",
    "strip_doc_string",
    "tensor_dtype_to_field",
    "tensor_dtype_to_np_dtype",
    "tensor_dtype_to_storage_tensor_dtype",
    "tensor_dtype_to_string",
]

AT = AttributeProto.AttributeType
Dims = Sequence[str | int | None]


class HelperError(OnnxCoreError, ValueError):
    """A value the helpers cannot make a message of (a count that does not match ``dims``, an empty list)."""


class AttributeTypeError(OnnxCoreError, TypeError):
    """An attribute value of no attribute type, or of another type than the ``attr_type`` given."""


# ------------------------------------------------------------------------------------------- attributes

# The message kinds an attribute holds: (class, singular type, plural type, singular field, plural field).
_MESSAGE_KINDS: tuple[tuple[type[Message], AT, AT, str, str], ...] = (
    (TensorProto, AT.TENSOR, AT.TENSORS, "t", "tensors"),
    (GraphProto, AT.GRAPH, AT.GRAPHS, "g", "graphs"),
    (SparseTensorProto, AT.SPARSE_TENSOR, AT.SPARSE_TENSORS, "sparse_tensor", "sparse_tensors"),
    (TypeProto, AT.TYPE_PROTO, AT.TYPE_PROTOS, "tp", "type_protos"),
)
_KNOWN = tuple(k[0] for k in _MESSAGE_KINDS)


def _as_bytes(v: str | bytes) -> bytes:
    try:
        return v.encode("utf-8") if isinstance(v, str) else bytes(v)
    except UnicodeEncodeError as e:  # a lone surrogate: not text a model can hold (Clause 12.3, UTF-8)
        raise HelperError(f"{v!r:.60} is not valid Unicode text: {e.reason}") from None


def _message(v: Any) -> Message | None:
    if isinstance(v, Message) or is_onnx_message(v):
        return as_message(v, _KNOWN, "make_attribute")
    return None


def _kind(v: Any) -> str:
    """``int``, ``float``, ``str``, a message class name, or ``""`` for no kind."""
    if isinstance(v, numbers.Integral | np.bool_):
        return "int"
    if isinstance(v, numbers.Real):
        return "float"
    if isinstance(v, str | bytes):
        return "str"
    m = _message(v)
    return "" if m is None else type(m).__name__


def make_attribute(key: str, value: Any, doc_string: str | None = None, attr_type: int | None = None) -> AttributeProto:
    """An attribute whose type is taken from the Python value.

    ``int`` and ``bool`` give INT, ``float`` FLOAT, ``str`` and ``bytes`` STRING (``str`` encoded as UTF-8), a
    ``TensorProto`` TENSOR, a ``GraphProto`` GRAPH, a ``SparseTensorProto`` SPARSE_TENSOR, a ``TypeProto``
    TYPE_PROTO; a list (any iterable, a numpy array included, as in onnx) of them the plural type (ints and
    floats mixed give FLOATS).

    Args:
        key: The attribute's name.
        value: Its value; an empty iterable needs ``attr_type``.
        doc_string: Its documentation (left absent when empty).
        attr_type: The type; when given, the value must be of it.

    Raises:
        AttributeTypeError: A value of no attribute type, a list mixing kinds, or a type other than ``attr_type``.
        HelperError: An empty list without ``attr_type``.
    """
    attr = AttributeProto(name=key)
    if doc_string:
        attr.doc_string = doc_string
    kind = _kind(value)
    if kind == "int":
        attr.i, attr.type = int(value), AT.INT
        attr.mark_present("i")  # 0 is written too, as onnx writes it
    elif kind == "float":
        attr.f, attr.type = float(value), AT.FLOAT
        attr.mark_present("f")
    elif kind == "str":
        attr.s, attr.type = _as_bytes(value), AT.STRING
        attr.mark_present("s")
    elif kind:
        msg = _message(value)
        for cls, one, _many, field, _fields in _MESSAGE_KINDS:
            if isinstance(msg, cls):
                setattr(attr, field, msg)
                attr.type = one
    elif isinstance(value, Iterable):
        _set_list(attr, list(value), attr_type)
    else:
        raise AttributeTypeError(f"attribute {key!r}: a {type(value).__name__} is not a value of any attribute type")
    attr.mark_present("type")
    if attr_type is not None and attr.type != attr_type:
        raise AttributeTypeError(
            f"attribute {key!r}: the value is of type {AT(attr.type).name}, not the {_type_name(attr_type)} given"
        )
    return attr


def _type_name(t: int) -> str:
    try:
        return AT(t).name
    except ValueError:
        return str(t)


def _set_list(attr: AttributeProto, items: list[Any], attr_type: int | None) -> None:
    if not items:
        if attr_type is None:
            raise HelperError(f"attribute {attr.name!r}: an empty list needs attr_type (its type cannot be inferred)")
        attr.type = attr_type
        return
    kinds = {_kind(v) for v in items}
    if kinds <= {"int"}:
        attr.ints, attr.type = [int(v) for v in items], AT.INTS
    elif kinds <= {"int", "float"}:
        attr.floats, attr.type = [float(v) for v in items], AT.FLOATS
    elif kinds == {"str"}:
        attr.strings, attr.type = [_as_bytes(v) for v in items], AT.STRINGS
    else:
        for cls, _one, many, _field, fields in _MESSAGE_KINDS:
            if kinds == {cls.__name__}:
                setattr(attr, fields, attr._LISTS[fields]([_message(v) for v in items]))
                attr.type = many
                return
        raise AttributeTypeError(f"attribute {attr.name!r}: the list's items are of no one attribute type")


def make_attribute_ref(
    name: str, attr_type: int, doc_string: str | None = None, *, ref_attr_name: str | None = None
) -> AttributeProto:
    """An attribute of a node in a function body that takes the value of the function's attribute.

    Args:
        name: The attribute's name at the node.
        attr_type: Its type.
        doc_string: Its documentation (left absent when empty).
        ref_attr_name: The function's attribute it refers to; ``name`` by default.
    """
    attr = AttributeProto(name=name, type=attr_type, ref_attr_name=ref_attr_name or name)
    if doc_string:
        attr.doc_string = doc_string
    return attr


def get_attribute_value(attr: AttributeProto | Any) -> Any:
    """The value an attribute holds, by its type (a list for the plural types; ``bytes`` for STRING)."""
    a = as_message(attr, AttributeProto, "get_attribute_value")
    scalars = {AT.FLOAT: "f", AT.INT: "i", AT.STRING: "s", AT.FLOATS: "floats", AT.INTS: "ints", AT.STRINGS: "strings"}
    field = scalars.get(a.type)  # type: ignore[call-overload]
    for _cls, one, many, single, plural in _MESSAGE_KINDS:
        if a.type == one:
            field = single
        elif a.type == many:
            field = plural
    if field is None:
        raise AttributeTypeError(f"attribute {a.name!r}: type {a.type} holds no value")
    return getattr(a, field)


def get_node_attr_value(node: NodeProto | Any, attr_name: str) -> Any:
    """The value of the node's attribute ``attr_name`` (:func:`get_attribute_value`).

    Raises:
        HelperError: the node has no such attribute, or more than one (a ``ValueError``, as onnx raises).
    """
    n = as_message(node, NodeProto, "get_node_attr_value")
    found = [a for a in n.attribute if a.name == attr_name]
    if len(found) != 1:
        how = "no" if not found else "more than one"
        raise HelperError(f"node {n.name or n.op_type!r} has {how} attribute {attr_name!r}")
    return get_attribute_value(found[0])


def strip_doc_string(proto: Message | Any) -> None:
    """Empty every ``doc_string`` of ``proto`` and of the messages it holds, in place (onnxcore's messages only).

    Raises:
        MessageTypeError: ``proto`` is not one of our messages (an onnx object cannot be changed from here).
    """
    if not isinstance(proto, Message):
        raise MessageTypeError(f"strip_doc_string changes onnxcore's messages in place, got {type(proto).__name__}")
    walk = walk_messages(proto)
    for msg, *_ in walk.entries:
        if "doc_string" in msg._SPEC.by_name:
            msg.clear_field("doc_string")


# ----------------------------------------------------------------------------------- nodes, graphs, models


def make_node(
    op_type: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    name: str | None = None,
    doc_string: str | None = None,
    domain: str | None = None,
    overload: str | None = None,
    **kwargs: Any,
) -> NodeProto:
    """A node.

    Args:
        op_type: The operator (or model-local function) it calls.
        inputs: Its input names (``""`` for an omitted optional input).
        outputs: Its output names.
        name: Its name (left absent when empty).
        doc_string: Its documentation (left absent when empty).
        domain: Its domain; absent (the default domain) when None.
        overload: The overload of a model-local function it calls.
        **kwargs: Its attributes, as :func:`make_attribute` takes them, in name order; None values are left out.
    """
    for what, v in (("op_type", op_type), ("name", name), ("doc_string", doc_string), ("domain", domain),
                    ("overload", overload)):  # fmt: skip
        if v is not None and not isinstance(v, str):
            raise HelperError(f"make_node: {what} must be a str, got {type(v).__name__}")
    ins, outs = _items(inputs, "make_node", "inputs"), _items(outputs, "make_node", "outputs")
    for v in (*ins, *outs):
        if not isinstance(v, str):
            raise HelperError(f"make_node: input and output names are str, got {v!r:.60}")
    node = NodeProto(op_type=op_type, input=ins, output=outs, domain=domain, overload=overload)
    if name:
        node.name = name
    if doc_string:
        node.doc_string = doc_string
    node.attribute = AttributeProto._List(make_attribute(k, v) for k, v in sorted(kwargs.items()) if v is not None)
    return node


def _items(items: Any, caller: str, what: str) -> list[Any]:
    """``items`` as a list, refused with :class:`HelperError` when it is not a sequence of them (a number, a
    string, an array whose truth value numpy will not tell)."""
    if items is None:
        return []
    if isinstance(items, str | bytes | np.ndarray) or not isinstance(items, Iterable):
        raise HelperError(f"{caller}: {what} must be a list, got {type(items).__name__}")
    return list(items)


def _ints(values: Any, caller: str, what: str) -> list[int]:
    """``values`` as a list of Python ints, refused with :class:`HelperError` when one is not an integer."""
    out = []
    for v in _items(values, caller, what):
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise HelperError(f"{caller}: {what} must be integers, got {v!r:.60}")
        out.append(int(v))
    return out


def _all(items: Iterable[Any] | None, cls: type[Message], caller: str) -> list[Any]:
    # The field's list class (protobuf's add() on it), as decoding and the constructors make.
    return cls._List(as_message(x, cls, caller) for x in _items(items, caller, f"the {cls.__name__} entries"))


def make_graph(
    nodes: Sequence[NodeProto],
    name: str,
    inputs: Sequence[ValueInfoProto],
    outputs: Sequence[ValueInfoProto],
    initializer: Sequence[TensorProto] | None = None,
    doc_string: str | None = None,
    value_info: Sequence[ValueInfoProto] | None = None,
    sparse_initializer: Sequence[SparseTensorProto] | None = None,
) -> GraphProto:
    """A graph (Clause 7).

    Args:
        nodes: Its nodes, in an order the reader accepts (Clause 7.4).
        name: Its name.
        inputs: Its inputs.
        outputs: Its outputs.
        initializer: Its initializers.
        doc_string: Its documentation (left absent when empty).
        value_info: Types of its intermediate values.
        sparse_initializer: Its sparse initializers.
    """
    g = GraphProto(
        node=_all(nodes, NodeProto, "make_graph"),
        name=name,
        input=_all(inputs, ValueInfoProto, "make_graph"),
        output=_all(outputs, ValueInfoProto, "make_graph"),
        initializer=_all(initializer, TensorProto, "make_graph"),
        sparse_initializer=_all(sparse_initializer, SparseTensorProto, "make_graph"),
        value_info=_all(value_info, ValueInfoProto, "make_graph"),
    )
    if doc_string:
        g.doc_string = doc_string
    return g


def make_opsetid(domain: str, version: int) -> OperatorSetIdProto:
    """An operator set import: ``version`` of ``domain`` (``""`` is the default domain)."""
    return OperatorSetIdProto(domain=domain, version=version)


make_operatorsetid = make_opsetid


def _used_domains(graph: GraphProto) -> list[str]:
    """The domains the graph's nodes (its subgraphs' included) use, the default one first, each once."""
    found = [""]
    walk = walk_messages(graph, unique=True)
    for i in walk.by_class.get(NodeProto, ()):
        node = walk.entries[i][0]
        assert isinstance(node, NodeProto)
        d = canonical_domain(node.domain)
        if d not in found:
            found.append(d)
    return found


def _default_imports(graph: GraphProto) -> list[OperatorSetIdProto]:
    out = []
    for d in _used_domains(graph):
        known = domain_versions(d)
        version = known[1] if known is not None else 1
        # The default domain's import leaves `domain` absent (Annex B presence), as onnx's make_model writes it:
        # the model's text shows no `domain: ""` and its octets no field 1. Another domain is stated.
        out.append(OperatorSetIdProto(version=version) if d == "" else make_opsetid(d, version))
    return out


_MODEL_FIELDS = ("producer_name", "producer_version", "domain", "model_version", "doc_string", "training_info")


def make_model(
    graph: GraphProto,
    *,
    opset_imports: Sequence[OperatorSetIdProto] | None = None,
    functions: Sequence[FunctionProto] | None = None,
    ir_version: int | None = None,
    **kwargs: Any,
) -> ModelProto:
    """A model (Clause 5) of ``graph``.

    Args:
        graph: Its graph.
        opset_imports: Its operator set imports; by default every domain the graph's nodes use (the default
            domain always): a domain ONNX 1-2 defines at the newest version onnxcore knows, another at 1.
        functions: Its model-local functions.
        ir_version: The IR version it declares; by default the least it needs (:func:`least_ir_version`).
        **kwargs: Other fields of ``ModelProto`` to set: ``producer_name``, ``producer_version``, ``domain``,
            ``model_version``, ``doc_string``, ``training_info``, ``metadata_props`` (a list of entries).

    Raises:
        HelperError: A keyword that names no field of ``ModelProto`` this function sets.
    """
    g = as_message(graph, GraphProto, "make_model")
    model = ModelProto(graph=g)
    model.opset_import = OperatorSetIdProto._List(
        _default_imports(g) if opset_imports is None else _all(opset_imports, OperatorSetIdProto, "make_model")
    )
    model.functions = _all(functions, FunctionProto, "make_model")
    for key, value in kwargs.items():
        if key == "metadata_props":
            model.metadata_props = _all(value, StringStringEntryProto, "make_model")
        elif key == "training_info":
            model.training_info = TrainingInfoProto._List(value)
        elif key in _MODEL_FIELDS:
            setattr(model, key, value)
            model.mark_present(key)
        else:
            raise HelperError(f"make_model: {key!r} is not a field of ModelProto it sets")
    model.ir_version = least_ir_version(model) if ir_version is None else ir_version
    model.mark_present("ir_version")
    return model


def make_function(
    domain: str,
    fname: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    nodes: Sequence[NodeProto],
    opset_imports: Sequence[OperatorSetIdProto],
    attributes: Sequence[str] | None = None,
    attribute_protos: Sequence[AttributeProto] | None = None,
    doc_string: str | None = None,
    overload: str | None = None,
    value_info: Sequence[ValueInfoProto] | None = None,
) -> FunctionProto:
    """A model-local function (Clause 8.4).

    Args:
        domain: Its domain.
        fname: Its name.
        inputs: Its input names.
        outputs: Its output names.
        nodes: Its body.
        opset_imports: The operator sets its body imports.
        attributes: Names of its attributes without a default.
        attribute_protos: Its attributes with a default value.
        doc_string: Its documentation (left absent when empty).
        overload: Its overload name.
        value_info: Types of its values.
    """
    f = FunctionProto(
        domain=domain,
        name=fname,
        input=list(inputs),
        output=list(outputs),
        node=_all(nodes, NodeProto, "make_function"),
        opset_import=_all(opset_imports, OperatorSetIdProto, "make_function"),
        attribute=list(attributes or ()),
        attribute_proto=_all(attribute_protos, AttributeProto, "make_function"),
        overload=overload,
        value_info=_all(value_info, ValueInfoProto, "make_function"),
    )
    if doc_string:
        f.doc_string = doc_string
    return f


def set_metadata_props(proto: Message | Any, dict_value: Mapping[str, str]) -> None:
    """Replace the ``metadata_props`` of ``proto`` (one of onnxcore's messages) by the entries of ``dict_value``."""
    if not isinstance(proto, Message) or not hasattr(proto, "metadata_props"):
        raise AttributeTypeError(f"set_metadata_props: an onnxcore message with metadata_props, not {type(proto)}")
    proto.metadata_props = StringStringEntryProto._List(
        StringStringEntryProto(key=k, value=v) for k, v in dict_value.items()
    )


def set_model_props(model: ModelProto, dict_value: Mapping[str, str]) -> None:
    """Replace the model's ``metadata_props`` by the entries of ``dict_value``."""
    set_metadata_props(model, dict_value)


# ------------------------------------------------------------------------------------------------- tensors


def tensor_dtype_to_np_dtype(tensor_dtype: int) -> np.dtype[Any]:
    """The numpy dtype of an element type tag (``ml_dtypes`` for the narrow types, ``object`` for STRING)."""
    return element_type(tensor_dtype).np_dtype


def np_dtype_to_tensor_dtype(np_dtype: Any) -> int:
    """The element type tag of a numpy dtype."""
    return int(ElementType.from_dtype(np_dtype))


def _values(et: ElementType, vals: Any, n: int, name: str) -> npt.NDArray[Any]:
    if et is ElementType.STRING:
        items = (
            list(vals.reshape(-1)) if isinstance(vals, np.ndarray) else _items(vals, f"make_tensor {name!r}", "vals")
        )
        if not all(isinstance(v, str | bytes) for v in items):
            raise HelperError(f"make_tensor {name!r}: STRING values are str or bytes")
        arr = np.empty(len(items), dtype=object)
        arr[:] = [_as_bytes(v) for v in items]
    else:
        src = np.asarray(vals)
        if src.dtype.kind in "OSU":
            raise HelperError(f"make_tensor {name!r}: {et.name} values cannot be of dtype {src.dtype}")
        if src.dtype == et.np_dtype:
            arr = src
        elif et.is_complex:
            arr = src.astype(et.np_dtype)
        else:
            arr = cast_array(src, et)  # FP8 saturates, as onnx's helper does
    if arr.size != n:
        raise HelperError(f"make_tensor {name!r}: {arr.size} values for dims holding {n}")
    return arr


def make_tensor(name: str, data_type: int, dims: Sequence[int], vals: Any, raw: bool = False) -> TensorProto:
    """A tensor of any element type (Clause 6.3), stored as onnx's helper stores it.

    Args:
        name: Its name.
        data_type: Its element type tag (``TensorProto.FLOAT``, ``ElementType.INT4``, ...).
        dims: Its shape.
        vals: Its values, flat or shaped: numbers (converted to the element type, FP8 saturating), ``str`` or
            ``bytes`` for STRING; with ``raw``, the octets of ``raw_data`` themselves, or an array to store there.
        raw: Store the values in ``raw_data`` (little-endian, narrow types packed) rather than the typed field.

    Raises:
        HelperError: Values that do not number as ``dims`` say, or ``raw`` for STRING.
    """
    et = element_type(data_type)
    shape = _ints(dims, f"make_tensor {name!r}", "dims")
    if any(d < 0 for d in shape):
        raise HelperError(f"make_tensor {name!r}: dims {shape} hold a negative extent")
    if raw and et is ElementType.STRING:
        raise HelperError(f"make_tensor {name!r}: a STRING tensor has no raw storage")
    if raw and isinstance(vals, bytes | bytearray | memoryview):
        t = TensorProto(name=name, data_type=int(et), dims=shape, raw_data=bytes(vals))
        return t
    arr = _values(et, vals, math.prod(shape), name)
    t = from_array(arr.reshape(shape), name, elem_type=et, raw=raw)
    t.mark_present("name")
    return t


def make_sparse_tensor(values: TensorProto, indices: TensorProto, dims: Sequence[int]) -> SparseTensorProto:
    """A sparse tensor (Clause 6.4) of ``values`` at ``indices`` in a tensor of shape ``dims``."""
    return SparseTensorProto(
        values=as_message(values, TensorProto, "make_sparse_tensor"),
        indices=as_message(indices, TensorProto, "make_sparse_tensor"),
        dims=_ints(dims, "make_sparse_tensor", "dims"),
    )


# ---------------------------------------------------------------------------------- types and value infos


def _shape(shape: Dims | None, denotation: Sequence[str] | None) -> TensorShapeProto | None:
    if shape is None:
        return None
    shape = _items(shape, "a tensor type", "the shape")
    if denotation is not None and len(denotation) != len(shape):
        raise HelperError(f"shape_denotation has {len(denotation)} entries for a shape of rank {len(shape)}")
    out = TensorShapeProto()
    for k, d in enumerate(shape):
        dim = TensorShapeProto.Dimension()
        if isinstance(d, str):
            dim.dim_param = d
            dim.mark_present("dim_param")
        elif d is not None:
            if isinstance(d, bool) or not isinstance(d, int | np.integer):
                raise HelperError(f"a shape's extents are int, str or None, got {d!r:.60}")
            dim.dim_value = int(d)
            dim.mark_present("dim_value")
        if denotation is not None:
            dim.denotation = denotation[k]
            dim.mark_present("denotation")
        out.dim.append(dim)
    return out


def make_tensor_type_proto(elem_type: int, shape: Dims | None, shape_denotation: list[str] | None = None) -> TypeProto:
    """A tensor type; ``shape`` None leaves the rank unknown, a dim None or a string an unknown extent."""
    return TypeProto(tensor_type=TypeProto.Tensor(elem_type=int(elem_type), shape=_shape(shape, shape_denotation)))


def make_sparse_tensor_type_proto(
    elem_type: int, shape: Dims | None, shape_denotation: list[str] | None = None
) -> TypeProto:
    """A sparse tensor type (shape as in :func:`make_tensor_type_proto`)."""
    t = TypeProto.SparseTensor(elem_type=int(elem_type), shape=_shape(shape, shape_denotation))
    return TypeProto(sparse_tensor_type=t)


def make_sequence_type_proto(inner_type_proto: TypeProto) -> TypeProto:
    """A sequence type of elements of ``inner_type_proto``."""
    inner = as_message(inner_type_proto, TypeProto, "make_sequence_type_proto")
    return TypeProto(sequence_type=TypeProto.Sequence(elem_type=inner))


def make_map_type_proto(key_type: int, value_type: TypeProto) -> TypeProto:
    """A map type from element type ``key_type`` to ``value_type``."""
    value = as_message(value_type, TypeProto, "make_map_type_proto")
    return TypeProto(map_type=TypeProto.Map(key_type=int(key_type), value_type=value))


def make_optional_type_proto(inner_type_proto: TypeProto) -> TypeProto:
    """An optional type of ``inner_type_proto``."""
    inner = as_message(inner_type_proto, TypeProto, "make_optional_type_proto")
    return TypeProto(optional_type=TypeProto.Optional(elem_type=inner))


def make_value_info(name: str, type_proto: TypeProto, doc_string: str = "") -> ValueInfoProto:
    """A value's name and type."""
    v = ValueInfoProto(name=name, type=as_message(type_proto, TypeProto, "make_value_info"))
    if doc_string:
        v.doc_string = doc_string
    return v


def make_tensor_value_info(
    name: str, elem_type: int, shape: Dims | None, doc_string: str = "", shape_denotation: list[str] | None = None
) -> ValueInfoProto:
    """A value of a tensor type (:func:`make_tensor_type_proto`)."""
    return make_value_info(name, make_tensor_type_proto(elem_type, shape, shape_denotation), doc_string)


def make_sparse_tensor_value_info(
    name: str, elem_type: int, shape: Dims | None, doc_string: str = "", shape_denotation: list[str] | None = None
) -> ValueInfoProto:
    """A value of a sparse tensor type (:func:`make_sparse_tensor_type_proto`)."""
    return make_value_info(name, make_sparse_tensor_type_proto(elem_type, shape, shape_denotation), doc_string)


def make_tensor_sequence_value_info(
    name: str,
    elem_type: int,
    shape: Dims | None,
    doc_string: str = "",
    elem_shape_denotation: list[str] | None = None,
) -> ValueInfoProto:
    """A value of a sequence type of tensors."""
    inner = make_tensor_type_proto(elem_type, shape, elem_shape_denotation)
    return make_value_info(name, make_sequence_type_proto(inner), doc_string)


def make_empty_tensor_value_info(name: str) -> ValueInfoProto:
    """A value with a name and no type (an omitted optional output's place, Clause 7)."""
    return ValueInfoProto(name=name)
