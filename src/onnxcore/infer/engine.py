"""The inference walk: graphs in node order, subgraphs in their enclosing scope, functions per call site.

Scoping follows Clause 5.4 and 7.6: a subgraph sees the values of its enclosing graphs; a function body
sees only its own parameters (Clause 8.4). Types are type strings (see :mod:`onnxcore.types.typestr`);
None is unknown (Clause 9.4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from onnxcore.defs.binding import canonical_domain, get_schema
from onnxcore.defs.opschema import OpSchema
from onnxcore.errors import OnnxCoreError
from onnxcore.infer.rules import TYPE_RULES, UNRESOLVED, _Unresolved, generic_outputs, infer_outputs
from onnxcore.io import encode
from onnxcore.proto.messages import (
    AttributeProto,
    FunctionProto,
    GraphProto,
    ModelProto,
    NodeProto,
    TypeProto,
)
from onnxcore.types.typestr import elem_type_string, parse_type_string, type_string

__all__ = ["Inference", "NodeTypes", "TypeMismatch", "node_location", "run"]

_AT = AttributeProto.AttributeType
_MAX_DEPTH = 64  # nesting of subgraphs and function calls followed; deeper stays unknown
_NODE_BUDGET_BASE = 100_000
_NODE_BUDGET_FACTOR = 10
_NO_BINDINGS: dict[str, str] = {}
_NO_CONFLICTS: frozenset[str] = frozenset()


def node_location(graph_path: str, index: int, node: NodeProto) -> str:
    """The readable location of a node: ``graph/node[3] "name"`` (the name only when it has one)."""
    return f'{graph_path}/node[{index}] "{node.name}"' if node.name else f"{graph_path}/node[{index}]"


def function_location(index: int, fn: FunctionProto) -> str:
    """The graph path of a model-local function's body: ``functions[0] "domain:name"``."""
    return f'functions[{index}] "{fn.domain}:{fn.name}"'


@dataclass(slots=True)
class NodeTypes:
    """What inference saw at one node.

    Attributes:
        graph: Path of the graph (or function body) holding the node.
        index: Position of the node in it.
        location: ``node_location(graph, index, node)``.
        node: The node itself.
        schema: The definition it binds to (Clause 14.4), or None (unknown op, undeclared domain, or a
            call of a model-local function).
        function: The model-local function it calls, if it calls one.
        input_types: Type string of each actual input (None: unknown, or left unsupplied with "").
        output_types: Type string inferred for each output before comparison with declared types.
        bindings: Type variable -> type string, as the inputs bind them (shared between nodes: read only).
        conflicts: Type variables two inputs bind to different types (Clause 10.3 homogeneity).
    """

    graph: str
    index: int
    node: NodeProto
    schema: OpSchema | None
    function: FunctionProto | None
    input_types: tuple[str | None, ...]
    output_types: tuple[str | None, ...]
    bindings: dict[str, str]
    conflicts: frozenset[str]

    @property
    def location(self) -> str:
        """``node_location(graph, index, node)``."""
        return node_location(self.graph, self.index, self.node)


@dataclass(slots=True, frozen=True)
class TypeMismatch:
    """An inferred type contradicting a declared one (Clause 9.4, last paragraph; reported under 10.3).

    Attributes:
        graph: Path of the graph holding the value.
        name: The value's name.
        location: Where: a node output (``.../node[3] "n"/output[0]``) or a subgraph input
            (``.../body/input[1]``, the type the enclosing node feeds it).
        declared: The declared type string.
        inferred: The inferred type string.
    """

    graph: str
    name: str
    location: str
    declared: str
    inferred: str

    @property
    def message(self) -> str:
        return f"value {self.name!r} is declared {self.declared} but inferred {self.inferred}"


