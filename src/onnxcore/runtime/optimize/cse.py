"""Common-subexpression elimination: a computation repeated is evaluated once (Clause 8.2).

A deterministic node that repeats an earlier one (the same kernel, inputs and attributes: :func:`cse_key`) is left
out and its outputs are read from the earlier node's: its readers read the earlier names instead; a name that must
stay (a graph output, a name a subgraph reads from this scope) becomes an alias of the earlier one
(``PlanGraph.aliases``, given the same slot when the plan lays slots out). It runs last in the pipeline, over the
nodes the other rewrites left, so repeats their fusions made identical merge too. Small constants are compared by
value, larger ones by name; a first input of known rank (a constant, an input whose rank the caller guarantees)
makes equal axes spelled differently one computation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from onnxcore.errors import OnnxCoreError
from onnxcore.kernels.registry import NO_FOLD
from onnxcore.kernels.shared import normalize_axes
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["cse_key", "input_token", "lone_operators", "merge_repeats"]


# The scalar types an attribute's value holds; a list of one of them is frozen whole.
_SCALARS = (int, float, str, bytes, bool)


def _freeze(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return ("nd", v.dtype.str, v.shape, v.tobytes()) if v.dtype != object else ("obj", id(v))
    if isinstance(v, list | tuple):
        # A list of one scalar type (a tree ensemble's node tables: 10^5 values) as one tuple, made at C speed: a
        # tuple per element cost 2 s of a 100-tree forest's session (issue 42, item 3). Its type stands beside it,
        # so [1, 2] and [1.0, 2.0] stay two keys as they are element by element.
        kinds = set(map(type, v))
        if len(kinds) == 1:
            kind = next(iter(kinds))
            if kind in _SCALARS:
                return ("seq", kind.__name__, tuple(v))
        return tuple(_freeze(x) for x in v)
    if isinstance(v, int | float | str | bytes | bool) or v is None:
        return (type(v).__name__, v)
    return ("id", id(v))


# Small constants are compared by value, so that two nodes reading equal constants (say two axes
# initializers holding [1]) count as the same computation; larger ones by identity (their name).
_SMALL_CONSTANT = 4096


def input_token(name: str, constants: Mapping[str, Any]) -> Any:
    """How an input takes part in a node's identity: its constant value when small, else its name ("" for an
    input left unsupplied)."""
    v = constants.get(name) if name else None
    if isinstance(v, np.ndarray) and v.size <= _SMALL_CONSTANT and v.dtype != object:
        return ("c", v.dtype.str, v.shape, v.tobytes())
    return name


# Operators whose axes name a set of axes of their first input: once that input's rank is known, [-1] and [2]
# of a rank-3 input, or [2, 1] and [1, 2], are one computation. Their axes are an attribute in the early
# versions and the second input later.
_AXES_SETS = frozenset(
    {
        "ReduceL1",
        "ReduceL2",
        "ReduceLogSum",
        "ReduceLogSumExp",
        "ReduceMax",
        "ReduceMean",
        "ReduceMin",
        "ReduceProd",
        "ReduceSum",
        "ReduceSumSquare",
    }
)

# Operators with one ``axis`` attribute counted on their first input's rank.
_ONE_AXIS = frozenset({"ArgMax", "ArgMin", "Hardmax", "LogSoftmax", "Softmax"})


def _axes_set(axes: Any, rank: int) -> tuple[int, ...] | None:
    """``axes`` as sorted non-negative axes of a rank-``rank`` input; None unless every axis is in range and
    none repeats (such a node is refused when it runs, and must stay distinct from a valid one)."""
    try:
        return tuple(sorted(normalize_axes(axes, rank))) or None
    except (OnnxCoreError, TypeError, ValueError):
        return None


def _canonical_axes(bn: PlanNode, ins: list[Any], attrs: dict[str, Any], rank: int) -> None:
    """Rewrites the axes of ``bn`` in its identity (``ins`` tokens, ``attrs``) to their canonical form."""
    op = bn.node.op_type
    if op in _ONE_AXIS and isinstance(attrs.get("axis"), int):
        axis = _axes_set([attrs["axis"]], rank)
        if axis is not None:
            attrs["axis"] = axis[0]
    elif op in _AXES_SETS:
        if "axes" in attrs:
            axes = _axes_set(attrs["axes"], rank)
            if axes is not None:
                attrs["axes"] = list(axes)
        elif len(ins) > 1 and isinstance(ins[1], tuple) and ins[1][0] == "c" and np.dtype(ins[1][1]).kind == "i":
            axes = _axes_set(np.frombuffer(ins[1][3], np.dtype(ins[1][1])), rank)
            if axes is not None:
                ins[1] = ("axes", axes)


def cse_key(bn: PlanNode, ins: list[Any], *, rank: int | None = None) -> tuple[Any, ...] | None:
    """The identity of a node's computation, or None when it must not be merged with another.

    ``ins`` are the inputs' tokens (:func:`input_token`); ``rank`` is the first input's rank when the plan
    knows it, which makes equal axes spelled differently one computation.
    """
    node = bn.node
    # What no folder evaluates (NO_FOLD: the random operators always, Clause 8.5; Dropout in training mode) is
    # not merged either.
    if bn.call is None or node.op_type in NO_FOLD or bn.outer:
        return None
    if any(a.g is not None or a.graphs for a in node.attribute):
        return None
    ins, kw = list(ins), dict(bn.kw)
    if rank is not None:
        _canonical_axes(bn, ins, kw, rank)
    try:
        attrs = tuple(sorted((k, _freeze(v)) for k, v in kw.items()))
        key = (bn.call, node.domain, node.op_type, tuple(ins), attrs)
        hash(key)
    except TypeError:
        return None
    return key


def lone_operators(nodes: Iterable[PlanNode]) -> set[tuple[str, str]]:
    """The operators (domain, type) only one of ``nodes`` has. A key names its operator, so such a node repeats
    nothing and its key is not made: freezing a forest's node tables cost 10 ms of a 100-tree session."""
    kinds = Counter((bn.node.domain, bn.node.op_type) for bn in nodes)
    return {kind for kind, n in kinds.items() if n == 1}


