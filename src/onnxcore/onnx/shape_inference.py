"""``onnx.shape_inference`` over :mod:`onnxcore.infer`: ``infer_shapes`` returns the model with the inferred
types and shapes stated (:func:`onnxcore.infer.annotate`); ``strict_mode`` raises on a contradiction.
"""

from __future__ import annotations

import os
from typing import Any

from onnxcore.build.function_types import infer_function_output_types
from onnxcore.errors import OnnxCoreError
from onnxcore.infer import annotate, infer
from onnxcore.infer import infer_shapes as _infer_shape_results
from onnxcore.io import decode, encode, load, save
from onnxcore.proto.bridge import as_message
from onnxcore.proto.message import adopt_lists
from onnxcore.proto.messages import ModelProto

__all__ = ["InferenceError", "infer_function_output_types", "infer_shapes", "infer_shapes_path"]


class InferenceError(OnnxCoreError, ValueError):
    """Inference found a contradiction, in ``strict_mode`` (onnx's ``InferenceError``)."""


def _contradictions(model: ModelProto) -> list[str]:
    found = [m.message for m in infer(model).mismatches]
    shapes = _infer_shape_results(model)
    found += [str(m) for m in shapes.mismatches] + [str(m) for m in shapes.incompatibilities]
    return found


def infer_shapes(
    model: ModelProto | bytes | Any, check_type: bool = False, strict_mode: bool = False, data_prop: bool = False
) -> Any:
    """The model with a ``value_info`` (type and shape) for each intermediate value inference can tell.

    Args:
        model: A model (onnxcore's or onnx's), or its octets (then octets are returned, as onnx does).
        check_type: Accepted for onnx's signature (types are always checked against the declared ones).
        strict_mode: Raise :class:`InferenceError` when an inferred type or shape contradicts a declared one.
        data_prop: Accepted for onnx's signature (small constant values are always propagated).

    Raises:
        InferenceError: ``strict_mode`` and a contradiction.
    """
    octets = isinstance(model, bytes | bytearray)
    m = (
        decode(ModelProto, model)
        if isinstance(model, bytes | bytearray)
        else as_message(model, ModelProto, "infer_shapes")
    )
    if strict_mode:
        found = _contradictions(m)
        if found:
            raise InferenceError("shape inference: " + "; ".join(found))
    out = adopt_lists(annotate(m))
    return encode(out) if octets else out


def infer_shapes_path(
    model_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str] = "",
    check_type: bool = False,
    strict_mode: bool = False,
    data_prop: bool = False,
) -> None:
    """:func:`infer_shapes` from a file to a file (``output_path``, by default the model's own)."""
    model = infer_shapes(load(model_path), check_type, strict_mode, data_prop)
    save(model, output_path or model_path)
