"""A Conv's path chosen per shape by measurement (a plan-time choice among computations of the same values,
Clause 8.2).

The Conv kernel picks its path by rules measured once on one machine (``kernels/conv.py``); on another machine,
BLAS library or image size the best path differs. :class:`MeasuredConv` times the candidates that take a layer the
first time a shape arrives and keeps the fastest:

- every 2-D Conv but a depthwise one: the kernel's own path (im2col or the flat layout, channels first) and the
  channels-last columns (:func:`channels_last_conv`: each column row gathers runs of C/group contiguous values,
  where channels-first columns of a small image copy rows of a few values, and the product is ``(pixels x
  kk*C/group) @ (kk*C/group x M/group)`` per group, the other orientation for BLAS); and with the accelerator,
  for a kernel wider than 1 x 1 of at most :data:`MAX_PLANAR_TAPS` taps per output plane, the compiled
  plane-by-plane loop
  (:func:`onnxcore.kernels.conv.planar_for_shape`);
- a 2-D depthwise Conv with the accelerator: the kernel's rule, the compiled planar loop, the compiled
  channels-last loop, and the numpy depthwise path.

Every candidate computes the same sums in float32 (or float64) arithmetic, in a different order: results agree
within the type's rounding, and the tests hold each candidate against the reference Conv. The choice is cached
process-wide by the layer's shapes and attributes (not per session), so that two sessions of one model in a
process compute the same bits whatever their thread counts; the measurement is bounded (a few runs of each
candidate, fewer for a slow layer, none above :data:`MAX_MEASURED_SECONDS`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from onnxcore.kernels import accel
from onnxcore.kernels._depthwise import depthwise_conv2d
from onnxcore.kernels._im2col import channels_last_padded
from onnxcore.kernels._scratch import scratch
from onnxcore.kernels.conv import conv, conv_for_shape, conv_geometry, depthwise_for_shape, planar_for_shape

__all__ = [
    "MARGIN",
    "MAX_PLANAR_TAPS",
    "MAX_MEASURED_SECONDS",
    "MeasuredConv",
    "candidates",
    "channels_last_conv",
    "channels_last_weights",
    "choose",
    "clear_choices",
    "conv_key",
]

MAX_MEASURED_SECONDS = 0.05
"""A layer whose run takes longer is not measured: the kernel's own path runs (its share of a run is large enough
that a tenth of gain or loss shows in a benchmark, and measuring it would cost a noticeable first run). Its first
call may hold one-time costs (numba loading a compiled loop), so a second one decides."""
_ROUNDS = 3  # runs of each candidate (the candidates taking turns); 1 for layers slower than _SLOW_SECONDS
_SLOW_SECONDS = 0.005
MAX_PLANAR_TAPS = 16 * 9
"""The plane-by-plane loop is a candidate for a Conv whose output plane sums at most this many taps (input channels
of a group times kernel taps: a 3 x 3 layer of 16 channels per group): with more, BLAS's product gains."""
MARGIN = 0.85
"""Another path replaces the kernel's own only when its best time is below this fraction of the kernel's: on a
shared machine one measurement's noise would otherwise pick a path that is not faster."""

# (shapes, dtype, attributes, accelerator on) -> the name of the fastest candidate.
_CHOICES: dict[tuple[Any, ...], str] = {}
_LOCK = threading.Lock()


def clear_choices() -> None:
    """Forget every measured choice (tests; a process whose load changed)."""
    with _LOCK:
        _CHOICES.clear()


def channels_last_conv(
    x: np.ndarray,
    wt: np.ndarray,
    bias: np.ndarray | None,
    kernel: Sequence[int],
    pb: Sequence[int],
    pe: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out: Sequence[int],
) -> np.ndarray:
    """2-D convolution of ``x`` ``(N, C, H, W)`` by weights ``wt`` ``(group, kh * kw * C/group, M/group)`` (rows by
    tap row, tap column, then channel: :func:`channels_last_weights`) plus ``bias``, through channels-last columns.

    The padded copy, the columns and the product are this thread's scratch buffers; the result is a fresh array.
    """
    n, c, h, wd = x.shape
    group, _, mg = wt.shape
    cg = c // group
    oh, ow = out
    kh, kw = kernel
    p = n * oh * ow
    xp = scratch("convchoice.x", (n, h + pb[0] + pe[0], wd + pb[1] + pe[1], c), x.dtype)
    channels_last_padded(x, xp, int(pb[0]), int(pb[1]))
    if x.dtype == wt.dtype and x.dtype in (np.float32, np.float64) and x.flags.c_contiguous and accel.enabled():
        return _compiled_channels_last(x, wt, bias, xp, kernel, strides, dilations, out)
    s = xp.strides
    # Windows by group first: (group, N, oh, ow, kh, kw, C/group), each column row a run of C/group values.
    windows = as_strided(
        xp,
        (group, n, oh, ow, kh, kw, cg),
        (cg * s[3], s[0], s[1] * strides[0], s[2] * strides[1], s[1] * dilations[0], s[2] * dilations[1], s[3]),
        writeable=False,
    )
    cols = scratch("convchoice.cols", windows.shape, x.dtype)
    np.copyto(cols, windows)
    yt = np.matmul(cols.reshape(group, p, kh * kw * cg), wt, out=scratch("convchoice.y", (group, p, mg), x.dtype))
    # (group, N * oh * ow, M/group) -> (N, M, oh, ow), the bias added in the same pass; a copy always (yt is scratch).
    y = np.empty((n, group, mg, oh * ow), x.dtype)
    src = yt.reshape(group, n, oh * ow, mg).transpose(1, 0, 3, 2)
    if bias is None:
        np.copyto(y, src)
    else:
        np.add(src, bias.reshape(1, group, mg, 1), out=y)
    return y.reshape(n, group * mg, oh, ow)


