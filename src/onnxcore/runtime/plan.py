"""Compiling a graph into a flat plan of bound kernels over integer slots (Clause 8).

Compilation happens once per session, in two stages:

1. :func:`compile_graph` binds every node of a graph (and, recursively, of its subgraphs and of the
   function bodies it calls) to a kernel or a function body, converts attributes once, and records
   the names each node reads, including the names its subgraphs read from the enclosing scope.
   Nodes that cannot be bound are collected in the :class:`CompileEnv` (Clause 4.4).
2. :meth:`GraphIR.plan` lays a :class:`Plan` out for a set of requested outputs: the nodes whose
   outputs are unused are left out (Clause 8.2), every value gets an integer slot in one list, and
   each step names the slots it frees after its last use.

At run time a step is a tuple ``(fn, input_slots, out0, outs, attrs, frees)``; the loop does no
lookups by name.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from onnxcore.defs.binding import canonical_domain
from onnxcore.defs.flags import is_flag
from onnxcore.errors import EvaluationError, LimitError, OnnxCoreError, ValidationError
from onnxcore.graph.attributes import attribute_value, constant_array
from onnxcore.graph.functions import FunctionBody, bind_attribute_refs
from onnxcore.kernels.registry import KernelContext, KernelDef, kernel_versions, lookup
from onnxcore.limits import Limits
from onnxcore.proto import AttributeProto, FunctionProto, GraphProto, NodeProto, TypeProto
from onnxcore.runtime.codegen import MAX_STEPS, generate
from onnxcore.runtime.gradient import bind_gradients
from onnxcore.runtime.optimize import (
    cse_key,
    flatten_concats,
    fold_constants,
    fuse_affine_chains,
    fuse_conv_chains,
    fuse_preactivation,
    fuse_relu,
    input_token,
    prepack_gemm,
    project_before_pooling,
    use_winograd,
)

__all__ = ["CompileEnv", "GraphIR", "Plan", "compile_graph", "compile_function", "describe_value"]

COMPILE_AFTER = 1
"""Interpreted evaluations of a plan before it is compiled to Python (see :meth:`Plan.execute`)."""

NONE_SLOT = 0  # always holds None: an input left unsupplied (Clause 7.3.3)
TRASH_SLOT = 1  # receives outputs nobody named


class CompileEnv:
    """State shared while compiling one model.

    Attributes:
        functions: Model-local functions by (domain, name, overload).
        limits: The session's limits.
        base_dir: Directory for resolving external tensor data in attributes.
        rng: Random generator handed to context kernels.
        unsupported: (domain, op_type, imported version) of every node that cannot be bound.
    """

    def __init__(
        self,
        functions: dict[tuple[str, str, str], FunctionBody],
        limits: Limits,
        base_dir: str | Path | None,
        rng: Any,
    ) -> None:
        self.functions = functions
        self.limits = limits
        self.base_dir = None if base_dir is None else str(base_dir)
        self.rng = rng
        self.unsupported: list[tuple[str, str, int]] = []
        self._fn_stack: list[tuple[str, str, str]] = []
        from onnxcore import defs

        self._get_schema: Callable[..., Any] = defs.get_schema
        self._known = frozenset(canonical_domain(d) for d in defs.known_domains())

    def report_unsupported(self, domain: str, op_type: str, version: int) -> None:
        """Record an operator that has neither a kernel nor a body (Clause 4.4, 16.1)."""
        key = (domain, op_type, version)
        if key not in self.unsupported:
            self.unsupported.append(key)

    def schema(self, op_type: str, version: int, domain: str) -> Any:
        """The operator definition in force at ``version`` of ``domain`` (Clause 14.3), or None."""
        return self._get_schema(op_type, version, domain)

    def find_kernel(self, domain: str, op_type: str, version: int) -> tuple[KernelDef | None, int, Any]:
        """(kernel, since_version, schema) for a node of ``domain`` at imported ``version``.

        A domain with operator definitions binds through them (Clause 14.3, 14.4) and then to
        the kernel registered for exactly that since_version. A custom domain without
        definitions (Clause 16.1) binds to the registered kernel of greatest since_version
        not above the imported version.
        """
        schema = self.schema(op_type, version, domain)
        if schema is not None:
            since = int(schema.since_version)
            return lookup(domain, op_type, since), since, schema
        if domain in self._known:
            return None, 0, None
        versions = [v for v in kernel_versions(domain, op_type) if v <= version]
        if versions:
            return lookup(domain, op_type, versions[-1]), versions[-1], None
        return None, 0, None

    def find_body(self, node: NodeProto, domain: str, version: int, schema: Any) -> FunctionBody | None:
        """A function body for ``node``: model-local first (Clause 8.4), else the schema's."""
        local = self.functions.get((domain, node.op_type, node.overload))
        if local is not None:
            return local
        if schema is None:
            return None
        fp = schema.function_body(version)
        if fp is None:
            return None
        defaults = {name: ad.default for name, ad in schema.attributes.items() if ad.default is not None}
        return FunctionBody(fp, defaults, "schema")


