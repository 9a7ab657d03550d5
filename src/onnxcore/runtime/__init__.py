"""Evaluation of models (Clause 8): :class:`Session`, the plan compiler and the kernel registry; onnxruntime's Python
API over the same session (:mod:`onnxcore.runtime.ort_api`)."""

from __future__ import annotations

from onnxcore.runtime.ort_api import (
    ExecutionMode,
    GraphOptimizationLevel,
    InferenceSession,
    ModelMetadata,
    NodeArg,
    ProviderError,
    RunOptions,
    SessionOptions,
    UnsupportedFeatureError,
    get_available_providers,
    get_device,
)
from onnxcore.runtime.session import Session, StepTime, ValueDescription

__all__ = [
    "ExecutionMode",
    "GraphOptimizationLevel",
    "InferenceSession",
    "ModelMetadata",
    "NodeArg",
    "ProviderError",
    "RunOptions",
    "Session",
    "SessionOptions",
    "StepTime",
    "UnsupportedFeatureError",
    "ValueDescription",
    "get_available_providers",
    "get_device",
]
