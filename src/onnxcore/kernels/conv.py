"""Convolution kernels: Conv (Clause 8; ONNX 1-2 definitions), and the window helpers (DeformConv, which uses them,
is in :mod:`onnxcore.kernels.deform_conv`).

Conv is im2col plus one BLAS matmul per group: the padded input is viewed (no copy) as
``(N, group, C/group, *kernel, *out)`` windows, reshaped once into the column matrix
``(N, group, C/group*prod(kernel), prod(out))`` and multiplied by the weights
``(group, M/group, C/group*prod(kernel))``, which yields ``NCHW`` directly (depthwise kernels are C
small matmuls in that one batched call, unless :mod:`onnxcore.kernels._depthwise` is faster for the shape).
1x1 kernels skip im2col; stride-1 kernels build the columns from contiguous slices of the flattened padded
image (see ``_flat_conv``).

Float16 and the narrow floats compute in float32 and round once at the end.

The window and attribute helpers are shared with :mod:`onnxcore.kernels.conv_transpose`,
:mod:`onnxcore.kernels.pool` and the gradients of :mod:`onnxcore.runtime`.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels import accel
from onnxcore.kernels._depthwise import depthwise_conv2d, depthwise_pays
from onnxcore.kernels._epilogue import add_channel_bias
from onnxcore.kernels._im2col import compiled_columns, im2col_conv
from onnxcore.kernels._scratch import scratch
from onnxcore.kernels._util import check_elements, int_list, is_narrow_float
from onnxcore.kernels.registry import kernel
from onnxcore.kernels.threads import active_threads, copy_split, parallel_for

__all__ = [
    "conv_for_shape",
    "depthwise_for_shape",
    "planar_for_shape",
    "depthwise_accel",
    "work_dtype",
    "spatial_attr",
    "pads_attr",
    "conv_pads",
    "pad_spatial",
    "window_view",
    "col2im_accumulate",
    "check_auto_pad",
    "check_conv_shapes",
    "check_bias",
]

_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def work_dtype(dt: Any) -> np.dtype[Any]:
    """The dtype kernels of this family compute in: float32 for float16 and narrow floats."""
    d = np.dtype(dt)
    if d == np.float16 or is_narrow_float(d):
        return np.dtype(np.float32)
    return d


def spatial_attr(value: Any, n: int, default: int, name: str, *, least: int) -> list[int]:
    """An INTS attribute with one entry per spatial axis (``default`` everywhere when absent), each at least
    ``least`` (1 for strides, dilations and kernel extents; 0 for output_padding)."""
    if value is None:
        return [default] * n
    vals = int_list(value)
    if len(vals) != n:
        raise EvaluationError(f"{name} has {len(vals)} values, expected {n} (one per spatial axis)")
    if any(v < least for v in vals):
        raise EvaluationError(f"{name} {vals} must be {'positive' if least == 1 else 'non-negative'}")
    return vals


def pads_attr(pads: Any, n: int) -> tuple[list[int], list[int]]:
    """The ``pads`` attribute as (begins, ends), one non-negative entry per spatial axis each."""
    if pads is None:
        return [0] * n, [0] * n
    p = int_list(pads)
    if len(p) != 2 * n:
        raise EvaluationError(f"pads has {len(p)} values, expected {2 * n}")
    if any(v < 0 for v in p):
        raise EvaluationError(f"pads must be non-negative, got {p}")
    return p[:n], p[n:]


def check_auto_pad(auto_pad: str) -> str:
    """``auto_pad`` itself, when it is one of the four modes of the definitions."""
    if auto_pad not in _AUTO_PADS:
        raise EvaluationError(f"auto_pad {auto_pad!r} is not one of {', '.join(_AUTO_PADS)}")
    return auto_pad


def conv_pads(
    in_shape: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Any,
    auto_pad: str,
    *,
    ceil_mode: int = 0,
    drop_tail: bool = False,
) -> tuple[list[int], list[int], list[int]]:
    """Resolve (pads_begin, pads_end, out_shape) of a forward window operation.

    ``auto_pad`` SAME_* gives ``out = ceil(in / stride)`` and splits the needed padding, the odd
    element going to the end (SAME_UPPER) or the beginning (SAME_LOWER); VALID pads nothing and
    gives ``floor((in - ek) / stride) + 1``; NOTSET uses ``pads``. With ``ceil_mode`` (pools), the
    explicit-padding size rounds up; with ``drop_tail`` too, a window that would start in the end
    padding is dropped (the sentence the version-22 pools added; onnx's shape inference applies it
    from opset 22 only, onnxruntime in every version).

    Raises:
        ShapeError: the padded input is smaller than the dilated kernel.
    """
    n = len(in_shape)
    mode = check_auto_pad(auto_pad)
    ek = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    if any(s <= 0 for s in strides) or any(d <= 0 for d in dilations):
        raise EvaluationError(f"strides {list(strides)} and dilations {list(dilations)} must be positive")
    if mode in ("SAME_UPPER", "SAME_LOWER"):
        out = [-(-i // s) for i, s in zip(in_shape, strides)]
        total = [max(0, (o - 1) * s + e - i) for o, s, e, i in zip(out, strides, ek, in_shape)]
        if mode == "SAME_UPPER":
            pb = [t // 2 for t in total]
        else:
            pb = [t - t // 2 for t in total]
        pe = [t - b for t, b in zip(total, pb)]
        return pb, pe, out
    if mode == "VALID":
        pb, pe = [0] * n, [0] * n
    else:
        pb, pe = pads_attr(pads, n)
    out = []
    for i in range(n):
        span = in_shape[i] + pb[i] + pe[i] - ek[i]
        if span < 0:
            raise ShapeError(
                f"spatial axis {i}: padded input {in_shape[i] + pb[i] + pe[i]} is smaller than "
                f"the dilated kernel {ek[i]}"
            )
        if ceil_mode and mode == "NOTSET":
            o = -(-span // strides[i]) + 1
            if drop_tail and (o - 1) * strides[i] >= in_shape[i] + pb[i]:
                o -= 1
        else:
            o = span // strides[i] + 1
        out.append(o)
    return pb, pe, out


def pad_spatial(
    x: np.ndarray, pb: Sequence[int], pe: Sequence[int], value: Any = 0, *, name: str | None = None
) -> np.ndarray:
    """``x`` with its trailing ``len(pb)`` axes padded by ``value`` (``x`` itself when no padding); with ``name``, in
    this thread's scratch buffer of that name (:mod:`onnxcore.kernels._scratch`: for a temporary of the caller)."""
    if not any(pb) and not any(pe):
        return x
    lead = x.ndim - len(pb)
    shape = x.shape[:lead] + tuple(s + b + e for s, b, e in zip(x.shape[lead:], pb, pe))
    out = np.empty(shape, dtype=x.dtype) if name is None else scratch(name, shape, x.dtype)
    inner = [slice(b, b + s) for b, s in zip(pb, x.shape[lead:])]
    out[(slice(None),) * lead + tuple(inner)] = x
    # Fill only the border slabs (one pass over the data instead of two).
    for i, (b, e) in enumerate(zip(pb, pe)):
        pre = (slice(None),) * lead + tuple(inner[:i])
        if b:
            out[pre + (slice(0, b),)] = value
        if e:
            out[pre + (slice(shape[lead + i] - e, None),)] = value
        inner[i] = slice(None)
    return out


