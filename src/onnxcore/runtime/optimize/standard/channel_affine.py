"""A per-channel constant ``Mul``, ``Div``, ``Add`` or ``Sub`` folded into the linear node before it (issue 39).

Caffe2 models scale and shift every convolution's output with ``Mul`` and ``Add`` of ``[C, 1, 1]`` constants (the
"affine" of its spatial BatchNorm); timm's layer scale multiplies a convolution's output by ``gamma`` of shape
``[1, C, 1, 1]``. Where ``y`` is linear in constant weights per output channel (axis 1), ``y * s`` and ``y + t``
go into the weights and the bias (as :mod:`.batchnorm` folds a BatchNormalization), computed in float64 and rounded
once to the weights' type: the same values up to rounding (Clause 11.4). After an inference BatchNormalization
(itself per channel) the factor goes into its ``scale`` and ``B``.

Preconditions, each checked:

- the node is a standard ``Mul`` or ``Add`` (either input the constant), or ``Sub``/``Div`` with the constant
  second (``y - t``, ``y / s``), of version 7 or later (multidirectional broadcasting);
- its constant has the weights' float type (float32 or float64), every element finite (a factor of ``inf`` or
  ``nan`` does not distribute over a sum: ``0 * inf``), a divisor's reciprocal finite in the type, a shift not all
  zeros (a float's ``x + 0`` turns ``-0`` into ``+0``: ``drop_noops`` keeps it, and so does this pass), and it
  is **per channel**: its rank
  at most the output's and, aligned from the right with the output's shape ``[N, C, ...]``, every extent 1 but
  the channel axis's, which is 1 or ``C``. Its broadcast then never changes the output's shape, whatever the
  dimension variables are (a ``[1, C, 1, 1]`` factor after a rank-3 output, or a ``[C, 1]`` one on a rank-2 Gemm,
  is left alone);
- the linear node's output is read by this node alone and is not a graph output;
- the linear node is a Conv or ConvTranspose with constant weights (and bias), a Gemm (version 7 on) or a MatMul
  whose ``A`` has rank 2 (as :mod:`.batchnorm` states), its output's channel axis 1, or an inference
  BatchNormalization with constant parameters of the constant's type and its input's rank known.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.runtime.optimize.affine import bn_parameters
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.standard.batchnorm import Factors, fold_factors_into_conv, fold_factors_into_gemm
from onnxcore.runtime.optimize.standard.emit import Names, is_standard, node_name, rank, standard_node
from onnxcore.runtime.step import PlanNode

__all__ = ["fold_channel_affine"]

_OPS = ("Mul", "Div", "Add", "Sub")
_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _operand(graph: PlanGraph, bn: PlanNode) -> tuple[str, np.ndarray] | None:
    """(the varying input, the constant) of a Mul/Div/Add/Sub this pass may fold, else None."""
    op = bn.node.op_type
    if not is_standard(bn, op) or bn.since < 7 or len(bn.inputs) != 2 or len(bn.outputs) != 1:
        return None
    a, b = bn.inputs
    ca, cb = graph.const.get(a), graph.const.get(b)
    if isinstance(cb, np.ndarray) and a not in graph.const:
        y, c = a, cb
    elif op in ("Mul", "Add") and isinstance(ca, np.ndarray) and b not in graph.const:
        y, c = b, ca
    else:
        return None
    if c.dtype not in _TYPES or not np.all(np.isfinite(c)):
        return None
    if op == "Div":
        with np.errstate(divide="ignore", over="ignore"):
            if not np.all(np.isfinite((1.0 / c.astype(np.float64)).astype(c.dtype))):
                return None  # a zero divisor, or one so small its reciprocal overflows the type
    if op in ("Add", "Sub") and not np.any(c):
        return None  # a float's x + 0 turns -0 into +0: kept, as drop_noops keeps it
    return y, c


def _per_channel(c: np.ndarray, out_rank: int, channels: int) -> np.ndarray | None:
    """``c`` as one value per channel (float64, shape ``(channels,)``) where its broadcast against an output of
    rank ``out_rank`` with ``channels`` on axis 1 is per channel and keeps the output's shape, else None."""
    if out_rank < 2 or c.ndim > out_rank:
        return None
    full = (1,) * (out_rank - c.ndim) + tuple(int(d) for d in c.shape)
    if any(d != 1 for i, d in enumerate(full) if i != 1) or full[1] not in (1, channels):
        return None
    return np.broadcast_to(np.asarray(c, np.float64).reshape(-1), (channels,)).copy()