class BoundNode:
    """A node bound to an implementation, before slot layout."""

    __slots__ = ("call", "fused", "index", "inputs", "kw", "may_tuple", "node", "outer", "outputs", "since")

    def __init__(
        self,
        index: int,
        node: NodeProto,
        call: Callable[..., Any] | None,
        kw: dict[str, Any],
        outer: list[str],
    ) -> None:
        self.index = index
        self.node = node
        self.call = call
        self.kw = kw
        self.inputs: list[str] = list(node.input)
        self.outer = outer
        self.outputs: list[str] = list(node.output)
        # Whether ``call`` may return a tuple (an operator with several formal outputs).
        self.may_tuple = True
        # The since_version of the definition a kernel was bound for (0: a function body, or unbound).
        self.since = 0
        # Other nodes a plan-time rewrite folded into this step (Clause 8.2), in graph order: an error
        # in the step names them too.
        self.fused: list[BoundNode] = []


class GraphIR:
    """A graph or function body with its nodes bound; lays out plans on demand.

    Attributes:
        input_names: Declared inputs, in order.
        inits: Constant values (initializers) by name; a name that is also an input is its default.
        nodes: The bound nodes in graph order.
        output_names: Declared outputs, in order.
        free_names: Names read from an enclosing scope (Clause 5.4.3), in first-use order.
        label: Where this graph is, for messages.
    """

    __slots__ = ("_plans", "complete", "free_names", "inits", "input_names", "label", "nodes", "output_names")

    def __init__(
        self,
        input_names: list[str],
        inits: dict[str, Any],
        nodes: list[BoundNode],
        output_names: list[str],
        label: str,
    ) -> None:
        self.input_names = input_names
        self.inits = inits
        self.nodes = nodes
        self.output_names = output_names
        self.label = label
        self.complete = all(bn.call is not None for bn in nodes)
        self._plans: dict[tuple[Any, ...], Plan] = {}
        defined = set(input_names) | set(inits)
        free: list[str] = []
        for bn in nodes:
            for n in (*bn.inputs, *bn.outer):
                if n and n not in defined and n not in free:
                    free.append(n)
            defined.update(o for o in bn.outputs if o)
        for n in output_names:
            if n and n not in defined and n not in free:
                free.append(n)
        self.free_names = free

    def plan(
        self,
        outputs: Sequence[str] | None = None,
        *,
        keep_all: bool = False,
        fed: frozenset[str] | None = None,
        ranks: Mapping[str, int] | None = None,
    ) -> Plan:
        """The plan computing ``outputs`` (all declared outputs by default); cached.

        With ``keep_all`` every node is evaluated and no value is freed (for ``intermediates``).
        ``fed`` names the inputs the caller supplies; an input left out of it keeps its initializer,
        which then counts as a constant (Clause 7.2). None: every input is supplied (subgraphs, functions).
        ``ranks`` are input ranks the caller guarantees (a session checks every feed against its declared
        rank); the plan may rely on them.
        """
        outs = tuple(self.output_names if outputs is None else outputs)
        key = (outs, keep_all, fed, None if ranks is None else frozenset(ranks.items()))
        p = self._plans.get(key)
        if p is None:
            p = Plan(self, outs, keep_all, fed, ranks)
            self._plans[key] = p
        return p


