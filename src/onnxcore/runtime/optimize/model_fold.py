"""Constant folding for a model file (``onnxcore.optimize``): the plan's folding, within a budget of file bytes.

The values are the plan's (:func:`onnxcore.runtime.optimize.fold.fold_nodes`: each node evaluated once by its own
kernel, so a folded integer overflows exactly as the node would at run time, Clause 8.2). What differs is what is
worth writing down: a folded value becomes an initializer, and a file must not grow past ``fold_growth`` times its
original size. So:

* a node of an operator that makes a large tensor out of a small description (``ConstantOfShape``, ``Tile``,
  ``Expand``, ``Range``, ``Resize``, ``Upsample``) stays a node when its output exceeds :data:`SMALL_OUTPUT` bytes and
  its inputs' bytes (the 500 MB model onnx-simplifier blew up to 2.5 GB);
* the folding of the whole graph is accepted only if the bytes it adds (values written, less the initializers and
  node records it makes unnecessary) fit the model's remaining budget (:attr:`ModelGraph.growth`); otherwise the
  producer of the largest value written is kept as a node and the folding is tried again;
* only tensors are written (a folded sequence or map stays a node).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.io import encode
from onnxcore.runtime.optimize.fold import fold_nodes
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.model_graph import ModelGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["EXPANDING", "SMALL_OUTPUT", "fold_within_budget"]

EXPANDING = frozenset(("ConstantOfShape", "Tile", "Expand", "Range", "Resize", "Upsample"))
"""Operators whose output may be far larger than their inputs."""

SMALL_OUTPUT = 4096
"""Bytes an expanding operator's output may take and be folded whatever its inputs' size (shape arithmetic)."""

# Tries before folding is given up for the graph (each try keeps one more node as a node).
_MAX_TRIES = 64
# Protobuf bytes an initializer costs besides its name and contents (field keys, lengths, dims, type).
_INIT_OVERHEAD = 16


def _nbytes(v: Any) -> int:
    return int(v.nbytes) if isinstance(v, np.ndarray) else 0


def fold_within_budget(graph: PlanGraph) -> list[PlanNode]:
    """Fold the nodes whose inputs are all constants, within the file budget (module docstring); the folded values
    join the graph's constants, the folded nodes leave it."""
    nodes = graph.nodes
    deny: set[int] = set()
    for _ in range(_MAX_TRIES):
        cand = [k for k in range(len(nodes)) if k not in deny]
        folded_c, values = fold_nodes(PlanGraph([nodes[k] for k in cand], graph.const, (), budget=graph.budget))
        folded = {cand[i] for i in folded_c}
        if not folded:
            return nodes
        bad = {k for k in folded if not _writable(nodes[k], values, graph.const)}
        if bad:
            deny |= bad
            continue
        read: set[str] = set(graph.outputs)
        for k, bn in enumerate(nodes):
            if k not in folded:
                read.update(n for n in (*bn.inputs, *bn.outer) if n)
        written = {n: v for n, v in values.items() if n in read}
        was_read = {n for k in folded for n in nodes[k].inputs if n}
        freed = sum(_nbytes(graph.const[n]) for n in was_read if n in graph.const and n not in read)
        records = sum(len(encode(nodes[k].node)) for k in folded)
        growth = sum(_nbytes(v) + len(n) + _INIT_OVERHEAD for n, v in written.items()) - freed - records
        if not isinstance(graph, ModelGraph) or growth <= graph.growth:
            break
        if not written:
            return nodes
        largest = max(written, key=lambda n: _nbytes(written[n]))
        deny.add(next(k for k in folded if largest in nodes[k].outputs))
    else:
        return nodes
    if isinstance(graph, ModelGraph):
        graph.spend(growth)
    for name, value in written.items():
        graph.add_constant(name, value)
    return [bn for k, bn in enumerate(nodes) if k not in folded]


def _writable(bn: PlanNode, values: dict[str, Any], const: dict[str, Any]) -> bool:
    """Whether the folded outputs of ``bn`` may be written as initializers: tensors, and for an expanding operator
    no larger than :data:`SMALL_OUTPUT` or its inputs."""
    outs = [values.get(o) for o in bn.outputs if o]
    if any(not isinstance(v, np.ndarray) for v in outs):
        return False
    if bn.node.op_type in EXPANDING:
        size = sum(_nbytes(v) for v in outs)
        ins = sum(_nbytes(values[n] if n in values else const.get(n)) for n in bn.inputs if n)
        return size <= max(SMALL_OUTPUT, ins)
    return True
