"""The least IR version a model needs (Table 12, Clause 14.1.2), from what it uses and what it imports."""

from __future__ import annotations

from onnxcore.defs.ir import BASE_IR_VERSION, FEATURE_IR_VERSION, element_ir_version, opset_ir_version
from onnxcore.proto.bridge import OnnxMessage, as_message
from onnxcore.proto.message_walk import walk_messages
from onnxcore.proto.messages import (
    DeviceConfigurationProto,
    FunctionProto,
    GraphProto,
    ModelProto,
    NodeDeviceConfigurationProto,
    NodeProto,
    TensorProto,
    TypeProto,
    ValueInfoProto,
)

__all__ = ["least_ir_version"]

_F = FEATURE_IR_VERSION
_META_HOLDERS = (NodeProto, GraphProto, FunctionProto, ValueInfoProto, TensorProto)


def least_ir_version(model: ModelProto | OnnxMessage) -> int:
    """The least IR version ``model`` can declare: the greatest of what its features and its imports need.

    The features are Table 12's (the sparse tensor and optional types, model-local functions, attribute
    defaults in functions, overloads, metadata properties, multi-device configuration, each element type)
    and Clause 7.2's initializer that is not a graph input (IR 4). The imports: each operator set version
    of a domain ONNX 1-2 defines needs the IR version of the release that published it (custom domains
    need nothing). Never less than 3, the IR version that introduced ``opset_import``.

    Args:
        model: An onnxcore ``ModelProto`` (or onnx's).

    Returns:
        The IR version.
    """
    m = as_message(model, ModelProto, "least_ir_version")
    need = BASE_IR_VERSION
    for o in (*m.opset_import, *(i for f in m.functions for i in f.opset_import)):
        need = max(need, opset_ir_version(o.domain, o.version) or BASE_IR_VERSION)
    walk = walk_messages(m, unique=True)

    def each(cls: type) -> list:
        return [walk.entries[i][0] for i in walk.by_class.get(cls, ())]

    if m.functions:
        need = max(need, _F["a model-local function"])
    for f in each(FunctionProto):
        if f.attribute_proto:
            need = max(need, _F["an attribute default value in a function"])
        if f.overload:
            need = max(need, _F["a function overload"])
    if any(n.overload for n in each(NodeProto)):
        need = max(need, _F["a call of a function overload"])
    if each(NodeDeviceConfigurationProto) or each(DeviceConfigurationProto):
        need = max(need, _F["a multi-device configuration"])
    if any(x.metadata_props for cls in _META_HOLDERS for x in each(cls)):
        need = max(need, _F["metadata properties on this item"])
    for g in each(GraphProto):
        inputs = {v.name for v in g.input}
        if any(t.name not in inputs for t in g.initializer):
            need = max(need, _F["an initializer that is not a graph input"])
    for t in each(TypeProto):
        if t.sparse_tensor_type is not None:
            need = max(need, _F["the sparse tensor type"])
        if t.optional_type is not None:
            need = max(need, _F["the optional type"])
    tags = [x.elem_type for cls in (TypeProto.Tensor, TypeProto.SparseTensor) for x in each(cls)]
    tags += [x.key_type for x in each(TypeProto.Map)]
    tags += [x.data_type for x in each(TensorProto)]
    for tag in set(tags):
        need = max(need, element_ir_version(tag) or BASE_IR_VERSION)
    return need
