"""Nodes that give back their input unchanged, as aliases in the plan (Clause 8.2, per-node overhead).

Exporters write steps that compute nothing: ``Identity`` (every exporter names its outputs through one), ``Cast``
to the element type the value already has, ``Mul``/``Div`` by a constant 1, ``Sub`` of a constant +0 and ``Add``
of a constant -0 (onnxmltools scales LightGBM's probabilities by 1 and casts its int64 labels to int64). Each costs
a step on every run, a few microseconds that a one-row model notices. Here such a node is left out and the value
it would copy is read in its place: its readers read its input instead, or, when its output is a graph output,
the node that made its input writes that output directly.

A node is left out only where its result is its input bit for bit, whatever the input's values: ``x * 1``,
``x / 1``, ``x - (+0)`` and ``x + (-0)`` are ``x`` for every float (NaN and -0 included) and every integer, while
``x + (+0)`` is not (``-0 + 0 = +0``) and is kept. The constant must be a single element of the input's own element
type and must not grow the input's shape by broadcasting (a 0-d constant, or one whose rank the input's is known to
reach). The element type and rank of the input are read from what the plan knows before running: constants, and
the outputs of the nodes whose types follow from their attributes and input types alone (:data:`_SAME`,
:data:`_BOOL`, ``Cast``, the ai.onnx.ml classifiers and regressors). Where they are not known, the node stays.

A value that is a graph output is never made the alias of another graph output (two outputs would be one array), nor
is a graph input or a constant handed out as a graph output; names read by subgraphs from the enclosing scope are
never renamed. ``run(..., intermediates=True)`` runs the graph as written (the plan does not call this pass).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["Known", "alias_noops", "drop_noops", "elem_dtype", "noop_source"]

# ONNX element type -> numpy dtype (the types whose Cast a model may write onto a value of the same type).
_ELEM: dict[int, np.dtype[Any]] = {
    1: np.dtype(np.float32),
    2: np.dtype(np.uint8),
    3: np.dtype(np.int8),
    4: np.dtype(np.uint16),
    5: np.dtype(np.int16),
    6: np.dtype(np.int32),
    7: np.dtype(np.int64),
    9: np.dtype(np.bool_),
    10: np.dtype(np.float16),
    11: np.dtype(np.float64),
    12: np.dtype(np.uint32),
    13: np.dtype(np.uint64),
}
_F32 = np.dtype(np.float32)
_I64 = np.dtype(np.int64)

# Default-domain operators whose output has the element type of their first input and, when every input's rank is
# known, the largest of those ranks (elementwise, with numpy broadcasting).
_SAME = frozenset(
    ("Abs", "Add", "Ceil", "Div", "Exp", "Floor", "Identity", "Log", "Max", "Min", "Mul", "Neg", "Reciprocal",
     "Relu", "Sigmoid", "Sign", "Sqrt", "Sub", "Sum", "Tanh")
)  # fmt: skip
# Default-domain operators whose output is bool, elementwise over their inputs.
_BOOL = frozenset(("And", "Equal", "Greater", "GreaterOrEqual", "IsInf", "IsNaN", "Less", "LessOrEqual", "Not", "Or",
                   "Xor"))  # fmt: skip
_ML_CLASSIFIERS = {"TreeEnsembleClassifier": "classlabels_int64s", "SVMClassifier": "classlabels_ints",
                   "LinearClassifier": "classlabels_ints"}  # fmt: skip
_ML_REGRESSORS = frozenset(("TreeEnsembleRegressor", "SVMRegressor", "LinearRegressor"))
_DEFAULT = ("", "ai.onnx")

Known = tuple[np.dtype[Any], int | None]  # element type, rank (None: unknown)


def _output_types(bn: PlanNode, known: Mapping[str, Known]) -> list[Known | None]:
    """The element type and rank of each output of ``bn`` where they follow from what is known, else None."""
    node = bn.node
    op = node.op_type
    n_out = len(bn.outputs)
    ins = [known.get(n) if n else None for n in bn.inputs]
    if node.domain == "ai.onnx.ml":
        if op in _ML_CLASSIFIERS and n_out >= 1:
            ints = bn.kw.get(_ML_CLASSIFIERS[op])
            strings = bn.kw.get("classlabels_strings")
            label: Known | None = (_I64, 1) if ints and not strings else None
            return [label, (_F32, 2)][:n_out]
        if op in _ML_REGRESSORS:
            scores: list[Known | None] = [(_F32, 2)]
            return scores[:n_out]
        return [None] * n_out
    if node.domain not in _DEFAULT or not ins:
        return [None] * n_out
    if op == "Cast":  # the target type, whatever the input's; its rank where the input's is known
        to = bn.kw.get("to")
        dtype = _ELEM.get(to) if isinstance(to, int) else None
        first = ins[0]
        return [None if dtype is None else (dtype, None if first is None else first[1])] + [None] * (n_out - 1)
    if any(t is None for t in ins):
        return [None] * n_out
    ranks = [t[1] for t in ins if t is not None]
    rank = None if any(r is None for r in ranks) else max(r for r in ranks if r is not None)
    if op in _BOOL:
        return [(np.dtype(np.bool_), rank)] + [None] * (n_out - 1)
    if op in _SAME:
        first = ins[0]
        if first is None or any(t is not None and t[0] != first[0] for t in ins):
            return [None] * n_out
        return [(first[0], rank)] + [None] * (n_out - 1)
    return [None] * n_out


def _neutral(c: Any, x: Known, op: str, second: bool) -> bool:
    """Whether ``c`` (a constant operand, the second one when ``second``) leaves the other operand ``x`` unchanged
    bit for bit under ``op``: one element of ``x``'s own type that does not grow its shape, and 1 for Mul/Div, +0
    for Sub (``x - c``), -0 for Add (an integer 0 either way)."""
    if not isinstance(c, np.ndarray) or c.size != 1 or c.dtype != x[0] or c.dtype.kind not in "fiu":
        return False
    if c.ndim and (x[1] is None or c.ndim > x[1]):
        return False
    v = c.reshape(())[()]
    if op in ("Mul", "Div"):
        return bool(v == 1) and (op == "Mul" or second)
    if v != 0 or (op == "Sub" and not second):
        return False
    if c.dtype.kind != "f":
        return True
    negative = bool(np.signbit(v))
    return negative if op == "Add" else not negative


def noop_source(bn: PlanNode, const: Mapping[str, Any], known: Mapping[str, Known]) -> str | None:
    """The input whose value ``bn``'s single output always equals bit for bit, or None."""
    node = bn.node
    if node.domain not in _DEFAULT or bn.call is None or bn.outer or len(bn.outputs) != 1 or not bn.outputs[0]:
        return None
    op = node.op_type
    ins = bn.inputs
    if op == "Identity" and len(ins) == 1 and ins[0]:
        return ins[0]
    if op == "Cast" and len(ins) == 1 and ins[0]:
        to = bn.kw.get("to")
        x = known.get(ins[0])
        return ins[0] if isinstance(to, int) and x is not None and _ELEM.get(to) == x[0] else None
    if op in ("Mul", "Div", "Add", "Sub") and len(ins) == 2 and all(ins) and bn.since >= 7:
        for j in (0, 1):
            x = known.get(ins[j])
            c = const.get(ins[1 - j])
            if x is not None and ins[j] not in const and _neutral(c, x, op, second=j == 0):
                return ins[j]
    return None


