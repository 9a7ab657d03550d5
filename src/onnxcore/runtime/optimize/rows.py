"""LayerNormalization with constant weights over the last axis by the accelerator's compiled rows, called straight
from the plan (Clause 8.2, per-node overhead): the matcher of the fused LayerNormRows kernel
(``onnxcore.kernels.fused.rows``, where the other row steps of a transformer layer are too).
"""

from __future__ import annotations

import numpy as np

from onnxcore.kernels.fused.rows import STASH_OF, row_vector
from onnxcore.runtime.optimize._common import fused_node
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["fast_layer_norms"]


def fast_layer_norms(graph: PlanGraph) -> list[PlanNode]:
    """Give each ai.onnx LayerNormalization-17 node over the last axis with a constant 1-D float ``Scale`` (and
    ``B`` of its type and length) and ``stash_type`` that type the fused LayerNormRows kernel."""
    nodes, const = list(graph.nodes), graph.const
    for j, bn in enumerate(nodes):
        node = bn.node
        if node.op_type != "LayerNormalization" or node.domain not in ("", "ai.onnx") or bn.call is None:
            continue
        if bn.since != 17 or not 2 <= len(bn.inputs) <= 3 or bn.outer:
            continue
        scale = const.get(bn.inputs[1])
        bias = const.get(bn.inputs[2]) if len(bn.inputs) == 3 and bn.inputs[2] else None
        if not isinstance(scale, np.ndarray) or not row_vector(scale) or scale.shape[0] == 0:
            continue
        if len(bn.inputs) == 3 and bn.inputs[2]:
            if not (isinstance(bias, np.ndarray) and row_vector(bias, scale.dtype) and bias.shape == scale.shape):
                continue
        if int(bn.kw.get("stash_type", 1)) != STASH_OF[scale.dtype] or int(bn.kw.get("axis", -1)) != -1:
            continue
        nodes[j] = fused_node(bn, "LayerNormRows", list(bn.inputs), list(bn.outputs), const, kw=dict(bn.kw),
                              may_tuple=None, epsilon=float(bn.kw.get("epsilon", 1e-5)), kernel=bn.call)  # fmt: skip
    return nodes
