"""Shape rules (Clause 9): nn operators other than convolutions and pools (``conv_pool.py``) — normalizations,
recurrent networks, attention blocks, resampling, detection, losses and image decoding.

Definitions are those of ONNX 1-2 (``onnx.defs``); the version noted is the since_version where the shape
behaviour changed. Extents are computed only from fixed integers; a dimension variable passes through where
the definition makes the output extent equal to the input extent whatever its value (a scale of exactly 1),
Clause 9.3.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    ShapeT,
    dim_add,
    dim_at,
    dim_div,
    dim_mul,
    norm_axis,
    require_rank,
    same_as_input,
    shape_rule,
    unify,
    unify_all,
    unify_shapes,
)

__all__: list[str] = []


# --- normalizations -------------------------------------------------------------------------------


def _channel_params(ctx: ShapeContext, c: Extent, inputs: Sequence[int], names: Sequence[str]) -> None:
    """Rank-1 parameters the definition gives the shape (C): a fixed length other than C contradicts it."""
    for i, name in zip(inputs, names):
        s = ctx.shape(i) if ctx.present(i) else None
        if s is not None and len(s) == 1:
            unify(ctx, s[0], c, f"the length of {name} and the channel count")


@shape_rule("BatchNormalization")
def _batch_norm(ctx: ShapeContext) -> list[ShapeT | None]:
    # Y is X; running mean/var (and, before 14, saved mean/var) have the shape of the statistics: (C), or
    # before 9 with spatial=0 (C x D1 x ... x Dn), that of the mean and var inputs. From 9 a 1-D X has C = 1.
    x = ctx.shape(0)
    spatial = ctx.since >= 9 or bool(ctx.attr("spatial", 1))
    c = (1 if len(x) == 1 and ctx.since >= 9 else dim_at(x, 1)) if x is not None else None
    stats: list[ShapeT | None] = [ctx.shape(3), ctx.shape(4)]
    if spatial:
        _channel_params(ctx, c, (1, 2, 3, 4), ("scale", "B", "mean", "var"))
        for k, s in enumerate(stats):
            if s is None and x is not None:
                stats[k] = (c,)
            elif s is not None and len(s) == 1:
                stats[k] = (unify(ctx, s[0], c, "statistics and channel count"),)
    return [x, stats[0], stats[1], stats[0], stats[1]]


@shape_rule("InstanceNormalization")
def _instance_norm(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    _channel_params(ctx, dim_at(x, 1), (1, 2), ("scale", "B"))
    return [x]


@shape_rule("GroupNormalization")
def _group_norm(ctx: ShapeContext) -> list[ShapeT | None]:
    # GroupNormalization-18: scale and bias of shape (num_groups); -21: of shape (C). C is a multiple of
    # num_groups in both.
    x = ctx.shape(0)
    c = dim_at(x, 1)
    g = ctx.attr("num_groups", None)
    if isinstance(g, int) and g > 0:
        dim_div(ctx, c, g, "channel count and num_groups")
        _channel_params(ctx, c if ctx.since >= 21 else g, (1, 2), ("scale", "bias"))
    return [x]


@shape_rule("LayerNormalization")
def _layer_norm(ctx: ShapeContext) -> list[ShapeT | None]:
    # Mean and InvStdDev: X's extents before axis, 1 from axis on.
    x = ctx.shape(0)
    if x is None:
        return [None, None, None]
    axis = norm_axis(ctx, int(ctx.attr("axis", -1)), len(x))
    stat = (*x[:axis], *([1] * (len(x) - axis)))
    return [x, stat, stat]


@shape_rule("LpNormalization", "RMSNormalization")
def _normalize_along_axis(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    if x is not None and len(x) > 0:
        norm_axis(ctx, int(ctx.attr("axis", -1)), len(x))
    return [x]


shape_rule("LRN", "MeanVarianceNormalization", "RotaryEmbedding")(same_as_input)


# --- recurrent networks ---------------------------------------------------------------------------

_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


@shape_rule("RNN", "GRU", "LSTM")
def _recurrent(ctx: ShapeContext) -> list[ShapeT | None]:
    """Y (seq, dirs, batch, hidden), Y_h and Y_c (dirs, batch, hidden); with layout=1 (from 14) batch first:
    Y (batch, seq, dirs, hidden), Y_h and Y_c (batch, dirs, hidden)."""
    g = _GATES[ctx.op_type]
    x, w, r, b = ctx.shape(0), ctx.shape(1), ctx.shape(2), ctx.shape(3) if ctx.present(3) else None
    for s, name in ((x, "X"), (w, "W"), (r, "R")):
        require_rank(ctx, s, (3,), name)
    require_rank(ctx, b, (2,), "B")
    layout = int(ctx.attr("layout", 0)) if ctx.since >= 14 else 0
    states = [ctx.shape(i) for i in ((5, 6) if ctx.op_type == "LSTM" else (5,)) if ctx.present(i)]
    dirs: Extent = 2 if ctx.attr("direction", "forward") == "bidirectional" else 1
    dirs = unify_all(ctx, [dirs, dim_at(w, 0), dim_at(r, 0), dim_at(b, 0)], "num_directions")
    hs = ctx.attr("hidden_size", None)
    hidden = unify_all(
        ctx,
        [
            hs if isinstance(hs, int) else None,
            dim_at(r, 2),
            dim_div(ctx, dim_at(r, 1), g, "R.shape[1] and the gate count"),
            dim_div(ctx, dim_at(w, 1), g, "W.shape[1] and the gate count"),
            dim_div(ctx, dim_at(b, 1), 2 * g, "B.shape[1] and twice the gate count"),
        ],
        "hidden_size",
    )
    seq, batch = (dim_at(x, 0), dim_at(x, 1)) if layout == 0 else (dim_at(x, 1), dim_at(x, 0))
    lens = ctx.shape(4) if ctx.present(4) else None
    batch = unify_all(ctx, [batch, dim_at(lens, 0), *(dim_at(s, 1 - layout) for s in states)], "batch size")
    for s in states:
        require_rank(ctx, s, (3,), "initial state")
        unify(ctx, dim_at(s, layout), dirs, "initial state, num_directions")
        unify(ctx, dim_at(s, 2), hidden, "initial state, hidden_size")
    if layout == 0:
        return [(seq, dirs, batch, hidden), (dirs, batch, hidden), (dirs, batch, hidden)]
    return [(batch, seq, dirs, hidden), (batch, dirs, hidden), (batch, dirs, hidden)]


# --- attention ------------------------------------------------------------------------------------


def _heads(ctx: ShapeContext, s: ShapeT | None, heads: Extent, what: str) -> tuple[Extent, Extent, Extent]:
    """(heads, sequence, head size) of a 4-D (B, H, S, D) or 3-D (B, S, H*D) input."""
    if s is None:
        return None, None, None
    if len(s) == 4:
        return s[1], s[2], s[3]
    return heads, s[1], dim_div(ctx, s[2], heads, f"{what} hidden size and its head count")


def _packed(q_heads: Extent, kv_heads: Extent, v_hidden: Extent, v_head: Extent) -> Extent:
    """q_num_heads * v_head_size of a 3-D output; V's own extent when the head counts are equal."""
    if q_heads == kv_heads and q_heads is not None:
        return v_hidden
    return dim_mul(q_heads, v_head)


