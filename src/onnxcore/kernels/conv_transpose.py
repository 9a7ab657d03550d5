"""Transposed-direction convolution kernels: ConvTranspose and Col2Im (Clause 8; ONNX 1-2 definitions).

Both scatter windows back into an image. ConvTranspose is the adjoint of Conv: one matmul ``W^T @ X``
per group gives every kernel offset's contribution, which is scattered into the output with one strided
``+=`` per kernel offset. Col2Im sums columns into their image positions.

Float16 and the narrow floats compute in float32 and round once at the end.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels._util import check_elements, int_list, is_narrow_float
from onnxcore.kernels.conv import (
    check_auto_pad,
    check_bias,
    check_conv_shapes,
    col2im_accumulate,
    pads_attr,
    spatial_attr,
    work_dtype,
)
from onnxcore.kernels.registry import kernel

__all__ = ["conv_transpose", "conv_transpose_1", "col2im"]


# ---------------------------------------------------------------------------------------------
# ConvTranspose
# ---------------------------------------------------------------------------------------------


def _convtranspose(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    *,
    auto_pad: str,
    dilations: Any,
    group: int,
    kernel_shape: Any,
    output_padding: Any,
    output_shape: Any,
    pads: Any,
    strides: Any,
    legacy_split: bool,
) -> np.ndarray:
    check_conv_shapes(x.shape, w.shape, group, kernel_shape, transpose=True)
    nd = x.ndim - 2
    kernel = list(w.shape[2:])
    st = spatial_attr(strides, nd, 1, "strides", least=1)
    dil = spatial_attr(dilations, nd, 1, "dilations", least=1)
    opad = spatial_attr(output_padding, nd, 0, "output_padding", least=0)
    mode = check_auto_pad(auto_pad)
    in_sp = list(x.shape[2:])
    ek = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
    natural = [s * (i - 1) + o + e for s, i, o, e in zip(st, in_sp, opad, ek)]
    target: list[int] | None = None
    if output_shape is not None:
        target = int_list(output_shape)
        if len(target) == nd + 2:
            target = target[2:]
        if len(target) != nd:
            raise EvaluationError(f"output_shape {list(output_shape)} must give {nd} spatial extents")
    elif mode in ("SAME_UPPER", "SAME_LOWER"):
        target = [i * s for i, s in zip(in_sp, st)]
    if target is not None:
        total = [nat - t for nat, t in zip(natural, target)]
        # ConvTranspose-11: SAME_UPPER puts the odd element at the end, anything else at the
        # beginning; ConvTranspose-1's text states the opposite assignment.
        # A negative total (output_shape beyond the natural size) adds outputs; "/2" floors, which
        # is what the test vectors show (test_convtranspose_output_shape: the extra at the end).
        upper_small_begin = (mode == "SAME_UPPER") != legacy_split
        pb = [t // 2 if upper_small_begin else t - t // 2 for t in total]
        out = list(target)
    else:
        if mode == "VALID":
            pb, pe = [0] * nd, [0] * nd
        else:
            pb, pe = pads_attr(pads, nd)
        out = [nat - b - e for nat, b, e in zip(natural, pb, pe)]
        if any(o <= 0 for o in out):
            raise ShapeError(f"ConvTranspose output shape {out} is not positive")
    n_img, c = x.shape[:2]
    cg = c // group
    mg = w.shape[1]
    m = mg * group
    kk = math.prod(kernel)
    full = [s * (i - 1) + e for s, i, e in zip(st, in_sp, ek)]
    for shape, what in (([n_img, m, *kernel, *in_sp], "columns"), ([n_img, m, *full], "image"), ([n_img, m, *out], "")):
        check_elements(shape, f"ConvTranspose {what}".rstrip())
    dt = x.dtype
    wd = work_dtype(dt)
    xw = x.astype(wd, copy=False).reshape(n_img, group, cg, math.prod(in_sp))
    wt = w.astype(wd, copy=False).reshape(group, cg, mg * kk).transpose(0, 2, 1)
    cols = np.matmul(wt, xw).reshape(n_img, m, *kernel, *in_sp)
    buf = col2im_accumulate(cols, kernel, st, dil, in_sp, full)
    y = np.zeros((n_img, m, *out), dtype=wd)
    src, dst = [], []
    for i in range(nd):
        lo = max(pb[i], 0)
        hi = min(full[i], pb[i] + out[i])
        if hi <= lo:
            lo = hi = 0
            src.append(slice(0, 0))
            dst.append(slice(0, 0))
            continue
        src.append(slice(lo, hi))
        dst.append(slice(lo - pb[i], hi - pb[i]))
    y[(slice(None), slice(None)) + tuple(dst)] = buf[(slice(None), slice(None)) + tuple(src)]
    bias = check_bias(b, m)
    if bias is not None:
        y += bias.astype(wd, copy=False).reshape((1, -1) + (1,) * nd)
    return y.astype(dt, copy=False)


@kernel("ConvTranspose", 1)
def conv_transpose_1(
    X: np.ndarray,
    W: np.ndarray,
    B: np.ndarray | None = None,
    *,
    auto_pad: str = "NOTSET",
    dilations: list[int] | None = None,
    group: int = 1,
    kernel_shape: list[int] | None = None,
    output_padding: list[int] | None = None,
    output_shape: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> np.ndarray:
    """ConvTranspose-1: pads generated from ``output_shape`` put the odd element at the end
    unless auto_pad is SAME_UPPER (the reverse of ConvTranspose-11)."""
    return _convtranspose(
        X, W, B, auto_pad=auto_pad, dilations=dilations, group=group, kernel_shape=kernel_shape,
        output_padding=output_padding, output_shape=output_shape, pads=pads, strides=strides, legacy_split=True,
    )  # fmt: skip


@kernel("ConvTranspose", 11, 22)
def conv_transpose(
    X: np.ndarray,
    W: np.ndarray,
    B: np.ndarray | None = None,
    *,
    auto_pad: str = "NOTSET",
    dilations: list[int] | None = None,
    group: int = 1,
    kernel_shape: list[int] | None = None,
    output_padding: list[int] | None = None,
    output_shape: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> np.ndarray:
    """ConvTranspose-11/22: N-D transposed convolution with output_padding and output_shape."""
    return _convtranspose(
        X, W, B, auto_pad=auto_pad, dilations=dilations, group=group, kernel_shape=kernel_shape,
        output_padding=output_padding, output_shape=output_shape, pads=pads, strides=strides, legacy_split=False,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Col2Im
# ---------------------------------------------------------------------------------------------


@kernel("Col2Im", 18)
def col2im(
    input: np.ndarray,
    image_shape: np.ndarray,
    block_shape: np.ndarray,
    *,
    dilations: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> np.ndarray:
    """Col2Im-18: sum the column blocks ``(N, C*prod(block), L)`` back into ``(N, C, *image)``."""
    img = int_list(image_shape)
    blk = int_list(block_shape)
    nd = len(img)
    if len(blk) != nd or nd < 1:
        raise ShapeError(f"image_shape {img} and block_shape {blk} must have the same length")
    if input.ndim != 3:
        raise ShapeError(f"Col2Im input must be 3-D (N, C*prod(block), L), got {input.shape}")
    st = spatial_attr(strides, nd, 1, "strides", least=1)
    dil = spatial_attr(dilations, nd, 1, "dilations", least=1)
    pb, pe = pads_attr(pads, nd)
    kk = math.prod(blk)
    if kk <= 0 or input.shape[1] % kk:
        raise ShapeError(f"input.shape[1]={input.shape[1]} is not a multiple of prod(block_shape)={kk}")
    counts = [(i + b + e - ((k - 1) * d + 1)) // s + 1 for i, b, e, k, d, s in zip(img, pb, pe, blk, dil, st)]
    if any(c <= 0 for c in counts) or math.prod(counts) != input.shape[2]:
        raise ShapeError(f"L={input.shape[2]} does not match the {counts} blocks image_shape {img} allows")
    n_img = input.shape[0]
    c = input.shape[1] // kk
    dt = input.dtype
    wd = work_dtype(dt) if dt.kind == "f" or is_narrow_float(dt) else dt
    cols = input.astype(wd, copy=False).reshape(n_img, c, *blk, *counts)
    full = [i + b + e for i, b, e in zip(img, pb, pe)]
    check_elements([n_img, c, *full], "Col2Im")
    buf = col2im_accumulate(cols, blk, st, dil, counts, full)
    sl = (slice(None), slice(None)) + tuple(slice(b, b + i) for b, i in zip(pb, img))
    return np.ascontiguousarray(buf[sl]).astype(dt, copy=False)
