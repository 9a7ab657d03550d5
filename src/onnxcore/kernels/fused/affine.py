"""Chains of affine steps as one step (Clause 8.2; the matcher is ``onnxcore.runtime.optimize.affine``; elementwise
graphs in general are ``onnxcore.kernels.fused.elementwise``'s).

- ``AffineChain``: per-element affine steps (an inference BatchNormalization, Mul and Add by float constants, a
  closing Relu) composed once per input shape and type into ``x * A + B``: one pass instead of one per node. The
  composed constants reassociate the arithmetic, which Clause 11.4 permits; any other input type runs the nodes'
  kernels (its ``fallback``) one after the other.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels._util import RowTiles, check_elements, out_for, with_rank
from onnxcore.kernels.fused import FUSED_DOMAIN
from onnxcore.kernels.registry import kernel

__all__ = ["AffineChain", "LaneAffine", "per_channel_values"]


class AffineChain:
    """One pass for a chain like BatchNormalization -> Mul(c) -> Add(c) -> Relu on a float tensor.

    Each step is affine per element (``y = x * a + b`` with broadcastable constants), so the chain is
    ``x * A + B`` (then ``max(., 0)`` for a closing Relu) with ``A`` and ``B`` composed once per rank and
    dtype. The composed constants reassociate the arithmetic, which Clause 11.4 permits. Any other input
    dtype runs the original kernels one after the other.
    """

    __slots__ = ("_cache", "_last", "bn", "fallback", "ops", "relu")

    def __init__(
        self,
        bn: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float] | None,
        ops: list[tuple[str, np.ndarray]],
        relu: bool,
        fallback: list[tuple[Callable[..., Any], list[Any], dict[str, Any]]],
    ) -> None:
        self.bn = bn
        self.ops = ops
        self.relu = relu
        # (call, arguments with None standing for the running value, attributes) per original node.
        self.fallback = fallback
        self._cache: dict[tuple[tuple[int, ...], str], _Coefficients] = {}
        # (shape, dtype, A, B, in place, shape kept, row tiles) of the previous run, replaced as one tuple: a session
        # run from several threads never pairs one shape with another's coefficients. "Shape kept": the result has
        # the input's shape (see ``into``). "Row tiles": A's and B's RowTiles where they are short rows of the
        # input's length (a scaler's per-feature constants), else None. Before the first run, a shape no array has:
        # numpy compares a dtype equal to None when it is float64's, so a placeholder of shape () passed for a rank-0
        # float64 input, which then got x + 0.
        self._last: tuple[
            tuple[int, ...], np.dtype[Any] | None, np.ndarray | None, np.ndarray, bool, bool, _Tiles | None
        ] = ((-1,), None, None, np.zeros(()), True, False, None)

    def _coefficients(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> _Coefficients:
        """``A`` (None when 1), ``B`` for inputs of this shape and dtype, whether ``B`` can be added in place, and
        the constants' row tiles when either is a row of the input's length and the input holds many elements
        (None for a constant that is not such a row: a single value broadcasts fast)."""
        key = (shape, dtype.str)
        found = self._cache.get(key)
        if found is not None:
            return found
        composed = self._compose((-1,) + (1,) * (len(shape) - 2), lambda c: c.astype(np.float64))
        assert composed is not None
        a, b = composed
        y_shape = np.broadcast_shapes(shape, a.shape)
        # The constants may broadcast the input to a larger result: refused as the unfused Mul/Add would be.
        check_elements(list(np.broadcast_shapes(y_shape, b.shape)), "Mul/Add chain")
        # No Mul and no BatchNormalization: A is 1 and the chain is one addition. A and B take the input's rank
        # (leading ones, as broadcasting prepends them): numpy broadcasts operands of one rank faster (0.6 against
        # 1.4 us on a (1, 1) input and a (1,) constant).
        a_out = None if a.shape == () and a == 1 else with_rank(a.astype(dtype), len(shape))
        b_out = with_rank(b.astype(dtype), len(shape))
        in_place = y_shape == np.broadcast_shapes(y_shape, b.shape)
        tiles = None
        if y_shape == shape and math.prod(shape) >= _TILED_MIN:
            ta = None if a_out is None or not RowTiles.is_row(a_out) else RowTiles(a_out)
            tb = RowTiles(b_out) if RowTiles.is_row(b_out) else None
            tiles = (ta, tb) if ta is not None or tb is not None else None
        found = (a_out, b_out, in_place, tiles)
        if len(self._cache) >= 64:  # shapes that vary from run to run: keep the cache bounded
            self._cache.clear()
        self._cache[key] = found
        return found

    def scalar_token(self, values: bool = True) -> tuple[Any, ...] | None:
        """A hashable token equal for chains that compute the same, when every constant is a single value (then the
        chain computes the same for operands of any shape: a stacked operand's lanes each get what they would get
        alone); None otherwise (per-channel constants are laid out along the second axis). Without ``values``, equal
        for chains of one form (the same steps, constant types and Relu) whatever their constants: those a
        :class:`LaneAffine` applies together."""
        if self.bn is not None or any(np.size(c) != 1 for _name, c in self.ops):
            return None
        return (
            "affine",
            self.relu,
            tuple((name, np.asarray(c).dtype.str, np.asarray(c).tobytes() if values else None) for name, c in self.ops),
        )

    def __call__(self, x: np.ndarray) -> np.ndarray:
        # The shape and dtype of the previous run are checked first: on tiny tensors the lookup is the cost.
        last = self._last
        if x.shape == last[0] and x.dtype == last[1]:
            a, b, in_place, tiles = last[2], last[3], last[4], last[6]
        elif x.dtype not in (np.float32, np.float64) or (self.bn is not None and x.ndim < 2):
            value = x
            for call, args, kw in self.fallback:
                out = call(*[value if a is None else a for a in args], **kw)
                value = out[0] if type(out) is tuple else out
            return value
        else:
            a, b, in_place, tiles = self._coefficients(x.shape, x.dtype)
            kept = a is None or np.broadcast_shapes(x.shape, a.shape) == x.shape
            self._last = (x.shape, x.dtype, a, b, in_place, kept, tiles)
        if tiles is not None and x.flags.c_contiguous:
            y = np.empty(x.shape, x.dtype)
            if _tiled(tiles, x, a, b, y):
                if self.relu:
                    np.maximum(y, y.dtype.type(0), out=y)
                return y
        if a is None:
            y = np.add(x, b)
        else:
            y = np.multiply(x, a)
            y = np.add(y, b, out=out_for(y) if in_place else None)
        if self.relu:
            y = np.maximum(y, y.dtype.type(0), out=out_for(y))  # (a zero of y's type: a Python 0 is twice as slow)
        return y

    def into(self, y: np.ndarray) -> bool:
        """Apply the chain to ``y`` in place (``y`` is an array the caller made and may overwrite), with the very
        operations :meth:`__call__` applies, when the previous run had ``y``'s shape and dtype and the constants
        do not grow it; False (``y`` untouched) otherwise: then call the chain."""
        last = self._last
        if y.shape != last[0] or y.dtype != last[1] or not (last[4] and last[5]) or out_for(y) is None:
            return False
        a, b, tiles = last[2], last[3], last[6]
        if tiles is not None and y.flags.c_contiguous and _tiled(tiles, y, a, b, y):
            if self.relu:
                np.maximum(y, y.dtype.type(0), out=y)
            return True
        # The output positionally where numpy parses that faster than ``out=`` (a third of a tiny pass's cost);
        # not for Relu's maximum, which then takes a path several times slower.
        if a is not None:
            np.multiply(y, a, y)
        np.add(y, b, y)
        if self.relu:
            np.maximum(y, y.dtype.type(0), out=y)  # (a zero of y's type: a Python 0 is twice as slow)
        return True

    def per_channel(self, channels: int, dtype: np.dtype[Any], rank: int) -> tuple[np.ndarray, np.ndarray] | None:
        """``(a, b)``, float64 vectors of ``channels`` values, when the chain is ``x * a + b`` along axis 1 of
        rank-``rank`` inputs of ``dtype``; None when some step varies along another axis."""
        if self.bn is not None and np.size(self.bn[0]) != channels:
            return None
        composed = self._compose((channels,), lambda c: per_channel_values(c, dtype, channels, rank))
        if composed is None:
            return None
        return np.broadcast_to(composed[0], (channels,)), np.broadcast_to(composed[1], (channels,))

    def _compose(
        self, bn_shape: tuple[int, ...], constant: Callable[[np.ndarray], np.ndarray | None]
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The chain's ``(A, B)`` in float64: BatchNormalization's per-channel factors shaped ``bn_shape``, each
        Mul/Add constant as ``constant`` gives it (None: the chain does not compose that way)."""
        a: np.ndarray = np.ones((), np.float64)
        b: np.ndarray = np.zeros((), np.float64)
        if self.bn is not None:
            scale, bias, mean, var, eps = (np.asarray(v, np.float64) for v in self.bn)
            a = (scale / np.sqrt(var + eps)).reshape(bn_shape)
            b = bias.reshape(bn_shape) - mean.reshape(bn_shape) * a
        for op, c in self.ops:
            c64 = constant(c)
            if c64 is None:
                return None
            if op == "mul":
                a, b = a * c64, b * c64
            else:
                b = b + c64
        return a, b


