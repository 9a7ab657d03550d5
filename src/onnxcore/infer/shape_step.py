"""The shape side of one node in the inference walk (Clause 9): its rule, its folding, or its function body.

The walk (:mod:`onnxcore.infer.inference_walk`) gives each node without subgraphs to :meth:`ShapeStep.node`: the
operator's shape rule states the output shapes (and small values); a node whose inputs are all known is also
evaluated with its kernel (:mod:`onnxcore.infer.known_values`), at once when the rule cannot state every shape, else
only when a later rule reads its value; an operator without a rule has its function body walked (Clause 8.4)
by the walk; failing those, the outputs are unknown (Clause 9.4). Outcomes are memoised: large models repeat
a few layer configurations many times.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from onnxcore.defs.binding import canonical_domain
from onnxcore.defs.opschema import OpSchema
from onnxcore.graph.bound import Scope
from onnxcore.graph.functions import Unresolved, resolve_attribute
from onnxcore.infer.known_values import LazyValue, PendingFold, fold, small_shape, small_value
from onnxcore.infer.results import ShapeIncompatibility, ShapeInference
from onnxcore.infer.shape_core import SHAPE_RULES, VALUE_RULES, ShapeContext, ShapeIncompatible, ShapeT, load_rules
from onnxcore.infer.walk_frames import Binding, Frame, node_location
from onnxcore.kernels.registry import KernelSet
from onnxcore.proto.messages import AttributeProto, FunctionProto, NodeProto

__all__ = ["STRICT", "FunctionCalls", "ShapeStep", "Unresolvable", "attrs_key", "memo_key"]

# Set by the tests: a rule that raises anything but ShapeIncompatible is a defect, not an unknown.
STRICT = False

# What a node gives: output shapes and small values, or a message (an incompatibility), or _UNRULED.
_UNRULED = "\x00unruled"
_Outcome = tuple[list[ShapeT | None], dict[int, np.ndarray]] | str


class Unresolvable(Exception):
    """An attribute refers to a function parameter this walk cannot bind (a body walked without a call site)."""


class FunctionCalls(Protocol):
    """What the shape side asks of the walk it serves (:class:`onnxcore.infer.inference_walk.InferenceWalk`): the bodies
    of functions and definitions, walked for one call site (the walk imports this module, not the reverse)."""

    def function_bindings(self, fn: FunctionProto) -> Sequence[Binding]: ...

    def function_frame_opsets(self, fn: FunctionProto) -> dict[str, int]: ...

    def body(
        self, schema: OpSchema, version: int, opsets: dict[str, int]
    ) -> tuple[Scope, Sequence[Binding]] | None: ...

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
    ) -> tuple[list[str | None], list[ShapeT | None]]: ...


class ShapeStep:
    """The shape side of the nodes of one walk, with its memo of rule outcomes."""

    def __init__(self, walk: FunctionCalls, result: ShapeInference, custom_ops: KernelSet | None = None) -> None:
        # The walk holds this step: a weak reference back keeps the two out of a reference cycle, so that a walk
        # is freed (its results aside) as soon as its caller drops it, not by the cyclic collector.
        self.walk = weakref.proxy(walk)
        self.result = result
        self.custom_ops = custom_ops  # the kernels folding chooses first (a session's), as its plan does
        self.defaults: dict[int, dict[str, AttributeProto]] = {}
        # Rule outcomes by (node's operator, imports, input shapes and values, output count, attributes).
        self.memo: dict[tuple[object, ...], _Outcome] = {}
        self.pinned: dict[int, np.ndarray] = {}

    def node(
        self,
        b: Binding,
        path: str,
        i: int,
        in_shapes: Sequence[ShapeT | None],
        in_values: list[np.ndarray | None],
        attrs: dict[str, AttributeProto],
        frame: Frame,
        memo_key: tuple[object, ...] | None,
    ) -> tuple[Sequence[ShapeT | None], dict[int, np.ndarray]]:
        """Output shapes and small values of a node without subgraphs (``attrs``: :meth:`attributes`), its outcome
        memoised under ``memo_key`` (:func:`memo_key`; None: not memoised)."""
        node = b.node
        if memo_key is not None:
            hit = self.memo.get(memo_key)
            if hit is not None:
                return hit if type(hit) is tuple else self.memo_result(hit, node, path, i, frame)
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
        in_shapes: Sequence[ShapeT | None],
        in_values: list[np.ndarray | None],
        attrs: dict[str, AttributeProto],
        frame: Frame,
    ) -> _Outcome:
        """Output shapes (and small values) of a node: folded, by rule, or through a body."""
        node = b.node
        unknown: list[ShapeT | None] = [None] * len(node.output)
        if b.function is not None:
            fn = b.function
            bodies = self.walk.function_bindings(fn)
            opsets = self.walk.function_frame_opsets(fn)
            return self.walk.call(fn, bodies, opsets, node, (), in_shapes, in_values, attrs, None, frame)[1], {}
        schema = b.schema
        if schema is None:
            if b.status == "custom" and all(v is not None for n, v in zip(node.input, in_values) if n):
                # A domain without definitions: its kernel folds known inputs as a plan's folding would (one rule,
                # kernels/folding.py); no shape rule speaks of it otherwise.
                folded = fold(
                    node, canonical_domain(node.domain), b.version, None, in_values, attrs, "custom", self.custom_ops
                )
                if folded is not None:
                    return folded
            return unknown, {}
        domain = canonical_domain(node.domain)
        load_rules(domain, node.op_type)
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
                pending = PendingFold(node, domain, b.version, schema, in_values, attrs, self.custom_ops)
                # Lazy values travel where arrays do (scopes, ShapeContext), resolved where read (resolve).
                small: dict[int, Any] = {k: LazyValue(pending, k) for k, o in enumerate(outs) if small_shape(o)}
                return outs, {**small, **outcome[1]}
            folded = fold(node, domain, b.version, schema, in_values, attrs, custom_ops=self.custom_ops)
            return folded if folded is not None else outcome
        if foldable:
            folded = fold(node, domain, b.version, schema, in_values, attrs, custom_ops=self.custom_ops)
            if folded is not None:
                return folded
        body = self.walk.body(schema, b.version, frame.opsets)
        if body is not None:
            scope, bodies = body
            assert scope.function is not None
            fn = scope.function
            return self.walk.call(fn, bodies, scope.opsets, node, (), in_shapes, in_values, attrs, schema, frame)[1], {}
        return _UNRULED

    def apply(
        self,
        rule: Callable[[ShapeContext], Sequence[ShapeT | None]],
        node: NodeProto,
        schema: OpSchema,
        in_shapes: Sequence[ShapeT | None],
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

    @staticmethod
    def attributes(node: NodeProto, frame: Frame) -> dict[str, AttributeProto]:
        """The node's attributes by name, references to the function's parameters bound (Clause 8.4).

        Raises:
            Unresolvable: A reference without a call site (a body read on its own, or a reference outside
                any function): the node's shapes are unknown.
        """
        out: dict[str, AttributeProto] = {}
        for a in node.attribute:
            if a.ref_attr_name:
                # fn_attrs already holds the parameters' defaults under the call's values.
                r = resolve_attribute(a, frame.fn_attrs, {})
                if isinstance(r, Unresolved):
                    raise Unresolvable
                if r is None:
                    continue  # the parameter is not set at the call site: the node's default applies
                a = r
            out[a.name] = a
        return out

    def schema_defaults(self, schema: OpSchema) -> dict[str, AttributeProto]:
        """The default values of a definition's attributes, by name."""
        d = self.defaults.get(id(schema))
        if d is None:
            d = self.defaults[id(schema)] = {
                n: ad.default for n, ad in schema.attributes.items() if ad.default is not None
            }
        return d


