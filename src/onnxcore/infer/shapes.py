"""Shape inference (Clause 9): the shape of every tensor value of a model, from its declared shapes.

The shape pass of :mod:`onnxcore.infer.walk` (graphs in node order, subgraphs in their enclosing scope, function
bodies per call site, every node bound by the bound model) carries, per value, a shape (see
:mod:`onnxcore.infer.shape_core`) and, for small tensors whose contents are statically known (initializers,
``Constant``, and the nodes computed from them), the value itself, so that a ``Reshape`` to a computed shape has a
known result; the elements of ``Shape`` of a tensor with dimension variables are carried as a
:class:`~onnxcore.infer.shape_core.SymbolicValue` (data propagation, ``shape_ops/symbolic.py``). The operator's
shape rule gives a node's output shapes; a node whose inputs are all known is also evaluated with its kernel
(:mod:`onnxcore.infer.fold`: small tensors only, under tight limits), at once when the rule cannot state every
shape, else only when a later rule reads its value. For an operator without a rule, its function body
(Clause 8.4) is walked; failing those, the outputs are unknown (Clause 9.4).

Never raises on a malformed model: what it cannot decide stays unknown. What it finds contradictory is
recorded: a node whose fixed input extents contradict its definition (:class:`ShapeIncompatibility`) and
an inferred shape that contradicts the shape declared for the same value (:class:`ShapeMismatch`); the
validator reports both under Clause 10.3.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import onnxcore.infer.shape_ops  # noqa: F401  (registers the shape rules)
from onnxcore.defs.binding import canonical_domain
from onnxcore.defs.opschema import OpSchema
from onnxcore.graph.bound import BoundModel, bind, function_location
from onnxcore.graph.functions import Unresolved, resolve_attribute
from onnxcore.infer.engine import run as infer_types
from onnxcore.infer.fold import (
    LazyValue,
    PendingFold,
    dims_shape,
    fold,
    initializer_value,
    small_shape,
    small_value,
)
from onnxcore.infer.shape_core import SHAPE_RULES, VALUE_RULES, ShapeContext, ShapeIncompatible, ShapeT, resolve
from onnxcore.infer.shape_ops.control import control_flow_outputs
from onnxcore.infer.shape_results import (
    ShapeIncompatibility,
    ShapeInference,
    ShapeMismatch,
    declared_shape,
    merge,
    stated_dims,
)
from onnxcore.infer.walk import Binding, Frame, Walk, node_location
from onnxcore.limits import Limits
from onnxcore.proto.messages import (
    AttributeProto,
    FunctionProto,
    GraphProto,
    ModelProto,
    NodeProto,
    TensorShapeProto,
    TypeProto,
    ValueInfoProto,
)

__all__ = [
    "ShapeInference",
    "ShapeIncompatibility",
    "ShapeMismatch",
    "ShapeWalk",
    "annotate",
    "declared_shape",
    "infer_shapes",
    "stated_dims",
]

# Set by the tests: a rule that raises anything but ShapeIncompatible is a defect, not an unknown.
STRICT = False


class _ShapeEnv:
    """The shapes (and small known values) of one walked body's values, seeing its enclosing bodies'."""

    __slots__ = ("parent", "shapes", "values")

    def __init__(self, parent: _ShapeEnv | None) -> None:
        self.parent = parent
        self.shapes: dict[str, ShapeT | None] = {}
        self.values: dict[str, Any] = {}  # arrays, or values computed when first read (shape_core.resolve)

    def shape(self, name: str) -> ShapeT | None:
        s: _ShapeEnv | None = self
        while s is not None:
            if name in s.shapes:
                return s.shapes[name]
            s = s.parent
        return None

    def value(self, name: str) -> Any:
        s: _ShapeEnv | None = self
        while s is not None:
            if name in s.shapes:
                return s.values.get(name)
            s = s.parent
        return None


# What a node gives: output shapes and small values, or a message (an incompatibility), or _UNRULED.
_UNRULED = "\x00unruled"
_Outcome = tuple[list[ShapeT | None], dict[int, np.ndarray]] | str


class _Unresolvable(Exception):
    """An attribute refers to a function parameter this walk cannot bind."""


class ShapeWalk(Walk):
    """The shape pass (see :func:`infer_shapes`)."""

    def __init__(self, model: ModelProto, limits: Limits | None, bound: BoundModel | None) -> None:
        super().__init__(model, limits, bound)
        self.result = ShapeInference()
        self.ir_version = int(model.ir_version)
        self.defaults: dict[int, dict[str, AttributeProto]] = {}
        # Rule outcomes by (definition, input shapes, inputs present, output count, attributes): large models
        # repeat a few layer configurations many times.
        self.memo: dict[tuple[object, ...], _Outcome] = {}
        self.pinned: dict[int, np.ndarray] = {}

    # --- graphs ---------------------------------------------------------------------------------

    def walk_graph(
        self,
        g: GraphProto,
        path: str,
        parent: _ShapeEnv | None,
        overrides: Sequence[ShapeT | None] | None,
        frame: Frame,
    ) -> list[ShapeT | None]:
        if self.too_deep(frame.depth) or self.budget < 0:
            return [None] * len(g.output)
        frame = dataclasses.replace(frame, depth=frame.depth + 1)
        env = _ShapeEnv(parent)
        declared: dict[str, ShapeT | None] = {}
        for vi in (*g.value_info, *g.output):
            s = declared_shape(vi.type)
            if s is not None:
                declared[vi.name] = s
        graph_inputs = {vi.name for vi in g.input}
        for k, vi in enumerate(g.input):
            d = declared_shape(vi.type)
            o = overrides[k] if overrides is not None and k < len(overrides) else None
            s, clash = merge(d, o)
            if clash and frame.record and frame.report and d is not None and o is not None:
                self.result.mismatches.append(ShapeMismatch(path, vi.name, f"{path}/input[{k}]", d, o))
            env.shapes[vi.name] = s
        for t in g.initializer:
            if t.name not in env.shapes or env.shapes[t.name] is None:
                env.shapes[t.name] = dims_shape(t.dims)
            # An input's initializer is only a default (Clause 7.2), except before IR version 4, where every
            # initializer had to be declared an input and that was how a constant was written.
            if t.name not in graph_inputs or self.ir_version < 4:
                v = initializer_value(t)
                if v is not None:
                    env.values[t.name] = v
        for sp in g.sparse_initializer:
            if sp.values is not None and sp.values.name not in env.shapes:
                env.shapes[sp.values.name] = dims_shape(sp.dims)
        self.walk_nodes(self.graph_bindings(g, frame.opsets), path, env, declared, frame)
        outs = [env.shape(vi.name) for vi in g.output]
        if frame.record:
            self.result.shapes[path] = {n: s for n, s in env.shapes.items() if s is not None}
        return outs

    def walk_nodes(
        self,
        bindings: Sequence[Binding],
        path: str,
        env: _ShapeEnv,
        declared: dict[str, ShapeT | None],
        frame: Frame,
    ) -> None:
        self.budget -= len(bindings)
        if self.budget < 0:
            return
        shapes, values_of = env.shapes, env.values
        # The top-level scope has no parent: plain dict lookups (the validator walks 50,000-node graphs).
        get_shape = shapes.get if env.parent is None else env.shape
        get_value = values_of.get if env.parent is None else env.value
        node_fn = self.node
        record = frame.record and frame.report
        for i, b in enumerate(bindings):
            node = b.node
            ins = node.input
            in_shapes = [get_shape(n) if n else None for n in ins]
            in_values = [get_value(n) if n else None for n in ins]
            outs, values = node_fn(b, path, i, env, in_shapes, in_values, frame)
            n_known = len(outs)
            for k, name in enumerate(node.output):
                if not name:
                    continue
                inferred = outs[k] if k < n_known else None
                d = declared.get(name)
                if d is None:
                    shapes[name] = inferred
                else:
                    merged, clash = merge(d, inferred)
                    if clash and record and inferred is not None:
                        where = f"{node_location(path, i, node)}/output[{k}]"
                        self.result.mismatches.append(ShapeMismatch(path, name, where, d, inferred))
                    shapes[name] = merged
                if values:
                    v = values.get(k)
                    if v is not None:
                        values_of[name] = v

    # --- one node -------------------------------------------------------------------------------

    def node(
        self,
        b: Binding,
        path: str,
        i: int,
        env: _ShapeEnv,
        in_shapes: list[ShapeT | None],
        in_values: list[np.ndarray | None],
        frame: Frame,
    ) -> tuple[Sequence[ShapeT | None], dict[int, np.ndarray]]:
        node = b.node
        n_out = len(node.output)
        try:
            attrs, has_graphs = self.attributes(node, frame)
        except _Unresolvable:
            return [None] * n_out, {}
        if has_graphs:
            return self.control_flow(b, path, i, env, in_shapes, in_values, attrs, frame), {}
        memo_key: tuple[object, ...] | None = None
        akey = _attrs_key(attrs)
        if akey is not None:
            # The outcome depends on nothing else (the binding follows from the node and the imports). Known
            # input values enter the key by identity; the walk holds them (self.pinned) so that an id is never
            # reused for another array during the walk.
            values_key = tuple(None if v is None else id(v) for v in in_values)
            present = tuple(bool(n) for n in node.input)
            memo_key = (
                node.domain,
                node.op_type,
                node.overload,
                frame.okey,
                tuple(in_shapes),
                values_key,
                present,
                n_out,
                akey,
            )
            hit = self.memo.get(memo_key)
            if hit is not None:
                return self.memo_result(hit, node, path, i, frame)
            for v in in_values:
                if v is not None:
                    self.pinned[id(v)] = v
        outcome = self.evaluate(b, in_shapes, in_values, attrs, frame)
        if memo_key is not None:
            self.memo[memo_key] = outcome
        return self.memo_result(outcome, node, path, i, frame)

    def evaluate(
        self,
        b: Binding,
        in_shapes: list[ShapeT | None],
        in_values: list[np.ndarray | None],
        attrs: dict[str, AttributeProto],
        frame: Frame,
    ) -> _Outcome:
        """Output shapes (and small values) of a node without subgraphs: folded, by rule, or through a body."""
        node = b.node
        unknown: list[ShapeT | None] = [None] * len(node.output)
        if b.function is not None:
            fn = b.function
            bodies = self.function_bindings(fn)
            opsets = self.function_frame_opsets(fn)
            return self.call(fn, bodies, opsets, node, in_shapes, in_values, attrs, None, frame), {}
        schema = b.schema
        if schema is None:
            return unknown, {}
        domain = canonical_domain(node.domain)
        rule = SHAPE_RULES.get((domain, node.op_type))
        foldable = all(v is not None for n, v in zip(node.input, in_values) if n)
        if rule is not None:
            outcome = self.apply(rule, node, schema, in_shapes, in_values, attrs)
            if not foldable or not isinstance(outcome, tuple):
                return outcome
            outs = outcome[0]
            if all(o is not None and all(isinstance(d, int) for d in o) for o in outs):
                # The rule tells every shape: the values are computed only if a later rule asks for them
                # (most constants of a model are weights nobody reads as a shape).
                pending = PendingFold(node, domain, schema, in_values, attrs)
                # Lazy values travel where arrays do (scopes, ShapeContext), resolved where read (resolve).
                small: dict[int, Any] = {k: LazyValue(pending, k) for k, o in enumerate(outs) if small_shape(o)}
                return outs, {**small, **outcome[1]}
            folded = fold(node, domain, schema, in_values, attrs)
            return folded if folded is not None else outcome
        if foldable:
            folded = fold(node, domain, schema, in_values, attrs)
            if folded is not None:
                return folded
        body = self.body(schema, b.version, frame.opsets)
        if body is not None:
            scope, bodies = body
            assert scope.function is not None
            return self.call(scope.function, bodies, scope.opsets, node, in_shapes, in_values, attrs, schema, frame), {}
        return _UNRULED

    def apply(
        self,
        rule: Callable[[ShapeContext], Sequence[ShapeT | None]],
        node: NodeProto,
        schema: OpSchema,
        in_shapes: list[ShapeT | None],
        in_values: list[np.ndarray | None],
        attrs: dict[str, AttributeProto],
    ) -> _Outcome:
        """The outcome of an operator's shape rule on one node."""
        ctx = ShapeContext(node, int(schema.since_version), in_shapes, in_values, attrs, self.schema_defaults(schema))
        try:
            outs = list(rule(ctx))
            values: dict[int, Any] = {k: v for k, v in ctx._out_values.items() if small_value(v) is not None}
            vrule = VALUE_RULES.get((schema.domain, node.op_type))
            if vrule is not None and 0 not in values:
                sv = vrule(ctx)
                if sv is not None:
                    fixed = [d for d in sv.extents if isinstance(d, int)]
                    if len(fixed) == len(sv.extents):  # all fixed: an ordinary value
                        values[0] = np.array(fixed[0] if sv.scalar else fixed, dtype=np.int64)
                    else:
                        values[0] = sv
        except ShapeIncompatible as e:
            return str(e)
        except Exception:
            if STRICT:
                raise
            return [None] * len(node.output), {}
        return outs, values

    def memo_result(
        self, outcome: _Outcome, node: NodeProto, path: str, i: int, frame: Frame
    ) -> tuple[Sequence[ShapeT | None], dict[int, np.ndarray]]:
        """An outcome for this node: its shapes; or, recorded at this node, an incompatibility (a message) or
        the absence of any rule."""
        if isinstance(outcome, tuple):
            return outcome
        if frame.record:
            loc = node_location(path, i, node)
            if outcome is _UNRULED:
                self.result.unruled.append((loc, node.op_type))
            elif frame.report:
                self.result.incompatibilities.append(ShapeIncompatibility(path, loc, node.op_type, str(outcome)))
        return [None] * len(node.output), {}

    def attributes(self, node: NodeProto, frame: Frame) -> tuple[dict[str, AttributeProto], bool]:
        """The node's attributes by name, references to the function's parameters bound (Clause 8.4); and
        whether one holds a graph."""
        out: dict[str, AttributeProto] = {}
        graphs = False
        for a in node.attribute:
            if a.ref_attr_name:
                # Without a call site (a body read on its own, or a reference outside any function) the node's
                # outcome is unknown; fn_attrs already holds the parameters' defaults under the call's values.
                r = resolve_attribute(a, frame.fn_attrs, {})
                if isinstance(r, Unresolved):
                    raise _Unresolvable
                if r is None:
                    continue  # the parameter is not set at the call site: the node's default applies
                a = r
            if a.g is not None or a.graphs:
                graphs = True
            out[a.name] = a
        return out, graphs

    def schema_defaults(self, schema: OpSchema) -> dict[str, AttributeProto]:
        d = self.defaults.get(id(schema))
        if d is None:
            d = self.defaults[id(schema)] = {
                n: ad.default for n, ad in schema.attributes.items() if ad.default is not None
            }
        return d

    # --- subgraphs and functions ----------------------------------------------------------------

    def control_flow(
        self,
        b: Binding,
        path: str,
        i: int,
        env: _ShapeEnv,
        in_shapes: list[ShapeT | None],
        in_values: list[np.ndarray | None],
        attrs: dict[str, AttributeProto],
        frame: Frame,
    ) -> list[ShapeT | None]:
        node = b.node
        loc = node_location(path, i, node)
        schema = b.schema

        # A branch of an If may be written for inputs it is never given (a function body testing a rank, say):
        # what is contradictory there is a finding only when the condition is known to take that branch.
        taken: str | None = None
        if schema is not None and schema.domain == "" and node.op_type == "If":
            cond = resolve(in_values[0]) if in_values else None
            taken = (
                ""
                if cond is None or cond.size != 1
                else ("then_branch" if bool(cond.reshape(-1)[0]) else "else_branch")
            )

        def walk(name: str, graph: GraphProto, inputs: Sequence[ShapeT | None] | None) -> list[ShapeT | None]:
            sub = frame if taken is None or taken == name else dataclasses.replace(frame, report=False)
            return self.walk_graph(graph, f"{loc}/{name}", env, inputs, sub)

        walked: set[str] = set()
        outs: Sequence[ShapeT | None] = [None] * len(node.output)
        if schema is not None and schema.domain == "" and node.op_type in ("If", "Loop", "Scan", "SequenceMap"):
            try:
                outs = control_flow_outputs(node, schema, in_shapes, attrs, walk, walked)
            except Exception:
                if STRICT:
                    raise
        elif schema is not None:
            # Another operator holding graphs (FlexAttention's score_mod): its own rule.
            outs = self.memo_result(self.evaluate(b, in_shapes, in_values, attrs, frame), node, path, i, frame)[0]
        for a in node.attribute:
            if a.name in walked:
                continue
            if a.g is not None:
                self.walk_graph(a.g, f"{loc}/{a.name}", env, None, frame)
            for k, sub in enumerate(a.graphs):
                self.walk_graph(sub, f"{loc}/{a.name}[{k}]", env, None, frame)
        return list(outs)

    def call(
        self,
        fn: FunctionProto,
        bindings: Sequence[Binding],
        opsets: dict[str, int],
        node: NodeProto,
        in_shapes: Sequence[ShapeT | None],
        in_values: Sequence[np.ndarray | None],
        attrs: dict[str, AttributeProto],
        schema: OpSchema | None,
        frame: Frame,
    ) -> list[ShapeT | None]:
        """Output shapes of a call: the body (``bindings``, under ``opsets``) walked with this call's shapes,
        values and attributes (Clause 8.4)."""
        unknown: list[ShapeT | None] = [None] * len(node.output)
        key = (canonical_domain(fn.domain), fn.name, fn.overload)
        if key in self.active or self.too_deep(frame.depth) or self.budget < 0:
            return unknown
        fn_attrs: dict[str, AttributeProto] = {}
        if schema is not None:
            fn_attrs.update(self.schema_defaults(schema))
        else:
            fn_attrs.update({a.name: a for a in fn.attribute_proto})
        fn_attrs.update(attrs)
        inner = Frame(opsets, fn_attrs, True, False, frame.depth + 1)
        env = _ShapeEnv(None)
        for k, name in enumerate(fn.input):
            env.shapes[name] = in_shapes[k] if k < len(in_shapes) else None
            v = in_values[k] if k < len(in_values) else None
            if v is not None:
                env.values[name] = v
        declared = {vi.name: declared_shape(vi.type) for vi in fn.value_info}
        self.active.add(key)
        try:
            self.walk_nodes(bindings, "", env, declared, inner)
        finally:
            self.active.discard(key)
        outs = [env.shape(name) for name in fn.output]
        return (outs + unknown)[: len(node.output)]


