"""Steps fused into a convolution (or another kernel making a fresh array), Clause 8.2; the matchers are
``onnxcore.runtime.optimize.fuse``, ``conv1d``, ``preactivation`` and ``reorder``.

- ``WithRelu``: a kernel (Conv, Gemm, Add, ...) followed by Relu applied in place on its fresh output;
- ``ConvActivation``: a Conv and the SiLU, erf GELU, HardSwish or Clip after it, the bias and the activation in one
  pass (the Clip in place);
- ``Conv1dTaps``: a 1-D Conv with constant weights as one product of the weights and the taps' slices;
- ``PreActivatedConv``: DenseNet's BatchNormalization -> Relu -> Conv as one clamp pass and a Conv with folded
  weights (:func:`preactivated_weights`);
- ``ProjectedPool``: AveragePool -> 1x1 Conv computed as the Conv, then the pool;
- ``WinogradConv``: a float32 3x3 Conv by Winograd's transforms where it gains (``kernels/_winograd.py``);
- ``MeasuredConv``: a 2-D Conv by the fastest of its paths for each shape, measured (``kernels/_conv_choice.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels._conv_choice import MeasuredConv
from onnxcore.kernels._epilogue import add_channel_bias, bias_clip_into, bias_relu_into, clip_into, relu_into
from onnxcore.kernels._winograd import MIN_CHANNELS, WinogradConv
from onnxcore.kernels.elementwise import gelu
from onnxcore.kernels.fused import FUSED_DOMAIN
from onnxcore.kernels.fused.affine import AffineChain
from onnxcore.kernels.fused.common import default_kernel
from onnxcore.kernels.fused.linear import LinearStep
from onnxcore.kernels.fused.passes import gelu_bias_accel, hard_swish_bias_accel, silu, swish_accel
from onnxcore.kernels.registry import kernel

__all__ = [
    "MIN_CHANNELS",
    "Conv1dTaps",
    "ConvActivation",
    "InPlaceRelu",
    "MeasuredConv",
    "PreActivatedConv",
    "ProjectedPool",
    "preactivated_weights",
]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class InPlaceRelu:
    """A kernel (Conv, Gemm, Add, ...) followed by Relu applied in place on its fresh output (one allocation less).

    With ``conv_bias`` (a Conv of float32 or float64 weights, whose bias is added to the finished sums in their
    type), the Conv runs without its bias and the bias and the Relu are one pass (:func:`bias_relu_into`): the same
    values as the Conv's bias then the Relu."""

    __slots__ = ("call", "conv_bias")

    def __init__(self, call: Callable[..., Any], conv_bias: bool = False) -> None:
        self.call, self.conv_bias = call, conv_bias

    def __call__(self, *args: Any, **kw: Any) -> Any:
        if self.conv_bias and len(args) == 3 and args[2] is not None:
            x, w, b = args
            y = self.call(x, w, None, **kw)
            if type(y) is np.ndarray and y.flags.writeable and y.dtype == b.dtype:
                return bias_relu_into(y, b)
            y = y + b.reshape((1, -1) + (1,) * (y.ndim - 2))
            return relu_into(y, y)
        y = self.call(*args, **kw)
        return relu_into(y, y if y.flags.writeable else None)


class ConvActivation:
    """A Conv followed by an activation (SiLU, the erf GELU or HardSwish, each one step of the plan): the Conv
    without its bias, then the bias and the activation in one pass over the output (``fused``: a compiled loop, or
    None when it does not take the types), else the bias added in place, as the Conv kernel adds it, and the
    activation's own step. Only for float32 and float64 weights, where the Conv adds its bias to the finished sums
    in the same type (so the sums are the same); ``label`` names the activation."""

    __slots__ = ("act", "call", "fused", "label")

    def __init__(
        self,
        call: Callable[..., Any],
        label: str,
        act: Callable[[np.ndarray], Any],
        fused: Callable[[np.ndarray, np.ndarray], np.ndarray | None],
    ) -> None:
        self.call, self.label, self.act, self.fused = call, label, act, fused

    def __call__(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, **kw: Any) -> np.ndarray:
        y = self.call(x, w, None, **kw)
        if b is not None:
            fast = self.fused(y, b)
            if fast is not None:
                return fast
            if y.flags.writeable and y.dtype == np.result_type(y, b):
                add_channel_bias(y, b.astype(y.dtype, copy=False))
            else:
                y = y + b.reshape((1, -1) + (1,) * (y.ndim - 2))
        return np.asarray(self.act(y))


