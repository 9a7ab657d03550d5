"""Composing models: prefix every name of a model, and connect two models into one (onnx.compose's API).

:func:`add_prefix` renames the values, nodes, initializers, value infos and model-local functions of a model;
:func:`merge_models` connects outputs of one model to inputs of another. Names are resolved by scope
(Clause 5.4.3): a subgraph's read of a name from an enclosing graph follows that name's renaming, and the
names a subgraph defines are its own. The scopes are those of the bound model (:func:`onnxcore.graph.bind`),
walked by :func:`onnxcore.graph.walk_scopes`; function bodies are scopes of their own, whose names are never
renamed (only the nodes calling a renamed function change).

The results are onnxcore messages; the onnx package's messages are accepted and converted.

Differences from onnx.compose (onnx 1.23), each on purpose:

- Subgraphs: a subgraph's read of an enclosing graph's initializer is renamed with it (onnx renames the outer
  initializers only after the subgraphs, leaving such reads dangling); the ``rename_*`` flags apply in subgraphs
  too (onnx renames subgraphs with every flag on, and only when ``rename_nodes``).
- Functions: a caller is found by (domain, name, overload), in subgraphs too (onnx matches ``op_type`` alone, in
  the top-level graph and function bodies only). An absent node name stays absent (onnx writes an empty one).
- :func:`merge_models` imports each domain once (onnx lists both models' imports, duplicates included), treats
  ``""`` and ``ai.onnx`` as one domain, takes the greater IR version (onnx refuses two), keeps a function both
  models define identically once (onnx refuses any two of one name), refuses a function whose domain versions
  the merge would change, and does not validate the result (onnx runs its checker): call :func:`onnxcore.check`.
- Merging refuses more, early and by name: two nodes of one name (Clause 5.4.1), a name of one top-level graph
  used in a subgraph of the other (it would shadow, Clause 5.4.3), connected values of different element
  types, an input connected twice, ``inputs``/``outputs`` naming no input/output, and kept outputs needing an
  input that ``inputs`` leaves out.
- ``inputs``/``outputs`` keep the graph names and do not copy inputs and outputs into ``value_info`` (onnx's
  extractor does both); a node's subgraphs' reads from outside count as its inputs.
- An output of the second graph that is a connected input stays an output by that name (through an Identity).
- Quantization annotations follow the renaming and are merged (onnx leaves them as they are, and drops them).
"""

from __future__ import annotations

import dataclasses
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from onnxcore.defs.binding import canonical_domain
from onnxcore.errors import MessageTypeError, OnnxCoreError
from onnxcore.graph import BoundModel, Scope, bind, walk_scopes
from onnxcore.limits import DEFAULT_LIMITS
from onnxcore.proto.bridge import as_message, is_onnx_message
from onnxcore.proto.message import Message, copy_message
from onnxcore.proto.messages import (
    FunctionProto,
    GraphProto,
    ModelProto,
    NodeProto,
    OperatorSetIdProto,
    StringStringEntryProto,
    TypeProto,
)

__all__ = [
    "CompositionError",
    "add_prefix",
    "add_prefix_graph",
    "check_overlapping_names",
    "extract_graph",
    "merge_graphs",
    "merge_models",
]

IoMap = Sequence[tuple[str, str]]
"""Pairs ``(output of the first graph, input of the second graph)`` to connect."""

M = TypeVar("M", bound=Message)

# Every subgraph is entered, however deep: a name left unrenamed in a deep subgraph would break the model.
_ALL_SCOPES = dataclasses.replace(DEFAULT_LIMITS, max_nesting_depth=None)


class CompositionError(OnnxCoreError, ValueError):
    """Two models or graphs cannot be composed as asked (the message says what clashes, and where)."""


# ---- scopes and renaming --------------------------------------------------------------------------------


def _bind_graph(graph: GraphProto) -> BoundModel:
    # A bare graph is bound as the graph of a model: the scopes are all this module needs of the binding.
    return bind(ModelProto(graph=graph), limits=_ALL_SCOPES)


