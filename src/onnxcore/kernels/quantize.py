"""Quantization operators, every version of the default domain (ONNX 1-2).

QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, ConvInteger,
QLinearMatMul and QLinearConv.

Granularity (QuantizeLinear/DequantizeLinear): a scale with one element is per-tensor; a 1-D
scale is per-axis along ``axis`` (from version 13); a scale of the input's rank is blocked along
``axis`` with ``block_size`` (from version 21), each scale entry covering ``block_size``
consecutive positions. Rounding to an integer target is to nearest, ties to even; the result
plus the zero point saturates to the target's range. Float8/float6/float4 targets convert with
:func:`onnxcore.types.convert.cast_array` (Clause 6.3), ``saturate`` applying to float8 only.

Integer arithmetic (MatMulInteger, ConvInteger, the accumulations of the QLinear ops) is done
in float64 on the zero-point-shifted operands: every product and partial sum of 8-bit operands is
an integer far below 2**53, so the result is exact, and numpy's BLAS does the work.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels._util import normalize_axis
from onnxcore.kernels.conv import conv
from onnxcore.kernels.registry import kernel
from onnxcore.types.convert import cast_array
from onnxcore.types.elements import ElementType

__all__ = ["quantize", "dequantize"]

# Integer targets and their saturation ranges (QuantizeLinear's table).
_INT_RANGE: dict[ElementType, tuple[int, int]] = {
    ElementType.UINT8: (0, 255),
    ElementType.INT8: (-128, 127),
    ElementType.UINT16: (0, 65535),
    ElementType.INT16: (-32768, 32767),
    ElementType.UINT4: (0, 15),
    ElementType.INT4: (-8, 7),
    ElementType.UINT2: (0, 3),
    ElementType.INT2: (-2, 1),
    ElementType.INT32: (-(2**31), 2**31 - 1),
}


def _etype(dtype: Any) -> ElementType:
    return ElementType.from_dtype(np.dtype(dtype))


def _exact(a: np.ndarray) -> np.ndarray:
    """Values of ``a`` (any numeric element type, narrow ones included) as float64 (exactly)."""
    arr = np.asarray(a)
    if arr.dtype.kind in "iub":
        return arr.astype(np.float64)
    if arr.dtype.kind == "f":
        return arr.astype(np.float64)
    # ml_dtypes int4/int2 convert to int64 exactly; the narrow floats through float32.
    try:
        return arr.astype(np.float32).astype(np.float64)
    except (TypeError, ValueError):
        return arr.astype(np.int64).astype(np.float64)


def _param_shape(
    x_shape: tuple[int, ...],
    p: np.ndarray,
    axis: int,
    block_size: int,
    *,
    allow_axis: bool,
    allow_block: bool,
    what: str,
) -> np.ndarray:
    """``p`` (a scale or zero point) arranged to broadcast against an input of ``x_shape``."""
    r = len(x_shape)
    if p.size == 1 and p.ndim <= 1 and not block_size:
        return p.reshape(())
    if not allow_axis:
        raise EvaluationError(f"{what} must be a scalar (per-tensor quantization only in this version)")
    ax = normalize_axis(axis, r)
    if p.ndim == 1 and not block_size:
        if p.shape[0] != x_shape[ax]:
            raise EvaluationError(f"{what} has {p.shape[0]} entries for axis {ax} of extent {x_shape[ax]}")
        return p.reshape((1,) * ax + (p.shape[0],) + (1,) * (r - ax - 1))
    if not allow_block:
        raise EvaluationError(f"{what} of shape {p.shape} is neither per-tensor nor per-axis")
    if block_size <= 0:
        raise EvaluationError(f"{what} of shape {p.shape} needs a positive block_size for blocked quantization")
    if p.ndim != r:
        raise EvaluationError(f"blocked {what} must have the input's rank {r}, got shape {p.shape}")
    for i, (d, s) in enumerate(zip(x_shape, p.shape)):
        if i != ax and d != s:
            raise EvaluationError(f"blocked {what} shape {p.shape} does not match the input {x_shape} off axis {ax}")
    d, s = x_shape[ax], p.shape[ax]
    # Accepted range [ceil(d/s), ceil(d/(s-1)) - 1] (one block: any size covering the axis).
    lo = math.ceil(d / s) if s else 0
    hi = math.ceil(d / (s - 1)) - 1 if s > 1 else max(block_size, d)
    if (s == 0 and d != 0) or not (lo <= block_size <= hi):
        raise EvaluationError(f"block_size {block_size} is outside [{lo}, {hi}] for axis extent {d} and {s} blocks")
    return np.repeat(p, block_size, axis=ax)[(slice(None),) * ax + (slice(0, d),)]


def _target(output_dtype: int, zero_point: np.ndarray | None) -> ElementType:
    if output_dtype:
        et = ElementType(output_dtype)
        if zero_point is not None and _etype(zero_point.dtype) != et:
            raise EvaluationError(f"output_dtype {et.name} differs from the zero point's type {zero_point.dtype}")
        return et
    if zero_point is not None:
        return _etype(zero_point.dtype)
    return ElementType.UINT8


def _divide(x: np.ndarray, scale: np.ndarray, precision: ElementType | None) -> np.ndarray:
    """``x / scale`` rounded once to the precision (float64 values of it are returned)."""
    pt = precision if precision is not None else _etype(scale.dtype)
    q = _exact(x) / _exact(scale)
    if pt in (ElementType.FLOAT, ElementType.FLOAT16, ElementType.BFLOAT16, ElementType.DOUBLE):
        # One rounding to the precision type (float64 division rounds to nearest, then to it).
        q = _exact(q.astype(pt.np_dtype))
    elif pt == ElementType.FLOAT8E8M0:
        q = _exact(q.astype(np.float32))
    return q


def quantize(
    x: np.ndarray,
    scale: np.ndarray,
    zero_point: np.ndarray | None,
    *,
    axis: int = 1,
    block_size: int = 0,
    saturate: int = 1,
    output_dtype: int = 0,
    precision: int = 0,
    allow_axis: bool = True,
    allow_block: bool = True,
) -> np.ndarray:
    """``saturate(round(x / scale) + zero_point)`` into the target type (see the module text)."""
    x = np.asarray(x)
    scale = np.asarray(scale)
    et = _target(output_dtype, zero_point)
    if zero_point is not None:
        zero_point = np.asarray(zero_point)
        if zero_point.shape != scale.shape and zero_point.size != scale.size:
            raise EvaluationError(f"zero point shape {zero_point.shape} differs from scale shape {scale.shape}")
        zero_point = zero_point.reshape(scale.shape)
    kw = {"allow_axis": allow_axis, "allow_block": allow_block}
    s = _param_shape(x.shape, scale, axis, block_size, what="scale", **kw)
    zp = (
        _exact(_param_shape(x.shape, zero_point, axis, block_size, what="zero point", **kw))
        if zero_point is not None
        else 0.0
    )
    q = _divide(x, s, ElementType(precision) if precision else None)
    if et in _INT_RANGE and et != ElementType.INT32:
        lo, hi = _INT_RANGE[et]
        y = np.clip(np.rint(q) + zp, lo, hi)
        y = np.where(np.isnan(y), zp, y)
        return cast_array(y.astype(np.int64), et)
    if et.name.startswith(("FLOAT8", "FLOAT4", "FLOAT6")):
        return cast_array((q + zp).astype(np.float32), et, saturate=bool(saturate))
    raise EvaluationError(f"QuantizeLinear: unsupported target type {et.name}")


def dequantize(
    x: np.ndarray,
    scale: np.ndarray,
    zero_point: np.ndarray | None,
    *,
    axis: int = 1,
    block_size: int = 0,
    output_dtype: int = 0,
    allow_axis: bool = True,
    allow_block: bool = True,
) -> np.ndarray:
    """``(x - zero_point) * scale`` in the output type (``output_dtype`` or the scale's type)."""
    x = np.asarray(x)
    scale = np.asarray(scale)
    if zero_point is not None:
        zero_point = np.asarray(zero_point)
        if zero_point.dtype != x.dtype:
            raise EvaluationError(f"zero point type {zero_point.dtype} differs from the input type {x.dtype}")
        if zero_point.size != scale.size:
            raise EvaluationError(f"zero point shape {zero_point.shape} differs from scale shape {scale.shape}")
        zero_point = zero_point.reshape(scale.shape)
    if output_dtype:
        out = ElementType(output_dtype)
    else:
        out = _etype(scale.dtype)
        if out == ElementType.FLOAT8E8M0:
            # "The output type is the scale's" cannot hold for a float8e8m0 scale (not in T3):
            # without output_dtype such a node yields float.
            out = ElementType.FLOAT
    kw = {"allow_axis": allow_axis, "allow_block": allow_block}
    s = _exact(_param_shape(x.shape, scale, axis, block_size, what="scale", **kw))
    v = _exact(x)
    if zero_point is not None:
        v = v - _exact(_param_shape(x.shape, zero_point, axis, block_size, what="zero point", **kw))
    # float64 keeps (x - zp) * scale exact for the operand widths involved: one rounding at the end.
    return np.asarray(v * s).astype(out.np_dtype)


# ---------------------------------------------------------------------------------------------
# QuantizeLinear / DequantizeLinear, one function per set of attributes
# ---------------------------------------------------------------------------------------------


@kernel("QuantizeLinear", 10)
def quantize_linear_10(x: np.ndarray, y_scale: np.ndarray, y_zero_point: np.ndarray | None = None) -> np.ndarray:
    """QuantizeLinear-10: per-tensor, to uint8 (default) or int8."""
    return quantize(x, y_scale, y_zero_point, allow_axis=False, allow_block=False)


@kernel("QuantizeLinear", 13)
def quantize_linear_13(
    x: np.ndarray, y_scale: np.ndarray, y_zero_point: np.ndarray | None = None, *, axis: int = 1
) -> np.ndarray:
    """QuantizeLinear-13: per-tensor or per-axis."""
    return quantize(x, y_scale, y_zero_point, axis=axis, allow_block=False)


@kernel("QuantizeLinear", 19)
def quantize_linear_19(
    x: np.ndarray, y_scale: np.ndarray, y_zero_point: np.ndarray | None = None, *, axis: int = 1, saturate: int = 1
) -> np.ndarray:
    """QuantizeLinear-19: adds float8 targets and ``saturate``."""
    return quantize(x, y_scale, y_zero_point, axis=axis, saturate=saturate, allow_block=False)


@kernel("QuantizeLinear", 21)
def quantize_linear_21(
    x: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray | None = None,
    *,
    axis: int = 1,
    block_size: int = 0,
    output_dtype: int = 0,
    saturate: int = 1,
) -> np.ndarray:
    """QuantizeLinear-21: adds blocked quantization, ``output_dtype``, int16/uint16/int4/uint4."""
    return quantize(
        x, y_scale, y_zero_point, axis=axis, block_size=block_size, saturate=saturate, output_dtype=output_dtype
    )


@kernel("QuantizeLinear", 23, 24, 25, 28)
def quantize_linear_23(
    x: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray | None = None,
    *,
    axis: int = 1,
    block_size: int = 0,
    output_dtype: int = 0,
    precision: int = 0,
    saturate: int = 1,
) -> np.ndarray:
    """QuantizeLinear-23 and later: adds ``precision`` (later versions only admit more types)."""
    return quantize(
        x,
        y_scale,
        y_zero_point,
        axis=axis,
        block_size=block_size,
        saturate=saturate,
        output_dtype=output_dtype,
        precision=precision,
    )


def _dq_float(x: np.ndarray, scale: np.ndarray, zp: np.ndarray | None, **kw: Any) -> np.ndarray:
    if np.asarray(scale).dtype != np.float32:
        raise EvaluationError(f"x_scale must be float in this version, got {np.asarray(scale).dtype}")
    return dequantize(x, scale, zp, **kw)


@kernel("DequantizeLinear", 10)
def dequantize_linear_10(x: np.ndarray, x_scale: np.ndarray, x_zero_point: np.ndarray | None = None) -> np.ndarray:
    """DequantizeLinear-10: per-tensor, to float."""
    return _dq_float(x, x_scale, x_zero_point, allow_axis=False, allow_block=False)


@kernel("DequantizeLinear", 13, 19)
def dequantize_linear_13(
    x: np.ndarray, x_scale: np.ndarray, x_zero_point: np.ndarray | None = None, *, axis: int = 1
) -> np.ndarray:
    """DequantizeLinear-13/19: per-tensor or per-axis (19 admits float8 inputs and float16/bfloat16 scales)."""
    return dequantize(x, x_scale, x_zero_point, axis=axis, allow_block=False)


@kernel("DequantizeLinear", 21)
def dequantize_linear_21(
    x: np.ndarray, x_scale: np.ndarray, x_zero_point: np.ndarray | None = None, *, axis: int = 1, block_size: int = 0
) -> np.ndarray:
    """DequantizeLinear-21: adds blocked dequantization."""
    return dequantize(x, x_scale, x_zero_point, axis=axis, block_size=block_size)


@kernel("DequantizeLinear", 23, 24, 25, 28)
def dequantize_linear_23(
    x: np.ndarray,
    x_scale: np.ndarray,
    x_zero_point: np.ndarray | None = None,
    *,
    axis: int = 1,
    block_size: int = 0,
    output_dtype: int = 0,
) -> np.ndarray:
    """DequantizeLinear-23 and later: adds ``output_dtype`` (later versions only admit more types)."""
    return dequantize(x, x_scale, x_zero_point, axis=axis, block_size=block_size, output_dtype=output_dtype)


# ---------------------------------------------------------------------------------------------
# DynamicQuantizeLinear
# ---------------------------------------------------------------------------------------------


@kernel("DynamicQuantizeLinear", 11)
def dynamic_quantize_linear(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DynamicQuantizeLinear: uint8 quantization over ``[min(0, min x), max(0, max x)]``.

    ``scale = (max - min) / 255`` (float32), ``zero_point = saturate(round(-min / scale))``,
    ``y = saturate(round(x / scale) + zero_point)``. An all-zero (or empty) input would give
    scale 0 and divide by zero (the definition is silent); like onnxruntime we then use scale 1,
    zero point 0 and y 0.
    """
    x = np.asarray(x, dtype=np.float32)
    finite = x[np.isfinite(x)] if x.size else x
    lo = min(0.0, float(finite.min())) if finite.size else 0.0
    hi = max(0.0, float(finite.max())) if finite.size else 0.0
    scale = np.float32((np.float32(hi) - np.float32(lo)) / np.float32(255))
    if scale == 0:
        return np.zeros(x.shape, np.uint8), np.array(1.0, np.float32), np.array(0, np.uint8)
    zp = float(np.clip(np.rint(np.float32(0) - np.float32(lo) / scale), 0, 255))
    q = np.clip(np.rint(x / scale) + zp, 0, 255)
    # NaN has no quantized value (the definition is silent): it becomes the zero point.
    y = np.where(np.isnan(q), zp, q).astype(np.uint8)
    return y, np.array(scale, np.float32), np.array(zp, np.uint8)


# ---------------------------------------------------------------------------------------------
# Integer matmul and convolution
# ---------------------------------------------------------------------------------------------


def _matmul_param(p: np.ndarray, operand: np.ndarray, *, rows: bool, what: str) -> np.ndarray:
    """A scale or zero point of a MatMulInteger/QLinearMatMul operand, shaped to broadcast against it.

    The definitions allow a scalar (per tensor), an M-element vector per row of a 2-D A or an N-element vector per
    column of a 2-D B, and for N-D operands the shapes [..., M, 1] (A) and [..., 1, N] (B). Any other shape is
    refused: numpy would broadcast a per-row shape given for B across its rows, or a parameter into a larger
    operand, and multiply matrices the definition does not.
    """
    if p.size == 1:
        return p.reshape(())
    side = "per row" if rows else "per column"
    if operand.ndim >= 2:
        n = operand.shape[-2] if rows else operand.shape[-1]
        if p.ndim == 1 and p.shape[0] == n:
            return p.reshape(-1, 1) if rows else p
        if p.ndim >= 2 and p.shape[-1 if rows else -2] == 1:
            try:
                if np.broadcast_shapes(operand.shape, p.shape) == operand.shape:
                    return p
            except ValueError:
                pass
    raise EvaluationError(
        f"{what} of shape {p.shape} does not fit its operand of shape {operand.shape} "
        f"(a scalar, or {side}: {'[..., M, 1] or M' if rows else '[..., 1, N] or N'} entries)"
    )


def _shifted(a: np.ndarray, zp: np.ndarray | None, *, rows: bool, what: str) -> np.ndarray:
    """``a - zp`` as float64 exactly; a zero point per row of A (``rows``) or per column of B."""
    v = _exact(a)
    if zp is None:
        return v
    return v - _matmul_param(_exact(zp), a, rows=rows, what=what)


def _int_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.ndim == 0 or b.ndim == 0:
        raise EvaluationError("MatMul operands must have rank at least 1")
    try:
        return np.matmul(a, b)
    except ValueError as e:
        raise EvaluationError(f"MatMul: shapes {a.shape} and {b.shape} do not match: {e}") from None


def _to_int32(acc: np.ndarray) -> np.ndarray:
    # Exact integers in float64; wrap like a 32-bit accumulator would.
    return np.asarray(acc).astype(np.int64).astype(np.int32)


@kernel("MatMulInteger", 10)
def matmul_integer(
    A: np.ndarray, B: np.ndarray, a_zero_point: np.ndarray | None = None, b_zero_point: np.ndarray | None = None
) -> np.ndarray:
    """MatMulInteger: ``(A - a_zero_point) @ (B - b_zero_point)`` in int32 (numpy matmul semantics)."""
    a = _shifted(A, a_zero_point, rows=True, what="a_zero_point")
    b = _shifted(B, b_zero_point, rows=False, what="b_zero_point")
    return _to_int32(_int_matmul(a, b))


def _conv_attrs(kw: dict[str, Any]) -> dict[str, Any]:
    return {
        "auto_pad": kw.get("auto_pad", "NOTSET"),
        "dilations": kw.get("dilations"),
        "group": kw.get("group", 1),
        "kernel_shape": kw.get("kernel_shape"),
        "pads": kw.get("pads"),
        "strides": kw.get("strides"),
    }


def _w_shifted(w: np.ndarray, zp: np.ndarray | None, what: str) -> np.ndarray:
    v = _exact(w)
    if zp is None:
        return v
    z = _exact(zp)
    if z.size == 1:
        return v - z.reshape(())
    if z.ndim != 1 or z.shape[0] != w.shape[0]:
        raise EvaluationError(f"{what} must be a scalar or have one entry per output channel ({w.shape[0]})")
    return v - z.reshape((-1,) + (1,) * (w.ndim - 1))


def _x_shifted(x: np.ndarray, zp: np.ndarray | None, what: str) -> np.ndarray:
    v = _exact(x)
    if zp is None:
        return v
    z = _exact(zp)
    if z.size != 1:
        raise EvaluationError(f"{what} must be a scalar")
    return v - z.reshape(())


@kernel("ConvInteger", 10)
def conv_integer(
    x: np.ndarray,
    w: np.ndarray,
    x_zero_point: np.ndarray | None = None,
    w_zero_point: np.ndarray | None = None,
    *,
    auto_pad: str = "NOTSET",
    dilations: list[int] | None = None,
    group: int = 1,
    kernel_shape: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> np.ndarray:
    """ConvInteger: Conv of the zero-point-shifted operands, in int32 (padding stands for the zero point)."""
    xs = _x_shifted(x, x_zero_point, "x_zero_point")
    ws = _w_shifted(w, w_zero_point, "w_zero_point")
    attrs = _conv_attrs(locals())
    return _to_int32(conv(xs, ws, None, **attrs))


def _requantize(acc: np.ndarray, multiplier: np.ndarray, zp: np.ndarray, what: str) -> np.ndarray:
    """``acc * multiplier + zp`` saturated into ``zp``'s type (float32 arithmetic, as the scales)."""
    zp = np.asarray(zp)
    et = _etype(zp.dtype)
    if zp.size != 1:
        raise EvaluationError(f"{what} must be a scalar")
    v = acc.astype(np.float32) * multiplier.astype(np.float32)
    if et in _INT_RANGE:
        lo, hi = _INT_RANGE[et]
        y = np.clip(np.rint(v).astype(np.float64) + _exact(zp).reshape(()), lo, hi)
        return cast_array(y.astype(np.int64), et)
    return cast_array((v + _exact(zp).reshape(()).astype(np.float32)).astype(np.float32), et, saturate=True)


def _scale32(s: np.ndarray) -> np.ndarray:
    return np.asarray(s).astype(np.float32)


def _qlinear_matmul(
    a: np.ndarray,
    a_scale: np.ndarray,
    a_zero_point: np.ndarray,
    b: np.ndarray,
    b_scale: np.ndarray,
    b_zero_point: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray,
) -> np.ndarray:
    for scale, zp, name in ((a_scale, a_zero_point, "a"), (b_scale, b_zero_point, "b")):
        if (np.size(scale) != 1 or np.size(zp) != 1) and np.shape(scale) != np.shape(zp):
            # "Scale and zero point must have same shape" (QLinearMatMul's definition).
            raise EvaluationError(
                f"{name}_scale {np.shape(scale)} and {name}_zero_point {np.shape(zp)} must have the same shape"
            )
    sa = _matmul_param(_scale32(a_scale), a, rows=True, what="a_scale")
    sb = _matmul_param(_scale32(b_scale), b, rows=False, what="b_scale")
    ys = _scale32(y_scale)
    if ys.size != 1:
        raise EvaluationError("y_scale must be a scalar")
    acc = _int_matmul(
        _shifted(a, a_zero_point, rows=True, what="a_zero_point"),
        _shifted(b, b_zero_point, rows=False, what="b_zero_point"),
    )
    mult = (sa * sb) / ys.reshape(())
    return _requantize(acc, np.asarray(mult), y_zero_point, "y_zero_point")


@kernel("QLinearMatMul", 10)
def qlinear_matmul_10(
    a: np.ndarray,
    a_scale: np.ndarray,
    a_zero_point: np.ndarray,
    b: np.ndarray,
    b_scale: np.ndarray,
    b_zero_point: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray,
) -> np.ndarray:
    """QLinearMatMul-10: int8/uint8 operands with float scales."""
    return _qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point)


@kernel("QLinearMatMul", 21)
def qlinear_matmul_21(
    a: np.ndarray,
    a_scale: np.ndarray,
    a_zero_point: np.ndarray,
    b: np.ndarray,
    b_scale: np.ndarray,
    b_zero_point: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray,
) -> np.ndarray:
    """QLinearMatMul-21: adds float16/bfloat16 scales and float8 operands (scales combine in float32)."""
    return _qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point)


