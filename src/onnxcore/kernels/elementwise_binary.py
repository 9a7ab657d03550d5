"""Binary, variadic, comparison, logical and bitwise elementwise kernels.

Broadcasting is multidirectional (Clause 6.6.2) from opset 7 (variadic ops from opset 8); the
binary ops of opsets 1 and 6 use the legacy ``broadcast``/``axis`` attributes instead.

Max and Min, NaN (Clause 11.3): onnxcore implements IEEE 754-2019 ``maximum``/``minimum``
(NaN-propagating: ``Max(NaN, 0) = NaN``, ``Min(0, NaN) = NaN``), not ``maxNum``/``minNum``. The
same holds for ReduceMax/ReduceMin, Relu (``max(0, NaN) = NaN``) and Clip. onnxruntime 1.31
agrees (tests/kernels/test_elementwise.py::test_max_min_propagate_nan). The ONNX 1-3 vectors
of Max, Min, ReduceMax and ReduceMin contain no NaN, so they do not decide between the two.

Integer arithmetic wraps modulo 2^bits (two's complement). Integer Div truncates toward zero
(C semantics, vector ``test_div_int32_trunc``). Integer division or Mod by zero is not defined by
the operator definitions: it is refused with an EvaluationError (numpy would give 0 silently;
onnxruntime refuses too), never approximated (Clause 4.4). Mod follows the ``fmod`` attribute:
0 is floor modulo (sign of the divisor), 1 is C ``fmod`` (sign of the dividend); before opset 28
a floating-point Mod with ``fmod=0`` is refused (the definition requires ``fmod=1``).

Pow: the result has X's type. Integer X with integer Y wraps like repeated multiplication, and a
negative exponent gives the truncated 1/X^|Y| (1, -1 or 0); integer X with float Y is computed
in float64 and converted toward zero; float X with an integer or wider Y is computed in float64
and rounded once.

BitShift: amounts outside [0, bits) give what the sign extension alone gives (BitShift-28's
statement, applied to the unsigned types of BitShift-11 as well): 0, or -1 for a right shift of
a negative signed value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels._util import (
    ACCUMULATE_ELEMENTS,
    RowTiles,
    check_broadcast_size,
    check_elements,
    from_compute,
    left_fold,
    legacy_broadcast,
    with_rank,
)
from onnxcore.kernels.registry import kernel
from onnxcore.limits import active_limits
from onnxcore.types import ElementType

__all__: list[str] = []

Array = np.ndarray
BinFn = Callable[[Array, Array], Array]


def _wrap(r: Any) -> Array:
    return r if type(r) is np.ndarray else np.asarray(r)


def _bcast_error(A: Array, B: Array) -> ShapeError:
    return ShapeError(f"shapes {A.shape} and {B.shape} are not broadcastable (Clause 6.6.2)")


def _arith(uf: np.ufunc) -> BinFn:
    def f(A: Array, B: Array) -> Array:
        if A.dtype.kind == "V":
            try:
                r = uf(A.astype(np.float32), B.astype(np.float32))
            except ValueError:
                raise _bcast_error(A, B) from None
            return np.asarray(r).astype(A.dtype)
        try:
            return _wrap(uf(A, B))
        except ValueError:
            raise _bcast_error(A, B) from None

    return f


def _refuse_zero_divisor(op: str, B: Array) -> None:
    if not np.all(B):
        raise EvaluationError(f"{op}: integer division by zero (not defined by the operator; Clause 4.4)")


def _div(A: Array, B: Array) -> Array:
    k = A.dtype.kind
    if k in "iu":
        _refuse_zero_divisor("Div", B)
        try:
            if A.dtype.itemsize <= 4:
                # Exact in float64 (|a|, |b| < 2^32, so no quotient is within rounding of an
                # integer it is not), and several times faster than two integer divisions.
                q = np.asarray(np.true_divide(A, B, dtype=np.float64))
                np.trunc(q, out=q)
                return _wrap(q.astype(A.dtype))
            if k == "u":
                return _wrap(np.floor_divide(A, B))
            # Truncation toward zero: q = (a - fmod(a, b)) / b is exact in integers.
            r = np.fmod(A, B)
            q = np.asarray(np.subtract(A, r))
            return _wrap(np.floor_divide(q, B, out=q if q.shape == r.shape else None))
        except ValueError:
            raise _bcast_error(A, B) from None
    return _arith(np.true_divide)(A, B)


_add = _arith(np.add)
_sub = _arith(np.subtract)
_mul = _arith(np.multiply)


def _logic(uf: np.ufunc) -> BinFn:
    def f(A: Array, B: Array) -> Array:
        try:
            return _wrap(uf(A, B))
        except ValueError:
            raise _bcast_error(A, B) from None

    return f


def _compare(uf: np.ufunc) -> BinFn:
    def f(A: Array, B: Array) -> Array:
        if A.dtype.kind == "V":
            A = A.astype(np.float32)
            B = B.astype(np.float32)
        try:
            return _wrap(uf(A, B))
        except ValueError:
            raise _bcast_error(A, B) from None

    return f


def _register_binary(
    op: str, fn: BinFn, modern: tuple[int, ...], legacy: tuple[int, ...] = (), consumed: bool = False
) -> None:
    """Register a binary kernel: ``modern`` versions broadcast multidirectionally; ``legacy`` ones
    (opset 1/6) take ``broadcast``/``axis`` (and ``consumed_inputs`` at opset 1 when ``consumed``)."""

    def k(A: Array, B: Array) -> Array:
        if A.shape != B.shape:
            # An operand of one element leaves the other's element count (no broadcast to size against the limits)
            # and, of no greater rank, its shape: given as rank 0, which numpy broadcasts at a third of the cost of
            # a [1] or [1, 1] (a [1, 3] times a [1]: 0.85 -> 0.35 us, numpy 2.4), the same values.
            if B.size == 1:
                if 0 < B.ndim <= A.ndim:
                    B = B.reshape(())
            elif A.size == 1:
                if 0 < A.ndim <= B.ndim:
                    A = A.reshape(())
            else:
                check_broadcast_size((A, B), op)
        return fn(A, B)

    k.__name__ = k.__qualname__ = op.lower()
    if modern:

        def prepare(constants: tuple[Any, ...]) -> Callable[[Array, Array], Array]:
            return _with_constant(op, fn, k, constants)

        kernel(op, *modern, prepare=prepare, prepare_constants=True)(k)
    for v in legacy:
        if v == 1 and consumed:

            def k1(
                A: Array,
                B: Array,
                *,
                axis: int | None = None,
                broadcast: int = 0,
                consumed_inputs: list[int] | None = None,
            ) -> Array:
                return fn(A, legacy_broadcast(A, B, broadcast, axis))

            k1.__name__ = k1.__qualname__ = op.lower() + "_1"
            kernel(op, 1)(k1)
        else:

            def kl(A: Array, B: Array, *, axis: int | None = None, broadcast: int = 0) -> Array:
                return fn(A, legacy_broadcast(A, B, broadcast, axis))

            kl.__name__ = kl.__qualname__ = f"{op.lower()}_{v}"
            kernel(op, v)(kl)


class ConstantOperand:
    """A binary elementwise node one of whose operands is a constant (prepared by the plan, Clause 8.2: the
    ``prepare_with_constants`` rewrite), evaluated as the kernel evaluates it with less work per call.

    numpy broadcasts operands of one rank at half the cost of operands of different ranks (a ``(1, 10)`` minus a
    ``(10,)``: 1.1 against 0.5 us, numpy 2.4) and a single-element operand fastest as rank 0, so the constant is
    given the other operand's rank once per rank (leading extents of 1, which the multidirectional broadcast of
    Clause 6.6.2 prepends anyway), or rank 0 when it holds one element: the same elements meet, the same ufunc
    computes each result, so the values are the kernel's bit for bit. The element limit is checked as the kernel
    checks it (a constant of one element cannot raise the element count); everything else (types, the bfloat16
    route, errors) is the kernel's own function, and an operand that is not the prepared constant takes the kernel.

    Attributes:
        which: The constant's input position (0 or 1).
    """

    __slots__ = ("_by_rank", "_const", "_fn", "_kernel", "_op", "_scalar", "_tiles", "which")

    def __init__(self, op: str, fn: BinFn, kernel_fn: BinFn, const: Array, which: int) -> None:
        self._op, self._fn, self._kernel, self._const, self.which = op, fn, kernel_fn, const, which
        # (one element: rank 0 against an operand of no lower rank, as the kernel gives it)
        self._scalar = const.reshape(()) if const.size == 1 else None
        self._by_rank: dict[int, Array] = {}
        # A short float row against the rows of the other operand: repeated, so numpy's loop is not one per row
        # (RowTiles: the same ufunc on the same pairs of elements, so the kernel's bits).
        uf = _ROW_UFUNCS.get(op)
        self._tiles = (
            (uf, RowTiles(const)) if uf is not None and const.dtype in _TILED_TYPES and RowTiles.is_row(const) else None
        )

    def _shaped(self, rank: int) -> Array:
        """The constant as an operand of this rank is given to numpy (kept for up to eight ranks)."""
        c = self._const
        got = with_rank(c, rank) if c.ndim > rank or self._scalar is None else self._scalar  # (c: rank not lower)
        if len(self._by_rank) < 8:
            self._by_rank[rank] = got
        return got

    def __call__(self, A: Array, B: Array) -> Array:
        which = self.which
        x, c = (A, B) if which else (B, A)
        if type(x) is not np.ndarray or c is not self._const:
            return self._kernel(A, B)
        tiles = self._tiles
        if tiles is not None and x.size >= _TILED_MIN:
            y = tiles[1].apply(tiles[0], x, not which)
            if y is not None:
                return y
        shaped = self._by_rank.get(x.ndim)
        if shaped is None:
            shaped = self._shaped(x.ndim)
        if self._scalar is None:
            # (check_broadcast_size's first test inline: the call costs half of numpy's operation at a row)
            limit = active_limits().max_tensor_elements
            if limit is not None and x.size * shaped.size > limit:
                check_broadcast_size((x, shaped), self._op)
        return self._fn(x, shaped) if which else self._fn(shaped, x)


# The operators whose float kernel is the ufunc itself (Div's refuses a zero divisor of integers only), for
# ConstantOperand's repeated rows; from _TILED_MIN elements (RowTiles decides within).
_ROW_UFUNCS: dict[str, np.ufunc] = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.true_divide}
_TILED_TYPES = (np.dtype(np.float32), np.dtype(np.float64))
_TILED_MIN = 256


def _with_constant(op: str, fn: BinFn, kernel_fn: BinFn, constants: tuple[Any, ...]) -> BinFn:
    """What a plan calls for a binary node with these constant inputs (None where not constant): a
    :class:`ConstantOperand` when exactly one operand is a constant array, else the kernel."""
    given = [i for i, c in enumerate(constants[:2]) if c is not None]
    if len(given) != 1 or len(constants) != 2 or type(constants[given[0]]) is not np.ndarray:
        return kernel_fn
    return ConstantOperand(op, fn, kernel_fn, constants[given[0]], given[0])


# Add/Sub/Mul/Div: 7, 13 and 14 differ only in the admitted types.
_register_binary("Add", _add, (7, 13, 14), (1, 6), consumed=True)
_register_binary("Sub", _sub, (7, 13, 14), (1, 6), consumed=True)
_register_binary("Mul", _mul, (7, 13, 14), (1, 6), consumed=True)
_register_binary("Div", _div, (7, 13, 14), (1, 6), consumed=True)

_register_binary("And", _logic(np.logical_and), (7,), (1,))
_register_binary("Or", _logic(np.logical_or), (7,), (1,))
_register_binary("Xor", _logic(np.logical_xor), (7,), (1,))

_register_binary("Greater", _compare(np.greater), (7, 9, 13), (1,))
_register_binary("Less", _compare(np.less), (7, 9, 13), (1,))
_register_binary("GreaterOrEqual", _compare(np.greater_equal), (12, 16))
_register_binary("LessOrEqual", _compare(np.less_equal), (12, 16))
# Equal-19 admits strings (object arrays of bytes; numpy compares them elementwise).
_register_binary("Equal", _compare(np.equal), (7, 11, 13, 19), (1,))

_register_binary("BitwiseAnd", _logic(np.bitwise_and), (18,))
_register_binary("BitwiseOr", _logic(np.bitwise_or), (18,))
_register_binary("BitwiseXor", _logic(np.bitwise_xor), (18,))


# --- Pow --------------------------------------------------------------------------------------


def _int_pow(X: Array, Y: Array) -> Array:
    """X ** Y for integer X and Y, wrapping in X's type; a negative exponent truncates 1/x^n."""
    dt = X.dtype
    y = Y.astype(np.int64) if Y.dtype != np.int64 else Y
    x = X.astype(np.int64) if dt.kind == "i" else X.astype(np.uint64)
    neg = y < 0
    if not neg.any():
        return _wrap(np.power(x, y if dt.kind == "i" else y.astype(np.uint64)).astype(dt))
    r = np.power(x, np.where(neg, 0, y) if dt.kind == "i" else np.where(neg, 0, y).astype(np.uint64))
    # x^-n truncated toward zero: 1 for x == 1, (-1)^n for x == -1, 0 otherwise (x = 0 undefined: 0).
    odd = (y & 1).astype(bool)
    negval = np.where(x == 1, 1, np.where((x == -1) if dt.kind == "i" else False, np.where(odd, -1, 1), 0))
    return _wrap(np.where(neg, negval, r).astype(dt))