class LaneAffine:
    """Chains of single-value constants and of one form (:meth:`AffineChain.scalar_token` without values), one per
    lane, applied to their lanes stacked along a new leading axis: lane ``i`` by chain ``i``'s ``x * A + B`` (then its
    Relu), with that chain's own coefficients for the lane's shape and type and the operations it applies alone, so
    each lane gets the chain's bits. What a ``Lanes`` step of fused elementwise graphs that differ only in their
    chains' constants (a calibrated classifier's per-class sigmoids) computes (``onnxcore.kernels.fused.lanes``)."""

    __slots__ = ("_last", "chains", "relu")

    def __init__(self, chains: Sequence[Any]) -> None:
        if not chains or not all(isinstance(c, AffineChain) for c in chains):
            raise EvaluationError("LaneAffine: one AffineChain per lane expected")
        form = chains[0].scalar_token(values=False)
        if form is None or any(c.scalar_token(values=False) != form for c in chains):
            raise EvaluationError("LaneAffine: the chains must have single-value constants and one form")
        self.chains: tuple[AffineChain, ...] = tuple(chains)
        self.relu = chains[0].relu
        # (shape, dtype, stacked A or None, stacked B) of the previous run, replaced as one tuple (see AffineChain).
        # (a shape no array has as the placeholder's, as AffineChain's)
        self._last: tuple[tuple[int, ...], np.dtype[Any] | None, np.ndarray | None, np.ndarray] = (
            (-1,),
            None,
            None,
            np.zeros(()),
        )

    def _stacked(self, x: np.ndarray) -> tuple[np.ndarray | None, np.ndarray] | None:
        """The lanes' ``A`` (None when 1 in every lane) and ``B``, stacked along the lane axis with ``x``'s rank, for
        a float32 or float64 ``x`` of one lane per chain; None for any other."""
        last = self._last
        if x.shape == last[0] and x.dtype == last[1]:
            return last[2], last[3]
        k = len(self.chains)
        if x.dtype not in (np.float32, np.float64) or x.ndim < 1 or x.shape[0] != k:
            return None
        lane = x.shape[1:]
        a_lanes: list[np.ndarray | None] = []
        b_lanes: list[np.ndarray] = []
        for chain in self.chains:
            a, b, _in_place, _tiles = chain._coefficients(lane, x.dtype)
            if b.ndim > len(lane) or (a is not None and a.ndim > len(lane)):
                return None  # (a constant of a higher rank grows the lane: each lane's own chain)
            a_lanes.append(a)
            b_lanes.append(b)
        axis = (k,) + (1,) * len(lane)
        one = np.ones((1,) * len(lane), x.dtype)  # (x * 1 is x exactly: a lane whose chain has no factor)
        a_out = None if all(a is None for a in a_lanes) else np.stack([one if a is None else a for a in a_lanes])
        b_out = np.stack(b_lanes).reshape(axis)
        got = (None if a_out is None else a_out.reshape(axis), b_out)
        self._last = (x.shape, x.dtype, got[0], got[1])
        return got

    def __call__(self, x: np.ndarray) -> np.ndarray:
        got = self._stacked(x) if type(x) is np.ndarray else None
        if got is None:
            if type(x) is not np.ndarray or x.ndim < 1 or x.shape[0] != len(self.chains):
                raise EvaluationError(f"LaneAffine: {len(self.chains)} lanes expected along the first axis")
            return np.stack([chain(x[i]) for i, chain in enumerate(self.chains)])  # (each lane's own chain)
        a, b = got
        # The chain's operations (AffineChain.__call__ for single-value constants), on every lane at once.
        if a is None:
            y = np.add(x, b)
        else:
            y = np.multiply(x, a)
            y = np.add(y, b, out=out_for(y))
        if self.relu:
            y = np.maximum(y, y.dtype.type(0), out=out_for(y))
        return y

    def into(self, y: np.ndarray) -> bool:
        """:meth:`__call__` written into ``y`` (an array the caller made and may overwrite), as
        :meth:`AffineChain.into`; False (``y`` untouched) where it does not apply."""
        got = self._stacked(y)
        if got is None or out_for(y) is None:
            return False
        a, b = got
        if a is not None:
            np.multiply(y, a, y)
        np.add(y, b, y)
        if self.relu:
            np.maximum(y, y.dtype.type(0), out=y)
        return True


