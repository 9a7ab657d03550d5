"""onnxruntime's ``capi`` package as scripts import from it: its exception classes
(:mod:`onnxcore.capi.onnxruntime_pybind11_state`), also at this package's root."""

from __future__ import annotations

from onnxcore.capi.onnxruntime_pybind11_state import (
    EngineError,
    EPFail,
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    ModelLoadCanceled,
    ModelLoaded,
    ModelRequiresCompilation,
    NoModel,
    NoSuchFile,
    NotFound,
    NotImplemented,
    OrtError,
    RuntimeException,
)

__all__ = [
    "EPFail",
    "EngineError",
    "Fail",
    "InvalidArgument",
    "InvalidGraph",
    "InvalidProtobuf",
    "ModelLoadCanceled",
    "ModelLoaded",
    "ModelRequiresCompilation",
    "NoModel",
    "NoSuchFile",
    "NotFound",
    "NotImplemented",
    "OrtError",
    "RuntimeException",
]