# Constant exponents computed as products (onnxruntime does the same for 2 and 3): numpy's float ``power`` costs
# tens of nanoseconds per element except at its own fast exponents (-1, 0, 0.5, 1, 2). A product of k factors
# rounds k - 1 times instead of once: within the 1e-5 relative tolerance every comparison here uses, and exact
# for the special values (zeros of both signs, infinities, NaN; mended where sqrt differs from pow). Exponent 2 is
# numpy's own square in power, bit for bit, but power's dispatch costs twice a multiply's on small arrays.
_PRODUCT_EXPONENTS = {2.0: 2, 3.0: 3, 4.0: 4, -2.0: -2, -3.0: -3, -4.0: -4}
# Half-integer exponents through sqrt (numpy already takes 0.5 as sqrt): x^1.5 = x * sqrt(x), x^-0.5 = 1 / sqrt(x).
_HALF_EXPONENTS = (1.5, 2.5, -0.5, -1.5)


def _pow_product(x: Array, k: int) -> Array:
    r = _wrap(np.multiply(x, x))  # (an array for a rank-0 x too: the steps below write into it)
    n = abs(k)
    if n == 3:
        r *= x
    elif n == 4:
        r *= r
    if k < 0:
        np.reciprocal(r, out=r)
    return r


def _pow_half(x: Array, y: float) -> Array:
    s = _wrap(np.sqrt(x))  # (an array for a rank-0 x too: the steps below write into it)
    if y == 1.5:
        s *= x
    elif y == 2.5:
        s *= x
        s *= x
    elif y == -0.5:
        np.reciprocal(s, out=s)
    else:  # -1.5
        s *= x
        np.reciprocal(s, out=s)
    # sqrt(-0) = -0 and sqrt(-inf) = NaN where pow gives +0 or +inf: only those two inputs need mending.
    neg = np.signbit(x)
    if neg.any():
        mend = neg & ((x == 0) | np.isneginf(x))
        if mend.any():
            big = (x == 0) == (y < 0)  # -0 to a negative power and -inf to a positive one: +inf
            s[mend] = np.where(big[mend], np.inf, 0.0)
    return s


