"""What the report shows, gathered from the bound model, inference, validation and (optionally) a profile.

One :class:`Drawing` per scope of the bound model (the top-level graph, each subgraph, each model-local
function body), each laid out by :func:`onnxcore.reporting.layout.layered_layout`; a scope with more nodes than the
node budget is drawn as clusters of consecutive nodes (each expandable in place) so the page opens at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from onnxcore.graph import BoundModel, NodeRef, Scope, walk_scopes
from onnxcore.graph.attributes import attribute_kind
from onnxcore.infer import Inference, ShapeInference
from onnxcore.proto.messages import AttributeProto, TensorProto
from onnxcore.reporting.families import family
from onnxcore.reporting.layout import Layout, layered_layout
from onnxcore.types.elements import ElementType
from onnxcore.validate import Report

__all__ = ["DrawEdge", "DrawNode", "Drawing", "Gathered", "gather", "short_type", "tensor_summary"]

NODE_BUDGET = 2500  # node boxes one drawing holds before its scope is drawn as clusters
_CHAR = 7.2  # width of a character of the node font (12px monospace)
_MAX_FOLDED = 4  # initializer lines shown in a node box


@dataclass(slots=True)
class DrawNode:
    """A box of a drawing: an operator node (``op``), a graph input or output (``io``) or a cluster."""

    key: str
    kind: str
    title: str
    sub: str
    colour_family: str
    lines: list[str]
    width: float = 0.0
    height: float = 0.0
    expand: list[tuple[str, str]] = field(default_factory=list)  # (caption, drawing id)


@dataclass(slots=True)
class DrawEdge:
    """An edge of a drawing, with the value's name and its inferred type and shape as the label."""

    src: int
    dst: int
    value: str
    label: str


@dataclass(slots=True)
class Drawing:
    """One scope (or one cluster of a large scope) laid out."""

    key: str
    caption: str
    nodes: list[DrawNode] = field(default_factory=list)
    edges: list[DrawEdge] = field(default_factory=list)
    layout: Layout | None = None


@dataclass(slots=True)
class Gathered:
    """Everything the page shows (JSON-ready parts and the drawings)."""

    drawings: dict[str, Drawing]
    info: dict[str, dict[str, Any]]
    findings: list[dict[str, Any]]
    main: str
    key_of: dict[int, str]  # id(NodeRef) -> node key


def short_type(ts: str | None, shape: tuple[Any, ...] | None) -> str:
    """``float[N,3,224,224]``: a type string shortened, with the shape (dimension variables kept)."""
    if ts is None and shape is None:
        return "?"
    base = ts or "?"
    if base.startswith("tensor(") and base.endswith(")"):
        base = base[7:-1]
    if shape is None:
        return base
    return base + "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def tensor_summary(t: TensorProto) -> str:
    """``float<64x3x7x7>``: a tensor's element type and dimensions, never its contents."""
    try:
        elem = ElementType(int(t.data_type)).name.lower()
    except ValueError:
        elem = f"type {int(t.data_type)}"
    dims = "x".join(str(int(d)) for d in t.dims)
    return f"{elem}<{dims}>"


def _attr_text(a: AttributeProto) -> str:
    if a.ref_attr_name:
        return f"@{a.ref_attr_name} (the calling node's attribute)"
    kind = attribute_kind(a)

    def cut(items: list[str]) -> str:
        return "[" + ", ".join(items[:16]) + (f", ... ({len(items)} in all)" if len(items) > 16 else "") + "]"

    if kind == 1:
        return f"{a.f:g}"
    if kind == 2:
        return str(int(a.i))
    if kind == 3:
        return repr(bytes(a.s).decode("utf-8", "replace"))
    if kind == 4 and a.t is not None:
        return "tensor " + tensor_summary(a.t)
    if kind == 5 and a.g is not None:
        return f"graph {a.g.name!r} ({len(a.g.node)} nodes)"
    if kind == 6:
        return cut([f"{x:g}" for x in a.floats])
    if kind == 7:
        return cut([str(int(x)) for x in a.ints])
    if kind == 8:
        return cut([repr(bytes(x).decode("utf-8", "replace")) for x in a.strings])
    if kind == 9:
        return cut(["tensor " + tensor_summary(t) for t in a.tensors])
    if kind == 10:
        return cut([f"graph {g.name!r} ({len(g.node)} nodes)" for g in a.graphs])
    if kind in (11, 12):
        return "sparse tensor"
    if kind in (13, 14):
        return "type"
    return "(unset)"


