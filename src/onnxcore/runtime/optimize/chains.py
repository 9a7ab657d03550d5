"""Elementwise chains as one step writing into one buffer (issue 27, Clause 8.2).

Consecutive elementwise nodes on one running value, each intermediate read by the next node alone (``Add ->
Relu -> Mul -> Sqrt``, a residual ``Add`` then a scale, ...), become one step: the first node runs as written
(its kernel makes a fresh array), and each later node applies the same numpy ufunc its kernel applies, writing
into that array (``out=``) instead of allocating a new one and going through the kernel's wrapper. Only
allocations are removed: every node computes the same operation on the same operands in the same order, so the
results are the same bit for bit. The in-place form is used only when it is exact: a float (float16, float32,
float64) array that the step made, and an operand of the same element type that broadcasts into the running
value's shape; anything else (an integer or bfloat16 value, a broadcast that grows the value, a non-array) runs
the node's own kernel, as written. ``run(..., intermediates=True)`` runs the graph as written (no such step).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from onnxcore.kernels import registry
from onnxcore.runtime.optimize._common import last_readers, rebound, use_counts
from onnxcore.runtime.optimize.affine import AffineChain
from onnxcore.runtime.step import PlanNode

__all__ = ["ElementwiseChain", "fuse_elementwise_chains"]

# The ufunc each kernel applies to float arrays of one element type (kernels/elementwise*.py): Add-7/13/14 and
# its siblings call ``uf(A, B)``; the unary kernels ``uf(X)``; Relu ``np.maximum(X, 0)``.
# Sum of two inputs (8, 13) is ``np.add`` of them too (in the first input's type, which the in-place form keeps).
_BINARY: dict[str, np.ufunc] = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": np.true_divide,
    "Sum": np.add,
}
_UNARY: dict[str, np.ufunc] = {
    "Abs": np.absolute,
    "Ceil": np.ceil,
    "Exp": np.exp,
    "Floor": np.floor,
    "Log": np.log,
    "Neg": np.negative,
    "Reciprocal": np.reciprocal,
    "Relu": np.maximum,
    "Sqrt": np.sqrt,
    "Tanh": np.tanh,
}
_MIN_SINCE = {**dict.fromkeys(_BINARY, 7), **dict.fromkeys(_UNARY, 6)}  # no legacy broadcast or consumed_inputs

RUNNING = -1
"""In an operation's sources: the running value (else the index of a step argument)."""


class ElementwiseChain:
    """The step of a fused chain (module docstring): ``head`` on the first arguments, then each operation.

    Args:
        head: The first node's kernel and how many step arguments it takes.
        ops: Per later node: its kernel, its ufunc, and its sources (:data:`RUNNING` or a step argument index),
            in the node's input order.
    """

    __slots__ = ("_fits", "head", "head_args", "ops")

    def __init__(
        self,
        head: Callable[..., Any],
        head_args: int,
        ops: Sequence[tuple[Callable[..., Any], np.ufunc | None, tuple[int, ...]]],
    ) -> None:
        self.head = head
        self.head_args = head_args
        self.ops = tuple(ops)
        self._fits: dict[tuple[tuple[int, ...], tuple[int, ...]], bool] = {}

    def __call__(self, *args: Any) -> Any:
        y = self.head(*args[: self.head_args])
        # In place only into an array this step made (the head's kernel returns a fresh one) of a float type.
        inplace = type(y) is np.ndarray and y.dtype.kind == "f" and y.flags.writeable
        for call, uf, sources in self.ops:
            if uf is None:  # an AffineChain step, on the running value alone
                if not (inplace and call.into(y)):  # type: ignore[attr-defined]
                    y = call(y)
                    inplace = type(y) is np.ndarray and y.dtype.kind == "f" and y.flags.writeable
                continue
            if inplace:
                if len(sources) == 1:
                    if uf is np.maximum:
                        uf(y, 0, out=y)  # positionally, numpy takes a path several times slower with a Python 0
                    else:
                        uf(y, y)
                    continue
                a, b = sources
                if a == RUNNING and b == RUNNING:
                    uf(y, y, y)
                    continue
                other = args[b if a == RUNNING else a]
                if type(other) is np.ndarray and other.dtype == y.dtype and self._fit(y.shape, other.shape):
                    if a == RUNNING:
                        uf(y, other, y)
                    else:
                        uf(other, y, y)
                    continue
            y = call(*[y if s == RUNNING else args[s] for s in sources])
            inplace = type(y) is np.ndarray and y.dtype.kind == "f" and y.flags.writeable
        return y

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


