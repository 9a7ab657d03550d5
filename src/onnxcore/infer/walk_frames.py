"""What the inference walk (:mod:`onnxcore.infer.inference_walk`) stands on: the bound model, the limits, the frames.

The walk reads the :class:`~onnxcore.graph.BoundModel` (Clause 14.3, 8.4): a node's binding (definition,
model-local function, or neither) is its :class:`~onnxcore.graph.NodeRef`'s, a definition's function body is
:meth:`BoundModel.body_scope`, a model-local function's body is :meth:`BoundModel.function_scope`; inference
binds nothing itself. A subgraph is walked in its enclosing scope (Clause 5.4.3), a function body per call
site with that call's inputs and attributes (its types depend on the call, Clause 8.4); attribute references
(``ref_attr_name``) are resolved by :func:`onnxcore.graph.functions.resolve_attribute` only.

Limits only (Clause 15.4): subgraphs nested deeper than ``Limits.max_nesting_depth`` are not walked (the bound
model does not enter them either, and the validator refuses them), and one walk visits at most
``Limits.max_inference_nodes`` nodes; what is not walked stays unknown (Clause 9.4).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter, is_
from typing import TypeAlias

from onnxcore.defs.opschema import OpSchema
from onnxcore.graph.bound import BoundModel, NodeRef, Scope, bind
from onnxcore.graph.bound import node_location as scope_node_location
from onnxcore.graph.functions import Unresolved, resolve_attribute
from onnxcore.limits import Limits
from onnxcore.proto.messages import AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto

__all__ = ["Binding", "BoundWalk", "Frame", "LooseBinding", "node_location"]

_NODE = attrgetter("node")


def node_location(graph_path: str, index: int, node: NodeProto) -> str:
    """The readable location of a node: ``graph/node[3] "name"`` (the name only when it has one).

    The spelling of :func:`onnxcore.graph.node_location`, which the validator uses too.
    """
    return scope_node_location(graph_path, index, node.name)


@dataclass(slots=True, frozen=True)
class LooseBinding:
    """What one node outside a bound scope invokes (a node of a resolved copy, or under other imports), by the
    bound model's rule (:meth:`~onnxcore.graph.BoundModel.binding`).

    Attributes:
        node: The node (its attribute references not yet resolved).
        status: The binding status (``schema``, ``function``, ``custom``, ...), see ``NodeRef``.
        version: The imported version of the node's domain.
        schema: The bound operator definition, or None.
        function: The bound model-local function, or None.
    """

    node: NodeProto
    status: str
    version: int
    schema: OpSchema | None
    function: FunctionProto | None


Binding: TypeAlias = LooseBinding | NodeRef
"""What the walk reads of a node: a bound scope's :class:`~onnxcore.graph.NodeRef` itself, else a loose one."""


@dataclass(slots=True)
class Frame:
    """The context a body is walked in.

    Attributes:
        opsets: The imports in force: always the ``opsets`` of a bound :class:`~onnxcore.graph.Scope` (the
            bound model caches bindings by that object).
        fn_attrs: The call site's attributes (defaults merged in) of the function body being walked; None
            outside a function body or when a body is walked without a call site.
        in_function: Whether a function body is being walked.
        record: Whether what is found is recorded in the result (False inside a call's specialisation).
        depth: Nesting of subgraphs and function calls followed so far.
        report: Whether contradictions found here are findings (False in an If branch that may not be taken).
    """

    opsets: dict[str, int]
    fn_attrs: dict[str, AttributeProto] | None
    in_function: bool
    record: bool
    depth: int
    report: bool = True
    okey: tuple[tuple[str, int], ...] = field(default=())  # the imports as a hashable key

    def __post_init__(self) -> None:
        self.okey = tuple(sorted(self.opsets.items()))


class BoundWalk:
    """The base of the inference walk: the bound model, the limits, the bindings, the node budget."""

    def __init__(self, model: ModelProto, limits: Limits | None, bound: BoundModel | None) -> None:
        if bound is None:
            bound = bind(model, limits=limits)
        self.model = model
        self.bound = bound
        self.limits = limits if limits is not None else bound.limits
        self.max_depth = self.limits.max_nesting_depth
        budget = self.limits.max_inference_nodes
        self.budget = sys.maxsize if budget is None else budget
        main = bound.main()
        self.top_opsets = main.opsets if main is not None else bound.opsets
        self.active: set[tuple[str, str, str]] = set()  # model-local functions being called (recursion)

    # --- limits ---------------------------------------------------------------------------------

    def too_deep(self, depth: int) -> bool:
        """Whether nesting ``depth`` is beyond ``Limits.max_nesting_depth`` (Clause 15.4)."""
        return self.max_depth is not None and depth > self.max_depth

    # --- bindings -------------------------------------------------------------------------------

    def bindings(self, nodes: Sequence[NodeProto], opsets: dict[str, int], scope: Scope | None) -> Sequence[Binding]:
        """The bindings of ``nodes`` under ``opsets``: their bound scope's nodes when it binds them under those
        imports, else by the bound model's precedence rule (:meth:`BoundModel.binding`)."""
        if scope is not None and scope.opsets is opsets and len(scope.nodes) == len(nodes):
            # C-level calls only: a 50,000-node graph would otherwise take a generator step per node.
            if all(map(is_, map(_NODE, scope.nodes), nodes)):
                return scope.nodes
        binding = self.bound.binding
        out: list[Binding] = []
        for n in nodes:
            _dom, status, version, schema, fn = binding(n.domain, n.op_type, n.overload, opsets)
            out.append(LooseBinding(n, status, version, schema, fn))
        return out

    def graph_bindings(self, g: GraphProto, opsets: dict[str, int]) -> Sequence[Binding]:
        """The bindings of a graph's nodes (see :meth:`bindings`)."""
        return self.bindings(g.node, opsets, self.bound.graph_scope(g))

    def function_frame_opsets(self, fn: FunctionProto) -> dict[str, int]:
        """The imports in force in a model-local function's body (its bound scope's, Clause 8.4)."""
        scope = self.bound.function_scope(fn)
        if scope is not None:
            return scope.opsets
        # A function the model does not list (cannot happen through binding): the model's imports.
        return self.bound.opsets

    def function_bindings(self, fn: FunctionProto) -> Sequence[Binding]:
        """The bindings of a model-local function's body, from its bound scope."""
        scope = self.bound.function_scope(fn)
        return self.bindings(fn.node, self.function_frame_opsets(fn), scope)

    def body(self, schema: OpSchema, version: int, opsets: dict[str, int]) -> tuple[Scope, Sequence[Binding]] | None:
        """An operator definition's function body for a caller importing ``version`` (Clause 8.4), bound by
        :meth:`BoundModel.body_scope`; None when the definition has none."""
        scope = self.bound.body_scope(schema, version, opsets)
        if scope is None or scope.function is None:
            return None
        return scope, self.bindings(scope.function.node, scope.opsets, scope)

    # --- attributes -----------------------------------------------------------------------------

    @staticmethod
    def resolve(a: AttributeProto, frame: Frame) -> AttributeProto | Unresolved | None:
        """An attribute as the call site of the body being walked makes it (Clause 8.4).

        A reference outside any function body refers to nothing and is ignored; in a body walked without a
        call site it is :data:`~onnxcore.graph.functions.UNRESOLVED`.
        """
        if not a.ref_attr_name:
            return a
        if frame.fn_attrs is None and not frame.in_function:
            return None
        # fn_attrs already holds the parameters' defaults under the call site's values.
        return resolve_attribute(a, frame.fn_attrs, {})
