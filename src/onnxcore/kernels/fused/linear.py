"""Linear layers as one product (Clause 8.2, per-node overhead; the matcher is ``onnxcore.runtime.optimize.linear``):
a MatMul by a constant matrix (and its bias), a Gemm by one (its 2-D input alone: ``rows_only``), and the dynamo
exporter's ``Reshape -> Gemm -> Reshape``, each one step over the input's rows.

:class:`LinearStep` and :class:`ReshapedLinearStep` are :class:`~onnxcore.kernels.fused.pattern.FusedPattern`
steps that run their nodes as written for any input their fast path does not take. The fast path computes the
product the nodes compute (the same BLAS call on the same rows, then the bias added in the same type), so the values
are the nodes' own.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels._epilogue import add_row_vector, relu_into, row_vector_relu_into
from onnxcore.kernels.fused import FUSED_DOMAIN
from onnxcore.kernels.fused.common import FLOATS, Chain
from onnxcore.kernels.fused.pattern import FusedPattern
from onnxcore.kernels.linalg import check_product, dot_2d
from onnxcore.kernels.registry import kernel

__all__ = ["LinearStep", "ReshapedLinearStep"]

# Elements of a product below which it is not checked against the limits (a decoder step's few rows).
_UNCHECKED_ELEMENTS = 1 << 16


def _linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """``x @ w (+ b)``: the leading axes of ``x`` as the rows of one product (one BLAS call rather than one per
    leading index), the bias added in place on the fresh product."""
    k, n = w.shape
    check_product(x.shape, w.shape, w.dtype.itemsize, "MatMul (linear step)")
    # (dot_2d: kernels/linalg.py's module docstring, small products; the rows as MatMul and Gemm multiply them)
    y = dot_2d(x.reshape(-1, k) if x.ndim > 2 else x, w)
    if b is not None:
        y += b
    return y.reshape(*x.shape[:-1], n)


class LinearStep(FusedPattern):
    """The linear layer's step (:func:`fuse_linear`): a :class:`FusedPattern` of :func:`_linear` whose test and
    product are written out in its call (a transformer runs a dozen of these per layer, on a decoder step's few rows
    each costs more in dispatch than in arithmetic); the same test, the same product, the same values."""

    __slots__ = ("_b", "_dtype", "_k", "_max_rank", "_n", "_relu", "_w")

    def __init__(
        self,
        w: np.ndarray,
        b: np.ndarray | None,
        x_name: str,
        chain: Chain,
        rows_only: bool = False,
    ) -> None:
        # The bias as one row, (1, N), made once: numpy adds a (1, N) row to the (rows, N) product in 0.6 us at a
        # few rows and takes 1.4 us to broadcast a 1-D (N,) one (its iterator set-up for operands of different ranks).
        row = None if b is None else b.reshape(1, -1)
        # (a Gemm's input is 2-D by definition: any other rank runs the node as written, which refuses it)
        self._max_rank = 2 if rows_only else 1 << 30
        super().__init__("Linear", _linear, (w, row), {}, _linear_accepts(w, b, self._max_rank), x_name, chain)
        self._w, self._b = w, row
        self._k, self._n = w.shape
        self._dtype = w.dtype
        self._relu = False

    def with_relu(self) -> LinearStep:
        """This step followed by a Relu that is its result's only reader (the plan's WithRelu): the Relu applied in
        place on the fresh result, with the bias in one pass on the fast path. The same values."""
        step = copy.copy(self)
        step._relu = True
        return step

    def __call__(self, *xs: Any) -> Any:
        if len(xs) == 1:
            x = xs[0]
            k = self._k
            if type(x) is np.ndarray and x.dtype == self._dtype and x.ndim >= 2 and x.shape[-1] == k and k > 0:
                if x.ndim == 2:
                    return self._rows(x)
                if x.ndim <= self._max_rank:
                    return self._rows(x.reshape(-1, k)).reshape(x.shape[:-1] + (self._n,))
        return self._after(super().__call__(*xs))

    def _after(self, y: Any) -> Any:
        """The nodes' value ``y`` (a fresh array) with the Relu of :meth:`with_relu` applied when it has one."""
        if not self._relu:
            return y
        return relu_into(y, y if type(y) is np.ndarray and y.flags.writeable else None)

    def _rows(self, x2: np.ndarray) -> np.ndarray:
        """The product of the rows ``x2`` (2-D) by the weights, the bias added in place (:func:`_linear`'s), then the
        Relu of :meth:`with_relu` (with the bias in one pass)."""
        if x2.shape[0] * self._n > _UNCHECKED_ELEMENTS:
            # A product of data-sized rows checked against the limits (Clause 15.4); a decoder step's few rows not.
            check_product(x2.shape, self._w.shape, self._w.dtype.itemsize, "MatMul (linear step)")
        y = dot_2d(x2, self._w)  # (dot_2d: kernels/linalg.py's module docstring, small products)
        b = self._b
        if b is None:
            return relu_into(y, y) if self._relu else y
        if self._relu:
            return row_vector_relu_into(y, b)
        add_row_vector(y, b)
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
        chain: Chain,
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
        y = self._after(self.as_written(*xs))
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


