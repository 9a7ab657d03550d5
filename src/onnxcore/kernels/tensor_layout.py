"""Slicing, splitting, padding and block-rearranging kernels.

Slice, Split, Pad, CenterCropPad, DepthToSpace and SpaceToDepth, every version of the default
domain. Slice and Split return numpy views; kernels never mutate their inputs.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels._util import axes_from_input, check_elements, int_list, normalize_axes, normalize_axis
from onnxcore.kernels.registry import KernelContext, kernel
from onnxcore.kernels.tensor import int_input, zero_of

__all__: list[str] = []


# ---------------------------------------------------------------------------------------------
# Slice
# ---------------------------------------------------------------------------------------------


def _slice(x: np.ndarray, starts: list[int], ends: list[int], axes: list[int] | None, steps: list[int] | None) -> Any:
    n = len(starts)
    if len(ends) != n:
        raise EvaluationError(f"Slice: {n} starts but {len(ends)} ends")
    ax = normalize_axes(axes, x.ndim) if axes is not None else tuple(range(n))
    if len(ax) != n or any(a >= x.ndim for a in ax):
        raise EvaluationError(f"Slice: axes {axes} do not match {n} starts for rank {x.ndim}")
    st = steps if steps is not None else [1] * n
    if len(st) != n:
        raise EvaluationError(f"Slice: {n} starts but {len(st)} steps")
    index: list[slice] = [slice(None)] * x.ndim
    for a, s, e, k in zip(ax, starts, ends, st):
        if k == 0:
            raise EvaluationError("Slice: a step must not be 0")
        dim = x.shape[a]
        # The effective values of Slice-13 (the clamping rules are those of every version).
        s = s + dim if s < 0 else s
        e = e + dim if e < 0 else e
        if k > 0:
            s = min(max(s, 0), dim)
            e = min(max(e, 0), dim)
            index[a] = slice(s, e, k)
        elif dim == 0:
            index[a] = slice(0, 0, 1)
        else:
            s = min(max(s, 0), dim - 1)
            e = min(max(e, -1), dim - 1)
            # e == -1 means "through index 0": a Python slice needs None for it.
            index[a] = slice(s, None if e < 0 else e, k)
    return x[tuple(index)]


@kernel("Slice", 1)
def slice_1(
    data: np.ndarray, *, starts: list[int] | None = None, ends: list[int] | None = None, axes: list[int] | None = None
) -> np.ndarray:
    """Slice-1: ``starts``, ``ends`` and ``axes`` are attributes; the step is 1."""
    if starts is None or ends is None:
        raise EvaluationError("Slice-1: starts and ends are required attributes")
    return _slice(np.asarray(data), [int(v) for v in starts], [int(v) for v in ends], axes, None)


@kernel("Slice", 10, 11, 13)
def slice_10(
    data: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    axes: np.ndarray | None = None,
    steps: np.ndarray | None = None,
) -> np.ndarray:
    """Slice-10 and later: inputs; negative steps slice backward (negative axes from 11)."""
    return _slice(
        np.asarray(data),
        int_input(starts, "Slice starts"),
        int_input(ends, "Slice ends"),
        None if axes is None else int_input(axes, "Slice axes"),
        None if steps is None else int_input(steps, "Slice steps"),
    )


# ---------------------------------------------------------------------------------------------
# Split
# ---------------------------------------------------------------------------------------------


def _split(x: np.ndarray, axis: int, sizes: list[int] | None, count: int) -> tuple[np.ndarray, ...]:
    a = normalize_axis(axis, x.ndim)
    dim = x.shape[a]
    if sizes is None:
        if count < 1 or dim % count:
            raise EvaluationError(f"Split: extent {dim} of axis {a} is not divisible into {count} equal parts")
        sizes = [dim // count] * count
    if len(sizes) != count:
        raise EvaluationError(f"Split: {len(sizes)} split sizes for {count} outputs")
    if any(s < 0 for s in sizes) or sum(sizes) != dim:
        raise EvaluationError(f"Split: sizes {sizes} do not sum to the extent {dim} of axis {a}")
    # Views by basic slicing (numpy.split's Python costs several microseconds per part on a small tensor).
    lead = (slice(None),) * a
    parts = []
    start = 0
    for size in sizes:
        parts.append(x[lead + (slice(start, start + size),)])
        start += size
    return tuple(parts)


@kernel("Split", 1, context=True)
def split_1(
    ctx: KernelContext,
    input: np.ndarray,
    split_input: np.ndarray | None = None,
    *,
    axis: int = 0,
    **attrs: Any,
) -> tuple[np.ndarray, ...]:
    """Split-1: sizes from the ``split`` input or attribute, else equal parts.

    The input and the attribute share the name ``split``; the attribute arrives in ``attrs``.
    """
    sizes_attr = attrs.get("split")
    sizes = (
        int_list(split_input)
        if split_input is not None
        else (None if sizes_attr is None else [int(v) for v in sizes_attr])
    )
    return _split(np.asarray(input), axis, sizes, ctx.num_outputs)


@kernel("Split", 2, 11, context=True)
def split_2(
    ctx: KernelContext, input: np.ndarray, *, axis: int = 0, split: list[int] | None = None
) -> tuple[np.ndarray, ...]:
    """Split-2, Split-11: sizes from the ``split`` attribute, else equal parts."""
    return _split(np.asarray(input), axis, None if split is None else [int(v) for v in split], ctx.num_outputs)


@kernel("Split", 13, context=True)
def split_13(
    ctx: KernelContext, input: np.ndarray, split: np.ndarray | None = None, *, axis: int = 0
) -> tuple[np.ndarray, ...]:
    """Split-13: sizes from the optional ``split`` input, else equal parts."""
    sizes = None if split is None else int_input(split, "Split split")
    return _split(np.asarray(input), axis, sizes, ctx.num_outputs)


@kernel("Split", 18, context=True)
def split_18(
    ctx: KernelContext,
    input: np.ndarray,
    split: np.ndarray | None = None,
    *,
    axis: int = 0,
    num_outputs: int | None = None,
) -> tuple[np.ndarray, ...]:
    """Split-18: the ``split`` input, or ``num_outputs`` parts of ceil(extent / n), the last smaller."""
    x = np.asarray(input)
    if split is not None:
        if num_outputs is not None:
            raise EvaluationError("Split: give either the split input or num_outputs, not both")
        return _split(x, axis, int_input(split, "Split split"), ctx.num_outputs)
    if num_outputs is None:
        raise EvaluationError("Split-18: give either the split input or the num_outputs attribute")
    n = int(num_outputs)
    if n != ctx.num_outputs:
        raise EvaluationError(f"Split: num_outputs={n} but the node has {ctx.num_outputs} outputs")
    if n < 1:
        raise EvaluationError("Split: num_outputs must be positive")
    a = normalize_axis(axis, x.ndim)
    dim = x.shape[a]
    chunk = -(-dim // n)
    sizes = [chunk] * (n - 1) + [dim - chunk * (n - 1)]
    if sizes[-1] < 0:
        raise EvaluationError(f"Split: extent {dim} of axis {a} cannot be split into {n} parts of {chunk}")
    return _split(x, a, sizes, n)


# ---------------------------------------------------------------------------------------------
# Pad, CenterCropPad
# ---------------------------------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _pad(x: np.ndarray, pads: list[int], mode: str, value: Any, axes: list[int] | None) -> np.ndarray:
    r = x.ndim
    ax = normalize_axes(axes, r) if axes is not None else tuple(range(r))
    if len(pads) != 2 * len(ax):
        raise EvaluationError(f"Pad: {len(pads)} pads for {len(ax)} axes (need {2 * len(ax)})")
    before = [0] * r
    after = [0] * r
    for i, a in enumerate(ax):
        before[a] = pads[i]
        after[a] = pads[i + len(ax)]
    if any(-min(b, 0) - min(e, 0) > d for d, b, e in zip(x.shape, before, after)):
        raise EvaluationError(f"Pad: pads {pads} remove more than the extents of shape {x.shape}")
    out_shape = [d + b + e for d, b, e in zip(x.shape, before, after)]
    check_elements(out_shape, "Pad", itemsize=x.dtype.itemsize)
    # Negative pads remove: crop first, then pad what remains (so reflect, edge and wrap read
    # the cropped tensor, as onnxruntime does; the definition does not order the two).
    crop = tuple(slice(-min(b, 0), d + min(e, 0)) for d, b, e in zip(x.shape, before, after))
    y = x[crop]
    width = [(max(b, 0), max(e, 0)) for b, e in zip(before, after)]
    if all(w == (0, 0) for w in width):
        return y
    if mode == "constant":
        out = np.empty(out_shape, dtype=y.dtype)
        out[...] = value
        out[tuple(slice(b, b + d) for d, (b, _) in zip(y.shape, width))] = y
        return out
    for a, (b, e) in enumerate(width):
        if (b or e) and y.shape[a] == 0:
            raise EvaluationError(f"Pad: mode {mode} cannot pad axis {a} of extent 0")
        if mode == "reflect" and (b or e) and y.shape[a] == 1:
            raise EvaluationError(f"Pad: mode reflect cannot pad axis {a} of extent 1")
    return np.pad(y, width, mode=cast(Any, mode))


def _pad_value(x: np.ndarray, constant_value: np.ndarray | None) -> Any:
    if constant_value is None:
        return zero_of(x.dtype)
    cv = np.asarray(constant_value)
    if cv.size == 0:
        return zero_of(x.dtype)
    if cv.size != 1:
        raise EvaluationError(f"Pad: constant_value must be a scalar, got shape {cv.shape}")
    return cv.reshape(()).astype(x.dtype) if cv.dtype != x.dtype else cv.reshape(())


def _check_mode(mode: str, allowed: tuple[str, ...]) -> None:
    if mode not in allowed:
        raise EvaluationError(f"Pad: mode {mode!r} is not one of {', '.join(allowed)}")


@kernel("Pad", 1)
def pad_1(
    data: np.ndarray, *, paddings: list[int] | None = None, mode: str = "constant", value: float = 0.0
) -> np.ndarray:
    """Pad-1: ``paddings`` attribute ``[x1_begin, x2_begin, ..., x1_end, x2_end, ...]``."""
    if paddings is None:
        raise EvaluationError("Pad-1: the paddings attribute is required")
    _check_mode(mode, _PAD_MODES[:3])
    x = np.asarray(data)
    return _pad(x, [int(p) for p in paddings], mode, np.asarray(value).astype(x.dtype), None)


@kernel("Pad", 2)
def pad_2(data: np.ndarray, *, pads: list[int] | None = None, mode: str = "constant", value: float = 0.0) -> np.ndarray:
    """Pad-2: ``pads`` attribute (negative values remove)."""
    if pads is None:
        raise EvaluationError("Pad-2: the pads attribute is required")
    _check_mode(mode, _PAD_MODES[:3])
    x = np.asarray(data)
    return _pad(x, [int(p) for p in pads], mode, np.asarray(value).astype(x.dtype), None)


@kernel("Pad", 11, 13)
def pad_11(
    data: np.ndarray, pads: np.ndarray, constant_value: np.ndarray | None = None, *, mode: str = "constant"
) -> np.ndarray:
    """Pad-11, Pad-13: ``pads`` and ``constant_value`` are inputs."""
    _check_mode(mode, _PAD_MODES[:3])
    x = np.asarray(data)
    return _pad(x, int_input(pads, "Pad pads"), mode, _pad_value(x, constant_value), None)


@kernel("Pad", 18)
def pad_18(
    data: np.ndarray,
    pads: np.ndarray,
    constant_value: np.ndarray | None = None,
    axes: np.ndarray | None = None,
    *,
    mode: str = "constant",
) -> np.ndarray:
    """Pad-18: adds the ``axes`` input."""
    _check_mode(mode, _PAD_MODES[:3])
    x = np.asarray(data)
    return _pad(x, int_input(pads, "Pad pads"), mode, _pad_value(x, constant_value), axes_from_input(axes))


@kernel("Pad", 19, 21, 23, 24, 25)
def pad_19(
    data: np.ndarray,
    pads: np.ndarray,
    constant_value: np.ndarray | None = None,
    axes: np.ndarray | None = None,
    *,
    mode: str = "constant",
) -> np.ndarray:
    """Pad-19 and later: adds the ``wrap`` mode."""
    _check_mode(mode, _PAD_MODES)
    x = np.asarray(data)
    return _pad(x, int_input(pads, "Pad pads"), mode, _pad_value(x, constant_value), axes_from_input(axes))


@kernel("CenterCropPad", 18)
def center_crop_pad(input_data: np.ndarray, shape: np.ndarray, *, axes: list[int] | None = None) -> np.ndarray:
    """CenterCropPad: crop (window start rounded down) or zero-pad (extra on the right) to ``shape``."""
    x = np.asarray(input_data)
    target = int_input(shape, "CenterCropPad shape")
    ax = normalize_axes(axes, x.ndim) if axes is not None else tuple(range(x.ndim))
    if len(target) != len(ax):
        raise EvaluationError(f"CenterCropPad: {len(target)} extents for {len(ax)} axes")
    if any(t < 0 for t in target):
        raise EvaluationError(f"CenterCropPad: negative extent in {target}")
    crop: list[slice] = [slice(None)] * x.ndim
    width = [(0, 0)] * x.ndim
    for a, t in zip(ax, target):
        d = x.shape[a]
        if d >= t:
            lo = (d - t) // 2
            crop[a] = slice(lo, lo + t)
        else:
            b = (t - d) // 2
            width[a] = (b, t - d - b)
    y = x[tuple(crop)]
    if any(w != (0, 0) for w in width):
        check_elements([d + b + e for d, (b, e) in zip(y.shape, width)], "CenterCropPad")
        out = np.empty([d + b + e for d, (b, e) in zip(y.shape, width)], dtype=y.dtype)
        out[...] = zero_of(y.dtype)
        out[tuple(slice(b, b + d) for d, (b, _) in zip(y.shape, width))] = y
        return out
    return y


# ---------------------------------------------------------------------------------------------
# DepthToSpace, SpaceToDepth
# ---------------------------------------------------------------------------------------------


def _nchw(x: np.ndarray, op: str, blocksize: int | None) -> tuple[int, int, int, int, int]:
    if blocksize is None or blocksize < 1:
        raise EvaluationError(f"{op}: blocksize must be a positive integer, got {blocksize}")
    if x.ndim != 4:
        raise EvaluationError(f"{op}: input must be 4-D [N, C, H, W], got shape {x.shape}")
    n, c, h, w = x.shape
    return n, c, h, w, int(blocksize)


def _depth_to_space(x: np.ndarray, blocksize: int | None, mode: str) -> np.ndarray:
    n, c, h, w, b = _nchw(x, "DepthToSpace", blocksize)
    if c % (b * b):
        raise EvaluationError(f"DepthToSpace: channels {c} not divisible by blocksize^2 = {b * b}")
    cd = c // (b * b)
    if mode == "DCR":
        t = x.reshape(n, b, b, cd, h, w).transpose(0, 3, 4, 1, 5, 2)
    elif mode == "CRD":
        t = x.reshape(n, cd, b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    else:
        raise EvaluationError(f"DepthToSpace: mode {mode!r} is not DCR or CRD")
    return t.reshape(n, cd, h * b, w * b)


@kernel("DepthToSpace", 1)
def depth_to_space_1(input: np.ndarray, *, blocksize: int | None = None) -> np.ndarray:
    """DepthToSpace-1: depth-column-row order (no ``mode`` yet)."""
    return _depth_to_space(np.asarray(input), blocksize, "DCR")


@kernel("DepthToSpace", 11, 13, 28)
def depth_to_space_11(input: np.ndarray, *, blocksize: int | None = None, mode: str = "DCR") -> np.ndarray:
    """DepthToSpace-11 and later: ``mode`` DCR or CRD."""
    return _depth_to_space(np.asarray(input), blocksize, mode)


def _space_to_depth(x: np.ndarray, blocksize: int | None, mode: str) -> np.ndarray:
    n, c, h, w, b = _nchw(x, "SpaceToDepth", blocksize)
    if h % b or w % b:
        raise EvaluationError(f"SpaceToDepth: spatial extents {h}x{w} not divisible by blocksize {b}")
    t = x.reshape(n, c, h // b, b, w // b, b)
    if mode == "DCR":
        t = t.transpose(0, 3, 5, 1, 2, 4)
    elif mode == "CRD":
        t = t.transpose(0, 1, 3, 5, 2, 4)
    else:
        raise EvaluationError(f"SpaceToDepth: mode {mode!r} is not DCR or CRD")
    return t.reshape(n, c * b * b, h // b, w // b)


@kernel("SpaceToDepth", 1, 13)
def space_to_depth_1(input: np.ndarray, *, blocksize: int | None = None) -> np.ndarray:
    """SpaceToDepth-1, SpaceToDepth-13: depth-column-row order."""
    return _space_to_depth(np.asarray(input), blocksize, "DCR")


@kernel("SpaceToDepth", 28)
def space_to_depth_28(input: np.ndarray, *, blocksize: int | None = None, mode: str = "DCR") -> np.ndarray:
    """SpaceToDepth-28: adds ``mode`` DCR or CRD."""
    return _space_to_depth(np.asarray(input), blocksize, mode)
