"""Conversions between element types, as the Cast and CastLike operators need them (Clause 6.3.2, 6.3.3).

Positions taken where the spec and the operator definitions leave a choice are listed in docs/types.md:

* To a narrow float (BFLOAT16, the FLOAT8, FLOAT6 and FLOAT4 types): round to nearest, ties to even,
  computed without double rounding (a binary64 or integer source is first narrowed to binary32 by
  rounding to odd, which makes the second rounding exact).
* FLOAT8 targets: ``saturate=True`` maps magnitudes beyond the largest finite value (infinities
  included) to that value with the operand's sign; ``saturate=False`` gives NaN, or infinity for
  FLOAT8E5M2 (the Cast tables). FLOAT6 and FLOAT4 targets always saturate (no infinity nor NaN).
* FLOAT8E8M0: the result is the power of two 2**r picked by ``round_mode`` from |x|: "down" the
  greatest not above it, "up" the least not below it, "nearest" the nearer one with ties up;
  r beyond [-127, 127] (zero included) saturates to the extreme or gives NaN; NaN gives NaN.
* To a narrow integer: round to nearest even (6.3.3), then keep the low bits (two's complement
  wrap), as the Cast test vectors show (-9.0 to INT4 is 7). To a wider integer: truncate toward
  zero, then wrap. NaN and infinities convert to 0 (the operator leaves them undefined).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import numpy.typing as npt

from onnxcore.errors import TensorError
from onnxcore.types.elements import ElementType, element_type

__all__ = ["cast_array", "format_number", "parse_number", "ROUND_MODES"]

E = ElementType
ROUND_MODES = ("up", "down", "nearest")

_FLOAT8 = frozenset({E.FLOAT8E4M3FN, E.FLOAT8E4M3FNUZ, E.FLOAT8E5M2, E.FLOAT8E5M2FNUZ})
# Narrow floats other than FLOAT8E8M0 reached through binary32 and ml_dtypes (RNE from binary32).
_VIA_F32 = frozenset({E.BFLOAT16, E.FLOAT4E2M1, E.FLOAT6E2M3, E.FLOAT6E3M2} | _FLOAT8)
_NARROW_INT = frozenset({E.INT4, E.UINT4, E.INT2, E.UINT2})


def cast_array(
    array: npt.ArrayLike, to: int | ElementType, *, saturate: bool = True, round_mode: str = "up"
) -> npt.NDArray[Any]:
    """Convert ``array`` to element type ``to`` as Cast does (Cast-19/24/25 semantics).

    Args:
        array: The source values: any numpy array of an element type's dtype (ml_dtypes included),
            or an object/str/bytes array of strings.
        to: The target element type.
        saturate: For FLOAT8 and FLOAT8E8M0 targets: clamp out-of-range values to the largest
            finite value (True) or give NaN/infinity (False).
        round_mode: For FLOAT8E8M0 targets: "up", "down" or "nearest".

    Returns:
        A new array of ``ElementType(to).np_dtype`` with the shape of ``array`` (0-d stays 0-d).

    Raises:
        TensorError: A string that is not a number for a numeric target, an unknown round mode,
            or a source dtype with no element type.
    """
    et = element_type(to)
    if round_mode not in ROUND_MODES:
        raise TensorError(f"round_mode must be one of {ROUND_MODES}, got {round_mode!r}")
    a = np.asarray(array)
    if a.dtype.kind in "OSU":
        if et is E.STRING:
            return _strings_to_bytes(a)
        return _cast_numeric(_parse_strings(a, et), et, saturate, round_mode)
    if et is E.STRING:
        return _numbers_to_strings(a)
    return _cast_numeric(a, et, saturate, round_mode)


# ------------------------------------------------------------------------------------ numeric targets


def _canonical_source(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """A numpy-native array holding the same values exactly (ml_dtypes floats -> float32, narrow ints -> int8)."""
    try:
        src = ElementType.from_dtype(a.dtype)
    except ValueError as e:
        raise TensorError(str(e)) from None
    if a.dtype.byteorder not in "=|":
        a = a.astype(a.dtype.newbyteorder("="))
    if src in (E.BOOL,):
        return a.astype(np.uint8)
    if src in (E.INT4, E.INT2):
        return a.astype(np.int8)
    if src in (E.UINT4, E.UINT2):
        return a.astype(np.uint8)
    if src.is_float and src not in (E.FLOAT, E.DOUBLE, E.FLOAT16):
        return a.astype(np.float32)  # every narrow float and BFLOAT16 is exact in binary32
    return a


def _cast_numeric(a: npt.NDArray[Any], et: ElementType, saturate: bool, round_mode: str) -> npt.NDArray[Any]:
    src = a if a.dtype == object else _canonical_source(a)
    if src.dtype == object:  # parsed strings: Python ints and floats
        return _cast_numeric(_objects_to_numeric(src, et), et, saturate, round_mode)
    if src.dtype.kind == "c" and not et.is_complex:
        src = src.real
    dt = et.np_dtype
    with np.errstate(all="ignore"):
        if et is E.BOOL:
            return np.asarray(src != 0)
        if et in (E.FLOAT, E.DOUBLE, E.FLOAT16, E.COMPLEX64, E.COMPLEX128):
            if src.dtype.kind in "iu" and et is not E.DOUBLE and src.dtype.itemsize == 8:
                return _to_f64_rto(src).astype(dt)
            return src.astype(dt)
        if et is E.FLOAT8E8M0:
            return _to_e8m0(_to_f64_rto(src), saturate, round_mode)
        if et in _VIA_F32:
            return _to_narrow_float(_to_f32_rto(src), et, saturate)
        if et.is_integer:
            return _to_integer(src, et)
    raise TensorError(f"cannot cast to {et.name}")  # pragma: no cover - every type is handled above


def _objects_to_numeric(a: npt.NDArray[Any], et: ElementType) -> npt.NDArray[Any]:
    flat = a.reshape(-1)
    if all(isinstance(v, int) for v in flat):
        if et.is_integer or et is E.BOOL:
            bits = et.bits if et is not E.BOOL else 64
            mod = 1 << bits
            wrapped = [v % mod for v in flat]
            if et.is_signed_integer:
                wrapped = [v - mod if v >= mod >> 1 else v for v in wrapped]
                return np.array(wrapped, dtype=np.int64).reshape(a.shape)
            return np.array(wrapped, dtype=np.uint64).reshape(a.shape)
        if all(abs(v) < 2**63 for v in flat):
            return np.array(flat.tolist(), dtype=np.int64).reshape(a.shape)
    return np.array([float(v) for v in flat], dtype=np.float64).reshape(a.shape)


def _to_f64_rto(a: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
    """Values as binary64; integers beyond 2**53 are rounded to odd so a later rounding is exact."""
    if a.dtype.kind not in "iu" or a.dtype.itemsize < 8:
        return a.astype(np.float64)
    out = a.astype(np.float64)
    big = np.flatnonzero(np.abs(out) >= 2.0**53)
    if big.size:
        flat_in = a.reshape(-1)
        flat_out = out.reshape(-1)
        for i in big.tolist():
            flat_out[i] = _int_rto(int(flat_in[i]), 53)
    return out


def _int_rto(n: int, precision: int) -> float:
    mag = abs(n)
    shift = mag.bit_length() - precision
    if shift <= 0:
        return float(n)
    t = mag >> shift
    if mag & ((1 << shift) - 1):
        t |= 1
    v = math.ldexp(float(t), shift)
    return -v if n < 0 else v


def _to_f32_rto(a: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
    """Values as binary32: exact for float16/float32 sources, rounded to odd from binary64 or integers."""
    if a.dtype in (np.float32, np.float16):
        return a.astype(np.float32)
    x = _to_f64_rto(a) if a.dtype.kind in "iu" else a.astype(np.float64)
    y = x.astype(np.float32)
    y64 = y.astype(np.float64)
    fin = np.isfinite(x)
    over = fin & (np.abs(y64) > np.abs(x))
    if over.any():  # truncate toward zero (infinity from overflow becomes the largest finite)
        y[over] = np.nextafter(y[over], np.float32(0))
    inexact = fin & (y.astype(np.float64) != x)
    if inexact.any():
        y.view(np.uint32)[inexact] |= np.uint32(1)
    return y


def _to_narrow_float(f32: npt.NDArray[np.float32], et: ElementType, saturate: bool) -> npt.NDArray[Any]:
    dt = et.np_dtype
    y = f32.astype(dt)  # ml_dtypes: RNE from binary32; FLOAT8 non-saturating; FLOAT6/4 saturating
    if et in _FLOAT8 and saturate:
        yf = y.astype(np.float32)
        clamp = np.isinf(f32) | (np.isfinite(f32) & ~np.isfinite(yf))
        if clamp.any():
            big = np.array(float(_finfo_max(dt)), dtype=np.float32)
            y[clamp] = np.where(f32[clamp] < 0, -big, big).astype(dt)
    return y


def _finfo_max(dt: np.dtype[Any]) -> float:
    import ml_dtypes

    return float(ml_dtypes.finfo(dt).max)


def _to_e8m0(x: npt.NDArray[np.float64], saturate: bool, round_mode: str) -> npt.NDArray[Any]:
    v = np.abs(x)  # negative operands are undefined in Cast; the magnitude is used (docs/types.md)
    out = np.full(v.shape, 0xFF, dtype=np.uint8)
    finite = np.isfinite(v)
    pos = finite & (v > 0)
    mant, exp = np.frexp(np.where(pos, v, 1.0))
    e = exp.astype(np.int64) - 1  # v = (2 * mant) * 2**e with 2 * mant in [1, 2)
    m2 = mant * 2
    if round_mode == "up":
        r = e + (m2 > 1.0)
    elif round_mode == "nearest":
        r = e + (m2 >= 1.5)
    else:
        r = e
    ok = pos & (r >= -127) & (r <= 127)
    out[ok] = (r[ok] + 127).astype(np.uint8)
    if saturate:
        out[(pos & (r > 127)) | np.isinf(v)] = 0xFE
        out[(pos & (r < -127)) | (v == 0)] = 0x00
    import ml_dtypes

    return out.view(ml_dtypes.float8_e8m0fnu)


def _to_integer(src: npt.NDArray[Any], et: ElementType) -> npt.NDArray[Any]:
    bits = et.bits
    if src.dtype.kind in "iub":
        wide = src.astype(np.int64) if src.dtype != np.uint64 else src.view(np.int64)
        return _wrap(wide, et)
    x = src.astype(np.float64)
    r = np.rint(x) if et in _NARROW_INT else np.trunc(x)
    r = np.where(np.isfinite(r), r, 0.0)
    info_lo, info_hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if et.is_signed_integer else (0, 2**bits - 1)
    if r.size == 0 or (r.min() >= info_lo and r.max() <= info_hi):
        if et in _NARROW_INT:
            return _wrap(r.astype(np.int64), et)
        return r.astype(et.np_dtype)
    # Out of range: reduce modulo 2**bits exactly (fmod of binary64 is exact), then wrap.
    red = np.fmod(r, 2.0**bits)
    if bits < 64:
        return _wrap(red.astype(np.int64), et)
    out = np.empty(red.shape, dtype=np.uint64)
    lo = np.abs(red) < 2.0**63
    out[lo] = red[lo].astype(np.int64).view(np.uint64)
    hi_pos = ~lo & (red > 0)
    out[hi_pos] = red[hi_pos].astype(np.uint64)
    hi_neg = ~lo & (red < 0)
    out[hi_neg] = np.uint64(0) - (-red[hi_neg]).astype(np.uint64)
    return out.view(et.np_dtype) if et is E.INT64 else out


def _wrap(wide: npt.NDArray[np.int64], et: ElementType) -> npt.NDArray[Any]:
    """Keep the low ``et.bits`` bits of two's complement integers (the Cast rule for fixed point)."""
    if et in _NARROW_INT:
        codes = (wide & ((1 << et.bits) - 1)).astype(np.uint8)
        return codes.view(et.np_dtype)
    return wide.astype(et.np_dtype)  # numpy integer casts keep the low bits


