"""Shape inference (Clause 9): the shape of every tensor value of a model, from its declared shapes.

The walk follows the type walk of :mod:`onnxcore.infer.engine` (graphs in node order, subgraphs in their
enclosing scope, model-local functions per call site) and carries, per value, a shape (see
:mod:`onnxcore.infer.shape_core`) and, for small tensors whose contents are statically known
(initializers, ``Constant``, and the nodes computed from them), the value itself, so that a ``Reshape``
to a computed shape has a known result; the elements of ``Shape`` of a tensor with dimension variables are
carried as a :class:`~onnxcore.infer.shape_core.SymbolicValue` (data propagation, ``shape_ops/symbolic.py``).
The operator's shape rule gives a node's output shapes; a node whose inputs are all known is also evaluated
with its runtime kernel (small tensors only, under tight limits), at once when the rule cannot state every
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
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import onnxcore.infer.shape_ops  # noqa: F401  (registers the shape rules)
from onnxcore.defs.binding import canonical_domain, get_schema
from onnxcore.defs.opschema import OpSchema
from onnxcore.infer.engine import function_location, node_location
from onnxcore.infer.shape_core import (
    SHAPE_RULES,
    VALUE_RULES,
    Extent,
    ShapeContext,
    ShapeIncompatible,
    ShapeT,
    resolve,
)
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
from onnxcore.types.valuetypes import declared_shape, stated_dims  # defined once, in types/ (re-exported)

__all__ = [
    "ShapeInference",
    "ShapeIncompatibility",
    "ShapeMismatch",
    "annotate",
    "declared_shape",
    "infer_shapes",
    "stated_dims",
]

_MAX_DEPTH = 64
_NODE_BUDGET = 2_000_000
# Values kept: tensors of at most this many elements (shape tensors, scales, small constants).
_MAX_VALUE_ELEMENTS = 4096
# Nodes evaluated for their values: inputs and outputs of at most this many elements each.
_FOLD_ELEMENTS = 1 << 16
# Not evaluated while inferring: the runtime's NONDETERMINISTIC operators (their results are not functions of
# the inputs) and Dropout; and, should their kernels ever be folded (string values are not kept and ImageDecoder's
# kernel takes a context, so neither is today), operators whose cost a small input does not bound, which would let
# a model make its own validation hang: a regular expression can backtrack exponentially, an image stream of a
# few kilobytes can hold millions of pixels to decode in Python.
_NO_FOLD = frozenset(
    {
        "RandomNormal",
        "RandomUniform",
        "RandomNormalLike",
        "RandomUniformLike",
        "Bernoulli",
        "Multinomial",
        "Dropout",
        "RegexFullMatch",
        "ImageDecoder",
    }
)
_FOLD_LIMITS = Limits(max_tensor_elements=_FOLD_ELEMENTS, max_tensor_bytes=8 * _FOLD_ELEMENTS)
# Set by the tests: a rule that raises anything but ShapeIncompatible is a defect, not an unknown.
STRICT = False


def _fmt(s: ShapeT | None) -> str:
    if s is None:
        return "(rank unknown)"
    return "[" + ", ".join("?" if d is None else str(d) for d in s) + "]"


@dataclass(slots=True, frozen=True)
class ShapeMismatch:
    """An inferred shape that contradicts the declared one (Clause 9.4, last paragraph; reported under 10.3).

    Attributes:
        graph: Path of the graph holding the value.
        name: The value's name.
        location: The node output (``.../node[3] "n"/output[0]``) or subgraph input it was found at.
        declared: The declared shape.
        inferred: The inferred shape.
    """

    graph: str
    name: str
    location: str
    declared: ShapeT
    inferred: ShapeT

    @property
    def message(self) -> str:
        return f"value {self.name!r} is declared with shape {_fmt(self.declared)} but inferred {_fmt(self.inferred)}"


@dataclass(slots=True, frozen=True)
class ShapeIncompatibility:
    """A node whose statically known extents contradict its operator definition (Clause 10.3).

    Attributes:
        graph: Path of the graph holding the node.
        location: The node's location.
        op_type: Its operator.
        message: What contradicts what.
    """

    graph: str
    location: str
    op_type: str
    message: str


@dataclass(slots=True)
class ShapeInference:
    """The result of :func:`infer_shapes`.

    Attributes:
        shapes: Graph path -> value name -> shape, for every tensor value of known rank (declared and
            inferred merged: the declared extent where the inference has none, the fixed one where both
            speak); for a sequence, the shape its elements share; for an optional, its tensor's.
        mismatches: Every inferred shape contradicting a declared one.
        incompatibilities: Every node whose fixed extents contradict its definition.
        unruled: (location, op_type) of each node whose outputs stayed unknown because its operator has
            neither a shape rule nor a function body (and its inputs were not all known).
    """

    shapes: dict[str, dict[str, ShapeT]] = field(default_factory=dict)
    mismatches: list[ShapeMismatch] = field(default_factory=list)
    incompatibilities: list[ShapeIncompatibility] = field(default_factory=list)
    unruled: list[tuple[str, str]] = field(default_factory=list)

    def shape(self, name: str, graph: str = "graph") -> ShapeT | None:
        """The shape of value ``name`` of ``graph`` (the top-level graph by default), or None."""
        return self.shapes.get(graph, {}).get(name)


def merge(declared: ShapeT | None, inferred: ShapeT | None) -> tuple[ShapeT | None, bool]:
    """The shape a value has given a declaration and an inference, and whether the two contradict each other.

    A fixed extent wins over a variable (the inference shows which extent the variable takes here, Clause
    6.5.2), a variable over unknown.
    """
    if declared is None:
        return inferred, False
    if inferred is None:
        return declared, False
    if len(declared) != len(inferred):
        return declared, True
    out: list[Extent] = []
    clash = False
    for d, i in zip(declared, inferred):
        if isinstance(d, int):
            if isinstance(i, int) and i != d:
                clash = True
            out.append(d)
        elif isinstance(i, int):
            out.append(i)
        else:
            out.append(d if d is not None else i)
    return tuple(out), clash


class _Scope:
    __slots__ = ("parent", "shapes", "values")

    def __init__(self, parent: _Scope | None) -> None:
        self.parent = parent
        self.shapes: dict[str, ShapeT | None] = {}
        self.values: dict[str, Any] = {}  # arrays, or values computed when first read (shape_core.resolve)

    def shape(self, name: str) -> ShapeT | None:
        s: _Scope | None = self
        while s is not None:
            if name in s.shapes:
                return s.shapes[name]
            s = s.parent
        return None

    def value(self, name: str) -> Any:
        s: _Scope | None = self
        while s is not None:
            if name in s.shapes:
                return s.values.get(name)
            s = s.parent
        return None


@dataclass(slots=True)
class _Frame:
    opsets: dict[str, int]
    fn_attrs: dict[str, AttributeProto] | None
    in_function: bool
    record: bool
    depth: int
    report: bool = True  # whether contradictions found here are findings (False in an If branch maybe not taken)
    okey: tuple[tuple[str, int], ...] = ()  # the imports as a hashable key

    def __post_init__(self) -> None:
        self.okey = tuple(sorted(self.opsets.items()))


# What a node gives: output shapes and small values, or a message (an incompatibility), or _UNRULED.
_UNRULED = "\x00unruled"
_Outcome = tuple[list[ShapeT | None], dict[int, np.ndarray]] | str


class _Unresolvable(Exception):
    """An attribute refers to a function parameter this walk cannot bind."""


def _small_value(a: Any) -> np.ndarray | None:
    if isinstance(a, np.ndarray) and a.size <= _MAX_VALUE_ELEMENTS and a.dtype.kind in "biuf":
        return a
    return None


class _Engine:
    def __init__(self, model: ModelProto) -> None:
        self.result = ShapeInference()
        self.ir_version = int(model.ir_version)
        self.opsets: dict[str, int] = {}
        for imp in model.opset_import:
            self.opsets.setdefault(canonical_domain(imp.domain), imp.version)
        self.functions: dict[tuple[str, str, str], FunctionProto] = {}
        for fn in model.functions:
            self.functions.setdefault((canonical_domain(fn.domain), fn.name, fn.overload), fn)
        self.schemas: dict[tuple[str, str, int], OpSchema | None] = {}
        self.budget = _NODE_BUDGET
        self.active: set[tuple[str, str, str]] = set()
        self.defaults: dict[int, dict[str, AttributeProto]] = {}
        self.bodies: dict[tuple[int, int], FunctionProto | None] = {}
        # Rule outcomes by (definition, input shapes, inputs present, output count, attributes): large models
        # repeat a few layer configurations many times.
        self.memo: dict[tuple[object, ...], _Outcome] = {}
        self.pinned: dict[int, np.ndarray] = {}

    # --- graphs ---------------------------------------------------------------------------------

    def walk_graph(
        self, g: GraphProto, path: str, parent: _Scope | None, overrides: Sequence[ShapeT | None] | None, frame: _Frame
    ) -> list[ShapeT | None]:
        if frame.depth > _MAX_DEPTH or self.budget < 0:
            return [None] * len(g.output)
        frame = dataclasses.replace(frame, depth=frame.depth + 1)
        scope = _Scope(parent)
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
            scope.shapes[vi.name] = s
        for t in g.initializer:
            if t.name not in scope.shapes or scope.shapes[t.name] is None:
                scope.shapes[t.name] = _dims(t.dims)
            # An input's initializer is only a default (Clause 7.2), except before IR version 4, where every
            # initializer had to be declared an input and that was how a constant was written.
            if t.name not in graph_inputs or self.ir_version < 4:
                v = _initializer_value(t)
                if v is not None:
                    scope.values[t.name] = v
        for sp in g.sparse_initializer:
            if sp.values is not None and sp.values.name not in scope.shapes:
                scope.shapes[sp.values.name] = _dims(sp.dims)
        self.walk_nodes(g.node, path, scope, declared, frame)
        outs = [scope.shape(vi.name) for vi in g.output]
        if frame.record:
            self.result.shapes[path] = {n: s for n, s in scope.shapes.items() if s is not None}
        return outs

    def walk_nodes(
        self, nodes: Sequence[NodeProto], path: str, scope: _Scope, declared: dict[str, ShapeT | None], frame: _Frame
    ) -> None:
        self.budget -= len(nodes)
        if self.budget < 0:
            return
        shapes, values_of = scope.shapes, scope.values
        # The top-level scope has no parent: plain dict lookups (the validator walks 50,000-node graphs).
        get_shape = shapes.get if scope.parent is None else scope.shape
        get_value = values_of.get if scope.parent is None else scope.value
        node_fn = self.node
        record = frame.record and frame.report
        for i, node in enumerate(nodes):
            ins = node.input
            in_shapes = [get_shape(n) if n else None for n in ins]
            in_values = [get_value(n) if n else None for n in ins]
            outs, values = node_fn(node, path, i, scope, in_shapes, in_values, frame)
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
        node: NodeProto,
        path: str,
        i: int,
        scope: _Scope,
        in_shapes: list[ShapeT | None],
        in_values: list[np.ndarray | None],
        frame: _Frame,
    ) -> tuple[Sequence[ShapeT | None], dict[int, np.ndarray]]:
        n_out = len(node.output)
        try:
            attrs, has_graphs = self.attributes(node, frame)
        except _Unresolvable:
            return [None] * n_out, {}
        if has_graphs:
            return self.control_flow(node, path, i, scope, in_shapes, in_values, attrs, frame), {}
        memo_key: tuple[object, ...] | None = None
        akey = _attrs_key(attrs)
        if akey is not None:
            # The outcome depends on nothing else. Known input values enter the key by identity; the engine
            # holds them (self.pinned) so that an id is never reused for another array during the walk.
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
        outcome = self.evaluate(node, in_shapes, in_values, attrs, frame)
        if memo_key is not None:
            self.memo[memo_key] = outcome
        return self.memo_result(outcome, node, path, i, frame)

    def evaluate(
        self,
        node: NodeProto,
        in_shapes: list[ShapeT | None],
        in_values: list[np.ndarray | None],
        attrs: dict[str, AttributeProto],
        frame: _Frame,
    ) -> _Outcome:
        """Output shapes (and small values) of a node without subgraphs: folded, by rule, or through a body."""
        unknown: list[ShapeT | None] = [None] * len(node.output)
        domain = node.domain
        if domain == "ai.onnx":
            domain = ""
        fn = self.functions.get((domain, node.op_type, node.overload)) if self.functions else None
        if fn is not None:
            return self.call(fn, node, in_shapes, in_values, attrs, None, frame), {}
        schema = self.schema(domain, node.op_type, frame)
        if schema is None:
            return unknown, {}
        rule = SHAPE_RULES.get((domain, node.op_type))
        foldable = all(v is not None for n, v in zip(node.input, in_values) if n)
        outcome: _Outcome | None = None
        if rule is not None:
            outcome = self.apply(rule, node, schema, in_shapes, in_values, attrs)
            if not foldable or not isinstance(outcome, tuple):
                return outcome
            outs = outcome[0]
            if all(o is not None and all(isinstance(d, int) for d in o) for o in outs):
                # The rule tells every shape: the values are computed only if a later rule asks for them
                # (most constants of a model are weights nobody reads as a shape).
                pending = _PendingFold(self, node, domain, schema, in_values, attrs)
                # Lazy values travel where arrays do (scopes, ShapeContext), resolved where read (resolve).
                small: dict[int, Any] = {k: _LazyValue(pending, k) for k, o in enumerate(outs) if _small_shape(o)}
                return outs, {**small, **outcome[1]}
            folded = self.fold(node, domain, schema, in_values, attrs)
            return folded if folded is not None else outcome
        if foldable:
            folded = self.fold(node, domain, schema, in_values, attrs)
            if folded is not None:
                return folded
        version = frame.opsets[domain]
        bkey = (id(schema), version)
        if bkey in self.bodies:
            body = self.bodies[bkey]
        else:
            body = self.bodies[bkey] = schema.function_body(version)
        if body is not None:
            return self.call(body, node, in_shapes, in_values, attrs, schema, frame), {}
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
            values: dict[int, Any] = {k: v for k, v in ctx._out_values.items() if _small_value(v) is not None}
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

    def schema(self, domain: str, op_type: str, frame: _Frame) -> OpSchema | None:
        """The definition a node binds to under the imports in force (Clause 14.4), or None."""
        version = frame.opsets.get(domain)
        if version is None:
            return None
        skey = (domain, op_type, version)
        if skey in self.schemas:
            return self.schemas[skey]
        schema = self.schemas[skey] = get_schema(op_type, version, domain)
        return schema

    def memo_result(
        self, outcome: _Outcome, node: NodeProto, path: str, i: int, frame: _Frame
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

    def attributes(self, node: NodeProto, frame: _Frame) -> tuple[dict[str, AttributeProto], bool]:
        """The node's attributes by name, references to the function's parameters bound (Clause 8.4); and
        whether one holds a graph."""
        out: dict[str, AttributeProto] = {}
        graphs = False
        for a in node.attribute:
            if a.ref_attr_name:
                if frame.fn_attrs is None:
                    raise _Unresolvable
                r = frame.fn_attrs.get(a.ref_attr_name)
                if r is None:
                    continue  # the parameter is not set at the call site: the node's default applies
                if r.name != a.name:
                    r = copy.copy(r)
                    r.name = a.name
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

    def fold(
        self,
        node: NodeProto,
        domain: str,
        schema: OpSchema,
        in_values: list[np.ndarray | None],
        attrs: dict[str, AttributeProto],
    ) -> tuple[list[ShapeT | None], dict[int, np.ndarray]] | None:
        """Evaluate a node whose inputs are all known small tensors with its kernel, under tight limits."""
        if node.op_type in _NO_FOLD:
            return None
        in_values = [resolve(v) for v in in_values]
        for n, v in zip(node.input, in_values):
            if n and v is None:
                return None
        from onnxcore.graph.attributes import attribute_value
        from onnxcore.kernels.registry import lookup
        from onnxcore.limits import limits_in_effect

        kdef = lookup(domain, node.op_type, int(schema.since_version))
        if kdef is None or kdef.context:
            return None
        try:
            kw = {name: attribute_value(a) for name, a in attrs.items()}
            args = [v if n else None for n, v in zip(node.input, in_values)]
            with limits_in_effect(_FOLD_LIMITS), np.errstate(all="ignore"):
                res = kdef.fn(*args, **kw)
        except Exception:
            return None
        results = res if type(res) is tuple else (res,)
        # A kernel may give a numpy scalar (np.take with a scalar index does): it is a rank-0 tensor.
        results = tuple(np.asarray(r) if isinstance(r, np.generic) else r for r in results)
        shapes: list[ShapeT | None] = []
        values: dict[int, np.ndarray] = {}
        for k, r in enumerate(results):
            if not isinstance(r, np.ndarray):
                shapes.append(None)
                continue
            if r.size > _FOLD_ELEMENTS:
                return None
            shapes.append(tuple(int(d) for d in r.shape))
            v = _small_value(r)
            if v is not None:
                values[k] = v
        return shapes, values

    # --- subgraphs and functions ----------------------------------------------------------------

    def control_flow(
        self,
        node: NodeProto,
        path: str,
        i: int,
        scope: _Scope,
        in_shapes: list[ShapeT | None],
        in_values: list[np.ndarray | None],
        attrs: dict[str, AttributeProto],
        frame: _Frame,
    ) -> list[ShapeT | None]:
        from onnxcore.infer.shape_ops.control import control_flow_outputs

        loc = node_location(path, i, node)
        domain = node.domain if node.domain != "ai.onnx" else ""
        schema = (
            None
            if (domain, node.op_type, node.overload) in self.functions
            else self.schema(domain, node.op_type, frame)
        )

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
            return self.walk_graph(graph, f"{loc}/{name}", scope, inputs, sub)

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
            outs = self.memo_result(self.evaluate(node, in_shapes, in_values, attrs, frame), node, path, i, frame)[0]
        for a in node.attribute:
            if a.name in walked:
                continue
            if a.g is not None:
                self.walk_graph(a.g, f"{loc}/{a.name}", scope, None, frame)
            for k, sub in enumerate(a.graphs):
                self.walk_graph(sub, f"{loc}/{a.name}[{k}]", scope, None, frame)
        return list(outs)

    def call(
        self,
        fn: FunctionProto,
        node: NodeProto,
        in_shapes: Sequence[ShapeT | None],
        in_values: Sequence[np.ndarray | None],
        attrs: dict[str, AttributeProto],
        schema: OpSchema | None,
        frame: _Frame,
    ) -> list[ShapeT | None]:
        """Output shapes of a call: the body walked with this call's shapes, values and attributes (Clause 8.4)."""
        unknown: list[ShapeT | None] = [None] * len(node.output)
        key = (canonical_domain(fn.domain), fn.name, fn.overload)
        if key in self.active or frame.depth > _MAX_DEPTH or self.budget < 0:
            return unknown
        bound: dict[str, AttributeProto] = {}
        if schema is not None:
            bound.update(self.schema_defaults(schema))
        else:
            bound.update({a.name: a for a in fn.attribute_proto})
        bound.update(attrs)
        opsets = dict(frame.opsets)
        for imp in fn.opset_import:
            opsets.setdefault(canonical_domain(imp.domain), imp.version)
        inner = _Frame(opsets, bound, True, False, frame.depth + 1)
        scope = _Scope(None)
        for k, name in enumerate(fn.input):
            scope.shapes[name] = in_shapes[k] if k < len(in_shapes) else None
            v = in_values[k] if k < len(in_values) else None
            if v is not None:
                scope.values[name] = v
        declared = {vi.name: declared_shape(vi.type) for vi in fn.value_info}
        self.active.add(key)
        try:
            self.walk_nodes(fn.node, "", scope, declared, inner)
        finally:
            self.active.discard(key)
        outs = [scope.shape(name) for name in fn.output]
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