def _rename_scopes(
    roots: Iterable[Scope],
    local: Callable[[Scope, Mapping[str, str]], dict[str, str]],
    also: Callable[[Scope], None] | None = None,
) -> None:
    """Rename the values of the graph scopes ``roots`` and the subgraphs below them, in place.

    ``local(scope, outer)`` gives the renaming of the names ``scope`` itself decides (those it defines, and
    any other it chooses); ``outer`` is the renaming in force in the enclosing graphs. A name a scope defines
    and ``local`` leaves out keeps its name there (it hides an outer name of the same spelling); a name it
    reads from an enclosing graph takes that graph's renaming. ``also(scope)`` runs on each scope entered.
    """
    maps: list[ChainMap[str, str]] = []

    def enter(scope: Scope) -> None:
        outer: ChainMap[str, str] = maps[-1] if maps else ChainMap()
        own = {n: n for n in scope.defs}
        own.update(local(scope, outer))
        here = outer.new_child(own)
        maps.append(here)
        _apply(scope, here)
        if also is not None:
            also(scope)

    def exit(_scope: Scope) -> None:
        maps.pop()

    walk_scopes(roots, enter=enter, exit=exit)


def _apply(scope: Scope, names: Mapping[str, str]) -> None:
    # Rewrite every name of the scope's graph through ``names`` (its nodes' subgraphs are scopes of their own).
    g = scope.graph
    assert g is not None
    for ref in scope.nodes:
        node = ref.node
        node.input = [names.get(n, n) for n in node.input]
        node.output = [names.get(n, n) for n in node.output]
    for v in (*g.input, *g.output, *g.value_info):
        v.name = names.get(v.name, v.name)
    for t in g.initializer:
        t.name = names.get(t.name, t.name)
    for s in g.sparse_initializer:
        if s.values is not None:
            s.values.name = names.get(s.values.name, s.values.name)
    for qa in g.quantization_annotation:
        qa.tensor_name = names.get(qa.tensor_name, qa.tensor_name)


def _graph_scopes(bound: BoundModel) -> list[Scope]:
    main = bound.main()
    return [] if main is None else [main]


# ---- add_prefix -------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Renames:
    """Which kinds of names :func:`add_prefix` renames."""

    nodes: bool
    edges: bool
    inputs: bool
    outputs: bool
    initializers: bool
    value_infos: bool


def _prefix_scopes(bound: BoundModel, prefix: str, what: _Renames) -> None:
    def local(scope: Scope, outer: Mapping[str, str]) -> dict[str, str]:
        g = scope.graph
        assert g is not None
        own = set(scope.defs)
        outs = set(scope.outputs)
        infos = {v.name for v in g.value_info}
        renamed: set[str] = set()
        if what.inputs:
            renamed.update(scope.inputs)
        if what.initializers:
            renamed.update(scope.init_names)
        if what.edges:
            renamed.update(o for ref in scope.nodes for o in ref.node.output if o not in outs)
        # An output or value info names a value of this scope, of an enclosing one (then it follows that
        # one's renaming), or of none (a dangling name: renamed with its kind, as onnx does).
        if what.outputs:
            renamed.update(n for n in outs if n in own or n not in outer)
        if what.value_infos:
            renamed.update(n for n in infos if n in own or n not in outer)
        renamed.discard("")
        return {n: prefix + n for n in renamed}

    def also(scope: Scope) -> None:
        g = scope.graph
        assert g is not None
        if what.nodes:
            for ref in scope.nodes:
                if ref.node.name:
                    ref.node.name = prefix + ref.node.name
        if what.initializers:
            for s in g.sparse_initializer:
                if s.indices is not None and s.indices.name:
                    s.indices.name = prefix + s.indices.name

    _rename_scopes(_graph_scopes(bound), local, also)


def _copy_or_refuse(msg: object, cls: type[M], inplace: bool, caller: str) -> M:
    if inplace and is_onnx_message(msg):
        raise MessageTypeError(
            f"{caller}: inplace=True needs onnxcore's {cls.__name__}; the onnx package's is converted (a copy), "
            "so it cannot be changed in place: pass inplace=False and use the result"
        )
    ours = as_message(msg, cls, caller)
    return ours if inplace or ours is not msg else copy_message(ours)


