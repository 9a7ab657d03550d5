"""Plan-time optimisations that Clause 8.2 permits: folding, fusion, reordering, and evaluating repeats once.

This package holds matchers only: each rewrite reads the plan graph (``graph``: the bound nodes of one graph before
slots are laid out, its constants and outputs, and the indices every rewrite shares) and binds what it fuses to a
fused kernel of :mod:`onnxcore.kernels.fused` (domain ``onnxcore.fused``), which computes the values. ``pipeline``
declares the rewrites in their order, one contract (``Rewrite.apply(graph) -> changed``, with declared pre- and
postconditions) and a switch each; every plan runs it (:class:`onnxcore.runtime.plan.Plan`, a plan specialised to
input shapes too). None changes a result beyond the rounding Clause 11.4 admits, and none applies in debugging
mode (``intermediates=True``), where every node is evaluated as written. One module per kind of rewrite:

- ``fold``: constant folding (the rule it shares with inference is :mod:`onnxcore.kernels.folding`);
- ``noops``: nodes that give back their input (Identity, a Cast to the type it has, ``x * 1``, ...) as aliases;
- ``prepare``: kernels registered with ``prepare_constants`` (MatMulNBits, the binary arithmetic and comparison
  operators) prepared with their node's constants, the last rewrite;
- ``patterns``: exporters' chains for GELU, SiLU, LayerNorm, RMSNorm, ``x * HardSigmoid(x)`` and attention;
- ``linear``: linear layers (a MatMul by a constant and its bias, the dynamo exporter's Reshape, Gemm, Reshape);
- ``fuse``: steps folded into a Conv or Gemm, an in-place Relu, a Conv's activation, prepacked weights, Winograd;
- ``affine``: chains of per-element affine steps;
- ``preactivation``: an affine chain and Relu folded into the Conv that reads them;
- ``reorder``: a channel projection moved before the pooling it follows;
- ``shapeops``: shape operators with constant arguments as the view they come down to, the rotary embedding's
  ``rotate_half``;
- ``rotary``: the whole rotary embedding;
- ``rows``: LayerNormalization with constant weights by the compiled rows;
- ``conv1d``: a 1-D Conv with constant weights as one product;
- ``scan``: a Scan whose iterations are independent (unchanged states, a row-wise body) as one batched pass;
- ``chains``: other chains of elementwise nodes as one step writing into one buffer;
- ``cse``: common-subexpression elimination, after the fusions: repeats of a computation run once;
- ``specialize``: which shape computations a run's input shapes decide (plans specialised to them);
- ``graph``, ``pipeline``, ``_common``: the plan graph, the pipeline, helpers the matchers share.
"""

from __future__ import annotations

from onnxcore.runtime.optimize.affine import fuse_affine_chains
from onnxcore.runtime.optimize.chains import fuse_elementwise_chains
from onnxcore.runtime.optimize.conv1d import fast_conv1d
from onnxcore.runtime.optimize.cse import cse_key, input_token, merge_repeats
from onnxcore.runtime.optimize.fold import FOLD_BUDGET_BYTES, fold_constants
from onnxcore.runtime.optimize.fuse import fuse_conv_chains, fuse_relu, measure_conv_paths, prepack_gemm, use_winograd
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.linear import fuse_linear
from onnxcore.runtime.optimize.noops import drop_noops
from onnxcore.runtime.optimize.patterns import fuse_attention, fuse_patterns
from onnxcore.runtime.optimize.pipeline import PIPELINE, REWRITE_NAMES, Rewrite, disabled_for, run_pipeline
from onnxcore.runtime.optimize.preactivation import flatten_concats, fuse_preactivation
from onnxcore.runtime.optimize.reorder import project_before_pooling
from onnxcore.runtime.optimize.rotary import fuse_rotary
from onnxcore.runtime.optimize.rows import fast_layer_norms
from onnxcore.runtime.optimize.scan import batch_scans
from onnxcore.runtime.optimize.shapeops import fast_shape_ops, fuse_rotate_half

__all__ = [
    "FOLD_BUDGET_BYTES",
    "PIPELINE",
    "REWRITE_NAMES",
    "PlanGraph",
    "Rewrite",
    "disabled_for",
    "run_pipeline",
    "batch_scans",
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
    "measure_conv_paths",
    "merge_repeats",
    "prepack_gemm",
    "project_before_pooling",
    "use_winograd",
]