def _small_shape(s: ShapeT | None) -> bool:
    return s is not None and math.prod(d for d in s if isinstance(d, int)) <= _MAX_VALUE_ELEMENTS


class _PendingFold:
    """A node whose inputs are all known, evaluated the first time one of its outputs' values is asked for."""

    __slots__ = ("args", "done", "results")

    def __init__(self, *args: Any) -> None:
        self.args = args
        self.done = False
        self.results: dict[int, np.ndarray] = {}

    def value(self, k: int) -> np.ndarray | None:
        if not self.done:
            self.done = True
            engine, node, domain, schema, in_values, attrs = self.args
            folded = engine.fold(node, domain, schema, in_values, attrs)
            if folded is not None:
                self.results = folded[1]
            self.args = ()
        return self.results.get(k)


class _LazyValue:
    """Output ``k`` of a :class:`_PendingFold`: a value known to exist, computed on demand."""

    __slots__ = ("k", "pending")

    def __init__(self, pending: _PendingFold, k: int) -> None:
        self.pending = pending
        self.k = k

    def get(self) -> np.ndarray | None:
        return self.pending.value(self.k)


def _dims(dims: Sequence[int]) -> ShapeT | None:
    # Negative dims are reported on their own (Clause 6.5.1); the shape is then unknown here.
    out = tuple(int(d) for d in dims)
    return None if any(d < 0 for d in out) else out