def _linear_accepts(w: np.ndarray, b: np.ndarray | None, max_rank: int) -> Callable[[np.ndarray], bool]:
    def accepts(x: np.ndarray) -> bool:
        return x.dtype == w.dtype and 2 <= x.ndim <= max_rank and x.shape[-1] == w.shape[0] > 0

    return accepts


# ------------------------------------------------------------------------------------------------ the kernels
# ``chain``: the nodes as written (for inputs the fast path does not take); ``x_name``: the input's name in it.


def _check_weight(weight: Any, bias: Any) -> None:
    if not isinstance(weight, np.ndarray) or weight.ndim != 2 or weight.dtype not in FLOATS:
        raise EvaluationError("Linear: the weight must be a 2-D float32/float64 array")
    if bias is not None and (not isinstance(bias, np.ndarray) or bias.dtype != weight.dtype or bias.ndim != 1):
        raise EvaluationError("Linear: the bias must be a 1-D array of the weight's type")


def _prepare_linear(
    constants: Sequence[Any],
    *,
    weight: np.ndarray,
    bias: np.ndarray | None = None,
    chain: Chain = (),
    x_name: str = "x",
    rows_only: bool = False,
) -> LinearStep:
    _check_weight(weight, bias)
    return LinearStep(weight, bias, x_name, list(chain), rows_only)


@kernel("Linear", 1, domain=FUSED_DOMAIN, prepare=_prepare_linear, prepare_constants=True)
def linear(
    x: Any,
    *,
    weight: np.ndarray,
    bias: np.ndarray | None = None,
    chain: Chain = (),
    x_name: str = "x",
    rows_only: bool = False,
) -> Any:
    """``MatMul(x, weight)`` (then ``Add(bias)`` along the last axis) with the leading axes of ``x`` as the rows of
    one product, the bias added in place; with ``rows_only`` (a Gemm's product and C), a 2-D ``x`` alone."""
    return _prepare_linear((x,), weight=weight, bias=bias, chain=chain, x_name=x_name, rows_only=rows_only)(x)


def _prepare_reshaped_linear(
    constants: Sequence[Any],
    *,
    weight: np.ndarray,
    bias: np.ndarray | None = None,
    chain: Chain,
    x_name: str = "x",
) -> ReshapedLinearStep:
    _check_weight(weight, bias)
    if not chain:
        raise EvaluationError("ReshapedLinear: the nodes as written (Reshape, Gemm, Reshape) are needed")
    return ReshapedLinearStep(weight, bias, x_name, list(chain))


@kernel("ReshapedLinear", 1, domain=FUSED_DOMAIN, prepare=_prepare_reshaped_linear, prepare_constants=True)
def reshaped_linear(
    x: Any, *, weight: np.ndarray, bias: np.ndarray | None = None, chain: Chain, x_name: str = "x"
) -> Any:
    """``Reshape(x) -> Gemm(weight, bias) -> Reshape`` (the nodes as written: ``chain``), the product computed on
    ``x``'s rows directly once a run of its shape showed the first Reshape makes them the product's rows."""
    return _prepare_reshaped_linear((x,), weight=weight, bias=bias, chain=chain, x_name=x_name)(x)
