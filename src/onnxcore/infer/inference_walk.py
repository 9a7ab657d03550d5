"""The inference walk (Clause 9): one walk over the bound model giving every value a type, a shape, a value.

Graphs are walked in node order, subgraphs in their enclosing scope (Clauses 5.4, 7.6), a model-local
function's body per call site with that call's input types, shapes, values and attributes (Clause 8.4: a
function may be polymorphic). Per value name the walk carries a type string (None: unknown, Clause 9.4), a
shape (:mod:`onnxcore.infer.shape_core`) and, for small tensors whose contents are statically known, the
value (:mod:`onnxcore.infer.known_values`). A node's types come from :mod:`onnxcore.infer.rules`, its shapes from
:class:`~onnxcore.infer.shape_step.ShapeStep`; a node holding subgraphs walks each of them once, with the
input types its type rule and the input shapes its shape rule give them. The bindings, the limits and the
budget are those of :class:`~onnxcore.infer.walk_frames.BoundWalk`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnxcore.defs.binding import canonical_domain
from onnxcore.defs.opschema import OpSchema
from onnxcore.errors import OnnxCoreError
from onnxcore.graph.bound import BoundModel, function_location
from onnxcore.graph.functions import Unresolved
from onnxcore.infer import shape_step
from onnxcore.infer.known_values import dims_shape, initializer_value
from onnxcore.infer.results import (
    Inference,
    ShapeInference,
    ShapeMismatch,
    TypeMismatch,
    declared_shape,
    merge,
)
from onnxcore.infer.rules import TYPE_RULES, UNRESOLVED, _Unresolved, generic_outputs, infer_outputs
from onnxcore.infer.shape_core import ShapeT, resolve
from onnxcore.infer.shape_ops.control_flow import control_flow_outputs
from onnxcore.infer.shape_step import ShapeStep, Unresolvable, attrs_key, memo_key
from onnxcore.infer.walk_frames import Binding, BoundWalk, Frame, node_location
from onnxcore.io import encode
from onnxcore.kernels.registry import KernelSet
from onnxcore.limits import NESTING_REFUSAL, Limits
from onnxcore.proto.messages import AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto, TypeProto
from onnxcore.types.typestr import elem_type_string, type_string

__all__ = ["InferenceWalk", "run"]

_NO_BINDINGS: dict[str, str] = {}
_NO_CONFLICTS: frozenset[str] = frozenset()
_NO_VALUES: dict[int, np.ndarray] = {}  # read only: a node without folded values
_NO_ATTRS: dict[str, AttributeProto] = {}  # read only: a node without attributes
_NO_TYPES: tuple[str | None, ...] = ()  # a walk for shapes alone: every type unknown
_NO_INPUT_VALUES: list[np.ndarray | None] = []  # a node's input values not read yet (InferenceWalk.walk_nodes)
_CONTROL_FLOW = frozenset({"If", "Loop", "Scan", "SequenceMap"})

Types = list[str | None]
Shapes = list[ShapeT | None]
# A repeated node's outcome (InferenceWalk.repeats): output types, type bindings, conflicts, output shapes, folded
# values.
_Repeat = tuple[tuple[str | None, ...], dict[str, str], frozenset[str], Sequence[ShapeT | None], dict[int, np.ndarray]]


class _Env:
    """What one walked body knows of its values (types, shapes, small values), seeing its enclosing bodies'."""

    __slots__ = ("parent", "shapes", "types", "values")

    def __init__(self, parent: _Env | None) -> None:
        self.parent = parent
        self.types: dict[str, str | None] = {}
        self.shapes: dict[str, ShapeT | None] = {}
        self.values: dict[str, Any] = {}  # arrays, or values computed when first read (shape_core.resolve)

    def type(self, name: str) -> str | None:
        s: _Env | None = self
        while s is not None:
            if name in s.types:
                return s.types[name]
            s = s.parent
        return None

    def shape(self, name: str) -> ShapeT | None:
        s: _Env | None = self
        while s is not None:
            if name in s.shapes:
                return s.shapes[name]
            s = s.parent
        return None

    def value(self, name: str) -> Any:
        s: _Env | None = self
        while s is not None:
            if name in s.shapes:
                return s.values.get(name)
            s = s.parent
        return None