def window_view(
    xp: np.ndarray, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int], out: Sequence[int]
) -> np.ndarray:
    """Read-only view of ``xp`` (``(*lead, *spatial)``) as ``(*lead, *kernel, *out)`` windows."""
    n = len(kernel)
    lead = xp.ndim - n
    st = xp.strides
    shape = tuple(xp.shape[:lead]) + tuple(kernel) + tuple(out)
    strides_ = (
        tuple(st[:lead])
        + tuple(st[lead + i] * dilations[i] for i in range(n))
        + tuple(st[lead + i] * strides[i] for i in range(n))
    )
    return as_strided(xp, shape=shape, strides=strides_, writeable=False)


def _offset_slices(
    offs: Sequence[int], strides: Sequence[int], dilations: Sequence[int], count: Sequence[int]
) -> tuple[slice, ...]:
    return tuple(slice(k * d, k * d + (c - 1) * s + 1, s) for k, d, s, c in zip(offs, dilations, strides, count))


def col2im_accumulate(
    cols: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    counts: Sequence[int],
    full: Sequence[int],
) -> np.ndarray:
    """Scatter-add ``cols`` of shape ``(*lead, *kernel, *counts)`` into ``(*lead, *full)``.

    Window ``p`` (a position in ``counts``) covers ``p*stride + k*dilation`` of the output; one
    strided in-place addition per kernel offset keeps the arithmetic vectorized.
    """
    n = len(kernel)
    lead = cols.shape[: cols.ndim - 2 * n]
    if cols.dtype == object:
        out = np.full(tuple(lead) + tuple(full), b"", dtype=object)
    else:
        out = np.zeros(tuple(lead) + tuple(full), dtype=cols.dtype)
    pre = (slice(None),) * len(lead)
    for offs in itertools.product(*(range(k) for k in kernel)):
        dst = pre + _offset_slices(offs, strides, dilations, counts)
        src = cols[pre + tuple(offs)]
        if out.dtype == np.bool_:
            out[dst] |= src
        else:
            out[dst] += src
    return out


