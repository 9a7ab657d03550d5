"""A model through the rewrite pipeline and back: model -> plan graphs -> rewrites -> model (Clause 8.2).

Each graph of the model (the top-level graph, every subgraph of an If/Loop/Scan and every model-local function body)
is bound as a session binds it (:mod:`onnxcore.runtime.compile`: one binding, one choice of kernel), given to the
model rewrites as a :class:`~onnxcore.runtime.optimize.model_graph.ModelGraph` with what inference tells of its
values, and written back: every node as a ``NodeProto`` of its own operator (never a fused step: the rewrites ensure
:data:`~onnxcore.runtime.optimize.model_graph.STANDARD`), every folded value as an initializer. Subgraphs are
rewritten before the graph holding them, so that what they no longer read from the enclosing scope is dead there.

What stays as it was: graph input and output names (and, with ``keep_inputs``, every input), initializers the
rewrites did not replace (the same ``TensorProto``, so a tensor in an external file is never read unless folded),
``metadata_props``, doc strings, the imports, dimension variables. ``value_info`` keeps the entries of values that
still exist; the caller annotates the result with inferred shapes.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from onnxcore.build.helper import make_tensor_value_info
from onnxcore.defs.binding import canonical_domain
from onnxcore.errors import InputError, OnnxCoreError
from onnxcore.graph import bind
from onnxcore.graph.bound import BoundModel, Scope
from onnxcore.graph.functions import FunctionBody
from onnxcore.infer import infer_both
from onnxcore.kernels.folding import FOLD_BUDGET_BYTES
from onnxcore.limits import Limits, limits_in_effect
from onnxcore.proto import AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto, TensorProto
from onnxcore.proto.encoder import encode_parts
from onnxcore.runtime.compile import CompileEnv, compile_function, compile_graph
from onnxcore.runtime.optimize.graph import GraphFacts
from onnxcore.runtime.optimize.model_graph import STANDARD, STANDARD_DOMAINS, ModelGraph, Shape
from onnxcore.runtime.optimize.model_passes import MODEL_PIPELINE, MODEL_REWRITE_NAMES
from onnxcore.runtime.optimize.noops import Known, elem_dtype
from onnxcore.runtime.optimize.pipeline import ConditionError, Rewrite
from onnxcore.runtime.plan import GraphIR
from onnxcore.runtime.seeding import session_rng
from onnxcore.runtime.step import PlanNode
from onnxcore.types import from_array

__all__ = ["RewriteOutcome", "initializers_overridable", "model_size", "rewrite_model"]

# Rounds of the whole pipeline at most (each round runs every rewrite; the pipeline stops at the first round in
# which none changed the model).
_MAX_ROUNDS = 4
# Bytes folding may add beyond the growth factor on a first try (see rewrite_model).
_ROOM = 1 << 16


def model_size(model: ModelProto) -> int:
    """Bytes of ``model`` serialized with its external tensors inline (the file plus its external data); counted
    from the encoder's parts, so that no weight is copied or read."""
    return sum(len(p) for p in encode_parts(model).parts())


@dataclass
class RewriteOutcome:
    """What :func:`rewrite_model` did.

    Attributes:
        model: The rewritten model (a new message; the given one is unchanged).
        fired: Pass name -> how many times it changed a graph of the model.
    """

    model: ModelProto
    fired: dict[str, int] = field(default_factory=dict)


class _State:
    """What one call of :func:`rewrite_model` shares across the model's graphs."""

    def __init__(
        self,
        env: CompileEnv,
        rewrites: Sequence[Rewrite],
        disabled: frozenset[str],
        keep_inputs: bool,
        types: Mapping[str, Mapping[str, Any]],
        shapes: Mapping[str, Mapping[str, Shape]],
        budget_box: list[int],
        domains: frozenset[str],
        constant_inits: bool,
    ) -> None:
        self.env = env
        self.rewrites = [r for r in rewrites if r.name not in disabled]
        self.disabled = disabled
        self.keep_inputs = keep_inputs
        self.types = types
        self.shapes = shapes
        self.budget_box = budget_box
        self.domains = domains
        self.ir_version = int(env.bound.model.ir_version or 0)
        # Initializers listed among the top-level graph's inputs are constants (module docstring).
        self.constant_inits = constant_inits
        self.fired: Counter[str] = Counter()


