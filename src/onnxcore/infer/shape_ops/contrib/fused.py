"""Shape rules (Clause 9) for onnxruntime's fused ``com.microsoft`` operators (since_version 1): FusedConv,
NhwcConv and NhwcFusedConv, FusedGemm and FusedMatMul, the family of :mod:`onnxcore.kernels.contrib.fused`."""

from __future__ import annotations

from onnxcore.infer.shape_core import ShapeContext, ShapeT, shape_rule
from onnxcore.infer.shape_ops.contrib.quantized import channels_last, permuted
from onnxcore.infer.shape_ops.linalg import _matmul, gemm_shapes
from onnxcore.infer.shape_ops.windows import _conv_out

__all__: list[str] = []

_MS = "com.microsoft"


@shape_rule("FusedConv", domain=_MS)
def _fused_conv(ctx: ShapeContext) -> list[ShapeT | None]:
    return [_conv_out(ctx, 0, 1, 2)]


@shape_rule("NhwcConv", "NhwcFusedConv", domain=_MS)
def _nhwc_conv(ctx: ShapeContext) -> list[ShapeT | None]:
    return [channels_last(_conv_out(permuted(ctx, (0, 1)), 0, 1, 2))]


@shape_rule("FusedGemm", domain=_MS)
def _fused_gemm(ctx: ShapeContext) -> list[ShapeT | None]:
    return gemm_shapes(ctx, old_broadcast=False)  # C broadcasts to (M, N) as in Gemm-7 and later


def _batch_trans(s: ShapeT | None, batch: bool, trans: bool) -> ShapeT | None:
    if s is None:
        return None
    if batch and len(s) >= 3:
        s = (*s[1:-1], s[0], s[-1])
    if trans and len(s) >= 2:
        s = (*s[:-2], s[-1], s[-2])
    return s


@shape_rule("FusedMatMul", domain=_MS)
def _fused_matmul(ctx: ShapeContext) -> list[ShapeT | None]:
    a = _batch_trans(ctx.shape(0), bool(ctx.attr("transBatchA", 0)), bool(ctx.attr("transA", 0)))
    b = _batch_trans(ctx.shape(1), bool(ctx.attr("transBatchB", 0)), bool(ctx.attr("transB", 0)))
    return [_matmul(ctx, a, b)]
