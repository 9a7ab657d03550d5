"""The kernels' helpers other layers use (the plan's rewrites and differentiation read axes and element types as
the kernels do): one definition each, in ``kernels/_util.py``, named here so that no module outside ``kernels``
imports a private kernels module (``tests/test_layers.py``); and the accelerator's state, which ``onnxcore warmup``
reports."""

from __future__ import annotations

from onnxcore.kernels._util import is_float, legacy_broadcast, normalize_axes, normalize_axis
from onnxcore.kernels.accel import status as accelerator_status

__all__ = ["accelerator_status", "is_float", "legacy_broadcast", "normalize_axes", "normalize_axis"]
