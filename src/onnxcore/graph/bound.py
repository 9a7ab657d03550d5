"""The bound model: every graph, subgraph and function body of a model as a scope, every node bound once.

:func:`bind` walks a model's graphs once, iteratively (no model can exhaust the Python stack, Clause 15.2):
the top-level graph, the subgraphs held by node attributes, and the bodies of model-local functions, each a
:class:`Scope`; every node is bound to what it invokes (a :class:`NodeRef`) by one precedence rule. The
validator, shape and type inference and the evaluator all read the same :class:`BoundModel`; none walks or
binds a model on its own.

NodeBinding (Clause 14.3, 8.4), in this order -- the one precedence rule of the package:

1. a **model-local function** with the node's (domain, op_type, overload) -- it wins over an operator
   definition of the same name, and over any kernel: the model states what the operator means for it, and
   Clause 8.4 identifies a function by that triple alone (our position, docs/conformance.md);
2. the node's domain is **not imported** by the scope: ``undeclared``;
3. a domain that ONNX 1-2 does not define: ``custom`` (Clause 16.1; an evaluator may still have a kernel) --
   except onnxruntime's ``com.microsoft``, whose operators onnxruntime defines bind as in 4 to its
   definitions (an operator it does not define there stays ``custom``);
4. the **operator definition** with the greatest ``since_version`` not above the imported version:
   ``schema``; failing that, onnxruntime's extension of the ONNX domain (``defs.extension_schema``:
   ``SimplifiedLayerNormalization``, ``LayerNormalization``-1...), also ``schema`` with the definition's
   ``origin`` ``"onnxruntime"``; ``not_in_version`` when the operator is only defined later, ``undefined``
   when never.

Nesting deeper than ``Limits.max_nesting_depth`` is not entered: it is recorded in :attr:`BoundModel.too_deep`
and every consumer refuses it with the same error code (Clause 15.4).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from onnxcore.defs import binding as defs_binding
from onnxcore.defs.binding import canonical_domain
from onnxcore.defs.opschema import OpSchema
from onnxcore.limits import DEFAULT_LIMITS, Limits
from onnxcore.proto.bridge import OnnxMessage, as_message, is_onnx_message
from onnxcore.proto.messages import FunctionProto, GraphProto, ModelProto, NodeProto

__all__ = [
    "BoundModel",
    "Definitions",
    "NodeRef",
    "Scope",
    "bind",
    "body_opsets",
    "definition_binding",
    "function_location",
    "function_opsets",
    "model_argument",
    "node_location",
]

FunctionKey = tuple[str, str, str]
"""(canonical domain, name, overload): how Clause 8.4 identifies a function."""

NodeBinding = tuple[str, str, int, "OpSchema | None", "FunctionProto | None"]
"""(canonical domain, status, imported version, schema, function): what :meth:`BoundModel.binding` gives."""


def node_location(scope_loc: str, index: int, name: str) -> str:
    """The one spelling of a node's location: ``graph/node[3] "name"`` (the name only when it has one)."""
    base = f"{scope_loc}/node[{index}]"
    return f'{base} "{name}"' if name else base


def function_location(index: int, fn: FunctionProto) -> str:
    """The location of a model-local function's body: ``functions[0] "domain:name"``."""
    return f'functions[{index}] "{fn.domain}:{fn.name}"'


