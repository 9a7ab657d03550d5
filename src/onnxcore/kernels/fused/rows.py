"""Row-wise steps of a transformer layer by the accelerator's compiled loops, called straight from the plan
(Clause 8.2, per-node overhead; the matcher of ``LayerNormRows`` is ``onnxcore.runtime.optimize.rows``, the others
are parts of ``onnxcore.kernels.fused.pattern``'s steps).

A transformer's normalisations, GELUs and attention probabilities run on small tensors (a few rows of 128 values
in a decoder step): there a kernel's checks and dispatch cost more than its arithmetic. The steps here know at
plan time what the kernel checks on every call (the constant scale and bias, the attributes) and, for an input
the kernel would send down its accelerated path anyway, make the same compiled call directly (the kernel's own
function, ``kernels/_rowwise.py``, not a copy); for anything else they call the kernel. The values are the kernel's
own, bit for bit, except the attention probabilities, whose row sums are added in another order than the numpy
path's BLAS sums (within the type's rounding of a row's sum).

- :class:`LayerNormRows`: a ``LayerNormalization`` node with constant ``Scale`` (and ``B``) over the last axis;
- :class:`RmsNormRows`: ``RMSNormalization`` with a constant scale (the RMSNorm pattern's step);
- the fused kernel ``RmsNormRows``: an ``RMSNormalization``-23 node with a constant scale over the last axis (what
  exporters write at opset 23; its matcher is ``fast_layer_norms``), the same compiled call;
- :class:`TanhGelu`: ``Gelu(approximate="tanh")`` (the tanh-GELU pattern's step): the kernel's operations in
  its order, in two compiled passes around numpy's ``tanh``;
- :func:`attention_rows`: the fused attention's scaling, masking and softmax of 4-D scores.

Without the accelerator (``ONNXCORE_ACCEL=0``, or numba absent) every step is its kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels import accel
from onnxcore.kernels._rational import TANH_GELU_C, TANH_GELU_K
from onnxcore.kernels._rowwise import layer_norm_last_axis, rms_norm_compiled, rms_norm_last_axis
from onnxcore.kernels.fused import FUSED_DOMAIN
from onnxcore.kernels.fused.common import default_kernel
from onnxcore.kernels.registry import kernel
from onnxcore.kernels.threads import MIN_PARALLEL_ELEMENTS

__all__ = ["STASH_OF", "LayerNormRows", "RmsNormRows", "TanhGelu", "attention_rows", "row_vector", "rows_take"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
STASH_OF = {np.dtype(np.float32): 1, np.dtype(np.float64): 11}  # the stash_type that is the dtype itself


def row_vector(p: Any, dtype: np.dtype[Any] | None = None) -> bool:
    """Whether ``p`` is a C-contiguous 1-D float32/float64 array (of ``dtype`` when given)."""
    return (
        type(p) is np.ndarray
        and p.ndim == 1
        and p.dtype in _FLOATS
        and p.flags.c_contiguous
        and (dtype is None or p.dtype == dtype)
    )


def rows_take(x: Any, dtype: np.dtype[Any], d: int) -> bool:
    """Whether a row step sends ``x`` to the compiled loop over rows of ``d`` values of ``dtype``: a C-contiguous
    array of that type whose last axis has ``d`` values, not empty and below the kernel threads' size (larger
    ones go to the kernel, which splits them), with the accelerator on."""
    return (
        type(x) is np.ndarray
        and x.dtype == dtype
        and x.ndim >= 1
        and x.shape[-1] == d
        and 0 < x.size < MIN_PARALLEL_ELEMENTS
        and x.flags.c_contiguous
        and accel.enabled()
    )


class LayerNormRows:
    """LayerNormalization-17 over the last axis with a constant ``Scale`` (and ``B``) of its input's type and
    ``stash_type`` that type: the accelerated kernel's compiled call, made directly for a C-contiguous input below
    the kernel threads' size (the kernel's own path for such an input); the kernel for anything else.

    With ``stats`` false (a node naming ``Y`` alone, as the exporters write it) the step returns ``Y`` alone, the
    compiled loop writing the rows' statistics into buffers of the step that nobody reads (a decoder step's LayerNorm
    of two rows of 128 values: two arrays, their reshapes and the tuple fewer)."""

    __slots__ = ("_loop_args", "_sinks", "bias", "d", "dtype", "eps", "kernel", "scale", "stats")

    def __init__(
        self,
        kernel: Callable[..., Any],
        scale: np.ndarray,
        bias: np.ndarray | None,
        epsilon: float,
        stats: bool = True,
    ) -> None:
        self.kernel = kernel
        self.scale = scale
        self.bias = bias
        self.dtype = scale.dtype
        self.d = int(scale.shape[0])
        self.eps = epsilon
        self.stats = stats
        # The compiled loop's arguments besides the rows, made once (layer_norm_compiled makes them per call).
        t = self.dtype.type
        self._loop_args = (scale, scale if bias is None else bias, bias is not None, t(self.d), t(epsilon))
        # Where the loop writes the rows' statistics when nobody reads them, (mean, inv): grown to the most rows seen,
        # replaced as one tuple so that a run in another thread reads a pair of one size (runs in several threads
        # may write them at once: values never read).
        empty = np.empty(0, self.dtype)
        self._sinks = (empty, empty)

    def __call__(self, X: Any, Scale: Any, B: Any = None, **kw: Any) -> Any:
        if rows_take(X, self.dtype, self.d) and kw.get("axis", -1) in (-1, X.ndim - 1):
            return self.rows(X) if self.stats else self.values(X)
        y = self.kernel(X, Scale, B, **kw)
        return y[0] if not self.stats and type(y) is tuple else y

    def rows(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(Y, Mean, InvStdDev)`` of an ``x`` :func:`rows_take` accepted (below the kernel threads' size), by the
        compiled loop with the arguments made once."""
        return layer_norm_last_axis(x, *self._loop_args)

    def values(self, x: np.ndarray) -> np.ndarray:
        """``Y`` of an ``x`` :func:`rows_take` accepted: the compiled loop of :meth:`rows`, its statistics written
        into the step's own buffers."""
        d = self.d
        rows = x.size // d
        sinks = self._sinks
        if sinks[0].shape[0] < rows:
            sinks = self._sinks = (np.empty(rows, self.dtype), np.empty(rows, self.dtype))
        mean, inv = sinks
        out = np.empty(x.shape, x.dtype)
        scale, bb, has_b, n, eps = self._loop_args
        fn = accel.jit().layer_norm_rows
        fn(x.reshape(rows, d), scale, bb, has_b, n, eps, out.reshape(rows, d), mean, inv, 0, rows)
        return out


