"""``onnx.external_data_helper``: onnx's two steps of external data (:mod:`onnxcore.external.onnx_steps`) and
``load_external_data_for_model`` (:func:`onnxcore.load_external_data`)."""

from __future__ import annotations

import os

from onnxcore.external import load_external_data
from onnxcore.external.onnx_steps import (
    convert_model_from_external_data,
    convert_model_to_external_data,
    uses_external_data,
    write_external_data_tensors,
)
from onnxcore.proto.messages import ModelProto

__all__ = [
    "convert_model_from_external_data",
    "convert_model_to_external_data",
    "load_external_data_for_model",
    "uses_external_data",
    "write_external_data_tensors",
]


def load_external_data_for_model(model: ModelProto, base_dir: str | os.PathLike[str]) -> None:
    """Resolve the model's external references against ``base_dir``, in place (``onnx``'s function of that name).

    The contents become zero-copy views of the memory-mapped files (:func:`onnxcore.load_external_data`).
    """
    load_external_data(model, base_dir)
