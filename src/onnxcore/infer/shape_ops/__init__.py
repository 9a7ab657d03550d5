"""Shape rules per operator family (Clause 9), registered with :func:`onnxcore.infer.shape_core.shape_rule`.

One module per family of :mod:`onnxcore.kernels`, of the same name (an operator's kernel and its shape rule are in
``kernels/<family>.py`` and ``infer/shape_ops/<family>.py``; onnxruntime's in ``contrib/<family>.py`` on both
sides); ``windows`` is the sliding-window arithmetic the convolutions and pools share, ``symbolic`` the value
rules of shape arithmetic, ``control_flow`` the rules of the operators with subgraphs. The list of modules is
explicit (:data:`FAMILIES`). Importing this package imports none of them: inference imports the families of the
operators it meets (:func:`onnxcore.infer.shape_core.load_rules`, by the generated index
:mod:`onnxcore.infer.rule_index`); :func:`load_all` imports every one.
"""

from __future__ import annotations

import importlib

__all__ = ["CONTRIB_FAMILIES", "FAMILIES", "load_all"]

# The rule families, imported in this order by load_all. Add a module here when you add a family.
FAMILIES: tuple[str, ...] = (
    "attention",
    "control_flow",
    "conv",
    "conv_transpose",
    "deform_conv",
    "dropout_loss",
    "elementwise",
    "elementwise_binary",
    "flex_attention",
    "image",
    "image_decoder",
    "indexing",
    "linalg",
    "ml",
    "ml_linear",
    "ml_maps",
    "ml_tree",
    "normalization",
    "pool",
    "quantize",
    "random",
    "recurrent",
    "reduction",
    "roi_pool",
    "sampling",
    "sequence",
    "signal",
    "symbolic",
    "tensor",
    "tensor_layout",
    "text",
    "training",
)

# onnxruntime's families (``contrib/``), imported after those above.
CONTRIB_FAMILIES: tuple[str, ...] = (
    "activation",
    "attention",
    "fused",
    "gqa",
    "matmul_nbits",
    "normalization",
    "quantized",
    "text",
)


def load_all() -> None:
    """Import every family module (registering its rules).

    Raises:
        ModuleNotFoundError: a family of :data:`FAMILIES` or :data:`CONTRIB_FAMILIES` is missing: a defect.
    """
    for name in FAMILIES:
        importlib.import_module(f"onnxcore.infer.shape_ops.{name}")
    for name in CONTRIB_FAMILIES:
        importlib.import_module(f"onnxcore.infer.shape_ops.contrib.{name}")
