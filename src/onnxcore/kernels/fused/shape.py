"""Shape operators with constant arguments as the numpy view they come down to: the plan's per-shape fast paths
(Clause 8.2, per-node overhead; the matcher is ``onnxcore.runtime.optimize.shapeops``).

Each step keeps the node's own kernel (its ``kernel`` attribute) for the first call with a given input shape, and
from then on does only the numpy operation that the kernel's result showed:

- ``ReshapeView`` (Reshape, Unsqueeze, Squeeze, Flatten): ``x.reshape(shape)``, the shape the kernel gave;
- ``SliceView``: ``x[index]``, the basic index its constant inputs make, checked against the kernel's result once;
- ``ExpandView``: ``numpy.broadcast_to(x, shape)`` (a read-only view, as initializers are), or a copy when small;
- ``SameTypeCast``: a ``Cast`` to the element type the input has already: the input itself (as ``Identity``);
- ``TransposeView``: ``x.transpose(perm)`` for an input rank the kernel accepted;
- ``TakeColumns`` (ai.onnx.ml ArrayFeatureExtractor with constant indices): ``numpy.take`` of the indices made
  ``int64`` once;
- ``GatherPositions`` (Gather, GatherElements, GatherND with constant indices): ``numpy.take`` of the flat
  positions the kernel picks for that input shape, found once by running the kernel on the positions themselves.

The result for each input shape is the kernel's (its values, its shape); a refusal (a bad shape) stays the
kernel's, since only a shape the kernel accepted is remembered.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels.fused import FUSED_DOMAIN
from onnxcore.kernels.fused.common import default_kernel
from onnxcore.kernels.registry import kernel
from onnxcore.kernels.tensor import BUILTIN_CASTS, cast_route

__all__ = [
    "CAST_DTYPES",
    "PerShape",
    "POSITIONS_LIMIT",
    "ExpandLike",
    "PositionsLike",
    "ReshapeLike",
    "SameTypeCast",
    "SliceLike",
    "TakeLike",
    "TransposeLike",
]


class PerShape:
    """A kernel call remembered per input shape (the dict is replaced whole: runs in other threads read a
    complete one)."""

    __slots__ = ("call", "seen")

    def __init__(self, call: Callable[..., Any]) -> None:
        self.call = call
        self.seen: dict[tuple[int, ...], Any] = {}

    def _remember(self, shape: tuple[int, ...], value: Any) -> None:
        seen = dict(self.seen) if len(self.seen) < 64 else {}
        seen[shape] = value
        self.seen = seen


class ReshapeLike(PerShape):
    """Reshape, Unsqueeze, Squeeze, Flatten with constant arguments: ``x.reshape`` to the kernel's shape."""

    __slots__ = ()

    def __call__(self, x: Any, *rest: Any, **kw: Any) -> Any:
        if type(x) is np.ndarray:
            target = self.seen.get(x.shape)
            if target is not None:
                return x.reshape(target)
        y = self.call(x, *rest, **kw)
        if type(x) is np.ndarray and type(y) is np.ndarray and y.size == x.size:
            self._remember(x.shape, y.shape)
        return y


_SMALL_EXPAND = 1 << 16  # elements up to which an Expand's result is copied rather than a broadcast view


class ExpandLike(PerShape):
    """Expand by a constant shape: the input itself when the kernel's shape is its own; a copy of that shape when it
    is small (``numpy.copyto``, a C loop, costs half of ``broadcast_to``'s Python); a broadcast view otherwise."""

    __slots__ = ()

    def __call__(self, x: Any, *rest: Any, **kw: Any) -> Any:
        if type(x) is np.ndarray:
            target = self.seen.get(x.shape)
            if target is not None:
                if target == x.shape:
                    return x
                if math.prod(target) <= _SMALL_EXPAND:
                    out = np.empty(target, x.dtype)
                    np.copyto(out, x)
                    return out
                return np.broadcast_to(x, target)
        y = self.call(x, *rest, **kw)
        if type(x) is np.ndarray and type(y) is np.ndarray:
            self._remember(x.shape, y.shape)
        return y


