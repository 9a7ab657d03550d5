"""The type pass of inference: graphs in node order, subgraphs in their enclosing scope, functions per call site.

Scoping follows Clause 5.4 and 7.6: a subgraph sees the values of its enclosing graphs; a function body
sees only its own parameters (Clause 8.4). Types are type strings (see :mod:`onnxcore.types.typestr`);
None is unknown (Clause 9.4). The walk, the bindings and the limits are those of :mod:`onnxcore.infer.walk`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from onnxcore.defs.binding import canonical_domain
from onnxcore.defs.opschema import OpSchema
from onnxcore.errors import OnnxCoreError
from onnxcore.graph.bound import BoundModel, function_location
from onnxcore.graph.functions import Unresolved
from onnxcore.infer.rules import RULES, UNRESOLVED, _Unresolved, generic_outputs, infer_outputs
from onnxcore.infer.walk import Binding, Frame, Walk, node_location
from onnxcore.io import encode
from onnxcore.limits import Limits
from onnxcore.proto.messages import (
    AttributeProto,
    FunctionProto,
    GraphProto,
    ModelProto,
    NodeProto,
    TypeProto,
)
from onnxcore.types.typestr import elem_type_string, parse_type_string, type_string

__all__ = ["Inference", "NodeTypes", "TypeMismatch", "function_location", "node_location", "run"]

_NO_BINDINGS: dict[str, str] = {}
_NO_CONFLICTS: frozenset[str] = frozenset()


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


class _TypeEnv:
    """The types of one walked body's values, seeing its enclosing bodies' (Clause 5.4.3)."""

    __slots__ = ("parent", "types")

    def __init__(self, parent: _TypeEnv | None) -> None:
        self.parent = parent
        self.types: dict[str, str | None] = {}

    def lookup(self, name: str) -> str | None:
        s: _TypeEnv | None = self
        while s is not None:
            if name in s.types:
                return s.types[name]
            s = s.parent
        return None


class _TypeNodeView:
    """The type pass's implementation of :class:`onnxcore.infer.rules.NodeView`."""

    __slots__ = ("env", "frame", "in_types", "location", "node", "schema", "visited", "walk")

    def __init__(
        self,
        walk: TypeWalk,
        frame: Frame,
        env: _TypeEnv,
        node: NodeProto,
        location: str,
        schema: OpSchema,
        in_types: tuple[str | None, ...],
    ) -> None:
        self.walk = walk
        self.frame = frame
        self.env = env
        self.node = node
        self.location = location
        self.schema = schema
        self.in_types = in_types
        self.visited: set[str] = set()

    def attr(self, name: str) -> AttributeProto | _Unresolved | None:
        for a in self.node.attribute:
            if a.name == name:
                r = self.walk.resolve(a, self.frame)
                return UNRESOLVED if isinstance(r, Unresolved) else r
        return None

    def subgraph(self, name: str, inputs: Sequence[str | None]) -> list[str | None] | None:
        if name in self.visited:
            return None
        self.visited.add(name)
        a = self.attr(name)
        if not isinstance(a, AttributeProto) or a.g is None:
            return None
        return self.walk.walk_graph(a.g, f"{self.location}/{name}", self.env, list(inputs), self.frame)


