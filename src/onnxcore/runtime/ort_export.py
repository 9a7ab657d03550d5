"""``SessionOptions.optimized_model_filepath``: the model a session runs, written as a standard ONNX model.

For now that model is the loaded one with its constants folded and the nodes no output needs removed (Clause 8.2:
a node whose inputs are all constants is evaluated once; Clause 8: only the nodes the outputs depend on are
evaluated). The folding is the plan's own (:func:`onnxcore.runtime.optimize.fold.fold_nodes` over the bound
nodes of the main graph), so the written model computes what the session computes. Plan-time fusions are not
written: they are steps of the evaluator, not operators of ONNX. The written model is validated before it is
saved.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from onnxcore.errors import ValidationError
from onnxcore.io import save
from onnxcore.kernels.folding import FOLD_BUDGET_BYTES
from onnxcore.proto import ModelProto
from onnxcore.proto.message import copy_message
from onnxcore.runtime.optimize.fold import fold_nodes
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.plan import GraphIR
from onnxcore.types import from_array
from onnxcore.validate import Finding, check

__all__ = ["optimized_model", "write_optimized_model"]


def optimized_model(
    model: ModelProto, ir: GraphIR, tolerate: Callable[[Finding], bool] | None = None, *, optimize: bool = True
) -> ModelProto:
    """``model`` with its main graph's constants folded and its dead nodes removed.

    Args:
        model: The model as loaded.
        ir: The session's bound main graph of ``model`` (its nodes in graph order, its initializers).
        tolerate: Error findings the session ran the model despite (they stay in the written model).
        optimize: False: every node as written (the session evaluates them so at ``ORT_DISABLE_ALL``, and
            onnxruntime writes its unoptimised model then).

    Raises:
        ValidationError: the result does not conform (a defect of this function; nothing is written).
    """
    graph = model.graph
    assert graph is not None
    inputs = [vi.name for vi in graph.input]
    outputs = [vi.name for vi in graph.output]
    folded: set[int] = set()
    values: dict[str, Any] = {}
    if optimize:
        # An input's initializer is only its default (7.2): not a constant.
        const = {n: v for n, v in ir.inits.items() if n not in inputs}
        folded, values = fold_nodes(PlanGraph(ir.nodes, const, outputs, budget=FOLD_BUDGET_BYTES))
    # Only tensors become initializers; a node whose folded result is a sequence or a map stays a node.
    folded = {k for k in folded if all(not o or isinstance(values.get(o), np.ndarray) for o in ir.nodes[k].outputs)}
    needed = set(outputs)
    kept: list[int] = []
    for k in range(len(ir.nodes) - 1, -1, -1):
        bn = ir.nodes[k]
        if k in folded or (optimize and not any(o and o in needed for o in bn.outputs)):
            continue
        kept.append(k)
        needed.update(n for n in (*bn.inputs, *bn.outer) if n)
    kept.reverse()
    out = copy_message(model)
    g = out.graph
    assert g is not None
    g.node = [copy_message(ir.nodes[k].node) for k in kept]
    produced = {o for k in kept for o in ir.nodes[k].outputs if o}
    wanted = (needed | set(inputs)) - produced
    if not optimize:
        wanted.update(t.name for t in graph.initializer)
    initializers = []
    for t in graph.initializer:
        if t.name in wanted and t.name not in values:
            initializers.append(copy_message(t))
    by_name = {t.name for t in initializers}
    for name, value in values.items():
        if name in wanted and name not in by_name and isinstance(value, np.ndarray):
            initializers.append(from_array(value, name))
    g.initializer = initializers
    g.sparse_initializer = [copy_message(s) for s in graph.sparse_initializer if _sparse_name(s) in wanted]
    known = produced | wanted
    g.value_info = [copy_message(vi) for vi in graph.value_info if vi.name in known]
    refused = [f for f in check(out).errors if tolerate is None or not tolerate(f)]
    if refused:
        raise ValidationError(f"the optimised model does not conform: {refused[0]}")
    return out


def _sparse_name(s: Any) -> str:
    values = getattr(s, "values", None)
    return str(getattr(values, "name", "") or "")


def write_optimized_model(
    model: ModelProto,
    ir: GraphIR,
    path: str | os.PathLike[str],
    tolerate: Callable[[Finding], bool] | None = None,
    *,
    optimize: bool = True,
) -> None:
    """Write :func:`optimized_model` of ``model`` to ``path``.

    Raises:
        ValidationError: as :func:`optimized_model`.
        OSError: the file cannot be written.
    """
    save(optimized_model(model, ir, tolerate, optimize=optimize), path)