class SliceLike(PerShape):
    """Slice by constant starts, ends, axes and steps: ``x[index]``, the index checked once per input shape
    against the kernel's result."""

    __slots__ = ("index_args",)

    def __init__(self, call: Callable[..., Any], index_args: tuple[np.ndarray | None, ...]) -> None:
        super().__init__(call)
        self.index_args = index_args

    def _index(self, ndim: int) -> tuple[slice, ...] | None:
        starts, ends, axes, steps = self.index_args
        if starts is None or ends is None:
            return None
        n = starts.size
        ax = list(range(n)) if axes is None else [int(a) + ndim if int(a) < 0 else int(a) for a in axes.reshape(-1)]
        st = [1] * n if steps is None else [int(s) for s in steps.reshape(-1)]
        if len(ax) != n or len(st) != n or ends.size != n or len(set(ax)) != n or any(not 0 <= a < ndim for a in ax):
            return None
        if any(s == 0 for s in st):
            return None
        index = [slice(None)] * ndim
        for a, b, e, s in zip(ax, starts.reshape(-1), ends.reshape(-1), st):
            index[a] = slice(int(b), int(e), s)
        return tuple(index)

    def __call__(self, x: Any, *rest: Any, **kw: Any) -> Any:
        if type(x) is np.ndarray:
            index = self.seen.get(x.shape)
            if index is not None:
                return x[index] if index else self.call(x, *rest, **kw)
        y = self.call(x, *rest, **kw)
        if type(x) is np.ndarray and type(y) is np.ndarray:
            index = self._index(x.ndim)
            ok = index is not None and x[index].shape == y.shape and np.array_equal(x[index], y, equal_nan=True)
            self._remember(x.shape, index if ok else ())  # () : this shape keeps the kernel
        return y


class TakeLike(PerShape):
    """ArrayFeatureExtractor with constant indices: ``numpy.take`` along the last axis, as the kernel takes them,
    for an input shape the kernel accepted (a 1-D input gives one row, as the kernel gives it). A single index (what
    exporters' one-vs-rest tails write, one per class) is the read-only view ``x[..., i:i+1]`` (the same values; a
    read-only array is never written in place, and the session copies one it hands out)."""

    __slots__ = ("indices", "single")

    def __init__(self, call: Callable[..., Any], indices: np.ndarray) -> None:
        super().__init__(call)
        self.indices = np.asarray(indices).ravel().astype(np.int64)
        i = int(self.indices[0]) if self.indices.size == 1 else -1
        self.single = slice(i, i + 1) if i >= 0 else None

    def __call__(self, x: Any, *rest: Any, **kw: Any) -> Any:
        if type(x) is np.ndarray and x.shape in self.seen:
            if self.single is not None:
                out = x[..., self.single]
                out.flags.writeable = False
            else:
                out = np.take(x, self.indices, axis=-1)
            return out.reshape(1, -1) if x.ndim == 1 else out
        y = self.call(x, *rest, **kw)
        if type(x) is np.ndarray:
            self._remember(x.shape, True)
        return y


POSITIONS_LIMIT = 1 << 16  # elements of input and result up to which a gather's positions are kept (512 KB)


class PositionsLike(PerShape):
    """A gather by constant indices (Gather, GatherElements, GatherND): ``numpy.take`` of the flat positions of
    the input the kernel picks for its shape. The positions are the kernel's own result on ``arange(size)`` in
    that shape (a gather moves elements, whatever their type), kept once ``take`` gave the kernel's result."""

    __slots__ = ()

    def __call__(self, x: Any, *rest: Any, **kw: Any) -> Any:
        if type(x) is np.ndarray:
            pos = self.seen.get(x.shape)
            if pos is not None:
                return np.take(x, pos)
        y = self.call(x, *rest, **kw)
        if type(x) is np.ndarray and type(y) is np.ndarray and max(x.size, y.size) <= POSITIONS_LIMIT:
            pos = self.call(np.arange(x.size, dtype=np.intp).reshape(x.shape), *rest, **kw)
            nan = x.dtype.kind in "fc"  # (equal_nan asks isnan, which strings and objects do not have)
            if type(pos) is np.ndarray and pos.shape == y.shape and np.array_equal(np.take(x, pos), y, equal_nan=nan):
                pos.flags.writeable = False
                self._remember(x.shape, pos)
        return y


