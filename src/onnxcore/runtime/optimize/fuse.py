"""Fusions into a Conv or a Gemm: folded per-channel steps, an in-place Relu or a closing activation (SiLU, GELU,
HardSwish) with the bias, prepacked weights, a Conv's path measured per shape, Winograd (the fused kernels:
``onnxcore.kernels.fused.conv``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.runtime.optimize._common import (
    conv_weights,
    fused_node,
    fused_step,
    is_relu,
    per_channel_values,
    rebound,
    transposed,
)
from onnxcore.runtime.optimize.affine import affine_step, bn_parameters
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["fuse_conv_chains", "fuse_relu", "measure_conv_paths", "prepack_gemm", "use_winograd"]


def _activation(bn: PlanNode, x: str) -> dict[str, Any] | None:
    """When ``bn`` is an activation the fused ConvActivation kernel takes, applied to ``x`` alone: its attributes
    (the activation's label, and for HardSwish the node's own kernel)."""
    if bn.inputs != [x] or len(bn.outputs) != 1 or bn.call is None or bn.outer:
        return None
    if bn.step_kernel == "SiLUPattern":
        return {"activation": "SiLU"}
    if bn.step_kernel == "GeluPattern":
        return {"activation": "GELU"} if bn.step_attrs.get("approximate", "none") == "none" else None
    node = bn.node
    if node.domain not in ("", "ai.onnx") or bn.step_kernel:
        return None
    if node.op_type == "Gelu" and bn.kw.get("approximate", "none") == "none":
        return {"activation": "GELU"}
    if node.op_type == "HardSwish" and not bn.kw:
        return {"activation": "HardSwish", "act": bn.call}
    return None


def _clip_bounds(bn: PlanNode, x: str, const: dict[str, Any], dtype: np.dtype[Any]) -> dict[str, Any] | None:
    """When ``bn`` is a default-domain Clip of ``x`` with both bounds constant (scalar inputs, or Clip-1/6's
    attributes): the ConvActivation attributes of a Clip in place (ReLU6 as exporters write it)."""
    node = bn.node
    if node.op_type != "Clip" or node.domain not in ("", "ai.onnx") or bn.step_kernel or bn.outer or bn.call is None:
        return None
    if not bn.inputs or bn.inputs[0] != x or len(bn.outputs) != 1:
        return None
    if len(bn.inputs) > 1:
        names = bn.inputs[1:3]
        values = [const.get(n) if n else None for n in names]
        if len(values) != 2 or bn.kw or any(not isinstance(v, np.ndarray) or v.size != 1 for v in values):
            return None
        lo, hi = (np.asarray(v).reshape(()) for v in values)
    elif set(bn.kw) == {"min", "max"}:
        lo, hi = np.asarray(bn.kw["min"]), np.asarray(bn.kw["max"])
    else:
        return None
    # The bounds in the Conv's type, as the Clip kernel casts them to its input's.
    return {"activation": "Clip", "bounds": (lo.astype(dtype), hi.astype(dtype))}


def fuse_conv_chains(graph: PlanGraph) -> list[PlanNode]:
    """Fold per-channel affine steps and a closing Relu that follow a Conv with constant weights into it.

    From a Conv whose weights (and bias) are constants, the chain continues while the running value has
    exactly one reader and is not a graph output, through inference BatchNormalization with constant
    parameters and Mul/Add with a float constant that varies along the channel axis only; a Relu ends it.
    The steps compose to ``conv(x) * k + s`` per output channel, so the Conv gets weights ``w * k`` and
    bias ``b * k + s`` (computed in float64, stored in the weights' type) and the Relu runs in place on its
    output (:class:`InPlaceRelu`). What onnxruntime does at session creation; results agree to rounding
    (Clause 11.4). A closing SiLU, erf GELU, HardSwish or Clip with constant bounds makes the step the fused
    ConvActivation kernel (the Clip in place: the same values, one array fewer). ``const``
    holds the values that are the same on every run; the new weights and biases are returned by name.
    """
    nodes, const = list(graph.nodes), graph.const

    uses, reader = graph.uses, graph.last_readers
    drop: set[int] = set()
    for j, conv in enumerate(nodes):
        weights = conv_weights(conv, const)
        if weights is None:
            continue
        w, b0 = weights
        m, rank = w.shape[0], w.ndim
        k = np.ones(m)
        shift = np.zeros(m)
        relu = False
        act: dict[str, Any] | None = None  # a closing activation (the ConvActivation kernel's attributes)
        members: list[int] = []
        current = conv.outputs[0]
        while uses.get(current) == 1 and current in reader:
            i = reader[current]
            nxt = nodes[i]
            bnp = bn_parameters(nxt, const)
            if bnp is not None:
                scale, bias, mean, var, eps = (np.asarray(v, np.float64) for v in bnp)
                if scale.size != m or nxt.inputs[0] != current:
                    break
                kb = scale / np.sqrt(var + eps)
                k, shift = k * kb, shift * kb + (bias - mean * kb)
            elif is_relu(nxt):
                relu = True
            elif w.dtype in (np.float32, np.float64) and (found := _activation(nxt, current)) is not None:
                act = found
            elif (found := _clip_bounds(nxt, current, const, w.dtype)) is not None:
                act = found
            else:
                step = affine_step(nxt, current, const)
                c = None if step is None else per_channel_values(step[1], w.dtype, m, rank)
                if step is None or c is None:
                    break
                if step[0] == "mul":
                    k, shift = k * c, shift * c
                else:
                    shift = shift + c
            members.append(i)
            current = nxt.outputs[0]
            if relu or act is not None:
                break
        if not members:
            continue
        inputs = list(conv.inputs)
        if len(members) > relu + (act is not None):  # affine steps to fold (an activation alone keeps the weights)
            kshape = (m,) + (1,) * (rank - 1)
            w2 = (w.astype(np.float64) * k.reshape(kshape)).astype(w.dtype)
            b2 = ((np.zeros(m) if b0 is None else b0.astype(np.float64).reshape(m)) * k + shift).astype(w.dtype)
            wname, bname = f"{current}\x00fused_w", f"{current}\x00fused_b"  # a NUL never occurs in a name
            for name, value in ((wname, w2), (bname, b2)):
                value.flags.writeable = False
                graph.add_constant(name, value)
            inputs = [conv.inputs[0], wname, bname]
        assert conv.call is not None
        absorbed = [nodes[i] for i in members]
        if relu:
            # float32/float64 weights: the Conv adds its bias to the finished sums in their type, so the bias may
            # join the Relu's pass (the same values, one pass over the output fewer).
            conv_bias = w.dtype in (np.float32, np.float64) and len(inputs) > 2 and bool(inputs[2])
            nodes[j] = fused_node(conv, "WithRelu", inputs, [current], const, kw=conv.kw, absorbed=absorbed,
                                  may_tuple=None, kernel=conv.call, conv_bias=conv_bias)  # fmt: skip
        elif act is not None:
            nodes[j] = fused_node(conv, "ConvActivation", inputs, [current], const, kw=conv.kw, absorbed=absorbed,
                                  may_tuple=None, conv=conv.call, **act)  # fmt: skip
        else:
            nodes[j] = rebound(conv, conv.call, conv.kw, inputs, [current], absorbed=absorbed)
        drop.update(members)
    return [bn for k, bn in enumerate(nodes) if k not in drop]


def prepack_gemm(graph: PlanGraph) -> list[PlanNode]:
    """Give each Gemm with constant weights and ``transB=1`` its weights transposed once, as a contiguous copy.

    BLAS multiplies by a transposed operand up to 2x slower than by a row-major one (measured on the light
    zoo's fully connected layers and an MLP); the product is the same. Returns the nodes and the new constants
    by name.
    """
    nodes, const = list(graph.nodes), graph.const
    for j, bn in enumerate(nodes):
        node = bn.node
        if node.op_type != "Gemm" or node.domain not in ("", "ai.onnx") or bn.call is None or len(bn.inputs) < 2:
            continue
        w = const.get(bn.inputs[1])
        if not (bn.kw.get("transB", 0) and isinstance(w, np.ndarray) and w.ndim == 2 and w.dtype.kind == "f"):
            continue
        name = f"{bn.inputs[1]}\x00transposed"  # a NUL never occurs in a model's names
        if name not in graph.added:
            wt = transposed(w)
            wt.flags.writeable = False
            graph.add_constant(name, wt)
        inputs = [bn.inputs[0], name, *bn.inputs[2:]]
        nodes[j] = rebound(bn, bn.call, {**bn.kw, "transB": 0}, inputs, list(bn.outputs))
    return nodes


# Kernels whose result is always a new array (never one of their inputs), so a Relu may overwrite it.
_FRESH_RESULT = frozenset({"Add", "Sub", "Mul", "Sum", "Gemm", "MatMul"})


def fuse_relu(graph: PlanGraph) -> list[PlanNode]:
    """Apply a Relu in place on the result of the node before it, when the Relu is that result's only reader.

    The residual ``Add -> Relu`` of a ResNet block and the ``Gemm -> Relu`` of a fully connected layer then
    allocate one array, not two (the fused WithRelu kernel; the linear step of
    :func:`~onnxcore.runtime.optimize.linear.fuse_linear` applies the Relu itself, with its bias in one pass; a
    Conv's Relu is fused with the rest of its chain by :func:`fuse_conv_chains`). The values are the same.
    """
    nodes = list(graph.nodes)

    uses, reader = graph.uses, graph.last_readers
    drop: set[int] = set()
    for j, bn in enumerate(nodes):
        node = bn.node
        if node.op_type not in _FRESH_RESULT or node.domain not in ("", "ai.onnx") or bn.call is None:
            continue
        if len(bn.outputs) != 1 or not bn.outputs[0]:
            continue
        k = reader.get(bn.outputs[0])
        if uses.get(bn.outputs[0]) != 1 or k is None or not is_relu(nodes[k]):
            continue
        nodes[j] = fused_node(bn, "WithRelu", list(bn.inputs), list(nodes[k].outputs), {}, kw=dict(bn.kw),
                              absorbed=[nodes[k]], may_tuple=None, kernel=bn.call)  # fmt: skip
        drop.add(k)
    return [bn for k, bn in enumerate(nodes) if k not in drop]


def use_winograd(graph: PlanGraph) -> list[PlanNode]:
    """Give each float32 3x3 Conv with constant weights of at least 16 input and output channels the fused
    WinogradConv kernel, which takes the layers large enough to gain and leaves the rest to the Conv kernel (inside
    a WithRelu or ConvActivation step, as the Conv it calls). Clause 8.2; the error it adds is stated in the
    conformance statement."""
    nodes, const = list(graph.nodes), graph.const
    for j, bn in enumerate(nodes):
        weights = conv_weights(bn, const)
        if weights is None or bn.kw.get("group", 1) != 1:
            continue
        if bn.step_kernel not in ("", "WithRelu", "ConvActivation", "MeasuredConv"):
            continue
        w = weights[0]
        if w.dtype != np.float32 or w.shape[2:] != (3, 3):
            continue
        # Here, with a 3x3 convolution in the plan: the convolution kernels are 4 ms of a session's imports, which a
        # model without one never needs (issue 42, item 3).
        from onnxcore.kernels.fused.conv import MIN_CHANNELS

        if min(w.shape[:2]) < MIN_CHANNELS:
            continue
        assert bn.call is not None
        ins, outs, kw = list(bn.inputs), list(bn.outputs), dict(bn.kw)
        if bn.step_kernel == "WithRelu":
            attrs = {**bn.step_attrs, "kernel": fused_step("WinogradConv", conv=bn.step_attrs["kernel"])}
            nodes[j] = fused_node(bn, "WithRelu", ins, outs, const, kw=kw, may_tuple=None, **attrs)
        elif bn.step_kernel == "ConvActivation":
            attrs = {**bn.step_attrs, "conv": fused_step("WinogradConv", conv=bn.step_attrs["conv"])}
            nodes[j] = fused_node(bn, "ConvActivation", ins, outs, const, kw=kw, may_tuple=None, **attrs)
        else:
            nodes[j] = fused_node(bn, "WinogradConv", ins, outs, const, kw=kw, may_tuple=None, conv=bn.call)
    return nodes


def measure_conv_paths(graph: PlanGraph) -> list[PlanNode]:
    """Give each 2-D Conv with constant float weights the fused MeasuredConv kernel, which times the paths that
    take the layer on the first run of each shape and keeps the fastest (inside a WithRelu or ConvActivation step,
    as the Conv it calls; Winograd, chosen by its rule, calls it for the layers it leaves). Clause 8.2: every path
    computes the Conv's sums, in its own order."""
    nodes, const = list(graph.nodes), graph.const
    for j, bn in enumerate(nodes):
        weights = conv_weights(bn, const)
        if weights is None or bn.step_kernel not in ("", "WithRelu", "ConvActivation"):
            continue
        if weights[0].ndim != 4:
            continue
        assert bn.call is not None
        ins, outs, kw = list(bn.inputs), list(bn.outputs), dict(bn.kw)
        if bn.step_kernel == "WithRelu":
            attrs = {**bn.step_attrs, "kernel": fused_step("MeasuredConv", conv=bn.step_attrs["kernel"])}
            nodes[j] = fused_node(bn, "WithRelu", ins, outs, const, kw=kw, may_tuple=None, **attrs)
        elif bn.step_kernel == "ConvActivation":
            attrs = {**bn.step_attrs, "conv": fused_step("MeasuredConv", conv=bn.step_attrs["conv"])}
            nodes[j] = fused_node(bn, "ConvActivation", ins, outs, const, kw=kw, may_tuple=None, **attrs)
        else:
            nodes[j] = fused_node(bn, "MeasuredConv", ins, outs, const, kw=kw, may_tuple=None, conv=bn.call)
    return nodes
