"""Binding the nodes of a graph to what evaluates them, from the bound model (Clause 8, 8.4, 14.3).

The binding itself is the bound model's (:mod:`onnxcore.graph.bound`: one precedence rule, shared with the
validator and inference); this module only acts on it, for every node of the graph, of its subgraphs and of
the function bodies it calls:

* ``function`` (a model-local function, which takes precedence over an operator definition and over any
  kernel, Clause 8.4): its body, compiled for the call site;
* ``schema``: the kernel registered for exactly the definition's ``since_version`` (Clause 14.3), for an
  onnxruntime definition the kernel a custom domain would bind to, else the definition's own function body
  (:meth:`BoundModel.body_scope`), else unsupported;
* ``custom`` (a domain ONNX 1-2 does not define, Clause 16.1): the kernel registered with the greatest
  since_version not above the imported version, else unsupported;
* any other status: unsupported.

The choice is :func:`onnxcore.kernels.select.select`'s, the one every caller makes.

A kernel is registered in the session's own kernels (``custom_ops``, a :class:`KernelSet`) or in the process-wide
registry; at the same (domain, op_type, since_version) the session's wins.

What cannot be bound is collected in the :class:`CompileEnv`, so that a session refuses the model naming
every such operator at once (Clause 4.4). A function body is compiled per call site: its attribute references
are resolved (:func:`~onnxcore.graph.functions.bind_attribute_refs`) and each resolved node keeps the binding
of the bound node at the same index.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from onnxcore.defs.flags import is_flag
from onnxcore.defs.opschema import OpSchema
from onnxcore.errors import EvaluationError, LimitError, OnnxCoreError, ValidationError
from onnxcore.graph.attributes import attribute_value, constant_array
from onnxcore.graph.bound import BoundModel, NodeRef, Scope
from onnxcore.graph.functions import FunctionBody, bind_attribute_refs
from onnxcore.infer.rules import bind_inputs, formal_at
from onnxcore.kernels.registry import KernelContext, KernelSet, prepared_call
from onnxcore.kernels.select import select_node
from onnxcore.limits import NESTING_REFUSAL
from onnxcore.proto import AttributeProto, FunctionProto, GraphProto, NodeProto, TypeProto
from onnxcore.runtime.gradient import bind_gradients
from onnxcore.runtime.plan import GraphIR, Plan
from onnxcore.runtime.step import PlanNode
from onnxcore.types import to_array, value_from_proto
from onnxcore.types.typestr import type_string

__all__ = ["CompileEnv", "compile_function", "compile_graph"]


class CompileEnv:
    """State shared while compiling one model.

    Attributes:
        bound: The bound model every binding comes from.
        limits: Its limits (``max_nesting_depth`` also bounds function calls here).
        base_dir: Directory for resolving external tensor data in attributes.
        rng: Random generator handed to context kernels, or a function making it on the first draw.
        validated: The validator passed the bound model (see :func:`_check_signature`).
        unsupported: (domain, op_type, imported version) of every node that cannot be bound.
        custom_ops: The session's own kernels, bound before the process-wide registry's at the same key.
        disabled_rewrites: The plan-time rewrites the plans of this model leave out, by name.
    """

    def __init__(
        self,
        bound: BoundModel,
        base_dir: str | Path | None,
        rng: Any,
        *,
        validated: bool = False,
        custom_ops: KernelSet | None = None,
        disabled_rewrites: frozenset[str] = frozenset(),
    ) -> None:
        if custom_ops is not None and not isinstance(custom_ops, KernelSet):
            raise TypeError(f"custom_ops: expected an onnxcore.kernels.KernelSet, got {type(custom_ops).__name__}")
        self.bound = bound
        self.custom_ops = custom_ops
        self.disabled_rewrites = disabled_rewrites
        # The validator passed this bound model: what it reports as errors of a node's signature is not checked
        # again at binding (only the flag values, which it only warns of, are refused here).
        self.validated = validated
        self.limits = bound.limits
        self.base_dir = None if base_dir is None else str(base_dir)
        self.rng = rng
        self.unsupported: list[tuple[str, str, int]] = []
        self._fn_stack: list[tuple[str, str, str]] = []
        self._local_bodies: dict[int, FunctionBody] = {}

    def report_unsupported(self, domain: str, op_type: str, version: int) -> None:
        """Record an operator that has neither a kernel nor a body (Clause 4.4, 16.1)."""
        key = (domain, op_type, version)
        if key not in self.unsupported:
            self.unsupported.append(key)

    def local_body(self, fn: FunctionProto) -> FunctionBody:
        """The body of a model-local function, with the defaults of its attribute parameters (Clause 8.4)."""
        body = self._local_bodies.get(id(fn))
        if body is None:
            body = self._local_bodies[id(fn)] = FunctionBody(fn, {a.name: a for a in fn.attribute_proto}, "local")
        return body

    def subgraph_scope(self, ref: NodeRef, seg: str, graph: GraphProto, label: str) -> Scope:
        """The bound scope of the subgraph ``seg`` (``body``, ``branches[1]``) of the node ``ref``.

        Matched by position, not identity: in a function body compiled for a call site, a subgraph whose nodes
        refer to attribute parameters is a resolved copy of the one the bound model holds.
        """
        for s, _name, scope in ref.subgraphs:
            if s == seg:
                return scope
        # A graph object held twice was entered once, where it occurs first.
        shared = self.bound.graph_scope(graph)
        if shared is None:
            raise ValidationError(f"{label}: the subgraph was not bound (Clause 7.6)")
        return shared


class _FunctionCall:
    """Evaluates a function body for one call site; returns one value per function output."""

    __slots__ = ("n_out", "plan", "positions")

    def __init__(self, plan: Plan, positions: list[int], n_out: int) -> None:
        self.plan = plan
        self.positions = positions
        self.n_out = n_out

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        res = self.plan.run(args)
        out: list[Any] = [None] * self.n_out
        for p, v in zip(self.positions, res):
            out[p] = v
        return tuple(out)


class _SubgraphCall:
    """Calls a context kernel whose attributes hold graphs, with the enclosing scope captured.

    The values the subgraphs read from the enclosing scope arrive as extra positional arguments
    after the node's own inputs (so that liveness and freeing see them as uses of the node).
    """

    __slots__ = ("ctx_args", "fn", "n_in", "outer_names", "subplans")

    def __init__(
        self,
        fn: Callable[..., Any],
        n_in: int,
        outer_names: list[str],
        subplans: dict[int, Plan],
        ctx_args: dict[str, Any],
    ) -> None:
        self.fn = fn
        self.n_in = n_in
        self.outer_names = outer_names
        self.subplans = subplans
        self.ctx_args = ctx_args

    def __call__(self, *args: Any, **kw: Any) -> Any:
        scope = dict(zip(self.outer_names, args[self.n_in :]))
        subplans = self.subplans

        def run_subgraph(graph: GraphProto, inputs: Sequence[Any], outer: Mapping[str, Any] | None = None) -> list[Any]:
            plan = subplans.get(id(graph))
            if plan is None:
                raise OnnxCoreError("run_subgraph: the graph is not an attribute of this node")
            if len(inputs) != len(graph.input):
                # A body's inputs are fixed by its operator (Loop: 2 + carried values, Scan: states + scan
                # inputs); an unfed one would be read as missing deep inside the body.
                raise EvaluationError(
                    f"the body {graph.name!r} declares {len(graph.input)} inputs, the operator feeds {len(inputs)}"
                )
            return plan.run(inputs, scope if outer is None else outer)

        ctx = KernelContext(run_subgraph=run_subgraph, **self.ctx_args)
        return self.fn(ctx, *args[: self.n_in], **kw)


def _graph_types(g: GraphProto | FunctionProto) -> dict[str, TypeProto]:
    types: dict[str, TypeProto] = {}
    vis = list(g.value_info)
    if isinstance(g, GraphProto):
        vis += list(g.input) + list(g.output)
    for vi in vis:
        if vi.type is not None:
            types[vi.name] = vi.type
    return types


def _check_depth(env: CompileEnv, depth: int, label: str) -> None:
    # The validator's code for the same refusal, so that all three passes name it alike.
    lim = env.limits.max_nesting_depth
    if lim is not None and depth > lim:
        raise LimitError(
            f"{label}: subgraphs and function calls nest deeper than max_nesting_depth={lim} "
            f"({NESTING_REFUSAL}, Clause 15.4)"
        )


def _check_signature(
    where: str,
    node: NodeProto,
    domain: str,
    version: int,
    since: int,
    schema: OpSchema,
    kw: Mapping[str, Any],
    validated: bool,
) -> None:
    """Refuse at binding what the validator reports of a node's signature, so that an unchecked session never
    hands a kernel what its bound version does not define (one kernel serves several versions: LSTM-7 with
    layout ran as LSTM-14), too few inputs, nothing for a required one, or a flag it would have to guess at.
    Once the validator has passed the model (``validated``), only the flags are left to check: the rest are its
    errors (E-ATTR-UNKNOWN, E-INPUT-ARITY, E-OUTPUT-ARITY, E-OUTPUT-EXTRA, E-INPUT-UNSUPPLIED), flags only its
    warning (W-ATTR-FLAG)."""
    label = f"{node.op_type}-{since}"
    for a in node.attribute:
        d = schema.attributes.get(a.name)
        if d is None:
            if validated:
                continue
            raise ValidationError(
                f"{where}: attribute {a.name!r} is not defined by {label} (opset {version}; Clause 10.4)"
            )
        if not validated and a.type and d.type and a.type != d.type:
            # The validator's E-ATTR-TYPE, for an unchecked session: a plan-time rewrite or a kernel would read a
            # graph where it expects a list of integers.
            raise ValidationError(
                f"{where}: attribute {a.name!r} is of type {_attr_type_name(a.type)}; {label} defines it as "
                f"{_attr_type_name(d.type)} (Clause 7.3.1)"
            )
        if a.name in _SPATIAL_ATTRIBUTES and d.type == AttributeProto.AttributeType.INTS:
            _check_spatial(where, a.name, kw.get(a.name))
        if d.type == AttributeProto.AttributeType.INT and is_flag(domain, a.name):
            value = kw[a.name]
            if not isinstance(value, numbers.Integral):
                # Only an unchecked session gets here with another type (the validator's E-ATTR-TYPE): a tensor
                # compared with (0, 1) raised numpy's ValueError from binding.
                raise ValidationError(f"{where}: attribute {a.name!r} is not an INT, as {label} defines it (7.3.1)")
            if value not in (0, 1):
                # Implementations read such a value differently (defs/flags.py); never guess (4.4).
                raise ValidationError(f"{where}: attribute {a.name!r} is {value}; {label} defines only 0 and 1")
    if validated:
        return
    for kind, count, (lo, hi) in (
        ("inputs", len(node.input), schema.input_bounds(len(node.input))),
        ("outputs", len(node.output), schema.output_bounds(len(node.output))),
    ):
        if not lo <= count <= hi:
            allowed = f"at least {lo}" if count < lo else f"at most {hi}"
            raise ValidationError(f"{where}: {label} has {allowed} {kind}, the node gives {count} (7.3.2)")
    missing = schema.unsupplied_required(node.input)
    if missing:
        k, formal = missing[0]
        raise ValidationError(f"{where}: input {k} ({formal.name}) is required, but left empty (Clause 7.3.3)")


# The attributes that size and index the windows of convolution and pooling. Their values are multiplied together
# and with extents; one past SPATIAL_INDEX_LIMIT overflows the 64-bit index arithmetic of the compiled kernels (a
# Conv with strides 2**63 - 1 looped in C for minutes, out of reach of the run's deadline). An extent, a stride or a
# padding that large addresses nothing a tensor within the limits has, so it is refused at binding.
_SPATIAL_ATTRIBUTES = frozenset({"strides", "dilations", "pads", "kernel_shape", "output_padding", "output_shape"})
SPATIAL_INDEX_LIMIT = (1 << 31) - 1


def _check_spatial(where: str, name: str, value: Any) -> None:
    if not isinstance(value, list | tuple):
        return
    for v in value:
        if isinstance(v, numbers.Integral) and abs(int(v)) > SPATIAL_INDEX_LIMIT:
            raise LimitError(
                f"{where}: attribute {name!r} holds {int(v)}, past the index range of this implementation "
                f"(magnitude at most {SPATIAL_INDEX_LIMIT}; Clause 15.4)"
            )


def _attr_type_name(t: int) -> str:
    try:
        return AttributeProto.AttributeType(t).name
    except ValueError:
        return str(t)


def _check_input_types(
    where: str, node: NodeProto, since: int, schema: OpSchema, types: Mapping[str, TypeProto]
) -> None:
    """In an unchecked session, refuse at binding an input whose declared type the definition does not admit, or
    inputs bound to one type variable with different declared types (the validator's E-TYPE-CONSTRAINT and
    E-TYPE-BINDING, for what is declared): otherwise numpy would add a float to a string, or silently promote a
    float to a double. Only declared types are read (graph inputs, initializers, value_info): no inference."""
    in_types = [type_string(types.get(name)) if name else None for name in node.input]
    if not any(in_types):
        return
    label = f"{node.op_type}-{since}"
    for k, t in enumerate(in_types):
        f = formal_at(schema.inputs, k)
        if t is not None and f is not None and f.types and t not in f.types:
            raise ValidationError(
                f"{where}: input {k} ({node.input[k]!r}) is {t}; {label} input {f.name} admits "
                f"{', '.join(sorted(f.types))} (Clause 10.3)"
            )
    _binding, conflicts = bind_inputs(schema, in_types)
    if conflicts:
        var = sorted(conflicts)[0]
        raise ValidationError(
            f"{where}: {label} binds type variable {var} to different types "
            f"({', '.join(t for t in in_types if t)}) (Clause 10.3)"
        )


def _subgraphs(
    env: CompileEnv, ref: NodeRef, node: NodeProto, kw: Mapping[str, Any], depth: int, where: str
) -> tuple[dict[int, Plan], list[str], bool]:
    """Compile the subgraphs the node's attributes hold: (plans by graph id, names they read from the enclosing
    scope, whether all of them could be bound). Compiled whatever the node's binding, so that their unsupported
    nodes are reported too."""
    subplans: dict[int, Plan] = {}
    outer: list[str] = []
    complete = True
    gi = 0
    for a in node.attribute:
        v = kw.get(a.name)
        if isinstance(v, GraphProto):
            graphs = [(a.name, v)]
        elif isinstance(v, list) and v and isinstance(v[0], GraphProto):
            graphs = [(f"{a.name}[{k}]", g) for k, g in enumerate(v)]
        else:
            continue
        for seg, g in graphs:
            label = f"{where}/graph {g.name or gi}"
            gi += 1
            _check_depth(env, depth + 1, label)
            scope = env.subgraph_scope(ref, seg, g, label)
            sub = compile_graph(env, g, scope, depth + 1, label=label)
            if sub.complete:
                subplans[id(g)] = sub.plan()
            else:
                complete = False
            for n in sub.free_names:
                if n not in outer:
                    outer.append(n)
    return subplans, outer, complete


def _bind_node(
    env: CompileEnv, ref: NodeRef, node: NodeProto, depth: int, types: Mapping[str, TypeProto], label: str
) -> PlanNode:
    """Bind one node by its binding in the bound model (``ref``); ``node`` is ``ref.node`` or, in a function
    body, its copy with attribute references resolved."""
    index = ref.index
    where = f"{label}/node {index} ({node.op_type})"
    for a in node.attribute:
        if a.ref_attr_name:
            raise ValidationError(f"{where}: attribute {a.name!r} refers to {a.ref_attr_name!r} outside a function")
    kw = {a.name: attribute_value(a, env.base_dir) for a in node.attribute}
    subplans, outer, complete = _subgraphs(env, ref, node, kw, depth, where)

    domain, version = ref.domain, ref.version
    # What evaluates the node: the one choice (kernels.select), shared with kernels.run, inference's folding and
    # the conformance statement.
    choice = select_node(ref, env.custom_ops)
    if choice.rule == "function":
        # Clause 8.4: a model-local function with the node's (domain, name, overload) wins over any kernel.
        assert ref.function is not None
        scope = env.bound.function_scope(ref.function)
        if scope is None:
            raise ValidationError(f"{where}: the body of function {ref.function.name!r} was not bound")
        return _call_body(env, ref, node, env.local_body(ref.function), scope, outer, depth, where)
    if ref.status == "schema":
        schema = ref.schema
        assert schema is not None
        _check_signature(where, node, domain, version, int(schema.since_version), schema, kw, env.validated)
        if not env.validated:
            _check_input_types(where, node, int(schema.since_version), schema, types)
        if choice.rule == "body":
            body_scope = env.bound.body_scope(schema, version, ref.scope.opsets)
            assert body_scope is not None and body_scope.function is not None
            defaults = {name: ad.default for name, ad in schema.attributes.items() if ad.default is not None}
            body = FunctionBody(body_scope.function, defaults, "schema")
            return _call_body(env, ref, node, body, body_scope, outer, depth, where)
    kdef = choice.kernel
    if kdef is None:
        env.report_unsupported(domain, node.op_type, version)
        return PlanNode(index, node, None, kw, outer)
    since = choice.since_version
    if not complete:
        return PlanNode(index, node, None, kw, outer)
    # A kernel with a preparation step (KernelDef.prepare) does its attribute-only work here, once per node.
    call: Callable[..., Any] = prepared_call(kdef, kw)
    if kdef.context:
        ctx_args = {
            "node": node,
            "since_version": since,
            "opset_version": version,
            "num_outputs": len(node.output),
            "outputs_requested": [bool(o) for o in node.output],
            "input_types": [types.get(n) if n else None for n in node.input],
            "rng": env.rng,
        }
        if subplans:
            call = _SubgraphCall(kdef.fn, len(node.input), outer, subplans, ctx_args)
        else:
            call = functools.partial(kdef.fn, KernelContext(**ctx_args))
    bound = PlanNode(index, node, call, kw, outer)
    bound.since = since
    return bound


def _call_body(
    env: CompileEnv,
    ref: NodeRef,
    node: NodeProto,
    body: FunctionBody,
    scope: Scope,
    outer: list[str],
    depth: int,
    where: str,
) -> PlanNode:
    callsite = {a.name: a for a in node.attribute}
    ir = compile_function(env, body, scope, callsite, depth + 1, label=where)
    if not ir.complete:
        return PlanNode(ref.index, node, None, {}, outer)
    positions = [j for j, o in enumerate(node.output) if o and j < len(ir.output_names)]
    fplan = ir.plan([ir.output_names[j] for j in positions])
    fcall = _FunctionCall(fplan, positions, max(len(node.output), len(ir.output_names)))
    # Attributes went into the body; the call takes the node's inputs only.
    return PlanNode(ref.index, node, fcall, {}, outer)


def _build(
    env: CompileEnv,
    scope: Scope,
    *,
    inputs: list[str],
    inits: dict[str, Any],
    nodes: Sequence[NodeProto],
    outputs: list[str],
    depth: int,
    types: Mapping[str, TypeProto],
    label: str,
) -> GraphIR:
    if len(nodes) != len(scope.nodes):
        raise OnnxCoreError(f"{label}: {len(nodes)} nodes to compile, {len(scope.nodes)} bound")
    bound = [_bind_node(env, ref, node, depth, types, label) for ref, node in zip(scope.nodes, nodes)]
    # A Gradient node differentiates nodes of this graph: it is bound once they all are.
    bind_gradients(bound, inits, types, label)
    return GraphIR(inputs, inits, bound, outputs, label, env.disabled_rewrites)


def compile_graph(env: CompileEnv, graph: GraphProto, scope: Scope, depth: int = 0, *, label: str = "graph") -> GraphIR:
    """Bind every node of ``graph`` (and of its subgraphs) as ``scope`` binds it, and convert its initializers.

    Args:
        env: The compilation state.
        graph: The graph: ``scope.graph``, or its copy with attribute references resolved (in a function body).
        scope: Its scope in the bound model.
        depth: Subgraph and function call nesting depth (Clause 15.4).
        label: Where the graph is, for messages.
    """
    _check_depth(env, depth, label)
    inits: dict[str, Any] = {}
    for t in graph.initializer:
        inits[t.name] = constant_array(to_array(t, base_dir=env.base_dir))
    for st in graph.sparse_initializer:
        # A sparse initializer denotes a tensor: operators see the dense tensor, as inference reads it and as
        # onnxruntime evaluates it (our position on Clause 7.2, docs/conformance.md).
        name = st.values.name if st.values is not None else ""
        inits[name] = constant_array(value_from_proto(st).to_dense(limits=env.limits))
    return _build(
        env,
        scope,
        inputs=[vi.name for vi in graph.input],
        inits=inits,
        nodes=graph.node,
        outputs=[vi.name for vi in graph.output],
        depth=depth,
        types=_graph_types(graph),
        label=label,
    )


def compile_function(
    env: CompileEnv,
    body: FunctionBody,
    scope: Scope,
    callsite: Mapping[str, AttributeProto],
    depth: int,
    *,
    label: str,
) -> GraphIR:
    """Bind a function body for one call site (Clause 8.4).

    Args:
        env: The compilation state.
        body: The body, with the defaults of its attribute parameters.
        scope: Its scope in the bound model, whose imports bound its nodes (a model-local function's are the
            model's, Clause 8.4; an operator definition's body's are its own, see :meth:`BoundModel.body_scope`).
        callsite: The calling node's attributes, by name, for the body's attribute references.
        depth: Nesting depth of the body (Clause 15.4).
        label: Where the call is, for messages.
    """
    key = body.key
    if key in env._fn_stack:
        raise ValidationError(f"{label}: function {key[0]}::{key[1]} calls itself (Clause 8.4)")
    _check_depth(env, depth, label)
    fp = body.proto
    nodes = bind_attribute_refs(fp.node, callsite, body.defaults)
    env._fn_stack.append(key)
    try:
        ir = _build(
            env,
            scope,
            inputs=list(fp.input),
            inits={},
            nodes=nodes,
            outputs=list(fp.output),
            depth=depth,
            types=_graph_types(fp),
            label=f"{label}/function {key[0] or 'ai.onnx'}::{key[1]}",
        )
    finally:
        env._fn_stack.pop()
    if ir.free_names:
        raise ValidationError(f"{ir.label}: names {ir.free_names} are used but not defined in the function body")
    return ir