def _pow(X: Array, Y: Array) -> Array:
    dt = X.dtype
    if dt.kind == "f" and Y.size == 1 and Y.ndim <= X.ndim and Y.dtype.kind in "fiu":
        yv = float(Y.reshape(-1)[0])
        k = _PRODUCT_EXPONENTS.get(yv)
        if k is not None:
            if dt.itemsize >= 4:
                return _pow_product(X, k)
            return _pow_product(X.astype(np.float32), k).astype(dt)
        if yv in _HALF_EXPONENTS:
            if dt.itemsize >= 4:
                return _pow_half(X, yv)
            return _pow_half(X.astype(np.float32), yv).astype(dt)
    try:
        if dt.kind in "iu":
            if Y.dtype.kind in "iu":
                return _int_pow(X, Y)
            # Integer base, float exponent: in float64, then converted to X's type (toward zero).
            yf = Y.astype(np.float32) if Y.dtype.kind == "V" else Y
            return _wrap(np.power(X.astype(np.float64), yf.astype(np.float64)).astype(dt))
        x = X.astype(np.float32) if dt.kind == "V" else X
        y = Y
        if y.dtype != x.dtype:
            # An integer exponent is exact in float64; convert once.
            y = y.astype(np.float32) if y.dtype.kind == "V" else y
            if y.dtype.kind in "iu" or y.dtype.itemsize > x.dtype.itemsize:
                r = np.power(x.astype(np.float64), y.astype(np.float64))
                return from_compute(r, dt)
            y = y.astype(x.dtype)
        return from_compute(np.power(x, y), dt)
    except ValueError:
        raise _bcast_error(X, Y) from None


