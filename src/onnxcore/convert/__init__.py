"""Operator set conversion (Clause 14): a model moved up or down between versions of ``ai.onnx`` or ``ai.onnx.ml``.

:func:`convert_version` rewrites every node of a domain, one step per changed definition between the node's
and the target's (the adapters of ``adapters_*.py``, registered with :func:`~onnxcore.convert.adapters.adapter`,
then the generic step derived from the two definitions, :mod:`onnxcore.convert.generic`). What cannot be
expressed is refused, every node at once, before anything is written (:class:`~onnxcore.errors.ConversionError`).

It sits above ``build``, ``validate``, ``infer`` and ``graph``, and below the package root; no lower layer
imports it.
"""

from __future__ import annotations

from onnxcore.convert.adapters import ADAPTERS, adapter
from onnxcore.convert.engine import convert_version
from onnxcore.errors import ConversionError, Refusal

__all__ = ["ADAPTERS", "ConversionError", "Refusal", "adapter", "convert_version"]
