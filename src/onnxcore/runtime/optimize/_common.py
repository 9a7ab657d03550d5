"""Helpers shared by the plan-time rewrites: node copies, fused steps bound to their kernels, constant weights."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import OnnxCoreError
from onnxcore.kernels.fused import FUSED_DOMAIN, FUSED_VERSION
from onnxcore.kernels.fused.affine import per_channel_values
from onnxcore.kernels.registry import lookup
from onnxcore.runtime.step import PlanNode

__all__ = [
    "conv_weights",
    "fused_node",
    "fused_step",
    "fused_with",
    "is_relu",
    "per_channel_values",
    "rebound",
    "transposed",
    "unpadded",
]


def rebound(
    bn: PlanNode,
    call: Callable[..., Any],
    kw: dict[str, Any],
    inputs: list[str],
    outputs: list[str],
    *,
    absorbed: Sequence[PlanNode] = (),
) -> PlanNode:
    """A copy of ``bn`` (same node, index and version) running ``call`` from ``inputs`` to ``outputs``; the
    ``absorbed`` nodes (and those already fused into them) are recorded as fused into it, for error messages."""

    out = PlanNode(bn.index, bn.node, call, kw, bn.outer)
    out.inputs = inputs
    out.outputs = outputs
    out.since = bn.since
    out.may_tuple = bn.may_tuple
    out.fused = fused_with(bn, absorbed)
    out.step_kernel, out.step_attrs = bn.step_kernel, bn.step_attrs
    return out


def fused_step(op_type: str, constants: Sequence[Any] = (), **attributes: Any) -> Callable[..., Any]:
    """The prepared step of the fused kernel ``op_type`` (domain ``onnxcore.fused``, bound as any kernel of a domain
    without definitions, Clause 16.1) for these constant inputs and attributes: what the plan calls."""
    # The custom-domain rule (the greatest since_version not above the imported one) at version 1, the only one,
    # is the kernel registered for exactly 1: one dict lookup (a plan made per input shape binds many steps).
    kdef = lookup(FUSED_DOMAIN, op_type, FUSED_VERSION)
    if kdef is None or kdef.prepare is None or not kdef.prepare_constants:
        raise OnnxCoreError(f"{FUSED_DOMAIN}::{op_type}: no fused kernel registered with prepare_constants")
    # Prepared here directly, not through prepared_call's fallback to the kernel: a matcher hands a fused kernel only
    # what it takes, so a refusal is a defect to see, not a node to leave to run time.
    return kdef.prepare(tuple(constants), **attributes)


def fused_node(
    anchor: PlanNode,
    op_type: str,
    inputs: list[str],
    outputs: list[str],
    const: Mapping[str, Any],
    *,
    kw: dict[str, Any] | None = None,
    absorbed: Sequence[PlanNode] = (),
    may_tuple: bool | None = False,
    **attributes: Any,
) -> PlanNode:
    """``anchor`` (its node, index and version, for messages) bound to the fused kernel ``op_type`` from ``inputs``
    to ``outputs``: the kernel prepared with the constants among the inputs and ``attributes``, called by the plan
    with the inputs and ``kw``; the ``absorbed`` nodes are recorded as fused into it. ``may_tuple`` None keeps the
    anchor's."""
    call = fused_step(op_type, tuple(const.get(n) if n else None for n in inputs), **attributes)
    out = rebound(anchor, call, {} if kw is None else kw, inputs, outputs, absorbed=absorbed)
    out.step_kernel, out.step_attrs = op_type, attributes
    if may_tuple is not None:
        out.may_tuple = may_tuple
    return out


def fused_with(bn: PlanNode, absorbed: Sequence[PlanNode]) -> list[PlanNode]:
    """What ``bn`` has fused into it once the ``absorbed`` nodes join it, in graph order."""
    merged = {f.index: f for f in bn.fused}
    for a in absorbed:
        merged.update({f.index: f for f in (a, *a.fused) if f.index != bn.index})
    return [merged[k] for k in sorted(merged)]


def transposed(w: np.ndarray, tile: int = 256) -> np.ndarray:
    """``w.T`` as a new C-contiguous array; large matrices are copied tile by tile (numpy's plain
    transposing copy strides through memory: 3x slower on a 400 MB weight, measured)."""
    if w.size < 1 << 22:
        return np.ascontiguousarray(w.T)
    rows, cols = w.shape
    out = np.empty((cols, rows), dtype=w.dtype)
    for i in range(0, rows, tile):
        for j in range(0, cols, tile):
            out[j : j + tile, i : i + tile] = w[i : i + tile, j : j + tile].T
    return out


def is_relu(bn: PlanNode) -> bool:
    return bn.node.op_type == "Relu" and bn.node.domain in ("", "ai.onnx") and bn.call is not None


def conv_weights(conv: PlanNode, const: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray | None] | None:
    """The constant float weights and bias of a default-domain Conv with one output, else None."""
    cn = conv.node
    if cn.op_type != "Conv" or cn.domain not in ("", "ai.onnx") or conv.call is None or conv.outer:
        return None
    if len(conv.outputs) != 1 or not conv.outputs[0] or len(conv.inputs) < 2:
        return None
    w = const.get(conv.inputs[1])
    if not isinstance(w, np.ndarray) or w.dtype not in (np.float32, np.float64) or w.ndim < 3:
        return None
    bias_name = conv.inputs[2] if len(conv.inputs) > 2 else ""
    b = const.get(bias_name) if bias_name else None
    if bias_name and (not isinstance(b, np.ndarray) or b.dtype != w.dtype or b.size != w.shape[0]):
        return None
    return w, b


def unpadded(conv: PlanNode) -> bool:
    """Whether a Conv reads only its input's own elements (no padding), whatever the input's extents."""
    kw = conv.kw
    auto_pad = kw.get("auto_pad", "NOTSET")
    if auto_pad == "VALID":
        return True
    return auto_pad == "NOTSET" and not any(kw.get("pads") or ())