class Definitions:
    """The operator definitions of :mod:`onnxcore.defs`, with the lookups binding makes cached."""

    __slots__ = ("_contrib", "_domains", "_extensions", "_ranges", "_schemas", "_versions")

    def __init__(self) -> None:
        self._schemas: dict[tuple[str, str, int], OpSchema | None] = {}
        self._extensions: dict[tuple[str, str, int], OpSchema | None] = {}
        self._versions: dict[tuple[str, str], list[int]] = {}
        self._domains = frozenset(canonical_domain(d) for d in defs_binding.known_domains())
        self._contrib = frozenset(defs_binding.contrib_domains())
        self._ranges: dict[str, tuple[int, int] | None] = {}

    def is_known_domain(self, domain: str) -> bool:
        """Whether ``domain`` (canonical) is one of the domains ONNX 1-2 defines."""
        return domain in self._domains

    def is_contrib_domain(self, domain: str) -> bool:
        """Whether ``domain`` is one onnxruntime defines besides ONNX's (``com.microsoft``)."""
        return domain in self._contrib

    def extension(self, op_type: str, version: int, domain: str) -> OpSchema | None:
        """onnxruntime's extension definition of ``op_type`` in an ONNX domain, bound at ``version``, or None."""
        key = (domain, op_type, version)
        try:
            return self._extensions[key]
        except KeyError:
            s = self._extensions[key] = defs_binding.extension_schema(op_type, version, domain)
            return s

    def schema(self, op_type: str, version: int, domain: str) -> OpSchema | None:
        """The definition a node of ``domain`` importing ``version`` binds to (Clause 14.3), or None."""
        key = (domain, op_type, version)
        try:
            return self._schemas[key]
        except KeyError:
            s = self._schemas[key] = defs_binding.get_schema(op_type, version, domain)
            return s

    def versions(self, op_type: str, domain: str) -> list[int]:
        """Every since_version of ``op_type`` in ``domain`` (empty if the domain never defined it)."""
        key = (domain, op_type)
        v = self._versions.get(key)
        if v is None:
            v = self._versions[key] = list(defs_binding.schema_versions(op_type, domain))
        return v

    def domain_range(self, domain: str) -> tuple[int, int] | None:
        """The (min, max) operator set version published for ``domain``, or None for an unknown domain."""
        if domain not in self._ranges:
            r = defs_binding.domain_versions(domain) if domain in self._domains else None
            self._ranges[domain] = None if r is None else (int(r[0]), int(r[1]))
        return self._ranges[domain]


class NodeRef:
    """A node in its scope, bound to what it invokes.

    Attributes:
        node: The ``NodeProto``.
        index: Its position in its scope.
        scope: The scope holding it.
        domain: Its canonical domain (``""`` for ai.onnx).
        status: ``"schema"`` (an operator definition), ``"function"`` (a model-local function), ``"custom"``
            (a domain onnxcore has no definitions for), ``"undeclared"`` (the domain is not imported),
            ``"undefined"`` (the domain never defined the operator) or ``"not_in_version"`` (defined only
            after the imported version).
        version: The imported version of the node's domain (0 for ``function`` and ``undeclared``).
        schema: The bound definition (``schema`` only).
        function: The bound model-local function (``function`` only).
        subgraphs: ``(segment, attribute name, scope)`` of each subgraph its attributes hold and the walk
            entered (``segment`` is ``body`` or ``branches[1]``).
    """

    __slots__ = ("domain", "function", "index", "node", "schema", "scope", "status", "subgraphs", "version")

    def __init__(
        self,
        node: NodeProto,
        index: int,
        scope: Scope,
        domain: str,
        status: str,
        version: int = 0,
        schema: OpSchema | None = None,
        function: FunctionProto | None = None,
    ) -> None:
        self.node = node
        self.index = index
        self.scope = scope
        self.domain = domain
        self.status = status
        self.version = version
        self.schema = schema
        self.function = function
        # Most nodes hold no subgraph: one shared empty tuple, replaced for those that do.
        self.subgraphs: tuple[tuple[str, str, Scope], ...] = ()

    @property
    def loc(self) -> str:
        """Readable location, e.g. ``graph/node[12] "conv1"``."""
        return node_location(self.scope.loc, self.index, self.node.name)

    def label(self) -> str:
        """``op_type`` qualified by its domain, for messages."""
        d = self.node.domain
        return f"{d}::{self.node.op_type}" if d else self.node.op_type


