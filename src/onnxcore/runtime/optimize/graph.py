"""The plan graph the rewrites read and change: one set of indices for every rewrite (Clause 8.2).

A :class:`PlanGraph` holds the bound nodes of one plan while its rewrites run (:mod:`.pipeline`), the values the
same on every run (``const``), the names the plan must produce (``outputs``), the constants the rewrites made
(``added``: folded values, fused weights) and the names a rewrite made another name's alias (``aliases``). Its
indices (producers, readers, use counts, enclosing-scope reads) are made once per state of the node list and shared
by every rewrite that reads them; a rewrite that changes the nodes hands the new list to
:meth:`PlanGraph.set_nodes`, which drops the indices of the old one. No rewrite builds an index of its own.

Why the indices are rebuilt rather than edited in place: measured, rebuilding costs nothing that matters. On the
50,000-node chain of ``benchmarks/bench_check.py`` the pipeline makes 6 sets of indices in about 0.4 s, 8-9% of its
4.3-4.8 s (the session about 8-10 s in all); on the light zoo's DenseNet-121, Inception v2 and ResNet-50, 8-11 sets
take 0.8-6 ms, at most 3.6% and mostly under 1% of a 90-300 ms pipeline (AMD EPYC, one thread, 3 runs; each
index's first build per state timed by wrapping the properties). A rewrite that fires hands over a whole new node
list anyway (the matchers copy what they keep), so edit operations keeping producers and readers current would
save at most those fractions, for the cost of every matcher keeping them right.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from operator import is_not
from typing import Any

from onnxcore.external.spill import spill_constant
from onnxcore.runtime.step import PlanNode

__all__ = ["GraphFacts", "PlanGraph", "live_nodes"]


def live_nodes(nodes: Sequence[PlanNode], outputs: Collection[str], aliases: Mapping[str, str]) -> list[bool]:
    """For each node, whether some output in ``outputs`` depends on it (through its inputs or, for a node with
    subgraphs, the enclosing-scope values they capture, ``outer``); a name that is an alias needs its target."""

    def need(names: Collection[str]) -> None:
        for n in names:
            while n and n not in needed:  # (a name met before had its aliases followed then; no cycle can hold it)
                needed.add(n)
                n = aliases.get(n, "")

    needed: set[str] = set()
    need(outputs)
    live = [False] * len(nodes)
    for k in range(len(nodes) - 1, -1, -1):
        bn = nodes[k]
        if any(o in needed for o in bn.outputs if o):
            live[k] = True
            need(bn.inputs)
            need(bn.outer)
    return live


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
        ranks: Ranks of inputs the caller guarantees (a session checks every feed's rank).
        aliases: Names that are another name's value (a repeat merged by common-subexpression elimination whose
            name must stay: a graph output, a name a subgraph reads): the plan gives the alias its target's slot.
        facts: What a model-level rewrite knows beyond the nodes (:class:`GraphFacts`); None in a session's plan.
    """

    __slots__ = (
        "_last",
        "_outer",
        "_producer",
        "_readers",
        "_uses",
        "added",
        "aliases",
        "budget",
        "const",
        "facts",
        "nodes",
        "outputs",
        "ranks",
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
        ranks: Mapping[str, int] | None = None,
        facts: GraphFacts | None = None,
    ) -> None:
        self.nodes = list(nodes)
        self.facts = facts
        self.sources = frozenset(sources)
        self.const: dict[str, Any] = dict(const)
        self.outputs = tuple(outputs)
        self.added: dict[str, Any] = dict(added or {})
        self.budget = budget
        self.ranks: dict[str, int] = dict(ranks or {})
        self.aliases: dict[str, str] = {}
        self._outer: frozenset[str] | None = None
        self._uses: dict[str, int] | None = None
        self._producer: dict[str, int] | None = None
        self._readers: dict[str, list[int]] | None = None
        self._last: dict[str, int] | None = None

    def set_nodes(self, nodes: Sequence[PlanNode]) -> bool:
        """Make ``nodes`` the graph's nodes; whether that changed anything (a node replaced, added or left out)."""
        old = self.nodes
        changed = len(nodes) != len(old) or any(map(is_not, nodes, old))  # one C loop: 23 passes of 50,000 nodes
        if changed:
            self.nodes = list(nodes)
            self._uses = self._producer = self._readers = self._last = self._outer = None
        return changed

    def needed(self) -> list[bool]:
        """For each node, whether some output of the graph depends on it (:func:`live_nodes`)."""
        return live_nodes(self.nodes, self.outputs, self.aliases)

    def resolve(self, name: str) -> str:
        """The name whose value ``name`` is (itself unless it is an alias)."""
        while name in self.aliases:
            name = self.aliases[name]
        return name

    def add_constant(self, name: str, value: Any) -> None:
        """A value a rewrite made (a fused weight, a folded value), the same on every run."""
        value = spill_constant(value)  # a large one goes to the optimizer's spill file (lean memory only)
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
                if o in self.aliases:  # the value is its target's
                    t = self.resolve(o)
                    uses[t] = uses.get(t, 0) + 2
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

    @property
    def outer_reads(self) -> frozenset[str]:
        """The names some node's subgraphs read from this scope (never renamed: the subgraph reads them by name)."""
        if self._outer is None:
            self._outer = frozenset(n for bn in self.nodes for n in bn.outer)
        return self._outer
