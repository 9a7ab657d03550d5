"""onnx's Python API over onnxcore: ``import onnxcore.onnx as onnx`` ports a script that stays off protobuf internals.

The package mirrors onnx's module tree (``helper``, ``numpy_helper``, ``checker``, ``shape_inference``,
``compose``, ``utils``, ``inliner``, ``external_data_helper``, ``version_converter``, ``parser``, ``printer``,
``defs``, ``tools.update_model_dims``) and onnx's top-level names (``load``, ``save``, ``load_model_from_string``,
the message classes with their enumerations, ``IR_VERSION``). Every name is onnxcore's own function re-exported,
or, where onnx's signature differs from ours, a thin adapter that translates the arguments and calls ours; no
rule is implemented here. The messages are onnxcore's, with protobuf's Python message API; a library that
checks for protobuf's classes needs :func:`onnxcore.to_onnx` (docs/onnx.md lists what differs).

``__version__`` is onnxcore's version, not onnx's. The submodules load on first use, so importing the
package costs no more than ``import onnxcore``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from onnxcore import __version__
from onnxcore.proto import (
    AttributeProto,
    DeviceConfigurationProto,
    FunctionProto,
    GraphProto,
    IntIntListEntryProto,
    MapProto,
    ModelProto,
    NodeDeviceConfigurationProto,
    NodeProto,
    OperatorProto,
    OperatorSetIdProto,
    OperatorSetProto,
    OperatorStatus,
    OptionalProto,
    SequenceProto,
    ShardedDimProto,
    ShardingSpecProto,
    SimpleShardedDimProto,
    SparseTensorProto,
    StringStringEntryProto,
    TensorAnnotation,
    TensorProto,
    TensorShapeProto,
    TrainingInfoProto,
    TypeProto,
    ValueInfoProto,
    Version,
)

if TYPE_CHECKING:
    from onnxcore.defs.ir import LATEST_IR_VERSION as IR_VERSION
    from onnxcore.onnx import (
        checker,
        compose,
        defs,
        external_data_helper,
        helper,
        inliner,
        numpy_helper,
        parser,
        printer,
        reference,
        shape_inference,
        tools,
        utils,
        version_converter,
    )
    from onnxcore.onnx._serialization import (
        load,
        load_from_string,
        load_model,
        load_model_from_string,
        load_tensor,
        load_tensor_from_string,
        save,
        save_model,
        save_tensor,
    )
    from onnxcore.onnx.external_data_helper import (
        convert_model_to_external_data,
        load_external_data_for_model,
        write_external_data_tensors,
    )

# onnx.proto is the ML flavour of the schema (it has the ai.onnx.ml messages' fields): so is Annex B.
ONNX_ML = True
EXPERIMENTAL = OperatorStatus.EXPERIMENTAL
STABLE = OperatorStatus.STABLE

_SUBMODULES = frozenset(
    {
        "checker",
        "compose",
        "defs",
        "external_data_helper",
        "helper",
        "inliner",
        "numpy_helper",
        "parser",
        "printer",
        "reference",
        "shape_inference",
        "tools",
        "utils",
        "version_converter",
    }
)
# Names onnx exports at the top level, loaded on first use from the module that defines them (the load and save
# functions need the text syntax and external data; IR_VERSION the definitions).
_FROM_SUBMODULE = {
    "convert_model_to_external_data": "onnxcore.onnx.external_data_helper",
    "load_external_data_for_model": "onnxcore.onnx.external_data_helper",
    "write_external_data_tensors": "onnxcore.onnx.external_data_helper",
    "load": "onnxcore.onnx._serialization",
    "load_from_string": "onnxcore.onnx._serialization",
    "load_model": "onnxcore.onnx._serialization",
    "load_model_from_string": "onnxcore.onnx._serialization",
    "load_tensor": "onnxcore.onnx._serialization",
    "load_tensor_from_string": "onnxcore.onnx._serialization",
    "save": "onnxcore.onnx._serialization",
    "save_model": "onnxcore.onnx._serialization",
    "save_tensor": "onnxcore.onnx._serialization",
}


def __getattr__(name: str) -> object:
    # The submodules import validation, inference and conversion: loaded when a script first names them.
    if name in _SUBMODULES:
        module = importlib.import_module(f"onnxcore.onnx.{name}")
        globals()[name] = module
        return module
    if name == "IR_VERSION":
        # The newest IR version onnxcore reads and writes (Table 12), as onnx.IR_VERSION is onnx's.
        value: object = importlib.import_module("onnxcore.defs.ir").LATEST_IR_VERSION
        globals()[name] = value
        return value
    owner = _FROM_SUBMODULE.get(name)
    if owner is not None:
        value = getattr(importlib.import_module(owner), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'onnxcore.onnx' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _SUBMODULES | set(_FROM_SUBMODULE) | {"IR_VERSION"})


__all__ = [
    "EXPERIMENTAL",
    "IR_VERSION",
    "ONNX_ML",
    "STABLE",
    "AttributeProto",
    "DeviceConfigurationProto",
    "FunctionProto",
    "GraphProto",
    "IntIntListEntryProto",
    "MapProto",
    "ModelProto",
    "NodeDeviceConfigurationProto",
    "NodeProto",
    "OperatorProto",
    "OperatorSetIdProto",
    "OperatorSetProto",
    "OperatorStatus",
    "OptionalProto",
    "SequenceProto",
    "ShardedDimProto",
    "ShardingSpecProto",
    "SimpleShardedDimProto",
    "SparseTensorProto",
    "StringStringEntryProto",
    "TensorAnnotation",
    "TensorProto",
    "TensorShapeProto",
    "TrainingInfoProto",
    "TypeProto",
    "ValueInfoProto",
    "Version",
    "__version__",
    "checker",
    "compose",
    "convert_model_to_external_data",
    "defs",
    "external_data_helper",
    "helper",
    "inliner",
    "load",
    "load_external_data_for_model",
    "load_from_string",
    "load_model",
    "load_model_from_string",
    "load_tensor",
    "load_tensor_from_string",
    "numpy_helper",
    "parser",
    "printer",
    "reference",
    "save",
    "save_model",
    "save_tensor",
    "shape_inference",
    "tools",
    "utils",
    "version_converter",
    "write_external_data_tensors",
]
