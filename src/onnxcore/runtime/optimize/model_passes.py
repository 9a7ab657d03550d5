"""The model rewrites of ``onnxcore.optimize``: one pipeline of :class:`Rewrite` (the plan's contract), each a switch.

Every rewrite keeps what the graph computes (Clause 8.2) for every input the graph admits, dimension variables of
any extent included; each requires and ensures :data:`MODEL_CONDITIONS` (the names read are made, every node a
standard operator). In order:

- ``fold_constants``: :func:`.model_fold.fold_within_budget`, the plan's folding within the file budget;
- ``drop_noops``: :func:`.model_noops.drop_model_noops`, the plan's no-ops and those the shapes prove;
- ``eliminate_common``: a node computing what an earlier node computes (same operator, attributes and inputs; small
  constants compared by value, :func:`.cse.cse_key`) is left out, its readers reading the earlier node's outputs;
- ``merge_initializers``: initializers of equal type, shape and contents are read under one name;
- ``drop_dead_nodes``: nodes no graph output depends on (Clause 8);
- then the structural rewrites, written as standard operators.

Two more switches act where the graph is written back (:mod:`onnxcore.runtime.rewrite_model`):
``drop_unused_initializers`` and ``drop_unused_inputs`` (the latter only with the caller's consent).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from onnxcore.runtime.optimize.cse import cse_key, lone_operators
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.model_fold import fold_within_budget
from onnxcore.runtime.optimize.model_graph import MODEL_CONDITIONS
from onnxcore.runtime.optimize.model_noops import drop_model_noops
from onnxcore.runtime.optimize.pipeline import Rewrite
from onnxcore.runtime.optimize.standard import STANDARD_REWRITES
from onnxcore.runtime.step import PlanNode

__all__ = [
    "MODEL_PIPELINE",
    "MODEL_REWRITE_NAMES",
    "WRITE_BACK_SWITCHES",
    "drop_dead_nodes",
    "eliminate_common",
    "merge_initializers",
    "model_rewrite",
]

# Constants up to this many elements take part in a node's identity by value (two axes initializers holding [1]).
_SMALL_CONSTANT = 4096


def _renamed(bn: PlanNode, canon: dict[str, str]) -> PlanNode:
    """``bn`` reading ``canon[n]`` for each input ``n`` renamed (a copy; ``bn`` itself when none is)."""
    ins = [canon.get(n, n) if n else n for n in bn.inputs]
    return bn if ins == bn.inputs else bn.renamed(ins)


def _token(name: str, const: dict[str, Any]) -> Any:
    v = const.get(name)
    if isinstance(v, np.ndarray) and v.size <= _SMALL_CONSTANT and v.dtype != object:
        return ("c", v.dtype.str, v.shape, v.tobytes())
    return ("n", name)


def eliminate_common(graph: PlanGraph) -> list[PlanNode]:
    """Leave out each node computing what an earlier one computes (module docstring)."""
    protected = set(graph.outputs) | {n for bn in graph.nodes for n in bn.outer}
    seen: dict[tuple[Any, ...], PlanNode] = {}
    canon: dict[str, str] = {}
    out: list[PlanNode] = []
    lone = lone_operators(graph.nodes)
    for bn in graph.nodes:
        bn = _renamed(bn, canon)
        if (bn.node.domain, bn.node.op_type) in lone:
            out.append(bn)
            continue
        key = cse_key(bn, [_token(n, graph.const) if n else "" for n in bn.inputs])
        if key is not None:
            key = (*key, len(bn.outputs))
            first = seen.get(key)
            if (
                first is not None
                and not any(o in protected for o in bn.outputs if o)
                and all(not o or f for o, f in zip(bn.outputs, first.outputs))
            ):
                for o, f in zip(bn.outputs, first.outputs):
                    if o:
                        canon[o] = f
                continue
            seen.setdefault(key, bn)
        out.append(bn)
    return out


def drop_dead_nodes(graph: PlanGraph) -> list[PlanNode]:
    """Leave out the nodes no graph output depends on, through inputs or enclosing-scope reads (Clause 8)."""
    needed = set(graph.outputs)
    keep = [False] * len(graph.nodes)
    for k in range(len(graph.nodes) - 1, -1, -1):
        bn = graph.nodes[k]
        if any(o in needed for o in bn.outputs if o):
            keep[k] = True
            needed.update(n for n in (*bn.inputs, *bn.outer) if n)
    return [bn for bn, kept in zip(graph.nodes, keep) if kept]


_SAMPLE = 4096


def _octets(v: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(v).reshape(-1).view(np.uint8)


def _sample(v: np.ndarray) -> bytes:
    """The first few thousand bytes of a tensor's contents: one touch of a memory-mapped weight (the kernel maps a
    large folio around it, up to megabytes, so one place and not several)."""
    return _octets(v)[:_SAMPLE].tobytes()


def merge_initializers(graph: PlanGraph) -> list[PlanNode]:
    """Read initializers of equal element type, shape and contents under one name (the first in graph order of
    reading); an initializer that is a graph output or read by a subgraph keeps its name."""
    protected = set(graph.outputs) | {n for bn in graph.nodes for n in bn.outer}
    groups: dict[tuple[str, tuple[int, ...]], list[str]] = {}
    order: list[str] = []
    for bn in graph.nodes:
        for n in bn.inputs:
            if n and n in graph.const and n not in protected and n not in order:
                order.append(n)
    for n in order:
        v = graph.const[n]
        if isinstance(v, np.ndarray) and v.dtype != object:
            groups.setdefault((v.dtype.str, v.shape), []).append(n)
    canon: dict[str, str] = {}
    for names in groups.values():
        if len(names) < 2:
            continue
        # Contents are compared only where type and shape collide, and read whole only where their first bytes agree
        # too (the layers of a transformer share shapes: their weights in an external file are not read for this).
        by_sample: dict[bytes, list[str]] = {}
        for n in names:
            by_sample.setdefault(_sample(graph.const[n]), []).append(n)
        for same in by_sample.values():
            if len(same) < 2:
                continue
            # Here, not at the top: 3 ms of every session's imports, for initializers whose first bytes collide.
            import hashlib

            by_digest: dict[bytes, str] = {}
            for n in same:
                v = _octets(graph.const[n])
                first = by_digest.setdefault(hashlib.sha256(v.data).digest(), n)
                if first != n and np.array_equal(_octets(graph.const[first]), v):
                    canon[n] = first
    if not canon:
        return graph.nodes
    return [_renamed(bn, canon) for bn in graph.nodes]


def model_rewrite(name: str, run: Callable[[PlanGraph], list[PlanNode]]) -> Rewrite:
    """A model rewrite: the plan's contract, requiring and ensuring :data:`MODEL_CONDITIONS`."""
    return Rewrite(name, run, 1, requires=MODEL_CONDITIONS, ensures=MODEL_CONDITIONS)


