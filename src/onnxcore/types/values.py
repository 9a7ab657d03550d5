"""Runtime values and their protos: tensor, sequence, map, optional and sparse tensor (Clause 6.1, 6.8).

In Python a tensor is a ``numpy.ndarray`` (rank 0 is a 0-d array), a sequence a ``list``, a map a
``dict`` (int keys, or ``bytes`` keys for STRING), an optional ``None`` when absent and the value
itself when present, and a sparse tensor a :class:`SparseTensor`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from onnxcore.errors import LimitError, TensorError
from onnxcore.limits import DEFAULT_LIMITS, Limits
from onnxcore.proto import MapProto, OptionalProto, SequenceProto, SparseTensorProto, TensorProto
from onnxcore.proto.bridge import as_message
from onnxcore.types.elements import ElementType, ElementTypeError, element_type
from onnxcore.types.tensors import from_array, to_array
from onnxcore.types.valuetypes import (
    MapType,
    OptionalType,
    SequenceType,
    Shape,
    SparseTensorType,
    TensorType,
    ValueType,
)

__all__ = ["SparseTensor", "value_from_proto", "value_to_proto", "value_type_of"]

_MAX_NESTING = 64  # nesting deeper than this is refused rather than exhausting the stack
_VALUE_MESSAGES = (TensorProto, SparseTensorProto, SequenceProto, MapProto, OptionalProto)


class SparseTensor:
    """A sparse tensor: ``values`` (1-D, NNZ elements), ``indices`` (int64, shape (NNZ,) of linear
    indices or (NNZ, rank) of coordinates) and the dense shape ``dims``."""

    __slots__ = ("dims", "indices", "values")

    values: npt.NDArray[Any]
    indices: npt.NDArray[np.int64]
    dims: tuple[int, ...]

    def __init__(self, values: npt.ArrayLike, indices: npt.ArrayLike, dims: tuple[int, ...] | list[int]) -> None:
        self.values = np.asarray(values)
        self.indices = np.asarray(indices)
        self.dims = tuple(int(d) for d in dims)
        self.validate()

    def validate(self) -> None:
        """Check the layout of values and indices against ``dims``.

        Raises:
            TensorError: Values not 1-D, indices of the wrong shape or type, or an index out of range.
        """
        if any(d < 0 for d in self.dims):
            raise TensorError(f"sparse tensor: negative dimension in dims {list(self.dims)}")
        if self.values.ndim != 1:
            raise TensorError(f"sparse tensor: values must be 1-D, got shape {self.values.shape}")
        nnz = self.values.shape[0]
        if self.indices.dtype.kind not in "iu":
            raise TensorError(f"sparse tensor: indices must be integers, got {self.indices.dtype}")
        rank = len(self.dims)
        if self.indices.shape == (nnz,):
            if nnz and (self.indices.min() < 0 or self.indices.max() >= math.prod(self.dims)):
                raise TensorError(f"sparse tensor: a linear index is outside dims {list(self.dims)}")
        elif self.indices.shape == (nnz, rank):
            if nnz and rank:
                bound = np.asarray(self.dims, dtype=np.int64)
                if (self.indices < 0).any() or (self.indices >= bound).any():
                    raise TensorError(f"sparse tensor: an index is outside dims {list(self.dims)}")
        else:
            raise TensorError(
                f"sparse tensor: indices shape {self.indices.shape} is neither ({nnz},) nor ({nnz}, {rank})"
            )

    def to_dense(self, *, limits: Limits | None = None) -> npt.NDArray[Any]:
        """The dense array (zeros, or empty strings, where no value is given).

        Raises:
            LimitError: The dense array would exceed ``limits`` (default :data:`DEFAULT_LIMITS`).
        """
        lim = DEFAULT_LIMITS if limits is None else limits
        count = math.prod(self.dims)
        lim.check_elements(count, "dense form of a sparse tensor")
        lim.check_bytes(count * self.values.dtype.itemsize, "dense form of a sparse tensor")
        try:
            dense = np.zeros(self.dims, dtype=self.values.dtype)
        except (MemoryError, ValueError) as e:
            raise LimitError(f"dense form of a sparse tensor with dims {list(self.dims)}: {e}") from None
        if self.values.dtype == object:
            dense[...] = b""
        flat = dense.reshape(-1)
        if self.indices.ndim == 1:
            flat[self.indices.astype(np.int64)] = self.values
        elif self.values.size:
            lin = np.ravel_multi_index(tuple(self.indices.T.astype(np.int64)), self.dims)
            flat[lin] = self.values
        return dense

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SparseTensor):
            return NotImplemented
        return (
            self.dims == other.dims
            and self.values.dtype == other.values.dtype
            and np.array_equal(self.indices, other.indices)
            and _array_equal(self.values, other.values)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SparseTensor(values={self.values!r}, indices={self.indices!r}, dims={self.dims!r})"


def _array_equal(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype == object:
        return bool(np.array_equal(a, b))
    return a.tobytes() == b.tobytes()


# ------------------------------------------------------------------------------------------- from proto

_SEQ_FIELDS = {
    SequenceProto.DataType.TENSOR: "tensor_values",
    SequenceProto.DataType.SPARSE_TENSOR: "sparse_tensor_values",
    SequenceProto.DataType.SEQUENCE: "sequence_values",
    SequenceProto.DataType.MAP: "map_values",
    SequenceProto.DataType.OPTIONAL: "optional_values",
}
_OPT_FIELDS = {
    OptionalProto.DataType.TENSOR: "tensor_value",
    OptionalProto.DataType.SPARSE_TENSOR: "sparse_tensor_value",
    OptionalProto.DataType.SEQUENCE: "sequence_value",
    OptionalProto.DataType.MAP: "map_value",
    OptionalProto.DataType.OPTIONAL: "optional_value",
}
_INTEGRAL_KEYS = frozenset(
    {
        ElementType.INT8,
        ElementType.INT16,
        ElementType.INT32,
        ElementType.INT64,
        ElementType.UINT8,
        ElementType.UINT16,
        ElementType.UINT32,
        ElementType.UINT64,
    }
)


def value_from_proto(msg: Any, *, base_dir: str | None = None) -> Any:
    """The runtime value of a TensorProto, SequenceProto, MapProto, OptionalProto or SparseTensorProto.

    The onnx package's messages of those kinds are accepted (converted by their octets).

    Raises:
        TensorError: Malformed contents (sizes, types, a map whose keys and values differ in number).
        MessageTypeError: ``msg`` is none of those messages (a ``TypeError``).
    """
    msg = as_message(msg, _VALUE_MESSAGES, "value_from_proto")
    return _from(msg, base_dir, 0)


def _from(msg: Any, base_dir: str | None, depth: int) -> Any:
    if depth > _MAX_NESTING:
        raise TensorError(f"value nesting deeper than {_MAX_NESTING}")
    if isinstance(msg, TensorProto):
        return to_array(msg, base_dir=base_dir)
    if isinstance(msg, SparseTensorProto):
        return _sparse_from(msg, base_dir)
    if isinstance(msg, SequenceProto):
        return _sequence_from(msg, base_dir, depth)
    if isinstance(msg, MapProto):
        return _map_from(msg, base_dir, depth)
    if isinstance(msg, OptionalProto):
        field = _OPT_FIELDS.get(msg.elem_type)  # type: ignore[call-overload]
        present = [f for f in _OPT_FIELDS.values() if getattr(msg, f) is not None]
        if len(present) > 1:
            raise TensorError(f"optional {msg.name!r} holds more than one value")
        if not present:
            return None
        if field is not None and present[0] != field:
            raise TensorError(f"optional {msg.name!r}: elem_type {msg.elem_type} but the value is in {present[0]}")
        return _from(getattr(msg, present[0]), base_dir, depth + 1)
    raise TensorError(f"not a value message: {type(msg).__name__}")


def _sparse_from(msg: SparseTensorProto, base_dir: str | None) -> SparseTensor:
    if msg.values is None:
        raise TensorError("sparse tensor without values")
    values = to_array(msg.values, base_dir=base_dir)
    if msg.indices is None:
        indices = np.zeros((0,), dtype=np.int64)
    else:
        if msg.indices.data_type != TensorProto.DataType.INT64:
            raise TensorError(f"sparse tensor {msg.values.name!r}: indices must be INT64")
        indices = to_array(msg.indices, base_dir=base_dir)
    return SparseTensor(values, indices, list(msg.dims))


def _sequence_from(msg: SequenceProto, base_dir: str | None, depth: int) -> list[Any]:
    present = [f for f in _SEQ_FIELDS.values() if len(getattr(msg, f))]
    if len(present) > 1:
        raise TensorError(f"sequence {msg.name!r} holds values of more than one kind: {present}")
    field = _SEQ_FIELDS.get(msg.elem_type)  # type: ignore[call-overload]
    if present and field is not None and present[0] != field:
        raise TensorError(f"sequence {msg.name!r}: elem_type {msg.elem_type} but the values are in {present[0]}")
    if not present:
        return []
    return [_from(m, base_dir, depth + 1) for m in getattr(msg, present[0])]


def _map_from(msg: MapProto, base_dir: str | None, depth: int) -> dict[Any, Any]:
    try:
        kt = element_type(msg.key_type)
    except ElementTypeError as e:
        raise TensorError(f"map {msg.name!r}: {e}") from None
    keys: list[Any]
    if kt is ElementType.STRING:
        if msg.keys:
            raise TensorError(f"map {msg.name!r}: STRING keys must be in string_keys")
        keys = [bytes(k) for k in msg.string_keys]
    elif kt in _INTEGRAL_KEYS:
        if msg.string_keys:
            raise TensorError(f"map {msg.name!r}: integral keys must be in keys")
        keys = list(msg.keys)
    else:
        raise TensorError(f"map {msg.name!r}: key type {kt.name} is not integral or STRING (Clause 6.8.2)")
    values = [] if msg.values is None else _sequence_from(msg.values, base_dir, depth + 1)
    if len(keys) != len(values):
        raise TensorError(f"map {msg.name!r}: {len(keys)} keys but {len(values)} values")
    return dict(zip(keys, values, strict=True))


# --------------------------------------------------------------------------------------------- to proto


def value_type_of(value: Any) -> ValueType | None:
    """The value type of a runtime value (shapes included for tensors); None for an empty or absent value
    whose type cannot be told."""
    if isinstance(value, np.ndarray | np.generic):
        arr = np.asarray(value)
        try:
            et = ElementType.from_dtype(arr.dtype)
        except ElementTypeError:
            return None
        return TensorType(et, Shape(arr.shape))
    if isinstance(value, SparseTensor):
        return SparseTensorType(ElementType.from_dtype(value.values.dtype), Shape(value.dims))
    if isinstance(value, list):
        present = next((v for v in value if v is not None), None)
        inner = None if present is None else value_type_of(present)
        return SequenceType(OptionalType(inner) if any(v is None for v in value) else inner)
    if isinstance(value, dict):
        if not value:
            return MapType(None, None)
        k = next(iter(value))
        key = ElementType.STRING if isinstance(k, bytes | str) else ElementType.INT64
        return MapType(key, SequenceType(value_type_of(value[k])).elem)
    return None


def value_to_proto(value: Any, name: str = "", *, value_type: ValueType | None = None, raw: bool = True) -> Any:
    """The proto of a runtime value: TensorProto for an array, SequenceProto for a list, MapProto for a
    dict, SparseTensorProto for a :class:`SparseTensor`, OptionalProto for None or when
    ``value_type`` is an :class:`OptionalType`.

    Args:
        value: The runtime value.
        name: Name to record in the proto (absent when empty).
        value_type: The declared type, which settles what the value alone cannot: an optional
            wrapper, the element type of an empty sequence, the key type of a map.
        raw: Tensors in raw storage (else typed storage).
    """
    return _to(value, name, value_type, raw, 0)


def _kind_tag(t: ValueType | None, value: Any) -> int:
    D = SequenceProto.DataType
    if isinstance(t, TensorType) or (t is None and isinstance(value, np.ndarray | np.generic)):
        return D.TENSOR
    if isinstance(t, SparseTensorType) or (t is None and isinstance(value, SparseTensor)):
        return D.SPARSE_TENSOR
    if isinstance(t, SequenceType) or (t is None and isinstance(value, list)):
        return D.SEQUENCE
    if isinstance(t, MapType) or (t is None and isinstance(value, dict)):
        return D.MAP
    if isinstance(t, OptionalType):
        return D.OPTIONAL
    return D.UNDEFINED


def _to(value: Any, name: str, t: ValueType | None, raw: bool, depth: int) -> Any:
    if depth > _MAX_NESTING:
        raise TensorError(f"value nesting deeper than {_MAX_NESTING}")
    nm = name or None
    if isinstance(t, OptionalType) or (t is None and value is None):
        inner_t = t.elem if isinstance(t, OptionalType) else None
        out = OptionalProto(name=nm)
        kind = _kind_tag(inner_t, value)
        if kind != OptionalProto.DataType.UNDEFINED:
            out.elem_type = kind
            out.mark_present("elem_type")
        if value is not None:
            field = _OPT_FIELDS[kind] if kind else None  # type: ignore[index]
            if field is None:
                raise TensorError(f"cannot store {type(value).__name__} in an optional")
            setattr(out, field, _to(value, "", inner_t, raw, depth + 1))
        return out
    if isinstance(value, np.ndarray | np.generic):
        et = t.elem_type if isinstance(t, TensorType) else None
        return from_array(np.asarray(value), name, elem_type=et, raw=raw)
    if isinstance(value, SparseTensor):
        et = t.elem_type if isinstance(t, SparseTensorType) else None
        return SparseTensorProto(
            values=from_array(value.values, name, elem_type=et, raw=raw),
            indices=from_array(np.asarray(value.indices, dtype=np.int64), raw=raw),
            dims=list(value.dims),
        )
    if isinstance(value, list):
        elem_t = t.elem if isinstance(t, SequenceType) else None
        if elem_t is None and any(v is None for v in value):
            # an absent element can only be an optional: the elements are optionals
            present = next((v for v in value if v is not None), None)
            elem_t = OptionalType(None if present is None else value_type_of(present))
        seq = SequenceProto(name=nm)
        kind = _kind_tag(elem_t, value[0] if value else None)
        seq.elem_type = kind
        seq.mark_present("elem_type")
        if value:
            field = _SEQ_FIELDS.get(kind)  # type: ignore[call-overload]
            if field is None:
                raise TensorError(f"cannot store {type(value[0]).__name__} in a sequence")
            setattr(seq, field, [_to(v, "", elem_t, raw, depth + 1) for v in value])
        return seq
    if isinstance(value, dict):
        return _map_to(value, nm, t if isinstance(t, MapType) else None, raw, depth)
    raise TensorError(f"not a runtime value: {type(value).__name__}")


def _map_to(value: dict[Any, Any], nm: str | None, t: MapType | None, raw: bool, depth: int) -> MapProto:
    keys = list(value)
    key_t = t.key if t is not None else None
    if key_t is None:
        key_t = ElementType.STRING if keys and isinstance(keys[0], bytes | str) else ElementType.INT64
    out = MapProto(name=nm, key_type=int(key_t))
    if key_t is ElementType.STRING:
        sk = []
        for k in keys:
            if isinstance(k, str):
                sk.append(k.encode("utf-8"))
            elif isinstance(k, bytes):
                sk.append(k)
            else:
                raise TensorError(f"map key {k!r} is not a string")
        out.string_keys = sk
    else:
        try:
            out.keys = [int(k) for k in keys]
        except (TypeError, ValueError):
            raise TensorError("map keys must be integers for an integral key type") from None
    value_t = SequenceType(t.value) if t is not None else None
    out.values = _to(list(value.values()), "", value_t, raw, depth + 1)
    return out