def rewrite_model(
    model: ModelProto,
    *,
    rewrites: Sequence[Rewrite] = MODEL_PIPELINE,
    disabled: Collection[str] = (),
    keep_inputs: bool = True,
    fold_growth: float = 1.0,
    base_dir: str | None = None,
    limits: Limits | None = None,
    overridable_initializers: bool | None = None,
) -> RewriteOutcome:
    """Run the model rewrites over every graph of ``model`` and write the result back (module docstring).

    Args:
        model: The model (its external tensors resolved, or inline).
        rewrites: The pipeline (:data:`~onnxcore.runtime.optimize.model_passes.MODEL_PIPELINE`).
        disabled: Names of passes to leave out (of ``rewrites`` and the write-back switches).
        keep_inputs: Keep every graph input, read or not (False: the ``drop_unused_inputs`` pass may remove them).
        fold_growth: The file may grow to this factor of its size through constant folding, no further.
        base_dir: Where external data of attribute tensors is resolved.
        limits: The limits folding evaluates under (the kernels' own refusals).
        overridable_initializers: Whether an initializer listed among the graph's inputs stays a value the caller
            may override (Clause 7.2), so that nothing folds through it; False treats it as the constant it is when
            not fed. None: overridable from IR version 4, constant before (:func:`initializers_overridable`).

    Raises:
        InputError: ``disabled`` names no pass, or ``fold_growth`` is below 1.
        ValidationError: the model cannot be bound (a session would refuse it too).
        ConditionError: a rewrite broke its declared postcondition (a defect of that rewrite).
    """
    names = {r.name for r in rewrites} | set(MODEL_REWRITE_NAMES)
    unknown = sorted(set(disabled) - names)
    if unknown:
        raise InputError(f"optimize: no pass named {unknown}; the passes: {sorted(names)}")
    if not fold_growth >= 1.0:
        raise InputError(f"optimize: fold_growth must be at least 1.0 (never shrink the budget below the file), "
                         f"got {fold_growth}")  # fmt: skip
    size = model_size(model)
    limit = int(size * fold_growth)
    # Folding first gets a little room beyond the factor (a folded shape can cost a few bytes more than the nodes it
    # replaces, and the other passes then shrink the file); a result past the factor is made again without it.
    constant = not initializers_overridable(model, overridable_initializers)
    outcome = _rewrite(model, rewrites, disabled, keep_inputs, limit - size + _ROOM, base_dir, limits, constant)
    if model_size(outcome.model) > limit:
        outcome = _rewrite(model, rewrites, disabled, keep_inputs, limit - size, base_dir, limits, constant)
    return outcome


def initializers_overridable(model: ModelProto, choice: bool | None = None) -> bool:
    """Whether the initializers listed among ``model``'s graph inputs are values a caller may override.

    Clause 7.2 lets a consumer allow overriding such an initializer (MAY). Before IR version 4 every initializer had
    to be listed among the inputs, weights included, and onnxruntime never lets a caller override one there (its
    ``Graph::CanOverrideInitializer`` is ``ir_version >= 4``): exporters of that time meant them as constants. So by
    default (``choice`` None) they are overridable from IR 4 and constants before; ``choice`` decides otherwise.
    """
    if choice is not None:
        return bool(choice)
    return int(model.ir_version or 0) >= 4


