"""Quantized operators of the ``com.microsoft`` domain (onnxruntime's contrib operators, since_version 1).

QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearConcat, QLinearGlobalAveragePool,
QLinearAveragePool, QLinearSoftmax, QLinearConv (with ``channels_last``), QGemm, DynamicQuantizeMatMul,
MatMulIntegerToFloat, and QuantizeLinear/DequantizeLinear as this domain defines them (per tensor or per
``axis``; no blocked form, no ``output_dtype``).

The definitions are onnxruntime's (its ContribOperators documentation and the schemas it exposes). Where they
say nothing about the arithmetic, onnxruntime 1.31's CPU results are the fact; those facts, established by
differential tests (``tests/kernels/contrib/test_contrib_quant.py``), are:

* **Rounding**: every op rounds half to even, but two rules are in use. QLinearAdd, QLinearMul and
  QLinearAveragePool round ``value / y_scale + y_zero_point`` (the zero point added *before* the rounding);
  QLinearSigmoid, QLinearLeakyRelu, QLinearConcat, QLinearSoftmax, QLinearGlobalAveragePool (and QuantizeLinear,
  QLinearConv, QLinearMatMul) round ``value / y_scale`` and then add the zero point. The two differ on a tie
  when the zero point is odd; both are onnxruntime's behaviour, so both are ours.
* **QLinearAdd, QLinearMul** compute in float32 as ``(A - a_zp) * (a_scale / c_scale) + (B - b_zp) *
  (b_scale / c_scale)`` (the product: ``(A - a_zp) * (B - b_zp) * (a_scale * b_scale / c_scale)``).
  onnxruntime's vector kernels order these float32 operations their own way: for a value within a few units in
  the last place of a half the result may differ by one (measured: under 1 element in 10^5 for random scales;
  none for scales that make exact ties).
* **QLinearSigmoid, QLinearLeakyRelu** are tables over the 256 input values: dequantize in float32, apply the
  function in float32, requantize as above.
* **QLinearSoftmax** is a table of ``exp((x - max) * x_scale)`` per input value (float32), the sum taken over
  the axis (for ``opset`` < 13: the flattened trailing axes from ``axis``), the output requantized as above.
* **QLinearGlobalAveragePool, QLinearAveragePool** average the dequantized values in float32.
* **DynamicQuantizeMatMul** quantizes A to uint8 exactly as DynamicQuantizeLinear does, multiplies in integers,
  and scales the int32 product by ``a_scale * b_scale`` (float32), then adds the bias.
* **MatMulIntegerToFloat**: ``(A - a_zp) @ (B - b_zp)`` in integers, times ``a_scale * b_scale``, plus bias.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels._util import normalize_axis
from onnxcore.kernels.pool import average_pool
from onnxcore.kernels.quantize import (
    _int_matmul,
    _matmul_param,
    _shifted,
    dequantize,
    dynamic_quantize_linear,
    qlinear_conv,
    quantize,
)
from onnxcore.kernels.registry import kernel

__all__: list[str] = []

_MS = "com.microsoft"

Array = np.ndarray


def _int_type(dt: Any, what: str) -> tuple[int, int]:
    dt = np.dtype(dt)
    if dt not in (np.dtype(np.uint8), np.dtype(np.int8)):
        raise EvaluationError(f"{what} must be uint8 or int8, got {dt}")
    info = np.iinfo(dt)
    return int(info.min), int(info.max)


def _scalar32(s: Array | None, what: str) -> np.float32:
    if s is None:
        raise EvaluationError(f"{what} is required")
    a = np.asarray(s)
    if a.size != 1:
        raise EvaluationError(f"{what} must be a scalar (per-tensor), got shape {a.shape}")
    return np.float32(a.reshape(()).astype(np.float32))


def _zp(z: Array | None, dt: Any, what: str) -> np.float32:
    """A per-tensor zero point (absent: 0) as float32; its type must be the tensor's."""
    if z is None:
        return np.float32(0)
    a = np.asarray(z)
    if a.dtype != np.dtype(dt):
        raise EvaluationError(f"{what} has type {a.dtype}, the tensor {np.dtype(dt)}")
    if a.size != 1:
        raise EvaluationError(f"{what} must be a scalar (per-tensor), got shape {a.shape}")
    return np.float32(a.reshape(()))