def merge_repeats(graph: PlanGraph) -> list[PlanNode]:
    """Leave out the nodes that repeat an earlier one (module docstring); rename reads, alias what must stay."""
    const, outs, outer = graph.const, set(graph.outputs), graph.outer_reads
    needed = graph.needed()
    canon: dict[str, str] = {}  # a name -> the earlier node's name its readers read instead

    def resolve(n: str) -> str:
        while n in canon:
            n = canon[n]
        return n

    seen: dict[tuple[Any, ...], PlanNode] = {}
    kept: list[PlanNode] = []
    lone = lone_operators(graph.nodes)
    for k, bn in enumerate(graph.nodes):
        ins = [resolve(n) if n else n for n in bn.inputs]
        if ins != bn.inputs:
            bn = bn.renamed(ins)
        # A node no output needs is left for the plan to drop: never the computation a repeat is merged into.
        key = None
        if needed[k] and (bn.node.domain, bn.node.op_type) not in lone:
            first = const.get(ins[0]) if ins and ins[0] else None
            first_rank = first.ndim if isinstance(first, np.ndarray) else graph.ranks.get(ins[0]) if ins else None
            key = cse_key(bn, [input_token(n, const) for n in ins], rank=first_rank)
        if key is not None:
            first = seen.get(key)
            if (
                first is not None
                and len(first.outputs) == len(bn.outputs)
                and all((a == "") == (b == "") for a, b in zip(first.outputs, bn.outputs))
            ):
                for a, b in zip(first.outputs, bn.outputs):
                    if a == b:
                        # Two nodes writing one name (an unchecked model breaking Clause 5.4.2, one definition per
                        # name): the repeat is that value already; an alias or rename of a name to itself would loop.
                        continue
                    if b and (b in outs or b in outer):
                        graph.aliases[b] = a
                    elif b:
                        canon[b] = a
                continue
            seen[key] = bn
        kept.append(bn)
    return kept
