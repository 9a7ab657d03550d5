"""Kernels prepared with their node's constant inputs (Clause 8.2): a kernel registered with ``prepare_constants``
(``KernelDef.prepare_constants``: com.microsoft's MatMulNBits, whose weight is dequantized once) is bound when the
session binds the node, before any constant is known; here, once the plan knows which inputs are constants (the
initializers, what folding made), the node's kernel is prepared again with them, once per plan node."""

from __future__ import annotations

from onnxcore.kernels.registry import lookup, prepared_call
from onnxcore.runtime.optimize._common import rebound
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["prepare_with_constants"]


def prepare_with_constants(graph: PlanGraph) -> list[PlanNode]:
    """Give each node bound to a process-wide kernel registered with ``prepare_constants`` (a session's own
    kernels are left as they are) and reading some constant the step its kernel prepares with those constants."""
    nodes, const = list(graph.nodes), graph.const
    for j, bn in enumerate(nodes):
        if bn.call is None or bn.step_kernel or bn.outer or not bn.since:
            continue
        kdef = lookup(bn.node.domain, bn.node.op_type, bn.since)
        if kdef is None or not kdef.prepare_constants or kdef.context or bn.call is not kdef.fn:
            continue
        constants = tuple(const.get(n) if n else None for n in bn.inputs)
        if all(c is None for c in constants):
            continue
        call = prepared_call(kdef, bn.kw, constants)
        if call is not kdef.fn:
            nodes[j] = rebound(bn, call, bn.kw, list(bn.inputs), list(bn.outputs))
    return nodes