def add_prefix_graph(
    graph: GraphProto,
    prefix: str,
    *,
    rename_nodes: bool = True,
    rename_edges: bool = True,
    rename_inputs: bool = True,
    rename_outputs: bool = True,
    rename_initializers: bool = True,
    rename_value_infos: bool = True,
    inplace: bool = False,
) -> GraphProto:
    """Prefix the names of a graph: nodes, values, inputs, outputs, initializers, value infos.

    Each flag applies to its kind of name in the graph and in every subgraph below it. A value is renamed
    wherever it is named (node inputs and outputs, graph inputs and outputs, initializers, value infos,
    quantization annotations) when a flag of one of its kinds is set; ``rename_edges`` covers the node
    outputs that are not graph outputs (those follow ``rename_outputs``). A subgraph's read of a value of an
    enclosing graph follows that value's renaming. Empty names stay empty; a tensor's external data
    references are not touched (only its name is).

    Args:
        graph: The graph (onnxcore's, or the onnx package's: converted).
        prefix: Prepended to each renamed name.
        rename_nodes: Prefix node names.
        rename_edges: Prefix the values nodes compute (except graph outputs).
        rename_inputs: Prefix graph inputs.
        rename_outputs: Prefix graph outputs.
        rename_initializers: Prefix initializers, dense and sparse.
        rename_value_infos: Prefix the values named by ``value_info``.
        inplace: Change ``graph`` itself (onnxcore's only) instead of a copy.

    Returns:
        The renamed graph (``graph`` itself with ``inplace``).

    Raises:
        MessageTypeError: ``graph`` is not a GraphProto, or ``inplace`` with the onnx package's graph.
    """
    g = _copy_or_refuse(graph, GraphProto, inplace, "add_prefix_graph")
    what = _Renames(rename_nodes, rename_edges, rename_inputs, rename_outputs, rename_initializers, rename_value_infos)
    _prefix_scopes(_bind_graph(g), prefix, what)
    return g


def add_prefix(
    model: ModelProto,
    prefix: str,
    *,
    rename_nodes: bool = True,
    rename_edges: bool = True,
    rename_inputs: bool = True,
    rename_outputs: bool = True,
    rename_initializers: bool = True,
    rename_value_infos: bool = True,
    rename_functions: bool = True,
    inplace: bool = False,
) -> ModelProto:
    """Prefix the names of a model's graph (see :func:`add_prefix_graph`) and of its model-local functions.

    With ``rename_functions`` every model-local function's name is prefixed, and so is the ``op_type`` of
    every node that calls one (identified by domain, name and overload, Clause 8.4) -- in the graph, its
    subgraphs and the function bodies. The names inside function bodies are the functions' own and stay.

    Args:
        model: The model (onnxcore's, or the onnx package's: converted).
        prefix: Prepended to each renamed name.
        rename_nodes: Prefix node names.
        rename_edges: Prefix the values nodes compute (except graph outputs).
        rename_inputs: Prefix graph inputs.
        rename_outputs: Prefix graph outputs.
        rename_initializers: Prefix initializers, dense and sparse.
        rename_value_infos: Prefix the values named by ``value_info``.
        rename_functions: Prefix model-local functions and the nodes calling them.
        inplace: Change ``model`` itself (onnxcore's only) instead of a copy.

    Returns:
        The renamed model (``model`` itself with ``inplace``).

    Raises:
        MessageTypeError: ``model`` is not a ModelProto, or ``inplace`` with the onnx package's model.
    """
    m = _copy_or_refuse(model, ModelProto, inplace, "add_prefix")
    bound = bind(m, limits=_ALL_SCOPES)
    what = _Renames(rename_nodes, rename_edges, rename_inputs, rename_outputs, rename_initializers, rename_value_infos)
    _prefix_scopes(bound, prefix, what)
    if rename_functions:
        for ref in bound.all_nodes():
            if ref.status == "function":
                ref.node.op_type = prefix + ref.node.op_type
        for f in m.functions:
            f.name = prefix + f.name
    return m


# ---- names of two graphs ------------------------------------------------------------------------------------


