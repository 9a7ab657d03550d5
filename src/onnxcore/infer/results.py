"""What inference gives (Clause 9): the types and the shapes of a model's values, and the contradictions found.

:class:`Inference` is the type side (:func:`onnxcore.infer.infer`), :class:`ShapeInference` the shape side
(:func:`onnxcore.infer.infer_shapes`); one walk (:mod:`onnxcore.infer.inference_walk`) gives both. Also how a declared
type states a shape (:func:`declared_shape`) and how a declared and an inferred shape combine (:func:`merge`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from onnxcore.defs.opschema import OpSchema
from onnxcore.infer.shape_core import Extent, ShapeT
from onnxcore.infer.walk_frames import node_location
from onnxcore.proto.messages import FunctionProto, NodeProto, TypeProto
from onnxcore.types.typestr import parse_type_string, type_string
from onnxcore.types.valuetypes import declared_shape, stated_dims  # defined once, in types/ (re-exported)

__all__ = [
    "Inference",
    "NodeRecord",
    "NodeTypes",
    "ShapeIncompatibility",
    "ShapeInference",
    "ShapeMismatch",
    "TypeMismatch",
    "declared_shape",
    "merge",
    "stated_dims",
]


@dataclass(slots=True)
class NodeTypes:
    """What inference saw at one node.

    Attributes:
        graph: Path of the graph (or function body) holding the node.
        index: Position of the node in it.
        location: ``node_location(graph, index, node)``.
        node: The node itself.
        schema: The definition it binds to (Clause 14.4), or None (unknown op, undeclared domain, or a
            call of a model-local function).
        function: The model-local function it calls, if it calls one.
        input_types: Type string of each actual input (None: unknown, or left unsupplied with "").
        output_types: Type string inferred for each output before comparison with declared types.
        bindings: Type variable -> type string, as the inputs bind them (shared between nodes: read only).
        conflicts: Type variables two inputs bind to different types (Clause 10.3 homogeneity).
    """

    graph: str
    index: int
    node: NodeProto
    schema: OpSchema | None
    function: FunctionProto | None
    input_types: tuple[str | None, ...]
    output_types: tuple[str | None, ...]
    bindings: dict[str, str]
    conflicts: frozenset[str]

    @property
    def location(self) -> str:
        """``node_location(graph, index, node)``."""
        return node_location(self.graph, self.index, self.node)


@dataclass(slots=True, frozen=True)
class TypeMismatch:
    """An inferred type contradicting a declared one (Clause 9.4, last paragraph; reported under 10.3).

    Attributes:
        graph: Path of the graph holding the value.
        name: The value's name.
        location: Where: a node output (``.../node[3] "n"/output[0]``) or a subgraph input
            (``.../body/input[1]``, the type the enclosing node feeds it).
        declared: The declared type string.
        inferred: The inferred type string.
    """

    graph: str
    name: str
    location: str
    declared: str
    inferred: str

    @property
    def message(self) -> str:
        return f"value {self.name!r} is declared {self.declared} but inferred {self.inferred}"


# What the walk records per node: the fields of NodeTypes in their order, as a plain tuple (a 50,000-node graph
# would otherwise build 50,000 objects that a check reads only to find the few nodes with a finding).
NodeRecord = tuple[
    str,
    int,
    NodeProto,
    OpSchema | None,
    FunctionProto | None,
    tuple[str | None, ...],
    tuple[str | None, ...],
    dict[str, str],
    frozenset[str],
]


@dataclass(slots=True)
class Inference:
    """The result of :func:`onnxcore.infer.infer`.

    Attributes:
        type_strings: Graph path -> value name -> type string, for every value of that graph (inputs,
            initializers, node outputs) whose type is known. Declared types win over inferred ones.
        declared: Graph path -> value name -> declared ``TypeProto`` (with its shape).
        node_records: One :data:`NodeRecord` per node of the model's graphs, subgraphs and function bodies, in
            walk order: the fields of its :class:`NodeTypes` (:attr:`nodes` builds those when first read).
        mismatches: Every contradiction between an inferred and a declared type.
        refused: ``(code, location)`` of what inference did not enter: subgraphs nested beyond
            ``Limits.max_nesting_depth`` (``E-LIMIT-NESTING``, the code validation and evaluation use too).
    """

    type_strings: dict[str, dict[str, str]] = field(default_factory=dict)
    declared: dict[str, dict[str, TypeProto]] = field(default_factory=dict)
    node_records: list[NodeRecord] = field(default_factory=list)
    mismatches: list[TypeMismatch] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    _by_location: dict[str, NodeTypes] | None = None
    _nodes: list[NodeTypes] | None = None

    @property
    def nodes(self) -> list[NodeTypes]:
        """One :class:`NodeTypes` per node of the model's graphs, subgraphs and function bodies, in walk order
        (built from :attr:`node_records` when first read)."""
        if self._nodes is None or len(self._nodes) != len(self.node_records):
            self._nodes = [NodeTypes(*r) for r in self.node_records]
        return self._nodes

    def types(self) -> dict[str, dict[str, TypeProto]]:
        """Graph path -> value name -> ``TypeProto``: the declared type if known, else the inferred one."""
        out: dict[str, dict[str, TypeProto]] = {}
        for path, names in self.type_strings.items():
            decl = self.declared.get(path, {})
            g: dict[str, TypeProto] = {}
            for name, ts in names.items():
                d = decl.get(name)
                g[name] = d if d is not None and type_string(d) == ts else parse_type_string(ts)
            out[path] = g
        return out

    def node(self, location: str) -> NodeTypes | None:
        """The :class:`NodeTypes` at ``location`` (as :func:`node_location` spells it)."""
        if self._by_location is None:
            self._by_location = {n.location: n for n in self.nodes}
        return self._by_location.get(location)


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
        refused: As :attr:`Inference.refused`.
    """

    shapes: dict[str, dict[str, ShapeT]] = field(default_factory=dict)
    mismatches: list[ShapeMismatch] = field(default_factory=list)
    incompatibilities: list[ShapeIncompatibility] = field(default_factory=list)
    unruled: list[tuple[str, str]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)

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