def _swish_bias(y: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    return swish_accel(y, 1.0, b, inplace=True)


def _gelu_bias(y: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    return gelu_bias_accel(y, b, inplace=True)


def _hard_swish_bias(y: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    return hard_swish_bias_accel(y, b, inplace=True)


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


class PreActivatedConv:
    """``conv(relu(a x + b))`` as ``conv'(max(s x, -b/|a|))`` with the folded weights of
    :func:`fuse_preactivation`, ``x`` given whole or as the pieces of its concatenation along axis 1; other
    input types run the Concat, the chain and the Conv as written."""

    __slots__ = ("b", "b2", "chain", "clamp", "concat", "conv", "kw", "sign", "w", "w2")

    def __init__(
        self,
        chain: AffineChain,
        conv: Callable[..., Any],
        kw: dict[str, Any],
        w: np.ndarray,
        b: np.ndarray | None,
        w2: np.ndarray,
        b2: np.ndarray,
        clamp: np.ndarray,
        sign: np.ndarray | None,
        concat: Callable[..., Any] | None = None,
    ) -> None:
        self.chain, self.conv, self.kw, self.concat = chain, conv, kw, concat
        self.w, self.b, self.w2, self.b2 = w, b, w2, b2
        self.clamp, self.sign = clamp, sign
        for v in (w2, b2, clamp, sign):
            if v is not None:
                v.flags.writeable = False

    def __call__(self, *xs: np.ndarray) -> Any:
        z = self._clamped(xs)
        if z is None:
            x = xs[0] if self.concat is None else self.concat(*xs, axis=1)
            return self.conv(self.chain(x), self.w, self.b, **self.kw)
        return self.conv(z, self.w2, self.b2, **self.kw)

    def _clamped(self, xs: tuple[np.ndarray, ...]) -> np.ndarray | None:
        """``max(s x, clamp)`` written piece by piece into one new array; None for inputs it does not fit."""
        first = xs[0]
        dtype, rank = self.w2.dtype, self.w2.ndim
        if any(x.dtype != dtype or x.ndim != rank or x.shape[2:] != first.shape[2:] for x in xs):
            return None
        if any(x.shape[0] != first.shape[0] for x in xs) or sum(x.shape[1] for x in xs) != self.clamp.shape[0]:
            return None
        if len(xs) == 1 and self.sign is None:
            return np.maximum(first, self.clamp)
        z = np.empty((first.shape[0], self.clamp.shape[0], *first.shape[2:]), dtype)
        c0 = 0
        for x in xs:
            c1 = c0 + x.shape[1]
            part = z[:, c0:c1]
            if self.sign is None:
                np.maximum(x, self.clamp[c0:c1], out=part)
            else:
                np.multiply(x, self.sign[c0:c1], out=part)
                np.maximum(part, self.clamp[c0:c1], out=part)
            c0 = c1
        return z


def preactivated_weights(
    chain: AffineChain, w: np.ndarray, b0: np.ndarray | None, group: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None] | None:
    """For ``conv(relu(a x + b))`` (``chain`` the affine chain ending in Relu, per input channel ``a``, ``b``): the
    Conv's weights scaled by ``|a|``, its bias with ``b`` summed through the weights, the clamp ``-b / |a|`` and the
    signs of ``a`` (None when all positive), so that the chain is ``max(s x, clamp)`` (Clause 11.4: exact in real
    arithmetic). None when the chain does not compose per channel, some ``a`` is 0, or a clamp overflows."""
    c_in = w.shape[1] * group
    if w.shape[0] % group:
        return None
    ab = chain.per_channel(c_in, w.dtype, w.ndim)
    if ab is None:
        return None
    a, b = ab
    with np.errstate(all="ignore"):
        clamp = (-b / np.abs(a)).astype(w.dtype)
    if not (np.all(a != 0) and np.all(np.isfinite(clamp))):
        return None
    m, cg = w.shape[0], w.shape[1]
    # The input channel of weight [o, i] is (o // (m / group)) * cg + i.
    rows = np.arange(m)[:, None] // (m // group) * cg + np.arange(cg)[None, :]
    spatial = (1,) * (w.ndim - 2)
    w64 = w.astype(np.float64)
    w2 = (w64 * np.abs(a)[rows].reshape(m, cg, *spatial)).astype(w.dtype)
    b64 = np.zeros(m) if b0 is None else b0.astype(np.float64).reshape(m)
    b2 = (b64 + (w64 * b[rows].reshape(m, cg, *spatial)).reshape(m, -1).sum(axis=1)).astype(w.dtype)
    sign = None if np.all(a > 0) else np.sign(a).astype(w.dtype).reshape(c_in, *spatial)
    return w2, b2, clamp.reshape(c_in, *spatial), sign


class ProjectedPool:
    """``AveragePool -> Conv 1x1 (-> Relu)`` computed as ``Conv 1x1 without bias -> AveragePool -> + bias
    (-> Relu)``; the Conv's inputs and attributes are its own, the pool's attributes bound at plan time."""

    __slots__ = ("conv", "pool", "pool_kw", "relu")

    def __init__(self, conv: Callable[..., Any], pool: Callable[..., Any], pool_kw: dict[str, Any], relu: bool) -> None:
        self.conv, self.pool, self.pool_kw, self.relu = conv, pool, pool_kw, relu

    def __call__(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, **kw: Any) -> np.ndarray:
        y = self.pool(self.conv(x, w, None, **kw), **self.pool_kw)
        if b is not None:
            add_channel_bias(y, b.astype(y.dtype, copy=False))
        if self.relu:
            relu_into(y, y)
        return y


# ------------------------------------------------------------------------------------------------ the kernels
# ``conv`` / ``kernel``: the node's own kernel (default: the newest registered Conv).


def _prepare_with_relu(
    constants: Sequence[Any], *, kernel: Callable[..., Any] | None = None, conv_bias: bool = False
) -> Callable[..., Any]:
    # A linear step applies the Relu itself (with its bias, in one pass); any other kernel is wrapped.
    if isinstance(kernel, LinearStep) and not conv_bias:
        return kernel.with_relu()
    return InPlaceRelu(kernel or default_kernel("Conv"), conv_bias)


@kernel("WithRelu", 1, domain=FUSED_DOMAIN, prepare=_prepare_with_relu, prepare_constants=True)
def with_relu(
    *inputs: Any, kernel: Callable[..., Any] | None = None, conv_bias: bool = False, **attributes: Any
) -> Any:
    """``kernel`` on the inputs and attributes, then Relu in place on its fresh result (``conv_bias``: ``kernel`` is
    a Conv of float32 or float64 weights, its bias added in the Relu's pass)."""
    return _prepare_with_relu(inputs, kernel=kernel, conv_bias=conv_bias)(*inputs, **attributes)


# The activations ConvActivation takes, by label: the activation of one array and the compiled bias pass.
_ACTIVATIONS: dict[str, tuple[Callable[[np.ndarray], Any], Callable[[np.ndarray, np.ndarray], Any]]] = {
    "SiLU": (silu, _swish_bias),
    "GELU": (gelu, _gelu_bias),
}


class ClipInPlace:
    """``Clip(y, lo, hi)`` written into ``y`` when it is writeable: ``np.clip`` is the Clip kernel's ``Min(max,
    Max(input, min))`` (max wins when min > max; NaN stays NaN), in the bounds' type, the Conv's."""

    __slots__ = ("hi", "lo")

    def __init__(self, lo: np.ndarray, hi: np.ndarray) -> None:
        self.lo, self.hi = lo, hi

    def __call__(self, y: np.ndarray) -> np.ndarray:
        return clip_into(y, self.lo, self.hi, y if y.flags.writeable and y.dtype == self.lo.dtype else None)


class _BiasClip:
    """The bias and the Clip of a ConvActivation in one pass (:func:`bias_clip_into`, in place); None (the two
    steps) for an output it cannot write or of another type."""

    __slots__ = ("hi", "lo")

    def __init__(self, lo: np.ndarray, hi: np.ndarray) -> None:
        self.lo, self.hi = lo, hi

    def __call__(self, y: np.ndarray, b: np.ndarray) -> np.ndarray | None:
        if type(y) is not np.ndarray or not y.flags.writeable or y.dtype != b.dtype or y.dtype != self.lo.dtype:
            return None
        return bias_clip_into(y, b, self.lo, self.hi)


def _prepare_conv_activation(
    constants: Sequence[Any],
    *,
    activation: str,
    conv: Callable[..., Any] | None = None,
    act: Callable[..., Any] | None = None,
    bounds: tuple[np.ndarray, np.ndarray] | None = None,
) -> ConvActivation:
    conv = conv or default_kernel("Conv")
    if activation == "Clip":
        if bounds is None:
            raise EvaluationError("ConvActivation: a Clip needs its bounds")
        # The bias and the Clip in one pass where the compiled loops take them, else each in place.
        return ConvActivation(conv, activation, ClipInPlace(*bounds), _BiasClip(*bounds))
    if activation == "HardSwish":
        return ConvActivation(conv, activation, act or default_kernel("HardSwish"), _hard_swish_bias)
    found = _ACTIVATIONS.get(activation)
    if found is None:
        raise EvaluationError(f"ConvActivation: activation {activation!r} is none of SiLU, GELU, HardSwish, Clip")
    return ConvActivation(conv, activation, *found)


@kernel("ConvActivation", 1, domain=FUSED_DOMAIN, prepare=_prepare_conv_activation, prepare_constants=True)
def conv_activation(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None = None,
    *,
    activation: str,
    conv: Callable[..., Any] | None = None,
    act: Callable[..., Any] | None = None,
    bounds: tuple[np.ndarray, np.ndarray] | None = None,
    **attributes: Any,
) -> np.ndarray:
    """``conv`` (with the Conv's ``attributes``) then ``activation`` ("SiLU", "GELU" for the erf GELU, "HardSwish":
    ``act``, the HardSwish node's kernel; "Clip": ``bounds``, its min and max in the Conv's type), the bias and the
    activation in one pass where the compiled loop takes them."""
    step = _prepare_conv_activation((x, w, b), activation=activation, conv=conv, act=act, bounds=bounds)
    return step(x, w, b, **attributes)


def _prepare_conv1d(
    constants: Sequence[Any],
    *,
    pads: tuple[int, int] = (0, 0),
    stride: int = 1,
    dilation: int = 1,
    conv: Callable[..., Any] | None = None,
    with_bias: bool = True,
) -> Conv1dTaps:
    w = constants[1] if len(constants) > 1 else None
    b = constants[2] if with_bias and len(constants) > 2 else None
    if not isinstance(w, np.ndarray) or w.ndim != 3 or w.dtype not in _FLOATS:
        raise EvaluationError("Conv1dTaps: the weights must be a constant 3-D float tensor")
    return Conv1dTaps(conv or default_kernel("Conv"), w, b, (int(pads[0]), int(pads[1])), int(stride), int(dilation))


@kernel("Conv1dTaps", 1, domain=FUSED_DOMAIN, prepare=_prepare_conv1d, prepare_constants=True)
def conv1d_taps(
    x: Any,
    w: Any,
    b: Any = None,
    *,
    conv: Callable[..., Any] | None = None,
    with_bias: bool = True,
    **attributes: Any,
) -> Any:
    """A group-1 1-D Conv of constant weights ``w`` (and bias ``b``, unless ``with_bias`` is False: a
    ConvActivation adds it) with explicit pads, as one product of the weights and the taps' slices; ``attributes``
    are the Conv's own (``pads``, ``strides``, ``dilations``), for ``conv`` and the step's geometry."""
    pads = [int(p) for p in attributes.get("pads") or (0, 0)]
    stride = int((attributes.get("strides") or [1])[0])
    dilation = int((attributes.get("dilations") or [1])[0])
    step = _prepare_conv1d(
        (x, w, b), pads=(pads[0], pads[1]), stride=stride, dilation=dilation, conv=conv, with_bias=with_bias
    )
    return step(x, w, b, **attributes)


def _prepare_preactivated(
    constants: Sequence[Any],
    *,
    chain: AffineChain,
    conv_kw: dict[str, Any],
    folded: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None],
    conv: Callable[..., Any] | None = None,
    concat: Callable[..., Any] | None = None,
    w: np.ndarray,
    b: np.ndarray | None = None,
) -> PreActivatedConv:
    w2, b2, clamp, sign = folded
    return PreActivatedConv(chain, conv or default_kernel("Conv"), conv_kw, w, b, w2, b2, clamp, sign, concat)


@kernel("PreActivatedConv", 1, domain=FUSED_DOMAIN, prepare=_prepare_preactivated, prepare_constants=True)
def preactivated_conv(
    *xs: np.ndarray,
    chain: AffineChain,
    conv_kw: dict[str, Any],
    folded: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None],
    conv: Callable[..., Any] | None = None,
    concat: Callable[..., Any] | None = None,
    w: np.ndarray,
    b: np.ndarray | None = None,
) -> Any:
    """``conv(chain(concat(xs)), w, b)`` with ``chain`` an AffineChain ending in Relu, computed as ``conv(max(s x,
    clamp), w2, b2)`` with ``folded`` = :func:`preactivated_weights` (``w2, b2, clamp, sign``)."""
    step = _prepare_preactivated(xs, chain=chain, conv_kw=conv_kw, folded=folded, conv=conv, concat=concat, w=w, b=b)
    return step(*xs)


def _prepare_projected_pool(
    constants: Sequence[Any],
    *,
    pool_kw: dict[str, Any],
    relu: bool = False,
    conv: Callable[..., Any] | None = None,
    pool: Callable[..., Any] | None = None,
) -> ProjectedPool:
    return ProjectedPool(conv or default_kernel("Conv"), pool or default_kernel("AveragePool"), pool_kw, relu)


@kernel("ProjectedPool", 1, domain=FUSED_DOMAIN, prepare=_prepare_projected_pool, prepare_constants=True)
def projected_pool(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None = None,
    *,
    pool_kw: dict[str, Any],
    relu: bool = False,
    conv: Callable[..., Any] | None = None,
    pool: Callable[..., Any] | None = None,
    **attributes: Any,
) -> np.ndarray:
    """``AveragePool(pool_kw) -> Conv 1x1 (attributes) (-> Relu)`` computed as the Conv without bias, the pool, then
    the bias (and the Relu)."""
    step = _prepare_projected_pool((x, w, b), pool_kw=pool_kw, relu=relu, conv=conv, pool=pool)
    return step(x, w, b, **attributes)


def _prepare_winograd(constants: Sequence[Any], *, conv: Callable[..., Any] | None = None) -> WinogradConv:
    return WinogradConv(conv or default_kernel("Conv"))


@kernel("WinogradConv", 1, domain=FUSED_DOMAIN, prepare=_prepare_winograd, prepare_constants=True)
def winograd_conv(
    x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, *, conv: Callable[..., Any] | None = None, **kw: Any
) -> np.ndarray:
    """A Conv (``conv``, with its attributes ``kw``) by Winograd's F(4x4, 3x3) where it takes the layer (float32,
    3x3, stride 1, at least 16 channels in and out; the error it adds is stated in the conformance statement)."""
    return _prepare_winograd((x, w, b), conv=conv)(x, w, b, **kw)


def _prepare_measured(constants: Sequence[Any], *, conv: Callable[..., Any] | None = None) -> MeasuredConv:
    return MeasuredConv(conv or default_kernel("Conv"))


@kernel("MeasuredConv", 1, domain=FUSED_DOMAIN, prepare=_prepare_measured, prepare_constants=True)
def measured_conv(
    x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, *, conv: Callable[..., Any] | None = None, **kw: Any
) -> np.ndarray:
    """A Conv (``conv``, with its attributes ``kw``) by the fastest of its paths for this shape (the Conv kernel's
    own, channels-last columns, the depthwise loops), measured on the first run of the shape; every path computes
    the Conv's sums, in its own order."""
    return _prepare_measured((x, w, b), conv=conv)(x, w, b, **kw)