def _requant(v: Array, y_zp: np.float32, dt: Any, *, zp_first: bool) -> Array:
    """``saturate(round_half_even(v + y_zp))`` (``zp_first``) or ``saturate(round_half_even(v) + y_zp)`` into
    ``dt``; ``v`` is already divided by the output scale (see the module text for which op uses which)."""
    lo, hi = _int_type(dt, "the quantized type")
    v = np.asarray(v, np.float32)
    y = np.rint(v + y_zp) if zp_first else np.rint(v) + y_zp
    return np.clip(np.where(np.isnan(y), y_zp, y), lo, hi).astype(dt)


def _table_op(x: Array, fn: Callable[[Array], Array], x_scale: Array, x_zp: Array | None,
              y_scale: Array, y_zp: Array | None) -> Array:  # fmt: skip
    """A unary op as onnxruntime computes it: a table over every value of the 8-bit type."""
    x = np.asarray(x)
    lo, hi = _int_type(x.dtype, "X")
    sx, sy = _scalar32(x_scale, "X_scale"), _scalar32(y_scale, "Y_scale")
    zx, zy = _zp(x_zp, x.dtype, "X_zero_point"), _zp(y_zp, x.dtype, "Y_zero_point")
    values = np.arange(lo, hi + 1, dtype=np.float32)
    table = _requant(fn((values - zx) * sx) / sy, zy, x.dtype, zp_first=False)
    return table[x.astype(np.int16) - lo]


def _binary(A: Array, A_scale: Array, A_zero_point: Array | None, B: Array, B_scale: Array,
            B_zero_point: Array | None, C_scale: Array, C_zero_point: Array | None, *, mul: bool) -> Array:  # fmt: skip
    A, B = np.asarray(A), np.asarray(B)
    if A.dtype != B.dtype:
        raise EvaluationError(f"A and B must have one type, got {A.dtype} and {B.dtype}")
    _int_type(A.dtype, "A")
    sa, sb, sc = _scalar32(A_scale, "A_scale"), _scalar32(B_scale, "B_scale"), _scalar32(C_scale, "C_scale")
    za, zb = _zp(A_zero_point, A.dtype, "A_zero_point"), _zp(B_zero_point, B.dtype, "B_zero_point")
    zc = _zp(C_zero_point, A.dtype, "C_zero_point")
    try:
        np.broadcast_shapes(A.shape, B.shape)
    except ValueError:
        raise ShapeError(f"A {A.shape} and B {B.shape} do not broadcast (Clause 6.6)") from None
    a = A.astype(np.float32) - za
    b = B.astype(np.float32) - zb
    if mul:
        v = (a * b) * np.float32(sa * sb / sc)
    else:
        v = a * np.float32(sa / sc) + b * np.float32(sb / sc)
    return _requant(v, zc, A.dtype, zp_first=True)


@kernel("QLinearAdd", 1, domain=_MS)
def qlinear_add(
    A: Array,
    A_scale: Array,
    A_zero_point: Array | None,
    B: Array,
    B_scale: Array,
    B_zero_point: Array | None,
    C_scale: Array,
    C_zero_point: Array | None = None,
) -> Array:
    """QLinearAdd: ``C = quantize(dequantize(A) + dequantize(B))`` with broadcasting."""
    return _binary(A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point, mul=False)


@kernel("QLinearMul", 1, domain=_MS)
def qlinear_mul(
    A: Array,
    A_scale: Array,
    A_zero_point: Array | None,
    B: Array,
    B_scale: Array,
    B_zero_point: Array | None,
    C_scale: Array,
    C_zero_point: Array | None = None,
) -> Array:
    """QLinearMul: ``C = quantize(dequantize(A) * dequantize(B))`` with broadcasting."""
    return _binary(A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point, mul=True)


def _sigmoid32(v: Array) -> Array:
    with np.errstate(over="ignore"):
        return (np.float32(1) / (np.float32(1) + np.exp(-v))).astype(np.float32)


@kernel("QLinearSigmoid", 1, domain=_MS)
def qlinear_sigmoid(
    X: Array, X_scale: Array, X_zero_point: Array | None, Y_scale: Array, Y_zero_point: Array | None = None
) -> Array:
    """QLinearSigmoid: ``Y = quantize(sigmoid(dequantize(X)))``."""
    return _table_op(X, _sigmoid32, X_scale, X_zero_point, Y_scale, Y_zero_point)


