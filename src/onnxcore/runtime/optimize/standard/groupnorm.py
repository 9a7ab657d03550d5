"""GroupNorm as exporters write it, as ``GroupNormalization`` (ai.onnx 21 on; issue 39).

torch's exporter writes ``nn.GroupNorm(G, C)`` on ``x`` of shape ``[N, C, ...]`` as ``Reshape(x, [0, G, -1]) ->
InstanceNormalization(scale=1, B=0, epsilon) -> Reshape(., Shape(x)) -> Mul(w) -> Add(b)``, ``w`` and ``b`` one
value per channel along axis 1. Normalising each of the ``G`` rows of ``[N, G, C/G * spatial]`` is normalising each
group of ``C / G`` channels over them and the spatial extents, which is what GroupNormalization-21 computes, with
per-channel ``scale`` and ``bias`` (the ``w`` and ``b`` as ``[C]``, ones and zeros where the chain has no Mul or
Add) and the chain's epsilon (read from the InstanceNormalization, never assumed). Preconditions, each checked:

- ``x`` of known rank at least 3 and element type float32 or float64, its channel extent ``C`` a known integer
  divisible by ``G``;
- the first target is the constant ``[0, G, -1]`` (``allowzero`` 0); the InstanceNormalization's scale is all ones
  and its B all zeros, ``[G]`` constants of ``x``'s type;
- the second target is ``Shape(x)`` (or a constant equal to ``x``'s known extents, ``0`` copying the first);
- ``w`` and ``b``, where present, are constants of ``x``'s type that vary along axis 1 only;
- every value the chain makes but its last is read by the chain alone and is not a graph output.

The first stage runs in ``x``'s own type (``stash_type`` 11 for float64, as the chain computes it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.kernels.fused.affine import per_channel_values
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.standard.emit import (
    Names,
    constant_ints,
    is_standard,
    node_name,
    opset,
    shape,
    standard_node,
)
from onnxcore.runtime.step import PlanNode

__all__ = ["group_norms"]

_ELEM: dict[int, np.dtype[Any]] = {1: np.dtype(np.float32), 11: np.dtype(np.float64)}


class _Chain:
    """The match from one InstanceNormalization (its nodes by index, what the GroupNormalization takes)."""

    def __init__(self, graph: PlanGraph, nodes: list[PlanNode]) -> None:
        self.graph = graph
        self.nodes = nodes

    def sole(self, name: str, op: str) -> int | None:
        """The one reader of ``name`` when it is a standard ``op`` and ``name`` is no graph output."""
        r = self.graph.readers.get(name, [])
        if len(r) != 1 or self.graph.uses.get(name) != 1 or not is_standard(self.nodes[r[0]], op):
            return None
        return r[0]

    def made_by(self, name: str, op: str) -> int | None:
        k = self.graph.producer.get(name)
        return k if k is not None and is_standard(self.nodes[k], op) else None

    def match(self, k: int) -> tuple[list[int], str, int, float, Any, Any] | None:
        """(members, x, G, epsilon, w, b) for the InstanceNormalization ``nodes[k]``, else None."""
        g, inorm = self.graph, self.nodes[k]
        if len(inorm.inputs) != 3 or len(inorm.outputs) != 1:
            return None
        r1 = self.made_by(inorm.inputs[0], "Reshape")
        if r1 is None or g.uses.get(inorm.inputs[0]) != 1:
            return None
        first = self.nodes[r1]
        x = first.inputs[0]
        s, elem = shape(g, x), None if g.facts is None else g.facts.elem_types.get(x)
        t1 = constant_ints(g, first.inputs[1]) if len(first.inputs) == 2 else None
        dtype = _ELEM.get(elem or 0)
        if s is None or len(s) < 3 or not isinstance(s[1], int) or dtype is None or t1 is None:
            return None
        if len(t1) != 3 or t1[0] != 0 or t1[2] != -1 or int(first.kw.get("allowzero", 0)) or first.since < 5:
            return None
        groups, c = t1[1], s[1]
        if groups <= 0 or c % groups:
            return None
        ones, zeros = (g.const.get(n) for n in inorm.inputs[1:])
        for v, want in ((ones, 1.0), (zeros, 0.0)):
            if not isinstance(v, np.ndarray) or v.dtype != dtype or v.shape != (groups,) or np.any(v != want):
                return None
        r2 = self.sole(inorm.outputs[0], "Reshape")
        if r2 is None or not self._back(self.nodes[r2], x, s):
            return None
        members = [r1, k, r2]
        sh = self.made_by(self.nodes[r2].inputs[1], "Shape")
        if sh is not None and g.uses.get(self.nodes[sh].outputs[0]) == 1:
            members.append(sh)
        cur = self.nodes[r2].outputs[0]
        found: list[Any] = []
        for op in ("Mul", "Add"):
            j = self.sole(cur, op)
            v = None
            if j is not None and len(self.nodes[j].inputs) == 2:
                ins = self.nodes[j].inputs
                other = ins[1] if ins[0] == cur else ins[0]
                const = g.const.get(other)
                if isinstance(const, np.ndarray) and other != cur:
                    v = per_channel_values(const, dtype, c, len(s))
            if v is None or j is None:
                break
            found.append(v)
            members.append(j)
            cur = self.nodes[j].outputs[0]
        w = found[0] if found else None
        b = found[1] if len(found) > 1 else None
        return members, x, groups, float(inorm.kw.get("epsilon", 1e-5)), w, b

    def _back(self, second: PlanNode, x: str, s: tuple[Any, ...]) -> bool:
        """Whether ``second`` reshapes to ``x``'s own shape."""
        if len(second.inputs) != 2 or second.since < 5:
            return False
        sh = self.made_by(second.inputs[1], "Shape")
        if sh is not None:
            node = self.nodes[sh]
            return node.inputs[0] == x and "start" not in node.kw and "end" not in node.kw
        t = constant_ints(self.graph, second.inputs[1])
        allowzero = int(second.kw.get("allowzero", 0))
        if t is None or len(t) != len(s):
            return False
        return all(e == d or (i == 0 and e == 0 and not allowzero) for i, (e, d) in enumerate(zip(t, s)))


