"""Vector-Jacobian products of the default-domain operators, for :mod:`onnxcore.runtime.gradient`.

A rule takes a :class:`VJP` (the node, its forward input and output values, the gradients of its outputs and
which inputs need one) and returns one gradient per input, ``None`` where none is needed or defined. Inputs
and outputs are float32 or float64 (narrow floats arrive widened); each gradient has its input's shape.

Every version of an operator's semantics is covered: the attribute forms of the early versions (``axes``,
``starts``/``ends``, Clip's ``min``/``max``, the pre-7 ``broadcast``/``axis`` of binary operators) and the
input forms of the later ones. Broadcasting operands get the gradient summed back to their own shape
(Clause 6.6.2). Operators that only select or rearrange elements (Slice, Gather, Transpose, Concat, Split,
Expand, Tile, Where, Pad, ...) are differentiated by running the bound kernel once more on the numbers of the
elements instead of their values, and adding each output element's gradient to the element it was copied
from; their attribute and input forms are thus exactly the kernel's.

Where an operator is not differentiable the rules use one one-sided derivative: the kinks of LeakyRelu and
Elu use the branch of ``x >= 0``, Relu's and Abs' derivative at 0 is 0; Clip passes the gradient to ``x``
when ``min <= x <= max``; Max/Min give it to the first input holding the extreme value (ties); ReduceMax and
ReduceMin share it equally between the elements holding the extreme value (ties); MaxPool gives each
window's gradient to the first element of the window holding its maximum, the one the kernel selects.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnxcore.kernels.shared import is_float, legacy_broadcast, normalize_axes, normalize_axis
from onnxcore.runtime.step import PlanNode

__all__ = ["BASIC_RULES", "CHECKS", "VJP", "GradientRule", "unbroadcast"]

Grads = list[np.ndarray | None]


class VJP:
    """What a rule receives for one node of the differentiated sub-graph.

    Attributes:
        bn: The bound node (``node``, ``kw`` attributes as converted, ``since`` the definition's version,
            ``call`` the kernel).
        ins: Forward input values (``None`` for an unsupplied input).
        outs: Forward output values.
        gouts: Gradient of each output (``None`` where nothing downstream depends on it).
        need: For each input, whether its gradient is wanted.
    """

    __slots__ = ("bn", "gouts", "ins", "need", "outs")

    def __init__(self, bn: PlanNode, ins: list[Any], outs: list[Any], gouts: list[Any], need: list[bool]) -> None:
        self.bn = bn
        self.ins = ins
        self.outs = outs
        self.gouts = gouts
        self.need = need

    @property
    def g(self) -> np.ndarray:
        """The gradient of the first output (zeros when it has none)."""
        g = self.gouts[0]
        return np.zeros(self.outs[0].shape, self.wdt) if g is None else g

    @property
    def wdt(self) -> np.dtype[Any]:
        """The element type the gradients of this node are computed in."""
        for g in self.gouts:
            if g is not None:
                return np.dtype(g.dtype)
        return np.dtype(np.float32)

    @property
    def since(self) -> int:
        """The since_version of the definition the node is bound to (0: a function body)."""
        return int(self.bn.since)

    def attr(self, name: str, default: Any = None) -> Any:
        """An attribute of the node, or ``default`` when absent."""
        return self.bn.kw.get(name, default)

    def inp(self, i: int) -> Any:
        """The i-th input value, ``None`` when absent or unsupplied."""
        return self.ins[i] if i < len(self.ins) else None


GradientRule = Callable[[VJP], Grads]


def unbroadcast(g: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """``g`` summed over the axes along which an operand of ``shape`` was broadcast (Clause 6.6.2)."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1)
    return g.sum(axis=axes, keepdims=True).reshape(shape) if axes else g.reshape(shape)


# ---------------------------------------------------------------------------------------------
# Element-wise unary operators
# ---------------------------------------------------------------------------------------------


def _unary(fn: Callable[[VJP, np.ndarray, np.ndarray, np.ndarray], np.ndarray]) -> GradientRule:
    def rule(a: VJP) -> Grads:
        dt = a.wdt
        x = np.asarray(a.ins[0], dt)
        y = np.asarray(a.outs[0], dt)
        return [fn(a, x, y, a.g), *([None] * (len(a.ins) - 1))]

    return rule


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0, -x))


def _leaky_relu(a: VJP, x: np.ndarray, y: np.ndarray, g: np.ndarray) -> np.ndarray:
    alpha = float(a.attr("alpha", 0.01))
    return np.where(x >= 0, g, g * x.dtype.type(alpha))