def check_conv_shapes(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], group: int, kernel_shape: Any, *, transpose: bool
) -> None:
    """The ranks, channel counts and ``kernel_shape`` of X and W agree (W is ``(C, M/group, ...)`` when
    ``transpose``, else ``(M, C/group, ...)``)."""
    if len(x_shape) < 3:
        raise ShapeError(f"X must have rank >= 3 (N, C, spatial...), got shape {x_shape}")
    if len(w_shape) != len(x_shape):
        raise ShapeError(f"W rank {len(w_shape)} differs from X rank {len(x_shape)}")
    if group < 1:
        raise EvaluationError(f"group must be positive, got {group}")
    c = x_shape[1]
    if transpose:
        if w_shape[0] != c or c % group:
            raise ShapeError(f"W.shape[0]={w_shape[0]} must equal C={c}, divisible by group={group}")
    elif w_shape[1] * group != c or w_shape[0] % group:
        raise ShapeError(f"W shape {w_shape} is incompatible with C={c} and group={group}")
    if kernel_shape is not None and int_list(kernel_shape) != list(w_shape[2:]):
        raise ShapeError(f"kernel_shape {list(kernel_shape)} disagrees with W shape {w_shape}")


def check_bias(b: np.ndarray | None, m: int) -> np.ndarray | None:
    """The optional bias B, which has one value per output channel (``m``)."""
    if b is None:
        return None
    if b.shape != (m,):
        raise ShapeError(f"B must have shape ({m},), got {b.shape}")
    return b