class TypeWalk(Walk):
    """The type pass (see :func:`onnxcore.infer.infer`)."""

    def __init__(self, model: ModelProto, limits: Limits | None, bound: BoundModel | None) -> None:
        super().__init__(model, limits, bound)
        self.result = Inference()
        self.calls: dict[tuple[object, ...], list[str | None]] = {}
        self.generic: dict[tuple[object, ...], tuple[list[str | None], dict[str, str], frozenset[str]]] = {}

    # --- graphs ---------------------------------------------------------------------------------

    def walk_graph(
        self, g: GraphProto, path: str, parent: _TypeEnv | None, overrides: list[str | None] | None, frame: Frame
    ) -> list[str | None]:
        if self.too_deep(frame.depth) or self.budget < 0:
            return [None] * len(g.output)
        frame = Frame(frame.opsets, frame.fn_attrs, frame.in_function, frame.record, frame.depth + 1)
        env = _TypeEnv(parent)
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
            env.types[vi.name] = d if d is not None else o
        for t in g.initializer:
            if env.types.get(t.name) is None:
                env.types[t.name] = elem_type_string(t.data_type)
        for sp in g.sparse_initializer:
            # A sparse initializer is read as the dense tensor it denotes (Clause 7.2).
            if sp.values is not None and env.types.get(sp.values.name) is None:
                env.types[sp.values.name] = elem_type_string(sp.values.data_type)
        self.walk_nodes(self.graph_bindings(g, frame.opsets), path, env, declared, frame)
        outs: list[str | None] = []
        for vi in g.output:
            d = type_string(vi.type)
            outs.append(d if d is not None else env.lookup(vi.name))
        if frame.record:
            self.result.type_strings[path] = {n: t for n, t in env.types.items() if t is not None}
            self.result.declared[path] = declared
        return outs

    def walk_function(
        self,
        fn: FunctionProto,
        path: str,
        in_types: Sequence[str | None],
        attrs: dict[str, AttributeProto] | None,
        frame: Frame,
    ) -> list[str | None]:
        if self.budget < 0:
            return [None] * len(fn.output)
        # Clause 8.4: the body's versions are the model's; the function's own imports fill gaps (its bound scope).
        frame = Frame(self.function_frame_opsets(fn), attrs, True, frame.record, frame.depth + 1)
        env = _TypeEnv(None)
        declared = {vi.name: vi.type for vi in fn.value_info if vi.type is not None}
        for k, name in enumerate(fn.input):
            d = type_string(declared.get(name))
            o = in_types[k] if k < len(in_types) else None
            env.types[name] = d if d is not None else o
        self.walk_nodes(self.function_bindings(fn), path, env, declared, frame)
        outs = [env.lookup(name) for name in fn.output]
        if frame.record:
            self.result.type_strings[path] = {n: t for n, t in env.types.items() if t is not None}
            self.result.declared[path] = declared
        return outs

    def walk_nodes(
        self,
        bindings: Sequence[Binding],
        path: str,
        env: _TypeEnv,
        declared: dict[str, TypeProto],
        frame: Frame,
    ) -> None:
        record = frame.record
        self.budget -= len(bindings)
        memo = self.generic
        lookup = env.lookup
        for i, b in enumerate(bindings):
            node = b.node
            in_types = tuple(lookup(n) if n else None for n in node.input)
            fn = b.function
            schema = b.schema
            out: list[str | None] | tuple[str | None, ...]
            bindings_: dict[str, str] = _NO_BINDINGS
            conflicts: frozenset[str] = _NO_CONFLICTS
            visited: set[str] | None = None
            n_out = len(node.output)
            has_graphs = any(a.g is not None or a.graphs for a in node.attribute)
            if fn is not None:
                out = self.call(fn, node, in_types, frame)
            elif schema is None:
                out = (None,) * n_out
            elif has_graphs or (schema.domain, schema.name) in RULES:
                view = _TypeNodeView(self, frame, env, node, node_location(path, i, node), schema, in_types)
                out, bindings_, conflicts = infer_outputs(view, n_out)
                visited = view.visited
            else:
                # The generic rule depends on the definition and the input types only.
                gkey = (schema, in_types, n_out)
                hit = memo.get(gkey)
                if hit is None:
                    hit = memo[gkey] = generic_outputs(schema, in_types, n_out)
                out, bindings_, conflicts = hit
            if has_graphs:
                loc = node_location(path, i, node)
                for a in node.attribute:
                    # Graphs no rule visited (custom ops, malformed nodes) are still walked for their nodes.
                    if visited is not None and a.name in visited:
                        continue
                    if a.g is not None:
                        self.walk_graph(a.g, f"{loc}/{a.name}", env, None, frame)
                    for k, sub in enumerate(a.graphs):
                        self.walk_graph(sub, f"{loc}/{a.name}[{k}]", env, None, frame)
            types = env.types
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
                    NodeTypes(path, i, node, schema, fn, in_types, tuple(out[:n_out]), bindings_, conflicts)
                )

    # --- model-local functions ------------------------------------------------------------------

    def call(
        self, fn: FunctionProto, node: NodeProto, in_types: tuple[str | None, ...], frame: Frame
    ) -> list[str | None]:
        """Output types of a call: the body inferred with this call site's input types and attributes."""
        unknown: list[str | None] = [None] * len(node.output)
        key = (canonical_domain(fn.domain), fn.name, fn.overload)
        if key in self.active or self.too_deep(frame.depth):
            return unknown  # a recursive call (invalid, Clause 8.4) or too deep: nothing inferred
        params = set(fn.attribute) | {a.name for a in fn.attribute_proto}
        attrs: dict[str, AttributeProto] = {a.name: a for a in fn.attribute_proto}
        for a in node.attribute:
            r = self.resolve(a, frame)
            if isinstance(r, Unresolved):
                return unknown
            if r is not None and a.name in params:
                attrs[a.name] = r
        try:
            memo: tuple[object, ...] | None = (
                key,
                in_types,
                tuple(sorted((n, encode(a)) for n, a in attrs.items())),
                frame.okey,
            )
        except OnnxCoreError:  # an attribute built by code that cannot be encoded: no memo
            memo = None
        hit = self.calls.get(memo) if memo is not None else None
        if hit is None:
            self.active.add(key)
            try:
                silent = Frame(frame.opsets, None, True, False, frame.depth)
                hit = self.walk_function(fn, "", in_types, attrs, silent)
            finally:
                self.active.discard(key)
            if memo is not None:
                self.calls[memo] = hit
        return (hit + unknown)[: len(node.output)]


def run(model: ModelProto, *, limits: Limits | None = None, bound: BoundModel | None = None) -> Inference:
    """Infer the types of every value of ``model`` (see :func:`onnxcore.infer.infer`)."""
    walk = TypeWalk(model, limits, bound)
    try:
        if model.graph is not None:
            walk.walk_graph(model.graph, "graph", None, None, Frame(walk.top_opsets, None, False, True, 0))
        for i, fn in enumerate(model.functions):
            # Without a call site a body's attribute references are unresolved and its inputs untyped
            # unless its value_info states them (Clause 8.4: a function may be polymorphic).
            top = Frame(walk.top_opsets, None, True, True, 0)
            walk.walk_function(fn, function_location(i, fn), (), None, top)
    except RecursionError:
        pass  # nesting (within a raised limit) beyond the interpreter's stack: what was inferred so far stands
    return walk.result