@kernel("QLinearConv", 10)
def qlinear_conv(
    x: np.ndarray,
    x_scale: np.ndarray,
    x_zero_point: np.ndarray,
    w: np.ndarray,
    w_scale: np.ndarray,
    w_zero_point: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray,
    B: np.ndarray | None = None,
    *,
    auto_pad: str = "NOTSET",
    dilations: list[int] | None = None,
    group: int = 1,
    kernel_shape: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> np.ndarray:
    """QLinearConv: integer convolution of the shifted operands plus the int32 bias, requantized.

    ``y = saturate(round(acc * x_scale * w_scale / y_scale) + y_zero_point)``; ``w_scale`` and
    ``w_zero_point`` may be per output channel.
    """
    attrs = _conv_attrs(locals())
    xs = _x_shifted(x, x_zero_point, "x_zero_point")
    ws = _w_shifted(w, w_zero_point, "w_zero_point")
    acc = conv(xs, ws, None, **attrs)
    m = w.shape[0]
    nd = acc.ndim - 2
    if B is not None:
        bias = np.asarray(B)
        if bias.shape != (m,):
            raise EvaluationError(f"B must have shape ({m},), got {bias.shape}")
        acc = acc + _exact(bias).reshape((1, m) + (1,) * nd)
    sw = _scale32(w_scale)
    if sw.size == 1:
        sw = sw.reshape(())
    elif sw.ndim == 1 and sw.shape[0] == m:
        sw = sw.reshape((1, m) + (1,) * nd)
    else:
        raise EvaluationError(f"w_scale must be a scalar or have {m} entries, got shape {sw.shape}")
    sx, sy = _scale32(x_scale), _scale32(y_scale)
    if sx.size != 1 or sy.size != 1:
        raise EvaluationError("x_scale and y_scale must be scalars")
    mult = (sx.reshape(()) * sw) / sy.reshape(())
    return _requantize(acc, np.asarray(mult), y_zero_point, "y_zero_point")