_SIMPLE_KINDS = frozenset({1, 2, 3, 6, 7, 8})  # FLOAT, INT, STRING, FLOATS, INTS, STRINGS


def _attrs_key(attrs: dict[str, AttributeProto]) -> tuple[object, ...] | None:
    """The attributes' values as a hashable key, or None when one is not a number, a string or a list of them."""
    if not attrs:
        return ()
    key: list[object] = []
    for name, a in attrs.items():
        if a.type not in _SIMPLE_KINDS:
            return None
        key.append(
            (name, a.type, a.i, a.f, bytes(a.s), tuple(a.ints), tuple(a.floats), tuple(bytes(x) for x in a.strings))
        )
    return tuple(key)


def infer_shapes(model: ModelProto, *, limits: Limits | None = None, bound: BoundModel | None = None) -> ShapeInference:
    """Infer the shape of every tensor value of ``model`` (Clause 9). Never raises on a malformed model.

    Args:
        model: A decoded model.
        limits: ``max_nesting_depth`` bounds the subgraphs walked, ``max_inference_nodes`` the node visits
            (Clause 15.4); those ``bound`` was made under (else ``DEFAULT_LIMITS``) when None.
        bound: The model bound by :func:`onnxcore.graph.bind`, used as is (no second binding); bound here
            when None.

    Returns:
        The :class:`ShapeInference`: shapes per graph path, contradictions found, and the nodes no rule covers.
    """
    walk = ShapeWalk(model, limits, bound)
    try:
        if model.graph is not None:
            walk.walk_graph(model.graph, "graph", None, None, Frame(walk.top_opsets, None, False, True, 0))
    except RecursionError:
        pass  # nesting (within a raised limit) beyond the interpreter's stack: what was inferred so far stands
    for i, fn in enumerate(model.functions):
        env = _ShapeEnv(None)
        declared = {vi.name: declared_shape(vi.type) for vi in fn.value_info}
        for name in fn.input:
            env.shapes[name] = declared.get(name)
        frame = Frame(walk.function_frame_opsets(fn), None, True, True, 0)
        path = function_location(i, fn)
        try:
            walk.walk_nodes(walk.function_bindings(fn), path, env, declared, frame)
        except RecursionError:
            pass
        walk.result.shapes[path] = {n: s for n, s in env.shapes.items() if s is not None}
    return walk.result