def describe_value(v: Any) -> str:
    """A short description of a runtime value for error messages: dtype and shape."""
    if v is None:
        return "None"
    dtype = getattr(v, "dtype", None)
    shape = getattr(v, "shape", None)
    if dtype is not None and shape is not None:
        return f"{dtype}{list(shape)}"
    if isinstance(v, list):
        inner = describe_value(v[0]) if v else "?"
        return f"seq[{len(v)} x {inner}]"
    if isinstance(v, dict):
        return f"map[{len(v)}]"
    return type(v).__name__


class Plan:
    """A flat list of steps over integer slots (see the module docstring)."""

    __slots__ = (
        "_run",
        "_runs",
        "info",
        "input_slot_list",
        "input_slots",
        "ir",
        "keep_all",
        "names",
        "node_slots",
        "outer_slots",
        "output_slots",
        "steps",
        "template",
    )

    def __init__(
        self,
        ir: GraphIR,
        outputs: tuple[str, ...],
        keep_all: bool,
        fed: frozenset[str] | None = None,
        ranks: Mapping[str, int] | None = None,
    ) -> None:
        self.ir = ir
        slots: dict[str, int] = {}
        names: list[str] = ["", ""]
        template: list[Any] = [None, None]

        def new_slot(name: str, value: Any = None) -> int:
            s = len(template)
            template.append(value)
            names.append(name)
            slots[name] = s
            return s

        self.input_slot_list = [new_slot(n) for n in ir.input_names]
        self.input_slots = dict(zip(ir.input_names, self.input_slot_list))
        inits = dict(ir.inits)
        nodes = list(ir.nodes)
        # Values that vary between runs: the inputs supplied; an input left to its initializer is constant.
        variable = set(ir.input_names) if fed is None else {n for n in ir.input_names if n in fed or n not in inits}
        derived: dict[str, Any] = {}
        if not keep_all:
            # Clause 8.2: a node computed from constants alone is evaluated once, when the plan is made, and its
            # outputs become constants; then per-channel affine steps and a Relu after a Conv are fused into it.
            folded, derived = fold_constants(nodes, inits, variable)
            nodes = [bn for k, bn in enumerate(nodes) if k not in folded]
            const = {n: v for n, v in inits.items() if n not in variable} | derived
            nodes, fused = fuse_conv_chains(nodes, const, outputs)
            derived |= fused
            const |= fused
            nodes, packed = prepack_gemm(nodes, const)
            derived |= packed
            nodes = fuse_affine_chains(nodes, const, outputs)
            nodes = fuse_preactivation(flatten_concats(nodes), const, outputs)
            nodes = fuse_relu(nodes, outputs)
            nodes = project_before_pooling(nodes, const, outputs)
            nodes = use_winograd(nodes, const)
            # Folding and fusion leave constants nothing reads any more (a weight before its fusion): drop them.
            read = set(outputs).union(*(bn.inputs for bn in nodes), *(bn.outer for bn in nodes))
            derived = {n: v for n, v in derived.items() if n in read}
        for name, value in inits.items():
            if name in slots:
                template[slots[name]] = value
            else:
                new_slot(name, value)
        for name, value in derived.items():
            new_slot(name, value)
        self.outer_slots = [(n, new_slot(n)) for n in ir.free_names]
        # Slots holding the same value on every run: constant initializers and values derived from them.
        constants = {slots[n]: template[slots[n]] for n in (*inits, *derived) if n not in variable}
        # Ranks known when the plan is made: the guaranteed input ranks and every constant's.
        rank_of = {self.input_slots[n]: r for n, r in (ranks or {}).items() if n in self.input_slots}
        rank_of.update((s, v.ndim) for s, v in constants.items() if isinstance(v, np.ndarray))

        # Clause 8.2: a node none of whose outputs is needed is not evaluated.
        needed = set(outputs)
        live = [keep_all] * len(nodes)
        if not keep_all:
            for k in range(len(nodes) - 1, -1, -1):
                bn = nodes[k]
                if any(o in needed for o in bn.outputs if o):
                    live[k] = True
                    needed.update(bn.inputs)
                    needed.update(bn.outer)

        raw: list[tuple[BoundNode, list[int], int, list[tuple[int, int]]]] = []
        node_slots: list[int] = []
        seen: dict[tuple[Any, ...], BoundNode] = {}
        for k, bn in enumerate(nodes):
            if not live[k]:
                continue
            ins = [slots[n] if n else NONE_SLOT for n in bn.inputs] + [slots[n] for n in bn.outer]
            # Clause 8.2 permits fusing computations: a deterministic node that repeats an earlier one
            # (same implementation, inputs and attributes) reuses its outputs instead of running again.
            # In debugging mode (keep_all) every node runs, so each intermediate is its own.
            key = None
            if not keep_all:
                tokens = [input_token(j, constants) for j in ins]
                key = cse_key(bn, tokens, rank=rank_of.get(ins[0]) if ins else None)
            if key is not None:
                first = seen.get(key)
                if first is not None and len(first.outputs) == len(bn.outputs):
                    if all((a == "") == (b == "") for a, b in zip(first.outputs, bn.outputs)):
                        for a, b in zip(first.outputs, bn.outputs):
                            if b:
                                slots[b] = slots[a]
                        continue
                seen[key] = bn
            outs: list[tuple[int, int]] = []
            out0 = TRASH_SLOT
            for j, o in enumerate(bn.outputs):
                if not o:
                    continue
                s = new_slot(o)
                node_slots.append(s)
                outs.append((j, s))
                if j == 0:
                    out0 = s
            raw.append((bn, ins, out0, outs))
        missing = [o for o in outputs if o not in slots]
        if missing:
            raise ValidationError(f"{ir.label}: output(s) {missing} are not produced by the graph (Clause 7.1)")
        self.output_slots = [slots[o] for o in outputs]

        # Free each value after its last reader (or right away when nothing reads it).
        last: dict[int, int] = {}
        for idx, (_bn, ins, _o0, outs) in enumerate(raw):
            for _j, s in outs:
                last[s] = idx
            for s in ins:
                last[s] = idx
        protected = {NONE_SLOT, TRASH_SLOT, *self.output_slots}
        frees: list[list[int]] = [[] for _ in raw]
        if not keep_all:
            for s, idx in last.items():
                if s not in protected:
                    frees[idx].append(s)

        steps = []
        info = []
        for idx, (bn, ins, out0, outs) in enumerate(raw):
            assert bn.call is not None
            steps.append((bn.call, tuple(ins), out0, tuple(outs), bn.kw, tuple(frees[idx])))
            info.append(bn)
        self.steps = steps
        self.info = info
        self.template = template
        self.names = names
        self.node_slots = node_slots
        self.keep_all = keep_all
        self._run: Callable[[list[Any]], None] | None = None
        self._runs = 0

    def _compile(self) -> Callable[[list[Any]], None]:
        node_slots = self.node_slots
        first_node_slot = min(node_slots) if node_slots else len(self.template)
        prefilled = list(range(2, first_node_slot))
        stores = sorted(set(self.output_slots) | (set(node_slots) if self.keep_all else set()))
        may_tuple = [bn.may_tuple for bn in self.info]
        return generate(self.steps, may_tuple, prefilled, stores, self._error, repr(self.ir.label))

    def execute(self, vals: list[Any]) -> None:
        """Evaluate every step over ``vals`` (a copy of ``template`` with the inputs filled).

        Afterwards the output slots (every node slot for a ``keep_all`` plan) hold their values.
        """
        run = self._run
        if run is None:
            # Compiling costs about as much as a few interpreted runs: a plan evaluated once
            # (most sessions' first run) is interpreted; one evaluated again (a later run, a loop
            # body's next iteration) is compiled to straight-line code (see codegen).
            if self._runs >= COMPILE_AFTER and len(self.steps) <= MAX_STEPS:
                run = self._run = self._compile()
            else:
                self._runs += 1
                self._interpret(vals)
                return
        run(vals)

    def _interpret(self, vals: list[Any], times: list[float] | None = None) -> None:
        clock = time.perf_counter
        t0 = 0.0
        i = 0
        try:
            for i, (fn, ins, out0, outs, kw, frees) in enumerate(self.steps):
                if times is not None:
                    t0 = clock()
                res = fn(*[vals[j] for j in ins], **kw)
                if times is not None:
                    times[i] = clock() - t0
                if type(res) is tuple:
                    for k, s in outs:
                        vals[s] = res[k]
                else:
                    vals[out0] = res
                for s in frees:
                    vals[s] = None
        except Exception as e:
            raise self._error(i, vals.__getitem__, e) from e

    def profile(self, vals: list[Any]) -> list[float]:
        """Evaluate every step over ``vals`` as :meth:`execute` does, interpreted; each step's wall time."""
        times = [0.0] * len(self.steps)
        self._interpret(vals, times)
        return times

    def _error(self, i: int, value_of: Callable[[int], Any], e: BaseException) -> OnnxCoreError:
        """The error to raise for step ``i`` failing with ``e``: an :class:`EvaluationError` naming the node, its
        inputs and what is fused into it; a limit exceeded stays a :class:`LimitError`, prefixed with the node."""
        bn = self.info[i]
        _fn, ins, _o0, _outs, _kw, _fr = self.steps[i]
        node = bn.node
        n_real = len(bn.inputs)
        # Values made at plan time are named after a model value, a NUL and what they are (never a model's name).
        names = [name.replace("\x00", "/") if name else "<unsupplied>" for name in bn.inputs]
        desc = ", ".join(f"{name}: {describe_value(value_of(s))}" for name, s in zip(names, ins[:n_real]))
        op = f"{node.domain}::{node.op_type}" if node.domain else node.op_type
        msg = (
            f"{self.ir.label}: node {bn.index} ({op}, name {node.name!r}) failed: "
            f"{type(e).__name__}: {e} [inputs: {desc}]"
        )
        if bn.fused:
            others = ", ".join(f"node {f.index} ({f.node.op_type}, name {f.node.name!r})" for f in bn.fused)
            msg += (
                f" (this step also evaluates {others}, fused with it at plan time, Clause 8.2; "
                "run(..., intermediates=True) evaluates every node as written)"
            )
        if isinstance(e, LimitError):
            # The refusal keeps its type (Clause 15.4); the node is named, innermost last for a subgraph's.
            limit = LimitError(f"{self.ir.label}: node {bn.index} ({op}, name {node.name!r}): {e}")
            limit.node_index = bn.index  # type: ignore[attr-defined]
            limit.node_name = node.name  # type: ignore[attr-defined]
            return limit
        err: OnnxCoreError = EvaluationError(msg)
        err.node_index = bn.index  # type: ignore[attr-defined]
        err.node_name = node.name  # type: ignore[attr-defined]
        err.op_type = node.op_type  # type: ignore[attr-defined]
        err.domain = node.domain  # type: ignore[attr-defined]
        err.inputs = [(name, describe_value(value_of(s))) for name, s in zip(names, ins[:n_real])]  # type: ignore[attr-defined]
        err.fused_nodes = [(f.index, f.node.op_type, f.node.name) for f in bn.fused]  # type: ignore[attr-defined]
        return err

    def run(self, inputs: Sequence[Any], outer: Mapping[str, Any] | None = None) -> list[Any]:
        """Evaluate with positional ``inputs`` and enclosing-scope values ``outer``; the outputs."""
        vals = self.template.copy()
        if len(inputs) > len(self.input_slot_list):
            raise EvaluationError(
                f"{self.ir.label}: {len(inputs)} inputs supplied, the graph declares {len(self.input_slot_list)}"
            )
        for s, v in zip(self.input_slot_list, inputs):
            vals[s] = v
        if self.outer_slots:
            if outer is None:
                outer = {}
            try:
                for name, s in self.outer_slots:
                    vals[s] = outer[name]
            except KeyError as e:
                raise EvaluationError(f"{self.ir.label}: value {e} from the enclosing scope is not available") from None
        self.execute(vals)
        return [vals[s] for s in self.output_slots]


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
    lim = env.limits.max_nesting_depth
    if lim is not None and depth > lim:
        raise LimitError(
            f"{label}: subgraphs and function calls nest deeper than max_nesting_depth={lim} (Clause 15.4)"
        )