class RmsNormRows:
    """RMSNormalization-23 over the last axis with a scale of its input's type and ``stash_type`` that type: the
    accelerated kernel's compiled call, made directly for a C-contiguous input below the kernel threads' size
    with a scale of one value per column; the kernel for anything else."""

    __slots__ = ("kernel",)

    def __init__(self, kernel: Callable[..., Any]) -> None:
        self.kernel = kernel

    def __call__(self, X: Any, scale: Any, **kw: Any) -> Any:
        if (
            type(X) is np.ndarray
            and row_vector(scale, X.dtype)
            and rows_take(X, X.dtype, scale.shape[0])
            and kw.get("axis", -1) in (-1, X.ndim - 1)
            and kw.get("stash_type", 1) == STASH_OF[X.dtype]
        ):
            return rms_norm_compiled(X, scale, scale.shape[0], kw.get("epsilon", 1e-5))
        return self.kernel(X, scale, **kw)


_SHORT_GELU = 1 << 16  # elements (256 KB of float32): up to this size the three passes stay in the L2 cache


class TanhGelu:
    """Gelu-20 with ``approximate="tanh"`` (what the tanh-GELU pattern runs): for a small C-contiguous float32 or
    float64 input with the accelerator on, the kernel's operations straight to its compiled loops, without the
    kernel's blocks (float32: one pass, :mod:`onnxcore.kernels._rational`'s tanh; float64: one pass each side of
    numpy's ``tanh``); the kernel otherwise (a large input: its blocks, on the kernel threads). The same values."""

    __slots__ = ("kernel",)

    def __init__(self, kernel: Callable[..., Any]) -> None:
        self.kernel = kernel

    def __call__(self, x: Any, *, approximate: str) -> Any:
        if (
            type(x) is np.ndarray
            and 0 < x.size <= _SHORT_GELU
            and x.dtype in _FLOATS
            and x.flags.c_contiguous
            and accel.enabled()
        ):
            t = x.dtype.type
            out = np.empty(x.shape, x.dtype)
            x1, o1 = x.reshape(-1), out.reshape(-1)
            fns = accel.jit()
            if t is np.float32:
                fns.tanh32(x1, o1, True, t(TANH_GELU_K), t(TANH_GELU_C))
                return out
            fns.tanh_gelu_inner(x1, o1, t(TANH_GELU_K), t(TANH_GELU_C))
            np.tanh(o1, out=o1)
            fns.tanh_gelu_outer(x1, o1)
            return out
        return self.kernel(x, approximate=approximate)