_SIMPLE_KINDS = frozenset({1, 2, 3, 6, 7, 8})  # FLOAT, INT, STRING, FLOATS, INTS, STRINGS
# The longest attribute lists a node's outcome is memoised with.
_MEMO_LIST_MAX = 1024


def memo_key(
    node: NodeProto,
    okey: tuple[tuple[str, int], ...],
    in_shapes: tuple[ShapeT | None, ...],
    in_values: list[Any],
    akey: tuple[object, ...],
) -> tuple[object, ...]:
    """The key :meth:`ShapeStep.node` memoises a node's outcome under (``okey``: the imports, ``Frame.okey``;
    ``akey``: :func:`attrs_key`). The outcome depends on nothing else (the binding follows from the node and the
    imports). Known input values enter by identity (None's own id for none: no array shares it); the step holds
    them (``ShapeStep.pinned``) so that an id is never reused for another array during the walk. Which inputs are
    given is their count when none is omitted (an int never equals a tuple).

    The walk builds this tuple itself for a node without attributes (a call per node saved): keep the two alike.
    """
    ins = node.input
    return (
        node.domain,
        node.op_type,
        node.overload,
        okey,
        in_shapes,
        tuple(map(id, in_values)),
        tuple(map(bool, ins)) if "" in ins else len(ins),
        len(node.output),
        akey,
    )


def attrs_key(attrs: dict[str, AttributeProto]) -> tuple[object, ...] | None:
    """The attributes' values as a hashable key, or None when one is not a number, a string or a list of them."""
    if not attrs:
        return ()
    key: list[object] = []
    for name, a in attrs.items():
        if a.type not in _SIMPLE_KINDS:
            return None
        if len(a.ints) + len(a.floats) + len(a.strings) > _MEMO_LIST_MAX:
            # A node of long lists (a tree ensemble's node tables, 10^5 values) repeats rarely; its key cost more
            # than the rule (issue 42, item 3).
            return None
        key.append((name, a.type, a.i, a.f, bytes(a.s), tuple(a.ints), tuple(a.floats), tuple(map(bytes, a.strings))))
    return tuple(key)
