"""What the onnxruntime façade refuses and how: the findings it runs a model despite, and the onnxruntime exception
class for each onnxcore error (found by trying onnxruntime 1.31 on the same failures; docs/onnxruntime.md).

A mapped error is an instance of both classes: of onnxruntime's (its name, so that ``except InvalidArgument`` and
``type(e).__name__`` read as with onnxruntime; a ``RuntimeError``) and of the onnxcore error it replaces (so that
``except onnxcore.ValidationError`` still catches a refused model). The message and attributes are onnxcore's,
and the onnxcore error is chained as ``__cause__``.
"""

from __future__ import annotations

from typing import Any

from onnxcore.capi import onnxruntime_pybind11_state as C
from onnxcore.errors import (
    DecodeError,
    EvaluationError,
    InputError,
    LimitError,
    ModelFileError,
    ModelFileNotFoundError,
    ModelIsADirectoryError,
    OnnxCoreError,
    RunCancelledError,
    UnsupportedOperatorError,
    ValidationError,
)
from onnxcore.validate.report import Finding

__all__ = ["CHECKED_AT_RUN_CODES", "TOLERATED_CODES", "ort_error", "runs_anyway"]

TOLERATED_CODES = frozenset({"E-SHAPE-MISMATCH", "E-SHAPE-CONFLICT", "E-GRAPH-NAME", "E-METADATA-DUPLICATE"})
"""Error codes the façade runs a model despite (onnxruntime merges a contradicting shape with a warning, and does
not require a graph name or distinct metadata keys): declarations that evaluation never relies on."""

CHECKED_AT_RUN_CODES = frozenset({"E-ML-LINEAR-CLASSIFIER"})
"""Error codes of an attribute inconsistency that the kernel itself refuses when the node runs (Clause 7.3.1): the
session is made, as onnxruntime makes it, and a run raises ``Fail`` naming the mismatch (onnxruntime computes a
wrong result there: its own logreg_iris.onnx gives class 0 for every row)."""


def runs_anyway(finding: Finding) -> bool:
    """Whether the façade runs a model despite this error finding (a warning names it).

    The codes of :data:`TOLERATED_CODES`, and E-IO-TYPE for a graph output (onnxruntime infers an output's type
    and shape) or for an input that declares no shape (its feeds are then not checked for rank). An input
    without a type is refused, as onnxruntime refuses it (``Model input ... does not have type information``).
    """
    if finding.code in TOLERATED_CODES or finding.code in CHECKED_AT_RUN_CODES:
        return True
    if finding.code == "E-IO-TYPE":
        return finding.location.startswith("graph/output") or "declares no shape" in finding.message
    return False


# The class onnxruntime raises for a model the validator refuses, by the first error's code (tried: an undefined
# operator or attribute is INVALID_GRAPH, a value nothing produces INVALID_ARGUMENT, a type contradiction FAIL).
_BY_CODE: dict[str, type[C.OrtError]] = {
    "E-VALUE-UNDEFINED": C.InvalidArgument,
    "E-MODEL-GRAPH": C.InvalidArgument,
    "E-TYPE-MISMATCH": C.Fail,
    "E-NODE-NAME-DUPLICATE": C.Fail,
    "E-IO-TYPE": C.Fail,
    "E-INIT-TYPE": C.Fail,
    "E-INIT-SHAPE": C.Fail,
    "E-OPSET-MISSING": C.Fail,
}

_combined: dict[tuple[type[C.OrtError], type[BaseException]], type[C.OrtError]] = {}


def _ort_class(exc: OnnxCoreError) -> type[C.OrtError] | None:
    if isinstance(exc, C.OrtError):
        return None
    if isinstance(exc, ModelFileNotFoundError):
        return C.NoSuchFile
    if isinstance(exc, ModelIsADirectoryError | DecodeError):
        return C.InvalidProtobuf
    if isinstance(exc, ModelFileError):
        return C.Fail
    if isinstance(exc, ValidationError):
        report = exc.report
        codes = [f.code for f in getattr(report, "errors", None) or []]
        if "E-MODEL-GRAPH" in codes:  # octets with no graph (empty ones): onnxruntime's "No graph was found"
            return C.InvalidArgument
        return _BY_CODE.get(codes[0], C.InvalidGraph) if codes else C.InvalidGraph
    if isinstance(exc, UnsupportedOperatorError):
        return C.NotImplemented
    if isinstance(exc, InputError):
        return C.InvalidArgument
    if isinstance(exc, EvaluationError | LimitError | RunCancelledError):
        return C.Fail
    return C.Fail


def ort_error(exc: OnnxCoreError) -> Exception:
    """The error the façade raises for ``exc``: onnxruntime's class for the same failure, also an instance of
    ``type(exc)``, with ``exc``'s message and attributes (module docstring); ``exc`` itself when it is one of
    onnxruntime's classes already."""
    ort_cls = _ort_class(exc)
    if ort_cls is None:
        return exc
    key = (ort_cls, type(exc))
    cls = _combined.get(key)
    if cls is None:
        cls = type(
            ort_cls.__name__, (ort_cls, type(exc)), {"__module__": ort_cls.__module__, "__doc__": ort_cls.__doc__}
        )
        _combined[key] = cls
    # type(exc)'s own __new__: RuntimeError's refuses a class laid out as OSError (a missing model file).
    new: Any = type(exc).__new__(cls, *exc.args)
    new.args = exc.args
    new.__dict__.update(exc.__dict__)
    new.__cause__ = exc
    new.__suppress_context__ = True
    return new