# The structural rewrites (BatchNormalization folding, MatMul + Add -> Gemm, Transpose/Reshape merging, exporters'
# patterns as LayerNormalization/Gelu/...), a tuple of Rewrite written as standard operators, go here: adding them
# is this one line (``_STANDARD = STANDARD_REWRITES``, imported from ``onnxcore.runtime.optimize.standard``).
_STANDARD: tuple[Rewrite, ...] = STANDARD_REWRITES

MODEL_PIPELINE: tuple[Rewrite, ...] = (
    model_rewrite("fold_constants", fold_within_budget),
    model_rewrite("drop_noops", drop_model_noops),
    model_rewrite("eliminate_common", eliminate_common),
    model_rewrite("merge_initializers", merge_initializers),
    model_rewrite("drop_dead_nodes", drop_dead_nodes),
    *_STANDARD,
)
"""The model rewrites, in the order :func:`onnxcore.runtime.rewrite_model.rewrite_model` runs them (repeated until
none changes the model)."""

WRITE_BACK_SWITCHES = ("drop_unused_initializers", "drop_unused_inputs")
"""Passes applied as the graphs are written back (switched like the rewrites)."""

MODEL_REWRITE_NAMES: tuple[str, ...] = (*(r.name for r in MODEL_PIPELINE), *WRITE_BACK_SWITCHES)
"""Every pass's name, in order: what ``disabled`` may name."""