@shape_rule("Attention")
def _attention(ctx: ShapeContext) -> list[ShapeT | None]:
    """Attention-23/24/25: Y, present_key, present_value, qk_matmul_output.

    total_sequence_length = past_sequence_length + kv_sequence_length; 3-D inputs are (B, S, heads * D) with
    the head counts from q_num_heads / kv_num_heads.
    """
    q, k, v = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    for s, name in ((q, "Q"), (k, "K"), (v, "V")):
        require_rank(ctx, s, (3, 4), name)
    qa, ka = ctx.attr("q_num_heads", None), ctx.attr("kv_num_heads", None)
    hq, sq, dq = _heads(ctx, q, qa if isinstance(qa, int) and qa > 0 else None, "Q")
    hk, skv, dk = _heads(ctx, k, ka if isinstance(ka, int) and ka > 0 else None, "K")
    hv, skv_v, dv = _heads(ctx, v, ka if isinstance(ka, int) and ka > 0 else None, "V")
    batch = unify_all(ctx, [dim_at(q, 0), dim_at(k, 0), dim_at(v, 0)], "batch size of Q, K and V")
    hk = unify(ctx, hk, hv, "head counts of K and V")
    skv = unify(ctx, skv, skv_v, "sequence lengths of K and V")
    unify(ctx, dq, dk, "head sizes of Q and K")
    past_k = ctx.shape(4) if ctx.present(4) else None
    past_v = ctx.shape(5) if ctx.present(5) else None
    total = skv
    if ctx.present(4):
        past = unify(ctx, dim_at(past_k, 2), dim_at(past_v, 2), "past sequence lengths of past_key and past_value")
        total = dim_add(past, skv)
    if q is not None and len(q) == 3:
        y: ShapeT | None = (batch, sq, _packed(hq, hk, dim_at(v, 2) if v is not None and len(v) == 3 else None, dv))
    else:
        y = (batch, hq, sq, dv) if q is not None else None
    return [y, (batch, hk, total, dk), (batch, hk, total, dv), (batch, hq, sq, total)]


