"""Shape inference (Clause 9): the shape of every tensor value of a model, from its declared shapes.

The shapes come from the inference walk (:mod:`onnxcore.infer.inference_walk`), which carries per value a type, a shape
(see :mod:`onnxcore.infer.shape_core`) and, for small tensors whose contents are statically known
(initializers, ``Constant``, and the nodes computed from them), the value itself, so that a ``Reshape`` to a
computed shape has a known result; the elements of ``Shape`` of a tensor with dimension variables are carried
as a :class:`~onnxcore.infer.shape_core.SymbolicValue` (data propagation, ``shape_ops/symbolic.py``). A node's
output shapes come from its operator's shape rule, its kernel (:mod:`onnxcore.infer.known_values`), or its function
body (Clause 8.4), see :mod:`onnxcore.infer.shape_step`; failing those, they are unknown (Clause 9.4).

Never raises on a malformed model: what it cannot decide stays unknown. What it finds contradictory is
recorded: a node whose fixed input extents contradict its definition (:class:`ShapeIncompatibility`) and
an inferred shape that contradicts the shape declared for the same value (:class:`ShapeMismatch`); the
validator reports both under Clause 10.3.
"""

from __future__ import annotations

import copy

from onnxcore.graph.bound import BoundModel, model_argument
from onnxcore.infer.inference_walk import run
from onnxcore.infer.results import (
    ShapeIncompatibility,
    ShapeInference,
    ShapeMismatch,
    declared_shape,
    stated_dims,
)
from onnxcore.infer.shape_core import ShapeT
from onnxcore.limits import Limits
from onnxcore.proto.bridge import OnnxMessage
from onnxcore.proto.messages import ModelProto, TensorShapeProto, TypeProto, ValueInfoProto

__all__ = [
    "ShapeInference",
    "ShapeIncompatibility",
    "ShapeMismatch",
    "annotate",
    "declared_shape",
    "infer_shapes",
    "stated_dims",
]


def infer_shapes(
    model: ModelProto | OnnxMessage, *, limits: Limits | None = None, bound: BoundModel | None = None
) -> ShapeInference:
    """Infer the shape of every tensor value of ``model`` (Clause 9). Never raises on a malformed model.

    Args:
        model: A model: onnxcore's, or the onnx package's ``ModelProto`` (converted by its octets).
        limits: ``max_nesting_depth`` bounds the subgraphs walked, ``max_inference_nodes`` the node visits
            (Clause 15.4); those ``bound`` was made under (else ``DEFAULT_LIMITS``) when None.
        bound: The model bound by :func:`onnxcore.graph.bind`, used as is (no second binding); bound here
            when None.

    Returns:
        The :class:`ShapeInference`: shapes per graph path, contradictions found, and the nodes no rule covers.

    Raises:
        TypeError: ``model`` is not a ModelProto.
    """
    model = model_argument(model, bound, "infer_shapes")
    return run(model, limits=limits, bound=bound, node_types=False).shape_result


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


def annotate(
    model: ModelProto | OnnxMessage, *, limits: Limits | None = None, bound: BoundModel | None = None
) -> ModelProto:
    """``model`` with what inference tells stated in its top-level graph (a new model; ``model`` is unchanged).

    Every node output of the top-level graph that is not a graph output and has no ``value_info`` gets one,
    with its inferred type and, where known, its shape; a graph output declared without a shape gets the
    inferred one. Values whose type is unknown are left out (Clause 9.4).

    Args:
        model: A model: onnxcore's, or the onnx package's ``ModelProto``; the result is onnxcore's
            (:func:`onnxcore.to_onnx` gives it back to onnx).
        limits: As for :func:`infer_shapes`.
        bound: The model bound by :func:`onnxcore.graph.bind`, used as is; bound here when None.

    Raises:
        TypeError: ``model`` is not a ModelProto.
    """
    model = model_argument(model, bound, "annotate")
    m = copy.copy(model)
    g = model.graph
    if g is None:
        return m
    walk = run(model, limits=limits, bound=bound)
    types = walk.type_result.types().get("graph", {})
    shapes = walk.shape_result.shapes.get("graph", {})
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
