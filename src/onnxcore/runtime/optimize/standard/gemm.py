"""``MatMul(A, B) + C`` as ``Gemm(A, B, C)`` where the two compute the same values (issue 39).

Gemm (version 7 on, Clause 14.3) computes ``A @ B + C`` with ``C`` unidirectionally broadcast to ``[M, N]``; the
pair computes ``A @ B`` then adds ``C`` broadcast both ways. The two agree (up to the rounding of the one sum,
Clause 11.4) under these preconditions, each checked:

- ``A`` has rank 2 on every input (its rank known from the graph's types) and is not a constant; ``B`` is a
  constant 2-D float32 or float64 matrix (the types onnxruntime's Gemm runs);
- the product is read by the Add alone and is not a graph output;
- the Add's other input is a constant of the same element type whose broadcast to ``[M, N]`` needs no extent of
  the product to grow: a scalar, ``[N]``, ``[1]``, ``[1, N]``, ``[1, 1]`` (``[M, N]`` and ``[M, 1]`` only where
  ``M`` is a known extent equal to theirs), so the sum has the product's shape whatever ``M`` is;
- the model imports ai.onnx at version 7 or later (Gemm-6 and earlier had a ``broadcast`` attribute).
"""

from __future__ import annotations

import numpy as np

from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.standard.emit import is_standard, node_name, opset, shape, standard_node
from onnxcore.runtime.step import PlanNode

__all__ = ["matmul_add_to_gemm"]

_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _bias_fits(c: np.ndarray, m: int | str | None, n: int) -> bool:
    """Whether ``c`` broadcast to ``[m, n]`` gives ``[m, n]`` for every ``m`` the graph allows."""
    if c.ndim == 0:
        return True
    if c.ndim == 1:
        return c.shape[0] in (1, n)
    if c.ndim != 2 or c.shape[1] not in (1, n):
        return False
    return c.shape[0] == 1 or (isinstance(m, int) and c.shape[0] == m)


def _gemm_for(graph: PlanGraph, mm: PlanNode, add: PlanNode) -> PlanNode | None:
    a_name, b_name = mm.inputs
    y = mm.outputs[0]
    b = graph.const.get(b_name)
    a_shape = shape(graph, a_name)
    if not isinstance(b, np.ndarray) or b.dtype not in _TYPES or b.ndim != 2:
        return None
    if a_shape is None or len(a_shape) != 2 or a_name in graph.const:
        return None
    c_name = add.inputs[1] if add.inputs[0] == y else add.inputs[0]
    c = graph.const.get(c_name)
    if c_name == y or not isinstance(c, np.ndarray) or c.dtype != b.dtype or not _bias_fits(c, a_shape[0], b.shape[1]):
        return None
    return standard_node(graph, add, "Gemm", [a_name, b_name, c_name], list(add.outputs),
                         name=node_name((mm, add), f"Gemm_{add.outputs[0]}"))  # fmt: skip


def matmul_add_to_gemm(graph: PlanGraph) -> list[PlanNode]:
    """Each ``MatMul(A, B)`` followed by ``Add`` of a bias as one Gemm (module docstring: the preconditions)."""
    nodes = list(graph.nodes)
    version = opset(graph)
    if version is None or version < 7 or not any(bn.node.op_type == "MatMul" for bn in nodes):
        return nodes
    drop: set[int] = set()
    for k, mm in enumerate(nodes):
        if not is_standard(mm, "MatMul") or len(mm.inputs) != 2 or len(mm.outputs) != 1:
            continue
        y = mm.outputs[0]
        readers = graph.readers.get(y, [])
        if len(readers) != 1 or graph.uses.get(y) != 1:
            continue
        j = readers[0]
        add = nodes[j]
        if not is_standard(add, "Add") or len(add.inputs) != 2 or add.inputs[0] == add.inputs[1]:
            continue
        gemm = _gemm_for(graph, mm, add)
        if gemm is not None:
            nodes[j] = gemm
            drop.add(k)
    return [bn for i, bn in enumerate(nodes) if i not in drop]
