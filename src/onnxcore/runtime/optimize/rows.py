"""LayerNormalization-17 and RMSNormalization-23 with constant weights over the last axis by the accelerator's
compiled rows, called straight from the plan (Clause 8.2, per-node overhead): the matcher of the fused LayerNormRows
and RmsNormRows kernels (``onnxcore.kernels.fused.rows``, where the other row steps of a transformer layer are too).
The standard operators exporters write from opset 17 and 23 on thus take the steps their older spelled-out
patterns are fused into (``fuse_patterns``), and compute what their kernels compute (the same compiled call).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from onnxcore.kernels.fused.rows import STASH_OF, row_vector
from onnxcore.runtime.optimize._common import fused_node
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["fast_layer_norms"]


def fast_layer_norms(graph: PlanGraph) -> list[PlanNode]:
    """Give each ai.onnx LayerNormalization-17 node over the last axis with a constant 1-D float ``Scale`` (and
    ``B`` of its type and length) and ``stash_type`` that type the fused LayerNormRows kernel, and each
    RMSNormalization-23 node of that kind the fused RmsNormRows kernel."""
    nodes, const = list(graph.nodes), graph.const
    for j, bn in enumerate(nodes):
        node = bn.node
        if node.domain not in ("", "ai.onnx") or bn.call is None:
            continue
        if node.op_type == "RMSNormalization":
            step = _rms_norm(bn, const)
            if step is not None:
                nodes[j] = step
            continue
        if node.op_type != "LayerNormalization":
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
        # A node that does not name Mean and InvStdDev (exporters write Y alone): the step gives Y alone. (A named
        # one keeps its slots in the plan, read or not.)
        stats = any(bn.outputs[1:])
        nodes[j] = fused_node(bn, "LayerNormRows", list(bn.inputs), list(bn.outputs), const, kw=dict(bn.kw),
                              may_tuple=None if stats else False, epsilon=float(bn.kw.get("epsilon", 1e-5)),
                              kernel=bn.call, stats=stats)  # fmt: skip
    return nodes


def _rms_norm(bn: PlanNode, const: Mapping[str, Any]) -> PlanNode | None:
    """``bn`` (an ai.onnx RMSNormalization) as a RmsNormRows step when it is version 23 over the last axis with a
    constant, not empty 1-D float ``scale`` and ``stash_type`` the scale's type; else None."""
    if bn.since != 23 or len(bn.inputs) != 2 or bn.outer or len(bn.outputs) != 1:
        return None
    scale = const.get(bn.inputs[1])
    if not isinstance(scale, np.ndarray) or not row_vector(scale) or scale.shape[0] == 0:
        return None
    if int(bn.kw.get("stash_type", 1)) != STASH_OF[scale.dtype] or int(bn.kw.get("axis", -1)) != -1:
        return None
    return fused_node(bn, "RmsNormRows", list(bn.inputs), list(bn.outputs), const, kw=dict(bn.kw), may_tuple=None,
                      epsilon=float(bn.kw.get("epsilon", 1e-5)), kernel=bn.call)  # fmt: skip