def _scope_names(scope: Scope) -> set[str]:
    # Every value name a graph scope defines or mentions.
    g = scope.graph
    assert g is not None
    names = set(scope.defs)
    names.update(n for ref in scope.nodes for n in ref.node.input)
    names.update(scope.outputs)
    names.update(v.name for v in g.value_info)
    names.discard("")
    return names


def _graph_names(bound: BoundModel) -> tuple[set[str], set[str]]:
    """(names of the top-level graph, names of every graph scope: the top-level one and its subgraphs)."""
    roots = _graph_scopes(bound)
    everywhere: set[str] = set()

    def enter(scope: Scope) -> None:
        everywhere.update(_scope_names(scope))

    walk_scopes(roots, enter=enter)
    return (_scope_names(roots[0]) if roots else set()), everywhere


def _overlaps(g1: GraphProto, g2: GraphProto, connected: set[str]) -> list[tuple[str, list[str]]]:
    top1, all1 = _graph_names(_bind_graph(g1))
    top2, all2 = _graph_names(_bind_graph(g2))
    top2 -= connected
    all2 -= connected
    # A name of one top-level graph is visible in every subgraph of the other once merged (Clause 5.4.3);
    # two subgraphs, one from each side, are siblings and may use the same names.
    found: list[tuple[str, list[str]]] = []
    edges = (top1 & all2) | (all1 & top2)
    if edges:
        found.append(("edge", sorted(edges)))
    for kind, names in (
        ("value_info", lambda g: [v.name for v in g.value_info]),
        ("initializer", lambda g: [t.name for t in g.initializer]),
        ("sparse_initializer", lambda g: [s.values.name for s in g.sparse_initializer if s.values is not None]),
        ("node", lambda g: [n.name for n in g.node]),
    ):
        both = (set(names(g1)) & set(names(g2))) - connected - {""}
        if both:
            found.append((kind, sorted(both)))
    return found


def check_overlapping_names(g1: GraphProto, g2: GraphProto, io_map: IoMap | None = None) -> list[tuple[str, list[str]]]:
    """The names two graphs would both use once merged (onnx.compose's check, over subgraphs too).

    Args:
        g1: The first graph.
        g2: The second graph.
        io_map: Pairs to be connected: the second graph's connected inputs are left out (they are renamed).

    Returns:
        ``(kind, sorted names)`` for each kind that clashes: ``edge`` (a value name of one top-level graph used
        anywhere in the other), ``value_info``, ``initializer``, ``sparse_initializer``, ``node`` (a node name
        used by both top-level graphs: two nodes of one graph may not share a name, Clause 5.4.1).
    """
    a = as_message(g1, GraphProto, "check_overlapping_names")
    b = as_message(g2, GraphProto, "check_overlapping_names")
    return _overlaps(a, b, {i for _o, i in io_map or ()})


# ---- merge_graphs -------------------------------------------------------------------------------------------


def _outer_reads(scopes: Iterable[Scope]) -> set[str]:
    """The names the given subgraphs (and those below them) read from outside themselves."""
    free: set[str] = set()
    stack: list[ChainMap[str, str]] = []

    def enter(scope: Scope) -> None:
        here = (stack[-1] if stack else ChainMap[str, str]()).new_child(dict.fromkeys(scope.defs, ""))
        stack.append(here)
        free.update(n for ref in scope.nodes for n in ref.node.input if n and n not in here)
        free.update(n for n in scope.outputs if n and n not in here)

    def exit(_scope: Scope) -> None:
        stack.pop()

    walk_scopes(scopes, enter=enter, exit=exit)
    return free


