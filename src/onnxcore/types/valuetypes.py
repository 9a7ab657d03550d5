"""Value types (Clause 6.1, 6.8), shapes and dimensions (6.5) with denotations (6.7), and TypeProto."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Union, overload

from onnxcore.errors import ShapeError
from onnxcore.proto import TensorShapeProto, TypeProto
from onnxcore.proto.bridge import OnnxMessage, as_message
from onnxcore.types import typestr
from onnxcore.types.elements import ElementType, element_type

__all__ = [
    "Dim",
    "Shape",
    "TensorType",
    "SparseTensorType",
    "SequenceType",
    "MapType",
    "OptionalType",
    "OpaqueType",
    "ValueType",
    "Extent",
    "type_from_proto",
    "type_to_proto",
    "type_string",
    "shape_from_proto",
    "shape_to_proto",
    "stated_dims",
    "declared_shape",
]

Extent = Union[int, str, None]  # noqa: UP007  (a runtime alias)


class Dim:
    """One dimension (Clause 6.5.1): a fixed extent (int >= 0), a dimension variable (str) or unknown (None).

    ``denotation`` is the dimension denotation of Clause 6.7.3 ("" when absent). A Dim compares equal
    to another Dim with the same value and denotation, and to its bare value when it has no denotation
    (``Dim(3) == 3``, ``Dim("N") == "N"``).
    """

    __slots__ = ("denotation", "value")

    value: Extent
    denotation: str

    def __init__(self, value: Extent | Dim = None, denotation: str = "") -> None:
        if isinstance(value, Dim):
            denotation = denotation or value.denotation
            value = value.value
        if isinstance(value, bool) or not (value is None or isinstance(value, int | str)):
            raise ShapeError(f"a dimension is an int, a str or None, not {type(value).__name__}")
        if isinstance(value, int):
            value = int(value)
            if value < 0:
                raise ShapeError(f"negative dimension extent {value} (Clause 6.5.1)")
        if value == "":
            value = None  # an empty name denotes no variable (Clause 6.5.2: unknown)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "denotation", denotation)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Dim is immutable")

    @property
    def is_fixed(self) -> bool:
        """Whether the dimension is a fixed extent."""
        return isinstance(self.value, int)

    @property
    def is_variable(self) -> bool:
        """Whether the dimension is a dimension variable."""
        return isinstance(self.value, str)

    @property
    def is_unknown(self) -> bool:
        """Whether the dimension is unknown."""
        return self.value is None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Dim):
            return self.value == other.value and self.denotation == other.denotation
        if other is None or (isinstance(other, int | str) and not isinstance(other, bool)):
            return not self.denotation and self.value == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Dim({self.value!r}, {self.denotation!r})" if self.denotation else f"Dim({self.value!r})"

    def __str__(self) -> str:
        return "?" if self.value is None else str(self.value)


class Shape:
    """A shape of known rank: a tuple of :class:`Dim` (Clause 6.5). Rank 0 is a scalar.

    An unknown rank is not a Shape: it is ``None`` where a shape is expected (``TensorType.shape``).
    ``Shape(2, "N", None)`` and ``Shape([2, "N", None])`` both build a shape of rank 3.
    """

    __slots__ = ("dims",)

    dims: tuple[Dim, ...]

    def __init__(self, *dims: Extent | Dim | Iterable[Extent | Dim]) -> None:
        items: Iterable[Any] = dims
        if len(dims) == 1 and not isinstance(dims[0], int | str | Dim) and dims[0] is not None:
            items = dims[0]
        object.__setattr__(self, "dims", tuple(Dim(d) for d in items))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Shape is immutable")

    @property
    def rank(self) -> int:
        """The number of dimensions."""
        return len(self.dims)

    @property
    def extents(self) -> tuple[Extent, ...]:
        """The dimensions as bare values (int, str or None)."""
        return tuple(d.value for d in self.dims)

    @property
    def is_static(self) -> bool:
        """Whether every dimension is a fixed extent."""
        return all(d.is_fixed for d in self.dims)

    def __len__(self) -> int:
        return len(self.dims)

    def __iter__(self) -> Iterator[Dim]:
        return iter(self.dims)

    @overload
    def __getitem__(self, i: int) -> Dim: ...
    @overload
    def __getitem__(self, i: slice) -> Shape: ...
    def __getitem__(self, i: int | slice) -> Dim | Shape:
        if isinstance(i, slice):
            return Shape(self.dims[i])
        return self.dims[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Shape):
            return self.dims == other.dims
        if isinstance(other, tuple | list):
            return len(other) == len(self.dims) and all(a == b for a, b in zip(self.dims, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.dims)

    def __repr__(self) -> str:
        return f"Shape({', '.join(repr(d.value) if not d.denotation else repr(d) for d in self.dims)})"

    def __str__(self) -> str:
        return "[" + ",".join(str(d) for d in self.dims) + "]"


def _shape_str(shape: Shape | None) -> str:
    return "" if shape is None else str(shape)


def _normalize_elem_and_shape(t: TensorType | SparseTensorType) -> None:
    # Accept tags and plain tuples at construction; store ElementType and Shape (frozen dataclasses).
    if t.elem_type is not None and not isinstance(t.elem_type, ElementType):
        object.__setattr__(t, "elem_type", element_type(t.elem_type))
    if t.shape is not None and not isinstance(t.shape, Shape):
        object.__setattr__(t, "shape", Shape(t.shape))


@dataclass(frozen=True)
class TensorType:
    """A tensor type: element type (None when unstated) and shape (None = unknown rank)."""

    elem_type: ElementType | None
    shape: Shape | None = None
    denotation: str = field(default="", kw_only=True)

    def __post_init__(self) -> None:
        _normalize_elem_and_shape(self)

    def type_str(self) -> str | None:
        """The operator-constraint type string, e.g. ``tensor(float)``; None when the element type is unstated."""
        return type_string(self)

    def __str__(self) -> str:
        return f"{self.type_str() or 'tensor(?)'}{_shape_str(self.shape)}"


@dataclass(frozen=True)
class SparseTensorType:
    """A sparse tensor type: element type (None when unstated) and shape (None = unknown rank)."""

    elem_type: ElementType | None
    shape: Shape | None = None
    denotation: str = field(default="", kw_only=True)

    def __post_init__(self) -> None:
        _normalize_elem_and_shape(self)

    def type_str(self) -> str | None:
        """The type string, e.g. ``sparse_tensor(float)``; None when the element type is unstated."""
        return type_string(self)

    def __str__(self) -> str:
        return f"{self.type_str() or 'sparse_tensor(?)'}{_shape_str(self.shape)}"


@dataclass(frozen=True)
class SequenceType:
    """A sequence of values of one type (Clause 6.8.1); ``elem`` None when unstated."""

    elem: ValueType | None
    denotation: str = field(default="", kw_only=True)

    def type_str(self) -> str | None:
        """The type string, e.g. ``seq(tensor(int64))``; None when the element type is unknown."""
        return type_string(self)

    def __str__(self) -> str:
        return f"seq({self.elem if self.elem is not None else '?'})"


@dataclass(frozen=True)
class MapType:
    """A map from keys of an integral or string element type to values of one type (Clause 6.8.2)."""

    key: ElementType | None
    value: ValueType | None
    denotation: str = field(default="", kw_only=True)

    def __post_init__(self) -> None:
        if self.key is not None and not isinstance(self.key, ElementType):
            object.__setattr__(self, "key", element_type(self.key))

    def type_str(self) -> str | None:
        """The type string, e.g. ``map(int64,tensor(float))``; None when a part is unknown."""
        return type_string(self)

    def __str__(self) -> str:
        key = self.key.type_name if self.key is not None else "?"
        return f"map({key},{self.value if self.value is not None else '?'})"


@dataclass(frozen=True)
class OptionalType:
    """An optional value of a tensor, sparse tensor, sequence or map type (Clause 6.8.3)."""

    elem: ValueType | None
    denotation: str = field(default="", kw_only=True)

    def type_str(self) -> str | None:
        """The type string, e.g. ``optional(seq(tensor(float)))``; None when the element type is unknown."""
        return type_string(self)

    def __str__(self) -> str:
        return f"optional({self.elem if self.elem is not None else '?'})"


@dataclass(frozen=True)
class OpaqueType:
    """An opaque type, identified by domain ("" = default domain) and name (Clause 6.8.4)."""

    domain: str
    name: str
    denotation: str = field(default="", kw_only=True)

    def type_str(self) -> str | None:
        """The type string ``opaque(domain,name)`` (``opaque(name)`` in the default domain)."""
        return type_string(self)

    def __str__(self) -> str:
        return self.type_str() or "opaque"


ValueType = Union[TensorType, SparseTensorType, SequenceType, MapType, OptionalType, OpaqueType]  # noqa: UP007


# ------------------------------------------------------------------------------------------- TypeProto


def shape_from_proto(proto: TensorShapeProto | None) -> Shape | None:
    """The :class:`Shape` of a TensorShapeProto; None (unknown rank) when absent."""
    if proto is None:
        return None
    dims = []
    for d in proto.dim:
        which = d.which_oneof("value")
        v: Extent = d.dim_value if which == "dim_value" else d.dim_param if which == "dim_param" else None
        dims.append(Dim(v, d.denotation))
    return Shape(dims)


def shape_to_proto(shape: Shape | Iterable[Extent | Dim] | None) -> TensorShapeProto | None:
    """A TensorShapeProto for ``shape`` (None for an unknown rank)."""
    if shape is None:
        return None
    if not isinstance(shape, Shape):
        shape = Shape(shape)
    out = []
    for d in shape.dims:
        kw: dict[str, Any] = {}
        if isinstance(d.value, int):
            kw["dim_value"] = d.value
        elif isinstance(d.value, str):
            kw["dim_param"] = d.value
        if d.denotation:
            kw["denotation"] = d.denotation
        out.append(TensorShapeProto.Dimension(**kw))
    return TensorShapeProto(dim=out)


def stated_dims(tp: TypeProto | None) -> tuple[Extent, ...] | None:
    """The dims a (sparse) tensor type states, read from the message as written.

    Unlike :func:`shape_from_proto` nothing is validated: a negative ``dim_value`` is kept (the validator
    reports it, Clause 6.5.1) and no :class:`Dim` is built (inference and validation read every declared
    value).

    Args:
        tp: The type; None for none.

    Returns:
        ints (negative ones included), dimension variables, None for an unknown extent; None when the type
        is not a (sparse) tensor type or states no shape (unknown rank).
    """
    if tp is None:
        return None
    t = tp.tensor_type if tp.tensor_type is not None else tp.sparse_tensor_type
    if t is None or t.shape is None:
        return None
    return tuple(int(d.dim_value) if d.has("dim_value") else (d.dim_param or None) for d in t.shape.dim)


def declared_shape(tp: TypeProto | None) -> tuple[Extent, ...] | None:
    """The shape a (sparse, or optional) tensor type declares, as shape inference reads it (Clause 9).

    Args:
        tp: The type; None for none.

    Returns:
        ints, dimension variables, None for unknown (a negative extent included: it is reported on its own,
        Clause 6.5.1); None if the type states no shape.
    """
    if tp is not None and tp.optional_type is not None:  # an optional tensor has its tensor's shape when present
        return declared_shape(tp.optional_type.elem_type)
    dims = stated_dims(tp)
    if dims is None:
        return None
    return tuple(None if isinstance(d, int) and d < 0 else d for d in dims)


def _elem(tag: int) -> ElementType | None:
    return None if tag == 0 else element_type(tag)


def type_from_proto(proto: TypeProto | OnnxMessage | None) -> ValueType | None:
    """The value type a TypeProto denotes; None when no kind is set (an unstated type).

    The onnx package's ``TypeProto`` is accepted (converted by its octets).

    Raises:
        ElementTypeError: An element type tag outside Table 5.
        ShapeError: A negative dimension extent.
        MessageTypeError: ``proto`` is not a TypeProto (a ``TypeError``).
    """
    if proto is None:
        return None
    proto = as_message(proto, TypeProto, "type_from_proto")
    den = proto.denotation
    which = proto.which_oneof("value")
    if which == "tensor_type":
        tt = proto.tensor_type
        assert tt is not None
        return TensorType(_elem(tt.elem_type), shape_from_proto(tt.shape), denotation=den)
    if which == "sparse_tensor_type":
        st = proto.sparse_tensor_type
        assert st is not None
        return SparseTensorType(_elem(st.elem_type), shape_from_proto(st.shape), denotation=den)
    if which == "sequence_type":
        sq = proto.sequence_type
        assert sq is not None
        return SequenceType(type_from_proto(sq.elem_type), denotation=den)
    if which == "map_type":
        mp = proto.map_type
        assert mp is not None
        return MapType(_elem(mp.key_type), type_from_proto(mp.value_type), denotation=den)
    if which == "optional_type":
        op = proto.optional_type
        assert op is not None
        return OptionalType(type_from_proto(op.elem_type), denotation=den)
    if which == "opaque_type":
        oq = proto.opaque_type
        assert oq is not None
        return OpaqueType(oq.domain, oq.name, denotation=den)
    return None


def type_to_proto(t: ValueType | None) -> TypeProto:
    """A TypeProto for value type ``t`` (an empty TypeProto for None)."""
    if t is None:
        return TypeProto()
    den = t.denotation or None
    if isinstance(t, TensorType):
        et = None if t.elem_type is None else int(t.elem_type)
        return TypeProto(tensor_type=TypeProto.Tensor(elem_type=et, shape=shape_to_proto(t.shape)), denotation=den)
    if isinstance(t, SparseTensorType):
        et = None if t.elem_type is None else int(t.elem_type)
        sp = TypeProto.SparseTensor(elem_type=et, shape=shape_to_proto(t.shape))
        return TypeProto(sparse_tensor_type=sp, denotation=den)
    if isinstance(t, SequenceType):
        sq = TypeProto.Sequence(elem_type=None if t.elem is None else type_to_proto(t.elem))
        return TypeProto(sequence_type=sq, denotation=den)
    if isinstance(t, MapType):
        key = None if t.key is None else int(t.key)
        mp = TypeProto.Map(key_type=key, value_type=None if t.value is None else type_to_proto(t.value))
        return TypeProto(map_type=mp, denotation=den)
    if isinstance(t, OptionalType):
        op = TypeProto.Optional(elem_type=None if t.elem is None else type_to_proto(t.elem))
        return TypeProto(optional_type=op, denotation=den)
    if isinstance(t, OpaqueType):
        oq = TypeProto.Opaque(domain=t.domain or None, name=t.name or None)
        return TypeProto(opaque_type=oq, denotation=den)
    raise TypeError(f"not a value type: {type(t).__name__}")


def type_string(type_proto: TypeProto | ValueType | None) -> str | None:
    """The type string of a TypeProto (or value type) as used in operator type constraints.

    ``tensor(float)``, ``seq(tensor(int64))``, ``map(int64,tensor(float))``,
    ``optional(seq(tensor(float)))``, ``sparse_tensor(float)``, ``opaque(domain,name)``; None when the
    type or an element type inside it is unstated or not in Table 5. One spelling:
    :func:`onnxcore.types.typestr.type_string`, a value type being read through its message.
    """
    if type_proto is None:
        return None
    if not isinstance(type_proto, TypeProto):
        type_proto = type_to_proto(type_proto)
    return typestr.type_string(type_proto)
