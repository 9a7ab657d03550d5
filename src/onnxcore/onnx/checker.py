"""``onnx.checker``: ``check_model`` over :func:`onnxcore.check`; the error it raises is
:class:`onnxcore.ValidationError`, which an onnx script catches as ``onnx.checker.ValidationError``.

onnx's ``ValidationError`` derives from ``Exception`` only; ours derives from :class:`~onnxcore.OnnxCoreError`
(an ``Exception``), so ``except onnx.checker.ValidationError`` and ``except Exception`` both catch it.
"""

from __future__ import annotations

import os
from typing import Any

from onnxcore.defs.ir import LATEST_IR_VERSION
from onnxcore.errors import ValidationError
from onnxcore.proto.bridge import as_message
from onnxcore.proto.messages import ModelProto
from onnxcore.validate import check

__all__ = ["IR_VERSION", "MAXIMUM_PROTOBUF", "ValidationError", "check_model"]

IR_VERSION = LATEST_IR_VERSION
# Protobuf's size limit of one message (2 GiB), which onnx's checker refuses models beyond.
MAXIMUM_PROTOBUF = 2147483648


def check_model(
    model: ModelProto | str | os.PathLike[str] | bytes | Any,
    full_check: bool = False,
    skip_opset_compatibility_check: bool = False,
    check_custom_domain: bool = False,
) -> None:
    """Raise :class:`ValidationError` (``onnx.checker.ValidationError``) when the model has error findings.

    Args:
        model: A model (onnxcore's or onnx's), its octets, or a path.
        full_check: Also check types (Clause 10.3, by inference), as onnx's ``full_check`` adds shape inference.
        skip_opset_compatibility_check: Accepted for onnx's signature (the rules of Clause 10 always apply).
        check_custom_domain: Accepted for onnx's signature.

    Raises:
        ValidationError: the report's error findings, in its message; ``.report`` holds them all.
    """
    if isinstance(model, str | os.PathLike | bytes | bytearray | memoryview):
        report = check(model, full=full_check)
    else:
        report = check(as_message(model, ModelProto, "check_model"), full=full_check)
    report.raise_for_errors()
