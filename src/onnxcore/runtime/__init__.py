"""Evaluation of models (Clause 8): :class:`Session`, the plan compiler and the kernel registry."""

from __future__ import annotations

from onnxcore.runtime.session import Session, StepTime, ValueDescription

__all__ = ["Session", "StepTime", "ValueDescription"]
