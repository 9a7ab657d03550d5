"""Elementwise graphs as one step (Clause 8.2; the matcher is ``onnxcore.runtime.optimize.chains``).

``ElementwiseGraph``: a tree or chain of elementwise nodes (unary, binary with broadcasting, ``Where``, ``Clip``,
``Cast``, ...; optionally ending in a reduction) whose intermediate values no other node reads, evaluated by one
step. Every node computes what its own kernel computes, on the same operands in the same order: where its kernel
applies one numpy ufunc to float operands of one type (``Add``, ``Mul``, ``Exp``, ...), the step applies that ufunc
writing into an operand the step made and no later node reads (``out=``) instead of allocating a new array; any
other node (another element type, a broadcast that grows the value, an operator without an in-place form) is its
kernel, called as the plan would call it. Only allocations and per-node dispatch are removed: the results are the
graph's bit for bit (no reassociation, no wider intermediates). ``run(..., intermediates=True)`` runs the graph as
written.

A program is a sequence of instructions, one per node in graph order: ``(kernel, ufunc or None or AFFINE, sources,
attributes, allocates)``. A source is the index of a step argument (``>= 0``) or ``-(j + 1)`` for the value of
instruction ``j``; ``allocates`` says the kernel returns a new array (then a later instruction may write into it).
The last instruction's value is the step's output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels.fused import FUSED_DOMAIN
from onnxcore.kernels.registry import kernel

__all__ = ["AFFINE", "ElementwiseGraph", "Instruction"]

AFFINE = "affine"
"""In an instruction's ufunc place: an ``AffineChain`` step applied to its one operand (``into`` when it can)."""

Instruction = tuple[Callable[..., Any], "np.ufunc | str | None", tuple[int, ...], dict[str, Any], bool]


class ElementwiseGraph:
    """The step of a fused elementwise graph (module docstring).

    Args:
        program: The instructions, in graph order; the last one's value is the output.
    """

    __slots__ = ("_fits", "last_use", "program")

    def __init__(self, program: Sequence[Instruction]) -> None:
        if not program:
            raise EvaluationError("ElementwiseGraph: an empty program")
        self.program = tuple(program)
        # The last instruction reading each instruction's value (-1: none): it alone may write into that value.
        last = [-1] * len(self.program)
        for j, (_call, _uf, sources, _kw, _alloc) in enumerate(self.program):
            for s in sources:
                if s < 0:
                    if -s - 1 >= j:
                        raise EvaluationError(f"ElementwiseGraph: instruction {j} reads a value not made before it")
                    last[-s - 1] = j
        self.last_use = tuple(last)
        self._fits: dict[tuple[tuple[int, ...], tuple[int, ...]], bool] = {}

    def __call__(self, *args: Any) -> Any:
        n = len(self.program)
        vals: list[Any] = [None] * n
        # Whether the value is a float array this step made and may overwrite once its last reader comes.
        own = [False] * n
        last = self.last_use
        for j, (call, uf, sources, kw, allocates) in enumerate(self.program):
            y = None
            if uf is not None:
                y = self._in_place(j, uf, sources, args, vals, own, last, call)
            if y is None:
                y = call(*[args[s] if s >= 0 else vals[-s - 1] for s in sources], **kw)
                if type(y) is tuple:
                    y = y[0]
                own[j] = allocates and type(y) is np.ndarray and y.dtype.kind == "f" and y.flags.writeable
            else:
                own[j] = True
            vals[j] = y
            for s in sources:  # a value read for the last time is dropped (its memory freed early)
                if s < 0 and last[-s - 1] == j:
                    vals[-s - 1] = None
        return vals[n - 1]

    def _in_place(
        self,
        j: int,
        uf: np.ufunc | str,
        sources: tuple[int, ...],
        args: tuple[Any, ...],
        vals: list[Any],
        own: list[bool],
        last: tuple[int, ...],
        call: Callable[..., Any],
    ) -> np.ndarray | None:
        """Instruction ``j`` written into one of its operands, when that is exact (module docstring); else None."""
        if uf is AFFINE:
            s = sources[0]
            if s < 0 and own[-s - 1] and last[-s - 1] == j:
                y = vals[-s - 1]
                if call.into(y):  # type: ignore[attr-defined]
                    return y
            return None
        assert isinstance(uf, np.ufunc)
        if len(sources) == 1:
            s = sources[0]
            if s >= 0 or not own[-s - 1] or last[-s - 1] != j:
                return None
            y = vals[-s - 1]
            if uf is np.maximum:
                uf(y, 0, out=y)  # Relu; positionally, numpy takes a path several times slower with a Python 0
            else:
                uf(y, y)
            return y
        a, b = sources
        for k, s in enumerate(sources):
            if s >= 0 or not own[-s - 1] or last[-s - 1] != j:
                continue
            y = vals[-s - 1]
            o = b if k == 0 else a
            if o == s:
                uf(y, y, y)
                return y
            other = args[o] if o >= 0 else vals[-o - 1]
            if type(other) is np.ndarray and other.dtype == y.dtype and self._fit(y.shape, other.shape):
                if k == 0:
                    uf(y, other, y)
                else:
                    uf(other, y, y)
                return y
        return None

    def _fit(self, shape: tuple[int, ...], other: tuple[int, ...]) -> bool:
        """Whether an operand of shape ``other`` broadcasts into ``shape`` without growing it."""
        if shape == other:
            return True
        key = (shape, other)
        fit = self._fits.get(key)
        if fit is None:
            try:
                fit = np.broadcast_shapes(shape, other) == shape
            except ValueError:
                fit = False  # the kernel reports it
            if len(self._fits) < 64:
                self._fits[key] = fit
        return fit


# ------------------------------------------------------------------------------------------------ the kernel


def _prepare(constants: Sequence[Any], *, program: Sequence[Instruction]) -> ElementwiseGraph:
    return ElementwiseGraph(program)


@kernel("ElementwiseGraph", 1, domain=FUSED_DOMAIN, prepare=_prepare, prepare_constants=True)
def elementwise_graph(*args: Any, program: Sequence[Instruction]) -> Any:
    """The nodes of ``program`` (their kernels, the ufuncs they apply or None, their sources: a step argument's
    index or ``-(j + 1)`` for instruction ``j``'s value, their attributes, whether their kernels allocate) on
    ``args``: the last instruction's value."""
    return _prepare(args, program=program)(*args)
