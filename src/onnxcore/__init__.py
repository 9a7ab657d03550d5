"""onnxcore: a spec-first implementation of ONNX Part 1 (Core) in Python.

The model is the spec's own messages (Annex B) as record classes; :func:`load`, :func:`save`,
:func:`decode` and :func:`encode` implement Clause 12 without a protobuf library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from onnxcore._lazy import lazy_attribute as _lazy_attribute
from onnxcore.errors import (
    ConversionError,
    DecodeError,
    DecodeLimitError,
    EncodeError,
    EvaluationError,
    ExternalDataError,
    InputError,
    LimitError,
    MessageTypeError,
    ModelFileError,
    ModelFileNotFoundError,
    ModelIsADirectoryError,
    ModelPermissionError,
    OnnxCoreError,
    OptimizeError,
    RunCancelledError,
    RunTimeoutError,
    ShapeError,
    TensorError,
    UnsupportedOperatorError,
    ValidationError,
)
from onnxcore.io import decode, encode, load, save
from onnxcore.limits import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:
    from onnxcore.build import helper, least_ir_version
    from onnxcore.convert import convert_version
    from onnxcore.external import externalize, internalize, load_external_data
    from onnxcore.optimizer import OptimizeReport, optimize
    from onnxcore.reporting import report
    from onnxcore.runtime import (
        ExecutionMode,
        ExecutionOrder,
        GraphOptimizationLevel,
        InferenceSession,
        IOBinding,
        ModelMetadata,
        NodeArg,
        OrtValue,
        ProviderError,
        RunOptions,
        Session,
        SessionOptions,
        UnsupportedFeatureError,
        get_all_providers,
        get_available_providers,
        get_device,
        get_version_string,
        set_default_logger_severity,
        set_default_logger_verbosity,
        set_seed,
    )
    from onnxcore.types import (
        Dim,
        ElementType,
        MapType,
        OpaqueType,
        OptionalType,
        SequenceType,
        Shape,
        SparseTensor,
        SparseTensorType,
        TensorType,
        broadcast_shapes,
        from_array,
        to_array,
        type_from_proto,
        type_to_proto,
        unidirectional_broadcast,
        value_from_proto,
        value_to_proto,
    )
    from onnxcore.validate import Finding, Report, check
from onnxcore.proto import (
    AttributeProto,
    DeviceConfigurationProto,
    FunctionProto,
    GraphProto,
    IntIntListEntryProto,
    MapProto,
    Message,
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
from onnxcore.proto.bridge import from_onnx, to_onnx

__version__ = "0.2.0"

# Subsystems load on first use, so ``import onnxcore`` stays fast and light.
_LAZY: dict[str, str] = {
    # Clause 6 (types/)
    "ElementType": "onnxcore.types",
    "to_array": "onnxcore.types",
    "from_array": "onnxcore.types",
    "broadcast_shapes": "onnxcore.types",
    "unidirectional_broadcast": "onnxcore.types",
    "TensorType": "onnxcore.types",
    "SparseTensorType": "onnxcore.types",
    "SequenceType": "onnxcore.types",
    "MapType": "onnxcore.types",
    "OptionalType": "onnxcore.types",
    "OpaqueType": "onnxcore.types",
    "Shape": "onnxcore.types",
    "Dim": "onnxcore.types",
    "SparseTensor": "onnxcore.types",
    "type_from_proto": "onnxcore.types",
    "type_to_proto": "onnxcore.types",
    "value_from_proto": "onnxcore.types",
    "value_to_proto": "onnxcore.types",
    # Clause 10 (validate/)
    "check": "onnxcore.validate",
    "Report": "onnxcore.validate",
    "Finding": "onnxcore.validate",
    # Clauses 13, 15 (external/)
    "load_external_data": "onnxcore.external",
    "externalize": "onnxcore.external",
    "internalize": "onnxcore.external",
    # Models in code (build/)
    "helper": "onnxcore.build",
    "least_ir_version": "onnxcore.build",
    # Clause 14 (convert/)
    "convert_version": "onnxcore.convert",
    # Clause 8 (runtime/)
    "Session": "onnxcore.runtime",
    # onnxruntime's Python API over Session (runtime/ort_api.py)
    "ExecutionMode": "onnxcore.runtime",
    "GraphOptimizationLevel": "onnxcore.runtime",
    "InferenceSession": "onnxcore.runtime",
    "ModelMetadata": "onnxcore.runtime",
    "NodeArg": "onnxcore.runtime",
    "ProviderError": "onnxcore.runtime",
    "RunOptions": "onnxcore.runtime",
    "SessionOptions": "onnxcore.runtime",
    "UnsupportedFeatureError": "onnxcore.runtime",
    "get_available_providers": "onnxcore.runtime",
    "get_device": "onnxcore.runtime",
    "ExecutionOrder": "onnxcore.runtime",
    "IOBinding": "onnxcore.runtime",
    "OrtValue": "onnxcore.runtime",
    "get_all_providers": "onnxcore.runtime",
    "get_version_string": "onnxcore.runtime",
    "set_default_logger_severity": "onnxcore.runtime",
    "set_default_logger_verbosity": "onnxcore.runtime",
    "set_seed": "onnxcore.runtime",
    # The model report (report/)
    "report": "onnxcore.reporting",
    # The model optimizer (optimizer/; the package is not named optimize, so that it never shadows the function)
    "optimize": "onnxcore.optimizer",
    "OptimizeReport": "onnxcore.optimizer",
}


def __getattr__(name: str) -> object:
    # _LAZY_MODULES: onnxruntime's subpackages a script reaches as attributes
    # (``ort.capi.onnxruntime_pybind11_state.Fail``).
    return _lazy_attribute(__name__, globals(), _LAZY, name, modules=_LAZY_MODULES)


_LAZY_MODULES = frozenset({"backend", "capi"})


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | _LAZY_MODULES)


__all__ = [
    "AttributeProto",
    "broadcast_shapes",
    "check",
    "ConversionError",
    "convert_version",
    "decode",
    "DecodeError",
    "DecodeLimitError",
    "DEFAULT_LIMITS",
    "DeviceConfigurationProto",
    "Dim",
    "ElementType",
    "encode",
    "EncodeError",
    "EvaluationError",
    "ExecutionMode",
    "ExternalDataError",
    "externalize",
    "Finding",
    "from_array",
    "from_onnx",
    "FunctionProto",
    "get_available_providers",
    "get_device",
    "ExecutionOrder",
    "IOBinding",
    "OrtValue",
    "get_all_providers",
    "get_version_string",
    "set_default_logger_severity",
    "set_default_logger_verbosity",
    "set_seed",
    "GraphOptimizationLevel",
    "GraphProto",
    "helper",
    "InferenceSession",
    "InputError",
    "internalize",
    "IntIntListEntryProto",
    "least_ir_version",
    "LimitError",
    "Limits",
    "RunCancelledError",
    "RunTimeoutError",
    "load",
    "load_external_data",
    "MapProto",
    "MapType",
    "Message",
    "MessageTypeError",
    "ModelFileError",
    "ModelFileNotFoundError",
    "ModelIsADirectoryError",
    "ModelPermissionError",
    "ModelMetadata",
    "ModelProto",
    "NodeArg",
    "NodeDeviceConfigurationProto",
    "NodeProto",
    "OnnxCoreError",
    "OpaqueType",
    "OperatorProto",
    "OperatorSetIdProto",
    "OperatorSetProto",
    "OperatorStatus",
    "OptionalProto",
    "OptionalType",
    "ProviderError",
    "report",
    "optimize",
    "OptimizeError",
    "OptimizeReport",
    "Report",
    "RunOptions",
    "save",
    "SequenceProto",
    "SequenceType",
    "Session",
    "SessionOptions",
    "Shape",
    "ShapeError",
    "ShardedDimProto",
    "ShardingSpecProto",
    "SimpleShardedDimProto",
    "SparseTensor",
    "SparseTensorProto",
    "SparseTensorType",
    "StringStringEntryProto",
    "TensorAnnotation",
    "TensorError",
    "TensorProto",
    "TensorShapeProto",
    "TensorType",
    "to_array",
    "to_onnx",
    "TrainingInfoProto",
    "type_from_proto",
    "type_to_proto",
    "TypeProto",
    "unidirectional_broadcast",
    "UnsupportedFeatureError",
    "UnsupportedOperatorError",
    "ValidationError",
    "value_from_proto",
    "value_to_proto",
    "ValueInfoProto",
    "Version",
    "__version__",
]
