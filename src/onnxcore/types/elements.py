"""Element types (Clause 6.2, Table 5) with their numpy dtypes, widths and IR versions (Table 12)."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import numpy as np

from onnxcore.errors import TensorError

__all__ = ["ElementType", "ElementTypeError", "element_type", "narrow_float_dtypes"]


class ElementTypeError(TensorError):
    """An element type tag that is 0 (UNDEFINED) or not listed in Table 5, or an unmapped dtype."""


class ElementType(IntEnum):
    """The element types of Table 5; the value of each member is its wire tag.

    Tag 0 (UNDEFINED) is deliberately not a member: Clause 6.2 forbids it as the element type of
    a value, and an unlisted tag has no meaning, so ``ElementType(0)`` raises
    :class:`ElementTypeError` (a :class:`~onnxcore.TensorError` and a ``ValueError``).
    """

    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E4M3FNUZ = 18
    FLOAT8E5M2 = 19
    FLOAT8E5M2FNUZ = 20
    UINT4 = 21
    INT4 = 22
    FLOAT4E2M1 = 23
    FLOAT8E8M0 = 24
    UINT2 = 25
    INT2 = 26
    FLOAT6E2M3 = 27
    FLOAT6E3M2 = 28

    @classmethod
    def _missing_(cls, value: object) -> Any:
        if value == 0:
            raise ElementTypeError("element type tag 0 (UNDEFINED) is not the type of any value (Clause 6.2)")
        raise ElementTypeError(f"unknown element type tag {value!r}: Table 5 lists tags 1 to 28 (Clause 6.2)")

    @property
    def np_dtype(self) -> np.dtype[Any]:
        """The numpy dtype holding one element (``ml_dtypes`` for the narrow types, ``object`` for STRING)."""
        try:
            return _DTYPES[self]
        except KeyError:
            _load_narrow()
            return _DTYPES[self]

    @property
    def bits(self) -> int:
        """Width of one element in bits (0 for STRING, whose elements have no fixed width)."""
        return _BITS[self]

    @property
    def ir_version(self) -> int:
        """The IR version that introduced the type (Table 12; upstream proto history before IR 8)."""
        return _IR_VERSION[self]

    @property
    def type_name(self) -> str:
        """The lowercase name used in type strings such as ``tensor(float8e4m3fn)``."""
        return self.name.lower()

    @property
    def is_narrow(self) -> bool:
        """Whether the type is narrower than 8 bits (packed in storage, Clause 6.3.4)."""
        return 0 < self.bits < 8

    @property
    def is_float(self) -> bool:
        """Whether the type is a real floating-point type (narrow ones and FLOAT8E8M0 included)."""
        return self in _FLOATS

    @property
    def is_integer(self) -> bool:
        """Whether the type is a (signed or unsigned) integer type, narrow ones included (not BOOL)."""
        return self in _INTS

    @property
    def is_signed_integer(self) -> bool:
        """Whether the type is a signed integer type."""
        return self in _SIGNED_INTS

    @property
    def is_complex(self) -> bool:
        """Whether the type is COMPLEX64 or COMPLEX128."""
        return self in (ElementType.COMPLEX64, ElementType.COMPLEX128)

    @classmethod
    def from_dtype(cls, dtype: Any) -> ElementType:
        """The element type whose numpy dtype is ``dtype`` (``str``/``bytes``/``object`` give STRING).

        Raises:
            ElementTypeError: For a dtype with no element type (e.g. ``float128``, datetime).
        """
        try:
            dt = np.dtype(dtype)
        except (TypeError, ValueError, UnicodeError) as e:  # not a dtype, or a name that is not even text
            raise ElementTypeError(f"not a numpy dtype: {dtype!r}") from e
        if dt.kind in "OSU":
            return cls.STRING
        key = dt.newbyteorder("=") if dt.byteorder not in "=|" else dt
        found = _BY_DTYPE.get(key)
        if found is None and dt.kind == "V":  # ml_dtypes' types are kind V: the caller has loaded it already
            _load_narrow()
            found = _BY_DTYPE.get(key)
        if found is None:
            raise ElementTypeError(f"numpy dtype {dt} has no ONNX element type (Table 5)")
        return found


def element_type(tag: int | ElementType) -> ElementType:
    """The :class:`ElementType` of wire tag ``tag``; raises :class:`ElementTypeError` if not in Table 5."""
    if isinstance(tag, ElementType):
        return tag
    if isinstance(tag, bool) or not isinstance(tag, int | np.integer):
        raise ElementTypeError(f"element type tag must be an int, got {type(tag).__name__}")
    return ElementType(int(tag))


E = ElementType

_DTYPES: dict[ElementType, np.dtype[Any]] = {
    E.FLOAT: np.dtype(np.float32),
    E.UINT8: np.dtype(np.uint8),
    E.INT8: np.dtype(np.int8),
    E.UINT16: np.dtype(np.uint16),
    E.INT16: np.dtype(np.int16),
    E.INT32: np.dtype(np.int32),
    E.INT64: np.dtype(np.int64),
    E.STRING: np.dtype(object),
    E.BOOL: np.dtype(np.bool_),
    E.FLOAT16: np.dtype(np.float16),
    E.DOUBLE: np.dtype(np.float64),
    E.UINT32: np.dtype(np.uint32),
    E.UINT64: np.dtype(np.uint64),
    E.COMPLEX64: np.dtype(np.complex64),
    E.COMPLEX128: np.dtype(np.complex128),
}

_BY_DTYPE: dict[np.dtype[Any], ElementType] = {dt: et for et, dt in _DTYPES.items() if et is not E.STRING}

# The types numpy lacks, by their ml_dtypes names. ml_dtypes is imported on the first use of one of them, not with
# onnxcore: its 0.7 release takes about half a second to import, which every script and command paid for models
# that never use these types.
_NARROW: dict[ElementType, str] = {
    E.BFLOAT16: "bfloat16",
    E.FLOAT8E4M3FN: "float8_e4m3fn",
    E.FLOAT8E4M3FNUZ: "float8_e4m3fnuz",
    E.FLOAT8E5M2: "float8_e5m2",
    E.FLOAT8E5M2FNUZ: "float8_e5m2fnuz",
    E.UINT4: "uint4",
    E.INT4: "int4",
    E.FLOAT4E2M1: "float4_e2m1fn",
    E.FLOAT8E8M0: "float8_e8m0fnu",
    E.UINT2: "uint2",
    E.INT2: "int2",
    E.FLOAT6E2M3: "float6_e2m3fn",
    E.FLOAT6E3M2: "float6_e3m2fn",
}
_NARROW_FLOATS: list[frozenset[np.dtype[Any]]] = []


def _load_narrow() -> None:
    """Import ml_dtypes and enter its dtypes in the tables (idempotent)."""
    if _NARROW_FLOATS:
        return
    # Lazy on purpose: a slow import (see _NARROW) needed only by models that use the narrow types.
    import ml_dtypes

    for et, name in _NARROW.items():
        dt = np.dtype(getattr(ml_dtypes, name))
        _DTYPES[et] = dt
        _BY_DTYPE[dt] = et
    _NARROW_FLOATS.append(frozenset(_DTYPES[et] for et in _NARROW if et in _FLOATS))


def narrow_float_dtypes() -> frozenset[np.dtype[Any]]:
    """The numpy dtypes of the floating-point types numpy lacks (bfloat16, float8, float6, float4; ml_dtypes).

    Calling it imports ml_dtypes.
    """
    _load_narrow()
    return _NARROW_FLOATS[0]


_BITS: dict[ElementType, int] = {
    E.FLOAT: 32,
    E.UINT8: 8,
    E.INT8: 8,
    E.UINT16: 16,
    E.INT16: 16,
    E.INT32: 32,
    E.INT64: 64,
    E.STRING: 0,
    E.BOOL: 8,
    E.FLOAT16: 16,
    E.DOUBLE: 64,
    E.UINT32: 32,
    E.UINT64: 64,
    E.COMPLEX64: 64,
    E.COMPLEX128: 128,
    E.BFLOAT16: 16,
    E.FLOAT8E4M3FN: 8,
    E.FLOAT8E4M3FNUZ: 8,
    E.FLOAT8E5M2: 8,
    E.FLOAT8E5M2FNUZ: 8,
    E.UINT4: 4,
    E.INT4: 4,
    E.FLOAT4E2M1: 4,
    E.FLOAT8E8M0: 8,
    E.UINT2: 2,
    E.INT2: 2,
    E.FLOAT6E2M3: 6,
    E.FLOAT6E3M2: 6,
}

# Table 12 states IR 8 onwards. Before IR 8 the upstream proto's version comments say tags 1-15
# were in the first published IR (1) and BFLOAT16 came with IR 4; see docs/types.md.
_IR_VERSION: dict[ElementType, int] = {et: 1 for et in E if et <= E.COMPLEX128}
_IR_VERSION.update(
    {
        E.BFLOAT16: 4,
        E.FLOAT8E4M3FN: 9,
        E.FLOAT8E4M3FNUZ: 9,
        E.FLOAT8E5M2: 9,
        E.FLOAT8E5M2FNUZ: 9,
        E.UINT4: 10,
        E.INT4: 10,
        E.FLOAT4E2M1: 11,
        E.FLOAT8E8M0: 12,
        E.UINT2: 13,
        E.INT2: 13,
        E.FLOAT6E2M3: 14,
        E.FLOAT6E3M2: 14,
    }
)

_FLOATS = frozenset(
    {
        E.FLOAT,
        E.FLOAT16,
        E.DOUBLE,
        E.BFLOAT16,
        E.FLOAT8E4M3FN,
        E.FLOAT8E4M3FNUZ,
        E.FLOAT8E5M2,
        E.FLOAT8E5M2FNUZ,
        E.FLOAT4E2M1,
        E.FLOAT8E8M0,
        E.FLOAT6E2M3,
        E.FLOAT6E3M2,
    }
)
_SIGNED_INTS = frozenset({E.INT8, E.INT16, E.INT32, E.INT64, E.INT4, E.INT2})
_INTS = _SIGNED_INTS | {E.UINT8, E.UINT16, E.UINT32, E.UINT64, E.UINT4, E.UINT2}
