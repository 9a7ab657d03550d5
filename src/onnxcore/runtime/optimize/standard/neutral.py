"""``x * ones``, ``x / ones``, ``x + (-0)s``, ``x - (+0)s``, ``x and trues``, ``x or falses``, ``x xor falses`` by a
whole constant tensor, and a Concat of one input, left out (issue 39).

``drop_noops`` leaves out a Mul by the scalar 1 (one element); exporters also write a norm's weight, all ones in a
freshly initialized model (T5's and Llama's RMSNorm, ``[hidden]``), as a Mul by a vector. Multiplying by 1 (or
dividing by it) gives every element back bit for bit, as adding ``-0`` or subtracting ``+0`` does (an integer's 0
either way; a float's ``x + (+0)`` turns ``-0`` into ``+0``: :func:`drop_zero_shifts` drops it where no reader can
tell). The node's output is its varying input
where the constant's broadcast does not grow that input, whatever the dimension variables are. TorchScript writes
each dense block's first ``torch.cat`` of a list of one tensor as a Concat of one input: its output is that input.

Preconditions, each checked:

- a standard Mul, Div, Add or Sub (version 7 on: multidirectional broadcasting) with one constant operand (the
  second for Div and Sub) of a float or integer type, every element the neutral one above; or a standard And, Or
  or Xor (version 7 on) with one constant boolean operand, every element true (And) or false (Or, Xor): the
  dynamo exporter's attention mask is ``ones & (position >= 0)``;
- the varying input's shape is known and the constant's rank is at most its rank; aligned from the right, each of
  the constant's extents is 1 or the varying input's fixed extent at that position (an extent 3 against a
  dimension variable, which may be 1, would grow it);
- or a standard Concat with one input;
- the output is not read from inside a subgraph (its readers are made to read the varying input instead); where it
  is a graph output, the varying input is made by a node whose output is not one (that node writes it instead).
"""

from __future__ import annotations

import numpy as np

from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.noops import alias_noops
from onnxcore.runtime.optimize.standard.emit import is_standard, shape
from onnxcore.runtime.step import PlanNode

__all__ = ["drop_neutral_operands", "drop_zero_shifts"]

_LOGICAL = ("And", "Or", "Xor")
_OPS = ("Mul", "Div", "Add", "Sub", "Concat", *_LOGICAL)

# Where a zero's sign becomes a value: a divisor (1 / -0 is -inf), a base raised to a negative power, a cast to text
# ("-0"). The positions of the inputs that see it.
_SIGN_SEEING = {"Div": (1,), "Reciprocal": (0,), "Pow": (0,), "CastLike": (0,)}
# Outputs that carry nothing of a zero's sign (a shape, a truth value, an index, a magnitude).
_SIGN_BLIND = frozenset(
    ("Shape", "Size", "Abs", "IsNaN", "IsInf", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
     "ArgMax", "ArgMin", "Not", "NonZero")
)  # fmt: skip
_STRING = 8  # TensorProto.STRING (Annex B)


def _neutral(c: np.ndarray, op: str) -> bool:
    """Whether every element of ``c`` leaves the other operand as it is under ``op`` (module docstring)."""
    if c.size == 0:
        return False
    if op in _LOGICAL:
        return c.dtype.kind == "b" and bool(np.all(c) if op == "And" else not np.any(c))
    if c.dtype.kind not in "fiu":
        return False
    if op in ("Mul", "Div"):
        return bool(np.all(c == 1))
    if not np.all(c == 0):
        return False
    if c.dtype.kind != "f":
        return True
    negative = np.signbit(c)
    return bool(np.all(negative)) if op == "Add" else not bool(np.any(negative))


def _keeps_shape(c: np.ndarray, x_shape: tuple[int | str | None, ...]) -> bool:
    if c.ndim > len(x_shape):
        return False
    tail = x_shape[len(x_shape) - c.ndim :]
    return all(e == 1 or (isinstance(d, int) and e == d) for e, d in zip(c.shape, tail))


def _source(graph: PlanGraph, bn: PlanNode) -> str | None:
    """The varying input ``bn``'s output always equals, or None."""
    op = bn.node.op_type
    if op == "Concat":
        one = is_standard(bn, op) and len(bn.inputs) == 1 and len(bn.outputs) == 1 and bool(bn.inputs[0])
        return bn.inputs[0] if one else None
    if not is_standard(bn, op) or bn.since < 7 or len(bn.inputs) != 2 or len(bn.outputs) != 1 or not all(bn.inputs):
        return None
    for j in (0, 1):
        x, other = bn.inputs[j], bn.inputs[1 - j]
        c = graph.const.get(other)
        if x in graph.const or not isinstance(c, np.ndarray) or (op in ("Div", "Sub") and j == 1):
            continue
        s = shape(graph, x)
        if s is not None and _neutral(c, op) and _keeps_shape(c, s):
            return x
    return None


