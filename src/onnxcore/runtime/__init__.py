"""Evaluation of models (Clause 8): :class:`Session`, the plan compiler and the kernel registry; onnxruntime's Python
API over the same session (:mod:`onnxcore.runtime.ort_api` and its sibling ``ort_*`` modules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onnxcore._lazy import lazy_attribute as _lazy_attribute

if TYPE_CHECKING:
    from onnxcore.runtime.ort_api import InferenceSession, ModelMetadata, NodeArg
    from onnxcore.runtime.ort_options import (
        ExecutionMode,
        ExecutionOrder,
        GraphOptimizationLevel,
        ProviderError,
        RunOptions,
        SessionOptions,
        UnsupportedFeatureError,
        get_all_providers,
        get_available_providers,
        get_device,
        get_version_string,
        set_default_logger_severity,
        set_default_logger_verbosity,
    )
    from onnxcore.runtime.ort_values import IOBinding, OrtValue
    from onnxcore.runtime.seeding import set_seed
    from onnxcore.runtime.session import Session, StepTime, ValueDescription

# Each name is imported on first use (PEP 562): a script that makes a Session does not pay for the onnxruntime
# façade's modules (shape inference, the model rewrites), 40-50 ms of its start (issue 42, item 3).
_LAZY = {
    "InferenceSession": "onnxcore.runtime.ort_api",
    "ModelMetadata": "onnxcore.runtime.ort_api",
    "NodeArg": "onnxcore.runtime.ort_api",
    "ExecutionMode": "onnxcore.runtime.ort_options",
    "ExecutionOrder": "onnxcore.runtime.ort_options",
    "GraphOptimizationLevel": "onnxcore.runtime.ort_options",
    "ProviderError": "onnxcore.runtime.ort_options",
    "RunOptions": "onnxcore.runtime.ort_options",
    "SessionOptions": "onnxcore.runtime.ort_options",
    "UnsupportedFeatureError": "onnxcore.runtime.ort_options",
    "get_all_providers": "onnxcore.runtime.ort_options",
    "get_available_providers": "onnxcore.runtime.ort_options",
    "get_device": "onnxcore.runtime.ort_options",
    "get_version_string": "onnxcore.runtime.ort_options",
    "set_default_logger_severity": "onnxcore.runtime.ort_options",
    "set_default_logger_verbosity": "onnxcore.runtime.ort_options",
    "IOBinding": "onnxcore.runtime.ort_values",
    "OrtValue": "onnxcore.runtime.ort_values",
    "set_seed": "onnxcore.runtime.seeding",
    "Session": "onnxcore.runtime.session",
    "StepTime": "onnxcore.runtime.session",
    "ValueDescription": "onnxcore.runtime.session",
}


def __getattr__(name: str) -> object:
    return _lazy_attribute(__name__, globals(), _LAZY, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "ExecutionMode",
    "ExecutionOrder",
    "GraphOptimizationLevel",
    "IOBinding",
    "InferenceSession",
    "ModelMetadata",
    "NodeArg",
    "OrtValue",
    "ProviderError",
    "RunOptions",
    "Session",
    "SessionOptions",
    "StepTime",
    "UnsupportedFeatureError",
    "ValueDescription",
    "get_all_providers",
    "get_available_providers",
    "get_device",
    "get_version_string",
    "set_default_logger_severity",
    "set_default_logger_verbosity",
    "set_seed",
]