@kernel("Pow", 1)
def pow_1(X: Array, Y: Array, *, axis: int | None = None, broadcast: int = 0) -> Array:
    """Pow-1: legacy broadcasting of Y to X."""
    return _pow(X, legacy_broadcast(X, Y, broadcast, axis))


class PowConstantExponent:
    """A Pow node whose exponent is a constant of one element (prepared by the plan, Clause 8.2): the route
    :func:`_pow` takes for a float32/float64 base decided once (a product, a square root, numpy's power with the
    exponent as rank 0), the values :func:`_pow`'s bit for bit; any other base (an integer, a narrow float) takes
    :func:`_pow` itself."""

    __slots__ = ("_half", "_k", "_y", "_y0")

    def __init__(self, y: Array) -> None:
        self._y, self._y0 = y, y.reshape(())
        v = float(self._y0)
        self._k = _PRODUCT_EXPONENTS.get(v)
        self._half = v if v in _HALF_EXPONENTS else None

    def __call__(self, X: Array, Y: Array) -> Array:
        y = self._y
        if Y is y and type(X) is np.ndarray and X.dtype.kind == "f" and X.dtype.itemsize >= 4 and X.ndim >= y.ndim:
            if self._k is not None:
                return _pow_product(X, self._k)
            if self._half is not None:
                return _pow_half(X, self._half)
            if X.dtype == y.dtype:
                r = np.power(X, self._y0)
                return r if type(r) is np.ndarray else np.asarray(r)
        return _pow(X, Y)


