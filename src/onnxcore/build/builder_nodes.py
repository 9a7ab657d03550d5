"""The pieces of a graph a :class:`~onnxcore.build.builder.GraphBuilder` builds, and the inference that gives each
new node's outputs their types and shapes.

A :class:`Value` is a graph input, an initializer or a node output; a :class:`BuilderNode` is a node kept as its
values until the graph is made (so that later renames apply), a :class:`SubgraphAttribute` a GRAPH (or GRAPHS)
attribute built by builders of subgraphs. :func:`infer_node` infers one new node on its own, in a small model holding
the node, its inputs declared with their known types and shapes (small constants as initializers) and the nodes
computing its small integer inputs (``Shape``, ``Concat``, ... chains: the input's recipe, so that a ``Reshape`` to a
computed shape is known). That is the public inference (:func:`onnxcore.infer.infer_both`) on a model of a few
nodes: building ``N`` nodes costs ``O(N)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from onnxcore.build.builder_rules import Extent, Fail, Shared, elem_of
from onnxcore.infer import infer_both
from onnxcore.proto.messages import (
    AttributeProto,
    GraphProto,
    ModelProto,
    NodeProto,
    OperatorSetIdProto,
    TensorProto,
    ValueInfoProto,
)
from onnxcore.types import ElementType, from_array
from onnxcore.types.typestr import parse_type_string
from onnxcore.types.valuetypes import shape_to_proto

if TYPE_CHECKING:
    # For the annotations only: the builder makes these pieces, and they call back into it only through the
    # builders they hold (a subgraph attribute renders its builders' graphs).
    from onnxcore.build.builder import GraphBuilder

__all__ = ["BuilderNode", "SubgraphAttribute", "Value", "infer_node"]

A = AttributeProto.AttributeType

# Small integer values (shapes, axes, sizes) are recomputed where they are read: their producers travel with them.
_RECIPE_ELEMENTS = 64
_RECIPE_NODES = 32
_INITIALIZER_ELEMENTS = 4096  # larger constants are declared (type and shape) where a node is inferred


class Value:
    """A value of a graph being built: a graph input, an initializer or a node output.

    Attributes:
        type: Its type string (``"tensor(float)"``, ``"seq(tensor(int64))"``), None while unknown.
        shape: Its shape as extents (``("N", 64, 56, 56)``: int fixed, str a dimension variable, None unknown),
            None when the rank is unknown; for a sequence the shape its elements share.
        const: The array of an initializer or a constant, else None.
    """

    __slots__ = ("_graph", "_name", "_named", "_producer", "_recipe", "_tensor", "const", "shape", "type")

    def __init__(self, graph: GraphBuilder, name: str, named: bool, type: str | None, shape: Any) -> None:
        self._graph = graph
        self._name = name
        self._named = named
        self._producer: BuilderNode | None = None
        self._recipe: tuple[BuilderNode, ...] = ()
        self._tensor: TensorProto | None = None
        self.const: np.ndarray | None = None
        self.type = type
        self.shape: tuple[Extent, ...] | None = None if shape is None else tuple(shape)

    @property
    def name(self) -> str:
        """The value's name in the graph."""
        return self._name

    @property
    def dtype(self) -> ElementType | None:
        """The element type of a tensor value, None when unknown or not a tensor."""
        return elem_of(self.type)

    @property
    def rank(self) -> int | None:
        """The number of dimensions, None when unknown."""
        return None if self.shape is None else len(self.shape)

    def tensor(self) -> TensorProto:
        """The ``TensorProto`` of a constant value (made once)."""
        assert self.const is not None
        if self._tensor is None or self._tensor.name != self._name:
            self._tensor = from_array(self.const, self._name)
        return self._tensor

    def value_info(self) -> ValueInfoProto:
        """Its ``ValueInfoProto``: name, and the type and shape known so far."""
        if self.type is None:
            return ValueInfoProto(name=self._name)
        tp = parse_type_string(self.type)
        if self.shape is not None:
            inner = tp.tensor_type
            if tp.sequence_type is not None and tp.sequence_type.elem_type is not None:
                inner = tp.sequence_type.elem_type.tensor_type
            if inner is not None:
                inner.shape = shape_to_proto(self.shape)
        return ValueInfoProto(name=self._name, type=tp)

    def __repr__(self) -> str:
        return f"Value({self._name!r}, {self.type}, {self.shape})"