def _graphs_in(kw: dict[str, Any]) -> list[GraphProto]:
    out: list[GraphProto] = []
    for v in kw.values():
        if isinstance(v, GraphProto):
            out.append(v)
        elif isinstance(v, list) and v and isinstance(v[0], GraphProto):
            out.extend(v)
    return out


def _check_signature(
    where: str, node: NodeProto, domain: str, version: int, since: int, schema: Any, kw: Mapping[str, Any]
) -> None:
    """Refuse at binding what the validator reports of a node's signature, so that an unchecked session never
    hands a kernel what its bound version does not define (one kernel serves several versions: LSTM-7 with
    layout ran as LSTM-14), too few inputs, nothing for a required one, or a flag it would have to guess at."""
    label = f"{node.op_type}-{since}"
    for a in node.attribute:
        d = schema.attributes.get(a.name)
        if d is None:
            raise ValidationError(
                f"{where}: attribute {a.name!r} is not defined by {label} (opset {version}; Clause 10.4)"
            )
        if d.type == AttributeProto.AttributeType.INT and is_flag(domain, a.name) and kw[a.name] not in (0, 1):
            # Implementations read such a value differently (defs/flags.py); never guess (4.4).
            raise ValidationError(f"{where}: attribute {a.name!r} is {kw[a.name]}; {label} defines only 0 and 1")
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


