"""Winograd convolution F(4x4, 3x3) for large float32 Conv layers (a plan-time choice, Clause 8.2).

A 3x3 stride-1 convolution computes each 4x4 block of outputs from a 6x6 block of inputs. Winograd's minimal
filtering algorithm (Toom-Cook with the points 0, 1, -1, 2, -2 and infinity) does it with 36 multiplications per
input and output channel pair instead of 144: the input blocks and the weights are transformed
(``V = B^T d B``, ``U = G g G^T``), multiplied element by element (for all channels at once: 36 matrix products
``U[k] @ V[k]``) and transformed back (``Y = A^T M A``). The transforms are matrix products too, so the work is
BLAS throughout; on this project's machine VGG's and ResNet's larger 3x3 layers run 1.4-2.2x faster than
im2col (measured).

The result equals the convolution in real arithmetic; in float32 its error is about 1e-5 of the layer's
largest output (the direct product's is about 5e-7), which Clause 8.2 admits as a reassociation within the
tolerances of Clause 11 (the position is recorded with the known divergences). A result holding an infinity or
NaN is computed directly again, so special values spread as in the direct convolution. ``intermediates=True``
runs every Conv directly.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from onnxcore.kernels._conv_choice import choose, conv_key
from onnxcore.kernels._im2col import channels_last_padded
from onnxcore.kernels._scratch import scratch
from onnxcore.kernels.conv import conv_geometry
from onnxcore.kernels.threads import copy_split

__all__ = ["WinogradConv", "small_image_conv", "toom_cook"]

# Output block and kernel extents: F(4x4, 3x3) on 6x6 input blocks.
_M, _R = 4, 3
_N = _M + _R - 1
# Layers with fewer output blocks than this, or fewer channels, run faster as im2col (measured: 16 blocks of
# 256 channels break even; 49 blocks of 128 channels gain 1.6x). With few input channels the transforms
# outweigh the saved products: 16 input channels ran 1.5-2.1x slower than im2col, 32 up to 1.4x (27x27 and
# 55x55 images, 32-256 output channels); from 64 on Winograd breaks even or gains.
MIN_BLOCKS = 36
MIN_CHANNELS = 16
MIN_IN_CHANNELS = 64
# Inputs up to this size (about the L2 cache of one core) are gathered into blocks from a channels-last copy.
CHANNELS_LAST_BYTES = 1 << 21
# One band of block rows is transformed, multiplied and transformed back while its operands are in cache.
_BAND_BYTES = 1 << 23


def toom_cook(m: int, r: int, points: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A^T, G, B^T)`` of Winograd's F(m, r) on the finite ``points`` (``m + r - 2`` of them) and infinity.

    ``A^T`` evaluates at the points, ``G`` interpolates the kernel with the Lagrange denominators; ``B^T`` is
    then the unique matrix making ``A^T ((G g) * (B^T d))`` the correlation ``y_i = sum_k d_(i+k) g_k`` for
    every ``d`` and ``g``, solved exactly in rationals (so the three are exact, whatever the points).
    """
    # Here, not at the top: fractions (and decimal, which it imports) are 3 ms of every process that loads the
    # convolution kernels, and only this exact construction needs them (issue 42, item 3).
    from fractions import Fraction

    n = m + r - 1
    if len(points) != n - 1 or len(set(points)) != n - 1:
        raise ValueError(f"F({m}, {r}) needs {n - 1} distinct finite points")
    pts = [Fraction(p) for p in points]
    at = [[p**i for p in pts] + [Fraction(int(i == m - 1))] for i in range(m)]
    g: list[list[Fraction]] = []
    for j, p in enumerate(pts):
        denominator = math.prod((p - q for k, q in enumerate(pts) if k != j), start=Fraction(1))
        g.append([p**k / denominator for k in range(r)])
    g.append([Fraction(int(k == r - 1)) for k in range(r)])
    # Row (i, k) of the system: sum_j at[i][j] g[j][k] bt[j][p] = [p == i + k], one right-hand side per p.
    rows = [[at[i][j] * g[j][k] for j in range(n)] + [Fraction(int(p == i + k)) for p in range(n)]
            for i in range(m) for k in range(r)]  # fmt: skip
    pivots: list[int] = []
    for col in range(n):
        top = len(pivots)
        sel = next((q for q in range(top, len(rows)) if rows[q][col] != 0), None)
        if sel is None:
            continue
        rows[top], rows[sel] = rows[sel], rows[top]
        lead = rows[top][col]
        rows[top] = [v / lead for v in rows[top]]
        for q in range(len(rows)):
            if q != top and rows[q][col] != 0:
                f = rows[q][col]
                rows[q] = [a - f * b for a, b in zip(rows[q], rows[top])]
        pivots.append(col)
    if len(pivots) != n or any(any(v != 0 for v in row) for row in rows[n:]):
        raise ValueError("the points do not give a Winograd algorithm")  # cannot happen for distinct points
    bt = [[rows[pivots.index(j)][n + p] for p in range(n)] for j in range(n)]
    return tuple(np.array(a, dtype=np.float64) for a in (at, g, bt))  # type: ignore[return-value]


