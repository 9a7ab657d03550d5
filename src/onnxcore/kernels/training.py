"""Optimizers of the ``ai.onnx.preview.training`` domain: Adagrad-1, Adam-1 and Momentum-1.

Each takes a learning rate ``R`` and an update count ``T`` (scalars), then a variadic list of
``n`` optimized tensors followed by, kind after kind, their gradients and optimizer states; its
outputs are the ``n`` new values followed by the new states, kind after kind (the definitions'
input and output descriptions). Every tensor is updated independently with the definition's
pseudo code; its arithmetic is element-wise with numpy-style (multidirectional, Clause 6.6.2)
broadcasting. The type constraint of the variadic list is heterogeneous, so each group (X, G, ...)
computes in the widest of its element types and each output keeps the type of the input it
replaces (X_new that of X, H_new that of H, ...). The scalar learning-rate factor is computed in
double and rounded once to the group's type.

``Gradient-1`` of the same domain differentiates a part of the enclosing graph named by its
``xs``/``zs``/``y`` attributes, so it cannot be evaluated from its inputs alone: the kernel registered
here only marks it as bound, and when the enclosing graph is built
:func:`onnxcore.runtime.gradient.bind_gradients` replaces it with a reverse-mode differentiation of
that graph's nodes, or refuses the model (Clause 4.4) naming what it cannot differentiate. See
:mod:`onnxcore.runtime.gradient` for the positions taken (a non-scalar ``y`` is differentiated as the
sum of its elements; an ``xs`` tensor ``y`` does not depend on gets zeros).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels._util import check_broadcast, scalar_of
from onnxcore.kernels.registry import kernel

__all__ = ["adagrad", "adam", "gradient", "momentum"]

_TRAINING = "ai.onnx.preview.training"


def _groups(op: str, inputs: Sequence[np.ndarray], kinds: int) -> list[tuple[np.ndarray, ...]]:
    """Split the variadic ``inputs`` (kind after kind) into one tuple per optimized tensor."""
    if not inputs or len(inputs) % kinds:
        raise EvaluationError(
            f"{op}: the variadic inputs must be {kinds} lists of equal length (tensors, gradients, states), "
            f"got {len(inputs)} tensors"
        )
    n = len(inputs) // kinds
    out = []
    for i in range(n):
        group = tuple(np.asarray(inputs[i + j * n]) for j in range(kinds))
        for a in group:
            if a.dtype not in (np.float32, np.float64):
                raise EvaluationError(f"{op}: optimized tensors must be float or double, got {a.dtype}")
        check_broadcast(*group)
        out.append(group)
    return out


def _scalars(op: str, R: np.ndarray, T: np.ndarray) -> tuple[float, int]:
    r = scalar_of(R, name=f"{op}: R")
    t = scalar_of(T, name=f"{op}: T")
    return float(r), int(t)


def _wide(group: tuple[np.ndarray, ...]) -> np.dtype[Any]:
    return np.dtype(np.result_type(*group))


def _required(op: str, **attrs: Any) -> None:
    missing = [k for k, v in attrs.items() if v is None]
    if missing:
        raise EvaluationError(f"{op}: required attribute(s) {', '.join(missing)} missing")


@kernel("Adagrad", 1, domain=_TRAINING)
def adagrad(
    R: np.ndarray,
    T: np.ndarray,
    *inputs: np.ndarray,
    decay_factor: float = 0.0,
    epsilon: float = 1e-6,
    norm_coefficient: float = 0.0,
) -> tuple[np.ndarray, ...]:
    """Adagrad-1: inputs X..., G..., H...; outputs X_new..., H_new..."""
    r, t = _scalars("Adagrad", R, T)
    rate = r / (1.0 + t * float(decay_factor))
    xs: list[np.ndarray] = []
    hs: list[np.ndarray] = []
    for x, g, h in _groups("Adagrad", inputs, 3):
        dt = _wide((x, g, h))
        c = dt.type
        with np.errstate(all="ignore"):
            xw = x.astype(dt, copy=False)
            g_reg = c(norm_coefficient) * xw + g.astype(dt, copy=False)
            h_new = h.astype(dt, copy=False) + g_reg * g_reg
            x_new = xw - c(rate) * g_reg / (np.sqrt(h_new) + c(epsilon))
        xs.append(x_new.astype(x.dtype, copy=False))
        hs.append(h_new.astype(h.dtype, copy=False))
    return tuple(xs + hs)


@kernel("Adam", 1, domain=_TRAINING)
def adam(
    R: np.ndarray,
    T: np.ndarray,
    *inputs: np.ndarray,
    alpha: float = 0.9,
    beta: float = 0.999,
    epsilon: float = 1e-6,
    norm_coefficient: float = 0.0,
    norm_coefficient_post: float = 0.0,
) -> tuple[np.ndarray, ...]:
    """Adam-1: inputs X..., G..., V..., H...; outputs X_new..., V_new..., H_new..."""
    r, t = _scalars("Adam", R, T)
    a, b = float(alpha), float(beta)
    with np.errstate(all="ignore"):
        # Bias correction only after the first update (T > 0), as the definition's pseudo code says.
        rate = float(np.float64(r) * np.sqrt(1.0 - b**t) / (1.0 - a**t)) if t > 0 else r
    xs: list[np.ndarray] = []
    vs: list[np.ndarray] = []
    hs: list[np.ndarray] = []
    for x, g, v, h in _groups("Adam", inputs, 4):
        dt = _wide((x, g, v, h))
        c = dt.type
        with np.errstate(all="ignore"):
            xw = x.astype(dt, copy=False)
            g_reg = c(norm_coefficient) * xw + g.astype(dt, copy=False)
            v_new = c(a) * v.astype(dt, copy=False) + c(1.0 - a) * g_reg
            h_new = c(b) * h.astype(dt, copy=False) + c(1.0 - b) * (g_reg * g_reg)
            x_new = xw - c(rate) * (v_new / (np.sqrt(h_new) + c(epsilon)))
            x_final = c(1.0 - float(norm_coefficient_post)) * x_new
        xs.append(x_final.astype(x.dtype, copy=False))
        vs.append(v_new.astype(v.dtype, copy=False))
        hs.append(h_new.astype(h.dtype, copy=False))
    return tuple(xs + vs + hs)


@kernel("Momentum", 1, domain=_TRAINING)
def momentum(
    R: np.ndarray,
    T: np.ndarray,
    *inputs: np.ndarray,
    alpha: float | None = None,
    beta: float | None = None,
    mode: str | None = None,
    norm_coefficient: float | None = None,
) -> tuple[np.ndarray, ...]:
    """Momentum-1 (``mode`` "standard" or "nesterov"): inputs X..., G..., V...; outputs X_new..., V_new..."""
    _required("Momentum", alpha=alpha, beta=beta, mode=mode, norm_coefficient=norm_coefficient)
    assert alpha is not None and beta is not None and norm_coefficient is not None
    if mode not in ("standard", "nesterov"):
        raise EvaluationError(f"Momentum: mode {mode!r} is neither 'standard' nor 'nesterov'")
    r, t = _scalars("Momentum", R, T)
    # In the first training iteration (T == 0) the gradient's coefficient is 1.
    beta_adj = float(beta) if t > 0 else 1.0
    xs: list[np.ndarray] = []
    vs: list[np.ndarray] = []
    for x, g, v in _groups("Momentum", inputs, 3):
        dt = _wide((x, g, v))
        c = dt.type
        with np.errstate(all="ignore"):
            xw = x.astype(dt, copy=False)
            g_reg = c(norm_coefficient) * xw + g.astype(dt, copy=False)
            v_new = c(alpha) * v.astype(dt, copy=False) + c(beta_adj) * g_reg
            if mode == "standard":
                x_new = xw - c(r) * v_new
            else:
                x_new = xw - c(r) * (g_reg + c(alpha) * v_new)
        xs.append(x_new.astype(x.dtype, copy=False))
        vs.append(v_new.astype(v.dtype, copy=False))
    return tuple(xs + vs)


@kernel("Gradient", 1, domain=_TRAINING)
def gradient(
    *inputs: np.ndarray, xs: list[str] | None = None, y: str | None = None, zs: list[str] | None = None
) -> Any:
    """Gradient-1: bound to the enclosing graph when it is built (see the module docstring); never called."""
    raise EvaluationError("Gradient: the node was not bound to the graph that encloses it")
