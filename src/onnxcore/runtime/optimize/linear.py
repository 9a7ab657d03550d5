"""Linear layers as one product (Clause 8.2, per-node overhead): a MatMul by a constant matrix (and its bias), and
the dynamo exporter's ``Reshape -> Gemm -> Reshape``, each one step over the input's rows.

:func:`fuse_linear` finds them; :class:`LinearStep` and :class:`ReshapedLinearStep` are the steps, each a
:class:`~onnxcore.runtime.optimize.patterns.FusedPattern` that runs its nodes as written for any input its fast
path does not take. The fast path computes the product the nodes compute (the same BLAS call on the same rows,
then the bias added in the same type), so the values are the nodes' own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.kernels.linalg import check_product
from onnxcore.runtime.optimize._common import rebound
from onnxcore.runtime.optimize.patterns import _FLOATS, FusedPattern, _chain, _closed, _Graph
from onnxcore.runtime.step import PlanNode

__all__ = ["LinearStep", "ReshapedLinearStep", "fuse_linear"]

# Elements of a product below which it is not checked against the limits (a decoder step's few rows).
_UNCHECKED_ELEMENTS = 1 << 16


def _linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """``x @ w (+ b)``: the leading axes of ``x`` as the rows of one product (one BLAS call rather than one per
    leading index), the bias added in place on the fresh product."""
    k, n = w.shape
    check_product(x.shape, w.shape, w.dtype.itemsize, "MatMul (linear step)")
    y = np.matmul(x.reshape(-1, k), w) if x.ndim > 2 else np.matmul(x, w)
    if b is not None:
        y += b
    return y.reshape(*x.shape[:-1], n)


class LinearStep(FusedPattern):
    """The linear layer's step (:func:`fuse_linear`): a :class:`FusedPattern` of :func:`_linear` whose test and
    product are written out in its call (a transformer runs a dozen of these per layer, on a decoder step's few rows
    each costs more in dispatch than in arithmetic); the same test, the same product, the same values."""

    __slots__ = ("_b", "_dtype", "_k", "_n", "_w")

    def __init__(
        self,
        w: np.ndarray,
        b: np.ndarray | None,
        x_name: str,
        chain: list[tuple[Callable[..., Any], list[str | np.ndarray | None], dict[str, Any], list[str]]],
    ) -> None:
        super().__init__("Linear", _linear, (w, b), {}, _linear_accepts(w, b), x_name, chain)
        self._w, self._b = w, b
        self._k, self._n = w.shape
        self._dtype = w.dtype

    def __call__(self, *xs: Any) -> Any:
        if len(xs) == 1:
            x = xs[0]
            k = self._k
            if type(x) is np.ndarray and x.dtype == self._dtype and x.ndim >= 2 and x.shape[-1] == k and k > 0:
                if x.ndim == 2:
                    return self._rows(x)
                return self._rows(x.reshape(-1, k)).reshape(x.shape[:-1] + (self._n,))
        return super().__call__(*xs)

    def _rows(self, x2: np.ndarray) -> np.ndarray:
        """The product of the rows ``x2`` (2-D) by the weights, the bias added in place: :func:`_linear`'s."""
        if (
            x2.shape[0] * self._n > _UNCHECKED_ELEMENTS
        ):  # a product of data-sized rows checked against the limits (Clause 15.4)
            check_product(x2.shape, self._w.shape, self._w.dtype.itemsize, "MatMul (linear step)")
        y = np.matmul(x2, self._w)
        if self._b is not None:
            y += self._b
        return y