def extract_graph(g: GraphProto, keep_inputs: list[str], keep_outputs: list[str], which: str) -> None:
    """Keep of ``g`` (in place) what computes ``keep_outputs`` from ``keep_inputs`` (onnx.utils.Extractor).

    The nodes that compute the outputs (their subgraphs' reads from outside counted as inputs), stopping at
    ``keep_inputs``, and the initializers, value infos and annotations they use; ``g.input``/``g.output``
    keep the entries named. Used by :func:`merge_models` and by ``extract_model``
    (:mod:`onnxcore.build.interface`).

    Raises:
        CompositionError: the outputs need a graph input that ``keep_inputs`` leaves out; ``which`` names the
            graph in the message (``"first"``, ``"extracted"``).
    """
    main = _bind_graph(g).main()
    assert main is not None
    keep_in = set(keep_inputs)
    producer = {o: ref for ref in main.nodes for o in ref.node.output if o}
    reads: dict[int, set[str]] = {}
    pending = list(keep_outputs)
    while pending:
        name = pending.pop()
        ref = None if name in keep_in else producer.get(name)
        if ref is None or ref.index in reads:
            continue
        r = {n for n in ref.node.input if n}
        r |= _outer_reads(child for _seg, _attr, child in ref.subgraphs)
        reads[ref.index] = r
        pending.extend(r)
    used = set(keep_in) | set(keep_outputs)
    for i, r in reads.items():
        used |= r
        used.update(main.nodes[i].node.output)
    dropped = (set(main.inputs) - keep_in - set(main.init_names)) & used
    if dropped:
        raise CompositionError(
            f"the outputs kept of the {which} graph need its input(s) {', '.join(map(repr, sorted(dropped)))}, "
            "which the inputs kept leave out"
        )
    g.node = [main.nodes[i].node for i in sorted(reads)]
    g.input = [v for v in g.input if v.name in keep_in]
    g.output = [v for v in g.output if v.name in set(keep_outputs)]
    g.initializer = [t for t in g.initializer if t.name in used]
    g.sparse_initializer = [s for s in g.sparse_initializer if s.values is not None and s.values.name in used]
    g.value_info = [v for v in g.value_info if v.name in used]
    g.quantization_annotation = [q for q in g.quantization_annotation if q.tensor_name in used]


def _elem_type(t: TypeProto | None) -> int:
    return t.tensor_type.elem_type if t is not None and t.tensor_type is not None else 0


def _check_io_map(g1: GraphProto, g2: GraphProto, io_map: list[tuple[str, str]]) -> None:
    outs = {v.name: v for v in g1.output}
    ins = {v.name: v for v in g2.input}
    seen: dict[str, str] = {}
    for o, i in io_map:
        if o not in outs:
            raise CompositionError(f"io_map: {o!r} is not an output of the first graph (its outputs: {sorted(outs)})")
        if i not in ins:
            raise CompositionError(f"io_map: {i!r} is not an input of the second graph (its inputs: {sorted(ins)})")
        if i in seen:
            raise CompositionError(f"io_map: input {i!r} of the second graph is connected twice ({seen[i]!r}, {o!r})")
        seen[i] = o
        t1, t2 = _elem_type(outs[o].type), _elem_type(ins[i].type)
        if t1 and t2 and t1 != t2:
            raise CompositionError(
                f"io_map: output {o!r} of the first graph has element type {t1}, "
                f"input {i!r} of the second graph takes element type {t2}"
            )


def _restrict(
    g1: GraphProto, g2: GraphProto, io_map: list[tuple[str, str]], inputs: list[str] | None, outputs: list[str] | None
) -> None:
    # onnx.compose's `inputs`/`outputs`: keep of each graph what computes the outputs kept from the inputs kept.
    if inputs:
        known = {v.name for v in (*g1.input, *g2.input)}
        unknown = [n for n in inputs if n not in known]
        if unknown:
            raise CompositionError(f"merge: inputs {unknown} are inputs of neither graph")
    if outputs:
        known = {v.name for v in (*g1.output, *g2.output)}
        unknown = [n for n in outputs if n not in known]
        if unknown:
            raise CompositionError(f"merge: outputs {unknown} are outputs of neither graph")
    connected_out = {o for o, _i in io_map}
    connected_in = {i for _o, i in io_map}
    in_set = set(inputs or ())
    out_set = set(outputs or ())
    for g, which, link_in, link_out in ((g1, "first", set(), connected_out), (g2, "second", connected_in, set())):
        keep_in = [v.name for v in g.input if not inputs or v.name in in_set | link_in]
        keep_out = [v.name for v in g.output if not outputs or v.name in out_set | link_out]
        if len(keep_in) < len(g.input) or len(keep_out) < len(g.output):
            extract_graph(g, keep_in, keep_out, which)


