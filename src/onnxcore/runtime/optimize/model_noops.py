"""No-op removal for a model file (``onnxcore.optimize``): the plan's (:func:`.noops.drop_noops`), and the nodes
that are no-ops by the shapes inference tells (Clause 9), for every size the dimension variables allow.

A dimension variable may take any extent, 0 and 1 included (Clause 6.5.2), so a node is left out only where its
output is its input whatever extents the variables take:

* ``Dropout`` in inference (no ``training_mode``, or a constant false one; version 7 and later) whose mask no one
  reads;
* ``Cast`` to the element type inference tells the input has;
* ``Reshape`` to the input's own shape: each entry of the constant shape is the input's fixed extent, or 0 (copy
  the extent) without ``allowzero``; a -1 only where every other axis has a fixed non-zero extent that the
  shape copies or matches (the -1's own axis may be a dimension variable);
* ``Transpose`` by the identity permutation;
* ``Expand`` by a shape of 1s and of the input's own fixed extents, no longer than the input's rank;
* ``Pad`` by all-zero pads;
* ``Slice`` of everything: on every sliced axis a step of 1, a start of 0, and an end at least the axis' fixed extent
  (for a dimension variable, at least 2**62: an exporter's "to the end");
* ``Identity``, ``x * 1``, ``x / 1``, ``x - (+0)``, ``x + (-0)`` as the plan leaves them out (bit for bit).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.model_graph import ModelGraph, Shape
from onnxcore.runtime.optimize.noops import Known, alias_noops, noop_source
from onnxcore.runtime.step import PlanNode

__all__ = ["drop_model_noops"]

_DEFAULT = ("", "ai.onnx")
# An end at least this large slices to the end of an axis of any extent (exporters write 2**63 - 1).
_TO_THE_END = 1 << 62


def drop_model_noops(graph: PlanGraph) -> list[PlanNode]:
    """Leave out the nodes whose output is their input for every input size (module docstring)."""
    if not isinstance(graph, ModelGraph):
        return alias_noops(graph, lambda bn, known: noop_source(bn, graph.const, known))
    g = graph

    def source(bn: PlanNode, known: Mapping[str, Known]) -> str | None:
        return noop_source(bn, g.const, known) or _shape_source(bn, g, known)

    return alias_noops(graph, source, graph.known, outer_sources=True)


def _ints(v: Any) -> list[int] | None:
    if not isinstance(v, np.ndarray) or v.dtype.kind not in "iu" or v.ndim > 1:
        return None
    return [int(x) for x in v.reshape(-1)]


def _arg(bn: PlanNode, g: ModelGraph, j: int) -> Any:
    """The constant value of input ``j`` of ``bn``: None when absent or not constant."""
    if j >= len(bn.inputs) or not bn.inputs[j]:
        return None
    return g.const.get(bn.inputs[j])


def _absent(bn: PlanNode, j: int) -> bool:
    return j >= len(bn.inputs) or not bn.inputs[j]


def _dropout(bn: PlanNode, g: ModelGraph, x: str, shape: Shape | None) -> bool:
    if bn.since < 7:
        return False  # Dropout-1/6 have is_test, whose default is training
    if len(bn.outputs) > 1 and bn.outputs[1] and g.uses.get(bn.outputs[1], 0):
        return False
    if _absent(bn, 2):
        return True
    mode = _arg(bn, g, 2)
    return isinstance(mode, np.ndarray) and mode.size == 1 and not bool(mode.reshape(())[()])


def _reshape(bn: PlanNode, g: ModelGraph, x: str, shape: Shape | None) -> bool:
    target = _ints(_arg(bn, g, 1))
    if bn.since < 5 or shape is None or target is None or len(target) != len(shape):
        return False
    allowzero = bool(bn.kw.get("allowzero", 0))
    if target.count(-1) > 1:
        return False
    # A -1 takes the extent that the input's size leaves after the other entries' product, which is this axis'
    # own extent whenever that product is not 0: certain when every other axis has a fixed non-zero extent. A
    # dimension variable among them may be 0, where the -1 is undetermined and the Reshape fails (onnxruntime
    # and onnx.reference too); leaving it out there would turn that failure into a value, so it stays.
    others_nonzero = all(isinstance(d, int) and d > 0 for t, d in zip(target, shape) if t != -1)
    for t, d in zip(target, shape):
        if t == 0 and not allowzero:
            continue
        if t == -1:
            if not others_nonzero:
                return False
            continue
        if not isinstance(d, int) or t != d:
            return False
    return True


def _transpose(bn: PlanNode, g: ModelGraph, x: str, shape: Shape | None) -> bool:
    perm = bn.kw.get("perm")
    if perm is None:
        return shape is not None and len(shape) <= 1
    return list(perm) == list(range(len(perm)))


def _expand(bn: PlanNode, g: ModelGraph, x: str, shape: Shape | None) -> bool:
    target = _ints(_arg(bn, g, 1))
    if bn.since < 8 or shape is None or target is None or len(target) > len(shape):
        return False
    return all(t == 1 or (isinstance(d, int) and t == d) for t, d in zip(target, shape[len(shape) - len(target) :]))


def _pad(bn: PlanNode, g: ModelGraph, x: str, shape: Shape | None) -> bool:
    pads = bn.kw.get("pads") if bn.since < 11 else _ints(_arg(bn, g, 1))
    return pads is not None and len(pads) > 0 and all(int(p) == 0 for p in pads)


def _slice(bn: PlanNode, g: ModelGraph, x: str, shape: Shape | None) -> bool:
    if shape is None:
        return False
    if bn.since < 10:
        starts, ends, axes, steps = bn.kw.get("starts"), bn.kw.get("ends"), bn.kw.get("axes"), None
    else:
        starts, ends = _ints(_arg(bn, g, 1)), _ints(_arg(bn, g, 2))
        axes = None if _absent(bn, 3) else _ints(_arg(bn, g, 3))
        steps = None if _absent(bn, 4) else _ints(_arg(bn, g, 4))
        if (not _absent(bn, 3) and axes is None) or (not _absent(bn, 4) and steps is None):
            return False
    if starts is None or ends is None or len(starts) != len(ends):
        return False
    rank = len(shape)
    axes = list(range(len(starts))) if axes is None else [int(a) for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    if len(axes) != len(starts) or len(steps) != len(starts):
        return False
    for a, s, e, st in zip(axes, starts, ends, steps):
        if not -rank <= a < rank or int(st) != 1 or int(s) != 0:
            return False
        d = shape[a % rank]
        if int(e) < (d if isinstance(d, int) else _TO_THE_END):
            return False
    return True


_RULES: dict[str, Callable[[PlanNode, ModelGraph, str, Shape | None], bool]] = {
    "Dropout": _dropout,
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Expand": _expand,
    "Pad": _pad,
    "Slice": _slice,
}


def _shape_source(bn: PlanNode, g: ModelGraph, known: Mapping[str, Known]) -> str | None:
    """The input whose value ``bn``'s output always equals by the shapes inference tells, or None."""
    node = bn.node
    rule = _RULES.get(node.op_type)
    if rule is None or node.domain not in _DEFAULT or bn.call is None or bn.outer or not bn.inputs:
        return None
    x = bn.inputs[0]
    if not x or not bn.outputs or not bn.outputs[0] or (any(bn.outputs[1:]) and node.op_type != "Dropout"):
        return None
    if bn.since == 0:
        return None  # bound to a function body: its version is not known here
    return x if rule(bn, g, x, g.shapes.get(x)) else None