def _conv_paths(
    x: np.ndarray,
    w: np.ndarray,
    group: int,
    pb: Sequence[int],
    pe: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out: Sequence[int],
    bias: np.ndarray | None,
) -> tuple[np.ndarray, bool]:
    """Forward convolution in the work dtype, ``(N, M, *out)``, by the fastest path for its shape; and
    whether that path added ``bias`` (one value per output channel) too."""
    n_img, c = x.shape[:2]
    m = w.shape[0]
    cg, mg = c // group, m // group
    kernel = w.shape[2:]
    nd = len(kernel)
    p_out = math.prod(out)
    kk = math.prod(kernel)
    if p_out == 0 or n_img == 0 or m == 0:
        return np.zeros((n_img, m, *out), dtype=x.dtype), False
    if kk == 1 and not any(pb) and not any(pe):
        # 1x1 kernel: a plain matmul on the (strided) input, no im2col.
        # The input may be larger than the output with every stride 1: a stride along an axis of one output is
        # taken as 1 (conv_geometry), so the window is sliced whenever the extents differ.
        if nd == 2 and x.dtype in _FLOATS and accel.enabled() and tuple(x.shape[2:]) != tuple(out):
            # The strided places gathered by a compiled loop (numpy's strided copy has a short inner loop per row).
            cols = compiled_columns(np.ascontiguousarray(x), kernel, pb, strides, dilations, out)
            xs = cols.reshape(n_img, c, *out)
        elif any(s != 1 for s in strides) or tuple(x.shape[2:]) != tuple(out):
            xs = x[(slice(None), slice(None)) + tuple(slice(0, (o - 1) * s + 1, s) for o, s in zip(out, strides))]
            xs = _columns(xs, "conv.cols")
        else:
            xs = np.ascontiguousarray(x)
        return _pointwise(xs, w, group, out), False
    if cg == 1 and mg == 1 and nd == 2 and x.dtype in (np.float32, np.float64) and accel.enabled():
        return depthwise_accel(x, w, pb, strides, dilations, out, bias), True
    if cg == 1 and mg == 1 and nd == 2 and depthwise_pays(c, out):
        return depthwise_conv2d(x, w, pb, pe, strides, dilations, out, bias), True
    if all(st == 1 for st in strides):
        flat = _flat_conv(x, w, group, pb, pe, dilations, out, bias)
        if flat is not None:
            return flat, True
    if nd == 2 and x.dtype in _FLOATS and accel.enabled():
        return im2col_conv(x, w, group, pb, strides, dilations, out), False
    xp = _padded(x, pb, pe)
    view = window_view(xp.reshape(n_img, group, cg, *xp.shape[2:]), kernel, strides, dilations, out)
    if nd > 1 and n_img * c * kk * p_out * x.itemsize > 2 * _CHUNK_BYTES:
        # Large inputs: im2col a band of output rows at a time so the columns stay in cache.
        rows = out[0]
        per_row = n_img * c * kk * math.prod(out[1:]) * x.itemsize
        step = max(1, _CHUNK_BYTES // max(per_row, 1))
        y = np.empty((n_img, group, mg, rows, math.prod(out[1:])), dtype=x.dtype)
        wm = w.reshape(group, mg, cg * kk)
        for r0 in range(0, rows, step):
            r1 = min(rows, r0 + step)
            band = view[(slice(None),) * (3 + nd) + (slice(r0, r1),)]
            cols = _columns(band, "conv.cols").reshape(n_img, group, cg * kk, (r1 - r0) * math.prod(out[1:]))
            y[:, :, :, r0:r1, :] = np.matmul(wm, cols).reshape(n_img, group, mg, r1 - r0, -1)
        return y.reshape(n_img, m, *out), False
    cols = _columns(view, "conv.cols").reshape(n_img, group, cg * kk, p_out)
    y = np.matmul(w.reshape(group, mg, cg * kk), cols)
    return y.reshape(n_img, m, *out), False


def _pointwise(xs: np.ndarray, w: np.ndarray, group: int, out: Sequence[int]) -> np.ndarray:
    """A 1x1 convolution of ``xs`` ``(N, C, *out)``, C-contiguous (the input, or its strided places copied): one
    product of the weights ``(M, C/group)`` per group, ``(N, M, *out)``."""
    n_img, c = xs.shape[:2]
    m = w.shape[0]
    if n_img == 1 and group == 1:
        # One image, one group (a mobile CNN's pointwise layers at batch 1, its squeeze-excitation on 1x1 maps):
        # the 2-D product, the same BLAS call as the stacked one (the same values) without np.matmul's broadcasting
        # of the stacks, a few microseconds per call.
        return np.dot(w.reshape(m, c), xs.reshape(c, math.prod(out))).reshape(1, m, *out)
    y = np.matmul(w.reshape(group, m // group, c // group), xs.reshape(n_img, group, c // group, math.prod(out)))
    return y.reshape(n_img, m, *out)


def _padded(x: np.ndarray, pb: Sequence[int], pe: Sequence[int]) -> np.ndarray:
    """``pad_spatial(x, pb, pe)`` in this thread's scratch buffer (``x`` itself when there is no padding): the
    padded copy lives only while the columns are built from it."""
    return pad_spatial(x, pb, pe, name="conv.pad")


def depthwise_for_shape(
    x_shape: tuple[int, ...],
    dtype: Any,
    pb: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out: Sequence[int],
    channels_last: bool | None = None,
) -> Callable[[np.ndarray, np.ndarray, np.ndarray | None], np.ndarray]:
    """The depthwise convolution (one input and one output channel per group) of inputs of one shape and float type
    by the compiled loops of :mod:`onnxcore.kernels.accel`, as a callable ``(x, w, bias)``: its arguments to the
    loops made once (a plan step runs it on every run of the shape), the planes ``(image, channel)`` split over the
    kernel threads; ``channels_last`` picks the loop (None: by :func:`_dw_channels_last`'s rule)."""
    n_img, c = x_shape[:2]
    dt = np.dtype(dtype)
    zeros = np.zeros(c, dt)
    pads = np.asarray(pb[:2], np.int64)
    st = np.asarray(strides[:2], np.int64)
    dl = np.asarray(dilations[:2], np.int64)
    oh, ow = out[0], out[1]
    large = n_img * c * oh * ow >= 1 << 16
    jit = accel.jit_cnn()
    if _DW_CHANNELS_LAST(c, out, strides) if channels_last is None else channels_last:
        # Small images, many channels: channels-last, the channels the vectorised inner loop. The loop reads and
        # writes NCHW itself, the input rows it needs copied channels-last into this thread's scratch buffers (a
        # numpy transpose of the whole tensor in and out cost twice the loop).
        fl = jit.depthwise2d_nchw_cl
        h, w_in = x_shape[2], x_shape[3]
        # The weights channels-last, kept for the weights array they were made from (a plan's constant: made once,
        # not on every run; the pair replaced whole, so a thread reads a matching one).
        made: list[tuple[np.ndarray | None, np.ndarray | None]] = [(None, None)]

        def run_channels_last(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
            bc = zeros if bias is None else np.ascontiguousarray(bias, dtype=dt)
            xc = np.ascontiguousarray(x, dtype=dt)
            w_of, wl = made[0]
            if w_of is not w or wl is None or w.flags.writeable:
                wl = np.ascontiguousarray(w.reshape(c, *w.shape[2:]).transpose(1, 2, 0), dtype=dt)
                made[0] = (w, wl)
            y = np.empty((n_img, c, oh, ow), dt)

            def rows(a: int, b: int) -> None:
                xl = scratch("conv.dw.x", (h, w_in, c), dt)
                fl(xc, wl, bc, y, pads, st, dl, xl, scratch("conv.dw.tile", (ow, c), dt), a, b)

            if large:
                parallel_for(rows, n_img * oh, threads=active_threads(), size=y.size)
            else:
                rows(0, n_img * oh)  # (one thread: without parallel_for's call)
            return y

        return run_channels_last
    fn = jit.depthwise2d if all(v == 1 for v in strides[:2]) else jit.depthwise2d_strided

    def run(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
        bc = zeros if bias is None else np.ascontiguousarray(bias, dtype=dt)
        xc = np.ascontiguousarray(x)
        wc = np.ascontiguousarray(w.reshape(c, *w.shape[2:]), dtype=dt)
        y = np.empty((n_img, c, oh, ow), dt)
        if large:
            parallel_for(
                lambda a, b: fn(xc, wc, bc, y, pads, st, dl, a, b), n_img * c, threads=active_threads(), size=y.size
            )
        else:
            fn(xc, wc, bc, y, pads, st, dl, 0, n_img * c)  # (one thread: the loop called directly)
        return y

    return run


def planar_for_shape(
    x_shape: tuple[int, ...],
    dtype: Any,
    w_shape: tuple[int, ...],
    pb: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out: Sequence[int],
) -> Callable[[np.ndarray, np.ndarray, np.ndarray | None], np.ndarray]:
    """A 2-D convolution of inputs of one shape and float type by the accelerator's plane-by-plane loop
    (``accel.jit_cnn().conv2d_planar``: every tap of the few input channels of a group summed over long runs of
    each output plane), as a callable ``(x, w, bias)``, its units ``(image, group)`` split over the kernel threads.
    A candidate of the measured choice of a path (``kernels/_conv_choice.py``) where im2col and BLAS multiply
    matrices of few rows: an RGB stem, the grouped layers of RegNet."""
    n_img, c = x_shape[:2]
    m, cg = w_shape[:2]
    groups = c // cg
    dt = np.dtype(dtype)
    zeros = np.zeros(m, dt)
    pads = np.asarray(pb[:2], np.int64)
    st = np.asarray(strides[:2], np.int64)
    dl = np.asarray(dilations[:2], np.int64)
    large = n_img * m * out[0] * out[1] >= 1 << 16
    fn = accel.jit_cnn().conv2d_planar

    def run(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
        bc = zeros if bias is None else np.ascontiguousarray(bias, dtype=dt)
        xc = np.ascontiguousarray(x, dtype=dt)
        wc = np.ascontiguousarray(w, dtype=dt)
        y = np.empty((n_img, m, out[0], out[1]), dt)
        parallel_for(
            lambda a, b: fn(xc, wc, bc, y, pads, st, dl, a, b),
            n_img * groups,
            threads=active_threads() if large else 1,
            size=y.size,
        )
        return y

    return run


def depthwise_accel(
    x: np.ndarray,
    w: np.ndarray,
    pb: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out: Sequence[int],
    bias: np.ndarray | None,
    channels_last: bool | None = None,
) -> np.ndarray:
    """:func:`depthwise_for_shape` for ``x``'s shape, run once."""
    return depthwise_for_shape(x.shape, x.dtype, pb, strides, dilations, out, channels_last)(x, w, bias)


def _dw_channels_last(c: int, out: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether the channels-last compiled depthwise loop beats the planar ones (measured at one thread, kernel alone:
    with a stride, from 64 channels on outputs of up to 10 x 10 and from 96 on up to 14 x 14, 1.1x to 6x faster, the
    strided planar loop's phases costing most on small planes; without one, only for the smallest outputs of many
    channels, 5 x 5 from 240 channels and 7 x 7 from 480, where the planar loop's cost per plane is larger than its
    sums)."""
    n = out[0] * out[1]
    if any(s > 1 for s in strides):
        return (c >= 64 and n <= 100) or (c >= 96 and n <= 196)
    return (c >= 240 and n <= 25) or (c >= 480 and n <= 49)


_DW_CHANNELS_LAST = _dw_channels_last


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

# Size of one im2col band: the columns of a band are built and consumed while in the L2 cache.
_CHUNK_BYTES = 1 << 21


def _chunked_matmul(
    wm: np.ndarray, view: np.ndarray, n_img: int, group: int, k_rows: int, length: int, y: np.ndarray
) -> np.ndarray:
    """``wm @ view.reshape(n_img, group, k_rows, length)`` into ``y`` ``(n_img, group, M/group, length)``, building
    the columns in bands."""
    total = n_img * group * k_rows * length * view.itemsize
    if total <= 2 * _CHUNK_BYTES:
        return np.matmul(wm, _columns(view, "conv.cols").reshape(n_img, group, k_rows, length), out=y)
    step = max(64, _CHUNK_BYTES // (n_img * group * k_rows * view.itemsize))
    for t0 in range(0, length, step):
        t1 = min(length, t0 + step)
        cols = _columns(view[..., t0:t1], "conv.cols").reshape(n_img, group, k_rows, t1 - t0)
        np.matmul(wm, cols, out=y[..., t0:t1])
    return y


def _columns(view: np.ndarray, name: str | None = None) -> np.ndarray:
    """A C-contiguous copy of an im2col ``view`` (the columns BLAS multiplies), made on the kernel threads when it is
    large: the copy is the part of a convolution BLAS does not spread over the cores. With ``name``, the copy is
    this thread's scratch buffer of that name (:mod:`onnxcore.kernels._scratch`: the caller consumes it before the
    next request): fresh columns of a few megabytes cost more in page faults than the copy itself."""
    if view.flags.c_contiguous:
        return view
    out = np.empty(view.shape, view.dtype) if name is None else scratch(name, view.shape, view.dtype)
    copy_split(out, view)
    return out


# The flat layout computes outputs on the padded grid's row pitch; skip it when the wasted
# columns would exceed this fraction of the useful ones.
_FLAT_WASTE = 0.15
# Rows shorter than this make the strided im2col copy slow (numpy's per-row overhead).
_SHORT_ROW = 16


def _tap_matmul(
    w: np.ndarray, buf: np.ndarray, offsets: Sequence[int], group: int, length: int, y: np.ndarray
) -> np.ndarray:
    """``sum_k W[..., k] @ buf[..., off_k : off_k + length]``: one matmul per kernel offset, no im2col.

    Each offset's operand is a contiguous slice of the flattened padded image, which BLAS reads in
    place; the partial products are summed a band of columns at a time so they stay in cache, into ``y``
    ``(N, group, M/group, length)``.
    """
    n_img, c = buf.shape[:2]
    m = w.shape[0]
    cg, mg = c // group, m // group
    kk = len(offsets)
    wk = np.ascontiguousarray(w.reshape(group, mg, cg, kk).transpose(3, 0, 1, 2))
    src = buf.reshape(n_img, group, cg, buf.shape[-1])
    step = max(256, _TAP_BAND_BYTES // ((cg + mg) * group * n_img * buf.itemsize))
    tmp = scratch("conv.taps", (n_img, group, mg, min(step, length)), buf.dtype)
    for t0 in range(0, length, step):
        t1 = min(length, t0 + step)
        yc = y[..., t0:t1]
        tc = tmp[..., : t1 - t0]
        np.matmul(wk[0], src[..., offsets[0] + t0 : offsets[0] + t1], out=yc)
        for k in range(1, kk):
            np.matmul(wk[k], src[..., offsets[k] + t0 : offsets[k] + t1], out=tc)
            yc += tc
    return y


_TAP_BAND_BYTES = 1 << 20


def _flat_conv(
    x: np.ndarray,
    w: np.ndarray,
    group: int,
    pb: Sequence[int],
    pe: Sequence[int],
    dilations: Sequence[int],
    out: Sequence[int],
    bias: np.ndarray | None,
) -> np.ndarray | None:
    """Stride-1 convolution plus ``bias`` on the flattened padded image (``None`` when not worthwhile).

    With stride 1, output ``o`` and kernel offset ``k`` read padded position ``o + k*d``; in the
    flattened padded image that is ``flat(o) + flat(k*d)``, so each kernel offset is one
    contiguous slice of length ``out[0] * prod(padded[1:])``. The im2col copy then runs over long
    contiguous rows; the surplus columns (positions past ``out`` along the inner axes) are
    cropped at the end.
    """
    n_img, c = x.shape[:2]
    m = w.shape[0]
    cg, mg = c // group, m // group
    kernel = w.shape[2:]
    nd = len(kernel)
    padded = [s + b + e for s, b, e in zip(x.shape[2:], pb, pe)]
    inner_padded = math.prod(padded[1:])
    inner_out = math.prod(out[1:])
    if inner_out == 0 or inner_padded > (1 + _FLAT_WASTE) * inner_out:
        return None
    if cg * math.prod(kernel) < 4 * mg and out[-1] >= _SHORT_ROW:
        # Few columns per output channel: the final crop (a pass over the output) costs more than
        # the long-row im2col saves; rows are long enough for the strided copy.
        return None
    pitch = [math.prod(padded[i + 1 :]) for i in range(nd)]
    length = out[0] * inner_padded
    offsets = [sum(k * d * p for k, d, p in zip(offs, dilations, pitch))
               for offs in itertools.product(*(range(k) for k in kernel))]  # fmt: skip
    total = math.prod(padded)
    extra = max(0, max(offsets) + length - total)
    buf = scratch("conv.flat", (n_img, c, total + extra), x.dtype)
    buf.fill(0)
    copy_split(
        buf[:, :, :total].reshape(n_img, c, *padded)[
            (slice(None), slice(None)) + tuple(slice(b, b + s) for b, s in zip(pb, x.shape[2:]))
        ],
        x,
    )
    item = buf.itemsize
    kk = len(offsets)
    if kk > 1 and 3 * mg <= 2 * cg:
        # Few output channels per input channel: summing one matmul per kernel offset reads the
        # image in place, where the column matrix would copy it kk times (1.5-1.8x faster measured).
        y = _tap_matmul(w, buf, offsets, group, length, _sums((n_img, group, mg, length), x.dtype, out, padded))
        return _cropped(y.reshape(n_img, m, out[0], *padded[1:]), out, bias)
    # Kernel offsets are not one uniform stride in general; view cols as (N, C, *kernel, L)
    # (or (N, C, kk, L) when they are) and let one reshape do the im2col copy.
    if kk == 1 or len({b - a for a, b in itertools.pairwise(offsets)}) == 1:
        step = offsets[1] - offsets[0] if kk > 1 else 0
        view = as_strided(buf, shape=(n_img, c, kk, length),
                          strides=(buf.strides[0], buf.strides[1], step * item, item), writeable=False)  # fmt: skip
    else:
        kstr = tuple(d * p * item for d, p in zip(dilations, pitch))
        view = as_strided(buf, shape=(n_img, c, *kernel, length),
                          strides=(buf.strides[0], buf.strides[1], *kstr, item), writeable=False)  # fmt: skip
    # Depthwise convolutions become C tiny matmuls (mg x kk) @ (kk x L) in one batched call.
    sums = _sums((n_img, group, mg, length), x.dtype, out, padded)
    y = _chunked_matmul(w.reshape(group, mg, cg * kk), view, n_img, group, cg * kk, length, sums)
    return _cropped(y.reshape(n_img, m, out[0], *padded[1:]), out, bias)


def _sums(shape: tuple[int, ...], dtype: Any, out: Sequence[int], padded: Sequence[int]) -> np.ndarray:
    """The array the flat layout's sums go to: this thread's scratch buffer when :func:`_cropped` copies them out
    (the output rows are shorter than the padded grid's pitch), else the result itself (a fresh array)."""
    if tuple(padded[1:]) == tuple(out[1:]):
        return np.empty(shape, dtype)
    return scratch("conv.sums", shape, dtype)


def _cropped(y: np.ndarray, out: Sequence[int], bias: np.ndarray | None) -> np.ndarray:
    """The leading ``out`` extents of ``y``'s spatial axes plus ``bias`` per channel: one pass, not two."""
    b = None if bias is None else bias.reshape((1, -1) + (1,) * len(out))
    if tuple(y.shape[2:]) == tuple(out):
        if b is not None:
            copy_split(y, y, add=b)
        return y
    view = y[(slice(None), slice(None)) + tuple(slice(0, o) for o in out)]
    res = np.empty(view.shape, y.dtype)
    copy_split(res, view, add=b)
    return res


def _key(value: Any) -> Any:
    # INTS attributes arrive as lists; a hashable copy lets the geometry below be cached.
    return tuple(value) if isinstance(value, list | np.ndarray) else value


@functools.lru_cache(maxsize=4096)
def _conv_geometry(
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    group: int,
    kernel_shape: Any,
    strides: Any,
    dilations: Any,
    pads: Any,
    auto_pad: str,
) -> tuple[list[int], list[int], list[int], list[int], list[int], list[int], list[int]]:
    """Checked strides, dilations, pads and output extents of a Conv, and the shapes of its padded input
    and output: the same for every run of a node, so they are computed once per shape (a model's Conv
    calls cost tens of microseconds each otherwise)."""
    check_conv_shapes(x_shape, w_shape, group, kernel_shape, transpose=False)
    nd = len(x_shape) - 2
    kernel = list(w_shape[2:])
    st = spatial_attr(strides, nd, 1, "strides", least=1)
    dil = spatial_attr(dilations, nd, 1, "dilations", least=1)
    pb, pe, out = conv_pads(x_shape[2:], kernel, st, dil, pads, auto_pad)
    padded = [*x_shape[:2], *(s + b + e for s, b, e in zip(x_shape[2:], pb, pe))]
    return st, dil, pb, pe, out, padded, [x_shape[0], w_shape[0], *out]


def conv_geometry(
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    *,
    auto_pad: str = "NOTSET",
    dilations: Any = None,
    group: int = 1,
    kernel_shape: Any = None,
    pads: Any = None,
    strides: Any = None,
) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    """Strides, dilations, leading and trailing pads and output extents of a Conv with these attributes.

    Raises:
        LimitError: the padded input or the output would exceed the element limit (pads are attributes of an
            untrusted model; checked here, outside the cache, against the limits in effect).
    """
    st, dil, pb, pe, out, padded, y_shape = _conv_geometry(
        x_shape, w_shape, group, _key(kernel_shape), _key(strides), _key(dilations), _key(pads), auto_pad
    )
    check_elements(padded, "Conv (padded input)")
    check_elements(y_shape, "Conv")
    # Along an axis of one output the stride is never applied: taken as 1 there, so that no path sizes its work
    # by it (the strided depthwise path keeps stride_y x stride_x phase buffers: a stride of 2**31 - 1 asked for
    # terabytes, issue 41). The values are the same.
    st = [1 if o == 1 else s for s, o in zip(st, out)]
    return st, dil, pb, pe, out


def conv_for_shape(
    x_shape: tuple[int, ...],
    dtype: Any,
    w_shape: tuple[int, ...],
    *,
    auto_pad: str = "NOTSET",
    dilations: Any = None,
    group: int = 1,
    kernel_shape: Any = None,
    pads: Any = None,
    strides: Any = None,
) -> Callable[[np.ndarray, np.ndarray, np.ndarray | None], np.ndarray]:
    """The Conv kernel for inputs of one shape and element type and weights of one shape: the geometry is computed
    (and checked against the limits in effect) once, here, and the callable ``(X, W, B)`` computes what
    :func:`conv` computes for them (a plan step calls it on every run of the shape: a Conv's geometry and checks
    are a few microseconds, a small layer's product about ten).

    Raises:
        EvaluationError, LimitError: as :func:`conv`, for these shapes and attributes.
    """
    st, dil, pb, pe, out = conv_geometry(
        x_shape,
        w_shape,
        auto_pad=auto_pad,
        dilations=dilations,
        group=group,
        kernel_shape=kernel_shape,
        pads=pads,
        strides=strides,
    )
    dt = np.dtype(dtype)
    wd = work_dtype(dt)
    n_img, m, cg = x_shape[0], w_shape[0], w_shape[1]
    mg = m // group
    p_out = math.prod(out)
    # The paths _conv_paths would take, decided once: a 1x1 kernel without pads is a product (at stride 1 of the
    # input itself: the pointwise layers of a mobile CNN), a depthwise 2-D layer the accelerator's loops.
    one_by_one = math.prod(w_shape[2:]) == 1 and not any(pb) and not any(pe)
    floats = dt == wd and dt in _FLOATS
    if n_img and p_out and not one_by_one and cg == mg == 1 and len(out) == 2 and floats and accel.enabled():
        depthwise = depthwise_for_shape(x_shape, dt, pb, st, dil, out)

        def run_depthwise(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
            return depthwise(x, w, check_bias(b, m))

        return run_depthwise
    pointwise = bool(n_img and m and p_out) and one_by_one and tuple(x_shape[2:]) == tuple(out)
    if pointwise and floats and n_img == 1 and group == 1:
        c, y_shape = x_shape[1], (1, m, *out)

        def run_product(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
            # One image, one group, float32/float64 (a mobile CNN's pointwise layers, its squeeze-and-excitation
            # on 1x1 maps): run's steps for them without its conversions to the type they have (_pointwise's
            # product, then the bias), a few microseconds of a step whose product may take one.
            bias = check_bias(b, m)
            y = np.dot(w.reshape(m, c), np.ascontiguousarray(x).reshape(c, p_out)).reshape(y_shape)
            if bias is not None:
                add_channel_bias(y, bias.astype(dt, copy=False))
            return y

        return run_product

    def run(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        bias = check_bias(b, m)
        wb = None if bias is None else bias.astype(wd, copy=False)
        xw, ww = x.astype(wd, copy=False), w.astype(wd, copy=False)
        if pointwise:
            y, biased = _pointwise(np.ascontiguousarray(xw), ww, group, out), False
        else:
            y, biased = _conv_paths(xw, ww, group, pb, pe, st, dil, out, wb)
        if wb is not None and not biased:
            add_channel_bias(y, wb)
        return y.astype(dt, copy=False)

    return run


@kernel("Conv", 1, 11, 22)
def conv(
    X: np.ndarray,
    W: np.ndarray,
    B: np.ndarray | None = None,
    *,
    auto_pad: str = "NOTSET",
    dilations: list[int] | None = None,
    group: int = 1,
    kernel_shape: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> np.ndarray:
    """Conv-1/11/22: N-D grouped convolution (SAME_* gives ``out = ceil(in / stride)`` in all three).

    Conv-1's text says SAME keeps "the output spatial size match the input", which for
    stride 1 is the same rule; Conv-11 stated it for any stride.
    """
    return conv_for_shape(
        X.shape,
        X.dtype,
        W.shape,
        auto_pad=auto_pad,
        dilations=dilations,
        group=group,
        kernel_shape=kernel_shape,
        pads=pads,
        strides=strides,
    )(X, W, B)
