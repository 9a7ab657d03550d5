"""Shape arithmetic whose every element the graph's shapes fix, as a constant (issue 39).

Exporters read extents at run time even where the model fixes them: TorchScript's channel shuffle computes
``channels // groups`` from ``Shape(x)[1]`` of a value whose shape is ``[1, 116, 28, 28]``, a ViT its attention
scale from ``Shape(q)[-1:]`` (the head size) while the batch and sequence extents are dimension variables. A
value computed by the shape operators (``Shape``, ``Gather``, ``Unsqueeze``/``Squeeze`` of a scalar, ``Concat``,
``Slice``, ``Cast`` to an integer type, ``Identity``, as :class:`.reshape.SymbolicShapes` follows them) whose every
element is a fixed integer in the graph's shapes (Clause 9: declared and inferred; never a dimension variable nor
an extent the graph does not tell) is the same on every run: it becomes a constant of the node's own element type
(int32 or int64) and rank, which ``fold_constants`` then carries on through the arithmetic after it (``Div``,
``Cast`` to float, ``Sqrt``).

Preconditions, each checked: the node is one of those operators, standard, with one output that is not a graph
output; every element of its value is fixed (an element that is a dimension variable, even one that the sizes of
a verification happen to set, keeps the node); the value's element type is int32 or int64 and every element fits
it; where the graph states the value's shape, the constant has it. Only the values some other node reads are made
constants; the shape nodes before them are left to ``drop_dead_nodes``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.standard.emit import is_standard, shape
from onnxcore.runtime.optimize.standard.reshape import SHAPE_OPS, SymbolicShapes
from onnxcore.runtime.step import PlanNode

__all__ = ["fold_shape_values"]

_TYPES: dict[int, type[np.signedinteger[Any]]] = {6: np.int32, 7: np.int64}  # TensorProto INT32, INT64


def _fixed(graph: PlanGraph, sym: SymbolicShapes, bn: PlanNode) -> np.ndarray | None:
    """The value of ``bn``'s output as a constant where every element is fixed (module docstring), else None."""
    op = bn.node.op_type
    if op not in SHAPE_OPS or not is_standard(bn, op) or len(bn.outputs) != 1 or graph.facts is None:
        return None
    o = bn.outputs[0]
    if not o or o in graph.const or o in graph.outputs:
        return None
    dtype = _TYPES.get(graph.facts.elem_types.get(o, 0))
    found = sym.value(o)
    if dtype is None or found is None:
        return None
    elements, scalar = found
    if not all(isinstance(e, int) and not isinstance(e, bool) for e in elements):
        return None
    info = np.iinfo(dtype)
    ints = [int(e) for e in elements if isinstance(e, int)]
    if any(not info.min <= e <= info.max for e in ints) or (scalar and len(ints) != 1):
        return None
    value = np.asarray(ints[0] if scalar else ints, dtype=dtype)
    stated = shape(graph, o)
    if stated is not None and tuple(stated) != value.shape:
        return None
    return value


def fold_shape_values(graph: PlanGraph) -> list[PlanNode]:
    """Each value of the shape operators whose every element is fixed, read by another kind of node, as a constant
    under its own name (module docstring: the preconditions); its producer is left out."""
    nodes = list(graph.nodes)
    if graph.facts is None or not any(bn.node.op_type == "Shape" for bn in nodes):
        return nodes
    sym = SymbolicShapes(graph, nodes)
    fixed: dict[int, np.ndarray] = {}
    for k, bn in enumerate(nodes):
        v = _fixed(graph, sym, bn)
        if v is not None:
            fixed[k] = v
    fixed_names = {nodes[k].outputs[0] for k in fixed}
    # The frontier: fixed values some node that is not itself fixed reads (as an input or from inside a subgraph).
    read_elsewhere: set[str] = set()
    for k, bn in enumerate(nodes):
        if k not in fixed:
            read_elsewhere.update(n for n in (*bn.inputs, *bn.outer) if n in fixed_names)
    drop: set[int] = set()
    for k, value in fixed.items():
        o = nodes[k].outputs[0]
        if o in read_elsewhere:
            graph.add_constant(o, value)
            drop.add(k)
    return [bn for k, bn in enumerate(nodes) if k not in drop]