@functools.cache
def _transforms() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(G, IN, OUT)`` of F(4, 3): ``G``, then both 2-D transforms of a block as one matrix on its 36 (or 16) values
    in row-major order. Made on the first Winograd layer, not when a model with a Relu loads this module (the fused
    kernels import it): 4 ms of such a session (issue 42, item 3)."""
    at, g, bt = toom_cook(_M, _R, [0, 1, -1, 2, -2])
    return g, np.kron(bt, bt).astype(np.float32), np.kron(at, at).astype(np.float32)


def transformed_weights(w: np.ndarray, *, channels_last: bool = False) -> np.ndarray:
    """``U = G g G^T`` of every (output, input) channel pair of 3x3 weights, as ``(36, M, C)`` float32, or as
    ``(36, C, M)`` with ``channels_last`` (the operand :func:`winograd_conv` takes in that layout)."""
    m, c = w.shape[:2]
    g = _transforms()[0]
    u = np.einsum("ik,mckl,jl->ijmc", g, w.astype(np.float64), g, optimize=True).reshape(_N * _N, m, c)
    return np.ascontiguousarray((u.transpose(0, 2, 1) if channels_last else u).astype(np.float32))


def winograd_conv(
    x: np.ndarray,
    u: np.ndarray,
    bias: np.ndarray | None,
    pb: Sequence[int],
    out: Sequence[int],
    *,
    channels_last: bool = False,
) -> np.ndarray:
    """3x3 stride-1 convolution of float32 ``x`` (N, C, H, W) by transformed weights ``u`` plus ``bias``.

    ``pb`` are the leading pads and ``out`` the output extents (trailing pads follow from them). Every
    temporary lives in this thread's scratch buffers (:mod:`onnxcore.kernels._scratch`): afresh, they cost
    more in page faults than the products.

    The 6x6 input blocks are gathered from a padded copy of ``x``. With ``channels_last`` (``u`` from
    ``transformed_weights(w, channels_last=True)``) that copy is (N, H, W, C), so the gather moves runs of C
    contiguous values instead of rows of a few strided ones, and the products run as (blocks x C) @ (C x M):
    1.1-1.3x faster on inputs that fit in the L2 cache, 0.85-0.9x on larger ones (measured), where the
    transposing copy and the scatter of the output blocks cost more than the gather saves.
    """
    n, c, h, wd = x.shape
    m = u.shape[2] if channels_last else u.shape[1]
    oh, ow = out
    ty, tx = -(-oh // _M), -(-ow // _M)
    rows, cols = min(h, _M * ty + 2 - pb[0]), min(wd, _M * tx + 2 - pb[1])
    r0, r1, c0, c1 = pb[0], pb[0] + rows, pb[1], pb[1] + cols
    bordered = False  # (whether the copy zeroed the border already)
    if channels_last:
        xp = scratch("winograd.x", (n, _M * ty + 2, _M * tx + 2, c))
        if rows == h and cols == wd:
            channels_last_padded(x, xp, r0, c0)  # (the border zeroed too)
            bordered = True
        else:
            copy_split(xp[:, r0:r1, c0:c1], x[:, :, :rows, :cols].transpose(0, 2, 3, 1))
        image = xp.transpose(3, 0, 1, 2)  # the same memory as (C, N, H, W) for the border below
    else:
        # Channels first (batch second), so the block view below reshapes to (36, C, N * blocks).
        xp = scratch("winograd.x", (c, n, _M * ty + 2, _M * tx + 2))
        copy_split(xp[:, :, r0:r1, c0:c1], x[:, :, :rows, :cols].transpose(1, 0, 2, 3))
        image = xp
    if not bordered:
        # Only the border is zeroed: the scratch holds the previous call's values.
        image[:, :, :r0] = 0
        image[:, :, r1:] = 0
        image[:, :, r0:r1, :c0] = 0
        image[:, :, r0:r1, c1:] = 0
    # The blocks are written through a 6-D view of the output in one pass; when the extents are not multiples
    # of 4 that output is a scratch of whole blocks, cropped into the result at the end.
    whole = oh % _M == 0 and ow % _M == 0
    y = np.empty((n, m, oh, ow), np.float32)
    yb = y if whole else scratch("winograd.y", (n, m, _M * ty, _M * tx))
    b = None if bias is None else bias.reshape(1, m, 1, 1, 1, 1)
    s = image.strides  # (C, N, H, W) in either layout
    per_row = _N * _N * (c + m) * n * tx * 4
    band = max(1, min(ty, _BAND_BYTES // per_row))
    for t0 in range(0, ty, band):
        t1 = min(ty, t0 + band)
        bt = t1 - t0
        blocks = bt * tx * n
        rest = image[:, :, _M * t0 :]
        if channels_last:
            d = as_strided(rest, (_N, _N, n, bt, tx, c), (s[2], s[3], s[1], _M * s[2], _M * s[3], s[0]))
            dc = scratch("winograd.d", (_N, _N, n, bt, tx, c))
        else:
            d = as_strided(rest, (_N, _N, c, n, bt, tx), (s[2], s[3], s[0], s[1], _M * s[2], _M * s[3]))
            dc = scratch("winograd.d", (_N, _N, c, n, bt, tx))
        copy_split(dc, d)
        v = scratch("winograd.v", (_N * _N, c * blocks))
        _g, transform_in, transform_out = _transforms()
        np.matmul(transform_in, dc.reshape(_N * _N, c * blocks), out=v)
        prod = scratch("winograd.p", (_N * _N, m * blocks))
        o = scratch("winograd.o", (_M * _M, m * blocks))
        if channels_last:
            np.matmul(v.reshape(_N * _N, blocks, c), u, out=prod.reshape(_N * _N, blocks, m))
            np.matmul(transform_out, prod, out=o)
            # (i, j, n, t, s, m) -> (n, m, t, i, s, j): block row t, row i in it; block column s, column j in it.
            o6 = o.reshape(_M, _M, n, bt, tx, m).transpose(2, 5, 3, 0, 4, 1)
        else:
            np.matmul(u, v.reshape(_N * _N, c, blocks), out=prod.reshape(_N * _N, m, blocks))
            np.matmul(transform_out, prod, out=o)
            # (i, j, m, n, t, s) -> (n, m, t, i, s, j)
            o6 = o.reshape(_M, _M, m, n, bt, tx).transpose(3, 2, 4, 0, 5, 1)
        target = yb[:, :, _M * t0 : _M * t1].reshape(n, m, bt, _M, tx, _M)
        copy_split(target, o6, add=b)
    if not whole:
        copy_split(y, yb[:, :, :oh, :ow])
    return y


def small_image_conv(
    x: np.ndarray, wt: np.ndarray, bias: np.ndarray | None, pb: Sequence[int], out: Sequence[int]
) -> np.ndarray:
    """3x3 stride-1 convolution of a small float32 image by weights ``wt``, ``(3 * 3 * C, M)``, plus ``bias``.

    The im2col is built from a channels-last padded copy, so each of its rows gathers runs of C contiguous
    values: on a 7x7 image the usual column matrix is copied in rows of 7 values, and numpy's per-row cost
    dominates (DenseNet's 7x7 128->32 layers 2.4x faster, ResNet's 14x14 256->256 1.2x, measured). The product
    is (pixels x 9C) @ (9C x M); its (pixels, M) result is transposed back, cheap at these sizes.
    """
    n, c, h, wd = x.shape
    m = wt.shape[1]
    oh, ow = out
    rows, cols = min(h, oh + 2 - pb[0]), min(wd, ow + 2 - pb[1])
    # The padded copy, the columns and the product are temporaries: scratch buffers (no page faults per run).
    xp = scratch("small3x3.x", (n, oh + 2, ow + 2, c))
    if rows == h and cols == wd:
        channels_last_padded(x, xp, pb[0], pb[1])
    else:
        xp.fill(0)
        xp[:, pb[0] : pb[0] + rows, pb[1] : pb[1] + cols] = x[:, :, :rows, :cols].transpose(0, 2, 3, 1)
    s = xp.strides
    windows = as_strided(xp, (n, oh, ow, _R, _R, c), (s[0], s[1], s[2], s[1], s[2], s[3]), writeable=False)
    im2col = scratch("small3x3.cols", (n, oh, ow, _R, _R, c))
    np.copyto(im2col, windows)
    yt = np.matmul(im2col.reshape(n * oh * ow, _R * _R * c), wt, out=scratch("small3x3.y", (n * oh * ow, m)))
    if bias is not None:
        yt += bias
    return yt.reshape(n, oh * ow, m).transpose(0, 2, 1).copy().reshape(n, m, oh, ow)  # a copy always: yt is scratch


class WinogradConv:
    """A Conv kernel that takes, for float32 3x3 stride-1 layers that its rule admits, :func:`winograd_conv` (or
    :func:`small_image_conv` for those with fewer than ``MIN_BLOCKS`` blocks) unless its own ``call`` measures
    faster for the shape (:func:`~onnxcore.kernels._conv_choice.choose`: the rule was measured on one machine, and
    on another BLAS and cache the direct product wins some layers, small images most); ``call`` for every other
    layer. The weights are rearranged on the first run that needs them (in the layout the input's size calls for),
    then kept."""

    __slots__ = ("_route", "_u", "_w", "call")

    def __init__(self, call: Callable[..., Any]) -> None:
        self.call = call
        self._w: np.ndarray | None = None
        # Rearranged weights by use: Winograd's channels-first (False) or channels-last (True) transform, or the
        # small-image layout ("small"); a layer whose input size is fixed uses one.
        self._u: dict[bool | str, np.ndarray] = {}
        # Per input shape and bias presence, for the weights ``_w``: whether this kernel's own path is taken.
        self._route: dict[tuple[Any, ...], bool] = {}

    def __call__(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, **kw: Any) -> np.ndarray:
        if not self._applies(x, w, b, kw):
            return self.call(x, w, b, **kw)
        st, dil, pb, _, out = conv_geometry(x.shape, w.shape, **kw)
        if any(v != 1 for v in (*st, *dil)):
            return self.call(x, w, b, **kw)
        if self._w is not w:
            self._u, self._route, self._w = {}, {}, w
        mine = (x.shape, b is None)
        own = self._route.get(mine)
        if own is None:
            self._weights(x, w, out)  # (made before the paths are timed: a one-time cost, not the path's)
            found: dict[str, Any] = {
                "kernel": lambda a, v, bb: self._own(a, v, bb, pb, out, kw),
                "conv": lambda a, v, bb: self.call(a, v, bb, **kw),
            }
            choice, y = choose(("winograd", *conv_key(x, w, b, kw)), found, x, w, b)
            own = self._route[mine] = choice == "kernel"
            if y is not None:
                return y
        return self._own(x, w, b, pb, out, kw) if own else self.call(x, w, b, **kw)

    def _own(
        self,
        x: np.ndarray,
        w: np.ndarray,
        b: np.ndarray | None,
        pb: Sequence[int],
        out: Sequence[int],
        kw: dict[str, Any],
    ) -> np.ndarray:
        """This kernel's path for a layer its rule admits: Winograd, or the small-image product."""
        layout, u = self._weights(x, w, out)
        if layout == "small":
            return small_image_conv(x, u, b, pb, out)
        with np.errstate(invalid="ignore", over="ignore"):  # a non-finite result is recomputed below
            y = winograd_conv(x, u, b, pb, out, channels_last=layout is True)
            total = float(y.sum())
        if not math.isfinite(total):
            # A block's transform mixes all 36 of its inputs (0 * inf is NaN), so an infinity or NaN would reach
            # outputs the direct product keeps finite; the direct product decides (also when the sum overflows).
            return self.call(x, w, b, **kw)
        return y

    def _weights(self, x: np.ndarray, w: np.ndarray, out: Sequence[int]) -> tuple[bool | str, np.ndarray]:
        """The layout this kernel's path takes for ``x`` and the weights rearranged for it (made once, then kept):
        ``"small"`` for layers with fewer than ``MIN_BLOCKS`` blocks (too few for the transforms to pay: the
        direct product on a channels-last im2col), else whether Winograd gathers channels-last."""
        layout: bool | str
        if -(-out[0] // _M) * -(-out[1] // _M) * x.shape[0] < MIN_BLOCKS:
            layout = "small"
        else:
            layout = x.nbytes <= CHANNELS_LAST_BYTES
        u = self._u.get(layout)
        if u is None:
            if layout == "small":
                u = np.ascontiguousarray(w.transpose(2, 3, 1, 0).reshape(-1, w.shape[0]))
            else:
                u = transformed_weights(w, channels_last=bool(layout))
            self._u[layout] = u
        return layout, u

    @staticmethod
    def _applies(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, kw: dict[str, Any]) -> bool:
        if x.dtype != np.float32 or w.dtype != np.float32 or x.ndim != 4 or w.shape[2:] != (3, 3):
            return False
        if kw.get("group", 1) != 1 or x.shape[1] != w.shape[1] or w.shape[0] < MIN_CHANNELS:
            return False
        if w.shape[1] < MIN_IN_CHANNELS:
            return False
        return b is None or (b.dtype == np.float32 and b.shape == (w.shape[0],))
