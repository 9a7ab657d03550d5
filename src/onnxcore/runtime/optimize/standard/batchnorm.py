"""An inference BatchNormalization folded into the Conv, ConvTranspose, Gemm or MatMul it follows (issue 39).

``BatchNormalization(y) = y * s + (B - mean * s)`` with ``s = scale / sqrt(var + epsilon)``, one factor per channel
(axis 1). Where ``y`` is linear in constant weights with output channels on axis 1, the factor goes into the
weights and the shift into the bias: the pair becomes one node of the producer's own operator, which computes the
same values up to rounding (Clause 11.4). The folded weights are computed in float64 from the constants and
rounded once to their element type (the kernels' own BatchNormalization works in the input's type, float32 for
float32: folding in float64 rounds once where the pair rounds twice).

Preconditions, each checked:

- the BatchNormalization is inference as the plan's fusions read it (``training_mode`` 0, ``spatial`` 1, ``is_test``
  before version 7) with one declared output, its four parameters constant, of the weights' float type, one per
  channel;
- the producer's output is read by the BatchNormalization alone and is not a graph output;
- Conv / ConvTranspose: constant weight (and bias, if any), float32 or float64, output channels ``W.shape[0]``
  (Conv) or ``group * W.shape[1]`` (ConvTranspose);
- Gemm: constant ``B`` (and ``C`` if given), its output's axis 1 is the channel axis; the result is
  ``Gemm(A, B', C', alpha, beta=1)``;
- MatMul ``A @ W`` with ``W`` a constant 2-D matrix and ``A`` of rank 2 (known from the graph: only then is axis 1
  of the product the channel axis for every input): the result is ``Gemm(A, W', C')``;
- Gemm and MatMul: the model imports ai.onnx 7 or later (the Gemm made binds there; Gemm-6 broadcast ``C`` only
  with its ``broadcast`` attribute).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from onnxcore.external.mapped import release_pages
from onnxcore.runtime.optimize.affine import bn_parameters
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.standard.emit import Names, is_standard, node_name, opset, rank, standard_node
from onnxcore.runtime.step import PlanNode

__all__ = ["Factors", "fold_batchnorm", "fold_factors_into_conv", "fold_factors_into_gemm"]

Factors = Callable[[np.dtype[Any], int], tuple[np.ndarray, np.ndarray] | None]
"""Per-channel ``(s, shift)`` in float64 for weights of a dtype and a channel count (each of shape ``(channels,)``),
or None where the node after the producer is not such a scale and shift: ``y * s + shift`` on axis 1."""

_PRODUCERS = ("Conv", "ConvTranspose", "Gemm", "MatMul")
_WEIGHT_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _bn_factors(graph: PlanGraph, bn: PlanNode, dtype: np.dtype[Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """(s, shift) in float64 for an inference BatchNormalization with constant parameters of ``dtype``, else None.
    Inference as the plan's fusions read it (:func:`bn_parameters`), and with one declared output only: BN-7 and
    -9 compute training mode for a node that declares more, even left empty."""
    params = bn_parameters(bn, graph.const)
    if params is None or len(bn.outputs) != 1 or any(graph.const[n].dtype != dtype for n in bn.inputs[1:]):
        return None
    scale, bias, mean, var = (np.asarray(p, np.float64) for p in params[:4])
    s = scale / np.sqrt(var + float(params[4]))
    return s, bias - mean * s


def _const(graph: PlanGraph, name: str) -> np.ndarray | None:
    v = graph.const.get(name) if name else None
    return v if isinstance(v, np.ndarray) and v.dtype in _WEIGHT_TYPES else None


def _bn_factors_of(graph: PlanGraph, bn: PlanNode) -> Factors:
    return lambda dtype, _channels: _bn_factors(graph, bn, dtype)


def fold_factors_into_conv(
    graph: PlanGraph, conv: PlanNode, bn: PlanNode, factors: Factors, names: Names
) -> PlanNode | None:
    """``conv`` (a Conv or ConvTranspose) and ``bn`` after it, which computes ``y * s + shift`` per output channel
    (``factors``), as one node of ``conv``'s operator writing ``bn``'s outputs; None where a precondition fails."""
    op = conv.node.op_type
    if len(conv.inputs) < 2 or len(conv.outputs) != 1:
        return None
    w = _const(graph, conv.inputs[1])
    if w is None or w.ndim < 3:
        return None
    b_name = conv.inputs[2] if len(conv.inputs) > 2 else ""
    b = _const(graph, b_name)
    if b_name and (b is None or b.dtype != w.dtype or b.ndim != 1):
        return None
    group = int(conv.kw.get("group", 1))
    channels = w.shape[0] if op == "Conv" else group * w.shape[1]
    found = factors(w.dtype, channels)
    if found is None or found[0].shape != (channels,) or (b is not None and b.shape != (channels,)):
        return None
    s, shift = found
    w64 = w.astype(np.float64)
    if op == "Conv":
        w2 = w64 * s.reshape((-1,) + (1,) * (w.ndim - 1))
    else:  # ConvTranspose: W is [C, M / group, k...]; output channel g * (M / group) + j reads W[g * C / g + c, j]
        c_in, m_g = w.shape[0], w.shape[1]
        if c_in % group:
            return None
        w2 = w64.reshape(group, c_in // group, m_g, *w.shape[2:]) * s.reshape(group, 1, m_g, *(1,) * (w.ndim - 2))
        w2 = w2.reshape(w.shape)
    b2 = shift if b is None else b.astype(np.float64) * s + shift
    # A scale of ones keeps the weight as it is (a shift alone), and a zero shift without a bias adds none (a scale
    # alone): the file never holds a copy of a weight or a bias of zeros it did not need.
    scaled = bool(np.any(s != 1.0))
    w_name = names.fresh(f"{conv.inputs[1]}_bn") if scaled else conv.inputs[1]
    b2_name = names.fresh(f"{b_name or conv.inputs[1]}_bn_bias") if b is not None or np.any(shift != 0.0) else ""
    ins = [conv.inputs[0], w_name, *([b2_name] if b2_name else [])]
    out = standard_node(graph, conv, op, ins, list(bn.outputs),
                        name=node_name((conv, bn), f"{op}_{bn.outputs[0]}"), attributes_of=conv)  # fmt: skip
    if out is None:
        return None
    with np.errstate(over="ignore"):
        w_out = w2.astype(w.dtype)
    if scaled and not np.all(np.isfinite(w_out)) and np.all(np.isfinite(w)):
        return None  # a factor so large a folded weight overflows the type, where the pair's products need not
    if scaled:
        graph.add_constant(w_name, w_out)
    if b2_name:
        graph.add_constant(b2_name, b2.astype(w.dtype))
    return out


def fold_factors_into_gemm(
    graph: PlanGraph, prod: PlanNode, bn: PlanNode, factors: Factors, names: Names
) -> PlanNode | None:
    """Gemm(A, B, C) or MatMul(A, W) (``A`` of rank 2), then ``bn`` computing ``y * s + shift`` over axis 1 (the
    product's columns, ``factors``), as one Gemm writing ``bn``'s outputs; None where a precondition fails."""
    op = prod.node.op_type
    # The result is a Gemm at the model's version: from 7 on, where C broadcasts without an attribute.
    if len(prod.outputs) != 1 or (opset(graph) or 0) < 7:
        return None
    b = _const(graph, prod.inputs[1]) if len(prod.inputs) > 1 else None
    if b is None or b.ndim != 2:
        return None
    if op == "MatMul":
        if rank(graph, prod.inputs[0]) != 2:
            return None
        trans_b, alpha, beta, c = 0, 1.0, 1.0, None
        trans_a = 0
    else:
        trans_a, trans_b = int(prod.kw.get("transA", 0)), int(prod.kw.get("transB", 0))
        alpha, beta = float(prod.kw.get("alpha", 1.0)), float(prod.kw.get("beta", 1.0))
        c_name = prod.inputs[2] if len(prod.inputs) > 2 else ""
        c = _const(graph, c_name)
        if c_name and (c is None or c.dtype != b.dtype or c.ndim > 2):
            return None
        if prod.since < 7:  # Gemm-1 and -6: the broadcast attribute; left alone
            return None
    n = b.shape[0] if trans_b else b.shape[1]
    found = factors(b.dtype, n)
    if found is None or found[0].shape != (n,):
        return None
    s, shift = found
    b2 = _scaled_rows(b, s, trans_b)
    c2 = shift if c is None else (beta * c.astype(np.float64)) * s + shift
    b2_name = names.fresh(f"{prod.inputs[1]}_bn")
    c2_name = names.fresh(f"{(prod.inputs[2] if c is not None else prod.inputs[1])}_bn_bias")
    attrs: dict[str, Any] = {"alpha": alpha, "beta": 1.0, "transA": trans_a, "transB": trans_b}
    out = standard_node(graph, prod, "Gemm", [prod.inputs[0], b2_name, c2_name], list(bn.outputs),
                        name=node_name((prod, bn), f"Gemm_{bn.outputs[0]}"), **attrs)  # fmt: skip
    if out is None:
        return None
    graph.add_constant(b2_name, b2)
    graph.add_constant(c2_name, c2.astype(b.dtype))
    return out


# Rows of a weight scaled at a time: the float64 products of a whole 256 MiB weight would cost four times its size.
_ROW_BLOCK_OCTETS = 8 << 20


def _scaled_rows(b: np.ndarray, s: np.ndarray, trans_b: int) -> np.ndarray:
    """``(b * s)`` over B's output axis (rows with transB, else columns), computed in float64 and rounded to B's
    type, a block of rows at a time (each element as the whole-array expression computes it)."""
    out = np.empty(b.shape, dtype=b.dtype)
    step = max(1, _ROW_BLOCK_OCTETS // max(1, b.shape[1] * 8))
    for i in range(0, b.shape[0], step):
        block = b[i : i + step].astype(np.float64)
        out[i : i + step] = block * (s[i : i + step, None] if trans_b else s[None, :])
        release_pages(b[i : i + step])  # read once: a weight of a mapped file need not stay resident
    return out


def fold_batchnorm(graph: PlanGraph) -> list[PlanNode]:
    """Fold each inference BatchNormalization into the Conv, ConvTranspose, Gemm or MatMul before it (module
    docstring: the preconditions)."""
    nodes = list(graph.nodes)
    if graph.facts is None or not any(bn.node.op_type == "BatchNormalization" for bn in nodes):
        return nodes
    names = Names(graph)
    drop: set[int] = set()
    for k, bn in enumerate(nodes):
        if not is_standard(bn, "BatchNormalization") or not bn.inputs:
            continue
        y = bn.inputs[0]
        p = graph.producer.get(y)
        if p is None or p in drop or graph.uses.get(y) != 1:
            continue
        prod = nodes[p]
        op = prod.node.op_type
        if op not in _PRODUCERS or not is_standard(prod, op):
            continue
        fold = fold_factors_into_conv if op in ("Conv", "ConvTranspose") else fold_factors_into_gemm
        out = fold(graph, prod, bn, _bn_factors_of(graph, bn), names)
        if out is None:
            continue
        nodes[k] = out
        drop.add(p)
    return [bn for j, bn in enumerate(nodes) if j not in drop]
