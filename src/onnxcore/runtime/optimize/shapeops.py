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
  (the kernel checks them against the input's last extent: for a shape it accepted they stay in range);
- ``Gather``, ``GatherElements``, ``GatherND`` with constant indices (the attention mask's ``GatherND`` of a
  dynamo export, say): ``numpy.take`` of the flat positions the kernel picks for that input shape, found once by
  running the kernel on the positions themselves (``arange(size)`` in the input's shape) and checked against
  its result on the input;
- the rotary embedding's ``rotate_half``, ``Concat(Neg(Slice(x, second half)), Slice(x, first half))`` along the
  last axis (:func:`fuse_rotate_half`): one step writing both halves into one new array, for an input shape whose
  slices the Slice steps showed (on the positions of its elements) to be the two halves.

The result for each input shape is the kernel's (its values, its shape); a refusal (a bad shape) stays the
kernel's, since only a shape the kernel accepted is remembered.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.runtime.optimize._common import rebound, use_counts
from onnxcore.runtime.step import PlanNode

__all__ = [
    "ExpandLike",
    "ReshapeLike",
    "SameTypeCast",
    "SliceLike",
    "PositionsLike",
    "TakeLike",
    "TransposeLike",
    "RotateHalf",
    "fast_shape_ops",
    "fuse_rotate_half",
    "rotate_halves",
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


_SMALL_EXPAND = 1 << 16  # elements up to which an Expand's result is copied rather than a broadcast view


class ExpandLike(_PerShape):
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


_POSITIONS_LIMIT = 1 << 16  # elements of input and result up to which a gather's positions are kept (512 KB)


class PositionsLike(_PerShape):
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
        if type(x) is np.ndarray and type(y) is np.ndarray and max(x.size, y.size) <= _POSITIONS_LIMIT:
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
        elif op in ("Gather", "GatherElements", "GatherND") and len(args) == 1 and args[0] is not None:
            call = PositionsLike(bn.call)
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


_Call = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


def rotate_halves(x: np.ndarray, h: int) -> np.ndarray:
    """``concat(-x[..., h:], x[..., :h])`` along the last axis (``rotate_half`` of halves of ``h``), as one new
    array written half by half."""
    out = np.empty(x.shape, x.dtype)
    np.negative(x[..., h:], out=out[..., :h])
    out[..., h:] = x[..., :h]
    return out


class RotateHalf(_PerShape):
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
            and 0 < x.size <= _POSITIONS_LIMIT
        ):
            h = x.shape[-1] // 2
            pos = np.arange(x.size).reshape(x.shape)
            p_lo, p_hi = self._slices(pos)
            if np.array_equal(p_lo, pos[..., :h]) and np.array_equal(p_hi, pos[..., h:]):
                self._remember(x.shape, h)
        return y


def fuse_rotate_half(nodes: list[PlanNode], const: Mapping[str, Any], outputs: Sequence[str]) -> list[PlanNode]:
    """Make each ``Slice -> Neg -> Concat`` with a second ``Slice`` of the same input (every intermediate read once,
    the slices' arguments constant) one :class:`RotateHalf` step."""
    if not any(bn.node.op_type == "Neg" for bn in nodes):
        return nodes
    uses = use_counts(nodes, outputs)
    producer = {o: k for k, bn in enumerate(nodes) for o in bn.outputs if o}

    def plain(k: int | None, op: str) -> bool:
        if k is None:
            return False
        bn = nodes[k]
        ok = bn.node.op_type == op and bn.node.domain in ("", "ai.onnx") and bn.call is not None and not bn.outer
        return ok and len(bn.outputs) == 1 and uses.get(bn.outputs[0]) == 1

    def call_of(bn: PlanNode, skip: int) -> _Call:
        assert bn.call is not None
        return bn.call, tuple(const[n] if n else None for n in bn.inputs[skip:]), dict(bn.kw)

    replaced: dict[int, PlanNode] = {}
    drop: set[int] = set()
    for c, bn in enumerate(nodes):
        if bn.node.op_type != "Concat" or len(bn.inputs) != 2 or not plain(c, "Concat") or c in drop:
            continue
        if int(bn.kw.get("axis", 0)) != -1:
            continue
        n, lo = producer.get(bn.inputs[0]), producer.get(bn.inputs[1])
        if n is None or lo is None or not plain(n, "Neg") or not plain(lo, "Slice"):
            continue
        hi = producer.get(nodes[n].inputs[0])
        if hi is None or not plain(hi, "Slice") or {n, lo, hi} & drop:
            continue
        x = nodes[lo].inputs[0]
        if not x or nodes[hi].inputs[0] != x or x in const:
            continue
        if any(not (i == "" or i in const) for k in (lo, hi) for i in nodes[k].inputs[1:]):
            continue
        step = RotateHalf(call_of(nodes[lo], 1), call_of(nodes[hi], 1), call_of(nodes[n], 1), call_of(bn, 2))
        absorbed = [nodes[k] for k in sorted((lo, hi, n))]
        replaced[c] = rebound(bn, step, {}, [x], list(bn.outputs), absorbed=absorbed)
        replaced[c].may_tuple = False
        drop.update((lo, hi, n))
    if not replaced:
        return nodes
    return [replaced.get(k, b) for k, b in enumerate(nodes) if k not in drop]
