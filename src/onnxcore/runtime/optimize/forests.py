"""Tree-ensemble nodes that read one input, given one fused ``TreeEnsembles`` step (Clause 8.2; the kernel, and why
its outputs are the nodes' bit for bit, are in ``onnxcore.kernels.fused.forests``).

Nodes are joined when all of these hold (anything else is left as written):

- they are ai.onnx.ml ``TreeEnsembleRegressor`` nodes, or ``TreeEnsembleClassifier`` nodes (each kind joined with
  its own kind), bound to the built-in kernel prepared for them (a session's own kernel is left alone);
- they read the same value as their one input, and none has another node fused into it;
- they sum in one type (float32 and double weights are joined apart), and
  :func:`~onnxcore.kernels.fused.forests.joinable` admits them (a SUM aggregate, a bounded table); a node it would
  not admit (another aggregate) is left as written and the others joined.

The step takes the place of the first of them: every member reads a value made before it, and every value a member
makes is then made no later than before.
"""

from __future__ import annotations

from onnxcore.kernels.registry import prepared_function
from onnxcore.runtime.optimize._common import fused_node
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["join_forests"]

_OUTPUTS = {"TreeEnsembleRegressor": 1, "TreeEnsembleClassifier": 2}  # the formal outputs of each operator


def join_forests(graph: PlanGraph) -> list[PlanNode]:
    """Give each group of tree-ensemble nodes of one kind reading one input (module docstring) one
    ``TreeEnsembles`` step at the first node's place."""
    nodes = list(graph.nodes)
    groups: dict[tuple[str, str, str], list[int]] = {}
    for k, bn in enumerate(nodes):
        node = bn.node
        if node.domain != "ai.onnx.ml" or node.op_type not in _OUTPUTS or bn.call is None:
            continue
        if len(bn.inputs) != 1 or not bn.inputs[0] or bn.fused or bn.step_kernel or bn.outer:
            continue
        # (a prepared tree-ensemble node's function carries its parts: none for an aggregate other than SUM; read as
        # an attribute, so that the ML kernels need not be imported for a plan without them)
        parts = getattr(prepared_function(bn.call), "forest_parts", None)
        if len(bn.outputs) > _OUTPUTS[node.op_type] or parts is None:
            continue
        # (one group per type of sums: float32 and double weights are joined apart)
        groups.setdefault((node.op_type, bn.inputs[0], parts.acc_dtype.str), []).append(k)
    if all(len(ks) < 2 for ks in groups.values()):
        return nodes
    # Function-local on purpose: the tree-ensemble kernels (ML families, tens of milliseconds of imports) load only
    # for a plan that holds tree ensembles, as the kernel index loads every family (issue 42, item 3).
    from onnxcore.kernels.fused.forests import joinable

    replaced: dict[int, PlanNode] = {}
    taken: set[int] = set()
    for (op, x, _dt), ks in groups.items():
        steps = [prepared_function(c) for k in ks if (c := nodes[k].call) is not None]
        if not joinable(steps):
            continue
        count = _OUTPUTS[op]
        outputs = [o for k in ks for o in (*nodes[k].outputs, *[""] * (count - len(nodes[k].outputs)))]
        first = nodes[ks[0]]
        replaced[ks[0]] = fused_node(first, "TreeEnsembles", [x], outputs, graph.const,
                                     absorbed=[nodes[k] for k in ks[1:]], may_tuple=True, members=steps,
                                     counts=[count] * len(ks))  # fmt: skip
        taken.update(ks)
    return [replaced.get(j, bn) for j, bn in enumerate(nodes) if j in replaced or j not in taken]
