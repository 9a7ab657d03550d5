"""Evaluation of models (Clause 8): :class:`Session`, the plan compiler and the kernel registry; onnxruntime's Python
API over the same session (:mod:`onnxcore.runtime.ort_api` and its sibling ``ort_*`` modules)."""

from __future__ import annotations

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