@dataclass(slots=True)
class Inference:
    """The result of :func:`onnxcore.infer.infer`.

    Attributes:
        type_strings: Graph path -> value name -> type string, for every value of that graph (inputs,
            initializers, node outputs) whose type is known. Declared types win over inferred ones.
        declared: Graph path -> value name -> declared ``TypeProto`` (with its shape).
        nodes: One :class:`NodeTypes` per node of the model's graphs, subgraphs and function bodies.
        mismatches: Every contradiction between an inferred and a declared type.
    """

    type_strings: dict[str, dict[str, str]] = field(default_factory=dict)
    declared: dict[str, dict[str, TypeProto]] = field(default_factory=dict)
    nodes: list[NodeTypes] = field(default_factory=list)
    mismatches: list[TypeMismatch] = field(default_factory=list)
    _by_location: dict[str, NodeTypes] | None = None

    def types(self) -> dict[str, dict[str, TypeProto]]:
        """Graph path -> value name -> ``TypeProto``: the declared type if known, else the inferred one."""
        out: dict[str, dict[str, TypeProto]] = {}
        for path, names in self.type_strings.items():
            decl = self.declared.get(path, {})
            g: dict[str, TypeProto] = {}
            for name, ts in names.items():
                d = decl.get(name)
                g[name] = d if d is not None and type_string(d) == ts else parse_type_string(ts)
            out[path] = g
        return out

    def node(self, location: str) -> NodeTypes | None:
        """The :class:`NodeTypes` at ``location`` (as :func:`node_location` spells it)."""
        if self._by_location is None:
            self._by_location = {n.location: n for n in self.nodes}
        return self._by_location.get(location)


class _Scope:
    __slots__ = ("parent", "types")

    def __init__(self, parent: _Scope | None) -> None:
        self.parent = parent
        self.types: dict[str, str | None] = {}

    def lookup(self, name: str) -> str | None:
        s: _Scope | None = self
        while s is not None:
            if name in s.types:
                return s.types[name]
            s = s.parent
        return None


@dataclass(slots=True)
class _Frame:
    """The context of a walk: imports in force, the function's attributes, whether to record."""

    opsets: dict[str, int]
    fn_attrs: dict[str, AttributeProto] | None  # None: not in a function body, or no call site
    in_function: bool
    record: bool
    depth: int


class _NodeView:
    """The engine's implementation of :class:`onnxcore.infer.rules.NodeView`."""

    __slots__ = ("engine", "frame", "in_types", "location", "node", "schema", "scope", "visited")

    def __init__(
        self,
        engine: _Engine,
        frame: _Frame,
        scope: _Scope,
        node: NodeProto,
        location: str,
        schema: OpSchema,
        in_types: tuple[str | None, ...],
    ) -> None:
        self.engine = engine
        self.frame = frame
        self.scope = scope
        self.node = node
        self.location = location
        self.schema = schema
        self.in_types = in_types
        self.visited: set[str] = set()

    def attr(self, name: str) -> AttributeProto | _Unresolved | None:
        for a in self.node.attribute:
            if a.name == name:
                return self.engine.resolve(a, self.frame)
        return None

    def subgraph(self, name: str, inputs: Sequence[str | None]) -> list[str | None] | None:
        if name in self.visited:
            return None
        self.visited.add(name)
        a = self.attr(name)
        if not isinstance(a, AttributeProto) or a.g is None:
            return None
        return self.engine.walk_graph(a.g, f"{self.location}/{name}", self.scope, list(inputs), self.frame)