# ------------------------------------------------------------------------------------------- strings

_FLOAT_RE = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_INT_RE = re.compile(r"[+-]?\d+")
_SPECIAL = {
    "inf": math.inf,
    "+inf": math.inf,
    "-inf": -math.inf,
    "infinity": math.inf,
    "+infinity": math.inf,
    "-infinity": -math.inf,
    "nan": math.nan,
    "+nan": math.nan,
    "-nan": -math.nan,
}


def parse_number(s: bytes | str, *, integral: bool = False) -> int | float:
    """Parse a Cast string literal: decimal or scientific, or "INF", "+INF", "-INF", "NaN" in any case.

    With ``integral``, an integer literal gives an exact ``int``; other literals give a ``float``.

    Raises:
        TensorError: Not a numeric literal (Cast leaves it undefined; we refuse it).
    """
    try:
        text = s.decode("utf-8") if isinstance(s, bytes | bytearray) else str(s)
    except UnicodeDecodeError:
        raise TensorError(f"string {s!r} is not a number") from None
    t = text.strip()
    if integral and _INT_RE.fullmatch(t):
        return int(t)
    if _FLOAT_RE.fullmatch(t):
        return float(t)
    special = _SPECIAL.get(t.lower())
    if special is not None:
        return special
    raise TensorError(f"string {text!r} is not a number")


