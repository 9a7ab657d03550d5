"""Clause 6: element types, tensors and their storage, value types, shapes, broadcasting, runtime values."""

from __future__ import annotations

from onnxcore.types.broadcast import broadcast_shapes, unidirectional_broadcast
from onnxcore.types.elements import ElementType, ElementTypeError, element_type
from onnxcore.types.tensors import from_array, to_array
from onnxcore.types.values import SparseTensor, value_from_proto, value_to_proto
from onnxcore.types.valuetypes import (
    Dim,
    MapType,
    OpaqueType,
    OptionalType,
    SequenceType,
    Shape,
    SparseTensorType,
    TensorType,
    ValueType,
    type_from_proto,
    type_string,
    type_to_proto,
)

__all__ = [
    "Dim",
    "ElementType",
    "ElementTypeError",
    "MapType",
    "OpaqueType",
    "OptionalType",
    "SequenceType",
    "Shape",
    "SparseTensor",
    "SparseTensorType",
    "TensorType",
    "ValueType",
    "broadcast_shapes",
    "element_type",
    "from_array",
    "to_array",
    "type_from_proto",
    "type_string",
    "type_to_proto",
    "unidirectional_broadcast",
    "value_from_proto",
    "value_to_proto",
]
