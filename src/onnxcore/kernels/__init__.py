"""Kernels, one module per operator family. Importing a module registers its kernels.

:func:`run` evaluates one operator on its own, outside any model. A :class:`KernelSet` holds kernels that only
the sessions (and runs) given it see, as ``custom_ops``.
"""

from __future__ import annotations

import importlib

from onnxcore.kernels.call import run
from onnxcore.kernels.contrib import CONTRIB_FAMILIES
from onnxcore.kernels.fused import FUSED_FAMILIES
from onnxcore.kernels.registry import KernelSet

__all__ = ["FAMILIES", "KernelSet", "load_all", "run"]

# The operator families, imported in this order. Add a module here when you add a family.
FAMILIES: tuple[str, ...] = (
    "elementwise",
    "elementwise_binary",
    "reduction",
    "linalg",
    "tensor",
    "tensor_layout",
    "indexing",
    "control_flow",
    "conv",
    "conv_transpose",
    "deform_conv",
    "pool",
    "roi_pool",
    "normalization",
    "recurrent",
    "attention",
    "flex_attention",
    "training",
    "image",
    "image_decoder",
    "sampling",
    "dropout_loss",
    "sequence",
    "quantize",
    "random",
    "text",
    "signal",
    "ml",
    "ml_linear",
    "ml_maps",
    "ml_tree",
)


def load_all() -> None:
    """Import every family module (registering its kernels), then those of onnxruntime's operators
    (:data:`onnxcore.kernels.contrib.CONTRIB_FAMILIES`), then the plan's fused kernels
    (:data:`onnxcore.kernels.fused.FUSED_FAMILIES`).

    Raises:
        ModuleNotFoundError: a family of :data:`FAMILIES` (or of ``CONTRIB_FAMILIES``) is missing: a defect,
            never skipped.
    """
    for name in FAMILIES:
        importlib.import_module(f"onnxcore.kernels.{name}")
    for name in CONTRIB_FAMILIES:
        importlib.import_module(f"onnxcore.kernels.contrib.{name}")
    for name in FUSED_FAMILIES:
        importlib.import_module(f"onnxcore.kernels.fused.{name}")
