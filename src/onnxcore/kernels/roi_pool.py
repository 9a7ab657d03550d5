"""Pooling by index and by region (Clause 8; ONNX 1-2 definitions): MaxUnpool (scattering by MaxPool's
indices), RoiAlign and MaxRoiPool.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels._util import check_elements, int_list
from onnxcore.kernels.conv import pads_attr, spatial_attr, work_dtype
from onnxcore.kernels.registry import kernel

__all__ = ["max_unpool", "roi_align", "roi_align_10", "max_roi_pool"]


# ---------------------------------------------------------------------------------------------
# MaxUnpool
# ---------------------------------------------------------------------------------------------


@kernel("MaxUnpool", 9, 11, 22)
def max_unpool(
    X: np.ndarray,
    I: np.ndarray,  # noqa: E741 (the schema's name)
    output_shape: np.ndarray | None = None,
    *,
    kernel_shape: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> np.ndarray:
    """MaxUnpool: scatter ``X`` to the flat positions ``I`` of a zero tensor; its shape is
    ``output_shape`` when given, else ``(in - 1) * stride + kernel - pads`` per spatial axis."""
    if X.ndim < 3:
        raise ShapeError(f"X must have rank >= 3, got shape {X.shape}")
    if I.shape != X.shape:
        raise ShapeError(f"I shape {I.shape} differs from X shape {X.shape}")
    nd = X.ndim - 2
    if kernel_shape is None:
        raise EvaluationError("kernel_shape is required")
    kernel = spatial_attr(kernel_shape, nd, 1, "kernel_shape", least=1)
    st = spatial_attr(strides, nd, 1, "strides", least=1)
    pb, pe = pads_attr(pads, nd)
    inferred = list(X.shape[:2]) + [(i - 1) * s + k - b - e
                                    for i, s, k, b, e in zip(X.shape[2:], st, kernel, pb, pe)]  # fmt: skip
    if any(s < 0 for s in inferred):
        raise ShapeError(f"MaxUnpool output shape {inferred} is negative")
    shape = inferred
    if output_shape is not None:
        shape = int_list(output_shape)
        if len(shape) != X.ndim or shape[:2] != list(X.shape[:2]) or any(s < 0 for s in shape):
            raise ShapeError(f"output_shape {shape} must be (N, C, ...) of rank {X.ndim} matching X")
    check_elements(shape, "MaxUnpool")
    check_elements(inferred, "MaxUnpool")
    idx = I.astype(np.int64, copy=False).ravel()
    total = math.prod(inferred)
    if idx.size and (idx.min() < 0 or idx.max() >= total):
        raise EvaluationError(f"MaxUnpool index out of range [0, {total})")
    if shape != inferred:
        # The indices number positions of the tensor MaxPool read (the inferred shape); an explicit
        # output_shape keeps each element at the same coordinates (the test vectors' reading).
        coords = np.unravel_index(idx, inferred)
        if any((co >= lim).any() for co, lim in zip(coords, shape)):
            raise EvaluationError(f"MaxUnpool indices do not fit output_shape {shape}")
        idx = np.ravel_multi_index(coords, shape)
    y = np.zeros(math.prod(shape), dtype=X.dtype)
    y[idx] = X.ravel()
    return y.reshape(shape)


# ---------------------------------------------------------------------------------------------
# RoiAlign
# ---------------------------------------------------------------------------------------------


def _axis_samples(
    start: np.ndarray, bin_size: np.ndarray, grid: np.ndarray, pooled: int, size: int, wd: np.dtype[Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Bilinear taps of the sampling grid along one axis.

    Returns (low, high, w_low, w_high), each ``(R, pooled, G)`` with ``G = max(grid)``; samples past
    a RoI's own grid, and coordinates outside ``[-1, size]``, get weight zero.
    """
    g_max = max(int(grid.max()) if grid.size else 1, 1)
    p = np.arange(pooled, dtype=wd)[None, :, None]
    i = np.arange(g_max, dtype=wd)[None, None, :]
    gr = np.maximum(grid, 1).astype(wd)[:, None, None]
    coord = start[:, None, None] + p * bin_size[:, None, None] + (i + 0.5) * bin_size[:, None, None] / gr
    keep = (np.arange(g_max)[None, None, :] < grid[:, None, None]) & (coord >= -1.0) & (coord <= size)
    coord = np.maximum(coord, 0)
    low = np.floor(coord).astype(np.int64)
    at_end = low >= size - 1
    low = np.where(at_end, size - 1, low)
    high = np.where(at_end, size - 1, low + 1)
    coord = np.where(at_end, low.astype(wd), coord)
    frac = coord - low
    w_high = np.where(keep, frac, 0).astype(wd)
    w_low = np.where(keep, 1 - frac, 0).astype(wd)
    return low, high, w_low, w_high