def _compiled_channels_last(
    x: np.ndarray,
    wt: np.ndarray,
    bias: np.ndarray | None,
    xp: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out: Sequence[int],
) -> np.ndarray:
    """:func:`channels_last_conv` with its copies compiled (``accel.jit_im2col()``: the columns from the padded
    channels-last image ``xp``, the products back to channels first with the bias): the same columns and the same
    product, so the same bits as numpy's copies, which cost a strided inner loop per run of C/group values (a
    RegNet layer of 400 channels in 25 groups on a 5 x 5 map: 215 -> 126 us, the product 60 of them)."""
    n = x.shape[0]
    group, taps, mg = wt.shape
    oh, ow = out
    fns = accel.jit_im2col()
    cols = scratch("convchoice.cols", (group, n * oh * ow, taps), x.dtype)
    sy, sx, dy, dx = (int(v) for v in (*strides[:2], *dilations[:2]))
    fns.window_runs(xp, cols, oh, ow, int(kernel[0]), int(kernel[1]), sy, sx, dy, dx)
    yt = np.matmul(cols, wt, out=scratch("convchoice.y", (group, n * oh * ow, mg), x.dtype))
    y = np.empty((n, group * mg, oh * ow), x.dtype)
    b = wt[0, 0] if bias is None else np.ascontiguousarray(bias)  # (a vector of the type, unread without a bias)
    fns.groups_to_nchw(yt, b, bias is not None, y)
    return y.reshape(n, group * mg, oh, ow)


def channels_last_weights(w: np.ndarray, group: int) -> np.ndarray:
    """Weights ``(M, C/group, kh, kw)`` as :func:`channels_last_conv` takes them: ``(group, kh * kw * C/group,
    M/group)``, contiguous."""
    m, cg, kh, kw = w.shape
    mg = m // group
    return np.ascontiguousarray(w.reshape(group, mg, cg, kh, kw).transpose(0, 3, 4, 2, 1).reshape(group, -1, mg))


Candidate = Callable[[np.ndarray, np.ndarray, "np.ndarray | None"], np.ndarray]


def candidates(
    call: Callable[..., Any], x: np.ndarray, w: np.ndarray, wt: Callable[[], np.ndarray], kw: dict[str, Any]
) -> dict[str, Candidate]:
    """The paths that take this Conv, by name (``"kernel"``, ``call`` itself, first); ``wt`` gives the weights in
    the channels-last layout (made once by the caller). Only ``"kernel"`` where no other path takes the layer."""
    if call is conv:
        # The registered Conv kernel: its geometry computed once for this shape (a per-run saving of microseconds).
        found: dict[str, Candidate] = {"kernel": conv_for_shape(x.shape, x.dtype, w.shape, **kw)}
    else:
        found = {"kernel": lambda a, v, b: call(a, v, b, **kw)}
    if x.ndim != 4 or x.dtype != w.dtype or x.dtype not in (np.float32, np.float64) or not x.size:
        return found
    group = int(kw.get("group", 1))
    st, dil, pb, pe, out = conv_geometry(x.shape, w.shape, **kw)
    m, cg = w.shape[:2]
    if not (cg == 1 and m == group == x.shape[1]):
        kernel = tuple(int(k) for k in w.shape[2:])
        found["channels_last"] = lambda a, v, b: channels_last_conv(a, wt(), b, kernel, pb, pe, st, dil, out)
        if accel.enabled() and 1 < kernel[0] * kernel[1] and cg * kernel[0] * kernel[1] <= MAX_PLANAR_TAPS:
            found["planar"] = planar_for_shape(x.shape, x.dtype, w.shape, pb, st, dil, out)
    else:
        if accel.enabled():
            found["planar"] = depthwise_for_shape(x.shape, x.dtype, pb, st, dil, out, False)
            found["channels_last"] = depthwise_for_shape(x.shape, x.dtype, pb, st, dil, out, True)
        found["numpy"] = lambda a, v, b: depthwise_conv2d(a, v, pb, pe, st, dil, out, b)
    return found