def _bind_node(
    env: CompileEnv,
    index: int,
    node: NodeProto,
    opsets: Mapping[str, int],
    depth: int,
    types: Mapping[str, TypeProto],
    label: str,
) -> BoundNode:
    domain = canonical_domain(node.domain)
    where = f"{label}/node {index} ({node.op_type})"
    for a in node.attribute:
        if a.ref_attr_name:
            raise ValidationError(f"{where}: attribute {a.name!r} refers to {a.ref_attr_name!r} outside a function")
    kw = {a.name: attribute_value(a, env.base_dir) for a in node.attribute}

    # Subgraphs are compiled whatever the binding, so their unsupported nodes are reported too.
    subplans: dict[int, Plan] = {}
    outer: list[str] = []
    complete = True
    for gi, g in enumerate(_graphs_in(kw)):
        sub = compile_graph(env, g, opsets, depth + 1, label=f"{where}/graph {g.name or gi}")
        if sub.complete:
            subplans[id(g)] = sub.plan()
        else:
            complete = False
        for n in sub.free_names:
            if n not in outer:
                outer.append(n)

    version = opsets.get(domain)
    if version is None:
        env.report_unsupported(domain, node.op_type, 0)
        return BoundNode(index, node, None, kw, outer)
    kdef, since, schema = env.find_kernel(domain, node.op_type, version)
    if schema is not None:
        _check_signature(where, node, domain, version, since, schema, kw)
    if kdef is not None:
        if not complete:
            return BoundNode(index, node, None, kw, outer)
        call: Callable[..., Any] = kdef.fn
        if kdef.context:
            ctx_args = {
                "node": node,
                "since_version": since,
                "opset_version": version,
                "num_outputs": len(node.output),
                "outputs_requested": [bool(o) for o in node.output],
                "input_types": [types.get(n) if n else None for n in node.input],
                "limits": env.limits,
                "rng": env.rng,
            }
            if subplans:
                call = _SubgraphCall(kdef.fn, len(node.input), outer, subplans, ctx_args)
            else:
                call = functools.partial(kdef.fn, KernelContext(**ctx_args))
        # A kernel may answer any node with a tuple (Identity returns a 1-tuple so that a sequence
        # is never mistaken for a list of outputs), so every result is checked.
        bound = BoundNode(index, node, call, kw, outer)
        bound.since = since
        return bound

    body = env.find_body(node, domain, version, schema)
    if body is None:
        env.report_unsupported(domain, node.op_type, version)
        return BoundNode(index, node, None, kw, outer)
    callsite = {a.name: a for a in node.attribute}
    ir = compile_function(env, body, callsite, opsets, depth + 1, label=where)
    if not ir.complete:
        return BoundNode(index, node, None, kw, outer)
    positions = [j for j, o in enumerate(node.output) if o and j < len(ir.output_names)]
    fplan = ir.plan([ir.output_names[j] for j in positions])
    fcall = _FunctionCall(fplan, positions, max(len(node.output), len(ir.output_names)))
    # Attributes went into the body; the call takes the node's inputs only.
    return BoundNode(index, node, fcall, {}, outer)