def _factors(graph: PlanGraph, tail: PlanNode, c: np.ndarray, out_rank: int) -> Factors:
    """The ``(s, shift)`` the tail node computes, for weights of a dtype and a channel count."""
    op = tail.node.op_type

    def factors(dtype: np.dtype[Any], channels: int) -> tuple[np.ndarray, np.ndarray] | None:
        v = _per_channel(c, out_rank, channels) if c.dtype == dtype else None
        if v is None:
            return None
        ones, zeros = np.ones(channels), np.zeros(channels)
        if op == "Mul":
            return v, zeros
        if op == "Div":
            return 1.0 / v, zeros
        return ones, (v if op == "Add" else -v)

    return factors


def _fold_into_batchnorm(
    graph: PlanGraph, bn: PlanNode, tail: PlanNode, c: np.ndarray, names: Names
) -> PlanNode | None:
    """An inference BatchNormalization and the scale or shift after it as one BatchNormalization."""
    params = bn_parameters(bn, graph.const)
    r = rank(graph, bn.inputs[0]) if params is not None else None
    if params is None or r is None or any(graph.const[n].dtype != c.dtype for n in bn.inputs[1:]):
        return None
    scale, bias = (np.asarray(p, np.float64) for p in params[:2])
    found = _factors(graph, tail, c, r)(c.dtype, scale.shape[0])
    if found is None:
        return None
    s, shift = found
    # BN(x) * s + shift = (x - mean) / sqrt(var + eps) * (scale * s) + (B * s + shift)
    s_name = names.fresh(f"{bn.inputs[1]}_scaled") if np.any(s != 1.0) else bn.inputs[1]
    b_name = names.fresh(f"{bn.inputs[2]}_shifted")
    ins = [bn.inputs[0], s_name, b_name, *bn.inputs[3:]]
    name = node_name((bn, tail), f"BatchNormalization_{tail.outputs[0]}")
    out = standard_node(graph, bn, "BatchNormalization", ins, list(tail.outputs), name=name, attributes_of=bn)
    if out is None:
        return None
    dtype = graph.const[bn.inputs[1]].dtype
    shape = graph.const[bn.inputs[1]].shape
    if s_name != bn.inputs[1]:
        graph.add_constant(s_name, (scale * s).astype(dtype).reshape(shape))
    graph.add_constant(b_name, (bias * s + shift).astype(dtype).reshape(graph.const[bn.inputs[2]].shape))
    return out


def _fold(graph: PlanGraph, prod: PlanNode, tail: PlanNode, c: np.ndarray, names: Names) -> PlanNode | None:
    op = prod.node.op_type
    if op in ("Conv", "ConvTranspose") and is_standard(prod, op):
        w = graph.const.get(prod.inputs[1]) if len(prod.inputs) > 1 else None
        if not isinstance(w, np.ndarray):
            return None
        return fold_factors_into_conv(graph, prod, tail, _factors(graph, tail, c, w.ndim), names)
    if op in ("Gemm", "MatMul") and is_standard(prod, op):
        return fold_factors_into_gemm(graph, prod, tail, _factors(graph, tail, c, 2), names)
    if op == "BatchNormalization" and is_standard(prod, op):
        return _fold_into_batchnorm(graph, prod, tail, c, names)
    return None


def fold_channel_affine(graph: PlanGraph) -> list[PlanNode]:
    """Fold each per-channel constant Mul, Div, Add or Sub into the Conv, ConvTranspose, Gemm, MatMul or
    BatchNormalization before it (module docstring: the preconditions); chains fold one after the other."""
    nodes = list(graph.nodes)
    if graph.facts is None or not any(bn.node.op_type in _OPS for bn in nodes):
        return nodes
    names = Names(graph)
    producer = dict(graph.producer)
    uses = graph.uses
    drop: set[int] = set()
    for k, tail in enumerate(nodes):
        if tail.node.op_type not in _OPS:
            continue
        found = _operand(graph, tail)
        if found is None:
            continue
        y, c = found
        p = producer.get(y)
        if p is None or p in drop or uses.get(y) != 1 or y in graph.outputs:
            continue
        out = _fold(graph, nodes[p], tail, c, names)
        if out is None:
            continue
        nodes[k] = out
        drop.add(p)
        producer[tail.outputs[0]] = k
    return [bn for j, bn in enumerate(nodes) if j not in drop]
