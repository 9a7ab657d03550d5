"""One-dimensional convolutions with constant weights as one matrix product of the weights and the taps' slices
(Clause 8.2): the matcher of the fused Conv1dTaps kernel (``onnxcore.kernels.fused.conv``).

A 1-D Conv (Whisper's audio front end, say: 80 -> 128 channels, kernel 3) is a product of the weights
``(M, C * K)`` with the im2col matrix ``(C * K, L)``; the Conv kernel builds that matrix through numpy's window
views, which costs a third of such a node. Here the matrix is filled by ``K`` strided slice copies of the (padded)
input, row ``c * K + t`` holding what tap ``t`` of channel ``c`` reads at every output position, and multiplied by
the weights in their own layout ``(M, C * K)``: one BLAS call (with two BLAS threads 15-20 % faster than one
product per tap summed, as the previous version of this step did: a larger inner extent splits better). The terms
of each output's sum are the kernel's; BLAS may add them in another order (Clause 11.4).

The Conv1dTaps step runs the Conv kernel on an input shape's first call for its checks and refusals (a bad
shape, the limits on what it allocates), and, when the output it gives has the extent the attributes give,
returns the step's own result instead, then computes that shape by it alone: every run of one input gives the
same bits, the first included. Any other input (another type or rank, a refused shape) keeps the kernel. This
is a plan-time step beside the Conv kernel (``kernels/conv.py``), which is left as it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.runtime.optimize._common import fused_node, fused_step
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["fast_conv1d"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def fast_conv1d(graph: PlanGraph) -> list[PlanNode]:
    """Give each ai.onnx Conv of rank 3 with constant float weights of a kernel of 2 taps or more, group 1,
    explicit pads (``auto_pad`` NOTSET or VALID) and a constant bias or none the fused Conv1dTaps kernel (as the
    Conv of its ConvActivation step when an activation is fused into it)."""
    nodes, const = list(graph.nodes), graph.const
    for j, bn in enumerate(nodes):
        node = bn.node
        if node.op_type != "Conv" or node.domain not in ("", "ai.onnx") or bn.call is None or bn.outer:
            continue
        # A Conv with its activation fused (ConvActivation: Whisper's Conv then GELU) gets the taps as its Conv,
        # which it calls without the bias; any other fusion is left as it is.
        activation = bn.step_kernel == "ConvActivation"
        if (bn.fused or bn.step_kernel) and not activation:
            continue
        if not 2 <= len(bn.inputs) <= 3 or len(bn.outputs) != 1:
            continue
        w = const.get(bn.inputs[1])
        b = const.get(bn.inputs[2]) if len(bn.inputs) == 3 and bn.inputs[2] else None
        if not isinstance(w, np.ndarray) or w.ndim != 3 or w.dtype not in _FLOATS or w.shape[2] < 2 or not w.size:
            continue
        if len(bn.inputs) == 3 and bn.inputs[2]:
            if not (isinstance(b, np.ndarray) and b.dtype == w.dtype and b.shape == (w.shape[0],)):
                continue
        kw = bn.kw
        auto_pad = kw.get("auto_pad", "NOTSET")
        auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
        if int(kw.get("group", 1)) != 1 or auto_pad not in ("NOTSET", "VALID"):
            continue
        pads = [0, 0] if auto_pad == "VALID" or kw.get("pads") is None else [int(p) for p in kw["pads"]]
        strides = [int(s) for s in kw.get("strides") or [1]]
        dilations = [int(d) for d in kw.get("dilations") or [1]]
        shape = kw.get("kernel_shape")
        if len(pads) != 2 or min(pads) < 0 or len(strides) != 1 or len(dilations) != 1:
            continue
        if strides[0] < 1 or dilations[0] < 1 or (shape is not None and [int(k) for k in shape] != [w.shape[2]]):
            continue
        geometry: dict[str, Any] = {"pads": (pads[0], pads[1]), "stride": strides[0], "dilation": dilations[0]}
        ins, outs = list(bn.inputs), list(bn.outputs)
        if activation:
            taps = fused_step("Conv1dTaps", (None, w), conv=bn.step_attrs["conv"], with_bias=False, **geometry)
            attrs = {**bn.step_attrs, "conv": taps}
            nodes[j] = fused_node(bn, "ConvActivation", ins, outs, const, kw=dict(kw), absorbed=bn.fused, **attrs)
        else:
            nodes[j] = fused_node(bn, "Conv1dTaps", ins, outs, const, kw=dict(kw), conv=bn.call, **geometry)
    return nodes
