"""Shape rules per operator family (Clause 9), registered with :func:`onnxcore.infer.shape_core.shape_rule`.

The list of modules is explicit: importing this package registers every rule.
"""

from __future__ import annotations

from onnxcore.infer.shape_ops import (
    contrib,
    conv_pool,
    elementwise,
    linalg,
    nn,
    sequence,
    symbolic,
    tensor,
)

__all__ = [
    "contrib",
    "conv_pool",
    "elementwise",
    "linalg",
    "nn",
    "sequence",
    "symbolic",
    "tensor",
]
