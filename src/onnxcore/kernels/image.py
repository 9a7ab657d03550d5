"""Image operators: Resize (10, 11, 13, 18, 19) and the deprecated Upsample (1, 7, 9, 10).

Resizing is separable: for each resized axis a weight matrix ``[out, in]`` is built (once per extents and
attributes: cached) from the coordinate transformation and the interpolation kernel, then applied by matrix
products (the last two axes at once when their joint matrix is small: one product for every image); nearest
mode gathers with ``take`` instead (exact for every element type). ``tf_crop_and_resize`` marks the output
positions whose source coordinate lies outside the input on any axis and writes ``extrapolation_value``
there. Float16, bfloat16 and integer inputs interpolate in float32 (integers rounded to nearest, even, and
saturated on the way back).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels._util import check_elements, normalize_axes
from onnxcore.kernels.registry import kernel

__all__: list[str] = []


def _transform(
    mode: str, x: np.ndarray, in_len: int, out_len: int, scale: float, roi: tuple[float, float] | None
) -> np.ndarray:
    """Coordinate of each output position in the input (Resize's coordinate_transformation_mode).

    ``length_resized`` in the definitions is ``in_len * scale``, which is fractional when the output size
    came from a scale; the test vectors (e.g. downsampling by 0.8 with align_corners) use it so.
    """
    length_resized = in_len * scale
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        adjustment = out_len / length_resized
        center = in_len / 2
        offset = center * (1 - adjustment)
        return offset + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if length_resized > 1 else np.zeros_like(x)
    if mode == "align_corners":
        return x * (in_len - 1) / (length_resized - 1) if length_resized > 1 else np.zeros_like(x)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    if mode == "tf_crop_and_resize":
        start, end = roi if roi is not None else (0.0, 1.0)
        if length_resized > 1:
            return start * (in_len - 1) + x * (end - start) * (in_len - 1) / (length_resized - 1)
        return np.full_like(x, 0.5 * (start + end) * (in_len - 1))
    raise EvaluationError(f"Resize: unknown coordinate_transformation_mode {mode!r}")


def _nearest_index(x: np.ndarray, mode: str) -> np.ndarray:
    if mode == "round_prefer_floor":
        idx = np.where(x - np.floor(x) == 0.5, np.floor(x), np.round(x))
    elif mode == "round_prefer_ceil":
        idx = np.where(x - np.floor(x) == 0.5, np.ceil(x), np.round(x))
    elif mode == "floor":
        idx = np.floor(x)
    elif mode == "ceil":
        idx = np.ceil(x)
    else:
        raise EvaluationError(f"Resize: unknown nearest_mode {mode!r}")
    return idx.astype(np.int64)


def _cubic(d: np.ndarray, a: float) -> np.ndarray:
    d = np.abs(d)
    return np.where(
        d <= 1,
        ((a + 2) * d - (a + 3)) * d * d + 1,
        np.where(d < 2, ((a * d - 5 * a) * d + 8 * a) * d - 4 * a, 0.0),
    )


def _weights(
    interp: str,
    coords: np.ndarray,
    in_len: int,
    scale: float,
    *,
    cubic_coeff_a: float,
    exclude_outside: int,
    antialias: int,
) -> np.ndarray:
    """The ``[out, in]`` matrix of linear or cubic interpolation along one axis."""
    out_len = coords.shape[0]
    stretch = 1.0 / scale if (antialias and scale < 1) else 1.0
    radius = (1.0 if interp == "linear" else 2.0) * stretch
    lo = np.floor(coords - radius).astype(np.int64) + 1
    taps = lo[:, None] + np.arange(math.ceil(2 * radius) + 1)[None, :]
    dist = (taps - coords[:, None]) / stretch
    if interp == "linear":
        w = np.maximum(0.0, 1.0 - np.abs(dist))
    else:
        w = _cubic(dist, cubic_coeff_a)
    outside = (taps < 0) | (taps >= in_len)
    if exclude_outside:
        w = np.where(outside, 0.0, w)
    if exclude_outside or stretch != 1.0:
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    mat = np.zeros((out_len, in_len), np.float64)
    rows = np.broadcast_to(np.arange(out_len)[:, None], taps.shape)
    np.add.at(mat, (rows, np.clip(taps, 0, in_len - 1)), w)  # taps outside read the edge
    return mat


@functools.lru_cache(maxsize=256)
def _axis_matrix(
    mode: str,
    transform: str,
    n: int,
    o: int,
    scale: float,
    roi: tuple[float, float] | None,
    cubic_coeff_a: float,
    exclude_outside: int,
    antialias: int,
) -> np.ndarray | None:
    """The ``[out, in]`` interpolation matrix of one axis (float64, read-only; cached: a model resizes the same
    extents on every run), or ``None`` when it is the identity (the axis is left as it is)."""
    coords = _transform(transform, np.arange(o, dtype=np.float64), n, o, scale, roi)
    w = _weights(mode, coords, n, scale, cubic_coeff_a=cubic_coeff_a, exclude_outside=exclude_outside,
                 antialias=antialias)  # fmt: skip
    if n == o and np.array_equal(w, np.eye(n)):
        return None
    w.flags.writeable = False
    return w


_KRON_ENTRIES = 1 << 20  # largest joint matrix of the last two axes (4 MB in float32)


def _apply_separable(y: np.ndarray, mats: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """Apply each axis's interpolation matrix (``(axis, [out, in])``) to ``y`` by matrix products: the last two
    axes together when their joint matrix is small (one product over every image), else the last axis as
    ``y @ W.T`` and any other as ``W @ y`` over the axes after it, without moving axes."""
    rank = y.ndim
    by_axis = dict(mats)
    if set(by_axis) == {rank - 2, rank - 1}:
        wh, ww = by_axis[rank - 2], by_axis[rank - 1]
        if wh.size * ww.size <= _KRON_ENTRIES:
            k = np.kron(wh, ww).astype(y.dtype)
            lead = y.shape[:-2]
            flat = np.ascontiguousarray(y).reshape(-1, wh.shape[1] * ww.shape[1])
            return (flat @ k.T).reshape(*lead, wh.shape[0], ww.shape[0])
    for a, w in sorted(mats, reverse=True):
        wt = w.astype(y.dtype)
        if a == rank - 1:
            y = np.ascontiguousarray(y) @ wt.T
        else:
            shape = y.shape
            pre, post = math.prod(shape[:a]), math.prod(shape[a + 1 :])
            y3 = np.ascontiguousarray(y).reshape(pre, shape[a], post)
            y = np.matmul(wt, y3).reshape(*shape[:a], w.shape[0], *shape[a + 1 :])
    return y


def _resize(
    X: np.ndarray,
    roi: np.ndarray | None,
    scales: np.ndarray | None,
    sizes: np.ndarray | None,
    *,
    antialias: int = 0,
    axes: list[int] | None = None,
    coordinate_transformation_mode: str = "half_pixel",
    cubic_coeff_a: float = -0.75,
    exclude_outside: int = 0,
    extrapolation_value: float = 0.0,
    keep_aspect_ratio_policy: str = "stretch",
    mode: str = "nearest",
    nearest_mode: str = "round_prefer_floor",
) -> np.ndarray:
    rank = X.ndim
    ax = list(normalize_axes(axes, rank)) if axes is not None else list(range(rank))
    if scales is not None and scales.size == 0:
        scales = None
    if sizes is not None and sizes.size == 0:
        sizes = None
    if (scales is None) == (sizes is None):
        raise EvaluationError("Resize: exactly one of scales and sizes must be given")
    if mode not in ("nearest", "linear", "cubic"):
        raise EvaluationError(f"Resize: unknown mode {mode!r}")
    in_shape = [X.shape[a] for a in ax]
    rois: list[tuple[float, float] | None] = [None] * len(ax)
    if roi is not None and roi.size and coordinate_transformation_mode == "tf_crop_and_resize":
        r = roi.astype(np.float64).ravel()
        if r.size == 2 * rank and len(ax) != rank:
            r = np.concatenate([r[ax], r[[rank + a for a in ax]]])
        if r.size != 2 * len(ax):
            raise EvaluationError(f"Resize: roi has {r.size} values, expected {2 * len(ax)}")
        rois = [(float(r[i]), float(r[len(ax) + i])) for i in range(len(ax))]
    if scales is not None:
        sc = [float(s) for s in scales.astype(np.float64).ravel()]
        # A NaN or infinite scale gives no output size (Clause 11.3 leaves special values open; our position is
        # to refuse an attribute or input that sizes an output when it is not finite, see conformance).
        if len(sc) != len(ax) or not all(math.isfinite(s) and s > 0 for s in sc):
            raise EvaluationError(f"Resize: scales {sc} invalid for {len(ax)} axes (each finite and positive)")
        out_shape = []
        for n, s, rr in zip(in_shape, sc, rois):
            span = (rr[1] - rr[0]) if rr is not None else 1.0
            extent = n * span * s
            if not math.isfinite(extent) or extent < 0:
                raise EvaluationError(f"Resize: the roi {rr} and scale {s} give no output size for an extent of {n}")
            out_shape.append(math.floor(extent + 1e-9))
    else:
        sz = [int(v) for v in np.asarray(sizes).ravel()]
        if len(sz) != len(ax):
            raise EvaluationError(f"Resize: sizes {sz} invalid for {len(ax)} axes")
        if any(o <= 0 for o in sz) or any(n == 0 for n in in_shape):
            # The scale sizes imply (output / input extent) must be greater than 0, as given scales must.
            raise EvaluationError(f"Resize: sizes {sz} for extents {list(in_shape)} imply a scale that is not positive")
        if keep_aspect_ratio_policy == "stretch":
            out_shape = sz
            sc = [o / n for o, n in zip(sz, in_shape)]
        elif keep_aspect_ratio_policy in ("not_larger", "not_smaller"):
            ratios = [o / n for o, n in zip(sz, in_shape)]
            s = min(ratios) if keep_aspect_ratio_policy == "not_larger" else max(ratios)
            out_shape = [math.floor(s * n + 0.5) for n in in_shape]
            sc = [s] * len(ax)
        else:
            raise EvaluationError(f"Resize: unknown keep_aspect_ratio_policy {keep_aspect_ratio_policy!r}")
    # Every intermediate (one axis resized at a time) is checked too: growing one axis before shrinking another
    # can pass through a larger array than the result.
    running = list(X.shape)
    # Octets: the input's type for nearest, float32 or float64 for the interpolating modes (the working type).
    itemsize = X.dtype.itemsize if mode == "nearest" else max(X.dtype.itemsize, 4)
    for a, o in zip(ax, out_shape):
        running[a] = o
        check_elements(running, "Resize", itemsize=itemsize)
    out_dtype = X.dtype
    integral = X.dtype.kind in "iub"
    y: np.ndarray = (
        X if mode == "nearest" else X.astype(np.float64 if X.dtype == np.float64 else np.float32, copy=False)
    )
    outside_masks: list[tuple[int, np.ndarray]] = []
    mats: list[tuple[int, np.ndarray]] = []
    for a, n, o, s, rr in zip(ax, in_shape, out_shape, sc, rois):
        coords = _transform(coordinate_transformation_mode, np.arange(o, dtype=np.float64), n, o, s, rr)
        if coordinate_transformation_mode == "tf_crop_and_resize":
            outside_masks.append((a, (coords < 0) | (coords > n - 1)))
        if mode == "nearest":
            idx = np.clip(_nearest_index(coords, nearest_mode), 0, max(n - 1, 0))
            y = np.take(y, idx, axis=a)
        else:
            w = _axis_matrix(
                mode, coordinate_transformation_mode, n, o, s, rr, cubic_coeff_a, exclude_outside, antialias
            )
            if w is not None:
                mats.append((a, w))
    if mats:
        y = _apply_separable(y, mats)
    if outside_masks:
        y = np.array(y, copy=True)
        for a, m in outside_masks:
            shape = [1] * rank
            shape[a] = m.size
            y[np.broadcast_to(m.reshape(shape), y.shape)] = extrapolation_value
    if y.dtype != out_dtype:
        if integral:
            info = np.iinfo(out_dtype) if out_dtype.kind != "b" else None
            y = np.rint(y)
            if info is not None:
                y = np.clip(y, info.min, info.max)
        y = y.astype(out_dtype)
    return np.ascontiguousarray(y)


@kernel("Resize", 10)
def resize_10(X: np.ndarray, scales: np.ndarray, *, mode: str = "nearest") -> np.ndarray:
    """Resize-10: output = floor(input * scale); coordinates asymmetric, nearest rounds down (as Upsample)."""
    return _resize(X, None, scales, None, mode=mode, coordinate_transformation_mode="asymmetric", nearest_mode="floor")


@kernel("Resize", 11, 13)
def resize_11(
    X: np.ndarray,
    roi: np.ndarray | None = None,
    scales: np.ndarray | None = None,
    sizes: np.ndarray | None = None,
    *,
    coordinate_transformation_mode: str = "half_pixel",
    cubic_coeff_a: float = -0.75,
    exclude_outside: int = 0,
    extrapolation_value: float = 0.0,
    mode: str = "nearest",
    nearest_mode: str = "round_prefer_floor",
) -> np.ndarray:
    """Resize-11 and -13: roi, scales or sizes; coordinate modes incl. tf_half_pixel_for_nn and crop-and-resize."""
    return _resize(
        X, roi, scales, sizes,
        coordinate_transformation_mode=coordinate_transformation_mode, cubic_coeff_a=cubic_coeff_a,
        exclude_outside=exclude_outside, extrapolation_value=extrapolation_value, mode=mode,
        nearest_mode=nearest_mode,
    )  # fmt: skip


@kernel("Resize", 18, 19)
def resize_18(
    X: np.ndarray,
    roi: np.ndarray | None = None,
    scales: np.ndarray | None = None,
    sizes: np.ndarray | None = None,
    *,
    antialias: int = 0,
    axes: list[int] | None = None,
    coordinate_transformation_mode: str = "half_pixel",
    cubic_coeff_a: float = -0.75,
    exclude_outside: int = 0,
    extrapolation_value: float = 0.0,
    keep_aspect_ratio_policy: str = "stretch",
    mode: str = "nearest",
    nearest_mode: str = "round_prefer_floor",
) -> np.ndarray:
    """Resize-18 (antialias, axes, keep_aspect_ratio_policy) and -19 (half_pixel_symmetric)."""
    return _resize(
        X, roi, scales, sizes,
        antialias=antialias, axes=axes, coordinate_transformation_mode=coordinate_transformation_mode,
        cubic_coeff_a=cubic_coeff_a, exclude_outside=exclude_outside, extrapolation_value=extrapolation_value,
        keep_aspect_ratio_policy=keep_aspect_ratio_policy, mode=mode, nearest_mode=nearest_mode,
    )  # fmt: skip


def _upsample(X: np.ndarray, scales: list[float], mode: str) -> np.ndarray:
    interp = {"nearest": "nearest", "linear": "linear", "bilinear": "linear"}.get(mode)
    if interp is None:
        raise EvaluationError(f"Upsample: unknown mode {mode!r}")
    if len(scales) != X.ndim:
        raise EvaluationError(f"Upsample: {len(scales)} scales for rank {X.ndim}")
    return _resize(
        X,
        None,
        np.asarray(scales, np.float32),
        None,
        mode=interp,
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    )


@kernel("Upsample", 1)
def upsample_1(
    X: np.ndarray, *, height_scale: float | None = None, mode: str = "nearest", width_scale: float | None = None
) -> np.ndarray:
    """Upsample-1: NCHW, height_scale and width_scale attributes; modes nearest and bilinear."""
    if height_scale is None or width_scale is None:
        raise EvaluationError("Upsample-1 needs height_scale and width_scale")
    return _upsample(X, [1.0, 1.0, height_scale, width_scale], mode)


@kernel("Upsample", 7)
def upsample_7(X: np.ndarray, *, mode: str = "nearest", scales: list[float] | None = None) -> np.ndarray:
    """Upsample-7: scales attribute."""
    if scales is None:
        raise EvaluationError("Upsample-7 needs the scales attribute")
    return _upsample(X, list(scales), mode)


@kernel("Upsample", 9, 10)
def upsample_9(X: np.ndarray, scales: np.ndarray, *, mode: str = "nearest") -> np.ndarray:
    """Upsample-9 and the deprecated -10 (still evaluated, Clause 14.5): scales input."""
    return _upsample(X, [float(s) for s in scales.ravel()], mode)