SubWalk = Callable[[str, GraphProto, Sequence[str | None]], Types]


class _TypeNodeView:
    """The walk's implementation of :class:`onnxcore.infer.rules.NodeView`: a subgraph is walked by ``sub``."""

    __slots__ = ("frame", "in_types", "location", "node", "schema", "sub", "visited")

    def __init__(
        self,
        sub: SubWalk,
        frame: Frame,
        node: NodeProto,
        location: str,
        schema: OpSchema,
        in_types: tuple[str | None, ...],
    ) -> None:
        self.sub = sub
        self.frame = frame
        self.node = node
        self.location = location
        self.schema = schema
        self.in_types = in_types
        self.visited: set[str] = set()

    def attr(self, name: str) -> AttributeProto | _Unresolved | None:
        for a in self.node.attribute:
            if a.name == name:
                r = BoundWalk.resolve(a, self.frame)
                return UNRESOLVED if isinstance(r, Unresolved) else r
        return None

    def subgraph(self, name: str, inputs: Sequence[str | None]) -> list[str | None] | None:
        if name in self.visited:
            return None
        self.visited.add(name)
        a = self.attr(name)
        if not isinstance(a, AttributeProto) or a.g is None:
            return None
        return self.sub(name, a.g, list(inputs))


class InferenceWalk(BoundWalk):
    """The walk (see the module docstring); :attr:`type_result` and :attr:`shape_result` hold what it finds."""

    def __init__(
        self,
        model: ModelProto,
        limits: Limits | None,
        bound: BoundModel | None,
        *,
        node_types: bool = True,
        custom_ops: KernelSet | None = None,
    ) -> None:
        super().__init__(model, limits, bound)
        # Shapes need no types (no shape rule reads one): a walk for shapes alone leaves the types of nodes
        # without subgraphs unknown and records no NodeTypes, at about half the cost.
        self.node_types_on = node_types
        self.type_result = Inference()
        self.shape_result = ShapeInference()
        self.step = ShapeStep(self, self.shape_result, custom_ops)
        self.ir_version = int(model.ir_version)
        self.generic: dict[tuple[object, ...], tuple[tuple[str | None, ...], dict[str, str], frozenset[str]]] = {}
        # Whole outcomes of nodes without attributes, subgraphs or omitted inputs whose types came from the generic
        # rule and whose shapes from the shape memo (both hits): a repeated node of a large graph costs one lookup.
        self.repeats: dict[tuple[object, ...], _Repeat] = {}
        self.calls: dict[tuple[object, ...], tuple[Types, Shapes]] = {}

    # --- graphs ---------------------------------------------------------------------------------

    def walk_graph(
        self,
        g: GraphProto,
        path: str,
        parent: _Env | None,
        type_in: Sequence[str | None] | None,
        shape_in: Sequence[ShapeT | None] | None,
        frame: Frame,
    ) -> tuple[Types, Shapes]:
        """Walk a graph given its inputs' types and shapes (None: as declared); its outputs' types and shapes."""
        n_out = len(g.output)
        if self.too_deep(frame.depth) or self.budget < 0:
            return [None] * n_out, [None] * n_out
        frame = dataclasses.replace(frame, depth=frame.depth + 1)
        env = _Env(parent)
        decl_types: dict[str, TypeProto] = {}
        decl_shapes: dict[str, ShapeT | None] = {}
        for vi in (*g.value_info, *g.output):
            if vi.type is not None:
                decl_types[vi.name] = vi.type
            s = declared_shape(vi.type)
            if s is not None:
                decl_shapes[vi.name] = s
        record = frame.record
        graph_inputs = set()
        for k, vi in enumerate(g.input):
            name = vi.name
            graph_inputs.add(name)
            d = type_string(vi.type)
            o = type_in[k] if type_in is not None and k < len(type_in) else None
            if d is not None:
                decl_types[name] = vi.type  # type: ignore[assignment]
                if o is not None and o != d and record:
                    self.type_result.mismatches.append(TypeMismatch(path, name, f"{path}/input[{k}]", d, o))
            env.types[name] = d if d is not None else o
            ds = declared_shape(vi.type)
            os_ = shape_in[k] if shape_in is not None and k < len(shape_in) else None
            s, clash = merge(ds, os_)
            if clash and record and frame.report and ds is not None and os_ is not None:
                self.shape_result.mismatches.append(ShapeMismatch(path, name, f"{path}/input[{k}]", ds, os_))
            env.shapes[name] = s
        for t in g.initializer:
            if env.types.get(t.name) is None:
                env.types[t.name] = elem_type_string(t.data_type)
            if t.name not in env.shapes or env.shapes[t.name] is None:
                env.shapes[t.name] = dims_shape(t.dims)
            # An input's initializer is only a default (Clause 7.2), except before IR version 4, where every
            # initializer had to be declared an input and that was how a constant was written.
            if t.name not in graph_inputs or self.ir_version < 4:
                v = initializer_value(t)
                if v is not None:
                    env.values[t.name] = v
        for sp in g.sparse_initializer:
            # A sparse initializer is read as the dense tensor it denotes (Clause 7.2).
            if sp.values is not None:
                if env.types.get(sp.values.name) is None:
                    env.types[sp.values.name] = elem_type_string(sp.values.data_type)
                if sp.values.name not in env.shapes:
                    env.shapes[sp.values.name] = dims_shape(sp.dims)
        self.walk_nodes(self.graph_bindings(g, frame.opsets), path, env, decl_types, decl_shapes, frame)
        types_out: Types = []
        for vi in g.output:
            d = type_string(vi.type)
            types_out.append(d if d is not None else env.type(vi.name))
        shapes_out = [env.shape(vi.name) for vi in g.output]
        if record:
            self._record(path, env, decl_types)
        return types_out, shapes_out

    def walk_function(self, fn: FunctionProto, path: str, frame: Frame) -> None:
        """Walk a model-local function's body without a call site, recording it under ``path``: its inputs are
        typed and shaped by its ``value_info`` only, its attribute references are unresolved (Clause 8.4)."""
        frame = Frame(self.function_frame_opsets(fn), None, True, True, frame.depth + 1)
        env = _Env(None)
        decl_types = {vi.name: vi.type for vi in fn.value_info if vi.type is not None}
        decl_shapes = {vi.name: declared_shape(vi.type) for vi in fn.value_info}
        for name in fn.input:
            env.types[name] = type_string(decl_types.get(name))
            env.shapes[name] = decl_shapes.get(name)
        self.walk_nodes(self.function_bindings(fn), path, env, decl_types, decl_shapes, frame)
        self._record(path, env, decl_types)

    def _record(self, path: str, env: _Env, decl_types: dict[str, TypeProto]) -> None:
        # The walk of this body is over: its dicts are handed over as they are when no entry is unknown.
        types, shapes = env.types, env.shapes
        known_types = types if None not in types.values() else {n: t for n, t in types.items() if t is not None}
        self.type_result.type_strings[path] = known_types  # type: ignore[assignment]
        self.type_result.declared[path] = decl_types
        known_shapes = shapes if None not in shapes.values() else {n: s for n, s in shapes.items() if s is not None}
        self.shape_result.shapes[path] = known_shapes  # type: ignore[assignment]

    # --- nodes ----------------------------------------------------------------------------------

    def walk_nodes(
        self,
        bindings: Sequence[Binding],
        path: str,
        env: _Env,
        decl_types: dict[str, TypeProto],
        decl_shapes: dict[str, ShapeT | None],
        frame: Frame,
    ) -> None:
        self.budget -= len(bindings)
        if self.budget < 0:
            return
        types, shapes, values_of = env.types, env.shapes, env.values
        # The top-level scope has no parent: plain dict lookups (the validator walks 50,000-node graphs).
        top = env.parent is None
        get_type = types.get if top else env.type
        get_shape = shapes.get if top else env.shape
        get_value = values_of.get if top else env.value
        record = frame.record
        report = record and frame.report
        typed = self.node_types_on
        generic = self.generic
        step = self.step
        step_node = step.node
        memo_get = step.memo.get
        okey = frame.okey
        records = self.type_result.node_records
        repeats = self.repeats
        repeat_get = repeats.get
        declared = decl_types.keys() | decl_shapes.keys()  # most outputs are not: their entries stored as inferred
        for i, b in enumerate(bindings):
            node = b.node
            ins = node.input
            outs = node.output
            n_out = len(outs)
            attributes = node.attribute
            bindings_: dict[str, str] = _NO_BINDINGS
            conflicts: frozenset[str] = _NO_CONFLICTS
            values: dict[int, np.ndarray] = _NO_VALUES
            t_out: Sequence[str | None]
            s_out: Sequence[ShapeT | None]
            # Per node, the inputs' types, shapes and values: map over the names (no Python frame per input)
            # unless an input is omitted (""), whose entries are None whatever a scope holds under "".
            in_shapes: tuple[ShapeT | None, ...]
            repeat = rkey = None
            if "" in ins:
                in_types = tuple(get_type(n) if n else None for n in ins) if typed or b.status == "function" else ()
                in_shapes = tuple(get_shape(n) if n else None for n in ins)
                in_values = [get_value(n) if n else None for n in ins]
                value_ids = tuple(map(id, in_values))
            else:
                in_types = tuple(map(get_type, ins)) if typed or b.status == "function" else ()
                in_shapes = tuple(map(get_shape, ins))
                value_ids = tuple(map(id, map(get_value, ins)))
                in_values = _NO_INPUT_VALUES  # read below only when this node is not a repeat
                if not attributes and b.schema is not None:
                    # The outcome of a node seen before (same definition, imports, input types, shapes, values).
                    rkey = (b.schema, okey, in_types, in_shapes, value_ids, n_out)
                    repeat = repeat_get(rkey)
            if repeat is not None:
                t_out, bindings_, conflicts, s_out, values = repeat
            else:
                if in_values is _NO_INPUT_VALUES:
                    in_values = list(map(get_value, ins))
                if attributes and any(a.g is not None or a.graphs for a in attributes):
                    if not typed:
                        in_types = tuple(get_type(n) if n else None for n in ins)
                    t_out, bindings_, conflicts, s_out = self.holder(
                        b, path, i, env, in_types, in_shapes, in_values, frame
                    )
                elif b.function is not None:
                    t_out, s_out = self.call_site(b, in_types, in_shapes, in_values, frame)
                else:
                    hit = None
                    if typed:
                        # The generic rule's memo first (it holds only definitions without a type rule of their own).
                        schema = b.schema
                        hit = generic.get((schema, in_types, n_out)) if schema is not None else None
                        if hit is None:
                            t_out, bindings_, conflicts = self.node_types(b, path, i, in_types, frame)
                        else:
                            t_out, bindings_, conflicts = hit
                    else:
                        t_out = _NO_TYPES
                    if not attributes:
                        # shape_step.memo_key, written out: most nodes of a large graph are memo hits.
                        key = (
                            node.domain,
                            node.op_type,
                            node.overload,
                            okey,
                            in_shapes,
                            value_ids,
                            tuple(map(bool, ins)) if "" in ins else len(ins),
                            n_out,
                            (),
                        )
                        outcome = memo_get(key)
                        if type(outcome) is tuple:
                            s_out, values = outcome
                            if rkey is not None and (hit is not None or not typed):
                                # Both memos hit: the next node like this one is one lookup.
                                repeats[rkey] = (t_out, bindings_, conflicts, s_out, values)  # type: ignore[assignment]
                        else:
                            s_out, values = step_node(b, path, i, in_shapes, in_values, _NO_ATTRS, frame, key)
                    else:
                        try:
                            attrs = step.attributes(node, frame)
                        except Unresolvable:
                            s_out = [None] * n_out
                        else:
                            akey = attrs_key(attrs)
                            key_ = None if akey is None else memo_key(node, okey, in_shapes, in_values, akey)
                            s_out, values = step_node(b, path, i, in_shapes, in_values, attrs, frame, key_)
            n_t, n_s = len(t_out), len(s_out)
            for k, name in enumerate(outs):
                if not name:
                    continue
                t = t_out[k] if k < n_t else None
                inferred = s_out[k] if k < n_s else None
                if name not in declared:
                    types[name] = t
                    shapes[name] = inferred
                else:
                    dp = decl_types.get(name) if typed or t is not None else None
                    d = type_string(dp) if dp is not None else None
                    if d is not None and t is not None and d != t and record:
                        where = f"{node_location(path, i, node)}/output[{k}]"
                        self.type_result.mismatches.append(TypeMismatch(path, name, where, d, t))
                    types[name] = d if d is not None else t
                    ds = decl_shapes.get(name)
                    if ds is None:
                        shapes[name] = inferred
                    else:
                        merged, clash = merge(ds, inferred)
                        if clash and report and inferred is not None:
                            where = f"{node_location(path, i, node)}/output[{k}]"
                            self.shape_result.mismatches.append(ShapeMismatch(path, name, where, ds, inferred))
                        shapes[name] = merged
                if values:
                    v = values.get(k)
                    if v is not None:
                        values_of[name] = v
            if record and typed:
                # The generic memo's types are a tuple of exactly n_out entries already: shared, not copied.
                t_node = t_out if type(t_out) is tuple and n_t == n_out else tuple(t_out[:n_out])
                records.append((path, i, node, b.schema, b.function, in_types, t_node, bindings_, conflicts))

    def node_types(
        self, b: Binding, path: str, i: int, in_types: tuple[str | None, ...], frame: Frame
    ) -> tuple[Sequence[str | None], dict[str, str], frozenset[str]]:
        """Output types of a node bound to a definition (or to nothing) that holds no subgraph."""
        schema = b.schema
        n_out = len(b.node.output)
        if schema is None:
            return (None,) * n_out, _NO_BINDINGS, _NO_CONFLICTS
        if (schema.domain, schema.name) in TYPE_RULES:
            view = _TypeNodeView(self._no_subgraph, frame, b.node, node_location(path, i, b.node), schema, in_types)
            return infer_outputs(view, n_out)
        # The generic rule depends on the definition and the input types only (walk_nodes reads the memo first).
        gkey = (schema, in_types, n_out)
        hit = self.generic.get(gkey)
        if hit is None:
            out, bindings_, conflicts = generic_outputs(schema, in_types, n_out)
            hit = self.generic[gkey] = (tuple(out), bindings_, conflicts)
        return hit

    @staticmethod
    def _no_subgraph(name: str, g: GraphProto, inputs: Sequence[str | None]) -> Types:
        return [None] * len(g.output)  # not reached: a node without graph attributes has no subgraph to walk

    # --- nodes holding subgraphs ----------------------------------------------------------------

    def holder(
        self,
        b: Binding,
        path: str,
        i: int,
        env: _Env,
        in_types: tuple[str | None, ...],
        in_shapes: Sequence[ShapeT | None],
        in_values: list[np.ndarray | None],
        frame: Frame,
    ) -> tuple[Sequence[str | None], dict[str, str], frozenset[str], Sequence[ShapeT | None]]:
        """Types and shapes of a node holding subgraphs; each subgraph is walked once, with the input types its
        type rule and the input shapes its shape rule give it (neither: as declared)."""
        node = b.node
        schema = b.schema
        n_out = len(node.output)
        loc = node_location(path, i, node)
        try:
            attrs: dict[str, AttributeProto] | None = self.step.attributes(node, frame)
        except Unresolvable:
            attrs = None
        control = attrs is not None and schema is not None and schema.domain == "" and node.op_type in _CONTROL_FLOW

        # A branch of an If may be written for inputs it is never given (a function body testing a rank, say):
        # what is contradictory there is a finding only when the condition is known to take that branch.
        taken: str | None = None
        if control and node.op_type == "If":
            cond = resolve(in_values[0]) if in_values else None
            taken = (
                ""
                if cond is None or cond.size != 1
                else ("then_branch" if bool(cond.reshape(-1)[0]) else "else_branch")
            )
        walked: dict[str, tuple[Types, Shapes]] = {}

        def sub(
            name: str, g: GraphProto, t_in: Sequence[str | None] | None, s_in: Sequence[ShapeT | None] | None
        ) -> tuple[Types, Shapes]:
            f = frame if taken is None or taken == name else dataclasses.replace(frame, report=False)
            r = walked[name] = self.walk_graph(g, f"{loc}/{name}", env, t_in, s_in, f)
            return r

        # The input shapes the shape rule gives each subgraph (it reads nothing the walk returns to compute them).
        shape_in: dict[str, Sequence[ShapeT | None] | None] = {}
        if control:
            assert attrs is not None and schema is not None

            def probe(name: str, g: GraphProto, s_in: Sequence[ShapeT | None] | None) -> Shapes:
                shape_in[name] = s_in
                return []

            try:
                control_flow_outputs(node, schema, in_shapes, attrs, probe, set())
            except Exception:
                shape_in.clear()  # the rule fails again below, where a test may want it raised

        # Types: the call of a model-local function, or the definition's rules (walking the subgraphs they read).
        t_out: Sequence[str | None] = (None,) * n_out
        bindings_: dict[str, str] = _NO_BINDINGS
        conflicts: frozenset[str] = _NO_CONFLICTS
        if b.function is not None:
            t_out = self.call_site(b, in_types, in_shapes, in_values, frame)[0]
        elif schema is not None:

            def typed(name: str, g: GraphProto, t_in: Sequence[str | None]) -> Types:
                return sub(name, g, t_in, shape_in.get(name))[0]

            view = _TypeNodeView(typed, frame, node, loc, schema, in_types)
            t_out, bindings_, conflicts = infer_outputs(view, n_out)

        # Shapes: the control-flow rule (subgraphs the type rule walked give their shapes as they are).
        s_out: Sequence[ShapeT | None] = [None] * n_out
        if control:
            assert attrs is not None and schema is not None

            def shaped(name: str, g: GraphProto, s_in: Sequence[ShapeT | None] | None) -> Shapes:
                hit = walked.get(name)
                return hit[1] if hit is not None else sub(name, g, None, s_in)[1]

            try:
                s_out = control_flow_outputs(node, schema, in_shapes, attrs, shaped, set())
            except Exception:
                if shape_step.STRICT:  # read here: the tests set it
                    raise
        elif attrs is not None and schema is not None:
            # Another operator holding graphs (FlexAttention's score_mod): its own rule.
            outcome = self.step.evaluate(b, in_shapes, in_values, attrs, frame)
            s_out = self.step.memo_result(outcome, node, path, i, frame)[0]

        # Graphs no rule walked (custom operators, malformed nodes) are still walked for their nodes.
        for a in node.attribute:
            if a.g is not None and a.name not in walked:
                sub(a.name, a.g, None, None)
            for k, g in enumerate(a.graphs):
                name = f"{a.name}[{k}]"
                if name not in walked:
                    sub(name, g, None, None)
        return t_out, bindings_, conflicts, list(s_out)

    # --- function bodies ------------------------------------------------------------------------

    def call_site(
        self,
        b: Binding,
        in_types: tuple[str | None, ...],
        in_shapes: Sequence[ShapeT | None],
        in_values: Sequence[np.ndarray | None],
        frame: Frame,
    ) -> tuple[Types, Shapes]:
        """Types and shapes of the outputs of a call of a model-local function."""
        node = b.node
        fn = b.function
        assert fn is not None
        unknown: list[Any] = [None] * len(node.output)
        try:
            attrs = self.step.attributes(node, frame)
        except Unresolvable:
            return unknown, list(unknown)
        return self.call(
            fn,
            self.function_bindings(fn),
            self.function_frame_opsets(fn),
            node,
            in_types,
            in_shapes,
            in_values,
            attrs,
            None,
            frame,
        )

    def call(
        self,
        fn: FunctionProto,
        bindings: Sequence[Binding],
        opsets: dict[str, int],
        node: NodeProto,
        in_types: Sequence[str | None],
        in_shapes: Sequence[ShapeT | None],
        in_values: Sequence[np.ndarray | None],
        attrs: dict[str, AttributeProto],
        schema: OpSchema | None,
        frame: Frame,
    ) -> tuple[Types, Shapes]:
        """Output types and shapes of a call: the body (``bindings``, under ``opsets``) walked with this call's
        input types, shapes and values and its attributes (Clause 8.4); nothing in it is recorded."""
        n_out = len(node.output)
        unknown: list[Any] = [None] * n_out
        key = (canonical_domain(fn.domain), fn.name, fn.overload)
        if key in self.active or self.too_deep(frame.depth) or self.budget < 0:
            return unknown, list(unknown)  # a recursive call (invalid, Clause 8.4), too deep, or over budget
        fn_attrs: dict[str, AttributeProto] = {}
        if schema is not None:
            fn_attrs.update(self.step.schema_defaults(schema))
        else:
            fn_attrs.update({a.name: a for a in fn.attribute_proto})
        fn_attrs.update(attrs)
        try:
            memo: tuple[object, ...] | None = (
                id(fn),
                tuple(in_types),
                tuple(in_shapes),
                tuple(None if v is None else id(v) for v in in_values),
                tuple(sorted((n, encode(a)) for n, a in fn_attrs.items())),
                frame.okey,
            )
        except OnnxCoreError:  # an attribute built by code that cannot be encoded: no memo
            memo = None
        hit = self.calls.get(memo) if memo is not None else None
        if hit is not None:
            return (hit[0] + unknown)[:n_out], (hit[1] + unknown)[:n_out]
        for v in in_values:
            if v is not None:
                self.step.pinned[id(v)] = v  # the memo holds the value's id
        inner = Frame(opsets, fn_attrs, True, False, frame.depth + 1)
        env = _Env(None)
        decl_types = {vi.name: vi.type for vi in fn.value_info if vi.type is not None}
        decl_shapes = {vi.name: declared_shape(vi.type) for vi in fn.value_info}
        for k, name in enumerate(fn.input):
            d = type_string(decl_types.get(name))
            env.types[name] = d if d is not None else (in_types[k] if k < len(in_types) else None)
            env.shapes[name] = in_shapes[k] if k < len(in_shapes) else None
            v = in_values[k] if k < len(in_values) else None
            if v is not None:
                env.values[name] = v
        self.active.add(key)
        try:
            self.walk_nodes(bindings, "", env, decl_types, decl_shapes, inner)
        finally:
            self.active.discard(key)
        types_out = [env.type(name) for name in fn.output]
        shapes_out = [env.shape(name) for name in fn.output]
        if memo is not None:
            self.calls[memo] = (types_out, shapes_out)
        return (types_out + unknown)[:n_out], (shapes_out + unknown)[:n_out]


