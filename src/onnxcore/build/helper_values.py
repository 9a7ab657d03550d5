"""``onnx.helper``'s element-type functions and its value messages: sequences, maps, optionals, training info.

Re-exported by :mod:`onnxcore.build.helper` (and ``onnxcore.onnx.helper``), with the same names and arguments
as onnx's. The element-type answers come from the one table of element types (:mod:`onnxcore.types.elements`)
and of typed storage fields (Table 7, :func:`onnxcore.types.tensors.typed_field`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from onnxcore.errors import OnnxCoreError
from onnxcore.proto.bridge import as_message
from onnxcore.proto.message import copy_message
from onnxcore.proto.messages import (
    GraphProto,
    MapProto,
    OptionalProto,
    SequenceProto,
    SparseTensorProto,
    StringStringEntryProto,
    TensorProto,
    TrainingInfoProto,
)
from onnxcore.types.elements import ElementType, element_type
from onnxcore.types.tensors import typed_field

__all__ = [
    "ValueKindError",
    "get_all_tensor_dtypes",
    "make_map",
    "make_optional",
    "make_sequence",
    "make_training_info",
    "tensor_dtype_to_field",
    "tensor_dtype_to_storage_tensor_dtype",
    "tensor_dtype_to_string",
]


class ValueKindError(OnnxCoreError, TypeError):
    """A sequence or optional element kind that the message cannot hold (a ``TypeError``, as onnx raises)."""


# ------------------------------------------------------------------------------------------- element types

# The element type whose values each typed storage field holds (Table 7).
_STORAGE_TYPE: dict[str, int] = {
    "float_data": TensorProto.FLOAT,
    "int32_data": TensorProto.INT32,
    "string_data": TensorProto.STRING,
    "int64_data": TensorProto.INT64,
    "double_data": TensorProto.DOUBLE,
    "uint64_data": TensorProto.UINT64,
}


# onnx.helper lists the element types in its own order (its type table's: the numeric types of IR 1-3 grouped, STRING
# after them, then the types added since, by tag); a script that prints them shows that order.
_ONNX_ORDER = (1, 2, 3, 4, 5, 6, 7, 9, 10, 16, 11, 14, 15, 12, 13, 8)


def get_all_tensor_dtypes() -> Iterable[int]:
    """Every element type tag but UNDEFINED (as ``onnx.helper``; tags are plain ints here).

    Returns:
        The tags in onnx's order: FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, BOOL, FLOAT16, BFLOAT16,
        DOUBLE, COMPLEX64, COMPLEX128, UINT32, UINT64, STRING, then the later types by increasing tag.
    """
    tags = sorted(int(et) for et in ElementType)
    return [*_ONNX_ORDER, *(t for t in tags if t not in _ONNX_ORDER)]


def tensor_dtype_to_string(tensor_dtype: int) -> str:
    """The name onnx prints for an element type: ``"TensorProto.FLOAT"``.

    Raises:
        ElementTypeError: ``tensor_dtype`` is no element type (a ``ValueError``; onnx raises ``KeyError``).
    """
    return f"TensorProto.{element_type(tensor_dtype).name}"


def tensor_dtype_to_field(tensor_dtype: int) -> str:
    """The typed storage field of an element type (Table 7): ``"float_data"``, ``"int32_data"``, ...

    Raises:
        ElementTypeError: ``tensor_dtype`` is no element type, or UNDEFINED.
    """
    return typed_field(element_type(tensor_dtype))


def tensor_dtype_to_storage_tensor_dtype(tensor_dtype: int) -> int:
    """The element type of the values its typed storage field holds: FLOAT16 -> INT32, UINT32 -> UINT64, ...

    Raises:
        ElementTypeError: ``tensor_dtype`` is no element type, or UNDEFINED.
    """
    return _STORAGE_TYPE[tensor_dtype_to_field(tensor_dtype)]


# ------------------------------------------------------------------------------------------- value messages

_SEQUENCE_FIELDS: dict[int, tuple[str, type[Any]]] = {
    SequenceProto.TENSOR: ("tensor_values", TensorProto),
    SequenceProto.SPARSE_TENSOR: ("sparse_tensor_values", SparseTensorProto),
    SequenceProto.SEQUENCE: ("sequence_values", SequenceProto),
    SequenceProto.MAP: ("map_values", MapProto),
    SequenceProto.OPTIONAL: ("optional_values", OptionalProto),
}
_OPTIONAL_FIELDS: dict[int, tuple[str, type[Any]]] = {
    OptionalProto.TENSOR: ("tensor_value", TensorProto),
    OptionalProto.SPARSE_TENSOR: ("sparse_tensor_value", SparseTensorProto),
    OptionalProto.SEQUENCE: ("sequence_value", SequenceProto),
    OptionalProto.MAP: ("map_value", MapProto),
    OptionalProto.OPTIONAL: ("optional_value", OptionalProto),
}
_INTEGER_KEYS = frozenset(
    {
        TensorProto.INT8,
        TensorProto.INT16,
        TensorProto.INT32,
        TensorProto.INT64,
        TensorProto.UINT8,
        TensorProto.UINT16,
        TensorProto.UINT32,
        TensorProto.UINT64,
    }
)


def make_sequence(name: str, elem_type: int, values: Sequence[Any]) -> SequenceProto:
    """A SequenceProto of ``values`` (copies), stored in the field of ``elem_type`` (``SequenceProto.TENSOR``, ...).

    Args:
        name: The sequence's name.
        elem_type: A ``SequenceProto.DataType``; UNDEFINED gives an empty sequence (``values`` ignored).
        values: The element messages (onnxcore's or onnx's).

    Raises:
        ValueKindError: ``elem_type`` is not a kind a sequence holds (a ``TypeError``, as onnx raises).
    """
    seq = SequenceProto(name=name, elem_type=elem_type)
    if elem_type == SequenceProto.UNDEFINED:
        return seq
    entry = _SEQUENCE_FIELDS.get(elem_type)
    if entry is None:
        raise ValueKindError(f"make_sequence: element type {elem_type} is not one a sequence holds")
    field, cls = entry
    getattr(seq, field).extend(copy_message(as_message(v, cls, "make_sequence")) for v in values)
    return seq


def make_map(name: str, key_type: int, keys: list[Any], values: SequenceProto) -> MapProto:
    """A MapProto of ``keys`` (strings for a STRING key type, else integers) and ``values`` (a copy).

    Keys of a type a map cannot have are left out, as onnx leaves them (the validator reports such a map).
    """
    out = MapProto(name=name, key_type=key_type, values=copy_message(as_message(values, SequenceProto, "make_map")))
    if key_type == TensorProto.STRING:
        out.string_keys = [k.encode("utf-8") if isinstance(k, str) else bytes(k) for k in keys]
    elif key_type in _INTEGER_KEYS:
        out.keys = [int(k) for k in keys]
    return out


def make_optional(name: str, elem_type: int, value: Any) -> OptionalProto:
    """An OptionalProto holding (a copy of) ``value`` in the field of ``elem_type`` (``OptionalProto.TENSOR``, ...).

    Args:
        name: The optional's name.
        elem_type: An ``OptionalProto.DataType``; UNDEFINED gives an empty optional (``value`` ignored).
        value: The element message (onnxcore's or onnx's).

    Raises:
        ValueKindError: ``elem_type`` is not a kind an optional holds, or ``value`` is None for another kind.
    """
    opt = OptionalProto(name=name, elem_type=elem_type)
    if elem_type == OptionalProto.UNDEFINED:
        return opt
    entry = _OPTIONAL_FIELDS.get(elem_type)
    if entry is None:
        raise ValueKindError(f"make_optional: element type {elem_type} is not one an optional holds")
    if value is None:
        raise ValueKindError(f"make_optional: element type {elem_type} needs a value")
    field, cls = entry
    setattr(opt, field, copy_message(as_message(value, cls, "make_optional")))
    return opt


def _bindings(pairs: Iterable[tuple[str, str]] | None) -> list[StringStringEntryProto]:
    return [StringStringEntryProto(key=k, value=v) for k, v in pairs or ()]


def make_training_info(
    algorithm: GraphProto,
    algorithm_bindings: Iterable[tuple[str, str]],
    initialization: GraphProto | None,
    initialization_bindings: Iterable[tuple[str, str]] | None,
) -> TrainingInfoProto:
    """A TrainingInfoProto (Clause 5.4): the algorithm and initialization graphs (copies) and their bindings.

    Args:
        algorithm: The training algorithm's graph.
        algorithm_bindings: ``(initializer name, algorithm output)`` pairs: ``update_binding``.
        initialization: The initialization graph, or None.
        initialization_bindings: ``(initializer name, initialization output)`` pairs, or None.
    """
    init = None if initialization is None else as_message(initialization, GraphProto, "make_training_info")
    return TrainingInfoProto(
        algorithm=copy_message(as_message(algorithm, GraphProto, "make_training_info")),
        update_binding=_bindings(algorithm_bindings),
        initialization=None if init is None else copy_message(init),
        initialization_binding=_bindings(initialization_bindings),
    )
