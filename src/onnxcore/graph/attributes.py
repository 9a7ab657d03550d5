"""Attribute values converted once, at plan compilation (Clause 7.4).

A kernel receives each attribute as a keyword argument in a Python form: ``FLOAT`` -> float,
``INT`` -> int, ``STRING`` -> str (UTF-8), ``TENSOR`` -> ``np.ndarray``, ``GRAPH`` -> the
``GraphProto`` itself (evaluated through ``KernelContext.run_subgraph``), ``SPARSE_TENSOR`` ->
``SparseTensor``, ``TYPE_PROTO`` -> ``TypeProto`` and lists of each for the plural kinds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.errors import ValidationError
from onnxcore.external.spill import lean_view
from onnxcore.proto import AttributeProto
from onnxcore.types import to_array, value_from_proto

__all__ = ["attribute_value", "attribute_kind", "constant_array"]

_A = AttributeProto.AttributeType

# For attributes written without ``type`` (older producers): the field that carries the value.
_BY_FIELD: tuple[tuple[str, int], ...] = (
    ("t", _A.TENSOR),
    ("g", _A.GRAPH),
    ("sparse_tensor", _A.SPARSE_TENSOR),
    ("tp", _A.TYPE_PROTO),
    ("floats", _A.FLOATS),
    ("ints", _A.INTS),
    ("strings", _A.STRINGS),
    ("tensors", _A.TENSORS),
    ("graphs", _A.GRAPHS),
    ("sparse_tensors", _A.SPARSE_TENSORS),
    ("type_protos", _A.TYPE_PROTOS),
    ("s", _A.STRING),
    ("i", _A.INT),
    ("f", _A.FLOAT),
)


_MESSAGE_FIELD: dict[int, str] = {
    int(_A.TENSOR): "t",
    int(_A.GRAPH): "g",
    int(_A.SPARSE_TENSOR): "sparse_tensor",
    int(_A.TYPE_PROTO): "tp",
}


def attribute_kind(attr: AttributeProto) -> int:
    """The attribute's type, inferred from the field present when ``type`` is unset."""
    if attr.type:
        return int(attr.type)
    for field, kind in _BY_FIELD:
        if attr.has(field):
            return int(kind)
    return int(_A.UNDEFINED)


def _text(s: bytes | memoryview, where: str) -> str:
    try:
        return bytes(s).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValidationError(f"attribute {where}: STRING value is not UTF-8 ({e})") from None


_INT_ONLY = frozenset({int})


def attribute_value(attr: AttributeProto, base_dir: str | None = None) -> Any:
    """The Python value a kernel receives for ``attr``.

    Raises:
        ValidationError: an attribute of unknown type, one whose type is a message (TENSOR, GRAPH, SPARSE_TENSOR,
            TYPE_PROTO) but that carries none, or a STRING that is not UTF-8.
    """
    kind = attribute_kind(attr)
    name = attr.name
    field = _MESSAGE_FIELD.get(kind)
    if field is not None and getattr(attr, field) is None:
        # The validator's E-ATTR-VALUE: a kernel would otherwise receive None for a tensor or a graph.
        raise ValidationError(f"attribute {name!r} has type {_A(kind).name} but no value (field {field!r} is absent)")
    if kind == _A.FLOAT:
        return float(attr.f)
    if kind == _A.INT:
        return int(attr.i)
    if kind == _A.STRING:
        return _text(attr.s, name)
    # map() over the lists: a tree ensemble's node tables hold 10^5 values each (issue 42, item 3).
    if kind == _A.INTS:
        ints = attr.ints
        # Decoded lists hold ints already: a copy after one pass over the types is twice as fast as int() per value.
        return list(ints) if set(map(type, ints)) <= _INT_ONLY else list(map(int, ints))
    if kind == _A.FLOATS:
        return list(map(float, attr.floats))
    if kind == _A.STRINGS:
        try:
            return [str(v, "utf-8") for v in attr.strings]  # a vocabulary of 10^4-10^5 strings: one call each
        except (UnicodeDecodeError, TypeError):
            return [_text(v, name) for v in attr.strings]  # raises as one value at a time would, naming the attribute
    if kind == _A.GRAPH:
        return attr.g
    if kind == _A.GRAPHS:
        return list(attr.graphs)
    if kind == _A.TYPE_PROTO:
        return attr.tp
    if kind == _A.TYPE_PROTOS:
        return list(attr.type_protos)
    if kind in (_A.TENSOR, _A.TENSORS):
        if kind == _A.TENSOR:
            assert attr.t is not None  # checked above
            return constant_array(to_array(attr.t, base_dir=base_dir))
        return [constant_array(to_array(t, base_dir=base_dir)) for t in attr.tensors]
    if kind in (_A.SPARSE_TENSOR, _A.SPARSE_TENSORS):
        if kind == _A.SPARSE_TENSOR:
            return value_from_proto(attr.sparse_tensor)
        return [value_from_proto(t) for t in attr.sparse_tensors]
    raise ValidationError(f"attribute {name!r} has no value of a known type (type {attr.type})")


def constant_array(a: Any) -> Any:
    """A constant (initializer or attribute tensor) prepared once for every run.

    A zero-copy view into the model's octets can be misaligned for its element type, which makes
    numpy take its slow unaligned loops (matmul then bypasses BLAS): such a view is copied once.
    In lean memory (:func:`onnxcore.external.spill.lean_memory`, what the optimizer runs in) a view of a mapped file
    or a large view stays a view: a copy of every weight of a model over 2 GiB would cost more memory than the
    model's file.
    The result is read-only, as the constant is shared by every run.
    """
    if isinstance(a, np.ndarray):
        if (not a.flags.aligned or not a.flags.c_contiguous) and not lean_view(a):
            a = a.copy(order="C")  # not ascontiguousarray, which makes a scalar one-dimensional
        try:
            a.flags.writeable = False
        except ValueError:
            pass
    return a