class SubgraphAttribute:
    """A GRAPH (or GRAPHS) attribute built by a builder: rendered when the node is, so later renames apply."""

    __slots__ = ("builders", "kind", "name")

    def __init__(self, name: str, kind: int, builders: list[GraphBuilder]) -> None:
        self.name = name
        self.kind = kind
        self.builders = builders

    def proto(self) -> AttributeProto:
        """The attribute, its graphs as the builders hold them now."""
        graphs = [b._graph_proto() for b in self.builders]
        if self.kind == A.GRAPH:
            return AttributeProto(name=self.name, type=int(A.GRAPH), g=graphs[0])
        return AttributeProto(name=self.name, type=int(A.GRAPHS), graphs=graphs)


class BuilderNode:
    """A node of a graph being built: its values and attributes, its ``NodeProto`` made when the graph is.

    ``serial`` orders the nodes of every builder sharing one :class:`~onnxcore.build.builder_rules.Shared` (a
    recipe's nodes are laid out in the order they were added).
    """

    __slots__ = ("attributes", "domain", "inputs", "name", "op_type", "outputs", "serial")

    def __init__(
        self,
        serial: int,
        op_type: str,
        domain: str,
        name: str,
        inputs: list[Value | None],
        outputs: list[Value],
        attributes: list[AttributeProto | SubgraphAttribute],
    ) -> None:
        self.serial = serial
        self.op_type = op_type
        self.domain = domain
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.attributes = attributes

    def captures(self) -> list[Value]:
        """Values of enclosing graphs its subgraphs read."""
        return [
            v
            for a in self.attributes
            if isinstance(a, SubgraphAttribute)
            for b in a.builders
            for v in b._captures.values()
        ]

    def proto(self) -> NodeProto:
        """The node, named and wired as its values are now."""
        return NodeProto(
            op_type=self.op_type,
            domain=self.domain or None,
            name=self.name,
            input=["" if v is None else v.name for v in self.inputs],
            output=[v.name for v in self.outputs],
            attribute=[a.proto() if isinstance(a, SubgraphAttribute) else a for a in self.attributes],
        )


def infer_node(node: BuilderNode, shared: Shared, where: str) -> None:
    """Set the types and shapes of ``node``'s outputs: inference on a model holding the node, its inputs declared
    as known so far, and the nodes its small integer inputs are computed by. Raises on a contradiction found."""
    members: dict[int, BuilderNode] = {}
    for v in node.inputs:
        if v is not None and v.const is None:
            for n in v._recipe:
                members[n.serial] = n
    nodes = [members[k] for k in sorted(members)] + [node]
    made = {id(o) for n in nodes for o in n.outputs}
    leaves: dict[str, Value] = {}
    for n in nodes:
        for v in [*n.inputs, *n.captures()]:
            if v is not None and id(v) not in made:
                leaves.setdefault(v.name, v)
    small = [v for v in leaves.values() if v.const is not None and v.const.size <= _INITIALIZER_ELEMENTS]
    small_ids = {id(v) for v in small}
    graph = GraphProto(
        name="build",
        node=[n.proto() for n in nodes],
        input=[v.value_info() for v in leaves.values() if id(v) not in small_ids],
        initializer=[v.tensor() for v in small],
        output=[ValueInfoProto(name=o.name) for o in node.outputs],
    )
    opsets = [OperatorSetIdProto(domain=d, version=v) for d, v in shared.opsets.items()]
    types_, shapes = infer_both(ModelProto(ir_version=shared.ir_version, opset_import=opsets, graph=graph))
    for inc in shapes.incompatibilities:
        raise Fail(f"{where}: {inc.message}")
    known_types = types_.type_strings.get("graph", {})
    known_shapes = shapes.shapes.get("graph", {})
    has_graphs = any(isinstance(a, SubgraphAttribute) for a in node.attributes)
    for o in node.outputs:
        o.type = known_types.get(o.name)
        o.shape = known_shapes.get(o.name)
        if not has_graphs and len(nodes) <= _RECIPE_NODES and _is_small_int(o):
            o._recipe = tuple(nodes)


def _is_small_int(v: Value) -> bool:
    et = v.dtype
    if et is None or not et.is_integer or v.shape is None or len(v.shape) > 1:
        return False
    return all(isinstance(d, int) for d in v.shape) and (not v.shape or int(v.shape[0] or 0) <= _RECIPE_ELEMENTS)