def _roi_align(
    x: np.ndarray,
    rois: np.ndarray,
    batch_indices: np.ndarray,
    *,
    mode: str,
    output_height: int,
    output_width: int,
    sampling_ratio: int,
    spatial_scale: float,
    half_pixel: bool,
) -> np.ndarray:
    if x.ndim != 4:
        raise ShapeError(f"RoiAlign X must be 4-D (N, C, H, W), got {x.shape}")
    if rois.ndim != 2 or rois.shape[1] != 4:
        raise ShapeError(f"rois must have shape (num_rois, 4), got {rois.shape}")
    if batch_indices.shape != (rois.shape[0],):
        raise ShapeError(f"batch_indices must have shape ({rois.shape[0]},), got {batch_indices.shape}")
    if mode not in ("avg", "max"):
        raise EvaluationError(f"RoiAlign mode {mode!r} is not 'avg' or 'max'")
    n_img, c, h, w = x.shape
    r_n = rois.shape[0]
    oh, ow = int(output_height), int(output_width)
    if oh < 1 or ow < 1:
        raise EvaluationError(f"RoiAlign output_height and output_width must be positive, got {oh} and {ow}")
    check_elements([r_n, x.shape[1], oh, ow], "RoiAlign")
    dt = x.dtype
    wd = work_dtype(dt)
    bidx = batch_indices.astype(np.int64)
    if r_n and (bidx.min() < 0 or bidx.max() >= n_img):
        raise EvaluationError(f"batch_indices out of range [0, {n_img})")
    if r_n == 0 or c == 0:
        return np.zeros((r_n, c, oh, ow), dtype=dt)
    rr = rois.astype(wd, copy=False) * wd.type(spatial_scale)
    shift = wd.type(0.5 if half_pixel else 0.0)
    x1, y1, x2, y2 = (rr[:, i] - shift for i in range(4))
    roi_w, roi_h = x2 - x1, y2 - y1
    if not half_pixel:
        # Legacy (output_half_pixel) RoIs are at least one pixel wide and high.
        roi_w, roi_h = np.maximum(roi_w, 1), np.maximum(roi_h, 1)
    bin_h, bin_w = roi_h / oh, roi_w / ow
    if sampling_ratio > 0:
        gh = np.full(r_n, sampling_ratio, dtype=np.int64)
        gw = gh.copy()
    else:
        gh = np.ceil(roi_h / oh).astype(np.int64)
        gw = np.ceil(roi_w / ow).astype(np.int64)
    # The work is sized by the sampling grids, not only the output: an untrusted sampling_ratio (or RoI extent)
    # of 10^6 asked for terabytes before (issue 29). Checked before anything is built from them.
    g_max_h, g_max_w = int(gh.max(initial=1)), int(gw.max(initial=1))
    # Several arrays of each grid's shape are alive at once (taps, weights, coordinates, the one-hot rows): 4 x 8.
    check_elements([r_n, oh, g_max_h, h], "RoiAlign sampling grid (rows)", itemsize=32)
    check_elements([r_n, ow, g_max_w, w], "RoiAlign sampling grid (columns)", itemsize=32)
    if mode == "avg":
        check_elements([r_n, oh, n_img, h], "RoiAlign row weights")
    else:
        check_elements([r_n, oh, g_max_h, ow, g_max_w, c], "RoiAlign samples")
    count = np.maximum(gh * gw, 1).astype(wd)
    yl, yh, wyl, wyh = _axis_samples(y1, bin_h, gh, oh, h, wd)
    xl, xh, wxl, wxh = _axis_samples(x1, bin_w, gw, ow, w, wd)
    xw = x.astype(wd, copy=False)
    if mode == "avg":
        # Bilinear averaging is separable: Y[r] = Ay[r] @ X[b_r] @ Ax[r]^T / count[r].
        hh = np.arange(h)
        ay = ((yl[..., None] == hh) * wyl[..., None] + (yh[..., None] == hh) * wyh[..., None]).sum(axis=2)
        ww = np.arange(w)
        ax = ((xl[..., None] == ww) * wxl[..., None] + (xh[..., None] == ww) * wxh[..., None]).sum(axis=2)
        ay_ext = np.zeros((r_n, oh, n_img, h), dtype=wd)
        ay_ext[np.arange(r_n), :, bidx, :] = ay.astype(wd)
        xt = xw.transpose(0, 2, 1, 3).reshape(n_img * h, c * w)
        z = (ay_ext.reshape(r_n * oh, n_img * h) @ xt).reshape(r_n, oh * c, w)
        y = np.matmul(z, ax.astype(wd).transpose(0, 2, 1)).reshape(r_n, oh, c, ow).transpose(0, 2, 1, 3)
        y = y / count[:, None, None, None]
        return np.ascontiguousarray(y).astype(dt, copy=False)
    # max: the largest weighted corner of every sample, then the largest sample of the bin.
    g_h, g_w = yl.shape[2], xl.shape[2]
    b = bidx[:, None, None, None, None]
    best = np.full((r_n, oh, g_h, ow, g_w, c), -np.inf, dtype=wd)
    for yi, wy in ((yl, wyl), (yh, wyh)):
        for xi, wx in ((xl, wxl), (xh, wxh)):
            v = xw[b, :, yi[:, :, :, None, None], xi[:, None, None, :, :]]
            wgt = wy[:, :, :, None, None] * wx[:, None, None, :, :]
            np.maximum(best, v * wgt[..., None], out=best)
    valid = (np.arange(g_h)[None, :] < gh[:, None])[:, None, :, None, None, None] & (
        np.arange(g_w)[None, :] < gw[:, None]
    )[:, None, None, None, :, None]
    best = np.where(valid, best, -np.inf).max(axis=(2, 4))
    best = np.where(np.isneginf(best), 0, best)
    return np.ascontiguousarray(best.transpose(0, 3, 1, 2)).astype(dt, copy=False)