class Scope:
    """A graph or a function body, with the names it defines.

    Attributes:
        kind: ``"main"``, ``"subgraph"``, ``"function"`` (a model-local function) or ``"body"`` (an operator
            definition's function body, :meth:`BoundModel.body_scope`).
        graph: The graph (None for a function body).
        function: The function (None for a graph).
        depth: Subgraph nesting depth (0 for the top-level graph and function bodies).
        parent: The enclosing scope of a subgraph.
        owner: The node whose attribute holds a subgraph.
        attr_name: The name of that attribute.
        seg: The attribute segment of the location (``body``, ``branches[1]``).
        nodes: The scope's nodes, bound.
        inputs, outputs: Names of the declared inputs and outputs.
        init_names: Names of the initializers (dense, then sparse).
        defs: First definition of each name: ``("input"|"initializer"|"node", index)``.
        dup_defs: Node outputs naming a value already defined in the scope.
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
        seg: str = "",
        opsets: dict[str, int] | None = None,
    ) -> None:
        self.kind = kind
        self.graph = graph
        self.function = function
        self._loc: str | None = loc  # rendered on demand for subgraphs (deep nesting stays linear)
        self.seg = seg
        self.depth = depth
        self.parent = parent
        self.owner = owner
        self.attr_name = attr_name
        self.nodes: list[NodeRef] = []
        self.opsets: dict[str, int] = opsets or {}
        self.tin = 0  # pre-order number and the greatest one below it: ancestry in O(1)
        self.tout = 0
        self.has_children = False
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
        defs: dict[str, tuple[str, int]] = {}
        for i, n in enumerate(self.inputs):
            defs.setdefault(n, ("input", i))
        for i, n in enumerate(self.init_names):
            defs.setdefault(n, ("initializer", i))
        self.defs = defs
        self.dup_defs: list[tuple[NodeRef, int, str]] = []

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


@functools.cache
def _shared_definitions() -> Definitions:
    # Made on first use: building it reads the definitions' data files.
    return Definitions()


def definition_binding(
    domain: str, op_type: str, version: int, definitions: Definitions | None = None
) -> tuple[str, OpSchema | None]:
    """``(status, schema)`` of an operator imported at ``version`` of ``domain``, with no model-local function of
    its name: rules 3 and 4 of this module's precedence (the one copy of them; :meth:`BoundModel.binding` adds
    rules 1 and 2, and ``kernels.run`` and the graph builder, which have no model, ask this function).

    Args:
        domain: The operator's domain (``"ai.onnx"`` and ``""`` alike).
        op_type: The operator.
        version: The imported version of ``domain``.
        definitions: The cached lookups to use; a process-wide set when None.

    Returns:
        ``("schema", definition)``, or ``("custom" | "not_in_version" | "undefined", None)``.
    """
    defs = _shared_definitions() if definitions is None else definitions
    dom = canonical_domain(domain)
    if not defs.is_known_domain(dom):
        if defs.is_contrib_domain(dom):
            schema = defs.schema(op_type, version, dom)
            if schema is not None:
                return "schema", schema
            if defs.versions(op_type, dom):
                return "not_in_version", None
        return "custom", None
    schema = defs.schema(op_type, version, dom) or defs.extension(op_type, version, dom)
    if schema is not None:
        return "schema", schema
    if defs.versions(op_type, dom):
        return "not_in_version", None
    return "undefined", None


def body_opsets(body: FunctionProto, caller_opsets: dict[str, int]) -> dict[str, int]:
    """The imports in force in an operator definition's function body (Clause 8.4): the body's own imports, and
    the caller's for a domain the body does not import (see :meth:`BoundModel.body_scope`)."""
    opsets = dict(caller_opsets)
    for o in body.opset_import:
        opsets[canonical_domain(o.domain)] = int(o.version)
    return opsets


def function_opsets(model_opsets: dict[str, int], fn: FunctionProto) -> dict[str, int]:
    """The imports in force in a model-local function's body (Clause 8.4).

    A function carries no version of its own: a domain the model imports keeps the model's version, and the
    function's own imports only fill the domains the model does not import.
    """
    opsets = dict(model_opsets)
    for o in fn.opset_import:
        opsets.setdefault(canonical_domain(o.domain), int(o.version))
    return opsets


