"""Fused operators of the ``com.microsoft`` domain that onnxruntime's graph optimizer writes (since_version 1):
FusedConv, NhwcConv, NhwcFusedConv, FusedGemm and FusedMatMul.

Each is a default-domain operator followed by what was fused into it, and is computed by that operator's kernel
(:mod:`onnxcore.kernels.conv`, :mod:`onnxcore.kernels.linalg`) and then the rest:

* **FusedConv**: ``activation(Conv(X, W, B) + Z)``; ``Z`` (optional) is added *before* the activation (onnxruntime
  1.31 CPU). The activation and its ``activation_params``: Relu, Tanh, Sigmoid (none); LeakyRelu (alpha); Clip
  (min, max); HardSigmoid (alpha, beta). onnxruntime refuses a parameterized activation whose parameters are not
  all given, and any other name; so do we.
* **NhwcConv, NhwcFusedConv**: the same in channels-last layout: X is (N, spatial..., C), W is (M, k...,
  C/group) and Y is (N, spatial..., M). onnxruntime defines them for its GPU providers only (its CPU provider has
  no kernel), so they are tested against its Conv on the transposed operands.
* **FusedGemm**: ``activation(Gemm(A, B, C))`` with ``activation_alpha``, ``activation_beta``,
  ``activation_gamma`` as the activation's alpha, beta, gamma. As onnxruntime: ``activation`` is required (one
  of Relu, Tanh, Sigmoid, LeakyRelu, HardSigmoid, Elu, Selu, ThresholdedRelu, Softsign, ScaledTanh,
  ParametricSoftplus), and so is every parameter of it (the default domain's defaults do not apply).
* **FusedMatMul**: ``alpha * MatMul(A', B')``. ``transBatchA`` moves A's first axis to the place before its
  last (``[b0, b1, ..., m, k] -> [b1, ..., b0?...]``; exactly: axes ``(1, ..., r-2, 0, r-1)``), then ``transA``
  swaps its last two axes; the same for B.

onnxruntime computes the activations of its CPU kernels with approximations (its MLAS tanh and logistic);
results agree with the exact functions to a few float32 units in the last place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels.conv import conv
from onnxcore.kernels.linalg import gemm, matmul
from onnxcore.kernels.registry import kernel

__all__: list[str] = []

_MS = "com.microsoft"

Array = np.ndarray

# The activations onnxruntime fuses: name -> (the names of its parameters, the function).
_Act = Callable[[Array, Sequence[float]], Array]


def _f(y: Array, v: float) -> Any:
    return y.dtype.type(v)


def _sigmoid(y: Array, p: Sequence[float]) -> Array:
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-y))


def _hard_sigmoid(y: Array, p: Sequence[float]) -> Array:
    return np.clip(y * _f(y, p[0]) + _f(y, p[1]), 0, 1)


def _elu(y: Array, p: Sequence[float]) -> Array:
    return np.where(y >= 0, y, _f(y, p[0]) * np.expm1(np.minimum(y, 0)))


def _selu(y: Array, p: Sequence[float]) -> Array:
    a, g = _f(y, p[0]), _f(y, p[1])
    return g * np.where(y > 0, y, a * np.expm1(np.minimum(y, 0)))


def _softplus(y: Array, p: Sequence[float]) -> Array:
    a, b = _f(y, p[0]), _f(y, p[1])
    return a * np.logaddexp(0, b * y).astype(y.dtype)


_ACTIVATIONS: dict[str, tuple[tuple[str, ...], _Act]] = {
    "Relu": ((), lambda y, p: np.maximum(y, 0)),
    "Tanh": ((), lambda y, p: np.tanh(y)),
    "Sigmoid": ((), _sigmoid),
    "LeakyRelu": (("alpha",), lambda y, p: np.where(y >= 0, y, y * _f(y, p[0]))),
    "Clip": (("min", "max"), lambda y, p: np.minimum(np.maximum(y, _f(y, p[0])), _f(y, p[1]))),
    "HardSigmoid": (("alpha", "beta"), _hard_sigmoid),
    # FusedGemm's only (FusedConv refuses these; FusedGemm refuses Clip).
    "Elu": (("alpha",), _elu),
    "Selu": (("alpha", "gamma"), _selu),
    "ThresholdedRelu": (("alpha",), lambda y, p: np.where(y > _f(y, p[0]), y, 0).astype(y.dtype)),
    "Softsign": ((), lambda y, p: y / (1 + np.abs(y))),
    "ScaledTanh": (("alpha", "beta"), lambda y, p: _f(y, p[0]) * np.tanh(_f(y, p[1]) * y)),
    "ParametricSoftplus": (("alpha", "beta"), _softplus),
}
_CONV_ACTIVATIONS = ("Relu", "Tanh", "Sigmoid", "LeakyRelu", "Clip", "HardSigmoid")
_GEMM_ACTIVATIONS = tuple(a for a in _ACTIVATIONS if a != "Clip")


def _activate(y: Array, activation: str | None, params: Sequence[float]) -> Array:
    if not activation:
        return y
    dt = y.dtype
    work = y.astype(np.float32) if dt == np.float16 else y
    out = _ACTIVATIONS[activation][1](work, params)
    return np.asarray(out).astype(dt, copy=False)


def _conv_activation(activation: str | None, activation_params: Sequence[float] | None, op: str) -> list[float]:
    if not activation:
        return []
    if activation not in _CONV_ACTIVATIONS:
        raise EvaluationError(f"{op}: activation {activation!r} is not one of {', '.join(_CONV_ACTIVATIONS)}")
    names = _ACTIVATIONS[activation][0]
    params = [float(v) for v in (activation_params or [])]
    if len(params) != len(names):
        raise EvaluationError(
            f"{op}: activation {activation} takes {len(names)} activation_params ({', '.join(names) or 'none'}), "
            f"got {len(params)}"
        )
    return params


def _fused_conv(X: Array, W: Array, B: Array | None, Z: Array | None, activation: str | None,
                activation_params: Sequence[float] | None, op: str, attrs: dict[str, Any]) -> Array:  # fmt: skip
    params = _conv_activation(activation, activation_params, op)
    y = conv(X, W, B, **attrs)
    if Z is not None:
        z = np.asarray(Z)
        if z.shape != y.shape:
            raise ShapeError(f"{op}: Z has shape {z.shape}, the convolution's output {y.shape}")
        y = y + z.astype(y.dtype)
    return _activate(y, activation, params)


@kernel("FusedConv", 1, domain=_MS)
def fused_conv(
    X: Array,
    W: Array,
    B: Array | None = None,
    Z: Array | None = None,
    *,
    activation: str | None = None,
    activation_params: list[float] | None = None,
    auto_pad: str = "NOTSET",
    dilations: list[int] | None = None,
    group: int = 1,
    kernel_shape: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> Array:
    """FusedConv: ``activation(Conv(X, W, B) + Z)``."""
    attrs = dict(auto_pad=auto_pad, dilations=dilations, group=group, kernel_shape=kernel_shape, pads=pads,
                 strides=strides)  # fmt: skip
    return _fused_conv(X, W, B, Z, activation, activation_params, "FusedConv", attrs)


def _to_first(a: Array) -> Array:
    if a.ndim < 3:
        raise ShapeError(f"a channels-last tensor has rank >= 3 (N, spatial..., C), got shape {a.shape}")
    return np.moveaxis(a, -1, 1)


@kernel("NhwcFusedConv", 1, domain=_MS)
def nhwc_fused_conv(
    X: Array,
    W: Array,
    B: Array | None = None,
    Z: Array | None = None,
    *,
    activation: str | None = None,
    activation_params: list[float] | None = None,
    auto_pad: str = "NOTSET",
    dilations: list[int] | None = None,
    group: int = 1,
    kernel_shape: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> Array:
    """NhwcFusedConv: FusedConv with X, W, Z and Y channels-last."""
    attrs = dict(auto_pad=auto_pad, dilations=dilations, group=group, kernel_shape=kernel_shape, pads=pads,
                 strides=strides)  # fmt: skip
    z = None if Z is None else _to_first(np.asarray(Z))
    y = _fused_conv(_to_first(X), _to_first(W), B, z, activation, activation_params, "NhwcFusedConv", attrs)
    return np.ascontiguousarray(np.moveaxis(y, 1, -1))


@kernel("NhwcConv", 1, domain=_MS)
def nhwc_conv(
    X: Array,
    W: Array,
    B: Array | None = None,
    *,
    auto_pad: str = "NOTSET",
    dilations: list[int] | None = None,
    group: int = 1,
    kernel_shape: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> Array:
    """NhwcConv: Conv with X (N, spatial..., C), W (M, k..., C/group) and Y (N, spatial..., M)."""
    return nhwc_fused_conv(X, W, B, auto_pad=auto_pad, dilations=dilations, group=group, kernel_shape=kernel_shape,
                           pads=pads, strides=strides)  # fmt: skip


@kernel("FusedGemm", 1, domain=_MS)
def fused_gemm(
    A: Array,
    B: Array,
    C: Array | None = None,
    *,
    activation: str,
    activation_alpha: float | None = None,
    activation_beta: float | None = None,
    activation_gamma: float | None = None,
    alpha: float = 1.0,
    beta: float = 1.0,
    transA: int = 0,
    transB: int = 0,
) -> Array:
    """FusedGemm: ``activation(alpha * A' B' + beta * C)``."""
    if activation not in _GEMM_ACTIVATIONS:
        raise EvaluationError(f"FusedGemm: activation {activation!r} is not one of {', '.join(_GEMM_ACTIVATIONS)}")
    given = {"alpha": activation_alpha, "beta": activation_beta, "gamma": activation_gamma}
    params = []
    for name in _ACTIVATIONS[activation][0]:
        v = given[name]
        if v is None:
            raise EvaluationError(f"FusedGemm: activation {activation} needs activation_{name}")
        params.append(float(v))
    y = gemm(A, B, C, alpha=alpha, beta=beta, transA=transA, transB=transB)
    return _activate(y, activation, params)


def _batch_trans(a: Array, trans_batch: int, trans: int, what: str) -> Array:
    if trans_batch and a.ndim >= 3:
        a = np.moveaxis(a, 0, -2)
    if trans:
        if a.ndim < 2:
            raise ShapeError(f"FusedMatMul: {what} of shape {a.shape} cannot be transposed (rank < 2)")
        a = np.swapaxes(a, -1, -2)
    return a


@kernel("FusedMatMul", 1, domain=_MS)
def fused_matmul(
    A: Array,
    B: Array,
    *,
    alpha: float = 1.0,
    transA: int = 0,
    transB: int = 0,
    transBatchA: int = 0,
    transBatchB: int = 0,
) -> Array:
    """FusedMatMul: ``alpha * (A' @ B')`` with numpy.matmul's broadcasting (see the module text for A', B')."""
    a = _batch_trans(np.asarray(A), transBatchA, transA, "A")
    b = _batch_trans(np.asarray(B), transBatchB, transB, "B")
    y = matmul(a, b)
    if alpha != 1.0:
        y = (y * y.dtype.type(alpha)).astype(y.dtype, copy=False)
    return y