def _connect(g2: GraphProto, io_map: list[tuple[str, str]]) -> list[NodeProto]:
    """Make ``g2`` read the first graph's outputs instead of its connected inputs (in place).

    Returns the Identity nodes that keep an output of ``g2`` that is a connected input by its name.
    """
    to_output = {i: o for o, i in io_map}
    g2.input = [v for v in g2.input if v.name not in to_output]
    g2.initializer = [t for t in g2.initializer if t.name not in to_output]
    g2.sparse_initializer = [s for s in g2.sparse_initializer if s.values is None or s.values.name not in to_output]
    g2.value_info = [v for v in g2.value_info if v.name not in to_output]
    g2.quantization_annotation = [q for q in g2.quantization_annotation if q.tensor_name not in to_output]
    # An output that is a connected input keeps its name through an Identity (unless the names agree).
    passed = [(k, v.name) for k, v in enumerate(g2.output) if v.name in to_output and to_output[v.name] != v.name]
    main = _bind_graph(g2).main()
    assert main is not None

    def local(scope: Scope, _outer: Mapping[str, str]) -> dict[str, str]:
        return to_output if scope is main else {}

    _rename_scopes([main], local)
    identities = []
    for k, name in passed:
        g2.output[k].name = name
        identities.append(NodeProto(op_type="Identity", input=[to_output[name]], output=[name]))
    return identities


def _merge_graphs(
    g1: GraphProto,
    g2: GraphProto,
    io_map: list[tuple[str, str]],
    inputs: list[str] | None,
    outputs: list[str] | None,
    name: str | None,
    doc_string: str | None,
) -> GraphProto:
    # g1 and g2 are the caller's copies (prefixed already): changed in place.
    _check_io_map(g1, g2, io_map)
    _restrict(g1, g2, io_map, inputs, outputs)
    connected_in = {i for _o, i in io_map}
    overlapping = _overlaps(g1, g2, connected_in)
    if overlapping:
        found = "; ".join(f"{kind} names {', '.join(map(repr, names))}" for kind, names in overlapping)
        raise CompositionError(
            f"cannot merge graphs {g1.name!r} and {g2.name!r}: both use the {found}. "
            "Give prefix1= and/or prefix2= (or add_prefix one of them) so that the names differ"
        )
    connected_out = {o for o, _i in io_map}
    identities = _connect(g2, io_map)
    if outputs:
        out_set = set(outputs)
        out1 = [v for v in g1.output if v.name in out_set]
    else:
        out1 = [v for v in g1.output if v.name not in connected_out]
    described = {v.name for v in (*g1.value_info, *g2.value_info, *out1, *g2.output)}
    linked = [copy_message(v) for v in g1.output if v.name in connected_out and v.name not in described]
    if doc_string is None:
        doc_string = (
            f"Graph combining {g1.name} and {g2.name}\n{g1.name}\n\n{g1.doc_string}\n\n{g2.name}\n\n{g2.doc_string}"
        )
    return GraphProto(
        name=name if name is not None else f"{g1.name}_{g2.name}",
        doc_string=doc_string,
        node=[*g1.node, *g2.node, *identities],
        input=[*g1.input, *g2.input],
        output=[*out1, *g2.output],
        initializer=[*g1.initializer, *g2.initializer],
        sparse_initializer=[*g1.sparse_initializer, *g2.sparse_initializer],
        value_info=[*g1.value_info, *g2.value_info, *linked],
        quantization_annotation=[*g1.quantization_annotation, *g2.quantization_annotation],
    )


def _prefixed_io_map(io_map: IoMap, prefix1: str | None, prefix2: str | None) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for pair in io_map:
        if not isinstance(pair, tuple | list) or len(pair) != 2 or not all(isinstance(n, str) for n in pair):
            raise CompositionError(f"io_map: each entry is (output of the first, input of the second), not {pair!r}")
        pairs.append(((prefix1 or "") + pair[0], (prefix2 or "") + pair[1]))
    return pairs