def _zero_sign_seen(graph: PlanGraph, nodes: list[PlanNode]) -> set[str]:
    """The values from which a zero's sign can reach a value: read where the sign is seen (``_SIGN_SEEING``, a cast
    to STRING), by an operator outside the standard domain, a fused step or a subgraph (not known: assumed seen), or
    through any other reader's outputs (one pass from the last node back; ``_SIGN_BLIND`` readers stop it)."""
    seen: set[str] = set()
    for bn in reversed(nodes):
        n = bn.node
        if n.domain not in ("", "ai.onnx") or bn.step_kernel or bn.fused or bn.outer:
            seen.update(i for i in (*bn.inputs, *bn.outer) if i)
            continue
        op = n.op_type
        if op in _SIGN_BLIND:
            continue
        if op == "Cast" and bn.kw.get("to") == _STRING:
            seen.update(i for i in bn.inputs if i)
            continue
        for p in _SIGN_SEEING.get(op, ()):
            if p < len(bn.inputs) and bn.inputs[p]:
                seen.add(bn.inputs[p])
        if any(o in seen for o in bn.outputs if o):
            seen.update(i for i in bn.inputs if i)
    return seen


def _zero_shift_source(graph: PlanGraph, bn: PlanNode) -> str | None:
    """The varying input of a float ``x + (+0)`` or ``x - (-0)`` by a whole constant that keeps its shape, or None."""
    op = bn.node.op_type
    if op not in ("Add", "Sub") or not is_standard(bn, op) or bn.since < 7 or len(bn.inputs) != 2:
        return None
    if len(bn.outputs) != 1 or not all(bn.inputs):
        return None
    for j in (0, 1) if op == "Add" else (0,):
        x, c = bn.inputs[j], graph.const.get(bn.inputs[1 - j])
        if x in graph.const or not isinstance(c, np.ndarray) or c.dtype.kind != "f" or c.size == 0:
            continue
        if not np.all(c == 0) or bool(np.any(np.signbit(c))) != (op == "Sub"):
            continue
        s = shape(graph, x)
        return x if s is not None and _keeps_shape(c, s) else None
    return None


def drop_zero_shifts(graph: PlanGraph) -> list[PlanNode]:
    """Leave out each float ``x + (+0)`` and ``x - (-0)`` by a whole constant whose result no reader can tell from
    ``x`` (issue 39).

    ``x + (+0)`` is ``x`` for every ``x`` but ``-0``, which it makes ``+0``: equal values (IEEE 754: ``-0 == +0``),
    different bits. Exporters write such Adds as the zero biases of a freshly initialized model. The node is left
    out where no path from its output reaches an input that turns a zero's sign into a value (a divisor, a base
    raised to a power, a cast to text, an operator outside the standard domain or a subgraph: ``_zero_sign_seen``);
    a graph output may then hold ``-0`` where the original held ``+0``, the same value. The shape conditions are
    ``drop_neutral_operands``'s. ``disabled=("drop_zero_shifts",)`` keeps every such node (results bit for bit).
    """
    nodes = list(graph.nodes)
    if graph.facts is None or not any(bn.node.op_type in ("Add", "Sub") for bn in nodes):
        return nodes
    seen: set[str] | None = None

    def source(bn: PlanNode, known: object) -> str | None:
        nonlocal seen
        x = _zero_shift_source(graph, bn)
        if x is None:
            return None
        if seen is None:
            seen = _zero_sign_seen(graph, nodes)
        return None if bn.outputs[0] in seen else x

    return alias_noops(graph, source, outer_sources=True)


def drop_neutral_operands(graph: PlanGraph) -> list[PlanNode]:
    """Leave out each Mul, Div, Add, Sub, And, Or or Xor by a whole constant of neutral elements, and each Concat of
    one input (module docstring). Their readers read the varying input; where the output is a graph output, the node
    making that input writes it (:func:`~onnxcore.runtime.optimize.noops.alias_noops`, the one renaming)."""
    if graph.facts is None or not any(bn.node.op_type in _OPS for bn in graph.nodes):
        return list(graph.nodes)

    def source(bn: PlanNode, known: object) -> str | None:
        return _source(graph, bn) if bn.node.op_type in _OPS else None

    return alias_noops(graph, source, outer_sources=True)
