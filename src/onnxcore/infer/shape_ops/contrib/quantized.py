"""Shape rules (Clause 9) for onnxruntime's quantized ``com.microsoft`` operators (since_version 1): the shapes the
kernels of :mod:`onnxcore.kernels.contrib.quantized` produce.

Channels-last variants (``channels_last`` = 1, the Nhwc* operators) are the channels-first rule on the
permuted shapes.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    broadcast,
    norm_axis,
    same_as_input,
    shape_rule,
    unify,
)
from onnxcore.infer.shape_ops.linalg import _matmul
from onnxcore.infer.shape_ops.windows import _conv_out, _per_axis, _spatial_out

__all__: list[str] = []

_MS = "com.microsoft"


def channels_first(s: ShapeT | None) -> ShapeT | None:
    """(N, D..., C) -> (N, C, D...)."""
    return None if s is None or len(s) < 3 else (s[0], s[-1], *s[1:-1])


def channels_last(s: ShapeT | None) -> ShapeT | None:
    """(N, C, D...) -> (N, D..., C)."""
    return None if s is None or len(s) < 3 else (s[0], *s[2:], s[1])


def permuted(ctx: ShapeContext, which: tuple[int, ...]) -> ShapeContext:
    """The node as a channels-first rule sees it: inputs ``which`` moved from channels-last."""
    shapes = [channels_first(ctx.shape(i)) if i in which else ctx.shape(i) for i in range(ctx.n_inputs)]
    values = [ctx.value(i) for i in range(ctx.n_inputs)]
    return ShapeContext(ctx.node, ctx.since, shapes, values, ctx._attrs, ctx._defaults)


@shape_rule("QLinearAdd", "QLinearMul", domain=_MS)
def _qlinear_binary(ctx: ShapeContext) -> list[ShapeT | None]:
    return [broadcast(ctx, [ctx.shape(0), ctx.shape(3)])]


@shape_rule("QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax", "QuantizeLinear", "DequantizeLinear", domain=_MS)
def _same(ctx: ShapeContext) -> list[ShapeT | None]:
    return same_as_input(ctx)


@shape_rule("QLinearConcat", domain=_MS)
def _qlinear_concat(ctx: ShapeContext) -> list[ShapeT | None]:
    shapes = [ctx.shape(i) for i in range(2, ctx.n_inputs, 3)]
    if not shapes or any(s is None for s in shapes):
        return [None]
    rank = len(shapes[0])  # type: ignore[arg-type]
    ax = norm_axis(ctx, int(ctx.attr("axis")), rank)
    out = list(shapes[0])  # type: ignore[arg-type]
    total: int | None = 0
    for s in shapes:
        assert s is not None
        if len(s) != rank:
            ctx.fail(f"QLinearConcat inputs have ranks {rank} and {len(s)}")
        for i in range(rank):
            if i != ax:
                out[i] = unify(ctx, out[i], s[i], f"QLinearConcat axis {i}")
        extent = s[ax]
        total = total + extent if isinstance(total, int) and isinstance(extent, int) else None
    out[ax] = total
    return [tuple(out)]


@shape_rule("QLinearGlobalAveragePool", domain=_MS)
def _qlinear_global_pool(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    if x is None:
        return [None]
    if len(x) < 3:
        ctx.fail(f"X must have rank >= 3, has rank {len(x)}")
    if ctx.attr("channels_last", 0):
        return [(x[0], *([1] * (len(x) - 2)), x[-1])]
    return [(x[0], x[1], *([1] * (len(x) - 2)))]


@shape_rule("QLinearAveragePool", domain=_MS)
def _qlinear_average_pool(ctx: ShapeContext) -> list[ShapeT | None]:
    last = bool(ctx.attr("channels_last", 0))
    x = channels_first(ctx.shape(0)) if last else ctx.shape(0)
    if x is None:
        return [None]
    if len(x) < 3:
        ctx.fail(f"X must have rank >= 3, has rank {len(x)}")
    nd = len(x) - 2
    ks = _per_axis(ctx, "kernel_shape", nd, 0)
    kernel = list(ks) if ks is not None else [None] * nd
    spatial = _spatial_out(ctx, x, kernel, dilations=False, ceil_mode=bool(ctx.attr("ceil_mode", 0)), drop_tail=True)
    y = (x[0], x[1], *spatial)
    return [channels_last(y) if last else y]


@shape_rule("QLinearConv", domain=_MS)
def _qlinear_conv(ctx: ShapeContext) -> list[ShapeT | None]:
    if ctx.attr("channels_last", 0):
        return [channels_last(_conv_out(permuted(ctx, (0,)), 0, 3, 8))]
    return [_conv_out(ctx, 0, 3, 8)]


@shape_rule("DynamicQuantizeMatMul", "MatMulIntegerToFloat", domain=_MS)
def _int_matmul(ctx: ShapeContext) -> list[ShapeT | None]:
    return [_matmul(ctx, ctx.shape(0), ctx.shape(1))]


@shape_rule("QGemm", domain=_MS)
def _qgemm(ctx: ShapeContext) -> list[ShapeT | None]:
    a, b = ctx.shape(0), ctx.shape(3)
    for name, s in (("A", a), ("B", b)):
        if s is not None and len(s) != 2:
            ctx.fail(f"QGemm {name} must have rank 2, got rank {len(s)}")
    m, ka = (None, None) if a is None else (a[::-1] if ctx.attr("transA", 0) else a)
    kb, n = (None, None) if b is None else (b[::-1] if ctx.attr("transB", 0) else b)
    unify(ctx, ka, kb, "QGemm inner extent K of A and B")
    return [(m, n)]
