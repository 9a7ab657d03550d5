"""Shape rules per operator family (Clause 9), registered with :func:`onnxcore.infer.shape_core.shape_rule`.

One module per family of :mod:`onnxcore.kernels`, of the same name (an operator's kernel and its shape rule are in
``kernels/<family>.py`` and ``infer/shape_ops/<family>.py``; onnxruntime's in ``contrib/<family>.py`` on both
sides); ``windows`` is the sliding-window arithmetic the convolutions and pools share, ``symbolic`` the value
rules of shape arithmetic, ``control_flow`` the rules of the operators with subgraphs. The list of modules is
explicit: importing this package registers every rule.
"""

from __future__ import annotations

from onnxcore.infer.shape_ops import (
    attention,
    contrib,
    control_flow,
    conv,
    conv_transpose,
    dropout_loss,
    elementwise,
    elementwise_binary,
    flex_attention,
    image,
    image_decoder,
    indexing,
    linalg,
    ml,
    ml_linear,
    ml_tree,
    normalization,
    pool,
    quantize,
    random,
    recurrent,
    reduction,
    roi_pool,
    sampling,
    sequence,
    signal,
    symbolic,
    tensor,
    tensor_layout,
    text,
    training,
)

__all__ = [
    "attention",
    "contrib",
    "control_flow",
    "conv",
    "conv_transpose",
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
]
