"""One pass over a model building the indexes every rule reads (Clause 10).

Two traversals, both iterative so that no model can exhaust the Python stack (Clause 15.2):

* a generic walk over every embedded message, in pre-order, recording each message with its
  parent so that a readable location can be rendered on demand (Annex B rules and tensor rules
  read it by message class); it reads no ``raw_data`` and follows each message object once, so
  a code-built model that contains itself cannot loop;
* a walk over graphs: the top-level graph, the subgraphs held by node attributes, and the
  bodies of model-local functions, each a :class:`Scope` with its nodes bound to their operator
  definitions (Clause 14.3) or local functions (Clause 8.4), stopping at the nesting limit
  (Clause 15.4).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from onnxcore.defs.registry import canonical_domain
from onnxcore.limits import DEFAULT_LIMITS, Limits
from onnxcore.proto import MESSAGE_CLASSES, MESSAGE_SPECS
from onnxcore.proto.message import Message
from onnxcore.proto.messages import AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto

__all__ = ["Context", "Scope", "NodeRef", "Defs"]

# Messages whose location segment is worth qualifying with their name.
_NAMED = frozenset(
    {"NodeProto", "AttributeProto", "TensorProto", "ValueInfoProto", "FunctionProto", "StringStringEntryProto"}
)


def _child_plan() -> dict[type, tuple[tuple[str, bool], ...]]:
    plan: dict[type, tuple[tuple[str, bool], ...]] = {}
    for name, cls in MESSAGE_CLASSES.items():
        spec = MESSAGE_SPECS[name]
        plan[cls] = tuple((f.name, f.repeated) for f in spec.fields if f.kind == "message")
    return plan


_PLAN = _child_plan()


class Defs:
    """The operator definitions of :mod:`onnxcore.defs`, with lookups cached; absent if not built."""

    def __init__(self) -> None:
        try:
            from onnxcore import defs as mod
        except ImportError:  # the definitions are built by another part of the project
            mod = None  # type: ignore[assignment]
        get = getattr(mod, "get_schema", None)
        self.available: bool = get is not None
        self._mod: Any = mod
        self._schemas: dict[tuple[str, str, int], Any] = {}
        self._versions: dict[tuple[str, str], list[int]] = {}
        self._domains: frozenset[str] = frozenset()
        self._ranges: dict[str, tuple[int, int] | None] = {}
        if self.available:
            self._domains = frozenset(canonical_domain(d) for d in mod.known_domains())

    def is_known_domain(self, domain: str) -> bool:
        """Whether ``domain`` is one of the domains ONNX 1-2 defines."""
        return domain in self._domains

    def schema(self, op_type: str, version: int, domain: str) -> Any:
        """The definition a node binds to (Clause 14.3), or None."""
        key = (domain, op_type, version)
        try:
            return self._schemas[key]
        except KeyError:
            pass
        try:
            s = self._mod.get_schema(op_type, version, domain)
        except Exception:
            s = None
        self._schemas[key] = s
        return s

    def versions(self, op_type: str, domain: str) -> list[int]:
        """Every since_version of ``op_type`` in ``domain`` (empty if the domain never defined it)."""
        key = (domain, op_type)
        v = self._versions.get(key)
        if v is None:
            try:
                v = list(self._mod.schema_versions(op_type, domain))
            except Exception:
                v = []
            self._versions[key] = v
        return v

    def domain_range(self, domain: str) -> tuple[int, int] | None:
        """The (min, max) opset version ONNX 1-2 publishes for ``domain``."""
        if domain not in self._ranges:
            try:
                lo, hi = self._mod.domain_versions(domain)
                self._ranges[domain] = (int(lo), int(hi))
            except Exception:
                self._ranges[domain] = None
        return self._ranges[domain]


class NodeRef:
    """A node in its scope, bound to what it invokes.

    ``status`` is one of ``"schema"`` (bound to an operator definition), ``"function"`` (a
    model-local function), ``"custom"`` (a domain ONNX 1-2 does not define), ``"undeclared"``
    (its domain is not imported), ``"undefined"`` (the domain never defined the op),
    ``"not_in_version"`` (not yet defined at the imported version) or ``"nodefs"`` (the operator
    definitions are not available).
    """

    __slots__ = ("domain", "function", "index", "node", "schema", "scope", "status", "version")

    def __init__(
        self,
        node: NodeProto,
        index: int,
        scope: Scope,
        status: str = "nodefs",
        version: int = 0,
        schema: Any = None,
        function: FunctionProto | None = None,
    ) -> None:
        self.node = node
        self.index = index
        self.scope = scope
        self.domain = canonical_domain(node.domain)
        self.status = status
        self.version = version
        self.schema: Any = schema
        self.function = function

    @property
    def loc(self) -> str:
        """Readable location, e.g. ``graph/node[12] "conv1"``."""
        name = self.node.name
        base = f"{self.scope.loc}/node[{self.index}]"
        return f'{base} "{name}"' if name else base

    def label(self) -> str:
        """``op_type`` qualified by its domain, for messages."""
        d = self.node.domain
        return f"{d}::{self.node.op_type}" if d else self.node.op_type


class Scope:
    """A graph or a function body, with the names it defines.

    Attributes:
        kind: ``"main"``, ``"subgraph"`` or ``"function"``.
        graph: The graph (None for a function body).
        function: The function (None for a graph).
        loc: Location prefix of the scope.
        depth: Subgraph nesting depth (0 for the top-level graph and function bodies).
        parent: The enclosing scope of a subgraph.
        owner: The node whose attribute holds a subgraph.
        attr_name: The name of that attribute.
        nodes: The scope's nodes, bound.
        inputs, outputs: Names of the declared inputs and outputs.
        init_names: Names of the initializers (dense, then sparse).
        defs: First definition of each name: ``("input"|"initializer"|"node", index)``.
        opsets: Domain -> imported version in force for the scope's nodes.
    """

    __slots__ = (
        "_loc",
        "attr_name",
        "defs",
        "depth",
        "dup_defs",
        "function",
        "graph",
        "has_children",
        "init_names",
        "inputs",
        "kind",
        "nodes",
        "opsets",
        "outputs",
        "owner",
        "parent",
        "seg",
        "tin",
        "tout",
    )

    def __init__(
        self,
        kind: str,
        loc: str | None,
        *,
        graph: GraphProto | None = None,
        function: FunctionProto | None = None,
        depth: int = 0,
        parent: Scope | None = None,
        owner: NodeRef | None = None,
        attr_name: str = "",
        opsets: dict[str, int] | None = None,
    ) -> None:
        self.kind = kind
        self.graph = graph
        self.function = function
        self._loc: str | None = loc  # rendered on demand for subgraphs (deep nesting stays linear)
        self.seg = ""
        self.depth = depth
        self.parent = parent
        self.owner = owner
        self.attr_name = attr_name
        self.nodes: list[NodeRef] = []
        self.opsets: dict[str, int] = opsets or {}
        self.tin = 0  # pre-order number and the greatest one below it: ancestry in O(1)
        self.tout = 0
        self.has_children = False
        defs: dict[str, tuple[str, int]] = {}
        if graph is not None:
            self.inputs = [v.name for v in graph.input]
            self.outputs = [v.name for v in graph.output]
            self.init_names = [t.name for t in graph.initializer]
            self.init_names.extend(s.values.name if s.values is not None else "" for s in graph.sparse_initializer)
        elif function is not None:
            self.inputs = list(function.input)
            self.outputs = list(function.output)
            self.init_names = []
        else:
            self.inputs, self.outputs, self.init_names = [], [], []
        for i, n in enumerate(self.inputs):
            defs.setdefault(n, ("input", i))
        for i, n in enumerate(self.init_names):
            defs.setdefault(n, ("initializer", i))
        self.defs = defs
        self.dup_defs: list[tuple[NodeRef, int, str]] = []  # node outputs defined already

    @property
    def loc(self) -> str:
        """Readable location: ``graph``, ``graph/node[3] "loop"/body``, ``functions[0] "d:f"``."""
        if self._loc is None:
            assert self.owner is not None
            self._loc = f"{self.owner.loc}/{self.seg}"
        return self._loc

    def ancestors(self) -> Iterator[Scope]:
        """The enclosing scopes, innermost first."""
        p = self.parent
        while p is not None:
            yield p
            p = p.parent

    def function_scope(self) -> Scope | None:
        """The function body this scope is (or is nested in), if any."""
        s: Scope | None = self
        while s is not None:
            if s.kind == "function":
                return s
            s = s.parent
        return None


class Context:
    """Everything the rules read, built once per check."""

    def __init__(self, model: ModelProto, *, limits: Limits | None = None, full: bool = True) -> None:
        self.model = model
        self.limits = limits or DEFAULT_LIMITS
        self.full = full
        self.cache: dict[str, Any] = {}
        self.ir_version = int(model.ir_version)
        self.defs = Defs()
        # Generic walk.
        self.entries: list[tuple[Message, int, str, int]] = []
        self.by_class: dict[type, list[int]] = {}
        self.repeated_objects: list[int] = []
        self._walk_messages()
        # Operator sets and functions.
        self.opsets: dict[str, int] = {}
        for o in model.opset_import:
            self.opsets.setdefault(canonical_domain(o.domain), int(o.version))
        self.functions: dict[tuple[str, str, str], tuple[int, FunctionProto]] = {}
        for i, f in enumerate(model.functions):
            self.functions.setdefault((canonical_domain(f.domain), f.name, f.overload), (i, f))
        # Graph walk.
        self.scopes: list[Scope] = []
        self.too_deep: list[tuple[str, int]] = []
        self.graph_cycles: list[str] = []
        self.unusual: list[NodeRef] = []  # nodes not bound to a definition
        self.dup_node_names: list[tuple[NodeRef, int]] = []
        self.overloads: list[NodeRef] = []
        self.multi_attr: list[NodeRef] = []  # nodes with two or more attributes
        self.attr_refs: list[NodeRef] = []  # nodes with an attribute reference (ref_attr_name)
        self._walk_graphs()
        self._number_scopes()

    # ---- generic walk -------------------------------------------------------------------
    def _walk_messages(self) -> None:
        entries = self.entries
        by_class = self.by_class
        plan = _PLAN
        seen: set[int] = {id(self.model)}
        entries.append((self.model, -1, "", -1))
        by_class.setdefault(type(self.model), []).append(0)
        node_entries = by_class.setdefault(NodeProto, [])
        limit = self.limits.max_nesting_depth
        # (entry, subgraph depth): messages below the nesting limit are not visited (the graph
        # walk reports the refusal), so a hostile depth costs no more than the limit allows.
        stack = [(0, 0)]
        while stack:
            i, depth = stack.pop()
            msg = entries[i][0]
            fields = plan.get(type(msg), ())
            if not fields:
                continue
            pushed: list[tuple[int, int]] = []
            if type(msg) is GraphProto:
                # Nodes are most of a model: record them without a trip through the stack, and
                # descend only into those that hold messages. A node cannot enclose itself
                # except through a graph, which is guarded below.
                for k, n in enumerate(msg.node):
                    j = len(entries)
                    entries.append((n, i, "node", k))
                    node_entries.append(j)
                    if n.attribute or n.metadata_props or n.device_configurations:
                        pushed.append((j, depth))
                fields = fields[1:]  # ("node", True) is GraphProto's first message field
            sub_depth = depth + 1 if type(msg) is AttributeProto else depth
            if limit is not None and sub_depth > limit and type(msg) is AttributeProto:
                fields = tuple(f for f in fields if f[0] not in ("g", "graphs"))
            for fname, repeated in fields:
                v = getattr(msg, fname)
                if repeated:
                    if not v:
                        continue
                    for k, c in enumerate(v):
                        if id(c) in seen:
                            self.repeated_objects.append(len(entries))
                            entries.append((c, i, fname, k))
                            continue
                        seen.add(id(c))
                        j = len(entries)
                        entries.append((c, i, fname, k))
                        by_class.setdefault(type(c), []).append(j)
                        pushed.append((j, sub_depth))
                elif v is not None:
                    if id(v) in seen:
                        self.repeated_objects.append(len(entries))
                        entries.append((v, i, fname, -1))
                        continue
                    seen.add(id(v))
                    j = len(entries)
                    entries.append((v, i, fname, -1))
                    by_class.setdefault(type(v), []).append(j)
                    pushed.append((j, sub_depth))
            pushed.reverse()
            stack.extend(pushed)

    def of(self, cls: type) -> list[int]:
        """Indexes into :attr:`entries` of every message of class ``cls``, in pre-order."""
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

    # ---- graph walk ---------------------------------------------------------------------
    def _walk_graphs(self) -> None:
        model = self.model
        max_depth = self.limits.max_nesting_depth
        pending: list[Scope] = []
        if model.graph is not None:
            pending.append(Scope("main", "graph", graph=model.graph, opsets=self.opsets))
        for i, f in enumerate(model.functions):
            opsets = dict(self.opsets)
            for o in f.opset_import:
                # Clause 8.4: the versions are the model's; the function's own imports fill gaps.
                opsets.setdefault(canonical_domain(o.domain), int(o.version))
            loc = f'functions[{i}] "{f.domain}:{f.name}"'
            pending.append(Scope("function", loc, function=f, opsets=opsets))
        seen: set[int] = set()
        pending.reverse()
        bind_cache: dict[tuple[int, str, str, str], tuple[str, int, Any, FunctionProto | None]] = {}
        unusual = self.unusual
        while pending:
            scope = pending.pop()
            self.scopes.append(scope)
            body = scope.graph.node if scope.graph is not None else scope.function.node  # type: ignore[union-attr]
            children: list[Scope] = []
            defs = scope.defs
            dup_defs = scope.dup_defs
            names: dict[str, int] = {}
            nodes = scope.nodes
            opsets_id = id(scope.opsets)
            for idx, node in enumerate(body):
                key = (opsets_id, node.domain, node.op_type, node.overload)
                bound = bind_cache.get(key)
                if bound is None:
                    bound = bind_cache[key] = self._bind(NodeRef(node, idx, scope))
                ref = NodeRef(node, idx, scope, *bound)
                nodes.append(ref)
                if bound[0] != "schema":
                    unusual.append(ref)
                for k, o in enumerate(node.output):
                    if o:
                        if o in defs:
                            dup_defs.append((ref, k, o))
                        else:
                            defs[o] = ("node", idx)
                name = node.name
                if name:
                    if name in names:
                        self.dup_node_names.append((ref, names[name]))
                    else:
                        names[name] = idx
                if node.overload:
                    self.overloads.append(ref)
                attrs = node.attribute
                if not attrs:
                    continue
                if len(attrs) > 1:
                    self.multi_attr.append(ref)
                for attr in attrs:
                    if attr.ref_attr_name and (not self.attr_refs or self.attr_refs[-1] is not ref):
                        self.attr_refs.append(ref)
                    subs: list[tuple[str, GraphProto]] = []
                    if attr.g is not None:
                        subs.append((attr.name, attr.g))
                    for k, g in enumerate(attr.graphs):
                        subs.append((f"{attr.name}[{k}]", g))
                    for seg, g in subs:
                        depth = scope.depth + 1
                        if id(g) in seen or g is scope.graph:
                            if g is scope.graph or any(a.graph is g for a in scope.ancestors()):
                                self.graph_cycles.append(f"{ref.loc}/{seg}")
                            continue
                        if max_depth is not None and depth > max_depth:
                            self.too_deep.append((f"{ref.loc}/{seg}", depth))
                            continue
                        seen.add(id(g))
                        child = Scope(
                            "subgraph",
                            None,
                            graph=g,
                            depth=depth,
                            parent=scope,
                            owner=ref,
                            attr_name=attr.name,
                            opsets=scope.opsets,
                        )
                        child.seg = seg
                        children.append(child)
            children.reverse()
            pending.extend(children)

    def _number_scopes(self) -> None:
        for i, s in enumerate(self.scopes):
            s.tin = s.tout = i
            if s.parent is not None:
                s.parent.has_children = True
        for s in reversed(self.scopes):
            if s.parent is not None and s.tout > s.parent.tout:
                s.parent.tout = s.tout
        defining: dict[str, list[Scope]] = {}
        for s in self.scopes:
            if s.has_children:
                for name in s.defs:
                    defining.setdefault(name, []).append(s)
        self._defining = defining

    def lookup_outer(self, scope: Scope, name: str) -> tuple[Scope, tuple[str, int], int] | None:
        """The definition of ``name`` visible in ``scope`` from an enclosing graph (Clause 5.4.3).

        Returns ``(enclosing scope, its definition, index there of the node holding the subgraph
        on the way to scope, or -1 when the definition is not a node output)``, the innermost
        such scope, or None.
        """
        candidates = self._defining.get(name)
        if not candidates:
            return None
        best: Scope | None = None
        for c in candidates:
            if c.tin < scope.tin <= c.tout and (best is None or c.tin > best.tin):
                best = c  # pre-order: the innermost enclosing scope has the greatest number
        if best is None:
            return None
        d = best.defs[name]
        if d[0] != "node":
            return best, d, -1
        child = scope
        while child.parent is not best:
            assert child.parent is not None
            child = child.parent
        assert child.owner is not None
        return best, d, child.owner.index

    def _bind(self, ref: NodeRef) -> tuple[str, int, Any, FunctionProto | None]:
        """(status, imported version, schema, function) of a node; see :class:`NodeRef`."""
        node = ref.node
        dom = ref.domain
        fn = self.functions.get((dom, node.op_type, node.overload))
        if fn is not None:
            return "function", 0, None, fn[1]
        version = ref.scope.opsets.get(dom)
        if version is None:
            return "undeclared", 0, None, None
        defs = self.defs
        if not defs.available:
            return "nodefs", version, None, None
        if not defs.is_known_domain(dom):
            return "custom", version, None, None
        schema = defs.schema(node.op_type, version, dom)
        if schema is not None:
            return "schema", version, schema, None
        if defs.versions(node.op_type, dom):
            return "not_in_version", version, None, None
        return "undefined", version, None, None

    def groups(self) -> list[list[NodeRef]]:
        """Nodes bound to a definition, grouped by everything the signature rules look at.

        Two nodes of a group bind the same definition with the same input and output slots
        (supplied or empty) and the same attribute names and types, so a signature rule that
        passes for one passes for all: the rules check one node per group, and every node only
        of a group that fails (Clause 7.3.1).
        """
        cached = self.cache.get("groups")
        if cached is not None:
            return cached
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
                    id(ref.schema),
                    tuple(map(bool, ins)) if "" in ins else len(ins),
                    tuple(map(bool, outs)) if "" in outs else len(outs),
                    tuple((a.name, a.type, bool(a.ref_attr_name)) for a in attrs) if attrs else (),
                )
                g = groups.get(key)
                if g is None:
                    groups[key] = [ref]
                else:
                    g.append(ref)
        result = list(groups.values())
        self.cache["groups"] = result
        return result

    def all_nodes(self) -> Iterator[NodeRef]:
        """Every bound node of every scope."""
        for s in self.scopes:
            yield from s.nodes

    def main(self) -> Scope | None:
        """The scope of the top-level graph."""
        return self.scopes[0] if self.scopes and self.scopes[0].kind == "main" else None