def _build(
    env: CompileEnv,
    *,
    inputs: list[str],
    inits: dict[str, Any],
    nodes: list[NodeProto],
    outputs: list[str],
    opsets: Mapping[str, int],
    depth: int,
    types: Mapping[str, TypeProto],
    label: str,
) -> GraphIR:
    bound = [_bind_node(env, i, n, opsets, depth, types, label) for i, n in enumerate(nodes)]
    # A Gradient node differentiates nodes of this graph: it is bound once they all are.
    bind_gradients(bound, inits, types, label)
    return GraphIR(inputs, inits, bound, outputs, label)


def compile_graph(
    env: CompileEnv, graph: GraphProto, opsets: Mapping[str, int], depth: int = 0, *, label: str = "graph"
) -> GraphIR:
    """Bind every node of ``graph`` (and of its subgraphs) and convert its initializers."""
    _check_depth(env, depth, label)
    from onnxcore.types import to_array, value_from_proto

    inits: dict[str, Any] = {}
    for t in graph.initializer:
        inits[t.name] = constant_array(to_array(t, base_dir=env.base_dir))
    for st in graph.sparse_initializer:
        name = st.values.name if st.values is not None else ""
        inits[name] = value_from_proto(st)
    return _build(
        env,
        inputs=[vi.name for vi in graph.input],
        inits=inits,
        nodes=graph.node,
        outputs=[vi.name for vi in graph.output],
        opsets=opsets,
        depth=depth,
        types=_graph_types(graph),
        label=label,
    )


