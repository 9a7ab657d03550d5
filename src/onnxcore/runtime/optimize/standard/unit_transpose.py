"""A Transpose that moves only axes of extent 1, as a Reshape (issue 39).

A decoder step's attention splits its heads with ``Reshape(q, [B, 1, H, D])`` and moves them forward with
``Transpose(perm=[0, 2, 1, 3])``: the sequence axis it moves has extent 1, so the elements keep their row-major
order and the Transpose is a Reshape to its output's shape (Clause 11: Transpose's output element at ``i`` is the
input's at ``perm``-permuted ``i``; with every axis of extent other than 1 kept in order, both enumerate the
elements alike). Written as a Reshape it merges with the Reshape (or Squeeze, Unsqueeze, Flatten) before it:
``Reshape(q, [0, H, 1, D])``, one node for two.

Preconditions, each checked:

- the Transpose is standard, its input's rank known and its ``perm`` given (or the reversal, by the rank);
- the axes whose extent is not the fixed integer 1 (a dimension variable may be 1 for some sizes only: such an
  axis counts as not 1) keep their relative order under ``perm``;
- the output's shape can be said by a constant target for every extent of the variables (as
  :func:`.reshape.reshape_target` states: fixed extents, ``0`` copying the data's extent at the same position, at
  most one ``-1``); where the Transpose's input is made by a Reshape (version 5 on), Squeeze, Unsqueeze or Flatten
  read by the Transpose alone and not a graph output, the target is said against that node's input first, and the
  pair becomes one Reshape; otherwise the Transpose is rewritten only where a Reshape alone reads it (which
  ``merge_layout_ops`` merges with it next): one Reshape for a Transpose saves no node;
- the model imports ai.onnx 5 or later (Reshape with its target as an input).
"""

from __future__ import annotations

import numpy as np

from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.standard.emit import Names, is_standard, node_name, opset, standard_node
from onnxcore.runtime.optimize.standard.reshape import extents_of, reshape_target
from onnxcore.runtime.step import PlanNode

__all__ = ["unit_transposes_as_reshape"]

_SHAPE_ONLY = ("Reshape", "Squeeze", "Unsqueeze", "Flatten")


def _perm(bn: PlanNode, r: int) -> list[int] | None:
    p = bn.kw.get("perm")
    perm = list(range(r - 1, -1, -1)) if p is None else [int(v) for v in p]
    return perm if sorted(perm) == list(range(r)) else None


def _read_by_a_reshape(graph: PlanGraph, nodes: list[PlanNode], name: str) -> bool:
    """Whether ``name`` is read once, by a standard Reshape (which ``merge_layout_ops`` may then merge with)."""
    readers = graph.readers.get(name, [])
    if len(readers) != 1 or graph.uses.get(name) != 1 or name in graph.outputs:
        return False
    r = nodes[readers[0]]
    return is_standard(r, "Reshape") and r.inputs[0] == name


def unit_transposes_as_reshape(graph: PlanGraph) -> list[PlanNode]:
    """Each Transpose that moves only axes of extent 1 as a Reshape, merged with the shape-only node before it
    (module docstring: the preconditions)."""
    nodes = list(graph.nodes)
    if graph.facts is None or (opset(graph) or 0) < 5 or not any(bn.node.op_type == "Transpose" for bn in nodes):
        return nodes
    names = Names(graph)
    uses = graph.uses
    drop: set[int] = set()
    for k, bn in enumerate(nodes):
        if not is_standard(bn, "Transpose") or len(bn.inputs) != 1 or len(bn.outputs) != 1:
            continue
        src = bn.inputs[0]
        ext = extents_of(graph, src)
        perm = None if ext is None else _perm(bn, len(ext))
        if ext is None or perm is None:
            continue
        moved = [p for p in perm if ext[p] != 1]
        if moved != sorted(moved):
            continue
        out = tuple(ext[p] for p in perm)
        # Said against the input of the shape-only node before it (one Reshape for the pair), else against src.
        choices: list[tuple[str, int | None]] = [(src, None)]
        p = graph.producer.get(src)
        if p is not None and p not in drop and uses.get(src) == 1 and src not in graph.outputs:
            prev = nodes[p]
            op = prev.node.op_type
            if op in _SHAPE_ONLY and is_standard(prev, op) and len(prev.outputs) == 1 and prev.inputs:
                if op != "Reshape" or prev.since >= 5:
                    choices.insert(0, (prev.inputs[0], p))
        if len(choices) == 1 and not _read_by_a_reshape(graph, nodes, bn.outputs[0]):
            continue  # a Reshape for a Transpose alone saves no node: only where one merges with it
        for data, prev_k in choices:
            target = reshape_target(out, extents_of(graph, data), False)
            if target is None:
                continue
            t_name = names.fresh(f"{bn.outputs[0]}_shape")
            parts = (bn,) if prev_k is None else (nodes[prev_k], bn)
            new = standard_node(graph, bn, "Reshape", [data, t_name], list(bn.outputs),
                                name=node_name(parts, f"Reshape_{bn.outputs[0]}"))  # fmt: skip
            if new is None:
                break
            graph.add_constant(t_name, np.asarray(target, np.int64))
            nodes[k] = new
            if prev_k is not None:
                drop.add(prev_k)
            break
    return [bn for j, bn in enumerate(nodes) if j not in drop]
