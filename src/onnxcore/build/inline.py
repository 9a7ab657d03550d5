"""Inlining model-local functions (``onnx.inliner``): each call replaced by the function's body (Clause 8.4).

A call's body is the function's nodes with the attribute references bound (:func:`onnxcore.graph.bind_attribute_refs`,
the one place that resolves ``ref_attr_name``), its formal inputs and outputs renamed to the call's actual
names, and every other value and node name made unique in the model (``<call name or op_type>__<k>_<name>``).
Calls are found in the top-level graph, in subgraphs and in the bodies of the functions kept; a body's own
calls are inlined too. A subgraph inside a body reads the renamed values: its reads from outside itself follow
the renaming, its own names are left alone. The result is a new model; the functions inlined are removed.

onnx's ``convert_version=True`` (bringing a function body written for another operator set version to the
model's) is not done: a function importing a domain at a version other than the model's is refused by name.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from onnxcore.build.compose import CompositionError
from onnxcore.defs.binding import canonical_domain
from onnxcore.graph.functions import bind_attribute_refs
from onnxcore.proto.bridge import as_message
from onnxcore.proto.message import adopt_lists, copy_message
from onnxcore.proto.message_walk import walk_messages
from onnxcore.proto.messages import (
    AttributeProto,
    FunctionProto,
    GraphProto,
    ModelProto,
    NodeProto,
    OperatorSetIdProto,
)

__all__ = ["inline_local_functions", "inline_selected_functions"]

_Key = tuple[str, str]


def _all_names(model: ModelProto) -> set[str]:
    names: set[str] = set()
    walk = walk_messages(model, unique=True)
    for i in walk.by_class.get(NodeProto, ()):
        node = walk.entries[i][0]
        assert isinstance(node, NodeProto)
        names.update(node.input)
        names.update(node.output)
        names.add(node.name)
    for i in walk.by_class.get(GraphProto, ()):
        g = walk.entries[i][0]
        assert isinstance(g, GraphProto)
        names.update(v.name for v in (*g.input, *g.output))
    for f in model.functions:
        names.update((*f.input, *f.output))
    return names


def _rename_subgraph(g: GraphProto, mapping: Mapping[str, str]) -> None:
    # A subgraph's reads from outside itself follow the renaming; what it defines keeps its names.
    own = {v.name for v in g.input} | {t.name for t in g.initializer} | {o for n in g.node for o in n.output}
    outer = {k: v for k, v in mapping.items() if k not in own}
    for node in g.node:
        node.input = [outer.get(x, x) for x in node.input]
        _rename_attributes(node, outer)
    for v in g.output:
        v.name = outer.get(v.name, v.name)


def _rename_attributes(node: NodeProto, mapping: Mapping[str, str]) -> None:
    for a in node.attribute:
        for g in ([a.g] if a.g is not None else []) + list(a.graphs):
            _rename_subgraph(g, mapping)


class _Inliner:
    def __init__(self, model: ModelProto, select: Callable[[_Key], bool]) -> None:
        self.functions = {(f.domain, f.name): f for f in model.functions}
        self.select = select
        self.taken = _all_names(model)
        self.counter = itertools.count()
        self.inlined: set[_Key] = set()
        self.opsets: dict[str, int] = {canonical_domain(o.domain): o.version for o in model.opset_import}
        self.new_opsets: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        name = base
        while name in self.taken:
            name = f"{base}_{next(self.counter)}"
        self.taken.add(name)
        return name

    def _check_imports(self, f: FunctionProto) -> None:
        for o in f.opset_import:
            d = canonical_domain(o.domain)
            have = self.opsets.get(d, self.new_opsets.get(d))
            if have is None:
                self.new_opsets[d] = o.version
            elif have != o.version:
                raise CompositionError(
                    f"inline: function {f.domain}:{f.name} imports {d or 'ai.onnx'} version {o.version}, the model "
                    f"version {have}; converting the body between versions is not supported (convert_version)"
                )

    def body(self, call: NodeProto, f: FunctionProto) -> list[NodeProto]:
        self._check_imports(f)
        callsite = {a.name: a for a in call.attribute}
        defaults: dict[str, AttributeProto] = {a.name: a for a in f.attribute_proto}
        nodes = bind_attribute_refs([copy_message(n) for n in f.node], callsite, defaults)
        prefix = f"{call.name or call.op_type}__{next(self.counter)}"
        mapping: dict[str, str] = {"": ""}
        for k, name in enumerate(f.input):
            mapping[name] = call.input[k] if k < len(call.input) else ""
        for k, name in enumerate(f.output):
            mapping[name] = call.output[k] if k < len(call.output) else self.fresh(f"{prefix}_{name}")
        out = []
        for n in nodes:
            n = copy_message(n)
            for name in (*n.input, *n.output):
                if name not in mapping:
                    mapping[name] = self.fresh(f"{prefix}_{name}")
            n.input = [mapping[x] for x in n.input]
            n.output = [mapping[x] for x in n.output]
            if n.name:
                n.name = self.fresh(f"{prefix}_{n.name}")
            _rename_attributes(n, mapping)
            out.append(n)
        return out

    def nodes(self, nodes: Iterable[NodeProto], depth: int = 0) -> list[NodeProto]:
        if depth > 256:
            raise CompositionError("inline: functions call each other more than 256 levels deep (recursion?)")
        out: list[NodeProto] = []
        for node in nodes:
            key = (node.domain, node.op_type)
            f = self.functions.get(key)
            if f is not None and self.select(key):
                self.inlined.add(key)
                out.extend(self.nodes(self.body(node, f), depth + 1))
                continue
            for a in node.attribute:
                for g in ([a.g] if a.g is not None else []) + list(a.graphs):
                    g.node = self.nodes(g.node, depth)
            out.append(node)
        return out


def _inline(model: ModelProto | Any, select: Callable[[_Key], bool], caller: str) -> ModelProto:
    m = copy_message(as_message(model, ModelProto, caller))
    inliner = _Inliner(m, select)
    if m.graph is not None:
        m.graph.node = inliner.nodes(m.graph.node)
    kept = [f for f in m.functions if not select((f.domain, f.name))]
    for f in kept:
        f.node = inliner.nodes(f.node)
    m.functions = kept
    m.opset_import = [
        *m.opset_import,
        *(OperatorSetIdProto(domain=d, version=v) for d, v in inliner.new_opsets.items()),
    ]
    return adopt_lists(m)


def inline_local_functions(model: ModelProto | Any, convert_version: bool = False) -> ModelProto:
    """The model with every call of a model-local function replaced by its body, and no functions left.

    Args:
        model: The model (onnxcore's or onnx's; not changed).
        convert_version: Accepted for onnx's signature; a body written for another operator set version is
            refused rather than converted.

    Raises:
        CompositionError: a function importing a domain at another version than the model, or calls nested
            deeper than 256 (a ``ValueError``).
    """
    return _inline(model, lambda _key: True, "inline_local_functions")


def inline_selected_functions(
    model: ModelProto | Any, function_ids: Sequence[tuple[str, str]], exclude: bool = False
) -> ModelProto:
    """The model with the calls of the functions named by ``(domain, name)`` inlined (all others with ``exclude``).

    The functions inlined are removed from the model; the others stay, with the selected calls in their bodies
    inlined too.
    """
    chosen = {(d, n) for d, n in function_ids}
    return _inline(model, lambda key: (key in chosen) != exclude, "inline_selected_functions")
