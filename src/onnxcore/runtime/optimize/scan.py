"""A ``Scan`` whose iterations are independent of one another, given the fused ``BatchedScan`` step (Clause 8.2;
the kernel and the argument that its values are the node's, bit for bit, are in ``onnxcore.kernels.fused.scan``).

A ``Scan`` node is batched when all of these hold (anything else is left as written):

- it is an ai.onnx ``Scan`` of version 9 or later (Scan-8's batch axis and ``sequence_lens`` are left alone) bound
  to its kernel, with its body's plan;
- every scan input is read forwards along axis 0 and every scan output is built forwards along axis 0 (the
  attributes absent, or 0 throughout);
- every state leaves the body as it came in: its body output is the body input itself or an ``Identity`` chain
  from it (a state that changes carries one iteration into the next);
- every node of the body is an ai.onnx elementwise operator of ``ELEMENTWISE`` or a sum-type reduction of
  ``REDUCTIONS`` whose axes are an attribute or a constant input, bound to the registered kernel, with no subgraph
  (a product, a shape operator or a control-flow node in the body leaves the Scan as written: their values are not
  proved the same for a batch);
- the body's inputs are not also its constants, and its outputs are made by its nodes, or are its inputs,
  constants or values of the enclosing scope.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from onnxcore.kernels.fused.scan import ELEMENTWISE, REDUCTIONS, BodyOp
from onnxcore.kernels.registry import lookup
from onnxcore.proto import GraphProto
from onnxcore.runtime.optimize._common import fused_node
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["batch_scans"]


def batch_scans(graph: PlanGraph) -> list[PlanNode]:
    """Give each ``Scan`` node whose iterations are independent (module docstring) the fused ``BatchedScan``
    step."""
    nodes = list(graph.nodes)
    for j, bn in enumerate(nodes):
        node = bn.node
        if node.op_type != "Scan" or node.domain not in ("", "ai.onnx") or bn.call is None or bn.step_kernel:
            continue
        attributes = _batched_program(bn)
        if attributes is not None:
            nodes[j] = fused_node(bn, "BatchedScan", list(bn.inputs), list(bn.outputs), graph.const, may_tuple=None,
                                  **attributes)  # fmt: skip
    return nodes


def _zeros(values: Any) -> bool:
    return values is None or all(int(v) == 0 for v in values)


def _batched_program(bn: PlanNode) -> dict[str, Any] | None:
    """The ``BatchedScan`` attributes for the Scan node ``bn``, or None when it is not batched."""
    kw = bn.kw
    body = kw.get("body")
    if bn.since < 9 or not isinstance(body, GraphProto):
        return None
    for name in ("scan_input_axes", "scan_input_directions", "scan_output_axes", "scan_output_directions"):
        if not _zeros(kw.get(name)):
            return None
    plan = getattr(bn.call, "subplans", {}).get(id(body))
    if plan is None:
        return None
    ir = plan.ir
    m = int(kw.get("num_scan_inputs", 0))
    n_state = len(bn.inputs) - m
    if m < 1 or n_state < 0 or len(ir.input_names) != len(bn.inputs) or any(not n for n in bn.inputs):
        return None
    if len(bn.outputs) != len(ir.output_names):
        return None
    if set(ir.input_names) & set(ir.inits) or len(set(ir.input_names)) != len(ir.input_names):
        return None
    if not set(ir.free_names) <= set(bn.outer):
        return None
    ops: list[BodyOp] = []
    made: dict[str, BodyOp] = {}
    for body_node in ir.nodes:
        op = _body_op(body_node, ir.inits)
        if op is None:
            return None
        ops.append(op)
        made[op.output] = op
    for i in range(n_state):
        name = ir.output_names[i]
        while name in made and made[name].op_type == "Identity":
            name = made[name].inputs[0]
        if name != ir.input_names[i]:
            return None  # a state that changes from one iteration to the next
    return {
        "n_state": n_state,
        "body_inputs": list(ir.input_names),
        "body_outputs": list(ir.output_names[n_state:]),
        "outer": list(bn.outer),
        "body_constants": dict(ir.inits),
        "ops": ops,
        "fallback": bn.call,
        "fallback_kw": dict(kw),
    }


def _body_op(bn: PlanNode, inits: Mapping[str, Any]) -> BodyOp | None:
    """A node of the body as a :class:`BodyOp`, or None when the batched pass does not take it."""
    node = bn.node
    op_type = node.op_type
    if node.domain not in ("", "ai.onnx") or bn.call is None or bn.outer or bn.since <= 0:
        return None
    if len(bn.outputs) != 1 or not bn.outputs[0] or (op_type not in ELEMENTWISE and op_type not in REDUCTIONS):
        return None
    kdef = lookup("", op_type, bn.since)
    # The registered kernel (or its preparation, an onnxcore object), not a session's own kernel for the operator.
    if kdef is None or not (bn.call is kdef.fn or type(bn.call).__module__.startswith("onnxcore.")):
        return None
    if op_type in ELEMENTWISE:
        return BodyOp(op_type, tuple(bn.inputs), bn.outputs[0], bn.call, dict(bn.kw))
    if bn.call is not kdef.fn or not bn.inputs or not bn.inputs[0]:
        return None
    axes: tuple[int, ...] | None = None
    if "axes" in bn.kw:
        axes = tuple(int(a) for a in bn.kw["axes"] or ())
    if len(bn.inputs) > 1 and bn.inputs[1]:
        value = inits.get(bn.inputs[1])
        if not isinstance(value, np.ndarray) or value.ndim > 1 or (value.size and value.dtype.kind not in "iu"):
            return None
        axes = tuple(int(a) for a in value.reshape(-1))
    if len(bn.inputs) > 2:
        return None
    return BodyOp(op_type, (bn.inputs[0],), bn.outputs[0], bn.call, dict(bn.kw), axes)