class TransposeLike:
    """Transpose: the view ``x.transpose(perm)`` for an input rank the kernel accepted (its check of ``perm``
    depends on the rank alone)."""

    __slots__ = ("call", "perm", "ranks")

    def __init__(self, call: Callable[..., Any], perm: list[int] | None) -> None:
        self.call = call
        self.perm = None if perm is None else tuple(int(p) for p in perm)
        self.ranks: frozenset[int] = frozenset()

    def __call__(self, x: Any, **kw: Any) -> Any:
        if type(x) is np.ndarray and x.ndim in self.ranks:
            return x.transpose(self.perm)
        y = self.call(x, **kw)
        if type(x) is np.ndarray:
            self.ranks = self.ranks | {x.ndim}
        return y


_UNSEEN = object()  # (an input type whose route is not looked up yet)


class SameTypeCast:
    """Cast to a type the input already has: the input itself (what Identity gives). Another numpy type, when the
    kernel is a built-in Cast kernel: the route that kernel takes for that type (:func:`~onnxcore.kernels.tensor.
    cast_route`, looked up once per input type: the kernel's dispatch costs about as much as a small cast); the
    kernel otherwise, and where the route declines."""

    __slots__ = ("call", "dtype", "routes")

    def __init__(self, call: Callable[..., Any], dtype: np.dtype[Any]) -> None:
        self.call = call
        self.dtype = dtype
        # Per input type, its route (None: the kernel); a custom kernel for Cast is always called.
        self.routes: dict[np.dtype[Any], Any] | None = {} if call in BUILTIN_CASTS else None

    def __call__(self, x: Any, **kw: Any) -> Any:
        if type(x) is np.ndarray:
            dt = x.dtype
            if dt == self.dtype:
                return x
            routes = self.routes
            if routes is not None:
                route = routes.get(dt, _UNSEEN)
                if route is _UNSEEN:
                    route = cast_route(dt, self.dtype)
                    if len(routes) < 16:
                        routes[dt] = route
                if route is not None:
                    y = route(x, self.dtype)
                    if y is not None:
                        return y
        return self.call(x, **kw)


# ------------------------------------------------------------------------------------------------ the kernels
# ``kernel``: the node's own kernel (default: the newest registered one of the operator the step stands for).


def _prepare_reshape(constants: Sequence[Any], *, kernel: Callable[..., Any] | None = None) -> ReshapeLike:
    return ReshapeLike(kernel or default_kernel("Reshape"))


@kernel("ReshapeView", 1, domain=FUSED_DOMAIN, prepare=_prepare_reshape, prepare_constants=True)
def reshape_view(x: Any, *rest: Any, kernel: Callable[..., Any] | None = None, **attributes: Any) -> Any:
    """Reshape, Unsqueeze, Squeeze or Flatten (``kernel``) with constant arguments, by ``x.reshape``."""
    return _prepare_reshape((x, *rest), kernel=kernel)(x, *rest, **attributes)


def _prepare_expand(constants: Sequence[Any], *, kernel: Callable[..., Any] | None = None) -> ExpandLike:
    return ExpandLike(kernel or default_kernel("Expand"))


@kernel("ExpandView", 1, domain=FUSED_DOMAIN, prepare=_prepare_expand, prepare_constants=True)
def expand_view(x: Any, *rest: Any, kernel: Callable[..., Any] | None = None, **attributes: Any) -> Any:
    """Expand by a constant shape, as a view or a small copy."""
    return _prepare_expand((x, *rest), kernel=kernel)(x, *rest, **attributes)


def _prepare_slice(constants: Sequence[Any], *, kernel: Callable[..., Any] | None = None) -> SliceLike:
    padded = [c if isinstance(c, np.ndarray) else None for c in (*constants[1:5], None, None, None, None)][:4]
    return SliceLike(kernel or default_kernel("Slice"), (padded[0], padded[1], padded[2], padded[3]))


