"""Type and shape inference (Clause 9), across a model's graph, its subgraphs and its functions.

One walk over the bound model (:mod:`onnxcore.infer.inference_walk`) gives both the types and the shapes
(``infer_both``). Shapes: ``infer_shapes(model) -> ShapeInference`` (:mod:`onnxcore.infer.shapes`) gives the
shape of every tensor value it can tell, with the contradictions it finds; ``annotate(model)`` returns the model with a
``value_info`` entry (type and shape) for each intermediate value whose type is known. What follows is the
contract of the type inference.

Contract (for the validator and the runtime)
--------------------------------------------
``infer(model) -> Inference`` never raises on a malformed model: what it cannot decide stays unknown
(Clause 9.4), and unknown is never a finding by itself (Clause 9.5). It reads declared types (graph
inputs, initializers, ``value_info``, graph outputs), binds each node to its definition with
the bound model (:func:`onnxcore.graph.bind`, one precedence rule: a model-local function first, then the
definition in force under the imports, Clauses 8.4, 14.3), binds the type
variables of the definition from the input types, and propagates them to the outputs; the operators
whose output type comes from an attribute, a subgraph or the structure of an input type have explicit
rules (:mod:`onnxcore.infer.rules`). Types are spelled as type strings (``"tensor(float)"``,
``"seq(tensor(int64))"``, ``"map(string,tensor(float))"``), the form of the definitions' constraints.

Graph paths (stable, readable): ``"graph"`` for the top-level graph; a subgraph is its node's location
followed by the attribute name, ``'graph/node[3] "loop1"/body'`` (``.../branches[1]`` for a GRAPHS
attribute); a model-local function body is ``'functions[0] "domain:name"'``. A node's location is
:func:`node_location` (``'graph/node[3] "name"'``, or ``'graph/node[3]'`` when unnamed).

``Inference`` gives:

- ``type_strings[path][name]``: the type string of every value of that graph whose type is known
  (declared wins over inferred); ``types()`` gives the same as ``TypeProto`` (the declared message,
  shape included, where declared); ``infer_types(model)`` is a shortcut for ``infer(model).types()``.
- ``nodes``: one :class:`NodeTypes` per node, in walk order: ``graph``, ``index``, ``location``,
  ``node``, ``schema`` (bound definition, or None), ``function`` (the model-local function it calls),
  ``input_types`` (type string per actual input; None for unknown or ``""``), ``output_types``
  (inferred, before declared types are applied), ``bindings`` (type variable -> type string from the
  inputs) and ``conflicts`` (variables two inputs bind differently). ``node(location)`` looks one up.
  ``node_records`` holds the same per node as plain tuples, in the fields' order (what the walk records;
  ``nodes`` is built from them when first read).
- ``mismatches``: every :class:`TypeMismatch` (``graph``, ``name``, ``location``, ``declared``,
  ``inferred``, ``message``) where an inferred type contradicts a declared one: a node output
  (location ``.../output[k]``) or a subgraph input fed by its node (``.../body/input[k]``). Type strings
  are compared, shapes are not (types only).

A model-local function is inferred once per distinct call (input types, attributes) to give the call's
output types; those specialisations are not recorded. Its body is recorded once, as written, under its
own path: inputs untyped unless its ``value_info`` types them, attribute references unresolved.
Nodes of ``training_info`` graphs are not walked.
"""

from __future__ import annotations

from onnxcore.graph.bound import BoundModel, function_location, model_argument
from onnxcore.infer.inference_walk import run
from onnxcore.infer.results import Inference, NodeTypes, TypeMismatch
from onnxcore.infer.rules import bind_inputs, formal_at
from onnxcore.infer.shapes import ShapeIncompatibility, ShapeInference, ShapeMismatch, annotate, infer_shapes
from onnxcore.infer.walk_frames import node_location
from onnxcore.kernels.registry import KernelSet
from onnxcore.limits import Limits
from onnxcore.proto.bridge import OnnxMessage
from onnxcore.proto.messages import ModelProto, TypeProto
from onnxcore.types.typestr import parse_type_string, type_string

__all__ = [
    "annotate",
    "Inference",
    "ShapeIncompatibility",
    "ShapeInference",
    "ShapeMismatch",
    "NodeTypes",
    "TypeMismatch",
    "bind_inputs",
    "formal_at",
    "function_location",
    "infer",
    "infer_both",
    "infer_shapes",
    "infer_types",
    "node_location",
    "parse_type_string",
    "type_string",
]


def infer(
    model: ModelProto | OnnxMessage, *, limits: Limits | None = None, bound: BoundModel | None = None
) -> Inference:
    """Infer the type of every value of ``model`` (Clause 9). Never raises on a malformed model.

    Args:
        model: A model: onnxcore's, or the onnx package's ``ModelProto`` (converted by its octets).
        limits: ``max_nesting_depth`` bounds the subgraphs walked, ``max_inference_nodes`` the node visits
            (Clause 15.4); those ``bound`` was made under (else ``DEFAULT_LIMITS``) when None.
        bound: The model bound by :func:`onnxcore.graph.bind`, used as is (no second binding); bound here
            when None.

    Returns:
        The :class:`Inference`: known types per graph path, per-node views, and mismatches.

    Raises:
        TypeError: ``model`` is not a ModelProto.
    """
    model = model_argument(model, bound, "infer")
    return run(model, limits=limits, bound=bound).type_result


def infer_both(
    model: ModelProto | OnnxMessage,
    *,
    limits: Limits | None = None,
    bound: BoundModel | None = None,
    custom_ops: KernelSet | None = None,
) -> tuple[Inference, ShapeInference]:
    """:func:`infer` and :func:`infer_shapes` of ``model`` from one walk (arguments as for :func:`infer`).

    ``custom_ops`` are the kernels a session will run the model with (its ``custom_ops``): constant folding chooses
    from them first, as the session's plan does (:mod:`onnxcore.kernels.folding`).
    """
    model = model_argument(model, bound, "infer_both")
    walk = run(model, limits=limits, bound=bound, custom_ops=custom_ops)
    return walk.type_result, walk.shape_result


def infer_types(
    model: ModelProto | OnnxMessage, *, limits: Limits | None = None, bound: BoundModel | None = None
) -> dict[str, dict[str, TypeProto]]:
    """Graph path -> value name -> ``TypeProto`` for every known or inferable type (see :func:`infer`)."""
    model = model_argument(model, bound, "infer_types")
    return run(model, limits=limits, bound=bound).type_result.types()