def _prepare_pow(constants: tuple[Any, ...]) -> Callable[[Array, Array], Array]:
    y = constants[1] if len(constants) == 2 and constants[0] is None else None
    if type(y) is np.ndarray and y.size == 1 and y.dtype.kind in "fiu":
        return PowConstantExponent(y)
    return pow_


@kernel("Pow", 7, 12, 13, 15, prepare=_prepare_pow, prepare_constants=True)
def pow_(X: Array, Y: Array) -> Array:
    """Pow-7/12/13/15: X ** Y with multidirectional broadcasting; output of X's type."""
    return _pow(X, Y)


# --- Mod --------------------------------------------------------------------------------------


def _mod(A: Array, B: Array, fmod: int, floats_floor: bool) -> Array:
    dt = A.dtype
    is_float = dt.kind in "fV"
    if is_float and not fmod and not floats_floor:
        raise EvaluationError("Mod: fmod must be 1 for floating-point inputs before opset 28")
    if not is_float:
        _refuse_zero_divisor("Mod", B)
    a = A.astype(np.float32) if dt.kind == "V" else A
    b = B.astype(np.float32) if B.dtype.kind == "V" else B
    try:
        if fmod:
            return from_compute(np.fmod(a, b), dt)
        if is_float:
            # Floor modulo with the special cases of Mod-28: numpy's remainder gives +-0 with the
            # divisor's sign, NaN for infinite x or zero y, and x or y for an infinite y.
            r = np.remainder(a, b)
            return from_compute(r, dt)
        return _wrap(np.remainder(a, b))
    except ValueError:
        raise _bcast_error(A, B) from None


@kernel("Mod", 10, 13)
def mod(A: Array, B: Array, *, fmod: int = 0) -> Array:
    """Mod-10/13: integer floor modulo (fmod=0) or C fmod (fmod=1, required for floats)."""
    return _mod(A, B, fmod, floats_floor=False)


@kernel("Mod", 28)
def mod_28(A: Array, B: Array, *, fmod: int = 0) -> Array:
    """Mod-28: floor modulo defined for floats too, with stated special cases."""
    return _mod(A, B, fmod, floats_floor=True)


