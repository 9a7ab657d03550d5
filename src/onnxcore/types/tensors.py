"""TensorProto <-> numpy arrays for every element type and storage form (Clause 6.3.4, Table 7).

Raw storage (``raw_data``) is little-endian on every host; narrow types there are a bit stream.
Typed storage follows the field assignment of the schema's comments (``float_data`` for FLOAT and
COMPLEX64, ``double_data`` for DOUBLE and COMPLEX128, ``int64_data`` for INT64, ``uint64_data``
for UINT32 and UINT64, ``string_data`` for STRING, ``int32_data`` for all the others), with the
narrow types packed per Table 7 and floats narrower than 32 bits as the unsigned integer of their bits.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from onnxcore.errors import TensorError
from onnxcore.external.mapped import backing_mapping
from onnxcore.external.read import read_external_tensor_bytes
from onnxcore.proto import TensorProto
from onnxcore.proto.bridge import OnnxMessage, as_message
from onnxcore.proto.decoder import NanBits
from onnxcore.types.elements import ElementType, ElementTypeError, element_type
from onnxcore.types.packing import (
    from_codes,
    int32_per_elements,
    pack_bits,
    pack_int32,
    packed_size,
    to_codes,
    unpack_bits,
    unpack_int32,
)

__all__ = ["to_array", "from_array", "typed_field", "raw_size", "tensor_element_count"]

E = ElementType
_MAX_RANK = 64  # numpy's limit; a deeper tensor cannot be represented as an array

_TYPED_FIELD: dict[ElementType, str] = {et: "int32_data" for et in ElementType}
_TYPED_FIELD.update(
    {
        E.FLOAT: "float_data",
        E.COMPLEX64: "float_data",
        E.DOUBLE: "double_data",
        E.COMPLEX128: "double_data",
        E.INT64: "int64_data",
        E.UINT32: "uint64_data",
        E.UINT64: "uint64_data",
        E.STRING: "string_data",
    }
)
_TYPED_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")

# Element types stored in int32_data as the integer value itself (range checked on read).
_INT32_VALUE_RANGE: dict[ElementType, tuple[int, int]] = {
    E.INT32: (-(2**31), 2**31 - 1),
    E.INT16: (-(2**15), 2**15 - 1),
    E.INT8: (-128, 127),
    E.UINT16: (0, 2**16 - 1),
    E.UINT8: (0, 255),
    E.BOOL: (0, 1),
}
# Floats narrower than 32 bits: the unsigned integer of their bits (Clause 6.3.4, last paragraph).
_BITS_IN_INT32 = frozenset(
    {E.FLOAT16, E.BFLOAT16, E.FLOAT8E4M3FN, E.FLOAT8E4M3FNUZ, E.FLOAT8E5M2, E.FLOAT8E5M2FNUZ, E.FLOAT8E8M0}
)
_UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def typed_field(et: ElementType) -> str:
    """Name of the typed storage field of element type ``et``."""
    return _TYPED_FIELD[et]


def raw_size(et: ElementType, n: int) -> int:
    """Octets of raw storage for ``n`` elements of ``et`` (Clause 6.3.4); STRING has no raw storage."""
    if et is E.STRING:
        raise TensorError("STRING tensors have no raw storage")
    return packed_size(n, et.bits)


def _label(tensor: TensorProto) -> str:
    return f"tensor {tensor.name!r}" if tensor.name else "tensor (unnamed)"


def tensor_element_count(tensor: TensorProto) -> int:
    """The number of elements ``dims`` declares; raises TensorError on a negative or too many dims."""
    dims = tensor.dims
    if len(dims) > _MAX_RANK:
        raise TensorError(f"{_label(tensor)}: rank {len(dims)} exceeds the supported maximum of {_MAX_RANK}")
    for d in dims:
        if d < 0:
            raise TensorError(f"{_label(tensor)}: negative dimension {d} in dims {list(dims)}")
    return math.prod(dims)


def _size_error(tensor: TensorProto, et: ElementType, where: str, expected: int, actual: int, unit: str) -> TensorError:
    return TensorError(
        f"{_label(tensor)}: {where} holds {actual} {unit}, but {et.name} with dims {list(tensor.dims)} "
        f"needs {expected} {unit}"
    )


def _element_type_of(tensor: TensorProto) -> ElementType:
    try:
        return element_type(tensor.data_type)
    except ElementTypeError as e:
        raise ElementTypeError(f"{_label(tensor)}: {e}") from None


def to_array(tensor: TensorProto | OnnxMessage, *, base_dir: str | None = None) -> npt.NDArray[Any]:
    """The contents of ``tensor`` as a numpy array of its element type's dtype.

    Raw storage gives a read-only zero-copy view of ``raw_data`` where the layout allows it (types
    of 8 bits or more); packed narrow types are unpacked into one element per octet. STRING gives an
    object array of ``bytes``. A rank-0 tensor gives a 0-d array.

    Args:
        tensor: The tensor: onnxcore's, or the onnx package's ``TensorProto`` (converted by its octets).
        base_dir: Directory that external data locations are relative to (Clause 13).

    Raises:
        TensorError: Unknown or UNDEFINED element type, a data length that disagrees with ``dims``,
            data in both raw and typed storage or in a field of another type, or a ``segment``.
        ExternalDataError: external data whose reference is refused or cannot be read (Clause 15).
        MessageTypeError: ``tensor`` is not a TensorProto (a ``TypeError``).
    """
    tensor = as_message(tensor, TensorProto, "to_array")
    if tensor.segment is not None:
        raise TensorError(f"{_label(tensor)}: tensors with a segment are not supported")
    et = _element_type_of(tensor)
    n = tensor_element_count(tensor)
    shape = tuple(tensor.dims)
    if n == 0:
        try:  # numpy refuses some empty shapes whose other extents are huge
            np.empty(shape, dtype=et.np_dtype)
        except ValueError:
            raise TensorError(f"{_label(tensor)}: dims {list(shape)} cannot be held as an array") from None
    if tensor.data_location == TensorProto.DataLocation.EXTERNAL:
        return _decode_raw(tensor, et, n, shape, read_external_tensor_bytes(tensor, base_dir), "external data")
    elif tensor.data_location != TensorProto.DataLocation.DEFAULT:
        raise TensorError(f"{_label(tensor)}: unknown data_location {tensor.data_location}")
    field = _TYPED_FIELD[et]
    for other in _TYPED_FIELDS:
        if other != field and len(getattr(tensor, other)):
            raise TensorError(f"{_label(tensor)}: {et.name} data found in {other}; its typed field is {field}")
    if tensor.has("raw_data"):
        if len(getattr(tensor, field)):
            raise TensorError(f"{_label(tensor)}: data in both raw_data and {field} (Clause 6.3.4: one or the other)")
        if et is E.STRING:
            raise TensorError(f"{_label(tensor)}: STRING tensors cannot use raw_data; use string_data")
        return _decode_raw(tensor, et, n, shape, tensor.raw_data, "raw_data")
    return _decode_typed(tensor, et, n, shape)


def _decode_raw(
    tensor: TensorProto, et: ElementType, n: int, shape: tuple[int, ...], raw: Any, where: str
) -> npt.NDArray[Any]:
    if et is E.STRING:
        raise TensorError(f"{_label(tensor)}: STRING tensors have no raw storage")
    expected = packed_size(n, et.bits)
    actual = len(raw) if not isinstance(raw, memoryview) else raw.nbytes
    if actual != expected:
        raise _size_error(tensor, et, where, expected, actual, "octets")
    dtype = et.np_dtype
    if et.is_narrow:
        codes = unpack_bits(np.frombuffer(raw, dtype=np.uint8), n, et.bits)
        return from_codes(codes, dtype, shape)
    component = dtype.itemsize // 2 if et.is_complex else dtype.itemsize
    if component == 1 or sys.byteorder == "little":
        arr = np.frombuffer(raw, dtype=dtype)
    else:  # pragma: no cover - big-endian hosts only
        le = np.frombuffer(raw, dtype=np.dtype(_UINT_OF_SIZE[component]).newbyteorder("<"))
        arr = le.astype(_UINT_OF_SIZE[component]).view(dtype)
    return arr.reshape(shape)


def _typed_count_error(tensor: TensorProto, et: ElementType, field: str, expected: int, actual: int) -> TensorError:
    return _size_error(tensor, et, field, expected, actual, "values")


def _decode_typed(tensor: TensorProto, et: ElementType, n: int, shape: tuple[int, ...]) -> npt.NDArray[Any]:
    field = _TYPED_FIELD[et]
    data: Sequence[Any] = getattr(tensor, field)
    dtype = et.np_dtype
    if et is E.STRING:
        if len(data) != n:
            raise _typed_count_error(tensor, et, field, n, len(data))
        out = np.empty(n, dtype=object)
        for i, s in enumerate(data):
            out[i] = bytes(s)
        return out.reshape(shape)
    if et.is_narrow:
        expected = int32_per_elements(n, et.bits)
        if len(data) != expected:
            raise _typed_count_error(tensor, et, field, expected, len(data))
        values = _int_values(tensor, et, field, data, 0, 2**32 - 1)
        return from_codes(unpack_int32(values, n, et.bits), dtype, shape)
    expected = 2 * n if et.is_complex else n
    if len(data) != expected:
        raise _typed_count_error(tensor, et, field, expected, len(data))
    if et in (E.FLOAT, E.COMPLEX64):
        arr32 = np.array(data, dtype=np.float32)
        nan_at = [i for i, v in enumerate(data) if isinstance(v, NanBits)]
        if nan_at:  # keep the exact binary32 NaN pattern read from the wire
            arr32.view(np.uint32)[nan_at] = [data[i].bits for i in nan_at]
        return (arr32.view(np.complex64) if et.is_complex else arr32).reshape(shape)
    if et in (E.DOUBLE, E.COMPLEX128):
        arr64 = np.array(data, dtype=np.float64)
        return (arr64.view(np.complex128) if et.is_complex else arr64).reshape(shape)
    if et is E.INT64:
        return np.array(data, dtype=np.int64).reshape(shape)
    if et in (E.UINT32, E.UINT64):
        hi = 2**32 - 1 if et is E.UINT32 else 2**64 - 1
        values = _int_values(tensor, et, field, data, 0, hi)
        return values.astype(dtype).reshape(shape)
    if et in _BITS_IN_INT32:
        values = _int_values(tensor, et, field, data, 0, 2**et.bits - 1)
        return values.astype(_UINT_OF_SIZE[dtype.itemsize]).view(dtype).reshape(shape)
    lo, hi = _INT32_VALUE_RANGE[et]
    values = _int_values(tensor, et, field, data, lo, hi)
    return values.astype(dtype).reshape(shape)


def _int_values(
    tensor: TensorProto, et: ElementType, field: str, data: Sequence[Any], lo: int, hi: int
) -> npt.NDArray[Any]:
    dt = np.uint64 if hi > 2**63 - 1 else np.int64
    values = np.array(data, dtype=dt)
    if values.size:
        vmin, vmax = int(values.min()), int(values.max())
        if vmin < lo or vmax > hi:
            bad = vmin if vmin < lo else vmax
            raise TensorError(f"{_label(tensor)}: {field} value {bad} is outside [{lo}, {hi}] for {et.name}")
    return values


# --------------------------------------------------------------------------------------------- writing


def _as_string_array(array: Any, label: str) -> npt.NDArray[Any]:
    arr = np.asarray(array, dtype=object)
    out = np.empty(arr.shape, dtype=object)
    flat_in = arr.reshape(-1)
    flat_out = out.reshape(-1)
    for i, s in enumerate(flat_in):
        if isinstance(s, bytes):
            flat_out[i] = bytes(s)
        elif isinstance(s, str):
            try:
                flat_out[i] = s.encode("utf-8")
            except UnicodeEncodeError as e:
                raise TensorError(f"{label}: string element {i} cannot be encoded as UTF-8: {e.reason}") from None
        elif isinstance(s, bytearray | memoryview):
            flat_out[i] = bytes(s)
        else:
            raise TensorError(f"{label}: STRING element {i} is {type(s).__name__}, not bytes or str")
    return out


def _coerce(array: Any, elem_type: int | ElementType | None, label: str) -> tuple[npt.NDArray[Any], ElementType]:
    arr = array if isinstance(array, np.ndarray) else np.asarray(array)
    if elem_type is None:
        if arr.dtype.kind in "OSU":
            return _as_string_array(arr, label), E.STRING
        try:
            et = ElementType.from_dtype(arr.dtype)
        except ElementTypeError as e:
            raise TensorError(f"{label}: {e}") from None
        if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "<" and sys.byteorder == "big"):
            arr = arr.astype(arr.dtype.newbyteorder("="))
        return arr, et
    et = element_type(elem_type)
    if et is E.STRING:
        if arr.dtype.kind not in "OSU":
            raise TensorError(f"{label}: elem_type STRING needs str or bytes elements, got dtype {arr.dtype}")
        return _as_string_array(arr, label), et
    if arr.dtype == et.np_dtype:
        return arr, et
    if arr.dtype.kind in "OSU":
        raise TensorError(f"{label}: cannot store dtype {arr.dtype} as {et.name}")
    # Convert only when every value survives exactly: from_array stores, it does not cast.
    try:
        with np.errstate(all="ignore"):
            conv = arr.astype(et.np_dtype)
            back = conv.astype(arr.dtype)
    except (TypeError, ValueError) as e:
        raise TensorError(f"{label}: cannot store dtype {arr.dtype} as {et.name}: {e}") from None
    same = (back == arr) | ((back != back) & (arr != arr))
    if not bool(np.all(same)):
        raise TensorError(f"{label}: values of dtype {arr.dtype} are not exactly representable as {et.name}")
    return conv, et


def from_array(
    array: Any, name: str = "", *, elem_type: int | ElementType | None = None, raw: bool = True
) -> TensorProto:
    """A TensorProto holding ``array``.

    Args:
        array: The values (an ndarray, numpy scalar, or anything ``numpy.asarray`` accepts). ``str``
            elements of a STRING tensor are encoded as UTF-8; ``bytes`` are stored as they are.
        name: The tensor's name (absent when empty).
        elem_type: The element type; by default the one of the array's dtype. Values of another dtype
            are converted only when every value is exactly representable in the element type.
        raw: Write raw storage (``raw_data``, little-endian, narrow types bit-packed); otherwise the
            typed field of Table 7. STRING always uses ``string_data``. A read-only array of a
            memory-mapped file becomes a view of its octets (no copy).

    Raises:
        TensorError: For a dtype without an element type or values not representable in ``elem_type``.
    """
    if name is not None and not isinstance(name, str):
        raise TensorError(f"a tensor's name is a str, got {type(name).__name__}")
    label = f"tensor {name!r}" if name else "array"
    arr, et = _coerce(array, elem_type, label)
    if arr.ndim > _MAX_RANK:
        raise TensorError(f"{label}: rank {arr.ndim} exceeds the supported maximum of {_MAX_RANK}")
    t = TensorProto(dims=list(arr.shape), data_type=int(et), name=name or None)
    flat = np.ascontiguousarray(arr).reshape(-1)
    if et is E.STRING:
        t.string_data = list(flat)
        return t
    if raw:
        if et.is_narrow:
            t.raw_data = pack_bits(to_codes(flat, et.bits), et.bits)
        else:
            t.raw_data = _mapped_view(flat, et) or _le_bytes(flat, et)
        t.mark_present("raw_data")
        return t
    field = _TYPED_FIELD[et]
    values: list[Any]
    if et.is_narrow:
        values = pack_int32(to_codes(flat, et.bits), et.bits)
    elif et in (E.FLOAT, E.COMPLEX64):
        f32 = flat.view(np.float32) if et.is_complex else flat
        with np.errstate(invalid="ignore"):  # signalling NaNs are rewritten from their bits below
            values = f32.astype(np.float64).tolist()
        for i in np.flatnonzero(np.isnan(f32)).tolist():
            values[i] = NanBits(int(f32[i : i + 1].view(np.uint32)[0]))
    elif et in (E.DOUBLE, E.COMPLEX128):
        values = (flat.view(np.float64) if et.is_complex else flat).tolist()
    elif et in _BITS_IN_INT32:
        values = flat.view(_UINT_OF_SIZE[flat.dtype.itemsize]).astype(np.int64).tolist()
    elif et is E.BOOL:
        values = flat.astype(np.int64).tolist()
    else:
        values = flat.tolist()
    setattr(t, field, values)
    return t


def _mapped_view(flat: npt.NDArray[Any], et: ElementType) -> memoryview | None:
    """The octets of a read-only view of a memory-mapped file as they are (no copy), or None.

    Such an array cannot change (a read-only mapping), so ``raw_data`` may show it: a tensor of a loaded model's
    file, or the optimizer's spilled constant (:mod:`onnxcore.external.spill`), then stays in the file.
    """
    if flat.flags.writeable or not flat.dtype.isnative or (sys.byteorder != "little" and flat.dtype.itemsize > 1):
        return None
    base = backing_mapping(flat)
    if base is None or et.is_narrow:
        return None
    # A slice of the mapping itself (as the decoder's views are), so that a writer can tell the file and offset.
    start = int(flat.ctypes.data) - int(np.frombuffer(base, np.uint8).ctypes.data)
    if start < 0 or start + flat.nbytes > len(base):
        return None
    return memoryview(base)[start : start + flat.nbytes]


def _le_bytes(flat: npt.NDArray[Any], et: ElementType) -> bytes:
    dtype = flat.dtype
    component = dtype.itemsize // 2 if et.is_complex else dtype.itemsize
    if component == 1 or sys.byteorder == "little":
        return flat.tobytes()
    u = np.dtype(_UINT_OF_SIZE[component])  # pragma: no cover - big-endian hosts only
    return flat.view(u).astype(u.newbyteorder("<")).tobytes()  # pragma: no cover
