"""Checking the values a caller feeds against the declared graph inputs (Clauses 6.5, 7.1).

A feed must match its input's declared kind, element type and rank, every fixed extent, and every
dimension variable consistently across all inputs (Clause 6.5.2: variables are model-scoped).
STRING tensors are object arrays of ``bytes`` (Clause 6.4); ``str`` feeds are encoded as UTF-8.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.errors import InputError, LimitError
from onnxcore.limits import active_limits
from onnxcore.proto import TensorProto, TypeProto
from onnxcore.types import ElementType, SparseTensor

__all__ = ["check_feed", "np_dtype", "string_feed"]

_STRING = int(TensorProto.DataType.STRING)
_REF_BYTES = np.dtype(object).itemsize  # a STRING element counts one reference (Clause 15.4)
_dtype_cache: dict[int, np.dtype[Any] | None] = {}


def np_dtype(elem: int) -> np.dtype[Any] | None:
    """The numpy dtype of an ONNX element type (``TensorProto.DataType`` value), or None when it has none."""
    if elem in _dtype_cache:
        return _dtype_cache[elem]
    try:
        dt: np.dtype[Any] | None = np.dtype(ElementType(elem).np_dtype)
    except (ValueError, TypeError):
        dt = None
    _dtype_cache[elem] = dt
    return dt


def _to_bytes(x: Any, where: str) -> bytes:
    if isinstance(x, bytes):
        return x
    if isinstance(x, str):
        return x.encode("utf-8")
    if isinstance(x, bytearray | memoryview | np.bytes_):
        return bytes(x)
    raise InputError(f"{where}: a STRING element must be bytes or str, got {type(x).__name__}")


_MANY_STRINGS = 64


def string_feed(value: Any, where: str) -> np.ndarray:
    """A STRING feed as an object array of ``bytes`` (``str`` elements encoded as UTF-8), within the limits in force
    (Clause 15.4); InputError naming ``where`` for an element that is neither."""
    arr = np.asarray(value, dtype=object) if not isinstance(value, np.ndarray) else value
    if arr.dtype.kind not in "OUS":
        raise InputError(f"{where}: expected a STRING tensor, got dtype {arr.dtype}")
    # Checked before the elements are visited or copied: a broadcast view of 2**31 strings is a few octets, its
    # conversion 16 GiB (Clause 15.4; the nominal size is checked again with every feed below).
    limits = active_limits()
    nbytes = arr.size * _REF_BYTES
    most, most_bytes, most_alloc = limits.max_tensor_elements, limits.max_tensor_bytes, limits.max_alloc_bytes
    # (compared first, the messages made only for a refusal: a feed of one string pays a few comparisons)
    if (
        (most is not None and arr.size > most)
        or (most_bytes is not None and nbytes > most_bytes)
        or (most_alloc is not None and nbytes > most_alloc)
    ):
        limits.check_elements(arr.size, f"{where} (shape {arr.shape})")
        limits.check_bytes(nbytes, f"{where} (shape {arr.shape})")
        raise LimitError(
            f"{where}: {arr.size} strings (shape {arr.shape}) need {nbytes} octets of references, more than "
            f"max_alloc_bytes ({limits.max_alloc_bytes}) (Clause 15.4)"
        )
    kind = arr.dtype.kind
    if kind == "U" and arr.size >= _MANY_STRINGS:
        # numpy's text as its 32-bit code points: when all are ASCII, their UTF-8 encoding is each code point as one
        # octet, and numpy makes the bytes objects in C (a 1,000-row column of city names: 74 -> 26 us; below
        # _MANY_STRINGS elements the numpy calls cost more than encoding each element).
        points = np.ascontiguousarray(arr).view(np.uint32)
        if int(points.max()) < 0x80:
            octets = points.astype(np.uint8).view(f"S{arr.dtype.itemsize // 4}")
            return octets.reshape(arr.shape).astype(object)
    elif kind == "S":
        return arr.astype(object)  # (bytes objects made in C; numpy's fixed-width bytes drop trailing NULs either way)
    # One pass over the elements as Python objects (``tolist`` makes them in C), not one numpy index per element.
    flat = arr.ravel().tolist()
    if kind == "U":
        # UTF-8 (str.encode's default), straight into the array: no list of the encoded values first
        return np.fromiter(map(str.encode, flat), dtype=object, count=len(flat)).reshape(arr.shape)
    if kind == "O":
        kinds = set(map(type, flat))
        if kinds <= {bytes}:
            return arr
        if kinds == {str}:
            return np.fromiter(map(str.encode, flat), dtype=object, count=len(flat)).reshape(arr.shape)
        flat = [_to_bytes(x, where) for x in flat]
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(arr.shape)


def _check_tensor(value: Any, tt: TypeProto.Tensor, where: str, dims: dict[str, int]) -> Any:
    elem = int(tt.elem_type)
    if elem == _STRING:
        value = string_feed(value, where)
    else:
        if isinstance(value, np.generic):
            value = np.asarray(value)
        if not isinstance(value, np.ndarray):
            raise InputError(f"{where}: expected a numpy array, got {type(value).__name__}")
        if elem:
            want = np_dtype(elem)
            if want is not None and value.dtype != want:
                raise InputError(f"{where}: element type {value.dtype} where the input declares {want} (Clause 6.2)")
    # A feed counts as the tensor it denotes: a broadcast view of 2**40 rows holds a few octets but makes every
    # kernel that reads it allocate its nominal size (Clause 15.4).
    limits = active_limits()
    limits.check_elements(value.size, f"{where} (shape {value.shape})")
    limits.check_bytes(value.size * value.dtype.itemsize, f"{where} (shape {value.shape})")
    shape = tt.shape
    if shape is None:
        return value
    decl = shape.dim
    if value.ndim != len(decl):
        raise InputError(f"{where}: rank {value.ndim} where the input declares rank {len(decl)} (shape {value.shape})")
    for axis, (extent, d) in enumerate(zip(value.shape, decl)):
        if d.has("dim_value"):
            if extent != d.dim_value:
                raise InputError(f"{where}: extent {extent} on axis {axis} where the input declares {d.dim_value}")
        elif d.dim_param:
            bound = dims.setdefault(d.dim_param, extent)
            if bound != extent:
                raise InputError(
                    f"{where}: dimension variable {d.dim_param!r} is {extent} on axis {axis} but {bound} "
                    "elsewhere (Clause 6.5.2)"
                )
    return value


def check_feed(value: Any, tp: TypeProto | None, where: str, dims: dict[str, int]) -> Any:
    """``value`` checked against ``tp`` (and converted where the input allows); InputError if not.

    Args:
        value: The fed value.
        tp: The declared type (None: undeclared, not checked).
        where: The input's description for messages.
        dims: Extents bound to dimension variables so far; updated.
    """
    if tp is None:
        return value
    kind = tp.which_oneof("value")
    if kind == "tensor_type":
        if value is None:
            raise InputError(f"{where}: None fed for a tensor input")
        assert tp.tensor_type is not None
        return _check_tensor(value, tp.tensor_type, where, dims)
    if kind == "sequence_type":
        if not isinstance(value, list | tuple):
            raise InputError(f"{where}: expected a sequence (list), got {type(value).__name__}")
        assert tp.sequence_type is not None
        et = tp.sequence_type.elem_type
        # Each element binds the element type's dimension variables afresh. Clause 6.5.2 (its NOTE) reads a
        # variable in a sequence's element type as one extent for all elements, but the ONNX 1-3 vectors
        # (test_sequence_map_*) feed elements that differ there; we admit them (a known divergence) and
        # still check element type and rank, and each element against the variables bound outside it.
        return [check_feed(v, et, f"{where}[{i}]", dict(dims)) for i, v in enumerate(value)]
    if kind == "map_type":
        if not isinstance(value, dict):
            raise InputError(f"{where}: expected a map (dict), got {type(value).__name__}")
        assert tp.map_type is not None
        vt = tp.map_type.value_type
        return {k: check_feed(v, vt, f"{where}[{k!r}]", dims) for k, v in value.items()}
    if kind == "optional_type":
        if value is None:
            return None
        assert tp.optional_type is not None
        return check_feed(value, tp.optional_type.elem_type, where, dims)
    if kind == "sparse_tensor_type":
        if not isinstance(value, SparseTensor):
            raise InputError(f"{where}: expected a SparseTensor, got {type(value).__name__}")
        return value
    return value