class _Engine:
    def __init__(self, model: ModelProto) -> None:
        self.result = Inference()
        self.opsets: dict[str, int] = {}
        for imp in model.opset_import:
            self.opsets.setdefault(canonical_domain(imp.domain), imp.version)
        self.functions: dict[tuple[str, str, str], FunctionProto] = {}
        for fn in model.functions:
            self.functions.setdefault((canonical_domain(fn.domain), fn.name, fn.overload), fn)
        self.calls: dict[tuple[object, ...], list[str | None]] = {}
        self.schemas: dict[tuple[str, str, int], OpSchema | None] = {}
        # Node visits allowed: a model built in memory may share one subgraph object between
        # branches at every level, which a walk would otherwise follow exponentially often.
        self.budget = _NODE_BUDGET_BASE + _NODE_BUDGET_FACTOR * _distinct_nodes(model)
        self.generic: dict[tuple[object, ...], tuple[list[str | None], dict[str, str], frozenset[str]]] = {}
        self.active: set[tuple[str, str, str]] = set()

    # --- attributes -----------------------------------------------------------------------------

    def resolve(self, a: AttributeProto, frame: _Frame) -> AttributeProto | _Unresolved | None:
        """Substitute a reference to a function attribute parameter (Clause 8.4)."""
        if not a.ref_attr_name:
            return a
        if frame.fn_attrs is None:
            return UNRESOLVED if frame.in_function else None
        return frame.fn_attrs.get(a.ref_attr_name)

    # --- graphs ---------------------------------------------------------------------------------

    def walk_graph(
        self, g: GraphProto, path: str, parent: _Scope | None, overrides: list[str | None] | None, frame: _Frame
    ) -> list[str | None]:
        if frame.depth > _MAX_DEPTH or self.budget < 0:
            return [None] * len(g.output)
        frame = _Frame(frame.opsets, frame.fn_attrs, frame.in_function, frame.record, frame.depth + 1)
        scope = _Scope(parent)
        declared: dict[str, TypeProto] = {}
        for vi in g.value_info:
            if vi.type is not None:
                declared[vi.name] = vi.type
        for vi in g.output:
            if vi.type is not None:
                declared[vi.name] = vi.type
        mismatches = self.result.mismatches if frame.record else None
        for k, vi in enumerate(g.input):
            d = type_string(vi.type)
            o = overrides[k] if overrides is not None and k < len(overrides) else None
            if d is not None:
                declared[vi.name] = vi.type  # type: ignore[assignment]
                if o is not None and o != d and mismatches is not None:
                    mismatches.append(TypeMismatch(path, vi.name, f"{path}/input[{k}]", d, o))
            scope.types[vi.name] = d if d is not None else o
        for t in g.initializer:
            if scope.types.get(t.name) is None:
                scope.types[t.name] = elem_type_string(t.data_type)
        for sp in g.sparse_initializer:
            # A sparse initializer is read as the dense tensor it denotes (Clause 7.2).
            if sp.values is not None and scope.types.get(sp.values.name) is None:
                scope.types[sp.values.name] = elem_type_string(sp.values.data_type)
        self.walk_nodes(g.node, path, scope, declared, frame)
        outs: list[str | None] = []
        for vi in g.output:
            d = type_string(vi.type)
            outs.append(d if d is not None else scope.lookup(vi.name))
        if frame.record:
            self.result.type_strings[path] = {n: t for n, t in scope.types.items() if t is not None}
            self.result.declared[path] = declared
        return outs

    def walk_function(
        self,
        fn: FunctionProto,
        path: str,
        in_types: Sequence[str | None],
        attrs: dict[str, AttributeProto] | None,
        frame: _Frame,
    ) -> list[str | None]:
        opsets = dict(frame.opsets)
        for imp in fn.opset_import:
            # Clause 8.4: the body's versions are the model's; the function's own imports fill gaps.
            opsets.setdefault(canonical_domain(imp.domain), imp.version)
        if self.budget < 0:
            return [None] * len(fn.output)
        frame = _Frame(opsets, attrs, True, frame.record, frame.depth + 1)
        scope = _Scope(None)
        declared = {vi.name: vi.type for vi in fn.value_info if vi.type is not None}
        for k, name in enumerate(fn.input):
            d = type_string(declared.get(name))
            o = in_types[k] if k < len(in_types) else None
            scope.types[name] = d if d is not None else o
        self.walk_nodes(fn.node, path, scope, declared, frame)
        outs = [scope.lookup(name) for name in fn.output]
        if frame.record:
            self.result.type_strings[path] = {n: t for n, t in scope.types.items() if t is not None}
            self.result.declared[path] = declared
        return outs

    def walk_nodes(
        self,
        nodes: Sequence[NodeProto],
        path: str,
        scope: _Scope,
        declared: dict[str, TypeProto],
        frame: _Frame,
    ) -> None:
        record = frame.record
        opsets = frame.opsets
        self.budget -= len(nodes)
        schemas = self.schemas
        memo = self.generic
        lookup = scope.lookup
        for i, node in enumerate(nodes):
            in_types = tuple(lookup(n) if n else None for n in node.input)
            domain = node.domain
            if domain == "ai.onnx":
                domain = ""
            fn = self.functions.get((domain, node.op_type, node.overload)) if self.functions else None
            schema: OpSchema | None = None
            out: list[str | None] | tuple[str | None, ...]
            bindings: dict[str, str] = _NO_BINDINGS
            conflicts: frozenset[str] = _NO_CONFLICTS
            visited: set[str] | None = None
            n_out = len(node.output)
            has_graphs = any(a.g is not None or a.graphs for a in node.attribute)
            if fn is not None:
                out = self.call(fn, node, in_types, frame)
            else:
                version = opsets.get(domain)
                if version is not None:
                    skey = (domain, node.op_type, version)
                    if skey in schemas:
                        schema = schemas[skey]
                    else:
                        schema = schemas[skey] = get_schema(node.op_type, version, domain)
                if schema is None:
                    out = (None,) * n_out
                elif has_graphs or (schema.domain, schema.name) in TYPE_RULES:
                    view = _NodeView(self, frame, scope, node, node_location(path, i, node), schema, in_types)
                    out, bindings, conflicts = infer_outputs(view, n_out)
                    visited = view.visited
                else:
                    # The generic rule depends on the definition and the input types only.
                    gkey = (schema, in_types, n_out)
                    hit = memo.get(gkey)
                    if hit is None:
                        hit = memo[gkey] = generic_outputs(schema, in_types, n_out)
                    out, bindings, conflicts = hit
            if has_graphs:
                loc = node_location(path, i, node)
                for a in node.attribute:
                    # Graphs no rule visited (custom ops, malformed nodes) are still walked for their nodes.
                    if visited is not None and a.name in visited:
                        continue
                    if a.g is not None:
                        self.walk_graph(a.g, f"{loc}/{a.name}", scope, None, frame)
                    for k, sub in enumerate(a.graphs):
                        self.walk_graph(sub, f"{loc}/{a.name}[{k}]", scope, None, frame)
            types = scope.types
            for k, name in enumerate(node.output):
                if not name:
                    continue
                t = out[k] if k < len(out) else None
                dp = declared.get(name)
                d = type_string(dp) if dp is not None else None
                if d is not None and t is not None and d != t and record:
                    where = f"{node_location(path, i, node)}/output[{k}]"
                    self.result.mismatches.append(TypeMismatch(path, name, where, d, t))
                types[name] = d if d is not None else t
            if record:
                self.result.nodes.append(
                    NodeTypes(path, i, node, schema, fn, in_types, tuple(out[:n_out]), bindings, conflicts)
                )

    # --- model-local functions ------------------------------------------------------------------

    def call(
        self, fn: FunctionProto, node: NodeProto, in_types: tuple[str | None, ...], frame: _Frame
    ) -> list[str | None]:
        """Output types of a call: the body inferred with this call site's input types and attributes."""
        unknown: list[str | None] = [None] * len(node.output)
        key = (canonical_domain(fn.domain), fn.name, fn.overload)
        if key in self.active or frame.depth > _MAX_DEPTH:
            return unknown  # a recursive call (invalid, Clause 8.4) or too deep: nothing inferred
        params = set(fn.attribute) | {a.name for a in fn.attribute_proto}
        attrs: dict[str, AttributeProto] = {a.name: a for a in fn.attribute_proto}
        for a in node.attribute:
            r = self.resolve(a, frame)
            if isinstance(r, _Unresolved):
                return unknown
            if r is not None and a.name in params:
                attrs[a.name] = r
        try:
            memo: tuple[object, ...] | None = (
                key,
                in_types,
                tuple(sorted((n, encode(a)) for n, a in attrs.items())),
                tuple(sorted(frame.opsets.items())),
            )
        except OnnxCoreError:  # an attribute built by code that cannot be encoded: no memo
            memo = None
        hit = self.calls.get(memo) if memo is not None else None
        if hit is None:
            self.active.add(key)
            try:
                silent = _Frame(frame.opsets, None, True, False, frame.depth)
                hit = self.walk_function(fn, "", in_types, attrs, silent)
            finally:
                self.active.discard(key)
            if memo is not None:
                self.calls[memo] = hit
        return (hit + unknown)[: len(node.output)]


def _distinct_nodes(model: ModelProto) -> int:
    """Nodes of the model counted once per object (subgraphs and function bodies included)."""
    seen: set[int] = set()
    stack: list[GraphProto | FunctionProto] = list(model.functions)
    if model.graph is not None:
        stack.append(model.graph)
    count = 0
    while stack:
        g = stack.pop()
        if id(g) in seen:
            continue
        seen.add(id(g))
        count += len(g.node)
        for node in g.node:
            for a in node.attribute:
                if a.g is not None:
                    stack.append(a.g)
                stack.extend(a.graphs)
    return count


def run(model: ModelProto) -> Inference:
    """Infer the types of every value of ``model`` (see :func:`onnxcore.infer.infer`)."""
    engine = _Engine(model)
    top = _Frame(engine.opsets, None, False, True, 0)
    if model.graph is not None:
        engine.walk_graph(model.graph, "graph", None, None, top)
    for i, fn in enumerate(model.functions):
        # Without a call site a body's attribute references are unresolved and its inputs untyped
        # unless its value_info states them (Clause 8.4: a function may be polymorphic).
        engine.walk_function(fn, function_location(i, fn), (), None, _Frame(engine.opsets, None, True, True, 0))
    return engine.result
