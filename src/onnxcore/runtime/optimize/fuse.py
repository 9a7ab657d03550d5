"""Fusions into a Conv or a Gemm: folded per-channel steps, an in-place Relu or a closing activation (SiLU, GELU,
HardSwish) with the bias, prepacked weights, Winograd."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.kernels._act_accel import gelu_bias_accel, hard_swish_bias_accel, swish_accel
from onnxcore.kernels._winograd import MIN_CHANNELS, WinogradConv
from onnxcore.kernels.elementwise import gelu
from onnxcore.runtime.optimize._common import (
    InPlaceRelu,
    conv_weights,
    is_relu,
    per_channel_values,
    rebound,
    transposed,
    use_counts,
)
from onnxcore.runtime.optimize.affine import affine_step, bn_parameters
from onnxcore.runtime.optimize.patterns import FusedPattern, silu
from onnxcore.runtime.optimize.preactivation import PreActivatedConv
from onnxcore.runtime.step import PlanNode

__all__ = ["ConvActivation", "fuse_conv_chains", "fuse_relu", "prepack_gemm", "use_winograd"]


class ConvActivation:
    """A Conv followed by an activation (SiLU, the erf GELU or HardSwish, each one step of the plan): the Conv
    without its bias, then the bias and the activation in one pass over the output (``fused``: a compiled loop, or
    None when it does not take the types), else the bias added in place, as the Conv kernel adds it, and the
    activation's own step. Only for float32 and float64 weights, where the Conv adds its bias to the finished sums
    in the same type (so the sums are the same); ``label`` names the activation."""

    __slots__ = ("act", "call", "fused", "label")

    def __init__(
        self,
        call: Callable[..., Any],
        label: str,
        act: Callable[[np.ndarray], Any],
        fused: Callable[[np.ndarray, np.ndarray], np.ndarray | None],
    ) -> None:
        self.call, self.label, self.act, self.fused = call, label, act, fused

    def with_call(self, call: Callable[..., Any]) -> ConvActivation:
        """The same activation after another Conv kernel (Winograd's)."""
        return ConvActivation(call, self.label, self.act, self.fused)

    def __call__(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, **kw: Any) -> np.ndarray:
        y = self.call(x, w, None, **kw)
        if b is not None:
            fast = self.fused(y, b)
            if fast is not None:
                return fast
            bb = b.reshape((1, -1) + (1,) * (y.ndim - 2))
            if y.flags.writeable and y.dtype == np.result_type(y, b):
                y += bb
            else:
                y = y + bb
        return np.asarray(self.act(y))


def _swish_bias(y: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    return swish_accel(y, 1.0, b)


def _activation(bn: PlanNode, x: str) -> tuple[str, Callable[[np.ndarray], Any], Any] | None:
    """When ``bn`` is an activation :class:`ConvActivation` takes, applied to ``x`` alone: its label, its step (a
    call of one array) and the compiled pass of bias and activation."""
    if bn.inputs != [x] or len(bn.outputs) != 1 or bn.call is None or bn.outer:
        return None
    call = bn.call
    if isinstance(call, FusedPattern):
        if call.label == "SiLU":
            return "SiLU", silu, _swish_bias
        if call.label == "GELU (erf)":
            return "GELU", gelu, gelu_bias_accel
        return None
    node = bn.node
    if node.domain not in ("", "ai.onnx"):
        return None
    if node.op_type == "Gelu" and bn.kw.get("approximate", "none") == "none":
        return "GELU", gelu, gelu_bias_accel
    if node.op_type == "HardSwish" and not bn.kw:
        return "HardSwish", call, hard_swish_bias_accel
    return None


def fuse_conv_chains(
    nodes: list[PlanNode], const: Mapping[str, Any], outputs: Sequence[str]
) -> tuple[list[PlanNode], dict[str, Any]]:
    """Fold per-channel affine steps and a closing Relu that follow a Conv with constant weights into it.

    From a Conv whose weights (and bias) are constants, the chain continues while the running value has
    exactly one reader and is not a graph output, through inference BatchNormalization with constant
    parameters and Mul/Add with a float constant that varies along the channel axis only; a Relu ends it.
    The steps compose to ``conv(x) * k + s`` per output channel, so the Conv gets weights ``w * k`` and
    bias ``b * k + s`` (computed in float64, stored in the weights' type) and the Relu runs in place on its
    output (:class:`InPlaceRelu`). What onnxruntime does at session creation; results agree to rounding
    (Clause 11.4). ``const`` holds the values that are the same on every run; the new weights and biases are
    returned by name.
    """

    added: dict[str, Any] = {}
    uses = use_counts(nodes, outputs)
    reader = {n: k for k, bn in enumerate(nodes) for n in bn.inputs if n}
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
        act: tuple[str, Callable[[np.ndarray], Any], Any] | None = None  # a closing activation (ConvActivation)
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
                added[name] = value
            inputs = [conv.inputs[0], wname, bname]
        assert conv.call is not None
        call: Callable[..., Any] = conv.call
        if relu:
            call = InPlaceRelu(conv.call)
        elif act is not None:
            call = ConvActivation(conv.call, *act)
        nodes[j] = rebound(conv, call, conv.kw, inputs, [current], absorbed=[nodes[i] for i in members])
        drop.update(members)
    return [bn for k, bn in enumerate(nodes) if k not in drop], added


def prepack_gemm(nodes: list[PlanNode], const: Mapping[str, Any]) -> tuple[list[PlanNode], dict[str, Any]]:
    """Give each Gemm with constant weights and ``transB=1`` its weights transposed once, as a contiguous copy.

    BLAS multiplies by a transposed operand up to 2x slower than by a row-major one (measured on the light
    zoo's fully connected layers and an MLP); the product is the same. Returns the nodes and the new constants
    by name.
    """
    added: dict[str, Any] = {}
    for j, bn in enumerate(nodes):
        node = bn.node
        if node.op_type != "Gemm" or node.domain not in ("", "ai.onnx") or bn.call is None or len(bn.inputs) < 2:
            continue
        w = const.get(bn.inputs[1])
        if not (bn.kw.get("transB", 0) and isinstance(w, np.ndarray) and w.ndim == 2 and w.dtype.kind == "f"):
            continue
        name = f"{bn.inputs[1]}\x00transposed"  # a NUL never occurs in a model's names
        if name not in added:
            wt = transposed(w)
            wt.flags.writeable = False
            added[name] = wt
        inputs = [bn.inputs[0], name, *bn.inputs[2:]]
        nodes[j] = rebound(bn, bn.call, {**bn.kw, "transB": 0}, inputs, list(bn.outputs))
    return nodes, added


# Kernels whose result is always a new array (never one of their inputs), so a Relu may overwrite it.
_FRESH_RESULT = frozenset({"Add", "Sub", "Mul", "Sum", "Gemm", "MatMul"})


def fuse_relu(nodes: list[PlanNode], outputs: Sequence[str]) -> list[PlanNode]:
    """Apply a Relu in place on the result of the node before it, when the Relu is that result's only reader.

    The residual ``Add -> Relu`` of a ResNet block and the ``Gemm -> Relu`` of a fully connected layer then
    allocate one array, not two (:class:`InPlaceRelu`; a Conv's Relu is fused with the rest of its chain by
    :func:`fuse_conv_chains`). The values are the same.
    """

    uses = use_counts(nodes, outputs)
    reader = {n: k for k, bn in enumerate(nodes) for n in bn.inputs if n}
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
        nodes[j] = rebound(
            bn, InPlaceRelu(bn.call), dict(bn.kw), list(bn.inputs), list(nodes[k].outputs), absorbed=[nodes[k]]
        )
        drop.add(k)
    return [bn for k, bn in enumerate(nodes) if k not in drop]


def use_winograd(nodes: list[PlanNode], const: Mapping[str, Any]) -> list[PlanNode]:
    """Give each float32 3x3 Conv with constant weights of at least 16 input and output channels the Winograd
    kernel (:class:`onnxcore.kernels._winograd.WinogradConv`), which takes the layers large enough to gain
    and leaves the rest to the Conv kernel. Clause 8.2; the error it adds is stated in the conformance
    statement."""
    for j, bn in enumerate(nodes):
        weights = conv_weights(bn, const)
        call = bn.call
        if weights is None or isinstance(call, PreActivatedConv) or bn.kw.get("group", 1) != 1:
            continue
        w = weights[0]
        if w.dtype != np.float32 or w.shape[2:] != (3, 3) or min(w.shape[:2]) < MIN_CHANNELS:
            continue
        assert call is not None
        if isinstance(call, InPlaceRelu):
            wrapped: Any = InPlaceRelu(WinogradConv(call.call))
        elif isinstance(call, ConvActivation):
            wrapped = call.with_call(WinogradConv(call.call))
        else:
            wrapped = WinogradConv(call)
        nodes[j] = rebound(bn, wrapped, dict(bn.kw), list(bn.inputs), list(bn.outputs))
    return nodes