# --- BitShift ---------------------------------------------------------------------------------


def _bitshift(X: Array, Y: Array, direction: str) -> Array:
    if direction not in ("LEFT", "RIGHT"):
        raise EvaluationError(f"BitShift: direction must be 'LEFT' or 'RIGHT', got {direction!r}")
    dt = X.dtype
    bits = dt.itemsize * 8
    try:
        x, y = np.broadcast_arrays(X, Y)
    except ValueError:
        raise _bcast_error(X, Y) from None
    y64 = y.astype(np.int64) if dt.kind == "i" or y.dtype.kind == "i" else y.astype(np.uint64)
    ok = (y64 >= 0) & (y64 < bits)
    ys = np.where(ok, y64, 0).astype(dt)
    if direction == "LEFT":
        r = np.left_shift(x, ys)
        return _wrap(np.where(ok, r, np.zeros((), dt)))
    r = np.right_shift(x, ys)
    # Out-of-range shift amount: what sign extension alone gives (-1 for negative X, else 0).
    fill = np.where(x < 0, np.asarray(-1).astype(dt), np.zeros((), dt)) if dt.kind == "i" else np.zeros((), dt)
    return _wrap(np.where(ok, r, fill))


@kernel("BitShift", 11, 28)
def bitshift(X: Array, Y: Array, *, direction: str) -> Array:
    """BitShift-11 (unsigned) / -28 (signed: arithmetic right shift; out-of-range amounts)."""
    return _bitshift(X, Y, direction)


# --- Where ------------------------------------------------------------------------------------


@kernel("Where", 9, 16)
def where(condition: Array, X: Array, Y: Array) -> Array:
    """Where-9/16: elements of X where condition, else of Y (multidirectional broadcasting)."""
    check_broadcast_size((condition, X, Y), "Where")
    try:
        r = np.where(condition, X, Y)
    except ValueError:
        raise ShapeError(
            f"shapes {condition.shape}, {X.shape} and {Y.shape} are not broadcastable (Clause 6.6.2)"
        ) from None
    return r if r.dtype == X.dtype else r.astype(X.dtype)


# --- variadic Max, Min, Sum, Mean -------------------------------------------------------------


# From this many inputs of one small shape and type (ACCUMULATE_ELEMENTS at most), the running result is one
# accumulate over the inputs stacked rather than one call per input (below, the loop costs no more: 12 [1, 3] inputs
# 5.8 us either way): the same operations in the same order (_util.left_fold).
_ACCUMULATE_MIN = 16


def _accumulated(op: str, uf: np.ufunc, arrays: tuple[Array, ...], same_shape: bool) -> Array | None:
    """``uf`` of the inputs from the first to the last as :func:`_variadic`'s loop computes it, when they are arrays
    of one shape and one numpy type (bool, integer, float) of at most ``ACCUMULATE_ELEMENTS`` elements: by
    :func:`~onnxcore.kernels._util.left_fold` over them stacked (an AdaBoost's Sum of 50 scores [1, 3]: 40 -> 9 us).
    None otherwise."""
    a0 = arrays[0]
    if type(a0) is not np.ndarray or a0.size > ACCUMULATE_ELEMENTS or a0.dtype.kind not in "biuf":
        return None
    shape, dt = a0.shape, a0.dtype
    for a in arrays:
        if type(a) is not np.ndarray or a.shape != shape or a.dtype != dt:
            return None
    limit = active_limits().max_tensor_elements
    if not same_shape and limit is not None and a0.size ** len(arrays) > limit:
        check_elements(shape, op)  # what check_broadcast_size does with inputs of one shape, without its loops
    return left_fold(uf, np.array(arrays))


