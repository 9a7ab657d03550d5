"""One pass over a model building the indexes every rule reads (Clause 10).

Two traversals, both iterative so that no model can exhaust the Python stack (Clause 15.2):

* the generic walk of :mod:`onnxcore.proto.message_walk` over every embedded message, recording each
  message with its parent so that a readable location can be rendered on demand (Annex B rules
  and tensor rules read it by message class); it reads no ``raw_data`` and follows each message
  object once, so a code-built model that contains itself cannot loop;
* the bound model of :mod:`onnxcore.graph` (its scopes, every node bound to its operator definition or
  local function, Clauses 14.3 and 8.4, stopping at the nesting limit of Clause 15.4), made here or handed
  in by the caller, and shared with inference and the evaluator.
"""

from __future__ import annotations

import dataclasses
from functools import cached_property
from typing import Any

from onnxcore.graph.bound import BoundModel, NodeRef, Scope, bind
from onnxcore.infer import Inference, ShapeInference, infer_both
from onnxcore.kernels.registry import KernelSet
from onnxcore.limits import DEFAULT_LIMITS, Limits
from onnxcore.proto.message_walk import Entry, walk_messages
from onnxcore.proto.messages import ModelProto

__all__ = ["Context", "NodeRef", "Resolution", "Scope"]

# Messages whose location segment is worth qualifying with their name.
_NAMED = frozenset(
    {"NodeProto", "AttributeProto", "TensorProto", "ValueInfoProto", "FunctionProto", "StringStringEntryProto"}
)


@dataclasses.dataclass
class Resolution:
    """Name resolution of every scope, computed once and shared by the topology rules."""

    undefined: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    order: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    cycles: list[tuple[str, str]] = dataclasses.field(default_factory=list)