@kernel("RoiAlign", 10)
def roi_align_10(
    X: np.ndarray,
    rois: np.ndarray,
    batch_indices: np.ndarray,
    *,
    mode: str = "avg",
    output_height: int = 1,
    output_width: int = 1,
    sampling_ratio: int = 0,
    spatial_scale: float = 1.0,
) -> np.ndarray:
    """RoiAlign-10: no half-pixel shift of the input coordinates (what v16 calls output_half_pixel)."""
    return _roi_align(X, rois, batch_indices, mode=mode, output_height=output_height, output_width=output_width,
                      sampling_ratio=sampling_ratio, spatial_scale=spatial_scale, half_pixel=False)  # fmt: skip


@kernel("RoiAlign", 16, 22)
def roi_align(
    X: np.ndarray,
    rois: np.ndarray,
    batch_indices: np.ndarray,
    *,
    coordinate_transformation_mode: str = "half_pixel",
    mode: str = "avg",
    output_height: int = 1,
    output_width: int = 1,
    sampling_ratio: int = 0,
    spatial_scale: float = 1.0,
) -> np.ndarray:
    """RoiAlign-16/22: coordinate_transformation_mode half_pixel (default) or output_half_pixel."""
    if coordinate_transformation_mode not in ("half_pixel", "output_half_pixel"):
        raise EvaluationError(f"coordinate_transformation_mode {coordinate_transformation_mode!r} is not supported")
    return _roi_align(X, rois, batch_indices, mode=mode, output_height=output_height, output_width=output_width,
                      sampling_ratio=sampling_ratio, spatial_scale=spatial_scale,
                      half_pixel=coordinate_transformation_mode == "half_pixel")  # fmt: skip


