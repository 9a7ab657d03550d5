"""One-dimensional convolutions with constant weights as one matrix product of the weights and the taps' slices
(Clause 8.2).

A 1-D Conv (Whisper's audio front end, say: 80 -> 128 channels, kernel 3) is a product of the weights
``(M, C * K)`` with the im2col matrix ``(C * K, L)``; the Conv kernel builds that matrix through numpy's window
views, which costs a third of such a node. Here the matrix is filled by ``K`` strided slice copies of the (padded)
input, row ``c * K + t`` holding what tap ``t`` of channel ``c`` reads at every output position, and multiplied by
the weights in their own layout ``(M, C * K)``: one BLAS call (with two BLAS threads 15-20 % faster than one
product per tap summed, as the previous version of this step did: a larger inner extent splits better). The terms
of each output's sum are the kernel's; BLAS may add them in another order (Clause 11.4).

:class:`Conv1dTaps` runs the Conv kernel on an input shape's first call for its checks and refusals (a bad
shape, the limits on what it allocates), and, when the output it gives has the extent the attributes give,
returns the step's own result instead, then computes that shape by it alone: every run of one input gives the
same bits, the first included. Any other input (another type or rank, a refused shape) keeps the kernel. This
is a plan-time step beside the Conv kernel (``kernels/conv.py``), which is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.runtime.optimize._common import rebound
from onnxcore.runtime.optimize.fuse import ConvActivation
from onnxcore.runtime.step import PlanNode

__all__ = ["Conv1dTaps", "fast_conv1d"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class Conv1dTaps:
    """A group-1 1-D Conv with constant weights (and bias) and explicit pads, as one product of the weights and
    the taps' slices of the input."""

    __slots__ = ("bias", "channels", "dilation", "extent", "kernel", "pads", "seen", "stride", "weights")

    def __init__(
        self,
        kernel: Callable[..., Any],
        w: np.ndarray,
        bias: np.ndarray | None,
        pads: tuple[int, int],
        stride: int,
        dilation: int,
    ) -> None:
        self.kernel = kernel
        self.weights = np.ascontiguousarray(w.reshape(w.shape[0], -1))  # (M, C * K): by channel, then by tap
        self.weights.flags.writeable = False
        self.channels, self.extent = int(w.shape[1]), int(w.shape[2])
        self.bias = None if bias is None else bias.reshape(-1, 1)
        self.pads = pads
        self.stride = stride
        self.dilation = dilation
        self.seen: frozenset[tuple[int, ...]] = frozenset()  # input shapes the kernel accepted

    def _extent(self, length: int) -> int:
        k = self.extent
        return (length + self.pads[0] + self.pads[1] - self.dilation * (k - 1) - 1) // self.stride + 1

    def _taps(self, x: np.ndarray) -> np.ndarray:
        n, c, length = x.shape
        pb, pe = self.pads
        s, d = self.stride, self.dilation
        k = self.extent
        out = self._extent(length)
        xp = x
        if pb or pe:
            xp = np.zeros((n, c, length + pb + pe), x.dtype)
            xp[:, :, pb : pb + length] = x
        # Row (channel, tap) of the columns: the input that tap reads for every output position.
        cols = np.empty((n, c, k, out), x.dtype)
        span = s * (out - 1) + 1
        for t in range(k):
            cols[:, :, t, :] = xp[:, :, t * d : t * d + span : s]
        y = np.matmul(self.weights, cols.reshape(n, c * k, out))
        if self.bias is not None:
            y += self.bias
        return y

    def __call__(self, X: Any, W: Any, B: Any = None, **kw: Any) -> Any:
        if type(X) is np.ndarray and X.shape in self.seen and X.dtype == self.weights.dtype:
            return self._taps(X)
        y = self.kernel(X, W, B, **kw)
        if (
            type(X) is np.ndarray
            and type(y) is np.ndarray
            and X.dtype == self.weights.dtype
            and X.ndim == 3
            and X.shape[1] == self.channels
            and y.shape == (X.shape[0], self.weights.shape[0], self._extent(X.shape[2]))
            and y.size
        ):
            # (replaced whole: runs in other threads read a complete set; at most 64 shapes kept)
            self.seen = (self.seen if len(self.seen) < 64 else frozenset()) | {X.shape}
            return self._taps(X)
        return y


def fast_conv1d(nodes: list[PlanNode], const: Mapping[str, Any], outputs: Sequence[str]) -> list[PlanNode]:
    """Give each ai.onnx Conv of rank 3 with constant float weights of a kernel of 2 taps or more, group 1,
    explicit pads (``auto_pad`` NOTSET or VALID) and a constant bias or none its :class:`Conv1dTaps` step (as the
    Conv of its :class:`~onnxcore.runtime.optimize.fuse.ConvActivation` step when an activation is fused into
    it)."""
    del outputs
    for j, bn in enumerate(nodes):
        node = bn.node
        if node.op_type != "Conv" or node.domain not in ("", "ai.onnx") or bn.call is None or bn.outer:
            continue
        # A Conv with its activation fused (ConvActivation: Whisper's Conv then GELU) gets the taps as its Conv,
        # which it calls without the bias; any other fusion is left as it is.
        activation = bn.call if isinstance(bn.call, ConvActivation) else None
        if bn.fused and activation is None:
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
        if activation is not None:
            taps = Conv1dTaps(activation.call, w, None, (pads[0], pads[1]), strides[0], dilations[0])
            step: Callable[..., Any] = activation.with_call(taps)
        else:
            step = Conv1dTaps(bn.call, w, b, (pads[0], pads[1]), strides[0], dilations[0])
        nodes[j] = rebound(bn, step, dict(kw), list(bn.inputs), list(bn.outputs))
        nodes[j].may_tuple = False
    return nodes