def merge_graphs(
    g1: GraphProto,
    g2: GraphProto,
    io_map: IoMap,
    *,
    inputs: Sequence[str] | None = None,
    outputs: Sequence[str] | None = None,
    prefix1: str | None = None,
    prefix2: str | None = None,
    name: str | None = None,
    doc_string: str | None = None,
) -> GraphProto:
    """Combine two graphs into one, the outputs of the first named in ``io_map`` feeding inputs of the second.

    The inputs of both graphs but the connected ones stay inputs, and the outputs of both but the connected
    ones of the first stay outputs (a connected output keeps its type as a ``value_info``); the nodes are the
    first graph's, then the second's. Neither argument is changed.

    Args:
        g1: The first graph (onnxcore's, or the onnx package's: converted).
        g2: The second graph.
        io_map: Pairs ``(output of g1, input of g2)`` to connect (names before any prefix).
        inputs: Keep only these inputs (and what the outputs kept need of the graphs, onnx.utils.Extractor).
        outputs: Keep only these outputs (names after the prefixes).
        prefix1: Prefix every name of ``g1`` first (:func:`add_prefix_graph`).
        prefix2: Prefix every name of ``g2`` first.
        name: The merged graph's name (default: ``g1.name + "_" + g2.name``).
        doc_string: Its doc string (default: both graphs' names and doc strings).

    Returns:
        The merged graph.

    Raises:
        CompositionError: A name of ``io_map``, ``inputs`` or ``outputs`` is not an output or input where it
            should be, connected values differ in element type, or the graphs use the same names (the
            message lists them and suggests prefixes).
        MessageTypeError: ``g1`` or ``g2`` is not a GraphProto.
    """
    a = _copy_or_refuse(g1, GraphProto, False, "merge_graphs")
    b = _copy_or_refuse(g2, GraphProto, False, "merge_graphs")
    if prefix1:
        add_prefix_graph(a, prefix1, inplace=True)
    if prefix2:
        add_prefix_graph(b, prefix2, inplace=True)
    pairs = _prefixed_io_map(io_map, prefix1, prefix2)
    return _merge_graphs(
        a, b, pairs, list(inputs) if inputs else None, list(outputs) if outputs else None, name, doc_string
    )


# ---- merge_models -------------------------------------------------------------------------------------------


def _domain_label(domain: str) -> str:
    return repr(domain or "ai.onnx")


def _merge_opsets(m1: ModelProto, m2: ModelProto) -> list[OperatorSetIdProto]:
    """One import per domain (``""`` and ``ai.onnx`` are one), refusing two versions of a domain."""
    first: dict[str, tuple[int, str]] = {}
    merged: list[OperatorSetIdProto] = []
    for which, m in (("first", m1), ("second", m2)):
        for o in m.opset_import:
            d = canonical_domain(o.domain)
            seen = first.get(d)
            if seen is None:
                first[d] = (int(o.version), which)
                merged.append(OperatorSetIdProto(domain=o.domain, version=int(o.version)))
            elif seen[0] != int(o.version):
                raise CompositionError(
                    f"cannot merge: domain {_domain_label(d)} is imported at version {seen[0]} by the {seen[1]} "
                    f"model and at version {o.version} by the {which} model; one model must be converted to the "
                    "other's version first"
                )
    return merged


def _opsets(imports: Iterable[OperatorSetIdProto]) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in imports:
        out.setdefault(canonical_domain(o.domain), int(o.version))
    return out


def _merge_functions(m1: ModelProto, m2: ModelProto, merged_opsets: dict[str, int]) -> list[FunctionProto]:
    """The functions of both models; the same (domain, name, overload) twice only with the same body."""
    kept: dict[tuple[str, str, str], FunctionProto] = {}
    out: list[FunctionProto] = []
    for m in (m1, m2):
        own = _opsets(m.opset_import)
        for f in m.functions:
            key = (canonical_domain(f.domain), f.name, f.overload)
            for o in f.opset_import:
                d = canonical_domain(o.domain)
                # A function's own import yields to its model's (Clause 8.4): the merged model must not
                # bring it a version of a domain it did not run under.
                before, after = own.get(d, int(o.version)), merged_opsets.get(d, int(o.version))
                if before != after:
                    raise CompositionError(
                        f"cannot merge: function {f.domain}:{f.name} runs under version {before} of domain "
                        f"{_domain_label(d)}, which the other model imports at version {after}"
                    )
            other = kept.get(key)
            if other is None:
                kept[key] = f
                out.append(f)
            elif other != f:
                overload = f" (overload {f.overload!r})" if f.overload else ""
                raise CompositionError(
                    f"cannot merge: both models define function {f.domain}:{f.name}{overload} with different "
                    "bodies. Give prefix1= and/or prefix2= (which rename the functions too)"
                )
    return out


