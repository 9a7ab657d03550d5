"""The plan graph the rewrites read and change: one set of indices for every rewrite (Clause 8.2).

A :class:`PlanGraph` holds the bound nodes of one plan while its rewrites run (:mod:`.pipeline`), the values the
same on every run (``const``), the names the plan must produce (``outputs``) and the constants the rewrites made
(``added``: folded values, fused weights). Its indices (producers, readers, use counts) are made once per state of
the node list and shared by every rewrite that reads them; a rewrite that changes the nodes hands the new list to
:meth:`PlanGraph.set_nodes`, which drops the indices of the old one. No rewrite builds an index of its own.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from onnxcore.runtime.step import PlanNode

__all__ = ["GraphFacts", "PlanGraph"]


@dataclass
class GraphFacts:
    """What a model-level rewrite knows of the graph beyond its nodes: the operator sets it imports (so that a
    node it makes binds at the model's versions, Clause 14.3), the model-local functions (which take precedence
    over an operator of the same name, Clause 8.4) and, from inference (Clause 9), the element type and shape of
    the values. A plan made by a session has none (the rewrites that need them do nothing there).

    Attributes:
        opsets: Imported version by canonical domain (``""`` for ai.onnx).
        functions: (domain, name) of every model-local function.
        elem_types: Element type (TensorProto.DataType) by value name, where known.
        shapes: Shape by value name, where the rank is known: an int extent, a dimension variable's name, or None.
    """

    opsets: dict[str, int] = field(default_factory=dict)
    functions: frozenset[tuple[str, str]] = frozenset()
    elem_types: dict[str, int] = field(default_factory=dict)
    shapes: dict[str, tuple[int | str | None, ...]] = field(default_factory=dict)


class PlanGraph:
    """The nodes of one plan and what the rewrites ask of them (module docstring).

    Attributes:
        nodes: The bound nodes, in evaluation order (replace through :meth:`set_nodes`).
        const: Values that are the same on every run, by name (constant initializers, values the caller guarantees,
            values folded or made by the rewrites).
        outputs: The names the plan must produce (never fused away as an intermediate).
        added: The values the rewrites made (folded values, fused weights), a part of ``const``.
        budget: Bytes of folded values constant folding may hold.
        sources: The names the graph reads without making them: its inputs and what it reads from an enclosing
            scope (Clause 5.4.3).
        facts: What a model-level rewrite knows beyond the nodes (:class:`GraphFacts`); None in a session's plan.
    """

    __slots__ = (
        "_last",
        "_producer",
        "_readers",
        "_uses",
        "added",
        "budget",
        "const",
        "facts",
        "nodes",
        "outputs",
        "sources",
    )

    def __init__(
        self,
        nodes: Sequence[PlanNode],
        const: Mapping[str, Any],
        outputs: Collection[str],
        *,
        added: Mapping[str, Any] | None = None,
        budget: int = 0,
        sources: Collection[str] = (),
        facts: GraphFacts | None = None,
    ) -> None:
        self.nodes = list(nodes)
        self.facts = facts
        self.sources = frozenset(sources)
        self.const: dict[str, Any] = dict(const)
        self.outputs = tuple(outputs)
        self.added: dict[str, Any] = dict(added or {})
        self.budget = budget
        self._uses: dict[str, int] | None = None
        self._producer: dict[str, int] | None = None
        self._readers: dict[str, list[int]] | None = None
        self._last: dict[str, int] | None = None

    def set_nodes(self, nodes: Sequence[PlanNode]) -> bool:
        """Make ``nodes`` the graph's nodes; whether that changed anything (a node replaced, added or left out)."""
        old = self.nodes
        changed = len(nodes) != len(old) or any(a is not b for a, b in zip(nodes, old))
        if changed:
            self.nodes = list(nodes)
            self._uses = self._producer = self._readers = self._last = None
        return changed

    def add_constant(self, name: str, value: Any) -> None:
        """A value a rewrite made (a fused weight, a folded value), the same on every run."""
        self.const[name] = value
        self.added[name] = value

    @property
    def uses(self) -> dict[str, int]:
        """Readers of each value (inputs and enclosing-scope reads, each occurrence); a graph output counts twice,
        so that it is never fused away as an intermediate."""
        if self._uses is None:
            uses: dict[str, int] = {}
            for bn in self.nodes:
                for n in (*bn.inputs, *bn.outer):
                    if n:
                        uses[n] = uses.get(n, 0) + 1
            for o in self.outputs:
                uses[o] = uses.get(o, 0) + 2
            self._uses = uses
        return self._uses

    @property
    def producer(self) -> dict[str, int]:
        """The index of the node making each value."""
        if self._producer is None:
            self._producer = {o: k for k, bn in enumerate(self.nodes) for o in bn.outputs if o}
        return self._producer

    @property
    def readers(self) -> dict[str, list[int]]:
        """The indices of the nodes reading each value as an input, in order (once per occurrence)."""
        if self._readers is None:
            readers: dict[str, list[int]] = {}
            for k, bn in enumerate(self.nodes):
                for n in bn.inputs:
                    if n:
                        readers.setdefault(n, []).append(k)
            self._readers = readers
        return self._readers

    @property
    def last_readers(self) -> dict[str, int]:
        """For each value some node reads as an input, the index of the last node reading it (its one reader, where
        the caller checked there is one)."""
        if self._last is None:
            self._last = {n: ks[-1] for n, ks in self.readers.items()}
        return self._last
