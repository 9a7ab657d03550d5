"""Elementwise chains as one step writing into one buffer (issue 27, Clause 8.2): the matcher of the fused
ElementwiseChain kernel (``onnxcore.kernels.fused.affine``).

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

from itertools import pairwise

import numpy as np

from onnxcore.kernels import registry
from onnxcore.kernels.fused.affine import RUNNING
from onnxcore.runtime.optimize._common import fused_node
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["fuse_elementwise_chains"]

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


def _member(bn: PlanNode) -> tuple[bool, np.ufunc | None]:
    """Whether ``bn`` may be in a chain, and the ufunc its kernel applies (None for an AffineChain step)."""
    if bn.step_kernel == "AffineChain" and len(bn.inputs) == 1 and bn.inputs[0] and not bn.outer:
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


def fuse_elementwise_chains(graph: PlanGraph) -> list[PlanNode]:
    """Fuse each chain of at least two elementwise nodes (module docstring) into one step of the fused
    ElementwiseChain kernel (``onnxcore.kernels.fused.affine``), placed where its last node was."""
    nodes = list(graph.nodes)
    kinds = [_member(bn) for bn in nodes]
    ok = [m for m, _uf in kinds]
    if sum(ok) < 2:
        return nodes
    uses, reader = graph.uses, graph.last_readers
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
        last = members[-1]
        absorbed = [nodes[k] for k in members[1:]]
        replaced[last] = fused_node(head, "ElementwiseChain", args, list(nodes[last].outputs), {}, absorbed=absorbed,
                                    head=head.call, head_args=len(head.inputs), ops=ops)  # fmt: skip
        taken.update(members)
    if not replaced:
        return nodes
    return [replaced.get(j, bn) for j, bn in enumerate(nodes) if j in replaced or j not in taken]