def run(
    model: ModelProto,
    *,
    limits: Limits | None = None,
    bound: BoundModel | None = None,
    node_types: bool = True,
    custom_ops: KernelSet | None = None,
) -> InferenceWalk:
    """Walk ``model`` (its graph, then each model-local function's body); the walk holds what it found.

    With ``node_types=False`` only shapes are wanted: see :class:`InferenceWalk`. ``custom_ops``: the kernels
    constant folding chooses first (a session's).
    """
    walk = InferenceWalk(model, limits, bound, node_types=node_types, custom_ops=custom_ops)
    try:
        if model.graph is not None:
            walk.walk_graph(model.graph, "graph", None, None, None, Frame(walk.top_opsets, None, False, True, 0))
    except RecursionError:
        pass  # nesting (within a raised limit) beyond the interpreter's stack: what was inferred so far stands
    for i, fn in enumerate(model.functions):
        try:
            walk.walk_function(fn, function_location(i, fn), Frame(walk.top_opsets, None, True, True, 0))
        except RecursionError:
            pass
    # What the bound model did not enter (Clause 15.4) is refused under the code the other passes use.
    refused = [(NESTING_REFUSAL, loc) for loc, _depth in walk.bound.too_deep]
    walk.type_result.refused = refused
    walk.shape_result.refused = list(refused)
    return walk
