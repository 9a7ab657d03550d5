"""Vector-Jacobian products of MatMul, Gemm, Conv, AveragePool, MaxPool and BatchNormalization (inference).

See :mod:`onnxcore.runtime.gradient_rules` for what a rule receives and returns. The convolution rules reuse
the window helpers of :mod:`onnxcore.kernels.conv`: the gradient of the input is the transposed
convolution of the output gradient (a scatter-add of the weight-weighted windows, ``col2im_accumulate``) and
the gradient of the weights is the correlation of the padded input with the output gradient.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from onnxcore.kernels.conv import col2im_accumulate, conv_pads, pad_spatial, spatial_attr, window_view
from onnxcore.runtime.gradient_rules import VJP, GradientRule, Grads, unbroadcast
from onnxcore.runtime.step import PlanNode

__all__ = ["NN_CHECKS", "NN_RULES"]


def _matmul(a: VJP) -> Grads:
    dt = a.wdt
    A = np.asarray(a.ins[0], dt)
    B = np.asarray(a.ins[1], dt)
    # A 1-D operand is a row (A) or a column (B) whose added axis the result drops (numpy.matmul semantics).
    a2 = A[None, :] if A.ndim == 1 else A
    b2 = B[:, None] if B.ndim == 1 else B
    out_shape = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2]) + (a2.shape[-2], b2.shape[-1])
    g = a.g.reshape(out_shape)
    ga = unbroadcast(g @ np.swapaxes(b2, -1, -2), a2.shape).reshape(A.shape) if a.need[0] else None
    gb = unbroadcast(np.swapaxes(a2, -1, -2) @ g, b2.shape).reshape(B.shape) if a.need[1] else None
    return [ga, gb]


def _gemm(a: VJP) -> Grads:
    dt = a.wdt
    g = a.g
    A = np.asarray(a.ins[0], dt)
    B = np.asarray(a.ins[1], dt)
    alpha = dt.type(a.attr("alpha", 1.0))
    beta = dt.type(a.attr("beta", 1.0))
    ta, tb = int(a.attr("transA", 0)), int(a.attr("transB", 0))
    a_op = A.T if ta else A
    b_op = B.T if tb else B
    out: Grads = [None, None]
    if a.need[0]:
        ga = alpha * (g @ b_op.T)  # gradient of op(A)
        out[0] = ga.T if ta else ga
    if a.need[1]:
        gb = alpha * (a_op.T @ g)
        out[1] = gb.T if tb else gb
    if len(a.ins) > 2:
        C = a.ins[2]
        # C is broadcast to (M, N) unidirectionally (or, before version 7, with broadcast=1).
        out.append(beta * unbroadcast(g, np.shape(C)) if C is not None and a.need[2] else None)
    return out


def _conv(a: VJP) -> Grads:
    dt = a.wdt
    x = np.asarray(a.ins[0], dt)
    w = np.asarray(a.ins[1], dt)
    g = a.g
    n = x.ndim - 2
    kernel = list(w.shape[2:])
    strides = spatial_attr(a.attr("strides"), n, 1, "strides", least=1)
    dilations = spatial_attr(a.attr("dilations"), n, 1, "dilations", least=1)
    pb, pe, out = conv_pads(x.shape[2:], kernel, strides, dilations, a.attr("pads"), a.attr("auto_pad", "NOTSET"))
    group = int(a.attr("group", 1))
    batch, c = x.shape[:2]
    m = w.shape[0]
    cg, mg = c // group, m // group
    k_size, l_size = math.prod(kernel), math.prod(out)
    gcol = g.reshape(batch, group, mg, l_size)
    res: Grads = [None, None]
    if a.need[0]:
        # Transposed convolution: every window gets the weight-weighted output gradient, summed where they overlap.
        wk = w.reshape(group, mg, cg, k_size)
        cols = np.einsum("gmck,ngml->ngckl", wk, gcol).reshape(batch, c, *kernel, *out)
        full = [s + b + e for s, b, e in zip(x.shape[2:], pb, pe)]
        gxp = col2im_accumulate(cols, kernel, strides, dilations, out, full)
        inner = tuple(slice(b, b + s) for b, s in zip(pb, x.shape[2:]))
        res[0] = np.ascontiguousarray(gxp[(slice(None), slice(None)) + inner])
    if a.need[1]:
        # Correlation of the padded input's windows with the output gradient.
        view = window_view(pad_spatial(x, pb, pe), kernel, strides, dilations, out)
        vcol = view.reshape(batch, group, cg, k_size, l_size)
        gw = np.einsum("ngml,ngckl->gmck", gcol, vcol)
        res[1] = gw.reshape(w.shape)
    if len(a.ins) > 2:
        res.append(g.sum(axis=(0, *range(2, g.ndim))) if a.ins[2] is not None and a.need[2] else None)
    return res


def _bn_inference(a: VJP) -> Grads:
    dt = a.wdt
    g = a.g
    x = np.asarray(a.ins[0], dt)
    scale, mean, var = (np.asarray(a.ins[i], dt) for i in (1, 3, 4))
    spatial = int(a.attr("spatial", 1)) if a.since < 9 else 1
    if spatial:
        pshape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        axes: tuple[int, ...] = (0, *range(2, x.ndim))
    else:
        pshape = (1, *x.shape[1:])
        axes = (0,)
    eps = dt.type(a.attr("epsilon", 1e-5))
    s = scale.reshape(pshape)
    inv = 1 / np.sqrt(var.reshape(pshape) + eps)
    centred = x - mean.reshape(pshape)
    gsum = g.sum(axis=axes, keepdims=True)
    grads = [
        g * s * inv,
        (g * centred * inv).sum(axis=axes, keepdims=True),
        gsum,
        -gsum * s * inv,
        (g * centred).sum(axis=axes, keepdims=True) * s * dt.type(-0.5) * inv**3,
    ]
    return [gr.reshape(np.shape(v)) if need else None for gr, v, need in zip(grads, a.ins, a.need)]


def _check_bn(bn: PlanNode) -> str | None:
    if bn.since in (1, 6):
        training = not bn.kw.get("is_test", 0)
    elif bn.since in (7, 9):
        training = len(bn.node.output) > 1
    else:
        training = bool(bn.kw.get("training_mode", 0))
    return "BatchNormalization is differentiated in inference mode only" if training else None


def _pool_geometry(a: VJP, x: np.ndarray) -> tuple[list[int], list[int], list[int], list[int], list[int], list[int]]:
    """(kernel, strides, dilations, pads begin, output extents, padded extents every window fits in)."""
    n = x.ndim - 2
    kernel = spatial_attr(a.attr("kernel_shape"), n, 1, "kernel_shape", least=1)
    strides = spatial_attr(a.attr("strides"), n, 1, "strides", least=1)
    dilations = spatial_attr(a.attr("dilations"), n, 1, "dilations", least=1)
    pb, _pe, _out = conv_pads(x.shape[2:], kernel, strides, dilations, a.attr("pads"), a.attr("auto_pad", "NOTSET"))
    # The output extents are the kernel's (ceil_mode and the version-22 tail rule included).
    out = list(np.shape(a.outs[0])[2:])
    need = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out, strides, kernel, dilations)]
    full = [max(nd, b + i) for nd, b, i in zip(need, pb, x.shape[2:])]
    return kernel, strides, dilations, pb, out, full


def _scatter_windows(cols: np.ndarray, x: np.ndarray, geometry: tuple[list[int], ...]) -> np.ndarray:
    """Add ``cols`` (``(N, C, *kernel, *out)``) back onto the input windows; padding taps are dropped."""
    kernel, strides, dilations, pb, out, full = geometry
    gxp = col2im_accumulate(cols, kernel, strides, dilations, out, full)
    inner = tuple(slice(b, b + i) for b, i in zip(pb, x.shape[2:]))
    return np.ascontiguousarray(gxp[(slice(None), slice(None)) + inner])


def _average_pool(a: VJP) -> Grads:
    dt = a.wdt
    x = np.asarray(a.ins[0], dt)
    geometry = _pool_geometry(a, x)
    kernel, strides, dilations, pb, out, full = geometry
    # Each output is the sum of its window's real taps over a divisor the version's attributes decide
    # (count_include_pad, ceil_mode); the kernel itself tells it: on ones it gives taps / divisor.
    assert a.bn.call is not None
    ratio = np.asarray(a.bn.call(np.ones(x.shape, dt), **a.bn.kw), dt)
    inside = pad_spatial(np.ones((1, 1, *x.shape[2:]), dt), pb, [f - b - i for f, b, i in zip(full, pb, x.shape[2:])])
    taps = window_view(inside, kernel, strides, dilations, out).sum(axis=tuple(range(2, 2 + len(kernel))))
    scaled = a.g * np.where(taps == 0, 0, ratio / np.where(taps == 0, 1, taps))
    cols = np.broadcast_to(scaled.reshape(*scaled.shape[:2], *([1] * len(kernel)), *out), (*x.shape[:2], *kernel, *out))
    return [_scatter_windows(np.ascontiguousarray(cols), x, geometry)]


def _max_pool(a: VJP) -> Grads:
    dt = a.wdt
    x = np.asarray(a.ins[0], dt)
    geometry = _pool_geometry(a, x)
    kernel, strides, dilations, pb, out, full = geometry
    xp = pad_spatial(x, pb, [f - b - i for f, b, i in zip(full, pb, x.shape[2:])], -np.inf)
    k_size = math.prod(kernel)
    view = window_view(xp, kernel, strides, dilations, out).reshape(*x.shape[:2], k_size, *out)
    # The first tap holding the maximum wins, as in the kernel's scan of the window.
    win = np.argmax(view, axis=2)
    hot = np.arange(k_size).reshape(1, 1, k_size, *([1] * len(out))) == win[:, :, None]
    cols = (hot * a.g[:, :, None]).reshape(*x.shape[:2], *kernel, *out)
    return [_scatter_windows(cols, x, geometry)]


NN_RULES: dict[str, GradientRule] = {
    "AveragePool": _average_pool,
    "MaxPool": _max_pool,
    "MatMul": _matmul,
    "Gemm": _gemm,
    "Conv": _conv,
    "BatchNormalization": _bn_inference,
}
"""Rules by operator name (default domain)."""

NN_CHECKS: dict[str, Callable[[PlanNode], str | None]] = {"BatchNormalization": _check_bn}
"""Conditions checked when a node is bound: a reason to refuse it, or None."""