class _Gatherer:
    def __init__(self, bound: BoundModel, inference: Inference, shapes: ShapeInference) -> None:
        self.bound = bound
        self.types = inference.type_strings
        self.shapes = shapes.shapes
        self.drawings: dict[str, Drawing] = {}
        self.info: dict[str, dict[str, Any]] = {}
        self.ref_key: dict[int, str] = {}  # id(NodeRef) -> key
        self.loc_key: dict[str, str] = {}
        self.scope_key: dict[int, str] = {}  # id(Scope) -> drawing key
        self.container: dict[str, str] = {}  # drawing key -> the node key first expanding into it
        self.node_drawing: dict[str, str] = {}  # node key -> drawing key holding its box
        self.counter = 0

    def label(self, scope: Scope, name: str) -> str:
        loc = scope.loc
        return short_type(self.types.get(loc, {}).get(name), self.shapes.get(loc, {}).get(name))

    def new_key(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def run(self) -> str:
        bound = self.bound
        main = bound.main()
        roots = [s for s in bound.scopes if s.kind in ("main", "function")]
        for s in bound.scopes:
            self.scope_key[id(s)] = f"s{len(self.scope_key)}"
            for ref in s.nodes:
                key = self.new_key("n")
                self.ref_key[id(ref)] = key
                self.loc_key[ref.loc] = key
        walk_scopes(roots, enter=self.scope)
        # Which node expands into each drawing: subgraphs by their owner, functions by their first caller.
        for s in bound.scopes:
            for ref in s.nodes:
                key = self.ref_key[id(ref)]
                for _caption, dk in self.node_expansions(ref):
                    self.container.setdefault(dk, key)
        for key, node_info in self.info.items():
            node_info["path"] = self.path(key)
        if main is not None:
            return self.scope_key[id(main)]
        # No graph (a model of functions only, or a broken one): an empty drawing, the findings say why.
        empty = Drawing("none", "no graph")
        self.lay(empty)
        self.drawings.setdefault("none", empty)
        return "none"

    def path(self, key: str) -> list[str]:
        out: list[str] = []
        seen: set[str] = set()
        drawing = self.node_drawing.get(key)
        while drawing is not None and drawing in self.container and drawing not in seen:
            seen.add(drawing)
            owner = self.container[drawing]
            out.append(owner)
            drawing = self.node_drawing.get(owner)
        return out[::-1]

    def node_expansions(self, ref: NodeRef) -> list[tuple[str, str]]:
        out = [(f"{seg}", self.scope_key[id(child)]) for seg, _attr, child in ref.subgraphs]
        if ref.status == "function" and ref.function is not None:
            fs = self.bound.function_scope(ref.function)
            if fs is not None:
                out.append((f"function {ref.function.name}", self.scope_key[id(fs)]))
        return out

    def scope(self, scope: Scope) -> None:
        key = self.scope_key[id(scope)]
        caption = scope.loc
        refs = scope.nodes
        if len(refs) <= NODE_BUDGET:
            d = Drawing(key, caption)
            self.fill(d, scope, refs, with_io=True)
            self.drawings[key] = d
            return
        # Too many boxes: clusters of consecutive nodes, each a drawing of its own.
        size = max(64, math.ceil(len(refs) / 250))
        top = Drawing(key, caption + f" ({len(refs)} nodes in clusters of {size})")
        cluster_of: dict[int, int] = {}
        io_index: dict[str, int] = {}
        for name in scope.inputs:
            if name not in scope.init_names and name not in io_index:
                io_index[name] = len(top.nodes)
                top.nodes.append(self.io_node(scope, name, "input"))
        for c, start in enumerate(range(0, len(refs), size)):
            chunk = refs[start : start + size]
            ck = f"{key}c{c}"
            counts: dict[str, int] = {}
            for ref in chunk:
                counts[ref.node.op_type] = counts.get(ref.node.op_type, 0) + 1
                cluster_of[ref.index] = len(top.nodes)
            ops = sorted(counts.items(), key=lambda kv: -kv[1])
            lines = [f"{n}x {op}" for op, n in ops[:3]] + ([f"+{len(ops) - 3} more operators"] if len(ops) > 3 else [])
            node = DrawNode(
                f"k{key}c{c}",
                "cluster",
                f"nodes {start}-{start + len(chunk) - 1}",
                f"{len(chunk)} nodes",
                "cluster",
                lines,
                expand=[("cluster", ck)],
            )
            self.size(node)
            top.nodes.append(node)
            self.info[node.key] = {"kind": "cluster", "title": node.title, "ops": dict(ops)}
            sub = Drawing(ck, f"{caption}: nodes {start}-{start + len(chunk) - 1}")
            self.fill(sub, scope, chunk, with_io=False)
            self.drawings[ck] = sub
            self.container[ck] = node.key
            self.node_drawing[node.key] = key
        producer = {name: cluster_of[idx] for name, (kind, idx) in scope.defs.items() if kind == "node"}
        seen: set[tuple[int, int]] = set()
        for ref in refs:
            dst = cluster_of[ref.index]
            for name in ref.node.input:
                src = producer.get(name, io_index.get(name))
                if src is not None and src != dst and (src, dst) not in seen:
                    seen.add((src, dst))
                    top.edges.append(DrawEdge(src, dst, name, self.label(scope, name)))
        for name in scope.outputs:
            out = len(top.nodes)
            top.nodes.append(self.io_node(scope, name, "output"))
            src = producer.get(name, io_index.get(name))
            if src is not None:
                top.edges.append(DrawEdge(src, out, name, self.label(scope, name)))
        self.lay(top)
        self.drawings[key] = top

    def io_node(self, scope: Scope, name: str, role: str) -> DrawNode:
        label = self.label(scope, name)
        node = DrawNode(self.new_key("v"), "io", name, label, role, [])
        self.size(node)
        self.info[node.key] = {"kind": role, "name": name, "type": label, "scope": scope.loc}
        return node

    def size(self, node: DrawNode) -> None:
        text = max([len(node.title) * 1.1, len(node.sub)] + [len(t) for t in node.lines])  # the title is bold
        node.width = max(72.0, min(text, 44) * _CHAR + 20 + (20 if node.expand else 0))
        rows = (2 if node.sub and node.kind != "io" else 1) + len(node.lines)
        node.height = 10 + 16 * rows if node.kind != "io" else 34.0

    def fill(self, d: Drawing, scope: Scope, refs: list[NodeRef], *, with_io: bool) -> None:
        index: dict[str, int] = {}  # value name -> box producing it in this drawing
        # An initializer is folded into its consumers, also where it is listed as a graph input (IR version < 4).
        inits = set(scope.init_names)
        if with_io:
            for name in scope.inputs:
                if name not in inits and name not in index:
                    index[name] = len(d.nodes)
                    d.nodes.append(self.io_node(scope, name, "input"))
        for ref in refs:
            box = len(d.nodes)
            d.nodes.append(self.op_node(scope, ref, inits))
            self.node_drawing[d.nodes[-1].key] = d.key
            for name in ref.node.input:
                if name and name in index and name not in inits:
                    d.edges.append(DrawEdge(index[name], box, name, self.label(scope, name)))
            for name in ref.node.output:
                if name:
                    index.setdefault(name, box)
        if with_io:
            for name in scope.outputs:
                box = len(d.nodes)
                d.nodes.append(self.io_node(scope, name, "output"))
                if name in index:
                    d.edges.append(DrawEdge(index[name], box, name, self.label(scope, name)))
        self.lay(d)

    def op_node(self, scope: Scope, ref: NodeRef, inits: set[str]) -> DrawNode:
        node = ref.node
        key = self.ref_key[id(ref)]
        schema = ref.schema
        formals = [f.name for f in schema.inputs] if schema is not None else []
        folded: list[str] = []
        inputs: list[list[str]] = []
        for k, name in enumerate(node.input):
            formal = formals[min(k, len(formals) - 1)] if formals else f"input[{k}]"
            where = scope.defs.get(name, ("", 0))[0] if name else ""
            if not name:
                origin = "(omitted)"
            elif name in inits:
                origin = "initializer"
                folded.append(f"{formal} {self.label(scope, name)}")
            elif where == "input":
                origin = "function input" if scope.kind == "function" else "graph input"
            elif where == "node":
                origin = "node output"
            else:
                origin = "outer scope" if self.bound.lookup_outer(scope, name) is not None else "undefined"
            inputs.append([formal, name, self.label(scope, name) if name else "", origin])
        outs = [f.name for f in schema.outputs] if schema is not None else []
        outputs = [
            [outs[min(k, len(outs) - 1)] if outs else f"output[{k}]", name, self.label(scope, name) if name else ""]
            for k, name in enumerate(node.output)
        ]
        lines = folded[:_MAX_FOLDED] + ([f"+{len(folded) - _MAX_FOLDED} more"] if len(folded) > _MAX_FOLDED else [])
        title = node.op_type if not node.domain else f"{node.domain}::{node.op_type}"
        fam = family(node.op_type, ref.domain, ref.status)
        d = DrawNode(key, "op", title, node.name, fam, lines, expand=self.node_expansions(ref))
        self.size(d)
        self.info[key] = {
            "kind": "node",
            "op": node.op_type,
            "domain": ref.domain or "ai.onnx",
            "name": node.name,
            "loc": ref.loc,
            "status": ref.status,
            "imported": ref.version,
            "since": schema.since_version if schema is not None else None,
            "function": f"{ref.function.domain}:{ref.function.name}" if ref.function is not None else None,
            "family": fam,
            "attrs": [[a.name, _attr_text(a)] for a in node.attribute],
            "inputs": inputs,
            "outputs": outputs,
            "findings": [],
        }
        return d

    def lay(self, d: Drawing) -> None:
        d.layout = layered_layout([(n.width, n.height) for n in d.nodes], [(e.src, e.dst) for e in d.edges])


def gather(bound: BoundModel, inference: Inference, shapes: ShapeInference, report: Report) -> Gathered:
    """The drawings, the per-node details and the findings (each linked to its node where it names one)."""
    g = _Gatherer(bound, inference, shapes)
    main = g.run()
    findings: list[dict[str, Any]] = []
    for f in report.findings:
        node = _node_of(f.location, g.loc_key)
        item: dict[str, Any] = {"severity": f.severity, "code": f.code, "clause": f.clause, "message": f.message}
        item |= {"location": f.location, "node": node}
        if node is not None:
            g.info[node]["findings"].append(len(findings))
        findings.append(item)
    return Gathered(g.drawings, g.info, findings, main, g.ref_key)


def _node_of(location: str, loc_key: dict[str, str]) -> str | None:
    """The node a finding's location is at or inside: the longest node location that is a prefix of it."""
    best: str | None = loc_key.get(location)
    if best is not None:
        return best
    pos = location.rfind("/")
    while pos > 0:
        key = loc_key.get(location[:pos])
        if key is not None:
            return key
        pos = location.rfind("/", 0, pos)
    return None
