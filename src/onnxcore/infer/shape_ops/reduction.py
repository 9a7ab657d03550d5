"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.reduction`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from collections.abc import Sequence

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    norm_axis,
    shape_rule,
)
from onnxcore.infer.shape_ops.linalg import _scalar
from onnxcore.infer.shape_ops.tensor import Shapes, _with

__all__: list[str] = []


def _check_axis(ctx: ShapeContext, axis: int | None, x: ShapeT | None) -> None:
    """Fail on an axis outside ``[-r, r-1]`` of an input of known rank ``r``; no axis is inside for a scalar."""
    if x is None:
        return
    if not x:
        ctx.fail(f"{ctx.op_type} takes an input of rank >= 1 (its axis is in [-r, r-1])")
    if axis is not None:
        norm_axis(ctx, axis, len(x))


def _reduced(ctx: ShapeContext, x: ShapeT, axes: Sequence[int], keep: bool) -> ShapeT:
    """``x`` reduced over ``axes``, each in ``[-r, r-1]`` (none is, for a scalar)."""
    red = {norm_axis(ctx, a, len(x), "reduction axis") for a in axes}  # a repeated axis counts once
    return tuple(1 if i in red else d for i, d in enumerate(x) if keep or i not in red)


@shape_rule(
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
    "ReduceProd", "ReduceSum", "ReduceSumSquare",
)  # fmt: skip
def _reduce(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    keep = bool(ctx.attr("keepdims", 1))
    # axes became an input (with noop_with_empty_axes) in ReduceSum-13 and in the others' version 18.
    if ctx.since < (13 if ctx.op_type == "ReduceSum" else 18):
        axes: list[int] | None = list(ctx.attr("axes") or [])
        noop = False
    else:
        noop = bool(ctx.attr("noop_with_empty_axes", 0))
        axes = ctx.ints(1) if ctx.present(1) else []
        if axes is None and ctx.shape(1) == (0,):
            axes = []
    if axes == [] and noop:
        return [x]  # reduction over no axis: the shape is unchanged, whatever keepdims says
    if x is None:
        return [None]
    if axes is None:
        # Axes not known: with keepdims every extent is kept or becomes 1; without, even the rank is open.
        return [tuple(1 if d == 1 else None for d in x)] if keep else [None]
    return [_reduced(ctx, x, axes or range(len(x)), keep)]


@shape_rule("ArgMax", "ArgMin")
def _arg_reduce(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    return [None if x is None else _reduced(ctx, x, [ctx.attr("axis", 0)], bool(ctx.attr("keepdims", 1)))]


@shape_rule("CumSum", "CumProd")
def _cumulative(ctx: ShapeContext) -> list[ShapeT | None]:
    _check_axis(ctx, _scalar(ctx, 1), ctx.shape(0))
    return [ctx.shape(0)]


@shape_rule("Softmax", "LogSoftmax", "Hardmax")
def _softmax(ctx: ShapeContext) -> list[ShapeT | None]:
    _check_axis(ctx, ctx.attr("axis"), ctx.shape(0))
    return [ctx.shape(0)]


@shape_rule("TopK")
def _top_k(ctx: ShapeContext) -> Shapes:
    x = ctx.shape(0)
    if ctx.since < 10:
        k = ctx.attr("k", None)  # TopK-1: an attribute
    else:
        ks = ctx.ints(1)
        if ks is not None and len(ks) != 1:
            ctx.fail(f"K holds {len(ks)} values (one is required)")
        k = None if ks is None else ks[0]
    if x is None:
        return [None, None]
    a = norm_axis(ctx, int(ctx.attr("axis", -1)), len(x))
    if k is not None:
        k = int(k)
        if k < 0:
            ctx.fail(f"K={k} is negative")
        d = x[a]
        if isinstance(d, int) and k > d:
            ctx.fail(f"K={k} exceeds the extent {d} of axis {a}")
    out = _with(x, a, k)
    return [out, out]