@shape_rule("FlexAttention", domain="ai.onnx.preview")
def _flex_attention(ctx: ShapeContext) -> list[ShapeT | None]:
    # Q (B, Hq, L, E), K (B, Hkv, S, E), V (B, Hkv, S, Ev) -> Y (B, Hq, L, Ev).
    q, k, v = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    for s, name in ((q, "Q"), (k, "K"), (v, "V")):
        require_rank(ctx, s, (4,), name)
    batch = unify_all(ctx, [dim_at(q, 0), dim_at(k, 0), dim_at(v, 0)], "batch size of Q, K and V")
    unify(ctx, dim_at(q, 3), dim_at(k, 3), "head sizes of Q and K")
    unify(ctx, dim_at(k, 2), dim_at(v, 2), "sequence lengths of K and V")
    return [(batch, dim_at(q, 1), dim_at(q, 2), dim_at(v, 3))]


@shape_rule("SwiGLU")
def _swiglu(ctx: ShapeContext) -> list[ShapeT | None]:
    # SwiGLU-28: A and B have identical shapes (no broadcasting).
    return [unify_shapes(ctx, ctx.shape(0), ctx.shape(1), "A and B")]


@shape_rule("LinearAttention")
def _linear_attention(ctx: ShapeContext) -> list[ShapeT | None]:
    """LinearAttention-27: query (B, T, Hq*dk), key (B, T, Hkv*dk), value (B, T, Hkv*dv) -> output
    (B, T, Hq*dv), present_state (B, Hkv, dk, dv)."""
    q, k, v = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    for s, name in ((q, "query"), (k, "key"), (v, "value")):
        require_rank(ctx, s, (3,), name)
    qa, ka = ctx.attr("q_num_heads", None), ctx.attr("kv_num_heads", None)
    hq = qa if isinstance(qa, int) and qa > 0 else None
    hk = ka if isinstance(ka, int) and ka > 0 else None
    batch = unify_all(ctx, [dim_at(q, 0), dim_at(k, 0), dim_at(v, 0)], "batch size of query, key and value")
    t = unify_all(ctx, [dim_at(q, 1), dim_at(k, 1), dim_at(v, 1)], "sequence length of query, key and value")
    dk = unify_all(
        ctx,
        [
            dim_div(ctx, dim_at(q, 2), hq, "query hidden size and q_num_heads"),
            dim_div(ctx, dim_at(k, 2), hk, "key hidden size"),
        ],
        "d_k of query and key",
    )
    dv = dim_div(ctx, dim_at(v, 2), hk, "value hidden size and kv_num_heads")
    state: ShapeT = (batch, hk, dk, dv)
    if ctx.present(3):
        state = unify_shapes(ctx, state, ctx.shape(3), "past_state") or state
    return [(batch, t, _packed(hq, hk, dim_at(v, 2), dv)), state]


@shape_rule("CausalConvWithState")
def _causal_conv(ctx: ShapeContext) -> list[ShapeT | None]:
    # CausalConvWithState-27: input (B, C, L), weight (C, 1, k) -> output (B, C, L), present_state (B, C, k - 1).
    x, w = ctx.shape(0), ctx.shape(1)
    require_rank(ctx, x, (3,), "input")
    require_rank(ctx, w, (3,), "weight")
    c = unify(ctx, dim_at(x, 1), dim_at(w, 0), "input channels and weight.shape[0]")
    unify(ctx, dim_at(w, 1), 1, "weight.shape[1]")
    if ctx.present(2):
        c = unify(ctx, c, dim_at(ctx.shape(2), 0), "channels and the length of bias")
    k = dim_at(w, 2)
    state: ShapeT | None = (dim_at(x, 0), c, k - 1 if isinstance(k, int) and k >= 1 else None)
    if ctx.present(3):
        state = unify_shapes(ctx, state, ctx.shape(3), "past_state")
    y = None if x is None else (x[0], c, x[2])
    return [y, state]


