"""Constant folding (Clause 8.2): nodes whose inputs are all constants are evaluated once, at plan time.

What may fold, how a node is evaluated and the bytes the folded values may hold are the one folding rule of
:mod:`onnxcore.kernels.folding`, which inference's value propagation follows too; the kernel is the one the
compiler bound (:func:`onnxcore.kernels.select.select`, custom domains and the session's ``custom_ops`` included).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.kernels.folding import FOLD_BUDGET_BYTES, evaluate, may_fold
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["FOLD_BUDGET_BYTES", "fold_constants", "fold_nodes"]


def fold_constants(graph: PlanGraph) -> list[PlanNode]:
    """The plan's constant folding (:func:`fold_nodes`, releasing what no unfolded node or output reads): the
    folded values join the graph's constants and the folded nodes leave it."""
    folded, values = fold_nodes(graph, release=True)
    for name, value in values.items():
        graph.add_constant(name, value)
    return [bn for k, bn in enumerate(graph.nodes) if k not in folded]


def fold_nodes(graph: PlanGraph, *, release: bool = False) -> tuple[set[int], dict[str, Any]]:
    """Evaluate the nodes of ``graph`` whose inputs are all constants; return their indices and outputs by name.

    Constants are ``graph.const`` (initializers that are not graph inputs: an input's initializer is only a
    default, 7.2) and outputs of nodes folded before. What :func:`onnxcore.kernels.folding.may_fold` refuses, and
    nodes that fail, are left to run time (a failure is then reported with the node, as usual). Folded values held
    at any one time total at most ``graph.budget`` bytes. The graph is not changed.

    With ``release`` a folded value is dropped as soon as every node reading it is folded too and it is not one of
    ``graph.outputs`` (the graph's use counts say who reads it): a chain of folded steps (a weight built by
    ConstantOfShape, then scaled) holds only what is still read, not every step's result. The caller is expected
    to have left out the nodes no output needs (Clause 8) so that nothing dead is evaluated here.
    """
    const = dict(graph.const)
    budget = graph.budget
    folded: set[int] = set()
    values_out: dict[str, Any] = {}
    # The reads still to come of each name (the graph's use counts, outputs counting twice), counted down as
    # readers fold; a folded value with none left is released.
    pending = dict(graph.uses) if release else None
    for k, bn in enumerate(graph.nodes):
        node = bn.node
        if bn.call is None or not may_fold(node.op_type, node.attribute, bn.outer):
            continue
        if any(n and n not in const for n in bn.inputs):
            continue
        values = evaluate(bn.call, [const[n] if n else None for n in bn.inputs], bn.kw)
        if values is None:
            continue
        named = [(j, o) for j, o in enumerate(bn.outputs) if o]
        if any(j >= len(values) for j, _ in named):
            continue
        size = sum(values[j].nbytes for j, _ in named if isinstance(values[j], np.ndarray))
        if size > budget:
            continue
        budget -= size
        for j, o in named:
            v = values[j]
            if isinstance(v, np.ndarray) and not v.flags.c_contiguous and 0 not in v.strides:
                # A permuted or sliced view (a Transpose of a constant: T5's position bias) is made contiguous once
                # here rather than read through its strides by every run's consumers (a Where over one: 12 -> 4
                # us). A broadcast view (a zero stride) stays a view: a copy would hold every repeated value.
                v = np.ascontiguousarray(v)
            if isinstance(v, np.ndarray) and v.flags.writeable:
                v.flags.writeable = False  # shared by every run: the session copies it for the caller
            const[o] = v
            values_out[o] = v
        folded.add(k)
        if pending is not None:
            for n in bn.inputs:
                if n:
                    pending[n] -= 1
            for n in {*bn.inputs, *(o for _, o in named)}:
                if n and pending.get(n, 0) <= 0 and n in values_out:
                    budget += _nbytes(values_out.pop(n))
                    del const[n]
    return folded, values_out


def _nbytes(v: Any) -> int:
    return v.nbytes if isinstance(v, np.ndarray) else 0
