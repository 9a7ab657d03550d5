"""Plan-time optimisations that Clause 8.2 permits: folding, fusion, reordering, and evaluating repeats once.

Each works on the bound nodes of one graph before slots are laid out (:class:`onnxcore.runtime.plan.Plan`);
none changes a result beyond the rounding Clause 11.4 admits, and none applies in debugging mode
(``intermediates=True``), where every node is evaluated as written. One module per kind of rewrite:

- ``fold``: constant folding;
- ``cse``: the identity of a computation, so that repeats run once;
- ``affine``: chains of per-element affine steps as one pass;
- ``chains``: other chains of elementwise nodes as one step writing into one buffer;
- ``fuse``: steps folded into a Conv or Gemm, an in-place Relu, prepacked weights, Winograd;
- ``preactivation``: an affine chain and Relu folded into the Conv that reads them;
- ``reorder``: a channel projection moved before the pooling it follows;
- ``patterns``: exporters' chains for GELU, LayerNorm and RMSNorm evaluated as those operators; the attention
  chain as one step;
- ``linear``: linear layers (a MatMul by a constant and its bias, the dynamo exporter's Reshape, Gemm, Reshape) as
  one product;
- ``noops``: nodes that give back their input (Identity, a Cast to the type it has, ``x * 1``, ...) as aliases;
- ``shapeops``: shape operators with constant arguments as the numpy view they come down to, gathers by
  constant indices as a ``take`` of precomputed positions, the rotary embedding's ``rotate_half`` as one step;
- ``rotary``: the whole rotary embedding, ``x * cos + rotate_half(x) * sin``, as one step;
- ``conv1d``: a 1-D Conv with constant weights as one product per kernel tap (no im2col copy);
- ``rows``: LayerNorm, RMSNorm, tanh-GELU and attention probabilities by the accelerator's compiled loops called
  straight from the step (no kernel dispatch on a transformer's small tensors);
- ``specialize``: which shape computations a run's input shapes decide (plans specialised to them);
- ``_common``: helpers they share.
"""

from __future__ import annotations

from onnxcore.runtime.optimize.affine import fuse_affine_chains
from onnxcore.runtime.optimize.chains import fuse_elementwise_chains
from onnxcore.runtime.optimize.conv1d import fast_conv1d
from onnxcore.runtime.optimize.cse import cse_key, input_token
from onnxcore.runtime.optimize.fold import FOLD_BUDGET_BYTES, fold_constants
from onnxcore.runtime.optimize.fuse import fuse_conv_chains, fuse_relu, prepack_gemm, use_winograd
from onnxcore.runtime.optimize.linear import fuse_linear
from onnxcore.runtime.optimize.noops import drop_noops
from onnxcore.runtime.optimize.patterns import fuse_attention, fuse_patterns
from onnxcore.runtime.optimize.preactivation import flatten_concats, fuse_preactivation
from onnxcore.runtime.optimize.reorder import project_before_pooling
from onnxcore.runtime.optimize.rotary import fuse_rotary
from onnxcore.runtime.optimize.rows import fast_layer_norms
from onnxcore.runtime.optimize.shapeops import fast_shape_ops, fuse_rotate_half

__all__ = [
    "FOLD_BUDGET_BYTES",
    "cse_key",
    "drop_noops",
    "fast_conv1d",
    "fast_layer_norms",
    "fast_shape_ops",
    "flatten_concats",
    "fold_constants",
    "fuse_affine_chains",
    "fuse_attention",
    "fuse_conv_chains",
    "fuse_elementwise_chains",
    "fuse_linear",
    "fuse_patterns",
    "fuse_preactivation",
    "fuse_relu",
    "fuse_rotary",
    "fuse_rotate_half",
    "input_token",
    "prepack_gemm",
    "project_before_pooling",
    "use_winograd",
]
