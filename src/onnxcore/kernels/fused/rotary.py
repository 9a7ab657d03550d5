"""The rotary position embedding's steps (issue 27, Clause 8.2; the matchers are
``onnxcore.runtime.optimize.shapeops.fuse_rotate_half`` and ``onnxcore.runtime.optimize.rotary``).

- ``RotateHalf``: ``Concat(Neg(Slice(x, second half)), Slice(x, first half))`` along the last axis, one step writing
  both halves into one new array, for an input shape whose slices the Slice kernels showed (on the positions of its
  elements) to be the two halves; the four nodes as written otherwise.
- ``Rotary``: ``x * cos + rotate_half(x) * sin`` (four steps once ``rotate_half`` is one) as one step computing the
  same operations in the same order: each product rounded to the element type, then their sum, as the graph's two
  ``Mul`` and its ``Add`` do (the compiled loop of ``kernels.accel`` does not contract them into fused
  multiply-adds; with the accelerator off, numpy's ``multiply`` and ``add``), so the results are the graph's bit for
  bit. It takes that path only for a float32 or float64 ``x`` whose ``rotate_half`` its RotateHalf step has seen is
  the halves of the last axis, with ``cos`` and ``sin`` of its type that broadcast to its shape (not growing it) and
  have its last extent; anything else runs the four steps as written.

``kernels/attention.rotary_rotate`` (RotaryEmbedding-23 and the com.microsoft kernels) computes
``cos * x1 - sin * x2`` in another order of operations: not the graph's rounding, so not called here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels import accel
from onnxcore.kernels.fused import FUSED_DOMAIN
from onnxcore.kernels.fused.common import FLOATS, default_kernel
from onnxcore.kernels.fused.shape import POSITIONS_LIMIT, PerShape
from onnxcore.kernels.registry import kernel

__all__ = ["RotateHalf", "Rotary", "rotate_halves"]

_FLOATS = FLOATS

_Call = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


def rotate_halves(x: np.ndarray, h: int) -> np.ndarray:
    """``concat(-x[..., h:], x[..., :h])`` along the last axis (``rotate_half`` of halves of ``h``), as one new
    array written half by half."""
    out = np.empty(x.shape, x.dtype)
    np.negative(x[..., h:], out=out[..., :h])
    out[..., h:] = x[..., :h]
    return out


class RotateHalf(PerShape):
    """``Concat(Neg(Slice(x)), Slice(x))`` that swaps the halves of the last axis and negates the new first one
    (``rotate_half`` of a rotary embedding): ``-x[..., h:]`` and ``x[..., :h]`` written into one new array, for an
    input shape whose slices are those halves; the four steps as written otherwise (and on a shape's first run)."""

    __slots__ = ("concat", "high", "low", "neg")

    def __init__(self, low: _Call, high: _Call, neg: _Call, concat: _Call) -> None:
        super().__init__(concat[0])
        self.low, self.high, self.neg, self.concat = low, high, neg, concat

    def _slices(self, x: np.ndarray) -> tuple[Any, Any]:
        (lo, lo_args, lo_kw), (hi, hi_args, hi_kw) = self.low, self.high
        return lo(x, *lo_args, **lo_kw), hi(x, *hi_args, **hi_kw)

    def __call__(self, x: Any) -> Any:
        if type(x) is np.ndarray:
            h = self.seen.get(x.shape)
            if h is not None:
                return rotate_halves(x, h)
        low, high = self._slices(x)
        neg, neg_args, neg_kw = self.neg
        cat, cat_args, cat_kw = self.concat
        y = cat(neg(high, *neg_args, **neg_kw), low, *cat_args, **cat_kw)
        if (
            type(x) is np.ndarray
            and type(y) is np.ndarray
            and x.dtype.kind == "f"
            and y.dtype == x.dtype
            and y.shape == x.shape
            and x.ndim >= 1
            and x.shape[-1] % 2 == 0
            and 0 < x.size <= POSITIONS_LIMIT
        ):
            h = x.shape[-1] // 2
            pos = np.arange(x.size).reshape(x.shape)
            p_lo, p_hi = self._slices(pos)
            if np.array_equal(p_lo, pos[..., :h]) and np.array_equal(p_hi, pos[..., h:]):
                self._remember(x.shape, h)
        return y


class Rotary:
    """``Add(Mul(x, cos), Mul(RotateHalf(x), sin))`` as one step (module docstring).

    Args:
        rotate: The :class:`RotateHalf` step of ``x``.
        cos_mul: The kernel of ``Mul(x, cos)``, and whether the node reads ``cos`` first.
        sin_mul: The kernel of ``Mul(rotate_half(x), sin)``, and whether the node reads ``sin`` first.
        add: The kernel of the ``Add``, and whether the node reads the ``sin`` product first.
    """

    __slots__ = ("_fits", "add", "cos_mul", "rotate", "sin_mul")

    def __init__(
        self,
        rotate: RotateHalf,
        cos_mul: tuple[Callable[..., Any], bool],
        sin_mul: tuple[Callable[..., Any], bool],
        add: tuple[Callable[..., Any], bool],
    ) -> None:
        self.rotate = rotate
        self.cos_mul, self.sin_mul, self.add = cos_mul, sin_mul, add
        # Per (x, cos, sin) shapes: the row of cos and of sin for each row of x (:func:`_fit`), or None when the
        # shapes do not fit (cos or sin would grow x, or a last extent differs).
        self._fits: dict[tuple[tuple[int, ...], ...], tuple[np.ndarray, np.ndarray] | None] = {}

    def __call__(self, x: Any, cos: Any, sin: Any) -> Any:
        if type(x) is np.ndarray and type(cos) is np.ndarray and type(sin) is np.ndarray:
            h = self.rotate.seen.get(x.shape)
            if h is not None and x.dtype in _FLOATS and cos.dtype == x.dtype and sin.dtype == x.dtype:
                key = (x.shape, cos.shape, sin.shape)
                if key in self._fits:
                    fit = self._fits[key]
                else:
                    fit = _fit(x.shape, cos.shape, sin.shape)
                    fits = dict(self._fits) if len(self._fits) < 64 else {}
                    fits[key] = fit
                    self._fits = fits  # replaced whole: runs in other threads read a complete dict
                if fit is not None:
                    return _rotary(x, cos, sin, h, fit)
        return self._as_written(x, cos, sin)

    def _as_written(self, x: Any, cos: Any, sin: Any) -> Any:
        mul_c, cos_first = self.cos_mul
        mul_s, sin_first = self.sin_mul
        add, sin_product_first = self.add
        r = self.rotate(x)
        a = mul_c(cos, x) if cos_first else mul_c(x, cos)
        b = mul_s(sin, r) if sin_first else mul_s(r, sin)
        return add(b, a) if sin_product_first else add(a, b)


def _fit(x: tuple[int, ...], c: tuple[int, ...], s: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray] | None:
    """For each row of ``x`` (its last axis), the row of ``c`` and of ``s`` it is multiplied by (they broadcast
    over the leading axes); None when one would grow ``x`` or has another last extent."""
    if not x or not c or not s or len(c) > len(x) or len(s) > len(x) or c[-1] != x[-1] or s[-1] != x[-1]:
        return None
    rows = []
    for shape in (c, s):
        full = (1,) * (len(x) - len(shape)) + shape
        if any(e != 1 and e != d for e, d in zip(full, x)):
            return None
        index = np.arange(math.prod(full[:-1]), dtype=np.int64).reshape(full[:-1])
        rows.append(np.ascontiguousarray(np.broadcast_to(index, x[:-1])).reshape(-1))
    return rows[0], rows[1]


def _rotary(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, h: int, fit: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    if accel.enabled():
        n = x.shape[-1]
        out = np.empty(x.shape, x.dtype)
        accel.jit().rotary_rows(
            np.ascontiguousarray(x).reshape(-1, n),
            np.ascontiguousarray(cos).reshape(-1, n),
            np.ascontiguousarray(sin).reshape(-1, n),
            fit[0],
            fit[1],
            h,
            out.reshape(-1, n),
        )
        return out
    r = rotate_halves(x, h)
    y = np.multiply(x, cos)
    np.multiply(r, sin, out=r)
    np.add(y, r, out=y)
    return y


# ------------------------------------------------------------------------------------------------ the kernels


def _halves(n: int) -> tuple[_Call, _Call, _Call, _Call]:
    """``rotate_half``'s nodes as an exporter writes them for a last axis of ``n`` values: the two halves by Slice,
    the Neg of the second, their Concat (what the kernels run alone take when given no nodes)."""
    h = n // 2
    last = np.array([-1], np.int64)
    return (
        (default_kernel("Slice"), (np.array([0], np.int64), np.array([h], np.int64), last), {}),
        (default_kernel("Slice"), (np.array([h], np.int64), np.array([n], np.int64), last), {}),
        (default_kernel("Neg"), (), {}),
        (default_kernel("Concat"), (), {"axis": -1}),
    )


def _prepare_rotate_half(
    constants: Sequence[Any],
    *,
    low: _Call | None = None,
    high: _Call | None = None,
    neg: _Call | None = None,
    concat: _Call | None = None,
) -> RotateHalf:
    if low is None or high is None or neg is None or concat is None:
        x = constants[0] if constants else None
        if not isinstance(x, np.ndarray) or x.ndim < 1:
            raise EvaluationError("RotateHalf: give the nodes (low, high, neg, concat), or an array to rotate")
        d = _halves(x.shape[-1])
        low, high, neg, concat = low or d[0], high or d[1], neg or d[2], concat or d[3]
    return RotateHalf(low, high, neg, concat)


@kernel("RotateHalf", 1, domain=FUSED_DOMAIN, prepare=_prepare_rotate_half, prepare_constants=True)
def rotate_half(
    x: Any,
    *,
    low: _Call | None = None,
    high: _Call | None = None,
    neg: _Call | None = None,
    concat: _Call | None = None,
) -> Any:
    """``Concat(Neg(high(x)), low(x))`` along the last axis; each of ``low``, ``high``, ``neg``, ``concat`` is a node as
    written: (its kernel, its constant inputs after the first, its attributes). Run alone without them, ``low`` and
    ``high`` are the two halves of the last axis."""
    return _prepare_rotate_half((x,), low=low, high=high, neg=neg, concat=concat)(x)


def _prepare_rotary(
    constants: Sequence[Any],
    *,
    rotate: Callable[..., Any] | None = None,
    cos_mul: tuple[Callable[..., Any], bool] | None = None,
    sin_mul: tuple[Callable[..., Any], bool] | None = None,
    add: tuple[Callable[..., Any], bool] | None = None,
) -> Rotary:
    if rotate is not None and not isinstance(rotate, RotateHalf):
        raise TypeError(f"Rotary: rotate must be a RotateHalf step, got {type(rotate).__name__}")
    return Rotary(
        rotate or _prepare_rotate_half(constants[:1]),
        cos_mul or (default_kernel("Mul"), False),
        sin_mul or (default_kernel("Mul"), False),
        add or (default_kernel("Add"), False),
    )


@kernel("Rotary", 1, domain=FUSED_DOMAIN, prepare=_prepare_rotary, prepare_constants=True)
def rotary(
    x: Any,
    cos: Any,
    sin: Any,
    *,
    rotate: Callable[..., Any] | None = None,
    cos_mul: tuple[Callable[..., Any], bool] | None = None,
    sin_mul: tuple[Callable[..., Any], bool] | None = None,
    add: tuple[Callable[..., Any], bool] | None = None,
) -> Any:
    """``x * cos + rotate_half(x) * sin``: each of ``cos_mul``, ``sin_mul``, ``add`` is a node's kernel and whether
    the node reads its operands in the other order; ``rotate`` the RotateHalf step (prepared)."""
    return _prepare_rotary((x, cos, sin), rotate=rotate, cos_mul=cos_mul, sin_mul=sin_mul, add=add)(x, cos, sin)