def _rewrite(
    model: ModelProto,
    rewrites: Sequence[Rewrite],
    disabled: Collection[str],
    keep_inputs: bool,
    growth: int,
    base_dir: str | None,
    limits: Limits | None,
    constant_inits: bool,
) -> RewriteOutcome:
    bound = bind(model, limits=limits)
    inference, shape_result = infer_both(model, bound=bound)
    budget_box = [growth]
    domains = frozenset(ref.node.domain for ref in bound.all_nodes()) - STANDARD_DOMAINS
    env = CompileEnv(bound, base_dir, session_rng(), validated=False)
    state = _State(
        env,
        rewrites,
        frozenset(disabled),
        keep_inputs,
        inference.types(),
        shape_result.shapes,
        budget_box,
        domains,
        constant_inits,
    )
    out = copy.copy(model)
    main = bound.main()
    with limits_in_effect(bound.limits):
        if model.graph is not None and main is not None:
            out.graph = _rewrite_graph(state, model.graph, main, 0, top=True)
        out.functions = [_rewrite_function(state, bound, fn) for fn in model.functions]
    return RewriteOutcome(out, dict(state.fired))


def _known(state: _State, path: str) -> tuple[dict[str, Known], dict[str, Shape]]:
    shapes = dict(state.shapes.get(path, {}))
    known: dict[str, Known] = {}
    for name, tp in state.types.get(path, {}).items():
        tt = getattr(tp, "tensor_type", None)
        dtype = elem_dtype(int(tt.elem_type)) if tt is not None and tt.elem_type else None
        if dtype is not None:
            s = shapes.get(name)
            known[name] = (dtype, None if s is None else len(s))
    return known, shapes


def _facts(state: _State, path: str, shapes: Mapping[str, Shape]) -> GraphFacts:
    """What the structural rewrites read: the model's imports and local functions, element types and shapes."""
    model = state.env.bound.model
    elem_types: dict[str, int] = {}
    for name, tp in state.types.get(path, {}).items():
        tt = getattr(tp, "tensor_type", None)
        if tt is not None and tt.elem_type:
            elem_types[name] = int(tt.elem_type)
    return GraphFacts(
        opsets={canonical_domain(o.domain): int(o.version) for o in model.opset_import},
        functions=frozenset((canonical_domain(f.domain), f.name) for f in model.functions),
        elem_types=elem_types,
        shapes=dict(shapes),
    )


def _run(state: _State, graph: ModelGraph, label: str) -> None:
    for _ in range(_MAX_ROUNDS):
        changed = False
        for rewrite in state.rewrites:
            try:
                if rewrite.apply(graph):
                    state.fired[rewrite.name] += 1
                    changed = True
                    # The one condition a model's rewrites are always held to (the others under check_conditions).
                    if not STANDARD.holds(graph):
                        raise ConditionError(f"{label}: model rewrite {rewrite.name}: postcondition does not hold: "
                                             f"{STANDARD.name}")  # fmt: skip
            except ConditionError:
                raise
            except OnnxCoreError as e:
                raise OnnxCoreError(f"{label}: pass {rewrite.name} failed: {e}") from e
        if not changed:
            return


def _free_names(nodes: Sequence[NodeProto], defined: set[str]) -> list[str]:
    """Names the nodes (and their subgraphs) read without defining them."""
    free: list[str] = []
    defined = set(defined)
    for node in nodes:
        reads = list(node.input)
        for a in node.attribute:
            for g in _graphs(a):
                inner = {vi.name for vi in g.input} | {t.name for t in g.initializer}
                inner |= {s.values.name for s in g.sparse_initializer if s.values is not None}
                reads += _free_names(g.node, inner)
        for n in reads:
            if n and n not in defined and n not in free:
                free.append(n)
        defined.update(o for o in node.output if o)
    return free


def _graphs(a: AttributeProto) -> list[GraphProto]:
    return ([a.g] if a.g is not None else []) + list(a.graphs)