# --- resampling -----------------------------------------------------------------------------------


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


@shape_rule("GridSample")
def _grid_sample(ctx: ShapeContext) -> list[ShapeT | None]:
    # X (N, C, D1, ..., Dr), grid (N, D1_out, ..., Dr_out, r) -> (N, C, D1_out, ..., Dr_out); 4-D only in 16.
    x, grid = ctx.shape(0), ctx.shape(1)
    if ctx.since < 20:
        require_rank(ctx, x, (4,), "X")
        require_rank(ctx, grid, (4,), "grid")
    if x is not None and grid is not None and len(x) != len(grid):
        ctx.fail(f"X has rank {len(x)} and grid rank {len(grid)}")
    r = len(x) if x is not None else (len(grid) if grid is not None else None)
    if r is None:
        return [None]
    unify(ctx, dim_at(grid, -1), r - 2, "grid's last extent and the number of spatial axes")
    n = unify(ctx, dim_at(x, 0), dim_at(grid, 0), "batch size of X and grid")
    return [(n, dim_at(x, 1), *(grid[1:-1] if grid is not None else [None] * (r - 2)))]


@shape_rule("AffineGrid")
def _affine_grid(ctx: ShapeContext) -> list[ShapeT | None]:
    # AffineGrid-20: theta (N, 2, 3), size (N, C, H, W) -> (N, H, W, 2); theta (N, 3, 4), size (N, C, D, H, W)
    # -> (N, D, H, W, 3).
    theta = ctx.shape(0)
    require_rank(ctx, theta, (3,), "theta")
    size = ctx.ints(1)
    if size is not None:
        if len(size) not in (4, 5):
            ctx.fail(f"size holds {len(size)} values, the definition requires 4 or 5")
        n = unify(ctx, dim_at(theta, 0), size[0], "theta.shape[0] and size[0]")
        return [(n, *size[2:], len(size) - 2)]
    s = ctx.shape(1)
    m = dim_at(s, 0) if s is not None and len(s) == 1 else None
    if not isinstance(m, int) or m not in (4, 5):
        return [None]
    return [(dim_at(theta, 0), *([None] * (m - 2)), m - 2)]


# --- detection, losses, images --------------------------------------------------------------------


@shape_rule("NonMaxSuppression")
def _nms(ctx: ShapeContext) -> list[ShapeT | None]:
    # selected_indices (num_selected, 3): the count depends on the data.
    return [(None, 3)]


@shape_rule("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss")
def _loss(ctx: ShapeContext) -> list[ShapeT | None]:
    # input/scores (N, C, d1, ..., dk), target/labels (N, d1, ..., dk): reduction none gives target's shape,
    # mean and sum a scalar. SoftmaxCrossEntropyLoss's log_prob has the scores' shape.
    x, t = ctx.shape(0), ctx.shape(1)
    if x is not None and len(x) < 2:
        ctx.fail(f"input must have rank >= 2 (N, C, ...), has rank {len(x)}")
    if x is not None and t is not None:
        t = unify_shapes(ctx, (x[0], *x[2:]), t, "target and input without the class axis")
    if ctx.present(2):
        w = ctx.shape(2)
        require_rank(ctx, w, (1,), "weight")
        unify(ctx, dim_at(w, 0), dim_at(x, 1), "the length of weight and the class count")
    if x is not None and t is None:
        t = (x[0], *x[2:])
    reduction = ctx.attr("reduction", "mean")
    loss = t if reduction == "none" else (() if reduction in ("mean", "sum") else None)
    return [loss, x]


@shape_rule("ImageDecoder")
def _image_decoder(ctx: ShapeContext) -> list[ShapeT | None]:
    # ImageDecoder-20: (H, W, C), C = 3 for RGB and BGR, 1 for Grayscale; H and W depend on the data.
    c = {"RGB": 3, "BGR": 3, "Grayscale": 1}.get(ctx.attr("pixel_format", "RGB"))
    return [None if c is None else (None, None, c)]
