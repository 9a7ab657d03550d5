"""Consecutive layout operators merged into one, or into nothing (issue 39).

Pairs ``first -> second`` where ``first``'s output is not a graph output nor read inside a subgraph, and is read by
``second`` alone or only by several of these operators (each merges with ``first`` on its own, ``first`` goes with
the last; where one cannot, ``first`` stays and no node is added):

- ``Transpose(Transpose(x, p), q)`` is ``Transpose(x, [p[j] for j in q])``; where that permutation is the identity,
  the pair is removed (its readers read ``x``; where its output is a graph output, an ``Identity`` keeps the name).
  A ``perm`` left out (the reversal) is read only where the rank is known.
- ``Reshape(Reshape(x, s), t)`` is ``Reshape(x, t)`` (the element order is the same, and so the total size)
  where ``t`` is a constant with no ``0``, or ``second`` has ``allowzero=1`` (a ``0`` in ``t`` copies an extent of
  ``first``'s output otherwise, which ``x`` need not have). ``first``'s shape may vary (Reshape from version 5).
  The same holds where ``first`` is a ``Squeeze``, ``Unsqueeze`` or ``Flatten``: each keeps the elements in their
  order and changes only the shape, which ``t`` then sets (the dynamo exporter's ``unbind``: a Squeeze of the
  sliced attention head, then a Reshape). ``x`` an input ``first`` would refuse (a Squeeze of an extent not 1) is
  then reshaped or refused by the Reshape alone, as with two Reshapes.
- ``Squeeze(Unsqueeze(x, a), a)`` is ``x``: the two axes lists read against the same rank (the Unsqueeze's output
  rank, the Squeeze's input rank), so equal sets insert and remove the same extents. ``Unsqueeze(Squeeze(x, a),
  a)`` is ``x`` where the extents of ``x`` at ``a`` are known to be 1 (on other inputs the Squeeze raises).
- ``Unsqueeze(Unsqueeze(x, a), b)`` is one Unsqueeze of the combined axes.

Negative axes are compared or combined only where the rank they count from is known. Axes as attributes (before
version 13) or as a constant input (from 13); a Squeeze without axes is left alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.standard.emit import (
    Names,
    constant_ints,
    is_standard,
    node_name,
    opset,
    rank,
    rewire,
    shape,
    standard_node,
)
from onnxcore.runtime.step import PlanNode

__all__ = ["merge_layout_ops"]

_OPS = ("Transpose", "Reshape", "Squeeze", "Unsqueeze")
# Operators that keep the elements in their order and change only the shape: a Reshape after one reads through it.
_SHAPE_ONLY = ("Reshape", "Squeeze", "Unsqueeze", "Flatten")


def _perm(graph: PlanGraph, bn: PlanNode) -> list[int] | None:
    p = bn.kw.get("perm")
    if p is not None:
        return [int(v) for v in p]
    r = rank(graph, bn.inputs[0])
    return None if r is None else list(range(r - 1, -1, -1))


def _axes(graph: PlanGraph, bn: PlanNode) -> list[int] | None:
    if bn.since >= 13:
        return constant_ints(graph, bn.inputs[1]) if len(bn.inputs) > 1 and bn.inputs[1] else None
    a = bn.kw.get("axes")
    return None if a is None else [int(v) for v in a]


def _normalized(axes: list[int], r: int | None) -> list[int] | None:
    """``axes`` counted from 0 against rank ``r`` (None where a negative one needs an unknown rank, or one is out
    of range or repeated)."""
    if any(a < 0 for a in axes) and r is None:
        return None
    out = [a + r if a < 0 and r is not None else a for a in axes]
    if len(set(out)) != len(out) or (r is not None and any(not 0 <= a < r for a in out)):
        return None
    return out


class _Merger:
    """One pass over the nodes, merging pairs in order (a chain of three merges into one)."""

    def __init__(self, graph: PlanGraph) -> None:
        self.graph = graph
        self.nodes = list(graph.nodes)
        self.uses = dict(graph.uses)
        self.drop: set[int] = set()
        self.names = Names(graph)
        self.version = opset(graph) or 0

    def source(self, k: int) -> int | None:
        """The node making ``nodes[k]``'s first input where that value is read by this pass's operators alone (one
        reader, or several that may each merge with it: the dynamo exporter unsqueezes one range twice)."""
        name = self.nodes[k].inputs[0]
        p = self.graph.producer.get(name)
        if p is None or p in self.drop or len(self.nodes[p].outputs) != 1:
            return None
        uses = self.uses.get(name, 0)
        if uses != 1:
            readers = self.graph.readers.get(name, [])
            # Every use is a reader's first input (not a graph output, not a read from inside a subgraph: those
            # count in ``uses`` and not here), and every reader one of this pass's operators.
            firsts = [j for j in readers if self.nodes[j].inputs[0] == name and self.nodes[j].inputs.count(name) == 1]
            if len(firsts) != uses or not all(
                self.nodes[j].node.op_type in _OPS and is_standard(self.nodes[j], self.nodes[j].node.op_type)
                for j in firsts
            ):
                return None
        return p

    def consumed(self, p: int, k: int, x_readers: int) -> None:
        """``nodes[k]`` no longer reads ``nodes[p]``'s output, and ``x`` (``nodes[p]``'s first input) gained
        ``x_readers`` readers: ``nodes[p]`` goes with its last reader."""
        first = self.nodes[p]
        v, x = first.outputs[0], first.inputs[0]
        self.uses[v] = self.uses.get(v, 0) - 1
        self.uses[x] = self.uses.get(x, 0) + x_readers
        if self.uses[v] == 0:
            self.drop.add(p)
            self.uses[x] -= 1

    def identity(self, p: int, k: int) -> None:
        """The pair ``p -> k`` computes ``p``'s first input: ``k`` removed (or an Identity where its output must
        stay), and ``p`` with its last reader."""
        first, second = self.nodes[p], self.nodes[k]
        x, out = first.inputs[0], second.outputs[0]
        if rewire(self.graph, self.nodes, out, x):
            self.drop.add(k)
            self.consumed(p, k, self.uses.get(out, 0))
            return
        ident = standard_node(self.graph, second, "Identity", [x], [out], name=node_name((first, second), out))
        if ident is not None:
            self.nodes[k] = ident
            self.consumed(p, k, 1)

    def replace(self, p: int, k: int, new: PlanNode | None) -> None:
        if new is not None:
            self.nodes[k] = new
            self.consumed(p, k, 1)

    def transpose(self, p: int, k: int) -> None:
        first, second = self.nodes[p], self.nodes[k]
        p1, p2 = _perm(self.graph, first), _perm(self.graph, second)
        if p1 is None or p2 is None or len(p1) != len(p2) or sorted(p2) != list(range(len(p2))):
            return
        q = [p1[j] for j in p2]
        if q == list(range(len(q))):
            self.identity(p, k)
            return
        name = node_name((first, second), second.outputs[0])
        self.replace(p, k, standard_node(self.graph, second, "Transpose", [first.inputs[0]], list(second.outputs),
                                         name=name, perm=q))  # fmt: skip

    def reshape(self, p: int, k: int) -> None:
        first, second = self.nodes[p], self.nodes[k]
        if (first.node.op_type == "Reshape" and first.since < 5) or second.since < 5 or len(second.inputs) != 2:
            return
        t = constant_ints(self.graph, second.inputs[1])
        if t is None or (0 in t and int(second.kw.get("allowzero", 0)) != 1):
            return
        name = node_name((first, second), second.outputs[0])
        new = standard_node(self.graph, second, "Reshape", [first.inputs[0], second.inputs[1]], list(second.outputs),
                            name=name, attributes_of=second)  # fmt: skip
        self.replace(p, k, new)

    def squeeze_pair(self, p: int, k: int) -> None:
        first, second = self.nodes[p], self.nodes[k]
        a, b = _axes(self.graph, first), _axes(self.graph, second)
        if a is None or b is None:
            return
        x = first.inputs[0]
        r_x = rank(self.graph, x)
        op = first.node.op_type
        if op == "Unsqueeze" and second.node.op_type == "Squeeze":
            r = None if r_x is None else r_x + len(a)
            na, nb = _normalized(a, r), _normalized(b, r)
            if na is not None and nb is not None and sorted(na) == sorted(nb):
                self.identity(p, k)
            return
        if op == "Squeeze" and second.node.op_type == "Unsqueeze":
            s = shape(self.graph, x)
            na, nb = _normalized(a, r_x), _normalized(b, r_x)
            if s is None or na is None or nb is None or sorted(na) != sorted(nb):
                return
            if all(s[i] == 1 for i in na):
                self.identity(p, k)
            return
        if op == "Unsqueeze" and second.node.op_type == "Unsqueeze":
            self.unsqueezes(p, k, a, b, r_x)

    def unsqueezes(self, p: int, k: int, a: list[int], b: list[int], r_x: int | None) -> None:
        first, second = self.nodes[p], self.nodes[k]
        r1 = None if r_x is None else r_x + len(a)
        na = _normalized(a, r1)
        nb = _normalized(b, None if r1 is None else r1 + len(b))
        if na is None or nb is None:
            return
        total = len(na) + len(nb) + (r_x if r_x is not None else 0)
        if r_x is None:
            # Without the rank, the non-negative axes place the inserted extents all the same: count the positions
            # far enough to hold every axis named.
            total = max([*na, *nb, -1]) + 1 + len(na) + len(nb)
        rest = [i for i in range(total) if i not in set(nb)]
        if any(i >= len(rest) for i in na):
            return
        combined = sorted(set(nb) | {rest[i] for i in na})
        name = node_name((first, second), second.outputs[0])
        ins = [first.inputs[0]]
        attrs: dict[str, Any] = {}
        axes_name = ""
        if self.version >= 13:
            axes_name = self.names.fresh(f"{second.outputs[0]}_axes")
            ins.append(axes_name)
        else:
            attrs["axes"] = combined
        new = standard_node(self.graph, second, "Unsqueeze", ins, list(second.outputs), name=name, **attrs)
        if new is not None:
            if axes_name:
                self.graph.add_constant(axes_name, np.asarray(combined, np.int64))
            self.replace(p, k, new)

    def run(self) -> list[PlanNode]:
        for k in range(len(self.nodes)):
            second = self.nodes[k]
            op = second.node.op_type
            if op not in _OPS or not is_standard(second, op) or not second.inputs or len(second.outputs) != 1:
                continue
            p = self.source(k)
            if p is None:
                continue
            first_op = self.nodes[p].node.op_type
            if not is_standard(self.nodes[p], first_op):
                continue
            if op == first_op == "Transpose":
                self.transpose(p, k)
            elif op == "Reshape" and first_op in _SHAPE_ONLY:
                self.reshape(p, k)
            elif {op, first_op} <= {"Squeeze", "Unsqueeze"} and (op, first_op) != ("Squeeze", "Squeeze"):
                self.squeeze_pair(p, k)
        return [bn for j, bn in enumerate(self.nodes) if j not in self.drop]


def merge_layout_ops(graph: PlanGraph) -> list[PlanNode]:
    """Merge consecutive Transpose, Reshape, Squeeze and Unsqueeze nodes (module docstring: the preconditions)."""
    if graph.facts is None or not any(bn.node.op_type in _OPS for bn in graph.nodes):
        return list(graph.nodes)
    return _Merger(graph).run()