def _shape_proto(shape: ShapeT) -> TensorShapeProto:
    dims = []
    for d in shape:
        if isinstance(d, int):
            dims.append(TensorShapeProto.Dimension(dim_value=d))
        elif isinstance(d, str):
            dims.append(TensorShapeProto.Dimension(dim_param=d))
        else:
            dims.append(TensorShapeProto.Dimension())
    return TensorShapeProto(dim=dims)


def _with_shape(tp: TypeProto, shape: ShapeT | None) -> TypeProto:
    if shape is None or tp.tensor_type is None:
        return tp
    tp = copy.deepcopy(tp)
    assert tp.tensor_type is not None
    tp.tensor_type.shape = _shape_proto(shape)
    return tp


def annotate(model: ModelProto, *, limits: Limits | None = None, bound: BoundModel | None = None) -> ModelProto:
    """``model`` with what inference tells stated in its top-level graph (a new model; ``model`` is unchanged).

    Every node output of the top-level graph that is not a graph output and has no ``value_info`` gets one,
    with its inferred type and, where known, its shape; a graph output declared without a shape gets the
    inferred one. Values whose type is unknown are left out (Clause 9.4).

    Args:
        model: A decoded model.
        limits: As for :func:`infer_shapes`.
        bound: The model bound by :func:`onnxcore.graph.bind`, used as is; bound here (once, for both the
            types and the shapes) when None.
    """
    m = copy.copy(model)
    g = model.graph
    if g is None:
        return m
    if bound is None:
        bound = bind(model, limits=limits)
    types = infer_types(model, limits=limits, bound=bound).types().get("graph", {})
    shapes = infer_shapes(model, limits=limits, bound=bound).shapes.get("graph", {})
    g = copy.copy(g)
    m.graph = g
    declared = {vi.name for vi in g.value_info} | {vi.name for vi in g.input} | {t.name for t in g.initializer}
    outputs = {vi.name for vi in g.output}
    added = list(g.value_info)
    for node in g.node:
        for name in node.output:
            if not name or name in declared or name in outputs or name not in types:
                continue
            declared.add(name)
            added.append(ValueInfoProto(name=name, type=_with_shape(types[name], shapes.get(name))))
    g.value_info = added
    outs = []
    for vi in g.output:
        tp = vi.type
        if tp is not None and tp.tensor_type is not None and tp.tensor_type.shape is None:
            s = shapes.get(vi.name)
            if s is not None:
                vi = copy.copy(vi)
                vi.type = _with_shape(tp, s)
        outs.append(vi)
    g.output = outs
    return m
