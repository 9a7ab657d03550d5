"""The plan graph of a model being optimized (``onnxcore.optimize``): what the model rewrites know besides a plan's.

A model rewrite is a :class:`~onnxcore.runtime.optimize.pipeline.Rewrite` like a plan's (one contract): it reads and
changes a :class:`ModelGraph`, a :class:`~onnxcore.runtime.optimize.graph.PlanGraph` that also holds what inference
tells of each value (element type and shape, dimension variables kept: Clause 9), how many bytes folding may still
add to the file, and the domains the model itself writes. Its result is written back as standard ONNX nodes, so a
model rewrite ensures :data:`STANDARD` (no fused step of ``onnxcore.fused``, no node of a domain the model did not
write, such as ``com.microsoft``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from onnxcore.kernels.fused import FUSED_DOMAIN
from onnxcore.runtime.optimize.graph import GraphFacts, PlanGraph
from onnxcore.runtime.optimize.noops import Known
from onnxcore.runtime.optimize.pipeline import CLOSED, Condition
from onnxcore.runtime.step import PlanNode

__all__ = ["STANDARD", "STANDARD_DOMAINS", "ModelGraph", "Shape"]

Shape = tuple[int | str | None, ...]
"""A value's shape as inference tells it: an extent, a dimension variable's name, or None (unknown)."""

STANDARD_DOMAINS = frozenset(("", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training"))
"""The domains ONNX defines (Clause 14): what a model rewrite may write, besides the domains the model writes."""


class ModelGraph(PlanGraph):
    """A :class:`PlanGraph` of one graph (or function body) of a model being optimized (module docstring).

    Attributes:
        known: Element type and rank of the values whose type inference tells (Clause 9), by name.
        shapes: Their shapes where inference tells them, dimension variables by name (Clause 6.5.2).
        budget_box: One number shared by every graph of the model: the bytes constant folding may still add to
            the file (the ``fold_growth`` budget; :attr:`growth`, :meth:`spend`).
        domains: The domains the model's own nodes are in (what the result may keep).
    """

    __slots__ = ("budget_box", "domains", "known", "shapes")

    def __init__(
        self,
        nodes: Sequence[PlanNode],
        const: Mapping[str, Any],
        outputs: Collection[str],
        *,
        budget: int,
        sources: Collection[str],
        known: Mapping[str, Known],
        shapes: Mapping[str, Shape],
        budget_box: list[int],
        domains: Collection[str],
        facts: GraphFacts | None = None,
    ) -> None:
        super().__init__(nodes, const, outputs, budget=budget, sources=sources, facts=facts)
        self.known = dict(known)
        self.shapes = dict(shapes)
        self.budget_box = budget_box
        self.domains = frozenset(domains)

    @property
    def growth(self) -> int:
        """Bytes folding may still add to the file (shared by every graph of the model)."""
        return self.budget_box[0]

    def spend(self, n: int) -> None:
        """Record ``n`` bytes added to the file by folding (negative: saved)."""
        self.budget_box[0] -= n


def _standard(graph: PlanGraph) -> bool:
    allowed = STANDARD_DOMAINS | (graph.domains if isinstance(graph, ModelGraph) else frozenset())
    return all(not bn.step_kernel and bn.node.domain not in (FUSED_DOMAIN,) and bn.node.domain in allowed
               for bn in graph.nodes)  # fmt: skip


STANDARD = Condition("every node a standard operator (or of a domain the model writes), none a fused step", _standard)
"""What every model rewrite ensures: the result can be written as the model's own operators (``onnxcore.optimize``
never writes ``com.microsoft`` or ``onnxcore.fused`` nodes the model did not have)."""

MODEL_CONDITIONS: tuple[Condition, ...] = (CLOSED, STANDARD)
"""What a model rewrite requires and ensures (nodes may be unbound: an operator without a kernel stays as written)."""
