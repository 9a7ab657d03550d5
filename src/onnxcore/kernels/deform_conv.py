"""The DeformConv kernel (ONNX 19, 22): a convolution whose taps read the input at learned offsets, bilinearly
interpolated, optionally modulated by a mask; its geometry is the Conv kernel's (:func:`onnxcore.kernels.conv.
conv_geometry`)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels.conv import check_bias, conv_geometry, work_dtype
from onnxcore.kernels.registry import kernel

__all__ = ["deform_conv"]


def _deform_conv(
    x: np.ndarray,
    w: np.ndarray,
    offset: np.ndarray,
    b: np.ndarray | None,
    mask: np.ndarray | None,
    *,
    dilations: Any,
    group: int,
    kernel_shape: Any,
    offset_group: int,
    pads: Any,
    strides: Any,
) -> np.ndarray:
    st, dil, pb, _, out = conv_geometry(
        x.shape, w.shape, dilations=dilations, group=group, kernel_shape=kernel_shape, pads=pads, strides=strides
    )
    nd = x.ndim - 2
    n_img, c = x.shape[:2]
    kernel = list(w.shape[2:])
    in_sp = list(x.shape[2:])
    if offset_group < 1 or c % offset_group:
        raise EvaluationError(f"offset_group={offset_group} must be positive and divide C={c}")
    og = offset_group
    kk = math.prod(kernel)
    p_out = math.prod(out)
    if offset.shape != (n_img, og * kk * nd, *out):
        raise ShapeError(f"offset shape {offset.shape} != {(n_img, og * kk * nd, *out)}")
    if mask is not None and mask.shape != (n_img, og * kk, *out):
        raise ShapeError(f"mask shape {mask.shape} != {(n_img, og * kk, *out)}")
    dt = x.dtype
    wd = work_dtype(dt)
    xf = x.astype(wd, copy=False).reshape(n_img, og, c // og, math.prod(in_sp))
    off = offset.astype(wd, copy=False).reshape(n_img, og, kk, nd, p_out)
    # Sampling position of every (image, offset group, kernel offset, output position) along each axis.
    grids = np.meshgrid(*(np.arange(o) for o in out), indexing="ij")
    koffs = np.array(list(itertools.product(*(range(k) for k in kernel))), dtype=np.int64).reshape(kk, nd)
    pos = []
    for d in range(nd):
        base = grids[d].reshape(1, p_out) * st[d] - pb[d] + koffs[:, d : d + 1] * dil[d]  # (kk, P)
        pos.append(base.astype(wd) + off[:, :, :, d, :])  # (N, og, kk, P)
    flo = [np.floor(p) for p in pos]
    frac = [p - f for p, f in zip(pos, flo)]
    flo_i = [f.astype(np.int64) for f in flo]
    sp_strides = [math.prod(in_sp[d + 1 :]) for d in range(nd)]
    sampled = np.zeros((n_img, og, c // og, kk * p_out), dtype=wd)
    for corner in itertools.product((0, 1), repeat=nd):
        weight = np.ones_like(pos[0])
        valid = np.ones(pos[0].shape, dtype=bool)
        lin = np.zeros(pos[0].shape, dtype=np.int64)
        for d, cd in enumerate(corner):
            idx = flo_i[d] + cd
            weight = weight * (frac[d] if cd else 1 - frac[d])
            valid &= (idx >= 0) & (idx < in_sp[d])
            lin += np.clip(idx, 0, in_sp[d] - 1) * sp_strides[d]
        weight = np.where(valid, weight, 0).reshape(n_img, og, 1, kk * p_out)
        vals = np.take_along_axis(xf, lin.reshape(n_img, og, 1, kk * p_out), axis=3)
        sampled += vals * weight
    sampled = sampled.reshape(n_img, og, c // og, kk, p_out)
    if mask is not None:
        sampled *= mask.astype(wd, copy=False).reshape(n_img, og, 1, kk, p_out)
    m = w.shape[0]
    cg, mg = c // group, m // group
    cols = sampled.reshape(n_img, group, cg * kk, p_out)
    y = np.matmul(w.astype(wd, copy=False).reshape(group, mg, cg * kk), cols).reshape(n_img, m, *out)
    bias = check_bias(b, m)
    if bias is not None:
        y += bias.astype(wd, copy=False).reshape((1, -1) + (1,) * nd)
    return y.astype(dt, copy=False)


@kernel("DeformConv", 19, 22)
def deform_conv(
    X: np.ndarray,
    W: np.ndarray,
    offset: np.ndarray,
    B: np.ndarray | None = None,
    mask: np.ndarray | None = None,
    *,
    dilations: list[int] | None = None,
    group: int = 1,
    kernel_shape: list[int] | None = None,
    offset_group: int = 1,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> np.ndarray:
    """DeformConv-19/22: N-D deformable convolution, bilinear sampling (zero outside the input)."""
    return _deform_conv(
        X, W, offset, B, mask, dilations=dilations, group=group, kernel_shape=kernel_shape,
        offset_group=offset_group, pads=pads, strides=strides,
    )  # fmt: skip