def elem_dtype(elem: int) -> np.dtype[Any] | None:
    """The numpy dtype of an ONNX element type whose Cast a model may write onto a value of that type, or None."""
    return _ELEM.get(elem)


def drop_noops(graph: PlanGraph) -> list[PlanNode]:
    """Leave out the nodes whose output is their input (module docstring); rename reads and writes to match."""
    return alias_noops(graph, lambda bn, known: noop_source(bn, graph.const, known))


Source = Callable[[PlanNode, Mapping[str, Known]], "str | None"]
"""Which input a node's single (used) output always equals bit for bit, given the element types and ranks known so
far; None when it is not a no-op."""


def alias_noops(
    graph: PlanGraph, source: Source, known: Mapping[str, Known] | None = None, *, outer_sources: bool = False
) -> list[PlanNode]:
    """Leave out the nodes ``source`` names an input for, as aliases of that input (module docstring), starting from
    ``known`` element types and ranks besides the constants' (a model's inferred types); rename reads and writes to
    match. The one renaming of the plan's :func:`drop_noops` and of the model optimizer's no-op removal.

    With ``outer_sources`` a node whose input a subgraph also reads is left out too where its readers can read that
    input instead (its output not a graph output): the model optimizer's case, where subgraphs read by name."""
    nodes, const, outputs = list(graph.nodes), graph.const, graph.outputs
    outs = set(outputs)
    # The graph's indices: which names a node makes (a graph input or a constant has no producer), which names a
    # subgraph reads from this scope (never renamed).
    producer = graph.producer
    outer = graph.outer_reads
    types: dict[str, Known] = dict(known or {})
    types.update((n, (v.dtype, v.ndim)) for n, v in const.items() if isinstance(v, np.ndarray))
    canon: dict[str, str] = {}  # a name -> the name its value is read (or written) under instead

    def resolve(n: str) -> str:
        while n in canon:
            n = canon[n]
        return n

    dropped: set[int] = set()
    for k, bn in enumerate(nodes):
        x = source(bn, types)
        for o, t in zip(bn.outputs, _output_types(bn, types)):
            if o and t is not None and o not in types:
                types[o] = t
        if x is None:
            continue
        y = bn.outputs[0]
        xr = resolve(x)
        if y in outer or (xr in outer and (not outer_sources or y in outs)):
            continue
        if y not in outs:
            canon[y] = xr
        elif xr not in outs and xr in producer:
            # The node that made x writes the graph output y instead. (A name resolve() gives is never one that
            # was renamed, so "made by a node" is the graph's producer index, read before any renaming.)
            canon[xr] = y
        else:
            continue
        dropped.add(k)
    if not dropped:
        return nodes
    kept: list[PlanNode] = []
    for k, bn in enumerate(nodes):
        if k in dropped:
            continue
        ins = [resolve(n) if n else n for n in bn.inputs]
        outs_k = [resolve(o) if o else o for o in bn.outputs]
        if ins != bn.inputs or outs_k != bn.outputs:
            bn = bn.renamed(ins, outs_k)
        kept.append(bn)
    return kept