_ALL_STEPS = np.ones(4, np.int64)  # a mask of the scores' own shape: every axis steps
_ALL_STEPS.flags.writeable = False
# (mask shape, scores shape) -> the mask's axis steps, or None where it does not broadcast to the scores: made once
# per pair of shapes (a decoder step's attention costs a few microseconds, the steps array one of them).
_MASK_STEPS: dict[tuple[tuple[int, ...], tuple[int, ...]], np.ndarray | None] = {}


def _mask_steps(mask: tuple[int, ...], scores: tuple[int, ...]) -> np.ndarray | None:
    if any(m != d and m != 1 for m, d in zip(mask, scores)):
        return None
    steps = np.array([m != 1 for m in mask], np.int64)
    steps.flags.writeable = False
    return steps


def attention_rows(
    s: np.ndarray, mask: np.ndarray | None, scale: tuple[str, float] | None, guard: bool
) -> np.ndarray | None:
    """The probabilities of the fused attention from its scores ``s`` (4-D, C-contiguous, fresh: updated in
    place), by the accelerator's row loops: scale, mask and shift by the row maximum in one pass over each row,
    numpy's ``exp``, then the division by the row sums (and, with ``guard``, NaN set to 0) in another. None when
    the accelerator is off or these do not apply (another rank, a mask of another type or not broadcasting to
    the scores)."""
    if not (accel.enabled() and s.ndim == 4 and s.flags.c_contiguous and s.size):
        return None
    steps = _ALL_STEPS
    if mask is not None:
        if mask.dtype != s.dtype or mask.ndim != 4:
            return None
        if mask.shape != s.shape:
            key = (mask.shape, s.shape)
            if key in _MASK_STEPS:
                found = _MASK_STEPS[key]
            else:
                found = _mask_steps(mask.shape, s.shape)
                if len(_MASK_STEPS) >= 256:
                    _MASK_STEPS.clear()
                _MASK_STEPS[key] = found
            if found is None:
                return None
            steps = found
    t = s.dtype.type
    mode = 0 if scale is None else (2 if scale[0] == "Div" else 1)
    c = t(1 if scale is None else scale[1])
    fns = accel.jit()
    fns.attention_scores4(s, s if mask is None else mask, steps, mask is not None, c, mode)
    np.exp(s, out=s)
    fns.attention_normalize(s.reshape(-1, s.shape[-1]), guard)
    return s


# ------------------------------------------------------------------------------------------------ the kernels