@kernel("SliceView", 1, domain=FUSED_DOMAIN, prepare=_prepare_slice, prepare_constants=True)
def slice_view(x: Any, *rest: Any, kernel: Callable[..., Any] | None = None, **attributes: Any) -> Any:
    """Slice-10 on by constant starts, ends, axes and steps (the constant inputs), by a basic index."""
    return _prepare_slice((x, *rest), kernel=kernel)(x, *rest, **attributes)


def _prepare_take(constants: Sequence[Any], *, kernel: Callable[..., Any] | None = None) -> TakeLike:
    indices = constants[1] if len(constants) > 1 else None
    if not isinstance(indices, np.ndarray) or indices.dtype.kind not in "iu":
        raise EvaluationError("TakeColumns: the indices must be a constant integer tensor")
    return TakeLike(kernel or default_kernel("ArrayFeatureExtractor", "ai.onnx.ml"), indices)


@kernel("TakeColumns", 1, domain=FUSED_DOMAIN, prepare=_prepare_take, prepare_constants=True)
def take_columns(x: Any, indices: Any, *, kernel: Callable[..., Any] | None = None, **attributes: Any) -> Any:
    """ArrayFeatureExtractor (ai.onnx.ml) with constant indices, by ``numpy.take``."""
    return _prepare_take((x, indices), kernel=kernel)(x, indices, **attributes)


def _prepare_positions(constants: Sequence[Any], *, kernel: Callable[..., Any] | None = None) -> PositionsLike:
    return PositionsLike(kernel or default_kernel("Gather"))


@kernel("GatherPositions", 1, domain=FUSED_DOMAIN, prepare=_prepare_positions, prepare_constants=True)
def gather_positions(x: Any, *rest: Any, kernel: Callable[..., Any] | None = None, **attributes: Any) -> Any:
    """Gather, GatherElements or GatherND (``kernel``) by constant indices, by ``numpy.take`` of positions."""
    return _prepare_positions((x, *rest), kernel=kernel)(x, *rest, **attributes)


def _prepare_transpose(
    constants: Sequence[Any], *, kernel: Callable[..., Any] | None = None, perm: Sequence[int] | None = None
) -> TransposeLike:
    return TransposeLike(kernel or default_kernel("Transpose"), None if perm is None else list(perm))


@kernel("TransposeView", 1, domain=FUSED_DOMAIN, prepare=_prepare_transpose, prepare_constants=True)
def transpose_view(x: Any, *, kernel: Callable[..., Any] | None = None, perm: Sequence[int] | None = None) -> Any:
    """Transpose, by the view ``x.transpose(perm)``."""
    kw = {} if perm is None else {"perm": list(perm)}
    return _prepare_transpose((x,), kernel=kernel, perm=perm)(x, **kw)


def _prepare_same_type_cast(
    constants: Sequence[Any], *, to: int, kernel: Callable[..., Any] | None = None
) -> SameTypeCast:
    dtype = CAST_DTYPES.get(to)
    if dtype is None:
        raise EvaluationError(f"SameTypeCast: no element type {to} among {sorted(CAST_DTYPES)}")
    return SameTypeCast(kernel or default_kernel("Cast"), dtype)


@kernel("SameTypeCast", 1, domain=FUSED_DOMAIN, prepare=_prepare_same_type_cast, prepare_constants=True)
def same_type_cast(x: Any, *, to: int, kernel: Callable[..., Any] | None = None) -> Any:
    """Cast to ``to``: the input itself when it has that element type already."""
    return _prepare_same_type_cast((x,), to=to, kernel=kernel)(x, to=to)


# ONNX element type -> numpy dtype, for the Cast targets a model's float and index arithmetic uses.
CAST_DTYPES: dict[int, np.dtype[Any]] = {
    1: np.dtype(np.float32),
    11: np.dtype(np.float64),
    6: np.dtype(np.int32),
    7: np.dtype(np.int64),
    9: np.dtype(np.bool_),
}