class ReshapedLinearStep(LinearStep):
    """``Reshape(x) -> Gemm -> Reshape`` (the dynamo exporter's linear layer: the input's axes flattened into rows,
    the product, the result reshaped) as one step. Per input shape, the first run goes as written; when its first
    Reshape made ``x`` the product's rows (``(size / K, K)``), later runs of that shape compute the product of
    ``x.reshape(-1, K)`` directly (the Gemm's own product and sum, so the same values) and give it the shape the
    run as written gave (a Reshape of a fixed shape by constants always gives one shape)."""

    __slots__ = ("_seen",)

    def __init__(
        self,
        w: np.ndarray,
        b: np.ndarray | None,
        x_name: str,
        chain: list[tuple[Callable[..., Any], list[str | np.ndarray | None], dict[str, Any], list[str]]],
    ) -> None:
        super().__init__(w, b, x_name, chain)
        self._seen: dict[tuple[int, ...], tuple[int, ...]] = {}  # input shape -> output shape

    def __call__(self, *xs: Any) -> Any:
        if len(xs) != 1:
            return super().__call__(*xs)
        x = xs[0]
        if type(x) is np.ndarray and x.dtype == self._dtype:
            out = self._seen.get(x.shape)
            if out is not None:
                return self._rows(x.reshape(-1, self._k)).reshape(out)
        y = self.as_written(*xs)
        if type(x) is np.ndarray and type(y) is np.ndarray and x.dtype == self._dtype and x.size and self._flattens(x):
            seen = dict(self._seen) if len(self._seen) < 64 else {}
            seen[x.shape] = y.shape
            self._seen = seen  # replaced whole: runs in other threads read a complete dict
        return y

    def _flattens(self, x: np.ndarray) -> bool:
        """Whether the chain's first Reshape makes ``x`` the rows of the product (``(size / K, K)``)."""
        call, ins, kw, _ = self.chain[0]
        try:
            flat = call(x, *[n for n in ins[1:] if not isinstance(n, str)], **kw)
        except Exception:  # the run as written succeeded, so this does not fail; be safe all the same
            return False
        return type(flat) is np.ndarray and flat.shape == (x.size // self._k, self._k)


def _linear_accepts(w: np.ndarray, b: np.ndarray | None) -> Callable[[np.ndarray], bool]:
    def accepts(x: np.ndarray) -> bool:
        return x.dtype == w.dtype and x.ndim >= 2 and x.shape[-1] == w.shape[0] > 0

    return accepts


def fuse_linear(nodes: list[PlanNode], const: Mapping[str, Any], outputs: Sequence[str]) -> list[PlanNode]:
    """A MatMul by a constant 2-D float matrix (and the Add of a constant bias along its last axis that follows
    it, when it is the product's only reader) as one step: the leading axes flattened into the rows of a single
    product, the bias added in place. The same products and sums (Clause 11.4: BLAS may block them differently);
    other inputs run the nodes as written."""
    if not any(bn.node.op_type in ("MatMul", "Gemm") for bn in nodes):
        return nodes
    g = _Graph(nodes, const, outputs)
    replaced: dict[int, PlanNode] = {}
    for k in range(len(nodes)):
        if g.op(k) == "Gemm" and k not in g.taken:
            found = _reshaped_gemm(g, k)
            if found is not None:
                members, xname, step = found
                last = members[-1]
                # Bound as the Gemm (never as a Reshape, which the shape-operator pass would give a view's step).
                others = [g.nodes[j] for j in members if j != k]
                replaced[last] = rebound(g.nodes[k], step, {}, [xname], [g.out(last)], absorbed=others)
                replaced[last].may_tuple = False
                g.taken.update(members)
            continue
        if g.op(k) != "MatMul" or len(g.nodes[k].inputs) != 2 or k in g.taken:
            continue
        xname, wname = g.nodes[k].inputs
        w = const.get(wname)
        if xname in const or not isinstance(w, np.ndarray) or w.ndim != 2 or w.dtype not in _FLOATS:
            continue
        members = [k]
        b = None
        a = g.sole_reader(g.out(k), "Add")
        if a is not None:
            ins = g.nodes[a].inputs
            other = ins[1] if ins[0] == g.out(k) else ins[0]
            v = const.get(other)
            if isinstance(v, np.ndarray) and v.dtype == w.dtype and v.ndim == 1 and v.size in (1, w.shape[1]):
                b = v
                members.append(a)
        if not _closed(g, members):
            continue
        fused = LinearStep(w, b, xname, _chain(g, members))
        last = members[-1]
        others = [g.nodes[j] for j in members[1:]]
        replaced[last] = rebound(g.nodes[k], fused, {}, [xname], [g.out(last)], absorbed=others)
        replaced[last].may_tuple = False
        g.taken.update(members)
    if not replaced:
        return nodes
    return [replaced.get(j, bn) for j, bn in enumerate(nodes) if j in replaced or j not in g.taken]


def _reshaped_gemm(g: _Graph, k: int) -> tuple[list[int], str, ReshapedLinearStep] | None:
    """``Reshape(x, (-1 or M, K)) -> Gemm(·, W (K, N) constant, C constant of N or none; alpha 1, beta 1, no
    transposition) -> Reshape(·, constant)``, every intermediate read once: the nodes, ``x`` and the step."""
    bn = g.nodes[k]
    kw = bn.kw
    if float(kw.get("alpha", 1.0)) != 1.0 or int(kw.get("transA", 0)) or int(kw.get("transB", 0)):
        return None
    if not 2 <= len(bn.inputs) <= 3 or len(bn.outputs) != 1 or bn.since < 11:
        return None
    a_name, w_name = bn.inputs[:2]
    w = g.const.get(w_name)
    if not isinstance(w, np.ndarray) or w.ndim != 2 or w.dtype not in _FLOATS or not w.flags.c_contiguous:
        return None
    b = None
    if len(bn.inputs) == 3 and bn.inputs[2]:
        b = g.const.get(bn.inputs[2])
        if float(kw.get("beta", 1.0)) != 1.0 or not isinstance(b, np.ndarray) or b.dtype != w.dtype:
            return None
        if b.ndim != 1 or b.size not in (1, w.shape[1]):
            return None
    r1 = g.made_by(a_name, "Reshape")
    if r1 is None or g.uses.get(a_name) != 1 or len(g.nodes[r1].inputs) != 2:
        return None
    xname, s1 = g.nodes[r1].inputs
    shape1 = g.const.get(s1)
    if xname in g.const or not isinstance(shape1, np.ndarray) or shape1.shape != (2,) or int(shape1[1]) != w.shape[0]:
        return None
    r2 = g.sole_reader(g.out(k), "Reshape")
    if r2 is None or len(g.nodes[r2].inputs) != 2 or g.nodes[r2].inputs[0] != g.out(k):
        return None
    if not isinstance(g.const.get(g.nodes[r2].inputs[1]), np.ndarray):
        return None
    members = [r1, k, r2]
    if not _closed(g, members):
        return None
    return members, xname, ReshapedLinearStep(w, b, xname, _chain(g, members))