@kernel("QLinearLeakyRelu", 1, domain=_MS)
def qlinear_leaky_relu(
    X: Array,
    X_scale: Array,
    X_zero_point: Array | None,
    Y_scale: Array,
    Y_zero_point: Array | None = None,
    *,
    alpha: float = 0.01,
) -> Array:
    """QLinearLeakyRelu: ``Y = quantize(leaky_relu(dequantize(X), alpha))``."""
    a = np.float32(alpha)
    return _table_op(X, lambda v: np.where(v >= 0, v, v * a), X_scale, X_zero_point, Y_scale, Y_zero_point)


@kernel("QLinearConcat", 1, domain=_MS)
def qlinear_concat(Y_scale: Array, Y_zero_point: Array, *inputs: Array, axis: int) -> Array:
    """QLinearConcat: each (tensor, scale, zero point) triple requantized to Y's scale and zero point, joined
    along ``axis``."""
    if len(inputs) == 0 or len(inputs) % 3:
        raise EvaluationError(f"QLinearConcat takes (tensor, scale, zero point) triples, got {len(inputs)} inputs")
    zy_arr = np.asarray(Y_zero_point)
    dt = zy_arr.dtype
    sy, zy = _scalar32(Y_scale, "Y_scale"), _zp(zy_arr, dt, "Y_zero_point")
    parts = []
    for k in range(0, len(inputs), 3):
        x = np.asarray(inputs[k])
        if x.dtype != dt:
            raise EvaluationError(f"QLinearConcat input {k // 3} has type {x.dtype}, Y_zero_point {dt}")
        sx, zx = _scalar32(inputs[k + 1], f"scale {k // 3}"), _zp(inputs[k + 2], dt, f"zero point {k // 3}")
        if sx == sy and zx == zy:
            parts.append(x)
        else:
            parts.append(_table_op(x, lambda v: v, np.asarray(sx), np.asarray(inputs[k + 2]), np.asarray(sy), zy_arr))
    rank = parts[0].ndim
    ax = normalize_axis(axis, rank)
    for i, p in enumerate(parts):
        if p.ndim != rank or p.shape[:ax] + p.shape[ax + 1 :] != parts[0].shape[:ax] + parts[0].shape[ax + 1 :]:
            raise ShapeError(
                f"QLinearConcat input {i} of shape {p.shape} does not match {parts[0].shape} off axis {ax}"
            )
    return np.concatenate(parts, axis=ax)


def _channels_first(x: Array, channels_last: int) -> Array:
    if x.ndim < 3:
        raise ShapeError(f"X must have rank >= 3 (N, C, spatial...), got shape {x.shape}")
    return np.moveaxis(x, -1, 1) if channels_last else x


def _channels_back(y: Array, channels_last: int) -> Array:
    return np.ascontiguousarray(np.moveaxis(y, 1, -1)) if channels_last else y


@kernel("QLinearGlobalAveragePool", 1, domain=_MS)
def qlinear_global_average_pool(
    X: Array, x_scale: Array, x_zero_point: Array, y_scale: Array, y_zero_point: Array, *, channels_last: int = 0
) -> Array:
    """QLinearGlobalAveragePool: the mean over the spatial axes of each channel (NCHW..., or NHWC... with
    ``channels_last``), requantized."""
    X = np.asarray(X)
    _int_type(X.dtype, "X")
    sx, sy = _scalar32(x_scale, "x_scale"), _scalar32(y_scale, "y_scale")
    zx, zy = _zp(x_zero_point, X.dtype, "x_zero_point"), _zp(y_zero_point, X.dtype, "y_zero_point")
    xc = _channels_first(X, channels_last)
    axes = tuple(range(2, xc.ndim))
    n = int(np.prod([xc.shape[a] for a in axes]))
    acc = xc.astype(np.int64).sum(axis=axes, keepdims=True) - np.int64(zx) * n
    v = acc.astype(np.float32) * np.float32(sx / (sy * np.float32(n)))
    return _channels_back(_requant(v, zy, X.dtype, zp_first=False), channels_last)


