"""Graph rules: names and scoping (Clauses 5.4, 7.1, 7.2, 7.6), topology (7.5, 10.2), limits (15.4)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import chain
from operator import attrgetter

from onnxcore.limits import NESTING_REFUSAL
from onnxcore.proto.messages import AttributeProto, TensorShapeProto
from onnxcore.validate.catalog import rule
from onnxcore.validate.context import Context, Resolution, Scope

__all__ = ["resolve"]

Found = Iterator[tuple[str, str]]
_NODE = attrgetter("node")
_NAME = attrgetter("name")
_OUTPUT = attrgetter("output")


def resolve(ctx: Context) -> Resolution:
    """Resolve every use of every scope (Clauses 5.4.2, 5.4.3, 7.5)."""
    if ctx.resolution is not None:
        return ctx.resolution
    res = Resolution()
    for scope in ctx.scopes:
        defs = scope.defs
        back: list[tuple[int, int, str, str]] = []  # (producer, consumer, location, message)
        for ref in scope.nodes:
            idx = ref.index
            ins = ref.node.input
            # Most nodes use only values defined before them in their own scope: told by a lookup per input, the
            # inputs of a node that may have a finding (omitted, outer, undefined, later) are then resolved one by one.
            for name in ins:
                d = defs.get(name)
                if d is None or (d[0] == "node" and d[1] >= idx):
                    break
            else:
                continue
            for k, name in enumerate(ins):
                if not name:
                    continue
                d = defs.get(name)
                if d is None:
                    outer = ctx.lookup_outer(scope, name)
                    if outer is None:
                        res.undefined.append(
                            (f"{ref.loc}/input[{k}]", f"{ref.label()} consumes {name!r}, which nothing produces")
                        )
                    else:
                        osc, od, owner_idx = outer
                        if od[0] == "node" and od[1] >= owner_idx:
                            res.order.append(
                                (
                                    f"{ref.loc}/input[{k}]",
                                    f"{name!r} comes from {osc.loc}/node[{od[1]}], which follows the node "
                                    f"holding this subgraph ({osc.loc}/node[{owner_idx}])",
                                )
                            )
                elif d[0] == "node" and d[1] >= idx:
                    ref_p = scope.nodes[d[1]]
                    msg = f"{name!r} is produced later, by {ref_p.loc} ({ref_p.label()})"
                    back.append((d[1], idx, f"{ref.loc}/input[{k}]", msg))
        for k, name in enumerate(scope.outputs):
            if name and name not in defs and ctx.lookup_outer(scope, name) is None:
                res.undefined.append((f"{scope.loc}/output[{k}]", f"graph output {name!r} is produced by nothing"))
        if back:
            on_cycle = _cycle_nodes(scope)
            if on_cycle:
                res.cycles.append(
                    (
                        scope.loc,
                        "the graph is not acyclic: nodes "
                        + ", ".join(f"node[{i}]" for i in sorted(on_cycle)[:10])
                        + (" ..." if len(on_cycle) > 10 else "")
                        + " lie on a cycle",
                    )
                )
            # An edge inside a cycle is reported as the cycle, not also as an ordering fault.
            res.order.extend((loc, msg) for p, c, loc, msg in back if not (p in on_cycle and c in on_cycle))
    ctx.resolution = res
    return res


def _cycle_nodes(scope: Scope) -> set[int]:
    """Indexes of the nodes on a cycle (Kahn's algorithm forwards, then backwards)."""
    n = len(scope.nodes)
    producer: dict[str, int] = {}
    for ref in scope.nodes:
        for o in ref.node.output:
            if o:
                producer.setdefault(o, ref.index)
    succ: list[list[int]] = [[] for _ in range(n)]
    pred: list[list[int]] = [[] for _ in range(n)]
    for ref in scope.nodes:
        for name in ref.node.input:
            p = producer.get(name)
            if p is not None:
                succ[p].append(ref.index)
                pred[ref.index].append(p)
    alive = _peel(n, succ, pred, set(range(n)))
    return _peel(n, pred, succ, alive)


def _peel(n: int, succ: list[list[int]], pred: list[list[int]], alive: set[int]) -> set[int]:
    indeg = {i: sum(1 for p in pred[i] if p in alive) for i in alive}
    queue = [i for i, d in indeg.items() if d == 0]
    removed: set[int] = set()
    while queue:
        i = queue.pop()
        removed.add(i)
        for s in succ[i]:
            if s in indeg and s not in removed:
                indeg[s] -= 1
                if indeg[s] == 0:
                    queue.append(s)
    return alive - removed


@rule("E-VALUE-UNDEFINED", "7.5", "a value consumed (by a node or as a graph output) that nothing produces (10.2)")
def value_undefined(ctx: Context) -> Found:
    yield from resolve(ctx).undefined


@rule("E-TOPO-ORDER", "7.5", "a node that appears before a node producing one of its inputs")
def topo_order(ctx: Context) -> Found:
    yield from resolve(ctx).order


@rule("E-TOPO-CYCLE", "7.5", "a graph that is not acyclic (10.2)")
def topo_cycle(ctx: Context) -> Found:
    yield from resolve(ctx).cycles


@rule("E-VALUE-DUPLICATE", "7.5", "a value defined more than once in one graph (5.4.2; SSA form, 10.2)")
def value_duplicate(ctx: Context) -> Found:
    for scope in ctx.scopes:
        seen: dict[str, str] = {}
        inputs: set[str] = set()
        for k, name in enumerate(scope.inputs):
            if not name:
                continue
            if name in seen:
                yield f"{scope.loc}/input[{k}]", f"{name!r} is already defined as {seen[name]}"
            else:
                seen[name] = f"input[{k}]"
                inputs.add(name)
        init_seen: set[str] = set()
        for k, name in enumerate(scope.init_names):
            if not name:
                continue
            where = _init_loc(scope, k)
            if name in init_seen:
                yield where, f"initializer {name!r} is defined twice"
            elif name in seen and name not in inputs:
                yield where, f"{name!r} is already defined as {seen[name]}"
            init_seen.add(name)
            seen.setdefault(name, "an initializer")
        for ref, k, name in scope.dup_defs:
            kind, idx = scope.defs[name]
            first = f"output of {scope.nodes[idx].loc}" if kind == "node" else seen.get(name, kind)
            yield f"{ref.loc}/output[{k}]", f"{name!r} is already defined as {first}"


def _init_loc(scope: Scope, k: int) -> str:
    g = scope.graph
    assert g is not None
    n_dense = len(g.initializer)
    if k < n_dense:
        name = g.initializer[k].name
        return f'{scope.loc}/initializer[{k}] "{name}"'
    return f"{scope.loc}/sparse_initializer[{k - n_dense}]"


@rule("E-NAME-EMPTY", "5.4.1", "an empty name where a name is required")
def name_empty(ctx: Context) -> Found:
    # A node without an operator binds to no definition (it is among the unusual nodes), and an attribute of any
    # node is among the messages the context walked: when neither has an empty name, the nodes need no visit.
    nodes_clean = all(ref.node.op_type for ref in ctx.unusual) and not any(
        ctx.entries[i][0].has("name") and not ctx.entries[i][0].name  # type: ignore[attr-defined]
        for i in ctx.of(AttributeProto)
    )
    for scope in ctx.scopes:
        what = "function" if scope.kind == "function" else "graph"
        for k, name in enumerate(scope.inputs):
            if not name:
                yield f"{scope.loc}/input[{k}]", f"{what} input {k} has an empty name"
        for k, name in enumerate(scope.outputs):
            if not name:
                yield f"{scope.loc}/output[{k}]", f"{what} output {k} has an empty name"
        for k, name in enumerate(scope.init_names):
            if not name:
                yield _init_loc(scope, k), f"initializer {k} has an empty name"
        g = scope.graph
        if g is not None:
            for k, vi in enumerate(g.value_info):
                if vi.has("name") and not vi.name:
                    yield f"{scope.loc}/value_info[{k}]", "a value_info entry has an empty name"
        if scope.kind == "function":
            f = scope.function
            assert f is not None
            if not f.name:
                yield scope.loc, "the function has an empty name"
            for k, a in enumerate(f.attribute):
                if not a:
                    yield f"{scope.loc}/attribute[{k}]", "a function attribute has an empty name"
        if nodes_clean:
            continue
        for ref in scope.nodes:
            if not ref.node.op_type:
                yield ref.loc, "the node names no operator (op_type is empty; Clause 7.3.1)"
            for k, at in enumerate(ref.node.attribute):
                if at.has("name") and not at.name:
                    yield f"{ref.loc}/attribute[{k}]", "an attribute has an empty name"


_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _all_identifiers(names: Iterable[str]) -> bool:
    """Whether every non-empty name is a C identifier: an ASCII string that is a Python identifier is one (Python's
    identifier syntax restricted to ASCII is C's), tested by C-level calls only."""
    given = list(filter(None, names))
    return "".join(given).isascii() and all(map(str.isidentifier, given))


def _bad_names(scope: Scope, seen: set[str]) -> Iterator[tuple[str, str]]:
    """(name, location) of each name of a scope not yet in ``seen`` that is not a C identifier: its graph's name,
    inputs, outputs, initializers, and each node's name and outputs. A location is rendered only for a bad name
    (the test of a good name is all most names cost)."""
    ok = _C_IDENTIFIER.fullmatch
    loc = scope.loc
    g = scope.graph
    if g is not None:
        if g.name and not ok(g.name) and g.name not in seen:
            seen.add(g.name)
            yield g.name, loc
        for field, values in (("input", g.input), ("output", g.output)):
            for k, vi in enumerate(values):
                if vi.name and not ok(vi.name) and vi.name not in seen:
                    seen.add(vi.name)
                    yield vi.name, f'{loc}/{field}[{k}] "{vi.name}"'
        for k, t in enumerate(g.initializer):
            if t.name and not ok(t.name) and t.name not in seen:
                seen.add(t.name)
                yield t.name, f'{loc}/initializer[{k}] "{t.name}"'
    else:
        for field, names in (("input", scope.inputs), ("output", scope.outputs)):
            for k, name in enumerate(names):
                if name and not ok(name) and name not in seen:
                    seen.add(name)
                    yield name, f"{loc}/{field}[{k}]"
    nodes = scope.nodes
    # The nodes' outputs as the scope's definitions (dict keys, no visit of each node's output list): every non-empty
    # output is among them, spelled alike, and the other names are tested above anyway.
    if _all_identifiers(chain(map(_NAME, map(_NODE, nodes)), scope.defs)):
        return  # the common case, tested without a Python step per node
    for ref in nodes:
        node = ref.node
        name = node.name
        if name and not ok(name) and name not in seen:
            seen.add(name)
            yield name, ref.loc
        for k, name in enumerate(node.output):
            if name and not ok(name) and name not in seen:
                seen.add(name)
                yield name, f"{ref.loc}/output[{k}]"


@rule("W-NAME-SYNTAX", "5.4.1", "a name of a value, node or graph that is not a C identifier (one finding per name)")
def name_syntax(ctx: Context) -> Found:
    # A SHOULD that exporters rarely follow ("/encoder/layer.0/Add_output_0"): one finding per offending name, at the
    # place that first gives it, so that the command line and the report can point at it (the runner lists at most
    # MAX_FINDINGS_PER_RULE of them).
    seen: set[str] = set()
    for scope in ctx.scopes:
        for name, where in _bad_names(scope, seen):
            yield where, f"{name!r} is not in the identifier syntax of ISO/IEC 9899 (Clause 5.4.1: SHOULD)"


@rule("W-DIM-SYNTAX", "6.5.2", "a dimension variable that is not a C identifier (one finding per variable)")
def dim_syntax(ctx: Context) -> Found:
    seen: set[str] = set()
    for i in ctx.of(TensorShapeProto.Dimension):
        d = ctx.entries[i][0]
        name = getattr(d, "dim_param", "")
        if name and name not in seen and not _C_IDENTIFIER.fullmatch(name):
            seen.add(name)
            yield (
                ctx.path(i),
                f"dimension variable {name!r} is not in the identifier syntax of ISO/IEC 9899 (Clause 6.5.2: SHOULD)",
            )


@rule("E-NODE-NAME-DUPLICATE", "5.4.1", "two nodes of one graph with the same (non-empty) name")
def node_name_duplicate(ctx: Context) -> Found:
    for ref, first in ctx.dup_node_names:
        yield ref.loc, f"node name {ref.node.name!r} is already used by node[{first}]"


@rule("E-ATTR-DUPLICATE", "7.4", "two attributes of one node with the same name")
def attr_duplicate(ctx: Context) -> Found:
    for ref in ctx.multi_attr:
        attrs = ref.node.attribute
        seen: set[str] = set()
        for k, a in enumerate(attrs):
            if a.name in seen:
                yield f'{ref.loc}/attribute[{k}] "{a.name}"', f"attribute {a.name!r} is given twice"
            seen.add(a.name)


@rule("E-SCOPE-SHADOW", "5.4.3", "a subgraph defines a name already visible from an enclosing graph")
def scope_shadow(ctx: Context) -> Found:
    for scope in ctx.scopes:
        if scope.parent is None:
            continue
        for name, (kind, idx) in scope.defs.items():
            outer = ctx.lookup_outer(scope, name)
            if outer is None:
                continue
            if kind == "input":
                where = f"{scope.loc}/input[{idx}]"
            elif kind == "initializer":
                where = _init_loc(scope, idx)
            else:
                ref = scope.nodes[idx]
                k = list(ref.node.output).index(name)
                where = f"{ref.loc}/output[{k}]"
            yield where, f"{name!r} shadows a value of the enclosing graph {outer[0].loc}"


@rule("E-SUBGRAPH-INIT-INPUT", "7.2", "a subgraph name that is both an input and an initializer (IR version >= 4)")
def subgraph_init_input(ctx: Context) -> Found:
    if 0 < ctx.ir_version < 4:
        return
    for scope in ctx.scopes:
        if scope.kind != "subgraph":
            continue
        inputs = set(scope.inputs)
        for k, name in enumerate(scope.init_names):
            if name and name in inputs:
                yield _init_loc(scope, k), f"{name!r} is both an input and an initializer of the subgraph"


@rule("E-SUBGRAPH-CYCLE", "7.6", "a subgraph reachable from itself through its nodes' attributes")
def subgraph_cycle(ctx: Context) -> Found:
    for loc in ctx.graph_cycles:
        yield loc, "this attribute holds a graph that encloses it"


@rule("E-GRAPH-NAME", "7.1", "a graph without a name")
def graph_name(ctx: Context) -> Found:
    for scope in ctx.scopes:
        if scope.graph is not None and not scope.graph.name:
            yield scope.loc, "the graph has no name"


@rule(
    "E-IO-TYPE",
    "7.1",
    "a top-level input or output without a type, or a tensor one without element type or shape (6.5.1)",
)
def io_type(ctx: Context) -> Found:
    g = ctx.model.graph
    if g is None:
        return
    for field, values in (("input", g.input), ("output", g.output)):
        for k, vi in enumerate(values):
            loc = f'graph/{field}[{k}] "{vi.name}"'
            tp = vi.type
            kind = tp.which_oneof("value") if tp is not None else None
            if kind is None:
                yield loc, f"top-level {field} {vi.name!r} declares no type"
            elif kind in ("tensor_type", "sparse_tensor_type"):
                t = getattr(tp, kind)
                if not t.has("elem_type"):
                    yield loc, f"top-level {field} {vi.name!r} declares no element type"
                if t.shape is None:
                    yield loc, f"top-level {field} {vi.name!r} declares no shape, so its rank is not stated"


@rule("E-SUBGRAPH-ARITY", "7.6", "the inputs or outputs of an If/Loop/Scan body disagree with the node")
def subgraph_arity(ctx: Context) -> Found:
    for scope in ctx.scopes:
        owner = scope.owner
        if owner is None or owner.domain != "" or owner.status != "schema":
            continue
        op = owner.node.op_type
        g = scope.graph
        assert g is not None
        n_in, n_out = len(owner.node.input), len(owner.node.output)
        b_in, b_out = len(g.input), len(g.output)
        want_in: int | None = None
        want_out: int | None = None
        if op == "If" and scope.attr_name in ("then_branch", "else_branch"):
            want_in, want_out = 0, n_out
        elif op == "Loop" and scope.attr_name == "body":
            # body(iteration, cond, v_1..v_N) -> (cond, v_1..v_N, scan_1..scan_K); node outputs N + K.
            want_in, want_out = 2 + max(n_in - 2, 0), 1 + n_out
        elif op == "Scan" and scope.attr_name == "body":
            since = owner.schema.since_version if owner.schema is not None else 9
            want_in = n_in - 1 if since < 9 else n_in
            want_out = n_out
        if want_in is not None and b_in != want_in:
            yield scope.loc, f"the {op} body declares {b_in} input(s); the node implies {want_in}"
        # A branch of If yields exactly the node's outputs (7.6): one more has nowhere to go. Loop and Scan bodies
        # may yield what the node leaves unnamed at the end.
        if want_out is not None and (b_out < want_out or (op == "If" and b_out > want_out)):
            yield scope.loc, f"the {op} body declares {b_out} output(s); the node implies {want_out}"


@rule(NESTING_REFUSAL, "15.4", "subgraphs nested deeper than Limits.max_nesting_depth (a refusal)")
def limit_nesting(ctx: Context) -> Found:
    for loc, depth in ctx.too_deep:
        yield (
            loc,
            f"subgraph nesting depth {depth} exceeds the limit {ctx.limits.max_nesting_depth}; "
            "the graphs below it were not checked",
        )
