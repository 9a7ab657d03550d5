"""Kernels, one module per operator family. Importing a module registers its kernels."""

from __future__ import annotations

import importlib
import importlib.util

__all__ = ["FAMILIES", "load_all"]

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
    "ml_tree",
)


def load_all() -> None:
    """Import every family module (registering its kernels)."""
    for name in FAMILIES:
        modname = f"onnxcore.kernels.{name}"
        if importlib.util.find_spec(modname) is None:
            continue
        importlib.import_module(modname)
