"""Elementwise graphs as one step (issues 27 and 42, Clause 8.2): the matcher of the fused ElementwiseGraph kernel
(``onnxcore.kernels.fused.elementwise``).

A group is a maximal tree (or chain) of elementwise nodes whose intermediate values are read by nodes of the group
alone and are not graph outputs: unary operators, binary ones with broadcasting, ``Where``, ``Clip``, ``Cast``, the
comparisons and logical operators, the activations, and a reduction as its last node (``ReduceMean`` of a chain,
...). A value may be read by several nodes of the group (``x * Sigmoid(x)`` of a computed ``x``). The group runs as
one step at its last node's place: each node computes what its kernel computes, in place where its kernel applies a
numpy ufunc to float operands of one type (the step's docstring says when), so the results are the graph's bit for
bit. Nodes bound to anything but the built-in kernel of their version (a session's custom kernel, a kernel with a
context or a preparation, an earlier rewrite's step other than an ``AffineChain``) are left as they are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.kernels import registry
from onnxcore.kernels.fused.elementwise import AFFINE, Instruction
from onnxcore.runtime.optimize._common import fused_node
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["fuse_elementwise_chains"]

# The ufunc each kernel applies to float arrays of one element type (kernels/elementwise*.py): Add-7/13/14 and
# its siblings call ``uf(A, B)``; the unary kernels ``uf(X)``; Relu ``np.maximum(X, 0)``. Sum of two inputs (8, 13)
# is ``np.add`` of them too (in the first input's type, which the in-place form keeps). Their kernels return a new
# array.
_BINARY: dict[str, np.ufunc] = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": np.true_divide,
    "Sum": np.add,
    # Max-8 and Min-8 (and later) of two inputs of one float type: np.maximum / np.minimum of them (IEEE 754-2019
    # maximum and minimum: NaN propagates), kernels/elementwise_binary.py's _variadic.
    "Max": np.maximum,
    "Min": np.minimum,
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
# Elementwise operators run by their kernels inside a group (no in-place form): their output has the broadcast
# shape of their inputs. Per operator, the input counts the group takes and the first version without legacy
# attributes (consumed_inputs, the old broadcast and axis).
_CALLED: dict[str, tuple[tuple[int, ...], int]] = {
    **dict.fromkeys(
        ("Sigmoid", "HardSigmoid", "LeakyRelu", "Elu", "Selu", "Cast", "Softplus", "Softsign", "Sign", "IsNaN"),
        ((1,), 6),
    ),
    **dict.fromkeys(
        ("Erf", "Sin", "Cos", "Round", "Gelu", "HardSwish", "Mish", "IsInf", "Not", "Celu", "ThresholdedRelu"),
        ((1,), 1),
    ),
    "Clip": ((1, 2, 3), 6),
    **dict.fromkeys(
        ("Pow", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Mod", "PRelu"),
        ((2,), 7),
    ),
    "Where": ((3,), 9),
}
# Reductions end a group (their output is not elementwise in their input): run by their kernels.
_REDUCTIONS = frozenset(("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL2"))
# no legacy broadcast or consumed_inputs (Max and Min broadcast from 8)
_MIN_SINCE = {**dict.fromkeys(_BINARY, 7), **dict.fromkeys(_UNARY, 6), "Max": 8, "Min": 8}


def _kind(bn: PlanNode) -> tuple[np.ufunc | str | None, bool] | None:
    """Whether ``bn`` may be in a group: (the ufunc its kernel applies, :data:`AFFINE` for an AffineChain step, or
    None for a kernel call; whether its kernel returns a new array), or None when it may not."""
    if len(bn.outputs) != 1 or not bn.outputs[0] or bn.outer or not bn.inputs or not all(bn.inputs):
        return None
    if bn.step_kernel == "AffineChain":
        return (AFFINE, True) if len(bn.inputs) == 1 else None
    node = bn.node
    op = node.op_type
    if node.domain not in ("", "ai.onnx") or bn.fused or bn.step_kernel or bn.call is None:
        return None
    uf = _BINARY.get(op) or _UNARY.get(op)
    if uf is not None:
        if bn.since < _MIN_SINCE[op] or bn.kw or len(bn.inputs) != (2 if op in _BINARY else 1):
            return None
        kind: tuple[np.ufunc | str | None, bool] = (uf, True)
    elif op in _CALLED:
        counts, since = _CALLED[op]
        if bn.since < since or len(bn.inputs) not in counts:
            return None
        kind = (None, False)
    elif op in _REDUCTIONS:
        kind = (None, False)
    else:
        return None
    kdef = registry.lookup(node.domain, op, bn.since)
    if kdef is None or bn.call is not kdef.fn:
        return None  # a session's custom kernel, a kernel with a context or a preparation, or a rewrite's step
    return kind


def _groups(graph: PlanGraph, kinds: list[tuple[np.ufunc | str | None, bool] | None]) -> dict[int, list[int]]:
    """The groups of at least two nodes, by the index of their last node (module docstring). Walked backwards: a
    node joins the group of its readers when they are all in one group and read every use of its value."""
    nodes = graph.nodes
    uses, readers = graph.uses, graph.readers
    group = [-1] * len(nodes)
    for k in range(len(nodes) - 1, -1, -1):
        if kinds[k] is None:
            continue
        group[k] = k
        if nodes[k].node.op_type in _REDUCTIONS and nodes[k].step_kernel is None:
            continue  # a reduction ends its group: it joins no group after it
        out = nodes[k].outputs[0]
        rs = readers.get(out, [])
        if not rs or uses.get(out, 0) != len(rs):
            continue  # a graph output, read from a subgraph, or read by nobody
        gs = {group[r] for r in rs}
        if len(gs) == 1 and -1 not in gs:
            group[k] = gs.pop()
    members: dict[int, list[int]] = {}
    for k, g in enumerate(group):
        if g >= 0:
            members.setdefault(g, []).append(k)
    # A group none of whose nodes applies a ufunc (or an AffineChain) would call every node's kernel as the plan
    # does, with nothing written in place: the step would only add its own dispatch (a Pow then a ReduceSum of a
    # classifier's row: 7.1 against 5.8 us for the two steps).
    applies = [kind is not None and kind[0] is not None for kind in kinds]
    return {g: ks for g, ks in members.items() if len(ks) >= 2 and any(applies[k] for k in ks)}


def fuse_elementwise_chains(graph: PlanGraph) -> list[PlanNode]:
    """Fuse each group of elementwise nodes (module docstring) into one step of the fused ElementwiseGraph kernel,
    placed where its last node was."""
    nodes = list(graph.nodes)
    kinds = [_kind(bn) for bn in nodes]
    if sum(k is not None for k in kinds) < 2:
        return nodes
    groups = _groups(graph, kinds)
    if not groups:
        return nodes
    replaced: dict[int, PlanNode] = {}
    taken: set[int] = set()
    for last, ks in groups.items():
        made = {nodes[k].outputs[0]: j for j, k in enumerate(ks)}
        args: list[str] = []
        program: list[Instruction] = []
        for k in ks:
            bn = nodes[k]
            sources = []
            for n in bn.inputs:
                if n in made:
                    sources.append(-made[n] - 1)
                else:
                    if n not in args:
                        args.append(n)
                    sources.append(args.index(n))
            kind = kinds[k]
            assert kind is not None and bn.call is not None
            program.append((bn.call, kind[0], tuple(sources), dict(bn.kw), kind[1]))
        first = nodes[ks[0]]
        absorbed = [nodes[k] for k in ks[1:]]
        attrs: dict[str, Any] = {"program": program}
        # (with the constants among the arguments: a replay reads them with the rank of the values they meet)
        replaced[last] = fused_node(first, "ElementwiseGraph", args, list(nodes[last].outputs), graph.const,
                                    absorbed=absorbed, **attrs)  # fmt: skip
        taken.update(ks)
    return [replaced.get(j, bn) for j, bn in enumerate(nodes) if j in replaced or j not in taken]