def compile_function(
    env: CompileEnv,
    body: FunctionBody,
    callsite: Mapping[str, AttributeProto],
    caller_opsets: Mapping[str, int],
    depth: int,
    *,
    label: str,
) -> GraphIR:
    """Bind a function body for one call site (Clause 8.4).

    The body's own operator set imports govern the binding of its nodes; a domain it does not
    import falls back to the caller's import.
    """
    key = body.key
    if key in env._fn_stack:
        raise ValidationError(f"{label}: function {key[0]}::{key[1]} calls itself (Clause 8.4)")
    _check_depth(env, depth, label)
    fp = body.proto
    opsets = dict(caller_opsets)
    for imp in fp.opset_import:
        opsets[canonical_domain(imp.domain)] = int(imp.version)
    nodes = bind_attribute_refs(fp.node, callsite, body.defaults)
    env._fn_stack.append(key)
    try:
        ir = _build(
            env,
            inputs=list(fp.input),
            inits={},
            nodes=nodes,
            outputs=list(fp.output),
            opsets=opsets,
            depth=depth,
            types=_graph_types(fp),
            label=f"{label}/function {key[0] or 'ai.onnx'}::{key[1]}",
        )
    finally:
        env._fn_stack.pop()
    if ir.free_names:
        raise ValidationError(f"{ir.label}: names {ir.free_names} are used but not defined in the function body")
    return ir