_Tiles = tuple[RowTiles | None, RowTiles | None]
_Coefficients = tuple[np.ndarray | None, np.ndarray, bool, _Tiles | None]
_TILED_MIN = 256  # elements of an input from which the chain asks RowTiles (which decides by the row count)


def _tiled(tiles: _Tiles, x: np.ndarray, a: np.ndarray | None, b: np.ndarray, y: np.ndarray) -> bool:
    """``y = x * a + b`` (``x + b`` when ``a`` is None) by the constants' row tiles where they have them, the
    same operations as the chain's broadcasts (so its bits); ``y`` C-contiguous, of ``x``'s shape and type, may be
    ``x``. False when ``A``'s tiles do not take ``x`` (nothing written)."""
    ta, tb = tiles
    src = x
    if a is not None:
        if ta is None:
            np.multiply(x, a, out=y)
        elif ta.apply(np.multiply, x, False, y) is None:
            return False
        src = y
    if tb is None or tb.apply(np.add, src, False, y) is None:
        np.add(src, b, out=y)
    return True


def per_channel_values(c: np.ndarray, dtype: np.dtype[Any], m: int, rank: int) -> np.ndarray | None:
    """``c`` as ``m`` float64 values when it broadcasts against ``(N, m, *spatial)`` along axis 1 only."""
    if c.dtype != dtype or c.ndim > rank:
        return None
    shape = (1,) * (rank - c.ndim) + c.shape
    if any(d != 1 for i, d in enumerate(shape) if i != 1) or shape[1] not in (1, m):
        return None
    return np.broadcast_to(c.astype(np.float64).reshape(-1), (m,))