def _prepare_layer_norm_rows(
    constants: Sequence[Any],
    *,
    epsilon: float = 1e-5,
    kernel: Callable[..., Any] | None = None,
    stats: bool = True,
) -> LayerNormRows:
    scale = constants[1] if len(constants) > 1 else None
    bias = constants[2] if len(constants) > 2 else None
    if not isinstance(scale, np.ndarray) or not row_vector(scale):
        raise EvaluationError("LayerNormRows: Scale must be a constant 1-D float32/float64 vector")
    if bias is not None and not row_vector(bias, scale.dtype):
        raise EvaluationError("LayerNormRows: B must be a constant 1-D vector of Scale's type")
    return LayerNormRows(kernel or default_kernel("LayerNormalization"), scale, bias, float(epsilon), stats)


@kernel("LayerNormRows", 1, domain=FUSED_DOMAIN, prepare=_prepare_layer_norm_rows, prepare_constants=True)
def fused_layer_norm_rows(
    X: Any,
    Scale: Any,
    B: Any = None,
    *,
    kernel: Callable[..., Any] | None = None,
    stats: bool = True,
    **attributes: Any,
) -> Any:
    """LayerNormalization-17 (``kernel``, with its ``attributes``) over the last axis with constant ``Scale`` and
    ``B``: the compiled rows for the inputs the kernel would send there; ``Y`` alone when ``stats`` is false."""
    eps = float(attributes.get("epsilon", 1e-5))
    step = _prepare_layer_norm_rows((X, Scale, B), epsilon=eps, kernel=kernel, stats=stats)
    return step(X, Scale, B, **attributes)


class _RmsNormLast:
    """RMSNormalization-23 over the last axis with a constant scale of its input's type and ``stash_type`` that
    type (a node the plan's ``fast_layer_norms`` routes here): the compiled call the kernel makes, made directly for
    an input the kernel would send there (:func:`rows_take`); the kernel for anything else."""

    __slots__ = ("_n", "d", "dtype", "eps", "kernel", "scale")

    def __init__(self, kernel: Callable[..., Any], scale: np.ndarray, epsilon: float) -> None:
        self.kernel = kernel
        self.scale = scale
        self.dtype = scale.dtype
        self.d = int(scale.shape[0])
        # The compiled loop's row length and epsilon in the element type, made once (rms_norm_compiled makes them
        # per call: a decoder step's (1, 1, 128) row took 1.95 us that way, 1.4 us with them made here).
        t = self.dtype.type
        self._n, self.eps = t(self.d), t(epsilon)

    def __call__(self, X: Any, scale: Any, **kw: Any) -> Any:
        if rows_take(X, self.dtype, self.d):
            return rms_norm_last_axis(X, self.scale, self._n, self.eps)
        return self.kernel(X, scale, **kw)


def _prepare_rms_norm_rows(
    constants: Sequence[Any], *, epsilon: float = 1e-5, kernel: Callable[..., Any] | None = None
) -> _RmsNormLast:
    scale = constants[1] if len(constants) > 1 else None
    if not isinstance(scale, np.ndarray) or not row_vector(scale) or not scale.size:
        raise EvaluationError("RmsNormRows: scale must be a constant, not empty 1-D float32/float64 vector")
    return _RmsNormLast(kernel or default_kernel("RMSNormalization"), scale, float(epsilon))


@kernel("RmsNormRows", 1, domain=FUSED_DOMAIN, prepare=_prepare_rms_norm_rows, prepare_constants=True)
def fused_rms_norm_rows(X: Any, scale: Any, *, kernel: Callable[..., Any] | None = None, **attributes: Any) -> Any:
    """RMSNormalization-23 (``kernel``, with its ``attributes``: ``axis`` -1 and ``stash_type`` the scale's type)
    over the last axis with a constant ``scale``: the compiled rows for the inputs the kernel would send there."""
    eps = float(attributes.get("epsilon", 1e-5))
    return _prepare_rms_norm_rows((X, scale), epsilon=eps, kernel=kernel)(X, scale, **attributes)
