"""Shape arithmetic resolved into a constant Reshape target, dimension variables kept (issue 39).

Exporters compute a Reshape's target at run time from the shapes of the values: ``Shape(x) -> Gather ->
Unsqueeze -> Concat -> Reshape(x, .)`` (``x.view(x.size()[:-1] + (heads, head))``). Where the graph's shapes
(Clause 9: declared and inferred, dimension variables by name) tell each element of the target, the target is a
constant whose elements say the same thing for every extent the variables take (Clause 6.5.2: every occurrence
of a variable denotes the same extent):

- an element that is a fixed positive integer stays that integer; the original's ``-1`` stays ``-1``;
- an element that is the data's own extent at the same position (the same variable, or ``Shape`` of the data
  itself at that position where no variable names it) becomes ``0`` (copy that extent), only where the
  Reshape has ``allowzero`` 0: the original then reads the same extent, or copies it where it is 0;
- one element of any other extent becomes ``-1`` only where every other element is a fixed positive integer (so
  that the inferred extent is the only one the element count allows, even where an extent is 0).

Anything else (an unknown extent, a variable at another position beside copies, a literal 0) leaves the Reshape
as it is. The target is followed through ``Shape`` (with ``start``/``end``), ``Gather`` (axis 0, constant
indices), ``Unsqueeze``/``Squeeze`` of a scalar, ``Concat`` (axis 0), ``Slice`` (axis 0, step 1, constant
bounds), ``Cast`` to an integer type, ``Identity`` and integer constants. The shape nodes no longer read by anything
(and not graph outputs) are removed with it. With concrete input shapes (the caller's ``input_shapes``) the facts
hold integers and the targets come out concrete.
"""

from __future__ import annotations

import numpy as np

from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.standard.emit import Names, constant_ints, is_standard, node_name, shape, standard_node
from onnxcore.runtime.step import PlanNode

__all__ = ["SHAPE_OPS", "Element", "SymbolicShapes", "extents_of", "reshape_target", "resolve_reshape_targets"]

# An extent: a fixed integer, a dimension variable's name, the extent of value ``name`` on ``axis`` where the graph
# does not tell it otherwise (``(name, axis)``: equal to itself wherever it is read), or None (unknown).
Element = int | str | tuple[str, int] | None
SHAPE_OPS = ("Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast", "Identity")
_INT_TYPES = (6, 7, 12, 13)  # int32, int64, uint32, uint64


def extents_of(graph: PlanGraph, name: str) -> tuple[Element, ...] | None:
    """The extents of value ``name`` (its rank known), an extent the graph does not tell as ``(name, axis)``."""
    s = shape(graph, name)
    if s is None:
        return None
    return tuple((name, i) if e is None else e for i, e in enumerate(s))


class SymbolicShapes:
    """The values of small integer tensors as extents, followed back through the shape operators (memoised)."""

    def __init__(self, graph: PlanGraph, nodes: list[PlanNode]) -> None:
        self.graph = graph
        self.nodes = nodes
        self.memo: dict[str, tuple[tuple[Element, ...], bool] | None] = {}

    def value(self, name: str) -> tuple[tuple[Element, ...], bool] | None:
        """(elements, scalar) of ``name``, or None where not followed."""
        if name not in self.memo:
            self.memo[name] = None  # a cycle is not followed
            self.memo[name] = self._value(name)
        return self.memo[name]

    def _value(self, name: str) -> tuple[tuple[Element, ...], bool] | None:
        g = self.graph
        v = g.const.get(name)
        if isinstance(v, np.ndarray):
            if v.dtype.kind not in "iu" or v.ndim > 1:
                return None
            return tuple(int(x) for x in v.reshape(-1)), v.ndim == 0
        k = g.producer.get(name)
        if k is None:
            return None
        bn = self.nodes[k]
        op = bn.node.op_type
        if op not in SHAPE_OPS or not is_standard(bn, op) or bn.outputs[0] != name:
            return None
        ins = bn.inputs
        if op == "Shape":
            s = extents_of(g, ins[0])
            if s is None:
                return None
            start, end = int(bn.kw.get("start", 0)), bn.kw.get("end")
            return tuple(s[start : None if end is None else int(end)]), False
        if op in ("Identity", "Cast"):
            if op == "Cast" and int(bn.kw.get("to", 0)) not in _INT_TYPES:
                return None
            return self.value(ins[0])
        if op == "Gather":
            data, idx = self.value(ins[0]), constant_ints(g, ins[1]) if len(ins) > 1 else None
            if data is None or data[1] or idx is None or int(bn.kw.get("axis", 0)) != 0:
                return None
            n = len(data[0])
            if any(not -n <= i < n for i in idx):
                return None
            scalar = isinstance(g.const.get(ins[1]), np.ndarray) and g.const[ins[1]].ndim == 0
            return tuple(data[0][i] for i in idx), scalar
        if op in ("Unsqueeze", "Squeeze"):
            data = self.value(ins[0])
            axes = constant_ints(g, ins[1]) if bn.since >= 13 and len(ins) > 1 else bn.kw.get("axes")
            if data is None or axes is None or [int(a) for a in axes] not in ([0], [-1]):
                return None
            if op == "Unsqueeze":
                return (data[0], False) if data[1] else None
            return (data[0], True) if not data[1] and len(data[0]) == 1 else None
        if op == "Concat":
            if int(bn.kw.get("axis", 0)) not in (0, -1):
                return None
            parts = [self.value(n) for n in ins]
            if any(p is None or p[1] for p in parts):
                return None
            return tuple(e for p in parts if p is not None for e in p[0]), False
        return self._slice(bn)

    def _slice(self, bn: PlanNode) -> tuple[tuple[Element, ...], bool] | None:
        g, ins = self.graph, bn.inputs
        data = self.value(ins[0])
        if data is None or data[1] or bn.since < 10 or len(ins) < 3:
            return None
        starts, ends = constant_ints(g, ins[1]), constant_ints(g, ins[2])
        axes = constant_ints(g, ins[3]) if len(ins) > 3 and ins[3] else [0]
        steps = constant_ints(g, ins[4]) if len(ins) > 4 and ins[4] else [1]
        if starts is None or ends is None or len(starts) != 1 or len(ends) != 1:
            return None
        if axes not in ([0], [-1]) or steps != [1]:
            return None
        # Python's slice clamps as Slice does for a step of 1 (bounds past either end clamped to it).
        return tuple(data[0][slice(starts[0], ends[0])]), False