# ------------------------------------------------------------------------------------------------ the kernels

BnParameters = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]
Fallback = list[tuple[Callable[..., Any], list[Any], dict[str, Any]]]


def _prepare_affine(
    constants: Sequence[Any],
    *,
    bn: BnParameters | None = None,
    ops: Sequence[tuple[str, np.ndarray]] = (),
    relu: bool = False,
    fallback: Fallback = (),  # type: ignore[assignment]
) -> AffineChain:
    return AffineChain(bn, list(ops), relu, list(fallback))


@kernel("AffineChain", 1, domain=FUSED_DOMAIN, prepare=_prepare_affine, prepare_constants=True)
def affine_chain(
    x: Any,
    *,
    bn: BnParameters | None = None,
    ops: Sequence[tuple[str, np.ndarray]] = (),
    relu: bool = False,
    fallback: Fallback = (),  # type: ignore[assignment]
) -> Any:
    """``x`` through BatchNormalization ``bn`` (scale, bias, mean, var, epsilon), then each ``("mul"|"add", c)`` of
    ``ops``, then Relu when ``relu``; ``fallback`` (the nodes as written: call, arguments with None for the running
    value, attributes) for an input type the composed form does not take."""
    return _prepare_affine((x,), bn=bn, ops=ops, relu=relu, fallback=fallback)(x)