class Context:
    """Everything the rules read, built once per check.

    Attributes:
        base_dir: The directory external data references are resolved against (None: not resolved).
        resolution: The resolution of every use of every scope, once ``rules_graph.resolve`` made it.
        external: (malformed references, refused resolutions), once ``rules_tensor`` made them.
        fn_required: Model-local function (by id) -> the attributes a call must give (``rules_function``).
    """

    def __init__(
        self,
        model: ModelProto,
        *,
        limits: Limits | None = None,
        full: bool = True,
        bound: BoundModel | None = None,
        custom_ops: KernelSet | None = None,
    ) -> None:
        self.model = model
        self.custom_ops = custom_ops  # the kernels a session runs the model with: inference's folding sees them
        self.limits = limits or DEFAULT_LIMITS
        self.full = full
        self.base_dir: str | None = None
        self.resolution: Resolution | None = None
        self.external: tuple[list[tuple[str, str]], list[tuple[str, str]]] | None = None
        self.fn_required: dict[int, set[str]] = {}
        self._groups: list[list[NodeRef]] | None = None
        self.ir_version = int(model.ir_version)
        # Generic walk (proto.message_walk): every message with its parent, by class.
        self.entries: list[Entry] = []
        self.by_class: dict[type, list[int]] = {}
        self.repeated_objects: list[int] = []
        self._walk_messages()
        # The bound model (graph/): scopes, bindings and what the walk noticed, shared with inference.
        self.bound = bound if bound is not None else bind(model, limits=self.limits)
        b = self.bound
        self.defs = b.definitions
        self.opsets = b.opsets
        self.functions = b.functions
        self.scopes = b.scopes
        self.too_deep = b.too_deep
        self.graph_cycles = b.graph_cycles
        self.unusual = b.unusual
        self.dup_node_names = b.dup_node_names
        self.overloads = b.overloads
        self.multi_attr = b.multi_attr
        self.attr_refs = b.attr_refs
        self.lookup_outer = b.lookup_outer
        self.all_nodes = b.all_nodes
        self.main = b.main

    # ---- generic walk -------------------------------------------------------------------
    def _walk_messages(self) -> None:
        # Messages below the nesting limit are not visited (the graph walk reports the refusal).
        walk = walk_messages(self.model, unique=True, max_nesting=self.limits.max_nesting_depth)
        self.entries = walk.entries
        self.by_class = walk.by_class
        self.repeated_objects = walk.repeated

    def of(self, cls: type) -> list[int]:
        """Indexes into :attr:`entries` of every message of class ``cls``, in entry order."""
        return self.by_class.get(cls, [])

    def path(self, i: int) -> str:
        """Readable location of entry ``i``, e.g. ``graph/initializer[3] "w"``.

        The spelling is that of :mod:`onnxcore.infer`: a subgraph is its node's location followed
        by the attribute name (``graph/node[3] "loop"/body``, ``.../branches[1]``), a function body
        is ``functions[0] "domain:name"``.
        """
        chain: list[int] = []
        entries = self.entries
        while i > 0:
            chain.append(i)
            i = entries[i][1]
        chain.reverse()
        segs: list[str] = []
        for j in chain:
            msg, parent, field, k = entries[j]
            spec_name = msg._SPEC.name
            if spec_name == "GraphProto" and field in ("g", "graphs") and parent > 0:
                attr = entries[parent][0]
                segs[-1] = attr.name if k < 0 else f"{attr.name}[{k}]"  # type: ignore[attr-defined]
                continue
            s = field if k < 0 else f"{field}[{k}]"
            if spec_name == "FunctionProto" and parent == 0:
                s = f'{s} "{msg.domain}:{msg.name}"'  # type: ignore[attr-defined]
            elif spec_name in _NAMED:
                name = getattr(msg, "name", None) or getattr(msg, "key", None)
                if name:
                    s = f'{s} "{name}"'
            elif spec_name == "OperatorSetIdProto" and msg.domain:  # type: ignore[attr-defined]
                s = f'{s} "{msg.domain}"'  # type: ignore[attr-defined]
            segs.append(s)
        return "/".join(segs) or "model"

    def parent_of(self, i: int) -> int:
        """Entry index of the parent of entry ``i`` (-1 for the model)."""
        return self.entries[i][1]

    def groups(self) -> list[list[NodeRef]]:
        """Nodes bound to a definition, grouped by everything the signature rules look at.

        Two nodes of a group bind the same definition with the same input and output slots
        (supplied or empty) and the same attribute names and types, so a signature rule that
        passes for one passes for all: the rules check one node per group, and every node only
        of a group that fails (Clause 7.3.1).
        """
        if self._groups is not None:
            return self._groups
        groups: dict[tuple[Any, ...], list[NodeRef]] = {}
        for s in self.scopes:
            for ref in s.nodes:
                if ref.status != "schema":
                    continue
                node = ref.node
                attrs = node.attribute
                ins = node.input
                outs = node.output
                key = (
                    ref.schema,  # hashed and compared by identity (an OpSchema defines neither): no id() call
                    tuple(map(bool, ins)) if "" in ins else len(ins),
                    tuple(map(bool, outs)) if "" in outs else len(outs),
                    tuple((a.name, a.type, bool(a.ref_attr_name)) for a in attrs) if attrs else (),
                )
                g = groups.get(key)
                if g is None:
                    groups[key] = [ref]
                else:
                    g.append(ref)
        result = self._groups = list(groups.values())
        return result

    # ---- inference (Clause 9), on the same bound model ----------------------------------------
    @cached_property
    def _inferred(self) -> tuple[Inference, ShapeInference] | None:
        # Not run on a model the validator refuses for its nesting (Clause 15.4) or whose subgraphs contain
        # themselves, nor on one that holds a graph object twice (only a model built in code can share one: it
        # would be inferred once per reference, exponentially in the depth of sharing).
        if self.too_deep or self.graph_cycles or self.repeated_objects:
            return None
        return infer_both(self.model, limits=self.limits, bound=self.bound, custom_ops=self.custom_ops)

    @property
    def inference(self) -> Inference | None:
        """The type inference of the model (Clause 9), on :attr:`bound` and under :attr:`limits`, computed once
        with :attr:`shapes` by one walk; None when not run (a model refused for its nesting, or whose graphs
        contain themselves or are shared: such models get no type or shape checks)."""
        r = self._inferred
        return None if r is None else r[0]

    @property
    def shapes(self) -> ShapeInference | None:
        """The shape inference of the model, from the walk that gives :attr:`inference`; None when not run."""
        r = self._inferred
        return None if r is None else r[1]