def _with_subgraphs(
    state: _State, bn: PlanNode, ref_scope: Scope, depth: int, label: str, outer: Mapping[str, Any]
) -> PlanNode:
    """``bn`` with its subgraphs rewritten (a copy reading what the new subgraphs read from this scope); ``outer``
    are the constants of the enclosing scopes, constants in the subgraphs too (Clause 5.4.3)."""
    node = bn.node
    if not any(_graphs(a) for a in node.attribute):
        return bn
    ref = ref_scope.nodes[bn.index]
    new_attrs: list[AttributeProto] = []
    for a in node.attribute:
        if a.g is not None:
            sub = a.g
            a = copy.copy(a)
            a.g = _rewrite_graph(state, sub, state.env.subgraph_scope(ref, a.name, sub, label), depth + 1, outer)
        elif a.graphs:
            a = copy.copy(a)
            gs = []
            for k, g in enumerate(a.graphs):
                scope = state.env.subgraph_scope(ref, f"{a.name}[{k}]", g, label)
                gs.append(_rewrite_graph(state, g, scope, depth + 1, outer))
            a.graphs = gs
        new_attrs.append(a)
    new_node = copy.copy(node)
    new_node.attribute = new_attrs
    reads = [n for n in _free_names([new_node], set()) if n not in node.input]
    copy_bn = PlanNode(bn.index, new_node, bn.call, bn.kw, reads)
    copy_bn.inputs, copy_bn.outputs, copy_bn.since = list(bn.inputs), list(bn.outputs), bn.since
    return copy_bn


def _rewrite_graph(
    state: _State,
    g: GraphProto,
    scope: Scope,
    depth: int,
    outer: Mapping[str, Any] | None = None,
    *,
    top: bool = False,
) -> GraphProto:
    label = scope.loc
    ir: GraphIR = compile_graph(state.env, g, scope, depth, label=label)
    inputs = [vi.name for vi in g.input]
    fed = set(inputs)
    if top and state.constant_inits:
        fed -= set(ir.inits)  # an initializer listed as an input is a constant (rewrite_model's docstring)
    own = {n: v for n, v in ir.inits.items() if n not in fed}
    # What the enclosing scopes hold as constants is constant here too, unless a name of this graph hides it.
    local = fed | {o for bn in ir.nodes for o in bn.outputs if o}
    const = {n: v for n, v in (outer or {}).items() if n not in local}
    const.update(own)
    nodes = [_with_subgraphs(state, bn, scope, depth, label, const) for bn in ir.nodes]
    known, shapes = _known(state, label)
    defined = fed | set(ir.inits) | {o for bn in nodes for o in bn.outputs if o}
    sources = fed | {n for bn in nodes for n in (*bn.inputs, *bn.outer) if n and n not in defined}
    graph = ModelGraph(
        nodes,
        const,
        ir.output_names,
        budget=FOLD_BUDGET_BYTES,
        sources=sources,
        known=known,
        shapes=shapes,
        budget_box=state.budget_box,
        domains=state.domains,
        facts=_facts(state, label, shapes),
    )
    _run(state, graph, label)
    return _write_graph(state, g, graph, top=top)


def _node_proto(bn: PlanNode, where: str) -> NodeProto:
    if bn.step_kernel:
        raise ConditionError(f"{where}: a model rewrite left a fused step ({bn.step_kernel}): {STANDARD.name}")
    node = bn.node
    if list(node.input) == bn.inputs and list(node.output) == bn.outputs:
        return node
    node = copy.copy(node)
    node.input = list(bn.inputs)
    node.output = list(bn.outputs)
    return node


