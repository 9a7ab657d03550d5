"""What the fused kernels share: the kernel a fused step falls back on, and the nodes-as-written record."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import KernelNotFoundError
from onnxcore.kernels.registry import kernel_versions, lookup

__all__ = ["FLOATS", "Chain", "default_kernel"]

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

Chain = Sequence[tuple[Callable[..., Any], Sequence[Any], dict[str, Any], Sequence[str]]]
"""Nodes as written, in order: per node its call, its inputs (a value name of the chain, a constant array, or None
for an unsupplied input), its attributes and its output names."""


def default_kernel(op_type: str, domain: str = "") -> Callable[..., Any]:
    """The kernel of the newest registered version of ``op_type``: what a fused kernel run alone (``kernels.run``)
    wraps when no node's own kernel is given as an attribute.

    Raises:
        KernelNotFoundError: no kernel of that operator is registered.
    """
    versions = kernel_versions(domain, op_type)
    kdef = lookup(domain, op_type, versions[-1]) if versions else None
    if kdef is None:
        raise KernelNotFoundError(f"{domain or 'ai.onnx'}::{op_type}: no kernel registered", [(domain, op_type, 0)])
    return kdef.fn
