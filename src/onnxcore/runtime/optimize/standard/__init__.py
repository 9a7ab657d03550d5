"""Structural rewrites of a model's graph into standard operators (issue 39): standard operators in, standard out.

Each rewrite is a :class:`~onnxcore.runtime.optimize.pipeline.Rewrite` over the plan graph, as the plan-time ones
are, but what it makes is a model people deploy: every node it makes is a standard ONNX operator (domain ``""``
or ``ai.onnx.ml``) valid at the model's operator sets, with a fresh ``NodeProto`` named after the nodes it
replaces, bound to its kernel as a session binds any node (:mod:`.emit`); never ``com.microsoft``, never the
plan's fused kernels. Graph outputs keep their names. A rewrite fires only where it computes the same values for
every input the graph's dimension variables allow (each module states its preconditions); it reads the imports,
types and shapes from the graph's :class:`~onnxcore.runtime.optimize.graph.GraphFacts` (:func:`graph_facts`) and
does nothing without them (a session's plan).

:data:`STANDARD_REWRITES` lists them in the order they run:

- ``fold_shape_values`` (:mod:`.shape_values`): a value of the shape operators whose every element the shapes fix
  (``Shape(x)[1]`` of a fixed extent, beside dimension variables elsewhere) as a constant;
- ``resolve_reshape_targets`` (:mod:`.reshape`): a Reshape's target computed from shapes (``Shape -> Gather ->
  Concat``) as a constant, dimension variables kept (as ``0`` copies or one ``-1``);
- ``fold_batchnorm`` (:mod:`.batchnorm`): an inference BatchNormalization folded into the Conv, ConvTranspose,
  Gemm or MatMul before it;
- ``fold_channel_affine`` (:mod:`.channel_affine`): a per-channel constant Mul, Div, Add or Sub folded into the Conv,
  ConvTranspose, Gemm, MatMul or BatchNormalization before it;
- ``matmul_add_to_gemm`` (:mod:`.gemm`): ``MatMul(A, B) + C`` as ``Gemm(A, B, C)`` where ``A`` is 2-D;
- ``unit_transposes_as_reshape`` (:mod:`.unit_transpose`): a Transpose that moves only axes of extent 1 as a
  Reshape, merged with the Reshape before it;
- ``merge_layout_ops`` (:mod:`.layout`): consecutive Transpose, Reshape, Squeeze and Unsqueeze nodes merged;
- ``exporter_operators`` (:mod:`.exporter`): exporters' chains for GELU, SiLU, HardSwish, LayerNorm and RMSNorm
  as the operator set's own operator (Gelu, Swish, HardSwish, LayerNormalization, RMSNormalization);
- ``group_norms`` (:mod:`.groupnorm`): GroupNorm as exporters write it (Reshape, InstanceNormalization, Reshape,
  Mul, Add) as GroupNormalization;
- ``merge_parallel_matmuls`` (:mod:`.parallel`): three or more MatMuls of one input by constant weights (an
  attention's q, k, v projections) as one MatMul by the weights side by side and a Split;
- ``drop_neutral_operands`` (:mod:`.neutral`): a Mul or Div by a whole constant of ones (a fresh norm's weight),
  an Add of zeros ``-0`` or a Sub of zeros ``+0``, whose broadcast keeps the other operand's shape, left out
  (last, so that the patterns above see a norm's weight of ones as the weight it is).
"""

from __future__ import annotations

from collections.abc import Callable

from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.pipeline import AS_WRITTEN, CLOSED, Condition, Rewrite
from onnxcore.runtime.optimize.standard.batchnorm import fold_batchnorm
from onnxcore.runtime.optimize.standard.channel_affine import fold_channel_affine
from onnxcore.runtime.optimize.standard.exporter import exporter_operators
from onnxcore.runtime.optimize.standard.facts import graph_facts
from onnxcore.runtime.optimize.standard.gemm import matmul_add_to_gemm
from onnxcore.runtime.optimize.standard.groupnorm import group_norms
from onnxcore.runtime.optimize.standard.layout import merge_layout_ops
from onnxcore.runtime.optimize.standard.neutral import drop_neutral_operands, drop_zero_shifts
from onnxcore.runtime.optimize.standard.parallel import merge_parallel_matmuls
from onnxcore.runtime.optimize.standard.reshape import resolve_reshape_targets
from onnxcore.runtime.optimize.standard.shape_values import fold_shape_values
from onnxcore.runtime.optimize.standard.unit_transpose import unit_transposes_as_reshape
from onnxcore.runtime.step import PlanNode

__all__ = [
    "STANDARD_REWRITES",
    "drop_neutral_operands",
    "drop_zero_shifts",
    "exporter_operators",
    "fold_batchnorm",
    "fold_channel_affine",
    "fold_shape_values",
    "graph_facts",
    "group_norms",
    "matmul_add_to_gemm",
    "merge_layout_ops",
    "merge_parallel_matmuls",
    "resolve_reshape_targets",
    "unit_transposes_as_reshape",
]

# What each requires and ensures: the names read are made, and no node is a fused step (the nodes as a model writes
# them). Not that every node is bound: a model may hold an operator no kernel evaluates (it is left as written, and
# the nodes they make are bound).
_CONDITIONS: tuple[Condition, ...] = (CLOSED, AS_WRITTEN)


def _standard(name: str, run: Callable[[PlanGraph], list[PlanNode]], level: int) -> Rewrite:
    return Rewrite(name, run, level, requires=_CONDITIONS, ensures=_CONDITIONS)


STANDARD_REWRITES: tuple[Rewrite, ...] = (
    _standard("fold_shape_values", fold_shape_values, 1),
    _standard("resolve_reshape_targets", resolve_reshape_targets, 1),
    _standard("fold_batchnorm", fold_batchnorm, 1),
    _standard("fold_channel_affine", fold_channel_affine, 1),
    _standard("matmul_add_to_gemm", matmul_add_to_gemm, 1),
    _standard("unit_transposes_as_reshape", unit_transposes_as_reshape, 1),
    _standard("merge_layout_ops", merge_layout_ops, 1),
    _standard("exporter_operators", exporter_operators, 2),
    _standard("group_norms", group_norms, 2),
    _standard("merge_parallel_matmuls", merge_parallel_matmuls, 2),
    # Last: the exporters' patterns above read a norm's weight of ones as the weight it is.
    _standard("drop_neutral_operands", drop_neutral_operands, 1),
    _standard("drop_zero_shifts", drop_zero_shifts, 1),
)
"""The standard rewrites, in the order a model's pipeline runs them."""
