"""Recurrent operators: RNN, GRU, LSTM, every version of the default domain (ONNX 1-2).

One driver serves the three: the input projection ``X @ W^T`` of every time step is one matmul; only the
recurrence itself loops over time, vectorised over the batch. ``sequence_lens`` is handled with masks (a
batch item past its length keeps its state and outputs zeros); the reverse direction reads each item's
steps backwards from its own last valid step. Float16 and bfloat16 compute in float32 and round once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels._util import compute_dtype
from onnxcore.kernels.registry import kernel

__all__: list[str] = []

Activation = Callable[[np.ndarray], np.ndarray]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) below, with e = exp(-|x|) <= 1: exp never
    # overflows, and no boolean indexing (it ran once per time step).
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1, e) / (1 + e)


def _make_activation(name: str, alpha: float | None, beta: float | None) -> Activation:
    # Activation names and their default alpha/beta are those of the operators of the same name.
    key = name.lower()
    if key == "sigmoid":
        return _sigmoid
    if key == "tanh":
        return np.tanh
    if key == "relu":
        return lambda x: np.maximum(x, 0)
    if key == "affine":
        a, b = (1.0 if alpha is None else alpha), (0.0 if beta is None else beta)
        return lambda x: a * x + b
    if key == "leakyrelu":
        a = 0.01 if alpha is None else alpha
        return lambda x: np.where(x >= 0, x, a * x)
    if key == "thresholdedrelu":
        a = 1.0 if alpha is None else alpha
        return lambda x: np.where(x > a, x, 0)
    if key == "scaledtanh":
        a, b = (1.0 if alpha is None else alpha), (1.0 if beta is None else beta)
        return lambda x: a * np.tanh(b * x)
    if key == "hardsigmoid":
        a, b = (0.2 if alpha is None else alpha), (0.5 if beta is None else beta)
        return lambda x: np.clip(a * x + b, 0, 1)
    if key == "elu":
        a = 1.0 if alpha is None else alpha
        return lambda x: np.where(x >= 0, x, a * (np.exp(np.minimum(x, 0)) - 1))
    if key == "softsign":
        return lambda x: x / (1 + np.abs(x))
    if key == "softplus":
        return lambda x: np.logaddexp(0, x)
    raise EvaluationError(f"unknown activation function {name!r}")


_DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def _activations(
    op: str, num_dir: int, names: Sequence[str] | None, alpha: Sequence[float] | None, beta: Sequence[float] | None
) -> list[list[Activation]]:
    per = len(_DEFAULT_ACTIVATIONS[op])
    given = list(names) if names else _DEFAULT_ACTIVATIONS[op] * num_dir
    if len(given) == per and num_dir == 2:
        given = given * 2
    if len(given) != per * num_dir:
        raise EvaluationError(f"{op}: {len(given)} activations given, expected {per * num_dir}")
    alpha = list(alpha or [])
    beta = list(beta or [])
    fns = [
        _make_activation(n, alpha[i] if i < len(alpha) else None, beta[i] if i < len(beta) else None)
        for i, n in enumerate(given)
    ]
    return [fns[d * per : (d + 1) * per] for d in range(num_dir)]


def _recurrent(
    op: str,
    X: np.ndarray,
    W: np.ndarray,
    R: np.ndarray,
    B: np.ndarray | None,
    sequence_lens: np.ndarray | None,
    initial_h: np.ndarray | None,
    initial_c: np.ndarray | None,
    P: np.ndarray | None,
    *,
    activation_alpha: Sequence[float] | None,
    activation_beta: Sequence[float] | None,
    activations: Sequence[str] | None,
    clip: float | None,
    direction: str,
    hidden_size: int | None,
    layout: int = 0,
    linear_before_reset: int = 0,
    input_forget: int = 0,
) -> tuple[np.ndarray, ...]:
    out_dtype = X.dtype
    ct = compute_dtype(X.dtype)
    if ct == np.float16:
        ct = np.dtype(np.float32)
    if direction not in ("forward", "reverse", "bidirectional"):
        raise EvaluationError(f"{op}: direction {direction!r} is not forward, reverse or bidirectional")
    num_dir = 2 if direction == "bidirectional" else 1
    x = X.astype(ct, copy=False)
    if x.ndim != 3:
        raise EvaluationError(f"{op}: X must have rank 3, has {x.ndim}")
    if layout:
        x = x.transpose(1, 0, 2)
    seq_len, batch, _ = x.shape
    k = _GATES[op]
    hidden = R.shape[-1]
    if hidden_size is not None and hidden_size != hidden:
        raise EvaluationError(f"{op}: hidden_size={hidden_size} but R has {hidden} columns")
    # The definitions fix every extent of W, R and B; broadcasting a wrong one would compute something else.
    gates = k * hidden
    if W.shape != (num_dir, gates, x.shape[2]) or R.shape != (num_dir, gates, hidden):
        raise EvaluationError(
            f"{op}: W {W.shape} / R {R.shape} do not match direction={direction}, hidden {hidden}, "
            f"input size {x.shape[2]} (expected {(num_dir, gates, x.shape[2])} / {(num_dir, gates, hidden)})"
        )
    if B is not None and B.shape != (num_dir, 2 * gates):
        raise EvaluationError(f"{op}: B {B.shape} should be {(num_dir, 2 * gates)}")
    w = W.astype(ct, copy=False)
    r = R.astype(ct, copy=False)
    b = np.zeros((num_dir, 2 * k * hidden), ct) if B is None else B.astype(ct, copy=False)
    lens = np.full(batch, seq_len, np.int64) if sequence_lens is None else sequence_lens.astype(np.int64)
    if lens.shape != (batch,) or (lens < 0).any() or (lens > seq_len).any():
        raise EvaluationError(f"{op}: sequence_lens {lens.tolist()} invalid for {seq_len} steps and batch {batch}")

    def initial(v: np.ndarray | None, name: str) -> np.ndarray:
        if v is None:
            return np.zeros((num_dir, batch, hidden), ct)
        v = v.astype(ct, copy=False)
        v = v.transpose(1, 0, 2) if layout and v.ndim == 3 else v
        if v.shape != (num_dir, batch, hidden):
            # Broadcasting another batch or direction count would run states the definition does not.
            given = v.transpose(1, 0, 2).shape if layout and v.ndim == 3 else v.shape
            want = (batch, num_dir, hidden) if layout else (num_dir, batch, hidden)
            raise EvaluationError(f"{op}: {name} {given} should be {want}")
        return v

    h0 = initial(initial_h, "initial_h")
    c0 = initial(initial_c, "initial_c")
    if P is not None and P.shape != (num_dir, 3 * hidden):
        raise EvaluationError(f"{op}: P {P.shape} should be {(num_dir, 3 * hidden)}")
    p = np.zeros((num_dir, 3 * hidden), ct) if P is None else P.astype(ct, copy=False)
    acts = _activations(op, num_dir, activations, activation_alpha, activation_beta)
    steps = np.arange(seq_len)
    valid = steps[:, None] < lens[None, :]  # [seq, batch]
    bidx = np.arange(batch)
    y = np.zeros((seq_len, num_dir, batch, hidden), ct)
    y_h = np.empty((num_dir, batch, hidden), ct)
    y_c = np.empty((num_dir, batch, hidden), ct)

    def clipped(v: np.ndarray) -> np.ndarray:
        return np.clip(v, -clip, clip) if clip is not None else v

    # Every sequence runs all steps: no masking per step (the common case).
    full = bool(valid.all())
    peep = P is not None
    for d in range(num_dir):
        reverse = direction == "reverse" or d == 1
        wb, rb = b[d, : k * hidden], b[d, k * hidden :]
        # Every step's input projection in one matmul, [seq, batch, k*H], with the recurrence bias
        # added once where it is added outside the gate products (all of it but GRU's candidate
        # gate with linear_before_reset).
        folded = k * hidden if op != "GRU" or not linear_before_reset else 2 * hidden
        # BLAS multiplies by a transposed view several times slower at these sizes: transpose once.
        xw = x @ np.ascontiguousarray(w[d].T) + wb
        xw[..., :folded] += rb[:folded]
        rb = np.concatenate([np.zeros(folded, ct), rb[folded:]])
        if reverse:
            t_of = np.where(valid, lens[None, :] - 1 - steps[:, None], 0)  # output step of each processed step
            xw = xw[t_of, bidx[None, :]]
        else:
            t_of = np.broadcast_to(steps[:, None], (seq_len, batch))
        rt = np.ascontiguousarray(r[d].T)
        h = h0[d].copy()
        c = c0[d].copy()
        fns = acts[d]
        pi, po, pf = p[d, :hidden], p[d, hidden : 2 * hidden], p[d, 2 * hidden :]
        for t in range(seq_len):
            gx = xw[t]
            if op == "RNN":
                h_new = fns[0](clipped(gx + h @ rt))
            elif op == "GRU":
                zr = h @ rt[:, : 2 * hidden]
                zr += gx[:, : 2 * hidden]
                zr = fns[0](clipped(zr))  # both gates in one call: the activation is elementwise
                z, rg = zr[:, :hidden], zr[:, hidden:]
                if linear_before_reset:
                    hh = gx[:, 2 * hidden :] + rg * (h @ rt[:, 2 * hidden :] + rb[2 * hidden :])
                else:
                    hh = gx[:, 2 * hidden :] + (rg * h) @ rt[:, 2 * hidden :]
                cand = fns[1](clipped(hh))
                h_new = (1 - z) * cand + z * h
            else:
                g = h @ rt  # gates i, o, f, c
                g += gx
                if peep:
                    i_g = fns[0](clipped(g[:, :hidden] + pi * c))
                    f_g = fns[0](clipped(g[:, 2 * hidden : 3 * hidden] + pf * c))
                else:
                    # i, o and f in one call (the activation is elementwise); o needs no c_new then.
                    iof = fns[0](clipped(g[:, : 3 * hidden]))
                    i_g, f_g = iof[:, :hidden], iof[:, 2 * hidden :]
                if input_forget:
                    f_g = 1 - i_g
                c_cand = fns[1](clipped(g[:, 3 * hidden :]))
                c_new = f_g * c + i_g * c_cand
                o_g = fns[0](clipped(g[:, hidden : 2 * hidden] + po * c_new)) if peep else iof[:, hidden : 2 * hidden]
                h_new = o_g * fns[2](c_new)
                c = c_new if full else np.where(valid[t][:, None], c_new, c)
            if full:
                h = h_new
                y[t_of[t, 0], d] = h_new
            else:
                m = valid[t][:, None]
                h = np.where(m, h_new, h)
                y[t_of[t], d, bidx] = np.where(m, h_new, y[t_of[t], d, bidx])
        y_h[d] = h
        y_c[d] = c
    if layout:
        outs = (y.transpose(2, 0, 1, 3), y_h.transpose(1, 0, 2), y_c.transpose(1, 0, 2))
    else:
        outs = (y, y_h, y_c)
    result = tuple(np.ascontiguousarray(o).astype(out_dtype, copy=False) for o in outs)
    return result if op == "LSTM" else result[:2]


@kernel("RNN", 1)
def rnn_1(
    X: np.ndarray,
    W: np.ndarray,
    R: np.ndarray,
    B: np.ndarray | None = None,
    sequence_lens: np.ndarray | None = None,
    initial_h: np.ndarray | None = None,
    *,
    activation_alpha: list[float] | None = None,
    activation_beta: list[float] | None = None,
    activations: list[str] | None = None,
    clip: float | None = None,
    direction: str = "forward",
    hidden_size: int | None = None,
    output_sequence: int = 0,
) -> tuple[np.ndarray, ...]:
    """RNN-1 (``output_sequence`` only says whether Y is wanted; Y is always computed)."""
    return _recurrent(
        "RNN", X, W, R, B, sequence_lens, initial_h, None, None,
        activation_alpha=activation_alpha, activation_beta=activation_beta, activations=activations,
        clip=clip, direction=direction, hidden_size=hidden_size,
    )  # fmt: skip


@kernel("RNN", 7, 14, 22)
def rnn(
    X: np.ndarray,
    W: np.ndarray,
    R: np.ndarray,
    B: np.ndarray | None = None,
    sequence_lens: np.ndarray | None = None,
    initial_h: np.ndarray | None = None,
    *,
    activation_alpha: list[float] | None = None,
    activation_beta: list[float] | None = None,
    activations: list[str] | None = None,
    clip: float | None = None,
    direction: str = "forward",
    hidden_size: int | None = None,
    **kw: Any,
) -> tuple[np.ndarray, ...]:
    """RNN-7 (no layout), 14 and 22 (``layout``; 22 adds bfloat16)."""
    return _recurrent(
        "RNN", X, W, R, B, sequence_lens, initial_h, None, None,
        activation_alpha=activation_alpha, activation_beta=activation_beta, activations=activations,
        clip=clip, direction=direction, hidden_size=hidden_size, layout=int(kw.get("layout", 0)),
    )  # fmt: skip


@kernel("GRU", 1, 3, 7, 14, 22)
def gru(
    X: np.ndarray,
    W: np.ndarray,
    R: np.ndarray,
    B: np.ndarray | None = None,
    sequence_lens: np.ndarray | None = None,
    initial_h: np.ndarray | None = None,
    *,
    activation_alpha: list[float] | None = None,
    activation_beta: list[float] | None = None,
    activations: list[str] | None = None,
    clip: float | None = None,
    direction: str = "forward",
    hidden_size: int | None = None,
    **kw: Any,
) -> tuple[np.ndarray, ...]:
    """GRU: 1 (output_sequence), 3 (+linear_before_reset), 7 (-output_sequence), 14 (+layout), 22 (bfloat16).

    ``linear_before_reset`` defaults to 0 where the version has it; GRU-1 has no such attribute and computes
    the reset gate as the 0 setting does.
    """
    return _recurrent(
        "GRU", X, W, R, B, sequence_lens, initial_h, None, None,
        activation_alpha=activation_alpha, activation_beta=activation_beta, activations=activations,
        clip=clip, direction=direction, hidden_size=hidden_size, layout=int(kw.get("layout", 0)),
        linear_before_reset=int(kw.get("linear_before_reset", 0)),
    )  # fmt: skip


@kernel("LSTM", 1, 7, 14, 22)
def lstm(
    X: np.ndarray,
    W: np.ndarray,
    R: np.ndarray,
    B: np.ndarray | None = None,
    sequence_lens: np.ndarray | None = None,
    initial_h: np.ndarray | None = None,
    initial_c: np.ndarray | None = None,
    P: np.ndarray | None = None,
    *,
    activation_alpha: list[float] | None = None,
    activation_beta: list[float] | None = None,
    activations: list[str] | None = None,
    clip: float | None = None,
    direction: str = "forward",
    hidden_size: int | None = None,
    input_forget: int = 0,
    **kw: Any,
) -> tuple[np.ndarray, ...]:
    """LSTM: 1 (output_sequence), 7, 14 (+layout), 22 (bfloat16); peepholes ``P``, ``input_forget``."""
    return _recurrent(
        "LSTM", X, W, R, B, sequence_lens, initial_h, initial_c, P,
        activation_alpha=activation_alpha, activation_beta=activation_beta, activations=activations,
        clip=clip, direction=direction, hidden_size=hidden_size, layout=int(kw.get("layout", 0)),
        input_forget=input_forget,
    )  # fmt: skip
