"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.image`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    norm_axis,
    require_rank,
    shape_rule,
)

__all__: list[str] = []


def _floor_scaled(n: int, s: float, span: float = 1.0) -> int | None:
    """``floor(n * span * s)``, or None when single and double precision disagree (a product landing on an
    integer within rounding error: runtimes compute it either way)."""
    f64 = math.floor(n * span * s)
    with np.errstate(all="ignore"):
        f32 = math.floor(float(np.float32(n) * np.float32(span) * np.float32(s)))
    tol = math.floor(n * span * s + 1e-9)
    return f64 if f64 == f32 == tol else None


def _round_scaled(n: int, s: float) -> int | None:
    """``round_int(s * n)`` (halfway up), None where single and double precision disagree."""
    f64 = math.floor(s * n + 0.5)
    with np.errstate(all="ignore"):
        f32 = math.floor(float(np.float32(s) * np.float32(n) + np.float32(0.5)))
    return f64 if f64 == f32 else None


def _opt_value(ctx: ShapeContext, i: int) -> np.ndarray | str | None:
    """Input ``i``: "absent", its known value as a flat array (an empty tensor counts as absent), or None."""
    if not ctx.present(i):
        return "absent"
    v = ctx.value(i)
    if v is not None:
        return "absent" if v.size == 0 else np.asarray(v).reshape(-1)
    s = ctx.shape(i)
    return "absent" if s is not None and len(s) == 1 and s[0] == 0 else None


def _rescale(ctx: ShapeContext, x: ShapeT, axes: list[int], scales: Sequence[float], spans: Sequence[float]) -> ShapeT:
    out = list(x)
    if len(scales) != len(axes):
        ctx.fail(f"{len(scales)} scales for {len(axes)} axes")
    for a, s, span in zip(axes, scales, spans):
        d = x[a]
        if isinstance(d, int):
            out[a] = _floor_scaled(d, float(s), span) if s > 0 else None
        else:
            out[a] = d if s == 1.0 and span == 1.0 else None
    return tuple(out)


@shape_rule("Resize", "Upsample")
def _resize(ctx: ShapeContext) -> list[ShapeT | None]:
    """Resize-10/11/13/18/19 and Upsample-1/7/9/10: ``floor(in * scale)`` per axis, or the ``sizes`` input.

    From Resize-11 the scaled extent is ``floor(in * (roi_end - roi_start) * scale)``; the roi takes effect
    with coordinate_transformation_mode tf_crop_and_resize only. From 18, ``axes`` selects the axes the
    scales/sizes refer to and keep_aspect_ratio_policy reinterprets ``sizes``.
    """
    x = ctx.shape(0)
    if x is None:
        return [None]
    r = len(x)
    op, v = ctx.op_type, ctx.since
    if op == "Upsample":
        if v == 1:
            require_rank(ctx, x, (4,), "X")
            hs, ws = ctx.attr("height_scale", None), ctx.attr("width_scale", None)
            if hs is None or ws is None:
                return [(x[0], x[1], None, None)]
            return [_rescale(ctx, x, [2, 3], [hs, ws], [1.0, 1.0])]
        sc = ctx.attr("scales", None) if v == 7 else _opt_value(ctx, 1)
        if not isinstance(sc, (list, np.ndarray)):
            return [(None,) * r]
        return [_rescale(ctx, x, list(range(r)), [float(s) for s in sc], [1.0] * r)]
    axes = list(range(r))
    if v >= 18 and ctx.attr("axes", None) is not None:
        axes = [norm_axis(ctx, int(a), r, "axes") for a in ctx.attr("axes")]
    unknown = tuple(None if i in axes else d for i, d in enumerate(x))
    scales = _opt_value(ctx, 1 if v == 10 else 2)
    sizes = "absent" if v == 10 else _opt_value(ctx, 3)
    if isinstance(sizes, np.ndarray) and isinstance(scales, str):
        return [_sized(ctx, x, axes, [int(s) for s in sizes])]
    if not isinstance(scales, np.ndarray) or not isinstance(sizes, str):
        return [unknown]
    spans = [1.0] * len(axes)
    if v >= 11 and ctx.attr("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize":
        roi = _opt_value(ctx, 1)
        if not isinstance(roi, np.ndarray) or roi.size != 2 * len(axes):
            return [unknown]
        spans = [float(roi[len(axes) + i]) - float(roi[i]) for i in range(len(axes))]
    return [_rescale(ctx, x, axes, [float(s) for s in scales], spans)]


def _sized(ctx: ShapeContext, x: ShapeT, axes: list[int], sizes: list[int]) -> ShapeT:
    """Resize with the ``sizes`` input: the sizes themselves, or (from 18) scaled to keep the aspect ratio."""
    if len(sizes) != len(axes):
        ctx.fail(f"{len(sizes)} sizes for {len(axes)} axes")
    out = list(x)
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch") if ctx.since >= 18 else "stretch"
    if policy == "stretch":
        for a, s in zip(axes, sizes):
            out[a] = s if s >= 0 else None
        return tuple(out)
    ins = [x[a] for a in axes]
    if policy not in ("not_larger", "not_smaller") or not all(isinstance(d, int) and d > 0 for d in ins):
        return tuple(None if i in axes else d for i, d in enumerate(x))
    ratios = [s / int(d) for s, d in zip(sizes, ins) if isinstance(d, int)]
    scale = min(ratios) if policy == "not_larger" else max(ratios)
    for a, d in zip(axes, ins):
        out[a] = _round_scaled(int(d), scale) if isinstance(d, int) else None
    return tuple(out)