def reshape_target(
    elements: tuple[Element, ...], data: tuple[Element, ...] | None, allowzero: bool
) -> list[int] | None:
    """The constant target that says what ``elements`` say for every extent of the variables (module docstring)."""
    out: list[int | None] = []
    for i, e in enumerate(elements):
        if isinstance(e, int) and (e > 0 or e == -1):
            out.append(e)
        elif e is not None and not allowzero and data is not None and i < len(data) and data[i] == e:
            out.append(0)
        elif isinstance(e, int):
            return None  # a literal 0 (or below -1): left to the original's reading
        else:
            out.append(None)
    open_ = [i for i, e in enumerate(out) if e is None]
    if not open_:
        return [int(e) for e in out if e is not None]
    if len(open_) != 1 or any(e is not None and e <= 0 for e in out):
        return None
    out[open_[0]] = -1
    return [int(e) for e in out if e is not None]


def _sweep(graph: PlanGraph, nodes: list[PlanNode], candidates: set[int]) -> list[PlanNode]:
    """``nodes`` without the shape nodes among ``candidates`` whose outputs nothing reads any more."""
    uses: dict[str, int] = {}
    for bn in nodes:
        for n in (*bn.inputs, *bn.outer):
            uses[n] = uses.get(n, 0) + 1
    keep = set(graph.outputs)
    dead: set[int] = set()
    for k in sorted(candidates, reverse=True):  # readers after producers: the last first
        bn = nodes[k]
        if any(uses.get(o, 0) or o in keep for o in bn.outputs if o):
            continue
        dead.add(k)
        for n in bn.inputs:
            if n:
                uses[n] -= 1
    return [bn for k, bn in enumerate(nodes) if k not in dead]


def resolve_reshape_targets(graph: PlanGraph) -> list[PlanNode]:
    """Each Reshape whose target is computed from shapes, given a constant target where the shapes tell it (module
    docstring: the preconditions); the shape nodes left unread removed."""
    nodes = list(graph.nodes)
    if graph.facts is None or not any(bn.node.op_type == "Reshape" for bn in nodes):
        return nodes
    sym = SymbolicShapes(graph, nodes)
    names = Names(graph)
    changed = False
    for k, bn in enumerate(nodes):
        if not is_standard(bn, "Reshape") or bn.since < 5 or len(bn.inputs) != 2 or bn.inputs[1] in graph.const:
            continue
        found = sym.value(bn.inputs[1])
        if found is None or found[1]:
            continue
        target = reshape_target(found[0], extents_of(graph, bn.inputs[0]), bool(int(bn.kw.get("allowzero", 0))))
        if target is None:
            continue
        t_name = names.fresh(f"{bn.outputs[0]}_shape")
        new = standard_node(graph, bn, "Reshape", [bn.inputs[0], t_name], list(bn.outputs),
                            name=node_name((bn,), f"Reshape_{bn.outputs[0]}"), attributes_of=bn)  # fmt: skip
        if new is None:
            continue
        graph.add_constant(t_name, np.asarray(target, np.int64))
        nodes[k] = new
        changed = True
    if not changed:
        return nodes
    candidates = {k for k, bn in enumerate(nodes) if bn.node.op_type in SHAPE_OPS and is_standard(bn, bn.node.op_type)}
    return _sweep(graph, nodes, candidates)