def _member(bn: PlanNode) -> tuple[bool, np.ufunc | None]:
    """Whether ``bn`` may be in a chain, and the ufunc its kernel applies (None for an :class:`AffineChain`)."""
    if type(bn.call) is AffineChain and len(bn.inputs) == 1 and bn.inputs[0] and not bn.outer:
        return len(bn.outputs) == 1 and bool(bn.outputs[0]), None
    uf = _ufunc_of(bn)
    return uf is not None, uf


def _ufunc_of(bn: PlanNode) -> np.ufunc | None:
    """The ufunc ``bn``'s kernel applies, when ``bn`` is a plain default-domain node bound to the built-in kernel."""
    node = bn.node
    op = node.op_type
    if node.domain not in ("", "ai.onnx") or bn.outer or bn.fused or bn.kw or bn.call is None:
        return None
    uf = _BINARY.get(op) or _UNARY.get(op)
    if uf is None or bn.since < _MIN_SINCE[op] or len(bn.outputs) != 1 or not bn.outputs[0]:
        return None
    if len(bn.inputs) != (2 if op in _BINARY else 1) or not all(bn.inputs):
        return None
    kdef = registry.lookup(node.domain, op, bn.since)
    if kdef is None or bn.call is not kdef.fn:
        return None  # a session's custom kernel, or a rewrite's step
    return uf


def fuse_elementwise_chains(nodes: list[PlanNode], outputs: Sequence[str]) -> list[PlanNode]:
    """Fuse each chain of at least two elementwise nodes (module docstring) into one :class:`ElementwiseChain`
    step, placed where its last node was."""
    kinds = [_member(bn) for bn in nodes]
    ok = [m for m, _uf in kinds]
    if sum(ok) < 2:
        return nodes
    uses = use_counts(nodes, outputs)
    reader = last_readers(nodes)
    taken: set[int] = set()
    replaced: dict[int, PlanNode] = {}
    for h, head in enumerate(nodes):
        if not ok[h] or h in taken:
            continue
        members = [h]
        current = head.outputs[0]
        while True:
            nxt = reader.get(current)
            if nxt is None or nxt in taken or not ok[nxt] or nxt <= members[-1]:
                break
            if uses.get(current, 0) != nodes[nxt].inputs.count(current):
                break  # another node reads the intermediate (or it is a graph output)
            members.append(nxt)
            current = nodes[nxt].outputs[0]
        if len(members) < 2:
            continue
        args = list(head.inputs)
        ops = []
        for prev_k, k in pairwise(members):
            prev = nodes[prev_k].outputs[0]
            sources = []
            for n in nodes[k].inputs:
                if n == prev:
                    sources.append(RUNNING)
                else:
                    sources.append(len(args))
                    args.append(n)
            call = nodes[k].call
            assert call is not None
            ops.append((call, kinds[k][1], tuple(sources)))
        assert head.call is not None
        step = ElementwiseChain(head.call, len(head.inputs), ops)
        last = members[-1]
        fused = rebound(head, step, {}, args, list(nodes[last].outputs), absorbed=[nodes[k] for k in members[1:]])
        fused.may_tuple = False
        replaced[last] = fused
        taken.update(members)
    if not replaced:
        return nodes
    return [replaced.get(j, bn) for j, bn in enumerate(nodes) if j in replaced or j not in taken]