class _InitializerValue:
    """The contents of a small numeric initializer stored inline, decoded when a rule first asks for them."""

    __slots__ = ("tensor", "value")

    def __init__(self, tensor: Any) -> None:
        self.tensor: Any = tensor
        self.value: np.ndarray | None = None

    def get(self) -> np.ndarray | None:
        if self.tensor is not None:
            from onnxcore.types import to_array

            try:
                self.value = _small_value(to_array(self.tensor))
            except Exception:
                self.value = None
            self.tensor = None
        return self.value


def _initializer_value(t: Any) -> _InitializerValue | None:
    """A small numeric initializer stored inline, to be read on demand (weights and external data never are)."""
    from onnxcore.proto.messages import TensorProto

    count = 1
    for d in t.dims:
        if d < 0:
            return None
        count *= int(d)
    if count > _MAX_VALUE_ELEMENTS or t.data_location == TensorProto.DataLocation.EXTERNAL:
        return None
    return _InitializerValue(t)


def infer_shapes(model: ModelProto) -> ShapeInference:
    """Infer the shape of every tensor value of ``model`` (Clause 9). Never raises on a malformed model.

    Args:
        model: A decoded model.

    Returns:
        The :class:`ShapeInference`: shapes per graph path, contradictions found, and the nodes no rule covers.
    """
    engine = _Engine(model)
    top = _Frame(engine.opsets, None, False, True, 0)
    try:
        if model.graph is not None:
            engine.walk_graph(model.graph, "graph", None, None, top)
    except RecursionError:
        pass  # nesting beyond the interpreter's stack: what was inferred so far stands
    for i, fn in enumerate(model.functions):
        scope = _Scope(None)
        declared = {vi.name: declared_shape(vi.type) for vi in fn.value_info}
        for name in fn.input:
            scope.shapes[name] = declared.get(name)
        frame = _Frame(engine.opsets, None, True, True, 0)
        path = function_location(i, fn)
        try:
            engine.walk_nodes(fn.node, path, scope, declared, frame)
        except RecursionError:
            pass
        engine.result.shapes[path] = {n: s for n, s in scope.shapes.items() if s is not None}
    return engine.result


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


def annotate(model: ModelProto) -> ModelProto:
    """``model`` with what inference tells stated in its top-level graph (a new model; ``model`` is unchanged).

    Every node output of the top-level graph that is not a graph output and has no ``value_info`` gets one,
    with its inferred type and, where known, its shape; a graph output declared without a shape gets the
    inferred one. Values whose type is unknown are left out (Clause 9.4).
    """
    from onnxcore.infer.engine import run as infer_types

    m = copy.copy(model)
    g = model.graph
    if g is None:
        return m
    types = infer_types(model).types().get("graph", {})
    shapes = infer_shapes(model).shapes.get("graph", {})
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