@kernel("QLinearAveragePool", 1, domain=_MS)
def qlinear_average_pool(
    X: Array,
    x_scale: Array,
    x_zero_point: Array | None,
    y_scale: Array,
    y_zero_point: Array | None = None,
    *,
    auto_pad: str = "NOTSET",
    ceil_mode: int = 0,
    channels_last: int = 0,
    count_include_pad: int = 0,
    kernel_shape: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> Array:
    """QLinearAveragePool: AveragePool (as the default domain's, version 19 without dilations) of the
    dequantized input, requantized; NHWC... with ``channels_last``."""
    X = np.asarray(X)
    _int_type(X.dtype, "X")
    sx, sy = _scalar32(x_scale, "x_scale"), _scalar32(y_scale, "y_scale")
    zx, zy = _zp(x_zero_point, X.dtype, "x_zero_point"), _zp(y_zero_point, X.dtype, "y_zero_point")
    xf = (_channels_first(X, channels_last).astype(np.float32) - zx) * sx
    y = average_pool(
        xf,
        auto_pad=auto_pad,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
        kernel_shape=kernel_shape,
        pads=pads,
        strides=strides,
    )
    return _channels_back(_requant(y / sy, zy, X.dtype, zp_first=True), channels_last)


@kernel("QLinearSoftmax", 1, domain=_MS)
def qlinear_softmax(
    X: Array,
    X_scale: Array,
    x_zero_point: Array | None,
    y_scale: Array,
    y_zero_point: Array,
    *,
    axis: int = -1,
    opset: int,
) -> Array:
    """QLinearSoftmax: Softmax of the dequantized input along ``axis`` (``opset`` >= 13) or over the trailing
    axes from ``axis`` (``opset`` < 13, Softmax-1/11's coercion to 2-D), requantized."""
    X = np.asarray(X)
    _int_type(X.dtype, "X")
    sx, sy = _scalar32(X_scale, "X_scale"), _scalar32(y_scale, "y_scale")
    _zp(x_zero_point, X.dtype, "x_zero_point")  # the shift cancels in the softmax; its type is still checked
    zy = _zp(y_zero_point, X.dtype, "y_zero_point")
    if X.ndim == 0:
        raise ShapeError("QLinearSoftmax takes an input of rank >= 1")
    ax = normalize_axis(axis, X.ndim)
    if opset < 13:
        x2 = X.reshape(int(np.prod(X.shape[:ax], dtype=np.int64)), -1)
        red: tuple[int, ...] = (1,)
    else:
        x2, red = X, (ax,)
    xi = x2.astype(np.int32)
    m = xi.max(axis=red, keepdims=True) if x2.size else xi
    e = np.exp((xi - m).astype(np.float32) * sx).astype(np.float32)
    s = e.sum(axis=red, keepdims=True, dtype=np.float32)
    y = _requant(e / (s * sy), zy, X.dtype, zp_first=False)
    return y.reshape(X.shape)


@kernel("QuantizeLinear", 1, domain=_MS)
def quantize_linear(x: Array, y_scale: Array, y_zero_point: Array | None = None, *, axis: int = 1) -> Array:
    """QuantizeLinear (com.microsoft): per tensor or per ``axis``; uint8 without a zero point; 8/16/4-bit targets."""
    return quantize(x, y_scale, y_zero_point, axis=axis, allow_block=False)


@kernel("DequantizeLinear", 1, domain=_MS)
def dequantize_linear(x: Array, x_scale: Array, x_zero_point: Array | None = None, *, axis: int = 1) -> Array:
    """DequantizeLinear (com.microsoft): per tensor or per ``axis``; the output has the scale's type."""
    return dequantize(x, x_scale, x_zero_point, axis=axis, allow_block=False)


@kernel("QLinearConv", 1, domain=_MS)
def qlinear_conv_ms(
    x: Array,
    x_scale: Array,
    x_zero_point: Array,
    w: Array,
    w_scale: Array,
    w_zero_point: Array,
    y_scale: Array,
    y_zero_point: Array,
    B: Array | None = None,
    *,
    auto_pad: str = "NOTSET",
    channels_last: int = 0,
    dilations: list[int] | None = None,
    group: int = 1,
    kernel_shape: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> Array:
    """QLinearConv (com.microsoft): the default domain's QLinearConv, NHWC... input and output with
    ``channels_last`` (the weights stay M x C/group x k...)."""
    y = qlinear_conv(
        _channels_first(np.asarray(x), channels_last),
        x_scale,
        x_zero_point,
        w,
        w_scale,
        w_zero_point,
        y_scale,
        y_zero_point,
        B,
        auto_pad=auto_pad,
        dilations=dilations,
        group=group,
        kernel_shape=kernel_shape,
        pads=pads,
        strides=strides,
    )
    return _channels_back(y, channels_last)


def _int_product(A: Array, B: Array, a_zp: Array | None, b_zp: Array | None) -> Array:
    """``(A - a_zp) @ (B - b_zp)`` exactly (float64 holds every 8-bit product sum); b_zp per column allowed."""
    return _int_matmul(
        _shifted(A, a_zp, rows=True, what="a_zero_point"), _shifted(B, b_zp, rows=False, what="b_zero_point")
    )


def _scaled(acc: Array, a_scale: Array, b_scale: Array, B: Array, bias: Array | None, dt: Any) -> Array:
    sa = np.asarray(a_scale).astype(np.float32)
    if sa.size != 1:
        raise EvaluationError(f"a_scale must be a scalar, got shape {sa.shape}")
    sb = _matmul_param(np.asarray(b_scale).astype(np.float32), B, rows=False, what="b_scale")
    y = acc.astype(np.float32) * (sa.reshape(()) * sb)
    if bias is not None:
        bias = np.asarray(bias)
        if bias.shape != (y.shape[-1],):
            raise EvaluationError(f"bias must have shape ({y.shape[-1]},), got {bias.shape}")
        y = y + bias.astype(np.float32)
    return y.astype(dt)


@kernel("DynamicQuantizeMatMul", 1, domain=_MS)
def dynamic_quantize_matmul(
    A: Array, B: Array, b_scale: Array, b_zero_point: Array | None = None, bias: Array | None = None
) -> Array:
    """DynamicQuantizeMatMul: A quantized to uint8 as DynamicQuantizeLinear does, multiplied in integers by B
    (int8/uint8; scale and zero point per tensor or per column), scaled back to float, plus ``bias``."""
    A = np.asarray(A)
    qa, a_scale, a_zp = dynamic_quantize_linear(A)
    acc = _int_product(qa, np.asarray(B), a_zp, b_zero_point)
    return _scaled(acc, a_scale, b_scale, np.asarray(B), bias, A.dtype)


@kernel("MatMulIntegerToFloat", 1, domain=_MS)
def matmul_integer_to_float(
    A: Array,
    B: Array,
    a_scale: Array,
    b_scale: Array,
    a_zero_point: Array | None = None,
    b_zero_point: Array | None = None,
    bias: Array | None = None,
) -> Array:
    """MatMulIntegerToFloat: ``(A - a_zero_point) @ (B - b_zero_point) * a_scale * b_scale + bias`` (b's scale
    and zero point per tensor or per column)."""
    acc = _int_product(np.asarray(A), np.asarray(B), a_zero_point, b_zero_point)
    return _scaled(acc, a_scale, b_scale, np.asarray(B), bias, np.asarray(a_scale).dtype)


@kernel("QGemm", 1, domain=_MS)
def qgemm(
    A: Array,
    a_scale: Array,
    a_zero_point: Array,
    B: Array,
    b_scale: Array,
    b_zero_point: Array,
    C: Array | None = None,
    y_scale: Array | None = None,
    y_zero_point: Array | None = None,
    *,
    alpha: float = 1.0,
    transA: int = 0,
    transB: int = 0,
) -> Array:
    """QGemm: ``acc = (A' - a_zero_point) @ (B' - b_zero_point) + C`` in integers (C int32, broadcast to (M, N)),
    then ``acc * alpha * a_scale * b_scale``: float output without ``y_scale``, else requantized with
    ``y_scale`` and ``y_zero_point`` (b's scale and zero point per tensor or per column N)."""
    A, B = np.asarray(A), np.asarray(B)
    if A.ndim != 2 or B.ndim != 2:
        raise ShapeError(f"QGemm: A and B must be 2-D, got {A.shape} and {B.shape}")
    a = A.T if transA else A
    b = B.T if transB else B
    acc = _int_product(a, b, a_zero_point, b_zero_point)
    if C is not None:
        acc = acc + np.asarray(C).astype(np.float64)
    sa = _scalar32(a_scale, "a_scale")
    sb = _matmul_param(np.asarray(b_scale).astype(np.float32), b, rows=False, what="b_scale")
    mult = (np.float32(alpha) * sa * sb).astype(np.float32)
    if y_scale is None:
        return (acc.astype(np.float32) * mult).astype(np.float32)
    zy_arr = np.asarray(y_zero_point) if y_zero_point is not None else np.zeros((), np.uint8)
    zy = _zp(zy_arr, zy_arr.dtype, "y_zero_point")
    return _requant(acc.astype(np.float32) * (mult / _scalar32(y_scale, "y_scale")), zy, zy_arr.dtype, zp_first=False)