def _write_graph(state: _State, g: GraphProto, graph: ModelGraph, *, top: bool) -> GraphProto:
    out = copy.copy(g)
    out.node = [_node_proto(bn, g.name or "graph") for bn in graph.nodes]
    read = set(graph.outputs) | {n for bn in graph.nodes for n in (*bn.inputs, *bn.outer) if n}
    inputs = list(g.input)
    if top and not state.keep_inputs and "drop_unused_inputs" not in state.disabled:
        kept = [vi for vi in inputs if vi.name in read]
        if len(kept) != len(inputs):
            state.fired["drop_unused_inputs"] += 1
            inputs = kept
    drop_unused = "drop_unused_initializers" not in state.disabled
    if top and state.constant_inits and drop_unused:
        # An initializer listed as an input is a constant here: nothing reading it, its input entry goes with it.
        init_names = {t.name for t in g.initializer}
        inputs = [vi for vi in inputs if vi.name not in init_names or vi.name in read]
    input_names = {vi.name for vi in inputs}
    inits: list[TensorProto] = []
    written: set[str] = set()
    dropped = 0
    for t in g.initializer:
        if t.name in graph.added:
            continue  # replaced by a value a rewrite made (never: an initializer's value is its own)
        if t.name in read or t.name in input_names or not drop_unused:
            inits.append(t)
            written.add(t.name)
        else:
            dropped += 1
    constants: list[NodeProto] = []
    for name, value in graph.added.items():
        if name in read and name not in written and not top and state.ir_version < 4:
            # IR 3 lists every initializer among its graph's inputs, which a subgraph's signature (a Loop body's,
            # say) does not allow: a folded value there is a Constant node, as the producers of IR 3 wrote them.
            constants.append(_constant_node(name, value))
            written.add(name)
        elif name in read and name not in written:
            tensor = from_array(value, name)
            inits.append(tensor)
            written.add(name)
            if top and state.ir_version < 4:
                # IR 3 lists every initializer among the graph's inputs (Clause 7.2 of that version).
                inputs = [*inputs, make_tensor_value_info(name, int(tensor.data_type), list(value.shape))]
    out.input = inputs
    sparse = []
    for s in g.sparse_initializer:
        name = s.values.name if s.values is not None else ""
        if name in read or name in input_names or not drop_unused:
            sparse.append(s)
        else:
            dropped += 1
    if dropped:
        state.fired["drop_unused_initializers"] += 1
    out.initializer = inits
    out.sparse_initializer = sparse
    if constants:
        out.node = constants + list(out.node)
    produced = {o for bn in graph.nodes for o in bn.outputs if o}
    out.value_info = [vi for vi in g.value_info if vi.name in produced and vi.name not in written]
    return out


def _rewrite_function(state: _State, bound: BoundModel, fn: FunctionProto) -> FunctionProto:
    """A model-local function with its body rewritten; as it is where a node of it refers to an attribute
    parameter (its body differs per call site) or its body cannot be bound alone."""
    if _has_attribute_refs(fn.node):
        return fn
    scope = bound.function_scope(fn)
    if scope is None:
        return fn
    body = FunctionBody(fn, {a.name: a for a in fn.attribute_proto}, "local")
    try:
        ir = compile_function(state.env, body, scope, {}, 1, label=scope.loc)
    except OnnxCoreError:
        return fn
    known, shapes = _known(state, scope.loc)
    nodes = [_with_subgraphs(state, bn, scope, 1, scope.loc, {}) for bn in ir.nodes]
    graph = ModelGraph(
        nodes,
        {},
        list(fn.output),
        budget=FOLD_BUDGET_BYTES,
        sources=list(fn.input),
        known=known,
        shapes=shapes,
        budget_box=state.budget_box,
        domains=state.domains,
    )
    _run(state, graph, scope.loc)
    if graph.added:
        # A function body has no initializers: a folded value is written as a Constant node.
        consts = [_constant_node(name, value) for name, value in graph.added.items()]
    else:
        consts = []
    out = copy.copy(fn)
    out.node = consts + [_node_proto(bn, scope.loc) for bn in graph.nodes]
    return out


def _constant_node(name: str, value: Any) -> NodeProto:
    return NodeProto(op_type="Constant", output=[name], attribute=[
        AttributeProto(name="value", type=AttributeProto.AttributeType.TENSOR, t=from_array(value, name))
    ])  # fmt: skip


def _has_attribute_refs(nodes: Sequence[NodeProto]) -> bool:
    for node in nodes:
        for a in node.attribute:
            if a.ref_attr_name or any(_has_attribute_refs(g.node) for g in _graphs(a)):
                return True
    return False