# ---------------------------------------------------------------------------------------------
# MaxRoiPool
# ---------------------------------------------------------------------------------------------


def _round_half_away(v: np.ndarray) -> np.ndarray:
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


@kernel("MaxRoiPool", 1, 22)
def max_roi_pool(
    X: np.ndarray, rois: np.ndarray, *, pooled_shape: list[int] | None = None, spatial_scale: float = 1.0
) -> np.ndarray:
    """MaxRoiPool: max over each of ``pooled_shape`` bins of every RoI ``[batch, x1, y1, x2, y2]``
    (coordinates scaled and rounded half away from zero, RoIs at least one pixel, empty bins 0).

    The RoIs are visited one by one (bins of different RoIs have different extents); within a
    RoI every bin is reduced at once, separably along width then height.
    """
    if X.ndim != 4:
        raise ShapeError(f"MaxRoiPool X must be 4-D, got {X.shape}")
    if rois.ndim != 2 or rois.shape[1] != 5:
        raise ShapeError(f"rois must have shape (num_rois, 5), got {rois.shape}")
    if pooled_shape is None or len(pooled_shape) != 2:
        raise EvaluationError("pooled_shape (height, width) is required")
    ph, pw = (int(v) for v in pooled_shape)
    if ph < 1 or pw < 1:
        # A zero bin count made the output empty while the other extent still sized the bin grids (issue 29).
        raise EvaluationError(f"MaxRoiPool pooled_shape must be positive, got {[ph, pw]}")
    n_img, c, h, w = X.shape
    check_elements([rois.shape[0], c, ph, pw], "MaxRoiPool")
    check_elements([c, h, pw], "MaxRoiPool column maxima")  # the per-RoI intermediate below
    dt = X.dtype
    wd = work_dtype(dt)
    xw = X.astype(wd, copy=False)
    r64 = rois.astype(np.float64)
    bidx = r64[:, 0].astype(np.int64)
    if rois.shape[0] and (bidx.min() < 0 or bidx.max() >= n_img):
        raise EvaluationError(f"RoI batch index out of range [0, {n_img})")
    coords = _round_half_away(r64[:, 1:] * spatial_scale).astype(np.int64)
    y = np.zeros((rois.shape[0], c, ph, pw), dtype=wd)
    for r in range(rois.shape[0]):
        sw, sh, ew, eh = coords[r]
        rh, rw = max(eh - sh + 1, 1), max(ew - sw + 1, 1)
        hs = np.clip(np.floor(np.arange(ph) * rh / ph).astype(np.int64) + sh, 0, h)
        he = np.clip(np.ceil((np.arange(ph) + 1) * rh / ph).astype(np.int64) + sh, 0, h)
        ws = np.clip(np.floor(np.arange(pw) * rw / pw).astype(np.int64) + sw, 0, w)
        we = np.clip(np.ceil((np.arange(pw) + 1) * rw / pw).astype(np.int64) + sw, 0, w)
        h0, h1, w0, w1 = int(hs.min()), int(he.max()), int(ws.min()), int(we.max())
        if h1 <= h0 or w1 <= w0:
            continue
        crop = xw[bidx[r], :, h0:h1, w0:w1]
        cols = np.arange(w0, w1)
        mw = (cols >= ws[:, None]) & (cols < we[:, None])  # (pw, w)
        t = np.where(mw[None, None], crop[:, :, None, :], -np.inf).max(axis=3)  # (C, h, pw)
        rows = np.arange(h0, h1)
        mh = (rows >= hs[:, None]) & (rows < he[:, None])  # (ph, h)
        v = np.where(mh[None, :, :, None], t[:, None, :, :], -np.inf).max(axis=2)  # (C, ph, pw)
        y[r] = np.where(np.isneginf(v), 0, v)
    return y.astype(dt, copy=False)
