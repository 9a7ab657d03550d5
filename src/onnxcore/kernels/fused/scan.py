"""A ``Scan`` whose body maps each scanned row on its own, evaluated as one batched pass (Clause 8.2; the matcher is
``onnxcore.runtime.optimize.scan``).

Converters compute distances with a ``Scan`` of one iteration per reference row (skl2onnx's nearest neighbours:
2,000 iterations of a ``Sub`` and a ``ReduceSumSquare``): per iteration a plan run and two kernel calls on a few
dozen values. When no state changes between iterations, iteration ``t`` depends on row ``t`` of each scan input
alone, so the iterations can run side by side: every value of the body that depends on a scanned row is held for
a block of iterations at once, the scan axis in front (a *batched* value), and every other value (the states, the
body's constants, what it reads from the enclosing scope) once (an *invariant* value).

The values are the per-iteration evaluation's, bit for bit:

- an elementwise operator is evaluated per element, by its own kernel: an operand of lower rank than the others is
  given unit axes after the batch axis, so that numpy's broadcasting aligns it as it aligns the one row; the
  operators admitted (``ELEMENTWISE``) are exactly rounded (IEEE 754 arithmetic, comparisons, logic, casts), so no
  implementation path of a kernel can give another value for a larger array;
- a sum-type reduction (``REDUCTIONS``) of float32/float64 rows is evaluated as its kernel evaluates one row below
  ``BLAS_SUM_MIN`` elements (numpy's ``add.reduce``, the kernel's path there), over the same axes one further on, of
  C-contiguous data: numpy's inner loop then adds the same elements of each row in the same order (pairwise over a
  contiguous run). A row of ``BLAS_SUM_MIN`` elements or more (``SQUARE_SUM_MIN`` for a sum of squares: where the
  kernel sums by BLAS or einsum, whose order depends on the whole array) is reduced row by row by the kernel's own
  reduction. Data that is not C-contiguous, another type, or an axis the kernel would refuse: the node runs as
  written.

Whatever the batched pass cannot take at run time (a value that is not an array, a length past
``Limits.max_loop_iterations``, no iteration at all, the cases above, a kernel's refusal) runs the ``Scan`` kernel
as written, which then gives the values and the errors the node gives. The iterations are evaluated in blocks, so
that no batched value holds more than about ``BLOCK_ELEMENTS`` elements (the first block is one iteration, which
measures them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from onnxcore.errors import OnnxCoreError
from onnxcore.kernels._util import BLAS_SUM_MIN, SQUARE_SUM_MIN, normalize_axes
from onnxcore.kernels.fused import FUSED_DOMAIN
from onnxcore.kernels.reduction import reduce_values
from onnxcore.kernels.registry import kernel
from onnxcore.limits import active_limits

__all__ = ["BLOCK_ELEMENTS", "ELEMENTWISE", "REDUCTIONS", "BatchedScan", "BodyOp"]

ELEMENTWISE: frozenset[str] = frozenset(
    {
        # Exactly rounded arithmetic, and what does not round at all.
        "Add", "Sub", "Mul", "Div", "Neg", "Abs", "Sqrt", "Reciprocal", "Max", "Min", "Relu", "Sign",
        "Floor", "Ceil", "Identity", "Cast", "Where", "Not", "And", "Or", "Xor",
        "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "IsNaN", "IsInf",
    }
)  # fmt: skip
"""The elementwise operators (multidirectional broadcasting) a batched body may hold."""

REDUCTIONS: dict[str, str] = {
    "ReduceSum": "sum",
    "ReduceSumSquare": "sumsquare",
    "ReduceL1": "l1",
    "ReduceL2": "l2",
    "ReduceMean": "mean",
}
"""The reductions a batched body may hold, by their kind."""

BLOCK_ELEMENTS = 1 << 17
"""About how many elements the largest batched value of one block of iterations holds: a block's values stay in the
caches from one node to the next (skl2onnx's nearest neighbours at 16 rows: 1.7-1.8 ms at 2**16-2**18 elements,
2.9-3.0 ms at 2**20-2**22, one thread, best of 7)."""

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class _Unbatched(Exception):
    """The batched pass does not take these values: the node runs as written."""


@dataclass(frozen=True)
class BodyOp:
    """One node of a batched body.

    Attributes:
        op_type: The operator (one of :data:`ELEMENTWISE` or :data:`REDUCTIONS`).
        inputs: Names it reads (``""``: unsupplied).
        output: The name it makes.
        call: Its kernel (elementwise operators), called with its attributes ``kw``.
        kw: Its attributes.
        axes: A reduction's axes (from its attribute or its constant input; None: none given).
    """

    op_type: str
    inputs: tuple[str, ...]
    output: str
    call: Callable[..., Any]
    kw: Mapping[str, Any]
    axes: tuple[int, ...] | None = None


def _aligned(v: np.ndarray, batched: bool, rank: int) -> np.ndarray:
    """A batched ``v`` with unit axes after its batch axis up to ``rank`` axes per iteration (an invariant ``v`` is
    aligned by broadcasting itself)."""
    if not batched or v.ndim - 1 >= rank:
        return v
    return v.reshape((v.shape[0],) + (1,) * (rank - v.ndim + 1) + v.shape[1:])


class BatchedScan:
    """The prepared step (module docstring): the body's nodes over blocks of iterations.

    Args:
        n_state: The number of states (each left unchanged by the body).
        body_inputs: The body's input names (states, then one per scan input).
        body_outputs: The body's output names after the states (one per scan output).
        outer: Names the body reads from the enclosing scope, in the order the plan passes them after the inputs.
        body_constants: The body's constants.
        ops: The body's nodes, in graph order.
        fallback: The ``Scan`` kernel as written, called with its attributes ``fallback_kw``.
    """

    def __init__(
        self,
        n_state: int,
        body_inputs: Sequence[str],
        body_outputs: Sequence[str],
        outer: Sequence[str],
        body_constants: Mapping[str, Any],
        ops: Sequence[BodyOp],
        fallback: Callable[..., Any],
        fallback_kw: Mapping[str, Any],
    ) -> None:
        self.n_state = n_state
        self.inputs = tuple(body_inputs)
        self.outputs = tuple(body_outputs)
        self.outer = tuple(outer)
        self.constants = dict(body_constants)
        self.ops = tuple(ops)
        self.fallback = fallback
        self.fallback_kw = dict(fallback_kw)

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        try:
            return self._batched(args)
        except (_Unbatched, OnnxCoreError, ValueError):
            # Also a kernel's refusal (shapes that do not broadcast): the node as written raises it, naming the
            # iteration's values, or gives what it gives.
            return self._as_written(args)

    def _as_written(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(self.fallback(*args, **self.fallback_kw))

    def _batched(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        n_in = len(self.inputs)
        if len(args) != n_in + len(self.outer):
            raise _Unbatched
        states, xs = args[: self.n_state], args[self.n_state : n_in]
        for v in args:
            if type(v) is not np.ndarray or not v.flags.c_contiguous:
                raise _Unbatched
        if any(x.ndim == 0 for x in xs) or len({x.shape[0] for x in xs}) != 1:
            raise _Unbatched  # the kernel as written names the fault
        seq = xs[0].shape[0]
        limit = active_limits().max_loop_iterations
        if seq == 0 or (limit is not None and seq > int(limit)):
            raise _Unbatched  # no iteration (the outputs' declared shapes), or the kernel's refusal
        env: dict[str, tuple[Any, bool]] = {n: (v, False) for n, v in self.constants.items()}
        env.update((n, (v, False)) for n, v in zip(self.outer, args[n_in:]))
        env.update((n, (v, False)) for n, v in zip(self.inputs, states))
        stacked: list[np.ndarray | None] = [None] * len(self.outputs)
        start, block = 0, 1
        while start < seq:
            stop = min(seq, start + block)
            vals = dict(env)
            vals.update((n, (x[start:stop], True)) for n, x in zip(self.inputs[self.n_state :], xs))
            peak = self._run(vals, stop - start, env)
            for j, name in enumerate(self.outputs):
                v, batched = vals[name]
                if type(v) is not np.ndarray:
                    raise _Unbatched
                out = stacked[j]
                if out is None:
                    shape = v.shape[1:] if batched else v.shape
                    out = stacked[j] = np.empty((seq, *shape), dtype=v.dtype)
                out[start:stop] = v
            start = stop
            block = max(1, BLOCK_ELEMENTS // max(peak, 1))
        return (*states, *stacked)

    def _run(self, vals: dict[str, tuple[Any, bool]], n: int, env: dict[str, tuple[Any, bool]]) -> int:
        """Evaluate the body's nodes for ``n`` iterations into ``vals`` (what they compute once for every
        iteration into ``env`` too, for the next blocks); the largest batched value's elements per iteration."""
        peak = 1
        for op in self.ops:
            if op.output in env:
                continue  # computed by an earlier block
            ins = [vals[name] if name else (None, False) for name in op.inputs]
            if not any(b for _v, b in ins):
                # Computed once for every iteration: by the node's kernel as the body would.
                if op.op_type in REDUCTIONS:
                    raise _Unbatched  # not worth a second path (a body's constants are folded already)
                y = op.call(*[v for v, _b in ins], **op.kw)
                vals[op.output] = env[op.output] = (y[0] if type(y) is tuple else y, False)
                continue
            for v, _b in ins:
                if v is not None and type(v) is not np.ndarray:
                    raise _Unbatched
            if op.op_type in REDUCTIONS:
                x = ins[0][0]
                if x is None:
                    raise _Unbatched
                y = self._reduce(op, x)
            else:
                rank = max(v.ndim - 1 if b else v.ndim for v, b in ins if v is not None)
                y = op.call(*[v if v is None else _aligned(v, b, rank) for v, b in ins], **op.kw)
                if type(y) is tuple:
                    y = y[0]
                if type(y) is not np.ndarray or y.ndim == 0 or y.shape[0] != n:
                    raise _Unbatched
            vals[op.output] = (y, True)
            peak = max(peak, y.size // n)
        return peak

    def _reduce(self, op: BodyOp, x: np.ndarray) -> np.ndarray:
        """A sum-type reduction of each row of batched ``x``, as the kernel reduces one row (module docstring)."""
        n, rank = x.shape[0], x.ndim - 1
        row = x.size // n if n else 0
        if x.dtype not in _FLOATS or not x.flags.c_contiguous or rank == 0 or row == 0:
            raise _Unbatched
        keepdims = bool(op.kw.get("keepdims", 1))
        try:
            if op.axes:
                axes: tuple[int, ...] | None = normalize_axes(op.axes, rank)
            elif op.kw.get("noop_with_empty_axes", 0):  # the axes-input forms (13/18 on) only
                axes = ()
            else:
                axes = None
        except OnnxCoreError as e:
            raise _Unbatched from e  # the kernel as written refuses it
        kind = REDUCTIONS[op.op_type]
        if row >= (SQUARE_SUM_MIN if kind in ("sumsquare", "l2") else BLAS_SUM_MIN):
            # The kernel sums a row this large by BLAS (or einsum), whose order depends on the whole array: each row
            # by the kernel's own reduction (a small model's nearest neighbours: one BLAS call a row, not its body).
            return np.stack([reduce_values(kind, r, axes, keepdims) for r in x])
        per_row = tuple(range(rank)) if axes is None else axes
        shifted = tuple(a + 1 for a in per_row)
        src = np.square(x) if kind in ("sumsquare", "l2") else np.abs(x) if kind == "l1" else x
        add: Any = np.add  # numpy's stubs reject a non-literal keepdims on ufunc.reduce
        y = np.asarray(add.reduce(src, axis=shifted, keepdims=keepdims))
        if kind == "l2":
            y = np.sqrt(y)
        elif kind == "mean":
            count = 1
            for a in per_row:
                count *= x.shape[a + 1]
            y = np.true_divide(y, count) if count else np.full(y.shape, np.nan, dtype=x.dtype)
        return y if y.dtype == x.dtype else y.astype(x.dtype)


def _prepare_batched_scan(constants: tuple[Any, ...], **attributes: Any) -> BatchedScan:
    del constants  # the scan inputs are read per run, constant or not
    return BatchedScan(**attributes)


@kernel("BatchedScan", 1, domain=FUSED_DOMAIN, prepare=_prepare_batched_scan, prepare_constants=True)
def fused_batched_scan(*args: Any, **attributes: Any) -> tuple[Any, ...]:
    """A ``Scan`` whose body leaves its states unchanged and maps each scanned row by elementwise operators and
    sum-type reductions, over all its iterations at once (module docstring); ``attributes`` are
    :class:`BatchedScan`'s."""
    return BatchedScan(**attributes)(*args)
