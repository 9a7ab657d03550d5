"""Constant folding (Clause 8.2): nodes whose inputs are all constants are evaluated once, at plan time."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.kernels.registry import NO_FOLD
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["FOLD_BUDGET_BYTES", "fold_constants", "fold_nodes"]


# Folded values are held for the session's life: once a graph's folded values total this many bytes, further
# constant nodes stay run-time computations. Generous on purpose: a model that builds its weights from
# ConstantOfShape (the onnx light zoo does) should not rebuild hundreds of megabytes on every run; onnxruntime
# folds them all. There is no bound per constant below this: only nodes an output needs reach folding (the plan
# leaves the others out first, Clause 8), and a value an output needs costs as much at run time as folded; a node
# whose output exceeds the session's limits fails here and is left to run time, where the refusal names it.
FOLD_BUDGET_BYTES = 1 << 32


def fold_constants(graph: PlanGraph) -> list[PlanNode]:
    """The plan's constant folding (:func:`fold_nodes` of the graph's nodes over its constants, at most
    ``graph.budget`` bytes, keeping what ``graph.outputs`` need): the folded values join the graph's constants and
    the folded nodes leave it."""
    folded, values = fold_nodes(graph.nodes, graph.const, (), budget=graph.budget, keep=graph.outputs)
    for name, value in values.items():
        graph.add_constant(name, value)
    return [bn for k, bn in enumerate(graph.nodes) if k not in folded]


def fold_nodes(
    nodes: Sequence[PlanNode],
    inits: Mapping[str, Any],
    inputs: Collection[str],
    *,
    budget: int = FOLD_BUDGET_BYTES,
    keep: Collection[str] | None = None,
) -> tuple[set[int], dict[str, Any]]:
    """Evaluate the nodes whose inputs are all constants; return their indices and their outputs by name.

    Constants are initializers that are not graph inputs (an input's initializer is only a default, 7.2)
    and outputs of nodes folded before. Random operators, nodes with subgraphs or enclosing-scope values, and
    nodes that fail are left to run time (a failure is then reported with the node, as usual). Folded values
    held at any one time total at most ``budget`` bytes.

    With ``keep`` (the names needed after these nodes: the plan's outputs), a folded value is dropped as soon
    as every node reading it is folded too and it is not in ``keep``: a chain of folded steps (a weight built
    by ConstantOfShape, then scaled) holds only what is still read, not every step's result. The caller is
    expected to have left out the nodes no output needs (Clause 8) so that nothing dead is evaluated here.
    """
    const = {n: v for n, v in inits.items() if n not in inputs}
    folded: set[int] = set()
    values_out: dict[str, Any] = {}
    # How many nodes not yet folded read each name; a folded value none reads (and not kept) is dropped.
    readers: Counter[str] | None = None
    if keep is not None:
        readers = Counter(n for bn in nodes for n in {*bn.inputs, *bn.outer} if n)
        readers.update(set(keep))
    for k, bn in enumerate(nodes):
        node = bn.node
        if bn.call is None or bn.outer or node.op_type in NO_FOLD:
            continue
        if any(a.g is not None or a.graphs for a in node.attribute):
            continue
        if any(n and n not in const for n in bn.inputs):
            continue
        try:
            with np.errstate(all="ignore"):
                res = bn.call(*[const[n] if n else None for n in bn.inputs], **bn.kw)
        except Exception:
            continue
        values = res if type(res) is tuple else (res,)
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
        if readers is not None:
            for n in {*bn.inputs, *(o for _, o in named)}:
                if not n:
                    continue
                if n in bn.inputs:
                    readers[n] -= 1
                if readers[n] <= 0 and n in values_out:
                    budget += _nbytes(values_out.pop(n))
                    del const[n]
    return folded, values_out


def _nbytes(v: Any) -> int:
    return v.nbytes if isinstance(v, np.ndarray) else 0