def _parse_strings(a: npt.NDArray[Any], et: ElementType) -> npt.NDArray[Any]:
    flat = a.reshape(-1)
    integral = et.is_integer or et is E.BOOL
    out = np.empty(flat.shape, dtype=object)
    for i, s in enumerate(flat):
        if et is E.BOOL and isinstance(s, bytes | str) and s.strip().lower() in ("true", b"true", "false", b"false"):
            out[i] = 1 if s.strip().lower() in ("true", b"true") else 0
            continue
        out[i] = parse_number(s, integral=integral)
    return out.reshape(a.shape)


def _strings_to_bytes(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    out = np.empty(a.shape, dtype=object)
    fo = out.reshape(-1)
    for i, s in enumerate(a.reshape(-1)):
        fo[i] = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return out


def format_number(v: Any) -> bytes:
    """The string form of one number for Cast to STRING (see docs/types.md).

    Floats use the shortest representation that reads back to the same value of their own type
    (numpy's ``str``), with "NaN", "INF" and "-INF" for the special values; integers in decimal;
    booleans as "1" and "0".
    """
    if isinstance(v, bool | np.bool_):
        return b"1" if v else b"0"
    if isinstance(v, int | np.integer):
        return str(int(v)).encode()
    if isinstance(v, complex | np.complexfloating):
        return str(v).encode()
    f = float(v)
    if math.isnan(f):
        return b"NaN"
    if math.isinf(f):
        return b"INF" if f > 0 else b"-INF"
    return str(v).encode()


def _numbers_to_strings(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    try:
        src = ElementType.from_dtype(a.dtype)
    except ValueError as e:
        raise TensorError(str(e)) from None
    if src in (E.INT4, E.INT2, E.UINT4, E.UINT2):
        a = a.astype(np.int64)
    out = np.empty(a.shape, dtype=object)
    fo = out.reshape(-1)
    for i, v in enumerate(a.reshape(-1)):
        fo[i] = format_number(v)
    return out