def conv_key(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, kw: dict[str, Any]) -> tuple[Any, ...]:
    """A Conv layer's shapes, types, bias presence, attributes and the accelerator's state: what a choice is kept by."""
    # INTS attributes arrive as lists (or arrays): hashable copies.
    attrs = tuple(
        sorted((k, tuple(np.asarray(v).ravel().tolist()) if isinstance(v, list | tuple | np.ndarray) else v)
               for k, v in kw.items())
    )  # fmt: skip
    return (x.shape, x.dtype.str, w.shape, w.dtype.str, b is None, attrs, accel.enabled())


class MeasuredConv:
    """A Conv kernel (``call``) that runs, for each shape, the fastest of :func:`candidates`, measured on the first
    run of that shape (the weights are constants of the plan: rearranged once, kept while they are the same
    array)."""

    __slots__ = ("_ready", "_ready_w", "_w", "_wt", "call")

    def __init__(self, call: Callable[..., Any]) -> None:
        self.call = call
        self._w: np.ndarray | None = None
        self._wt: np.ndarray | None = None
        # The chosen path by input shape, type and bias presence, for the weights ``_ready_w`` (a plan node's
        # constant, and its attributes fixed): one dictionary lookup per run once chosen.
        self._ready: dict[tuple[Any, ...], Candidate] = {}
        self._ready_w: np.ndarray | None = None

    def _channels_last_weights(self, w: np.ndarray, group: int) -> Callable[[], np.ndarray]:
        def get() -> np.ndarray:
            if self._w is not w or self._wt is None:
                wt = channels_last_weights(w, group)
                self._w, self._wt = w, wt
                return wt
            return self._wt

        return get

    def __call__(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, **kw: Any) -> np.ndarray:
        if type(x) is not np.ndarray or type(w) is not np.ndarray or (b is not None and type(b) is not np.ndarray):
            return self.call(x, w, b, **kw)
        if b is not None and b.dtype != w.dtype:
            return self.call(x, w, b, **kw)
        mine = (x.shape, x.dtype, b is None)
        if self._ready_w is w:
            fn = self._ready.get(mine)
            if fn is not None:
                return fn(x, w, b)
        else:
            self._ready, self._ready_w = {}, w
        found = candidates(self.call, x, w, self._channels_last_weights(w, int(kw.get("group", 1))), kw)
        choice, y = choose(conv_key(x, w, b, kw), found, x, w, b)
        if len(self._ready) < 64:  # (a node fed many shapes keeps the first 64)
            self._ready[mine] = found[choice]
        return found[choice](x, w, b) if y is None else y


def choose(
    key: tuple[Any, ...], found: dict[str, Candidate], x: np.ndarray, w: np.ndarray, b: np.ndarray | None
) -> tuple[str, np.ndarray | None]:
    """The name of the path ``found`` takes for ``key`` (a layer's shapes and attributes, :func:`conv_key`), and a
    result of it when this call measured it (None otherwise): the choice stored for the process, else the
    measured one (:func:`_measure`), stored. ``"kernel"`` where it is the only path."""
    choice = _CHOICES.get(key)
    if choice is not None:
        return choice, None
    if len(found) == 1:
        name, y = "kernel", None
    else:
        name, y = _measure(found, x, w, b)
    with _LOCK:
        # The first choice stored wins (another thread may have measured the same shape meanwhile).
        choice = _CHOICES.setdefault(key, name)
    return choice, (y if choice == name else None)


def _measure(found: dict[str, Candidate], x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> tuple[str, np.ndarray]:
    """The fastest candidate's name and a result of it: each runs ``_ROUNDS`` times (once for a slow layer, the
    candidates taking turns, so a change in the machine's load affects them alike), its best time counting; the
    kernel's own path unless another is faster by :data:`MARGIN`."""
    best: dict[str, float] = {}
    results: dict[str, np.ndarray] = {}
    t0 = time.perf_counter()
    results["kernel"] = found["kernel"](x, w, b)
    first = time.perf_counter() - t0
    if first > MAX_MEASURED_SECONDS:
        # A first call may hold one-time costs (numba loading a compiled loop: 0.2 s): a second one tells.
        t0 = time.perf_counter()
        results["kernel"] = found["kernel"](x, w, b)
        first = time.perf_counter() - t0
        if first > MAX_MEASURED_SECONDS:
            return "kernel", results["kernel"]
    rounds = 1 if first > _SLOW_SECONDS else _ROUNDS
    for _ in range(rounds):
        for name, fn in found.items():
            t0 = time.perf_counter()
            y = fn(x, w, b)
            t = time.perf_counter() - t0
            results[name] = y
            best[name] = min(best.get(name, t), t)
    name = min(best, key=lambda k: best[k])
    if best[name] >= MARGIN * best["kernel"]:
        name = "kernel"
    return name, results[name]