def _variadic(op: str, arrays: tuple[Array, ...], uf: np.ufunc, same_shape: bool) -> Array:
    if not arrays:
        raise EvaluationError(f"{op}: at least one input is required")
    dt = arrays[0].dtype
    narrow = dt.kind == "V"
    if len(arrays) >= _ACCUMULATE_MIN:
        acc = _accumulated(op, uf, arrays, same_shape)
        if acc is not None:
            if op == "Mean":
                acc = np.true_divide(acc, len(arrays), out=acc if acc.dtype.kind == "f" else None)
            return from_compute(acc, dt)
    if same_shape:
        for a in arrays[1:]:
            if a.shape != arrays[0].shape:
                raise ShapeError(
                    f"{op} before opset 8: inputs must have one shape, got {arrays[0].shape} and {a.shape}"
                )
    if not same_shape:
        check_broadcast_size(arrays, op)
    xs = [a.astype(np.float32) for a in arrays] if narrow else list(arrays)
    try:
        if len(xs) == 1:
            acc = xs[0].copy()
        else:
            acc = np.asarray(uf(xs[0], xs[1]))
            for a in xs[2:]:
                if a.shape == acc.shape or acc.shape == np.broadcast_shapes(acc.shape, a.shape):
                    uf(acc, a, out=acc)
                else:
                    acc = uf(acc, a)
    except ValueError:
        raise ShapeError(
            f"{op}: shapes " + ", ".join(str(a.shape) for a in arrays) + " are not broadcastable (Clause 6.6.2)"
        ) from None
    if op == "Mean":
        acc = np.true_divide(acc, len(xs), out=acc if acc.dtype.kind == "f" else None)
    return from_compute(acc, dt)


def _register_variadic(op: str, uf: np.ufunc, modern: tuple[int, ...]) -> None:
    def k(*data: Array) -> Array:
        return _variadic(op, data, uf, False)

    def k6(*data: Array) -> Array:
        return _variadic(op, data, uf, True)

    def k1(*data: Array, consumed_inputs: list[int] | None = None) -> Array:
        return _variadic(op, data, uf, True)

    for f, suffix in ((k, ""), (k6, "_6"), (k1, "_1")):
        f.__name__ = f.__qualname__ = op.lower() + suffix
    kernel(op, *modern)(k)
    kernel(op, 6)(k6)
    kernel(op, 1)(k1)


_register_variadic("Max", np.maximum, (8, 12, 13))
_register_variadic("Min", np.minimum, (8, 12, 13))
_register_variadic("Sum", np.add, (8, 13))
_register_variadic("Mean", np.add, (8, 13))


# --- BitCast ----------------------------------------------------------------------------------


def _bit_width(dt: np.dtype[Any]) -> int:
    name = dt.name
    for n, w in (("int2", 2), ("uint2", 2), ("int4", 4), ("uint4", 4), ("float4", 4)):
        if name.startswith(n):
            return w
    return dt.itemsize * 8


@kernel("BitCast", 26)
def bitcast(input: Array, *, to: int) -> Array:
    """BitCast-26: reinterpret the bits (little-endian) as the element type ``to``."""
    try:
        target = np.dtype(ElementType(to).np_dtype)
    except ValueError:
        raise EvaluationError(f"BitCast: unknown element type {to}") from None
    src = input.dtype
    if src.kind == "O" or target.kind == "O":
        raise EvaluationError("BitCast: string tensors cannot be reinterpreted")
    wi, wo = _bit_width(src), _bit_width(target)
    if wi != wo:
        raise EvaluationError(f"BitCast: {src} has {wi} bits but {target} has {wo}")
    if wi < 8:
        # Sub-byte types hold one element per byte in memory; move the low bits explicitly.
        mask = (1 << wi) - 1
        raw = (np.ascontiguousarray(input).view(np.uint8) & mask).reshape(input.shape)
        ucode = {2: "uint2", 4: "uint4"}[wi]
        import ml_dtypes

        unsigned = raw.astype(getattr(ml_dtypes, ucode))
        if target == unsigned.dtype:
            return unsigned
        # Through the unsigned type: for signed targets sign-extend via int8 arithmetic.
        if target.name.startswith("int"):
            s = raw.astype(np.int8)
            s = np.where(s >= (1 << (wi - 1)), s - (1 << wi), s).astype(np.int8)
            return s.astype(target)
        # Float targets of 4 bits: ml_dtypes stores the code in the low bits of the byte.
        return raw.view(target).copy()
    x = np.ascontiguousarray(input)
    if x.dtype.byteorder == ">":
        x = x.astype(x.dtype.newbyteorder("<"))
    if target == np.bool_:
        raw8 = x.view(np.uint8)
        return raw8.astype(np.bool_)
    return x.view(target).reshape(input.shape).copy()