class BoundModel:
    """A model with its scopes and every node bound, built once by :func:`bind` and shared by every pass.

    Attributes:
        model: The model.
        limits: The limits it was bound under (``max_nesting_depth`` bounds the scopes entered).
        definitions: The operator definitions, with cached lookups.
        opsets: The model's imports: canonical domain -> version (the first import of a domain wins).
        functions: Model-local functions by (domain, name, overload) -> (index, function); the first wins.
        scopes: Every scope in pre-order: the top-level graph first, then each function body, each followed
            by the subgraphs it holds.
        too_deep: ``(location, depth)`` of each subgraph beyond ``max_nesting_depth``, not entered.
        graph_cycles: Locations of subgraphs that contain themselves (a code-built model), not entered again.
        unusual: Nodes not bound to an operator definition.
        dup_node_names: ``(node, index of the first node of that name)`` within one scope.
        overloads: Nodes naming an overload.
        multi_attr: Nodes with two or more attributes.
        attr_refs: Nodes with an attribute reference (``ref_attr_name``).
    """

    def __init__(self, model: ModelProto, limits: Limits) -> None:
        self.model = model
        self.limits = limits
        self.definitions = Definitions()
        self.opsets: dict[str, int] = {}
        for o in model.opset_import:
            self.opsets.setdefault(canonical_domain(o.domain), int(o.version))
        if not model.opset_import and 0 < int(model.ir_version) < 3:
            self.opsets[""] = 1  # IR versions 1 and 2 predate opset_import: their models use ai.onnx version 1
        self.functions: dict[FunctionKey, tuple[int, FunctionProto]] = {}
        for i, f in enumerate(model.functions):
            self.functions.setdefault((canonical_domain(f.domain), f.name, f.overload), (i, f))
        self.scopes: list[Scope] = []
        self.too_deep: list[tuple[str, int]] = []
        self.graph_cycles: list[str] = []
        self.unusual: list[NodeRef] = []
        self.dup_node_names: list[tuple[NodeRef, int]] = []
        self.overloads: list[NodeRef] = []
        self.multi_attr: list[NodeRef] = []
        self.attr_refs: list[NodeRef] = []
        self._function_scopes: dict[int, Scope] = {}
        # Graph object -> the scope it was entered as (its first reference: a code-built model may hold one graph
        # twice), for every graph entered, definition bodies' subgraphs included.
        self._graph_scopes: dict[int, Scope] = {}
        self._body_scopes: dict[tuple[int, int, int], Scope | None] = {}
        self._bindings: dict[tuple[int, str, str, str], NodeBinding] = {}
        self._walk()
        self._number_scopes()

    # ---- binding ----------------------------------------------------------------------------
    def binding(self, domain: str, op_type: str, overload: str, opsets: dict[str, int]) -> NodeBinding:
        """``(canonical domain, status, imported version, schema, function)`` of a node, by the precedence rule
        of this module."""
        key = (id(opsets), domain, op_type, overload)
        b = self._bindings.get(key)
        if b is None:
            b = self._bindings[key] = self._bind(canonical_domain(domain), op_type, overload, opsets)
        return b

    def _bind(self, dom: str, op_type: str, overload: str, opsets: dict[str, int]) -> NodeBinding:
        # Rule 1, then rule 2, then the definitions (rules 3 and 4, :func:`definition_binding`).
        fn = self.functions.get((dom, op_type, overload))
        if fn is not None:
            return dom, "function", 0, None, fn[1]
        version = opsets.get(dom)
        if version is None:
            return dom, "undeclared", 0, None, None
        status, schema = definition_binding(dom, op_type, version, self.definitions)
        return dom, status, version, schema, None

    # ---- the walk ---------------------------------------------------------------------------
    def _walk(self) -> None:
        model = self.model
        roots: list[Scope] = []
        if model.graph is not None:
            roots.append(Scope("main", "graph", graph=model.graph, opsets=self.opsets))
        for i, f in enumerate(model.functions):
            scope = Scope("function", function_location(i, f), function=f, opsets=function_opsets(self.opsets, f))
            roots.append(scope)
            self._function_scopes.setdefault(id(f), scope)
        self.scopes.extend(self._enter(roots, set()))

    def _enter(self, roots: list[Scope], seen: set[int]) -> list[Scope]:
        """Bind the nodes of ``roots`` and of every subgraph below them; the scopes entered, in pre-order.

        ``seen`` holds the subgraphs entered already: a graph object held twice is entered once.
        """
        max_depth = self.limits.max_nesting_depth
        entered: list[Scope] = []
        pending = list(reversed(roots))
        while pending:
            scope = pending.pop()
            entered.append(scope)
            if scope.graph is not None:
                self._graph_scopes.setdefault(id(scope.graph), scope)
            body = scope.graph.node if scope.graph is not None else scope.function.node  # type: ignore[union-attr]
            children: list[Scope] = []
            defs = scope.defs
            names: dict[str, int] = {}
            bindings = self._bindings
            opsets_id = id(scope.opsets)
            for idx, node in enumerate(body):
                b = bindings.get((opsets_id, node.domain, node.op_type, node.overload))
                if b is None:
                    b = self.binding(node.domain, node.op_type, node.overload, scope.opsets)
                ref = NodeRef(node, idx, scope, *b)
                scope.nodes.append(ref)
                if b[1] != "schema":
                    self.unusual.append(ref)
                for k, o in enumerate(node.output):
                    if o:
                        if o in defs:
                            scope.dup_defs.append((ref, k, o))
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
                            seg=seg,
                            opsets=scope.opsets,
                        )
                        ref.subgraphs += ((seg, attr.name, child),)
                        children.append(child)
            children.reverse()
            pending.extend(children)
        return entered

    def body_scope(self, schema: OpSchema, version: int, caller_opsets: dict[str, int]) -> Scope | None:
        """The function body of an operator definition (Clause 8.4) for a caller importing ``version`` of its
        domain (:meth:`OpSchema.function_body`) and ``caller_opsets`` in all; None when the definition has no
        static body for that version. Built on first request, then cached.

        A definition's body is written against the operator sets it imports, so those govern its nodes; a
        domain it does not import takes the caller's version. The scope (kind ``"body"``) and its subgraphs are
        not among :attr:`scopes`, which hold the model's own graphs only.
        """
        key = (id(schema), version, id(caller_opsets))
        if key in self._body_scopes:
            return self._body_scopes[key]
        fp = schema.function_body(version)
        scope: Scope | None = None
        if fp is not None:
            opsets = body_opsets(fp, caller_opsets)
            loc = f"{schema.domain or 'ai.onnx'}::{schema.name}-{schema.since_version} body"
            scope = Scope("body", loc, function=fp, opsets=opsets)
            # Its own set: the same definition's body bound for other callers has subgraphs of its own.
            self._enter([scope], set())
        self._body_scopes[key] = scope
        return scope

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

    def release(self) -> None:
        """Cut the links that make this bound model a reference cycle (each scope's node list, whose nodes point
        back at their scope), so that reference counting frees it as soon as its last user drops it.

        For the caller that made the bound model and is done with it (:func:`onnxcore.check` without ``bound``):
        with the cyclic collector paused during a check, every node would otherwise wait for the collection that
        follows, which traverses them all (a tenth of the check of a 50,000-node graph). The bound model is not
        usable afterwards.
        """
        for s in self.scopes:
            s.nodes.clear()

    # ---- queries ----------------------------------------------------------------------------
    def main(self) -> Scope | None:
        """The scope of the top-level graph."""
        return self.scopes[0] if self.scopes and self.scopes[0].kind == "main" else None

    def graph_scope(self, graph: GraphProto) -> Scope | None:
        """The scope a graph object was entered as (its first reference, where a model holds it twice)."""
        return self._graph_scopes.get(id(graph))

    def function_scope(self, fn: FunctionProto) -> Scope | None:
        """The scope of a model-local function's body."""
        return self._function_scopes.get(id(fn))

    def all_nodes(self) -> Iterator[NodeRef]:
        """Every bound node of every scope, in scope pre-order."""
        for s in self.scopes:
            yield from s.nodes

    def lookup_outer(self, scope: Scope, name: str) -> tuple[Scope, tuple[str, int], int] | None:
        """The definition of ``name`` visible in ``scope`` from an enclosing graph (Clause 5.4.3).

        Returns ``(enclosing scope, its definition, index there of the node holding the subgraph on the way to
        scope, or -1 when the definition is not a node output)``, the innermost such scope, or None.
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


def bind(model: ModelProto | OnnxMessage, *, limits: Limits | None = None) -> BoundModel:
    """Bind every node of ``model`` once (see the module docstring); the result is shared by every pass.

    Args:
        model: The model: onnxcore's, or the onnx package's ``ModelProto`` (converted once; the bound
            model's ``.model`` is then the converted copy).
        limits: ``max_nesting_depth`` bounds the subgraphs entered; ``DEFAULT_LIMITS`` when None.

    Raises:
        TypeError: ``model`` is not a ModelProto.
    """
    return BoundModel(as_message(model, ModelProto, "bind"), limits or DEFAULT_LIMITS)


def model_argument(model: ModelProto | OnnxMessage, bound: BoundModel | None, caller: str) -> ModelProto:
    """The model a pass (inference, validation) takes, as ours: an onnx ``ModelProto`` is converted.

    Given with the ``bound`` model, an onnx object stands for the copy ``bound`` was made of
    (``bound.model``): its bindings are cached by that copy's nodes.

    Raises:
        TypeError: ``model`` is not a ModelProto (the message names ``caller``).
    """
    if bound is not None and is_onnx_message(model):
        as_message(model, ModelProto, caller)  # refuses anything but a ModelProto
        return bound.model
    return as_message(model, ModelProto, caller)
