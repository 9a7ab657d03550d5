"""onnxruntime's exception classes, by the names and module path a script imports them from.

``from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument`` becomes
``from onnxcore.capi.onnxruntime_pybind11_state import InvalidArgument``. The onnxruntime façade
(:mod:`onnxcore.runtime.ort_api`) raises the class onnxruntime raises for the same failure, with onnxcore's message
and the onnxcore error chained as ``__cause__``.

In onnxruntime (1.31) these classes derive from ``Exception`` only; here each is also a ``RuntimeError`` (a script
writing ``except RuntimeError`` catches them, as it catches onnxruntime's plain ``RuntimeError`` refusals of a
feed) and an :class:`onnxcore.OnnxCoreError`.
"""

from __future__ import annotations

from onnxcore.errors import OnnxCoreError

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


class OrtError(OnnxCoreError, RuntimeError):
    """The base of onnxruntime's status classes here (onnxruntime has no common base but ``Exception``)."""


class Fail(OrtError):
    """onnxruntime's ``FAIL``: a kernel failed during a run, or a model it cannot use (a type error, say)."""


class InvalidArgument(OrtError):
    """onnxruntime's ``INVALID_ARGUMENT``: a feed of the wrong type, rank or extent, an unknown input or output
    name, a value that cannot be converted to the input's type."""


class NoSuchFile(OrtError):
    """onnxruntime's ``NO_SUCHFILE``: the model file does not exist."""


class NoModel(OrtError):
    """onnxruntime's ``NO_MODEL``."""


class EngineError(OrtError):
    """onnxruntime's ``ENGINE_ERROR``."""


class RuntimeException(OrtError):
    """onnxruntime's ``RUNTIME_EXCEPTION``."""


class InvalidProtobuf(OrtError):
    """onnxruntime's ``INVALID_PROTOBUF``: the octets are not a model (Clause 12), or the path is a directory."""


class ModelLoaded(OrtError):
    """onnxruntime's ``MODEL_LOADED``."""


class NotImplemented(OrtError):  # onnxruntime's name (shadowing the builtin constant), which scripts import
    """onnxruntime's ``NOT_IMPLEMENTED``: an operator that is defined but that no kernel evaluates."""


class InvalidGraph(OrtError):
    """onnxruntime's ``INVALID_GRAPH``: a model that does not conform (an undefined operator, an unknown
    attribute, ...)."""


class EPFail(OrtError):
    """onnxruntime's ``EP_FAIL``: an execution provider failed."""


class NotFound(OrtError):
    """onnxruntime's ``NOT_FOUND``."""


class ModelLoadCanceled(OrtError):
    """onnxruntime's ``MODEL_LOAD_CANCELED``."""


class ModelRequiresCompilation(OrtError):
    """onnxruntime's ``MODEL_REQUIRES_COMPILATION``."""