def group_norms(graph: PlanGraph) -> list[PlanNode]:
    """Each GroupNorm chain as GroupNormalization (module docstring: the preconditions)."""
    nodes = list(graph.nodes)
    version = opset(graph)
    if version is None or version < 21 or not any(bn.node.op_type == "InstanceNormalization" for bn in nodes):
        return nodes
    chain = _Chain(graph, nodes)
    names = Names(graph)
    replaced: dict[int, PlanNode] = {}
    taken: set[int] = set()
    for k, bn in enumerate(nodes):
        if not is_standard(bn, "InstanceNormalization"):
            continue
        found = chain.match(k)
        if found is None or taken.intersection(found[0]):
            continue
        members, x, groups, eps, w, b = found
        last = max(j for j in members if nodes[j].node.op_type != "Shape")
        y = nodes[last].outputs[0]
        s = shape(graph, x)
        assert s is not None and isinstance(s[1], int)
        dtype = graph.const[bn.inputs[1]].dtype
        scale = np.ones(s[1], dtype) if w is None else np.asarray(w, np.float64).astype(dtype)
        bias = np.zeros(s[1], dtype) if b is None else np.asarray(b, np.float64).astype(dtype)
        s_name, b_name = names.fresh(f"{y}_scale"), names.fresh(f"{y}_bias")
        attrs: dict[str, Any] = {"num_groups": groups, "epsilon": eps}
        if dtype == np.float64:
            attrs["stash_type"] = 11
        new = standard_node(graph, bn, "GroupNormalization", [x, s_name, b_name], [y],
                            name=node_name((nodes[j] for j in sorted(members)), f"GroupNormalization_{y}"),
                            **attrs)  # fmt: skip
        if new is None:
            continue
        graph.add_constant(s_name, scale)
        graph.add_constant(b_name, bias)
        replaced[last] = new
        taken.update(members)
    if not replaced:
        return nodes
    return [replaced.get(j, bn) for j, bn in enumerate(nodes) if j in replaced or j not in taken]