def _merge_metadata(m1: ModelProto, m2: ModelProto) -> list[StringStringEntryProto]:
    props: dict[str, str] = {}
    for m in (m1, m2):
        for e in m.metadata_props:
            if e.key in props and props[e.key] != e.value:
                raise CompositionError(
                    f"cannot merge: metadata property {e.key!r} is {props[e.key]!r} in the first model and "
                    f"{e.value!r} in the second"
                )
            props.setdefault(e.key, e.value)
    return [StringStringEntryProto(key=k, value=v) for k, v in props.items()]


def merge_models(
    m1: ModelProto,
    m2: ModelProto,
    io_map: IoMap,
    *,
    inputs: Sequence[str] | None = None,
    outputs: Sequence[str] | None = None,
    prefix1: str | None = None,
    prefix2: str | None = None,
    name: str | None = None,
    doc_string: str | None = None,
    producer_name: str | None = "onnxcore.build.compose.merge_models",
    producer_version: str | None = "1.0",
    domain: str | None = "",
    model_version: int | None = 1,
) -> ModelProto:
    """Combine two models into one, the outputs of the first named in ``io_map`` feeding inputs of the second.

    The graphs are merged by :func:`merge_graphs`. The two models must import the same version of each domain
    both import (``""`` and ``ai.onnx`` are one domain); the merged model imports each domain once, at the
    greater IR version of the two. Model-local functions are merged (one defined identically by both is kept
    once), and so are the metadata properties. Neither argument is changed; the result is not validated
    (:func:`onnxcore.check` does that).

    Args:
        m1: The first model (onnxcore's, or the onnx package's: converted).
        m2: The second model.
        io_map: Pairs ``(output of m1, input of m2)`` to connect (names before any prefix).
        inputs: Keep only these inputs (names after the prefixes).
        outputs: Keep only these outputs (names after the prefixes).
        prefix1: Prefix every name of ``m1`` first (:func:`add_prefix`, functions included).
        prefix2: Prefix every name of ``m2`` first.
        name: The merged graph's name.
        doc_string: The merged graph's doc string.
        producer_name: The merged model's producer name (None: not set).
        producer_version: Its producer version (None: not set).
        domain: Its domain (None: not set).
        model_version: Its model version (None: not set).

    Returns:
        The merged model.

    Raises:
        CompositionError: The models import different versions of a domain, define a function of the same
            (domain, name, overload) differently, give a metadata property different values, or their graphs
            cannot be merged (see :func:`merge_graphs`).
        MessageTypeError: ``m1`` or ``m2`` is not a ModelProto.
    """
    a = as_message(m1, ModelProto, "merge_models")
    b = as_message(m2, ModelProto, "merge_models")
    opset_import = _merge_opsets(a, b)
    if prefix1:
        a = add_prefix(a, prefix1)
    if prefix2:
        b = add_prefix(b, prefix2)
    functions = _merge_functions(a, b, _opsets(opset_import))
    metadata = _merge_metadata(a, b)
    g1 = copy_message(a.graph) if a.graph is not None else GraphProto()
    g2 = copy_message(b.graph) if b.graph is not None else GraphProto()
    pairs = _prefixed_io_map(io_map, prefix1, prefix2)
    graph = _merge_graphs(
        g1, g2, pairs, list(inputs) if inputs else None, list(outputs) if outputs else None, name, doc_string
    )
    return ModelProto(
        ir_version=max(int(a.ir_version), int(b.ir_version)),
        opset_import=opset_import,
        producer_name=producer_name,
        producer_version=producer_version,
        domain=domain,
        model_version=model_version,
        graph=graph,
        metadata_props=metadata,
        functions=[copy_message(f) for f in functions],
    )
