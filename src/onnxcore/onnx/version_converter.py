"""``onnx.version_converter``: :func:`onnxcore.convert_version` under onnx's names."""

from __future__ import annotations

from typing import Any

from onnxcore.convert import convert_version as _convert_version
from onnxcore.errors import ConversionError as ConvertError
from onnxcore.proto.message import adopt_lists
from onnxcore.proto.messages import ModelProto

__all__ = ["ConvertError", "convert_version"]


def convert_version(model: ModelProto | Any, target_version: int) -> ModelProto:
    """The model with its ai.onnx nodes rewritten for operator set ``target_version`` (Clause 14).

    Raises:
        ConvertError: every node that blocks the conversion (:class:`onnxcore.errors.ConversionError`).
    """
    return adopt_lists(_convert_version(model, target_version))
