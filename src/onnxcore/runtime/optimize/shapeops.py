"""Shape operators with constant arguments as the numpy view they come down to (Clause 8.2, per-node overhead).

Exporters surround every matrix product with ``Reshape``, ``Unsqueeze``, ``Slice``, ``Expand`` and ``Cast``
nodes whose second inputs are constants (all the more in a plan specialised to its input shapes, where the shape
arithmetic that fed them is folded). Their kernels check and convert those constants on every call, which costs
several times the numpy operation itself on the small tensors of a transformer. Here each such node keeps its
kernel for the first call with a given input shape, and from then on does only the numpy operation that the
kernel's result showed:

- ``Reshape``, ``Unsqueeze``, ``Squeeze``, ``Flatten``: ``x.reshape(shape)``, the shape the kernel gave;
- ``Slice``: ``x[index]``, the basic index its constants make, checked against the kernel's result once;
- ``Expand``: ``numpy.broadcast_to(x, shape)`` (a read-only view, as initializers are);
- ``Cast`` to the element type the input has already: the input itself (as ``Identity``);
- ``Transpose``: ``x.transpose(perm)`` for an input rank the kernel accepted;
- ``ArrayFeatureExtractor`` (ai.onnx.ml) with constant indices: ``numpy.take`` of the indices made ``int64`` once
  (the kernel checks them against the input's last extent: for a shape it accepted they stay in range); a single
  index as a read-only slice.

The result for each input shape is the kernel's (its values, its shape); a refusal (a bad shape) stays the
kernel's, since only a shape the kernel accepted is remembered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.runtime.optimize._common import rebound
from onnxcore.runtime.step import PlanNode

__all__ = [
    "ExpandLike",
    "ReshapeLike",
    "SameTypeCast",
    "SliceLike",
    "TakeLike",
    "TransposeLike",
    "fast_shape_ops",
]

# ONNX element type -> numpy dtype, for the Cast targets a model's float and index arithmetic uses.
_CAST_DTYPES: dict[int, np.dtype[Any]] = {
    1: np.dtype(np.float32),
    11: np.dtype(np.float64),
    6: np.dtype(np.int32),
    7: np.dtype(np.int64),
    9: np.dtype(np.bool_),
}


class _PerShape:
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


class ReshapeLike(_PerShape):
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


class ExpandLike(_PerShape):
    """Expand by a constant shape: a broadcast view of the kernel's shape."""

    __slots__ = ()

    def __call__(self, x: Any, *rest: Any, **kw: Any) -> Any:
        if type(x) is np.ndarray:
            target = self.seen.get(x.shape)
            if target is not None:
                return np.broadcast_to(x, target)
        y = self.call(x, *rest, **kw)
        if type(x) is np.ndarray and type(y) is np.ndarray:
            self._remember(x.shape, y.shape)
        return y


class SliceLike(_PerShape):
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


class TakeLike(_PerShape):
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


class SameTypeCast:
    """Cast to a type the input already has: the input itself (what Identity gives); the kernel otherwise."""

    __slots__ = ("call", "dtype")

    def __init__(self, call: Callable[..., Any], dtype: np.dtype[Any]) -> None:
        self.call = call
        self.dtype = dtype

    def __call__(self, x: Any, **kw: Any) -> Any:
        if type(x) is np.ndarray and x.dtype == self.dtype:
            return x
        return self.call(x, **kw)


def _token(a: np.ndarray | None) -> Any:
    return None if a is None else (a.dtype.str, a.shape, a.tobytes())


def _consts(bn: PlanNode, const: Mapping[str, Any]) -> list[np.ndarray | None] | None:
    """The node's inputs after the first as constants (None for an unsupplied one), or None if one varies."""
    out: list[np.ndarray | None] = []
    for n in bn.inputs[1:]:
        if not n:
            out.append(None)
            continue
        v = const.get(n)
        if not isinstance(v, np.ndarray):
            return None
        out.append(v)
    return out


def fast_shape_ops(nodes: list[PlanNode], const: Mapping[str, Any], outputs: Sequence[str]) -> list[PlanNode]:
    """Give each default-domain shape operator with constant arguments its per-shape fast path (module doc)."""
    graph_outputs = set(outputs)
    # One wrapper per distinct computation (kernel, constant arguments by value, attributes), so that repeated
    # nodes still count as one computation when the plan evaluates repeats once (cse.py compares calls).
    made: dict[tuple[Any, ...], Callable[..., Any]] = {}
    for j, bn in enumerate(nodes):
        node = bn.node
        op = node.op_type
        ml = node.domain == "ai.onnx.ml" and op == "ArrayFeatureExtractor"
        if (node.domain not in ("", "ai.onnx") and not ml) or bn.call is None or bn.outer or not bn.inputs[:1]:
            continue
        if not bn.inputs[0]:
            continue
        if len(bn.outputs) != 1 or not bn.outputs[0]:
            continue
        call: Callable[..., Any] | None = None
        args = _consts(bn, const)
        if args is None or bn.inputs[0] in const:
            continue
        if ml:
            if len(args) == 1 and args[0] is not None and args[0].dtype.kind in "iu":
                call = TakeLike(bn.call, args[0])
        elif op in ("Reshape", "Unsqueeze", "Squeeze", "Flatten"):
            call = ReshapeLike(bn.call)
        elif op == "Transpose" and not args:
            perm = bn.kw.get("perm")
            call = TransposeLike(bn.call, None if perm is None else list(perm))
        elif op == "Expand" and len(args) == 1:
            call = ExpandLike(bn.call)
        elif op == "Slice" and bn.since >= 10 and 2 <= len(args) <= 4:
            padded = (*args, None, None)[:4]
            call = SliceLike(bn.call, (padded[0], padded[1], padded[2], padded[3]))
        elif op == "Cast" and not args and bn.outputs[0] not in graph_outputs and isinstance(bn.kw.get("to"), int):
            # (Cast-1 names its target type by a string: left as it is)
            dtype = _CAST_DTYPES.get(bn.kw["to"])
            if dtype is not None:
                call = SameTypeCast(bn.call, dtype)
        if call is not None:
            try:
                key = (bn.call, op, tuple(_token(a) for a in args), repr(sorted(bn.kw.items())))
                call = made.setdefault(key, call)
            except TypeError:  # an unhashable call: its own wrapper
                pass
            nodes[j] = rebound(bn, call, dict(bn.kw), list(bn.inputs), list(bn.outputs))
    return nodes