def _elu(a: VJP, x: np.ndarray, y: np.ndarray, g: np.ndarray) -> np.ndarray:
    alpha = float(a.attr("alpha", 1.0))
    return np.where(x >= 0, g, g * x.dtype.type(alpha) * np.exp(np.minimum(x, 0)))


_UNARY: dict[str, Callable[[VJP, np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    "Identity": lambda a, x, y, g: g,
    "Cast": lambda a, x, y, g: g,
    "Neg": lambda a, x, y, g: -g,
    "Abs": lambda a, x, y, g: g * np.sign(x),
    "Sqrt": lambda a, x, y, g: g / (y + y),
    "Reciprocal": lambda a, x, y, g: -g * y * y,
    "Exp": lambda a, x, y, g: g * y,
    "Log": lambda a, x, y, g: g / x,
    "Tanh": lambda a, x, y, g: g * (1 - y * y),
    "Sigmoid": lambda a, x, y, g: g * y * (1 - y),
    "Relu": lambda a, x, y, g: np.where(x > 0, g, 0).astype(g.dtype),
    "LeakyRelu": _leaky_relu,
    "Elu": _elu,
    "Softplus": lambda a, x, y, g: g * _sigmoid(x),
    "Sin": lambda a, x, y, g: g * np.cos(x),
    "Cos": lambda a, x, y, g: -g * np.sin(x),
    "Erf": lambda a, x, y, g: g * (2 / math.sqrt(math.pi)) * np.exp(-x * x),
}


def _clip(a: VJP) -> Grads:
    dt = a.wdt
    x = np.asarray(a.ins[0], dt)
    g = a.g
    if a.since < 11:
        lo: np.ndarray = np.asarray(a.attr("min", -np.inf), dt)
        hi: np.ndarray = np.asarray(a.attr("max", np.inf), dt)
    else:
        lo = np.asarray(-np.inf if a.inp(1) is None else a.inp(1), dt)
        hi = np.asarray(np.inf if a.inp(2) is None else a.inp(2), dt)
    # The kernel computes min(max(x, min), max): x wins a tie with min, max(x, min) a tie with max.
    t = np.maximum(x, lo)
    to_x = (x >= lo) & (t <= hi)
    to_lo = (x < lo) & (t <= hi)
    to_hi = t > hi
    out: Grads = [np.where(to_x, g, 0).astype(dt)]
    for i, mask, v in ((1, to_lo, lo), (2, to_hi, hi)):
        if i < len(a.ins):
            out.append(unbroadcast(np.where(mask, g, 0).astype(dt), v.shape) if a.need[i] else None)
    return out


# ---------------------------------------------------------------------------------------------
# Element-wise binary and variadic operators
# ---------------------------------------------------------------------------------------------


def _operands(a: VJP) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) as they broadcast in the kernel: B reshaped by the pre-7 ``broadcast``/``axis`` attributes."""
    dt = a.wdt
    A = np.asarray(a.ins[0], dt) if is_float(np.asarray(a.ins[0]).dtype) else np.asarray(a.ins[0])
    B = np.asarray(a.ins[1], dt) if is_float(np.asarray(a.ins[1]).dtype) else np.asarray(a.ins[1])
    if 0 < a.since < 7:
        B = legacy_broadcast(A, B, int(a.attr("broadcast", 0)), a.attr("axis"))
    return A, B


def _binary(
    fn: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[bool]], tuple[Any, Any]],
) -> GradientRule:
    def rule(a: VJP) -> Grads:
        A, B = _operands(a)
        y = np.asarray(a.outs[0], a.wdt)
        ga, gb = fn(A, B, y, a.g, a.need)
        return [
            unbroadcast(np.asarray(ga), A.shape) if a.need[0] else None,
            unbroadcast(np.asarray(gb), B.shape).reshape(np.shape(a.ins[1])) if a.need[1] else None,
        ]

    return rule


def _pow(A: np.ndarray, B: np.ndarray, y: np.ndarray, g: np.ndarray, need: list[bool]) -> tuple[Any, Any]:
    Bf = B.astype(g.dtype)
    ga = g * Bf * np.power(A, Bf - 1) if need[0] else None
    gb = None
    if need[1]:
        # d(a^b)/db = a^b ln a; where a^b is 0 (a = 0, b > 0) the product is taken as 0, not 0 * -inf.
        gb = np.where(y == 0, 0, g * y * np.log(np.where(y == 0, 1, A))).astype(g.dtype)
    return ga, gb


_BINARY: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[bool]], tuple[Any, Any]]] = {
    "Add": lambda A, B, y, g, need: (g, g),
    "Sub": lambda A, B, y, g, need: (g, -g),
    "Mul": lambda A, B, y, g, need: (g * B, g * A),
    "Div": lambda A, B, y, g, need: (g / B, -g * y / B),
    "Pow": _pow,
}


def _sum(a: VJP) -> Grads:
    g = a.g
    scale = 1.0 / len(a.ins) if a.bn.node.op_type == "Mean" else 1.0
    gs = g * g.dtype.type(scale)
    return [unbroadcast(gs, np.shape(v)) if need else None for v, need in zip(a.ins, a.need)]


def _extreme(a: VJP) -> Grads:
    # The gradient goes to the first input (in input order) equal to the result, element by element.
    g = a.g
    y = np.asarray(a.outs[0], g.dtype)
    free = np.ones(y.shape, bool)
    out: Grads = []
    for v, need in zip(a.ins, a.need):
        hit = (np.asarray(v, g.dtype) == y) & free
        free &= ~hit
        out.append(unbroadcast(np.where(hit, g, 0).astype(g.dtype), np.shape(v)) if need else None)
    return out


# ---------------------------------------------------------------------------------------------
# Operators that select or rearrange elements
# ---------------------------------------------------------------------------------------------


def _reshaped(a: VJP) -> Grads:
    return [a.g.reshape(np.shape(a.ins[0])), *([None] * (len(a.ins) - 1))]


# The inputs whose elements a selecting operator copies, when not only the first (Concat: all of them). Other
# inputs, such as the float ``split`` of Split-1 and ``tiles`` of Tile-1, are counts and keep their values.
_SELECTION_DATA: dict[str, tuple[int, ...]] = {"Where": (1, 2), "Pad": (0, 2)}


def _selection(a: VJP) -> Grads:
    """Run the kernel on element numbers (1-based, distinct across the inputs needing a gradient; 0 for
    other float inputs), then add each output element's gradient to the element it was taken from."""
    args: list[Any] = []
    starts: list[int] = []
    total = 1
    op = a.bn.node.op_type
    data = range(len(a.ins)) if op == "Concat" else _SELECTION_DATA.get(op, (0,))
    for i, (v, need) in enumerate(zip(a.ins, a.need)):
        starts.append(0)
        if i in data and isinstance(v, np.ndarray) and is_float(v.dtype):
            if need:
                starts[-1] = total
                args.append(np.arange(total, total + v.size, dtype=np.int64).reshape(v.shape))
                total += v.size
            else:
                args.append(np.zeros(v.shape, np.int64))
        else:
            args.append(v)
    assert a.bn.call is not None
    res = a.bn.call(*args, **a.bn.kw)
    picked = res if type(res) is tuple else (res,)
    acc = np.zeros(total, np.float64)
    for idx, g in zip(picked, a.gouts):
        if g is not None:
            acc += np.bincount(np.asarray(idx, np.int64).ravel(), weights=g.ravel(), minlength=total)
    dt = a.wdt
    return [acc[s : s + np.size(v)].reshape(np.shape(v)).astype(dt) if s else None for v, s in zip(a.ins, starts)]


# ---------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------


def _reduced(a: VJP) -> tuple[np.ndarray, tuple[int, ...], np.ndarray, np.ndarray]:
    """(x, reduced axes, gradient and result reshaped as with keepdims) of a Reduce* node, either form."""
    dt = a.wdt
    x = np.asarray(a.ins[0], dt)
    if len(a.ins) > 1:  # the axes input of ReduceSum-13 and of the other reductions from version 18
        axes_in = a.ins[1]
        axes = None if axes_in is None else [int(v) for v in np.asarray(axes_in).ravel()]
    else:
        attr = a.attr("axes")
        axes = None if attr is None else [int(v) for v in attr]
    if not axes:
        ax = () if a.attr("noop_with_empty_axes", 0) else tuple(range(x.ndim))
    else:
        ax = tuple(normalize_axes(axes, x.ndim))
    kshape = tuple(1 if i in ax else s for i, s in enumerate(x.shape))
    g = a.g.reshape(kshape)
    y = np.asarray(a.outs[0], dt).reshape(kshape)
    return x, ax, g, y


def _reduction(fn: Callable[[np.ndarray, tuple[int, ...], np.ndarray, np.ndarray], np.ndarray]) -> GradientRule:
    def rule(a: VJP) -> Grads:
        x, ax, g, y = _reduced(a)
        if not ax:  # noop_with_empty_axes: the identity
            return [a.g.reshape(x.shape), *([None] * (len(a.ins) - 1))]
        gx = np.broadcast_to(fn(x, ax, g, y), x.shape).astype(g.dtype)
        return [gx, *([None] * (len(a.ins) - 1))]

    return rule


def _count(x: np.ndarray, ax: tuple[int, ...]) -> int:
    return math.prod(x.shape[i] for i in ax)


def _reduce_extreme(x: np.ndarray, ax: tuple[int, ...], g: np.ndarray, y: np.ndarray) -> np.ndarray:
    hit = x == y
    return np.where(hit, g / np.maximum(hit.sum(axis=ax, keepdims=True), 1), 0)


def _safe_div(n: np.ndarray, d: np.ndarray) -> np.ndarray:
    return np.where(d == 0, 0, n / np.where(d == 0, 1, d))


_REDUCTIONS: dict[str, Callable[[np.ndarray, tuple[int, ...], np.ndarray, np.ndarray], np.ndarray]] = {
    "ReduceSum": lambda x, ax, g, y: g,
    "ReduceMean": lambda x, ax, g, y: g / g.dtype.type(max(_count(x, ax), 1)),
    "ReduceSumSquare": lambda x, ax, g, y: 2 * x * g,
    "ReduceL1": lambda x, ax, g, y: np.sign(x) * g,
    "ReduceL2": lambda x, ax, g, y: g * _safe_div(x, y),
    "ReduceLogSum": lambda x, ax, g, y: g * np.exp(-y),
    "ReduceLogSumExp": lambda x, ax, g, y: g * np.exp(x - y),
    "ReduceMax": _reduce_extreme,
    "ReduceMin": _reduce_extreme,
}


# ---------------------------------------------------------------------------------------------
# Softmax, LogSoftmax
# ---------------------------------------------------------------------------------------------


def _softmax_rule(log: bool) -> GradientRule:
    def rule(a: VJP) -> Grads:
        g = a.g
        y = np.asarray(a.outs[0], g.dtype)
        shape = y.shape
        if a.since < 13:
            # Versions 1 and 11 coerce the input to 2-D at ``axis`` (default 1) and normalise each row.
            axis = normalize_axis(int(a.attr("axis", 1)), y.ndim) if y.ndim else 0
            rows = math.prod(shape[:axis])
            y, g = y.reshape(rows, -1), g.reshape(rows, -1)
            axis = 1
        else:
            axis = normalize_axis(int(a.attr("axis", -1)), y.ndim)
        if log:
            gx = g - np.exp(y) * g.sum(axis=axis, keepdims=True)
        else:
            gx = y * (g - (g * y).sum(axis=axis, keepdims=True))
        return [gx.reshape(shape)]

    return rule


# ---------------------------------------------------------------------------------------------
# The table, and the checks made when a node is bound
# ---------------------------------------------------------------------------------------------

_SELECTION_OPS = (
    "Transpose", "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND", "Expand", "Tile", "Where",
    "Pad", "DepthToSpace", "SpaceToDepth", "ReverseSequence", "Compress", "Trilu",
)  # fmt: skip

BASIC_RULES: dict[str, GradientRule] = {
    **{op: _unary(fn) for op, fn in _UNARY.items()},
    **{op: _binary(fn) for op, fn in _BINARY.items()},
    **{op: _reduction(fn) for op, fn in _REDUCTIONS.items()},
    **dict.fromkeys(("Reshape", "Flatten", "Squeeze", "Unsqueeze"), _reshaped),
    **dict.fromkeys(_SELECTION_OPS, _selection),
    "Clip": _clip,
    "Sum": _sum,
    "Mean": _sum,
    "Max": _extreme,
    "Min": _extreme,
    "Softmax": _softmax_rule(False),
    "LogSoftmax": _softmax_rule(True),
}
"""Rules by operator name (default domain)."""

# TensorProto element types a Cast may produce on a differentiated path: float, float16, double, bfloat16.
_FLOAT_TARGETS = frozenset({1, 10, 11, 16})


def _check_cast(bn: PlanNode) -> str | None:
    to = bn.kw.get("to")
    if isinstance(to, str):  # Cast-1 names the type
        ok = to.upper() in ("FLOAT", "FLOAT16", "DOUBLE", "BFLOAT16")
    else:
        ok = to in _FLOAT_TARGETS
    return None if ok else f"Cast to element type {to!r} is not differentiable (only float to float)"


CHECKS: dict[str, Callable[[PlanNode], str | None]] = {"Cast": _check_cast}
"""Conditions checked when a node is bound: a reason to refuse it, or None."""
