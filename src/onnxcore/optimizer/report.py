"""What ``onnxcore.optimize`` did to a model: counts before and after, the passes that fired, the proof."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from onnxcore.proto import GraphProto, ModelProto, NodeProto

__all__ = ["OptimizeReport", "op_counts"]


def _count(nodes: list[NodeProto], counts: Counter[str]) -> None:
    for node in nodes:
        key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"
        counts[key] += 1
        for a in node.attribute:
            for g in ([a.g] if a.g is not None else []) + list(a.graphs):
                _count(list(g.node), counts)


def op_counts(model: ModelProto) -> dict[str, int]:
    """Nodes per operator type (``domain::op_type`` outside the ONNX domain), subgraphs and function bodies
    included, sorted by type."""
    counts: Counter[str] = Counter()
    g: GraphProto | None = model.graph
    if g is not None:
        _count(list(g.node), counts)
    for fn in model.functions:
        _count(list(fn.node), counts)
    return dict(sorted(counts.items()))


@dataclass
class OptimizeReport:
    """The report of one :func:`onnxcore.optimize` call.

    Attributes:
        ops_before: Nodes per operator type of the given model (subgraphs and functions included).
        ops_after: The same of the result.
        nodes_before: Nodes of the given model, in all.
        nodes_after: Nodes of the result, in all.
        size_before: Bytes of the given model serialized with its external data.
        size_after: The same of the result.
        fired: Pass name -> how many times it changed a graph of the model.
        verified: Whether the result was evaluated against the model and agreed (False with ``verify=False``).
        max_error: The largest absolute difference found between the two models' outputs.
        verify_shapes: The input shapes each verification run used (input name -> shape).
        failed_pass: The pass verification blamed (the result was then not returned), else None.
        annotations_kept: Inferred shapes written into the result (``value_info`` entries and output shapes).
        annotations_dropped: Inferred shapes left out: beyond the bytes the rewrites saved, or of values onnx's own
            inference computes otherwise (:mod:`onnxcore.optimizer.annotations`).
    """

    ops_before: dict[str, int] = field(default_factory=dict)
    ops_after: dict[str, int] = field(default_factory=dict)
    nodes_before: int = 0
    nodes_after: int = 0
    size_before: int = 0
    size_after: int = 0
    fired: dict[str, int] = field(default_factory=dict)
    verified: bool = False
    max_error: float = 0.0
    verify_shapes: list[dict[str, tuple[int, ...]]] = field(default_factory=list)
    failed_pass: str | None = None
    annotations_kept: int = 0
    annotations_dropped: int = 0

    def to_json(self) -> dict[str, Any]:
        """The report as a dict of plain values (what ``onnxcore optimize --json`` prints)."""
        return {
            "ops_before": dict(self.ops_before),
            "ops_after": dict(self.ops_after),
            "nodes_before": self.nodes_before,
            "nodes_after": self.nodes_after,
            "size_before": self.size_before,
            "size_after": self.size_after,
            "fired": dict(self.fired),
            "verified": self.verified,
            "max_error": self.max_error,
            "verify_shapes": [{k: list(v) for k, v in s.items()} for s in self.verify_shapes],
            "failed_pass": self.failed_pass,
            "annotations_kept": self.annotations_kept,
            "annotations_dropped": self.annotations_dropped,
        }

    def to_text(self) -> str:
        """The report as lines of text (what ``onnxcore optimize`` prints)."""
        lines = [
            f"nodes: {self.nodes_before} -> {self.nodes_after}",
            f"size:  {self.size_before} -> {self.size_after} bytes",
        ]
        fired = ", ".join(f"{k} x{v}" for k, v in self.fired.items()) or "none"
        lines.append(f"passes fired: {fired}")
        lines.append(f"shape annotations: {self.annotations_kept} kept, {self.annotations_dropped} left out")
        if self.verified:
            shapes = "; ".join(", ".join(f"{k}={list(v)}" for k, v in s.items()) or "no inputs"
                               for s in self.verify_shapes)  # fmt: skip
            n = len(self.verify_shapes)
            lines.append(f"verified on {n} input sets ({shapes}); largest error {self.max_error:.3g}")
        else:
            lines.append("not verified")
        if self.failed_pass is not None:
            lines.append(f"failed pass: {self.failed_pass}")
        ops = sorted(set(self.ops_before) | set(self.ops_after))
        width = max((len(o) for o in ops), default=0)
        lines.append("operators (before -> after):")
        for op in ops:
            a, b = self.ops_before.get(op, 0), self.ops_after.get(op, 0)
            lines.append(f"  {op:<{width}}  {a:>6} -> {b:<6}" + ("" if a == b else f" ({b - a:+d})"))
        return "\n".join(lines)
