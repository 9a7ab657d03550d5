"""Helpers shared by the plan-time rewrites: node copies, reader counts, constant weights, in-place Relu."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.runtime.step import PlanNode

__all__ = [
    "InPlaceRelu",
    "conv_weights",
    "fused_with",
    "is_relu",
    "per_channel_values",
    "rebound",
    "transposed",
    "unpadded",
    "use_counts",
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


def use_counts(nodes: Sequence[PlanNode], outputs: Sequence[str]) -> dict[str, int]:
    """Readers of each value; a graph output counts twice, so it is never fused away as an intermediate."""
    uses: dict[str, int] = {}
    for bn in nodes:
        for n in (*bn.inputs, *bn.outer):
            if n:
                uses[n] = uses.get(n, 0) + 1
    for o in outputs:
        uses[o] = uses.get(o, 0) + 2
    return uses


def last_readers(nodes: Sequence[PlanNode]) -> dict[str, int]:
    """For each value some node reads, the index of the last node reading it (the one reader where a value has
    one, as the fusions that use this require)."""
    reader: dict[str, int] = {}
    for k, bn in enumerate(nodes):
        for n in bn.inputs:
            if n:
                reader[n] = k
    return reader


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


def per_channel_values(c: np.ndarray, dtype: np.dtype[Any], m: int, rank: int) -> np.ndarray | None:
    """``c`` as ``m`` float64 values when it broadcasts against ``(N, m, *spatial)`` along axis 1 only."""
    if c.dtype != dtype or c.ndim > rank:
        return None
    shape = (1,) * (rank - c.ndim) + c.shape
    if any(d != 1 for i, d in enumerate(shape) if i != 1) or shape[1] not in (1, m):
        return None
    return np.broadcast_to(c.astype(np.float64).reshape(-1), (m,))


def unpadded(conv: PlanNode) -> bool:
    """Whether a Conv reads only its input's own elements (no padding), whatever the input's extents."""
    kw = conv.kw
    auto_pad = kw.get("auto_pad", "NOTSET")
    if auto_pad == "VALID":
        return True
    return auto_pad == "NOTSET" and not any(kw.get("pads") or ())


class InPlaceRelu:
    """A kernel (Conv, Gemm, Add, ...) followed by Relu applied in place on its fresh output (one allocation less)."""

    __slots__ = ("call",)

    def __init__(self, call: Callable[..., Any]) -> None:
        self.call = call

    def __call__(self, *args: Any, **kw: Any) -> Any:
        y = self.call(*args, **kw)
        if y.flags.writeable:
            return np.maximum(y, 0, out=y)
        return np.maximum(y, 0)
