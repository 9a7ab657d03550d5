"""Attention and transformer blocks: Attention, RotaryEmbedding, SwiGLU, LinearAttention, CausalConvWithState.

Every version of the default domain (ONNX 1-2). Attention computes all heads of all batch items with two
batched matmuls; grouped-query attention (GQA/MQA) folds the query heads sharing a key/value head into
the row dimension of one matmul instead of repeating K and V. The masks (``attn_mask``, ``is_causal``,
the sliding window of version 25 and the ``nonpad_kv_seqlen`` padding of version 24) are composed into
one additive bias, broadcast rather than materialised per head (the mask broadcasts multidirectionally,
Clause 6.6.2, to (batch, heads, q_sequence, total_sequence)).

Float16 and bfloat16 compute in float32 and round once at the end (Clause 11.4 permits the wider
accumulation); the result is then within half an ulp of the exact value, where the ONNX 1-3 bfloat16
vectors, made rounding every intermediate step, can be up to about 1.3 ulps away (their harness compares
bfloat16 at rtol 2**-6, Clause 11.5). Invalid inputs raise (Clause 8.6).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels import accel
from onnxcore.kernels._rowwise import softmax_zero_rows
from onnxcore.kernels._util import compute_dtype
from onnxcore.kernels.registry import KernelContext, kernel
from onnxcore.types.elements import ElementType

__all__: list[str] = []

# TensorProto.DataType tags accepted by Attention's softmax_precision: FLOAT, FLOAT16, DOUBLE, BFLOAT16.
_SOFTMAX_PRECISIONS = (1, 10, 11, 16)


def work_dtype(dtype: Any) -> np.dtype[Any]:
    """The dtype a float kernel computes in: float32 for float16 and the narrow floats, else itself."""
    ct = compute_dtype(dtype)
    return np.dtype(np.float32) if ct == np.float16 else ct


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp of a non-positive argument only, so nothing overflows.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)


# ---------------------------------------------------------------------------------------------
# Attention (23, 24, 25)
# ---------------------------------------------------------------------------------------------


def _to_heads(x: np.ndarray, num_heads: int | None, name: str, attr: str) -> np.ndarray:
    """(B, S, H*D) -> (B, H, S, D) for 3-D inputs; 4-D inputs are returned as they are."""
    if x.ndim == 4:
        return x
    if x.ndim != 3:
        raise ShapeError(f"Attention: {name} must have rank 3 or 4, has shape {x.shape}")
    if not num_heads or num_heads <= 0:
        raise EvaluationError(f"Attention: 3-D inputs need a positive {attr} attribute")
    b, s, hidden = x.shape
    if hidden % num_heads:
        raise ShapeError(f"Attention: {name} hidden size {hidden} is not a multiple of {attr}={num_heads}")
    return x.reshape(b, s, num_heads, hidden // num_heads).transpose(0, 2, 1, 3)


def grouped_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` where ``a`` has ``r`` times as many heads as ``b`` (head ``h`` of ``a`` pairs with ``h // r``).

    The ``r`` query heads of a group become extra rows of one matmul with their shared key/value head.
    """
    bsz, ha, m, k = a.shape
    hb = b.shape[1]
    if ha == hb:
        return np.matmul(a, b)
    r = ha // hb
    out = np.matmul(a.reshape(bsz, hb, r * m, k), b)
    return out.reshape(bsz, ha, m, out.shape[-1])


def _attention(
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    attn_mask: np.ndarray | None,
    past_key: np.ndarray | None,
    past_value: np.ndarray | None,
    nonpad_kv_seqlen: np.ndarray | None,
    *,
    version: int,
    is_causal: int,
    kv_num_heads: int | None,
    q_num_heads: int | None,
    qk_matmul_output_mode: int,
    scale: float | None,
    softcap: float,
    softmax_precision: int | None,
    left_window_size: int = -1,
    right_window_size: int = -1,
    want_qk: bool = True,
) -> tuple[np.ndarray, ...]:
    out_dtype = Q.dtype
    if not (Q.ndim == K.ndim == V.ndim) or Q.ndim not in (3, 4):
        raise ShapeError(f"Attention: Q, K, V must all be 3-D or all 4-D, got {Q.shape}, {K.shape}, {V.shape}")
    if version >= 25 and Q.ndim == 4 and (q_num_heads is not None or kv_num_heads is not None):
        raise EvaluationError("Attention: q_num_heads and kv_num_heads must not be given for 4-D inputs")
    if (past_key is None) != (past_value is None):
        raise EvaluationError("Attention: past_key and past_value must be given together")
    if nonpad_kv_seqlen is not None and past_key is not None:
        raise EvaluationError("Attention: nonpad_kv_seqlen cannot be used with past_key/past_value")
    if left_window_size < -1 or right_window_size < -1:
        raise EvaluationError("Attention: window sizes must be -1 or non-negative")
    if qk_matmul_output_mode not in (0, 1, 2, 3):
        raise EvaluationError(f"Attention: qk_matmul_output_mode={qk_matmul_output_mode} is not 0, 1, 2 or 3")
    rank3 = Q.ndim == 3
    q4 = _to_heads(Q, q_num_heads, "Q", "q_num_heads")
    k4 = _to_heads(K, kv_num_heads, "K", "kv_num_heads")
    v4 = _to_heads(V, kv_num_heads, "V", "kv_num_heads")
    batch, hq, sq, head = q4.shape
    hkv = k4.shape[1]
    if k4.shape[0] != batch or v4.shape[0] != batch or v4.shape[1] != hkv or k4.shape[2] != v4.shape[2]:
        raise ShapeError(f"Attention: K {k4.shape} and V {v4.shape} do not match Q {q4.shape}")
    if k4.shape[3] != head:
        raise ShapeError(f"Attention: head size of K ({k4.shape[3]}) differs from Q's ({head})")
    if hkv == 0 or hq % hkv:
        raise ShapeError(f"Attention: q_num_heads {hq} is not a multiple of kv_num_heads {hkv}")

    # KV cache (internal): present = Concat(past, new) on the sequence axis.
    if past_key is not None and past_value is not None:
        if past_key.ndim != 4 or past_value.ndim != 4:
            raise ShapeError("Attention: past_key and past_value must be 4-D")
        if past_key.shape[2] != past_value.shape[2]:
            raise ShapeError(f"Attention: past_key {past_key.shape} and past_value {past_value.shape} differ in length")
        try:
            present_key = np.concatenate((past_key, k4.astype(past_key.dtype, copy=False)), axis=2)
            present_value = np.concatenate((past_value, v4.astype(past_value.dtype, copy=False)), axis=2)
        except ValueError as e:
            raise ShapeError(f"Attention: past_key/past_value do not match K/V: {e}") from None
        past_len = past_key.shape[2]
    else:
        present_key, present_value = k4, v4
        past_len = 0
    total = present_key.shape[2]

    ct = work_dtype(out_dtype)
    if scale is None:
        scale = 1.0 / np.sqrt(head) if head else 1.0
    small = (
        not want_qk
        and softcap <= 0
        and softmax_precision in _OWN_PRECISION.get(ct, ())
        and q4.dtype == ct
        and present_key.dtype == ct
        and present_value.dtype == ct
        and batch * hq * sq * total * (head + present_value.shape[3]) <= _SMALL_ATTENTION
        and accel.enabled()
    )
    if small and _plain_bool_mask(attn_mask, total, nonpad_kv_seqlen, is_causal, left_window_size, right_window_size):
        # A bool mask alone (a decoder step's): read by the loop as it is, without making its bias.
        assert attn_mask is not None
        bias: np.ndarray | None = _as_4d(attn_mask)
        kind = 2
        assert bias is not None
        if not all(a == b or a == 1 for a, b in zip(bias.shape, (batch, hq, sq, total))):
            raise ShapeError(
                f"Attention: attn_mask {attn_mask.shape} does not broadcast to ({batch}, {hq}, {sq}, {total})"
            )
    else:
        bias = _attention_bias(
            attn_mask,
            nonpad_kv_seqlen,
            version=version,
            ct=ct,
            batch=batch,
            hq=hq,
            sq=sq,
            total=total,
            past_len=past_len,
            is_causal=bool(is_causal),
            left=left_window_size,
            right=right_window_size,
        )
        kind = 0 if bias is None else 1
    if small:
        y = _attention_compiled(q4, present_key, present_value, bias, kind, ct.type(scale))
        if y is not None:
            if rank3:
                y = y.transpose(0, 2, 1, 3).reshape(batch, sq, -1)
            return y.astype(out_dtype, copy=False), present_key, present_value
    # Scaling Q alone by `scale` equals scaling Q and K by sqrt(scale) up to rounding.
    if q4.dtype == ct:
        q = q4 * ct.type(scale)
    else:
        q = q4.astype(ct)
        q *= ct.type(scale)
    k = present_key.astype(ct, copy=False)
    v = present_value.astype(ct, copy=False)
    scores = grouped_matmul(q, k.swapaxes(-1, -2))  # (B, Hq, Sq, T), a fresh array worked on in place
    qk_out: np.ndarray | None = None
    if want_qk and qk_matmul_output_mode == 0:
        qk_out = scores.astype(out_dtype)
    if softcap > 0:
        scores = ct.type(softcap) * np.tanh(scores / ct.type(softcap))
    if want_qk and qk_matmul_output_mode == 1:
        qk_out = scores.astype(out_dtype)

    if kind == 2:  # the plain bool mask read by the loop, which gave up: as _attention_bias makes it
        assert bias is not None
        bias = np.where(bias, ct.type(0), ct.type(-np.inf))
    if bias is not None:
        scores += bias
    if want_qk and qk_matmul_output_mode == 2:
        qk_out = scores.astype(out_dtype)

    if softmax_precision is not None and softmax_precision not in _SOFTMAX_PRECISIONS:
        raise EvaluationError(f"Attention: softmax_precision={softmax_precision} is not 1, 10, 11 or 16")
    # Softmax runs in float64 for DOUBLE, else in the compute type; FLOAT16/BFLOAT16 round its input
    # and output to that type (the computation itself stays in float32, Clause 11.4).
    sm_dtype = np.dtype(np.float64) if softmax_precision == 11 else ct
    narrow: Any = ElementType(softmax_precision).np_dtype if softmax_precision in (10, 16) else None
    x = scores.astype(sm_dtype, copy=False)
    if narrow is not None:
        x = x.astype(narrow).astype(np.float32)
    probs, nan_rows = _softmax_inplace(x)
    if narrow is not None:
        probs = probs.astype(narrow).astype(np.float32)
    if bias is not None and nan_rows:
        # A query row whose combined bias is -inf everywhere attends nothing: its weights are 0, not NaN. Such a
        # row's scores are all -inf (the softmax gave zeros already) unless a score was +inf or NaN, which makes
        # the row's sum NaN: only then is the bias looked at.
        dead = np.isneginf(np.max(bias, axis=-1, keepdims=True, initial=-np.inf))
        if dead.any():
            probs = np.where(dead, probs.dtype.type(0), probs)
    y = grouped_matmul(probs.astype(ct, copy=False), v)  # (B, Hq, Sq, Dv)
    if rank3:
        y = y.transpose(0, 2, 1, 3).reshape(batch, sq, -1)
    y = y.astype(out_dtype, copy=False)
    if not want_qk:
        return y, present_key, present_value
    if qk_out is None:
        qk_out = probs.astype(out_dtype)
    return y, present_key, present_value, qk_out


_SMALL_ATTENTION = 1 << 16
"""Multiply-adds (``B * Hq * Sq * T * (D + Dv)``) up to which Attention runs as one compiled loop (a decoder step's
query rows); above, numpy's products by BLAS are faster."""

# The softmax_precision values that name the compute type itself (or none given): the compiled loop's softmax.
_OWN_PRECISION: dict[np.dtype[Any], tuple[int | None, ...]] = {
    np.dtype(np.float32): (None, 1),
    np.dtype(np.float64): (None, 11),
}


def _plain_bool_mask(mask: Any, total: int, nonpad: Any, is_causal: int, left: int, right: int) -> bool:
    """Whether the scores' bias is a bool mask of the full key length (or one broadcast key) alone: no causal rule,
    window or padding."""
    return (
        type(mask) is np.ndarray
        and mask.dtype == np.bool_
        and 1 <= mask.ndim <= 4
        and mask.shape[-1] in (total, 1)
        and nonpad is None
        and not is_causal
        and left < 0
        and right < 0
    )


def _as_4d(a: np.ndarray) -> np.ndarray:
    return a.reshape((1,) * (4 - a.ndim) + a.shape) if a.ndim < 4 else a


def _attention_compiled(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, bias: np.ndarray | None, kind: int, scale: Any
) -> np.ndarray | None:
    """``(B, Hq, Sq, Dv)`` by the accelerator's one loop (``accel.jit_tx().attention_small``; ``kind``: 0 no bias,
    1 a float bias, 2 a bool mask), or None when a score is NaN or +inf (the numpy path then decides those rows)."""
    out = np.empty((*q.shape[:3], v.shape[3]), q.dtype)
    b4 = _NO_BIAS[q.dtype] if bias is None else _as_4d(bias)
    ok = accel.jit_tx().attention_small(q, k, v, b4, kind, scale, out)
    return out if ok else None


_NO_BIAS = {dt: np.zeros((1, 1, 1, 1), dt) for dt in _OWN_PRECISION}


def _softmax_inplace(x: np.ndarray) -> tuple[np.ndarray, bool]:
    """Softmax over the last axis, overwriting ``x``, and whether some row's sum is NaN; a row that is -inf
    everywhere gives zeros (never NaN)."""
    if x.size and x.dtype in (np.float32, np.float64) and x.shape[-1]:
        # The row passes of the accelerator, or numpy with BLAS row sums (kernels/_rowwise.py).
        return softmax_zero_rows(x)
    m = np.max(x, axis=-1, keepdims=True, initial=-np.inf)
    m[np.isneginf(m)] = 0
    with np.errstate(invalid="ignore", over="ignore"):
        np.subtract(x, m, out=x)
        np.exp(x, out=x)
        s = np.sum(x, axis=-1, keepdims=True)
        s[s == 0] = 1
        np.divide(x, s, out=x)
    return x, bool(np.isnan(s).any())


def _attention_bias(
    attn_mask: np.ndarray | None,
    nonpad: np.ndarray | None,
    *,
    version: int,
    ct: np.dtype[Any],
    batch: int,
    hq: int,
    sq: int,
    total: int,
    past_len: int,
    is_causal: bool,
    left: int,
    right: int,
) -> np.ndarray | None:
    """The additive bias (0 where allowed, -inf where not, plus a float mask), broadcastable to (B, H, Sq, T)."""
    bias: np.ndarray | None = None
    if attn_mask is not None:
        m = np.asarray(attn_mask)
        if m.ndim == 0 or m.ndim > 4:
            raise ShapeError(f"Attention: attn_mask must have rank 1 to 4, has shape {m.shape}")
        short = total - m.shape[-1]
        if short > 0 and m.shape[-1] != 1:
            if version < 24:
                raise ShapeError(f"Attention: attn_mask {m.shape} does not broadcast to total sequence length {total}")
            # Version 24+: a shorter last axis is padded with -inf (False) up to total_sequence_length.
            pad = [(0, 0)] * (m.ndim - 1) + [(0, short)]
            m = np.pad(m, pad, constant_values=False if m.dtype == np.bool_ else -np.inf)
        elif short < 0:
            raise ShapeError(f"Attention: attn_mask {m.shape} is longer than total sequence length {total}")
        if m.dtype == np.bool_:
            bias = np.where(m, ct.type(0), ct.type(-np.inf))
        else:
            bias = m.astype(ct)
        target = (batch, hq, sq, total)
        # A 4-D mask (what exporters pass) needs only a look at its extents; np.broadcast_shapes costs 1.5 us.
        fits = bias.ndim == 4 and all(a == b or a == 1 for a, b in zip(bias.shape, target))
        if not fits:
            try:
                fits = np.broadcast_shapes(bias.shape, target) == target
            except ValueError:
                fits = False
        if not fits:
            raise ShapeError(f"Attention: attn_mask {m.shape} does not broadcast to ({batch}, {hq}, {sq}, {total})")

    # Offset of the query block: cached keys before it (internal cache), or per batch item
    # nonpad_kv_seqlen - Sq (external cache), else 0.
    offset: Any = past_len
    if nonpad is not None:
        lens = np.asarray(nonpad).astype(np.int64).reshape(-1)
        if lens.shape != (batch,):
            raise ShapeError(f"Attention: nonpad_kv_seqlen must have shape ({batch},), has {np.shape(nonpad)}")
        offset = (lens - sq).reshape(batch, 1, 1, 1)
    windowed = left >= 0 or right >= 0
    allowed: np.ndarray | None = None
    if is_causal or windowed:
        i = np.arange(sq).reshape(sq, 1)
        j = np.arange(total).reshape(1, total)
        diff = (i + offset) - j  # absolute query position minus key position
        allowed = np.ones(np.shape(diff), dtype=bool)
        if is_causal:
            allowed &= diff >= 0
        if left >= 0:
            allowed &= diff <= left
        if right >= 0:
            allowed &= -diff <= right
    if nonpad is not None:
        lens4 = np.asarray(nonpad).astype(np.int64).reshape(batch, 1, 1, 1)
        pad_ok = np.arange(total).reshape(1, 1, 1, total) < lens4
        allowed = pad_ok if allowed is None else allowed & pad_ok
    if allowed is not None:
        extra = np.where(allowed, ct.type(0), ct.type(-np.inf))
        bias = extra if bias is None else bias + extra
    return bias


def _wants_qk(ctx: KernelContext) -> bool:
    """Whether the node names the fourth output (qk_matmul_output): computing it costs a copy."""
    req = ctx.outputs_requested
    return len(req) > 3 and bool(req[3])


@kernel("Attention", 23, context=True)
def attention_23(
    ctx: KernelContext,
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    attn_mask: np.ndarray | None = None,
    past_key: np.ndarray | None = None,
    past_value: np.ndarray | None = None,
    *,
    is_causal: int = 0,
    kv_num_heads: int | None = None,
    q_num_heads: int | None = None,
    qk_matmul_output_mode: int = 0,
    scale: float | None = None,
    softcap: float = 0.0,
    softmax_precision: int | None = None,
) -> tuple[np.ndarray, ...]:
    """Attention-23: scaled dot-product attention with masks, causal, KV cache, softcap and GQA."""
    return _attention(
        Q,
        K,
        V,
        attn_mask,
        past_key,
        past_value,
        None,
        version=23,
        want_qk=_wants_qk(ctx),
        is_causal=is_causal,
        kv_num_heads=kv_num_heads,
        q_num_heads=q_num_heads,
        qk_matmul_output_mode=qk_matmul_output_mode,
        scale=scale,
        softcap=softcap,
        softmax_precision=softmax_precision,
    )


@kernel("Attention", 24, context=True)
def attention_24(
    ctx: KernelContext,
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    attn_mask: np.ndarray | None = None,
    past_key: np.ndarray | None = None,
    past_value: np.ndarray | None = None,
    nonpad_kv_seqlen: np.ndarray | None = None,
    *,
    is_causal: int = 0,
    kv_num_heads: int | None = None,
    q_num_heads: int | None = None,
    qk_matmul_output_mode: int = 0,
    scale: float | None = None,
    softcap: float = 0.0,
    softmax_precision: int | None = None,
) -> tuple[np.ndarray, ...]:
    """Attention-24: adds ``nonpad_kv_seqlen`` (external KV cache) and masks shorter than the key sequence."""
    return _attention(
        Q,
        K,
        V,
        attn_mask,
        past_key,
        past_value,
        nonpad_kv_seqlen,
        version=24,
        want_qk=_wants_qk(ctx),
        is_causal=is_causal,
        kv_num_heads=kv_num_heads,
        q_num_heads=q_num_heads,
        qk_matmul_output_mode=qk_matmul_output_mode,
        scale=scale,
        softcap=softcap,
        softmax_precision=softmax_precision,
    )


@kernel("Attention", 25, context=True)
def attention_25(
    ctx: KernelContext,
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    attn_mask: np.ndarray | None = None,
    past_key: np.ndarray | None = None,
    past_value: np.ndarray | None = None,
    nonpad_kv_seqlen: np.ndarray | None = None,
    *,
    is_causal: int = 0,
    kv_num_heads: int | None = None,
    q_num_heads: int | None = None,
    qk_matmul_output_mode: int = 0,
    scale: float | None = None,
    softcap: float = 0.0,
    softmax_precision: int | None = None,
    left_window_size: int = -1,
    right_window_size: int = -1,
) -> tuple[np.ndarray, ...]:
    """Attention-25: adds the sliding window (``left_window_size``, ``right_window_size``)."""
    return _attention(
        Q,
        K,
        V,
        attn_mask,
        past_key,
        past_value,
        nonpad_kv_seqlen,
        version=25,
        want_qk=_wants_qk(ctx),
        is_causal=is_causal,
        kv_num_heads=kv_num_heads,
        q_num_heads=q_num_heads,
        qk_matmul_output_mode=qk_matmul_output_mode,
        scale=scale,
        softcap=softcap,
        softmax_precision=softmax_precision,
        left_window_size=left_window_size,
        right_window_size=right_window_size,
    )


# ---------------------------------------------------------------------------------------------
# RotaryEmbedding (23)
# ---------------------------------------------------------------------------------------------


@kernel("RotaryEmbedding", 23)
def rotary_embedding(
    X: np.ndarray,
    cos_cache: np.ndarray,
    sin_cache: np.ndarray,
    position_ids: np.ndarray | None = None,
    *,
    interleaved: int = 0,
    num_heads: int | None = None,
    rotary_embedding_dim: int = 0,
) -> np.ndarray:
    """RotaryEmbedding-23: rotate the first ``rotary_embedding_dim`` features of each head (RoPE)."""
    ct = work_dtype(X.dtype)
    if X.ndim == 4:
        # (B, H, S, D): the caches broadcast as (B, 1, S, half).
        x = X.astype(ct, copy=False)
        head_axis = 1
    elif X.ndim == 3:
        if not num_heads or num_heads <= 0:
            raise EvaluationError("RotaryEmbedding: 3-D input needs a positive num_heads attribute")
        b, s, hidden = X.shape
        if hidden % num_heads:
            raise ShapeError(f"RotaryEmbedding: hidden size {hidden} is not a multiple of num_heads={num_heads}")
        x = X.astype(ct, copy=False).reshape(b, s, num_heads, hidden // num_heads)  # (B, S, H, D)
        head_axis = 2
    else:
        raise ShapeError(f"RotaryEmbedding: input must have rank 3 or 4, has shape {X.shape}")
    head = x.shape[-1]
    rot = rotary_embedding_dim or head
    if rot > head or rot % 2:
        raise EvaluationError(f"RotaryEmbedding: rotary_embedding_dim {rot} must be even and at most {head}")
    half = rot // 2
    batch = x.shape[0]
    seq = x.shape[2] if X.ndim == 4 else x.shape[1]
    if cos_cache.shape != sin_cache.shape:
        # The definition gives both caches one shape; indexing each by its own extent would hide a mismatch.
        raise ShapeError(f"RotaryEmbedding: cos_cache {cos_cache.shape} and sin_cache {sin_cache.shape} differ")
    if position_ids is not None:
        pos = np.asarray(position_ids).astype(np.int64)
        if cos_cache.ndim != 2 or sin_cache.ndim != 2:
            raise ShapeError("RotaryEmbedding: with position_ids the caches must be 2-D")
        if pos.size and (pos.min() < 0 or pos.max() >= cos_cache.shape[0]):
            raise EvaluationError(f"RotaryEmbedding: position_ids out of range [0, {cos_cache.shape[0]})")
        cos = cos_cache[pos]
        sin = sin_cache[pos]
    else:
        if cos_cache.ndim != 3 or sin_cache.ndim != 3:
            raise ShapeError("RotaryEmbedding: without position_ids the caches must be 3-D (B, S, rot/2)")
        cos, sin = cos_cache, sin_cache
    # The definition's shape is (batch, seq, rot/2); its reference multiplies with numpy's broadcasting, and
    # exporters write one row of angles for every batch item (torch's dynamo exporter: (1, seq, rot/2)), which
    # onnxruntime takes too: an extent of 1 on the batch or sequence axis broadcasts, any other must match.
    if cos.shape != (batch, seq, half) and not _broadcasts_to(cos.shape, (batch, seq, half)):
        raise ShapeError(f"RotaryEmbedding: caches give {cos.shape} / {sin.shape}, expected ({batch}, {seq}, {half})")
    if accel.enabled() and x.dtype == cos.dtype == sin.dtype and x.dtype in _ROTARY_COMPILED and x.size:
        # One compiled loop over the heads' rows: the same products and sums as rotary_rotate, in its order.
        x4 = np.ascontiguousarray(x)
        out = np.empty(x4.shape, x4.dtype)
        c3, s3 = np.ascontiguousarray(cos), np.ascontiguousarray(sin)
        accel.jit_tx().rotary_heads(x4, c3, s3, out, 2 if X.ndim == 4 else 1, half, rot, bool(interleaved))
        return out.reshape(X.shape).astype(X.dtype, copy=False)
    # The head axis inserted by a reshape (np.expand_dims costs 3 us, as much as a decoder step's rotation).
    shape = cos.shape[:head_axis] + (1,) + cos.shape[head_axis:]
    cos = cos.astype(ct, copy=False).reshape(shape)
    sin = sin.astype(ct, copy=False).reshape(shape)
    out = rotary_rotate(x, cos, sin, rot, interleaved=bool(interleaved))
    return out.reshape(X.shape).astype(X.dtype, copy=False)


_ROTARY_COMPILED = (np.dtype(np.float32), np.dtype(np.float64))


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether ``shape`` (of ``target``'s rank) broadcasts to ``target`` unidirectionally, the last extent equal."""
    return (
        len(shape) == len(target)
        and shape[-1] == target[-1]
        and all(a == b or a == 1 for a, b in zip(shape[:-1], target[:-1]))
    )


def rotary_rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, rot: int, *, interleaved: bool) -> np.ndarray:
    """RoPE on the last axis of ``x``: its first ``rot`` features rotated by angles whose cos/sin broadcast.

    Pairs are ``(x[i], x[i + rot/2])`` or, ``interleaved``, ``(x[2i], x[2i + 1])``; features from ``rot`` on
    are copied. ``cos`` and ``sin`` broadcast against ``x[..., : rot // 2]``. Also used by the contrib kernels.
    """
    half = rot // 2
    if interleaved:
        x1 = x[..., 0:rot:2]
        x2 = x[..., 1:rot:2]
    else:
        x1 = x[..., :half]
        x2 = x[..., half:rot]
    # Written straight into the output, two temporaries of half the rotated width in all.
    out = np.empty(x.shape, x.dtype)
    if interleaved:
        real, imag = out[..., 0:rot:2], out[..., 1:rot:2]
    else:
        real, imag = out[..., :half], out[..., half:rot]
    tmp = np.multiply(sin, x2)
    np.multiply(cos, x1, out=real)
    real -= tmp
    np.multiply(cos, x2, out=tmp)
    np.multiply(sin, x1, out=imag)
    imag += tmp
    out[..., rot:] = x[..., rot:]
    return out


# ---------------------------------------------------------------------------------------------
# SwiGLU (28)
# ---------------------------------------------------------------------------------------------


@kernel("SwiGLU", 28)
def swiglu(A: np.ndarray, B: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    """SwiGLU-28: ``Y = A * Sigmoid(alpha * A) * B`` (no broadcasting)."""
    if A.shape != B.shape:
        raise ShapeError(f"SwiGLU: A {A.shape} and B {B.shape} must have the same shape")
    ct = work_dtype(A.dtype)
    a = A.astype(ct, copy=False)
    y = a * _sigmoid(ct.type(alpha) * a) * B.astype(ct, copy=False)
    return y.astype(A.dtype, copy=False)


# ---------------------------------------------------------------------------------------------
# LinearAttention (27)
# ---------------------------------------------------------------------------------------------

_UPDATE_RULES = ("linear", "gated", "delta", "gated_delta")


@kernel("LinearAttention", 27)
def linear_attention(
    query: np.ndarray,
    key: np.ndarray,
    value: np.ndarray,
    past_state: np.ndarray | None = None,
    decay: np.ndarray | None = None,
    beta: np.ndarray | None = None,
    *,
    chunk_size: int = 64,
    kv_num_heads: int | None = None,
    q_num_heads: int | None = None,
    scale: float = 0.0,
    update_rule: str = "gated_delta",
) -> tuple[np.ndarray, np.ndarray]:
    """LinearAttention-27: the recurrent linear/gated/delta/gated_delta state update, one step per token.

    The recurrence runs over time (as the definition states it); every step is batched over batch
    items and heads. ``chunk_size`` is a tuning hint without effect on the result.
    """
    del chunk_size
    if update_rule not in _UPDATE_RULES:
        raise EvaluationError(f"LinearAttention: update_rule {update_rule!r} is not one of {_UPDATE_RULES}")
    if not q_num_heads or not kv_num_heads or q_num_heads <= 0 or kv_num_heads <= 0:
        raise EvaluationError("LinearAttention: q_num_heads and kv_num_heads are required and positive")
    if q_num_heads % kv_num_heads:
        raise EvaluationError(f"LinearAttention: q_num_heads {q_num_heads} is not a multiple of {kv_num_heads}")
    gated = update_rule in ("gated", "gated_delta")
    delta = update_rule in ("delta", "gated_delta")
    if gated != (decay is not None):
        raise EvaluationError(f"LinearAttention: update_rule {update_rule!r} {'needs' if gated else 'forbids'} decay")
    if delta != (beta is not None):
        raise EvaluationError(f"LinearAttention: update_rule {update_rule!r} {'needs' if delta else 'forbids'} beta")
    for name, arr in (("query", query), ("key", key), ("value", value)):
        if arr.ndim != 3:
            raise ShapeError(f"LinearAttention: {name} must be 3-D (B, T, H*D), has shape {arr.shape}")
    b, t, qh = query.shape
    if qh % q_num_heads or key.shape[2] % kv_num_heads or value.shape[2] % kv_num_heads:
        raise ShapeError("LinearAttention: packed hidden sizes are not multiples of the head counts")
    dk = qh // q_num_heads
    dv = value.shape[2] // kv_num_heads
    if key.shape != (b, t, kv_num_heads * dk) or value.shape[:2] != (b, t):
        raise ShapeError(f"LinearAttention: key {key.shape} / value {value.shape} do not match query {query.shape}")
    g = q_num_heads // kv_num_heads
    ct = np.dtype(np.float64) if query.dtype == np.float64 else np.dtype(np.float32)
    # (B, T, H*D) -> (T, B, H, D) so each step reads a contiguous slab; query heads grouped by KV head.
    q = query.astype(ct).reshape(b, t, kv_num_heads, g, dk).transpose(1, 0, 2, 3, 4)
    k = key.astype(ct).reshape(b, t, kv_num_heads, dk).transpose(1, 0, 2, 3)
    v = value.astype(ct).reshape(b, t, kv_num_heads, dv).transpose(1, 0, 2, 3)
    dec: np.ndarray | None = None
    if decay is not None:
        if decay.ndim != 3 or decay.shape[:2] != (b, t):
            raise ShapeError(f"LinearAttention: decay must be (B, T, H_kv[*d_k]), has shape {decay.shape}")
        if decay.shape[2] == kv_num_heads:
            dec = np.exp(decay.astype(ct)).reshape(b, t, kv_num_heads, 1)
        elif decay.shape[2] == kv_num_heads * dk:
            dec = np.exp(decay.astype(ct)).reshape(b, t, kv_num_heads, dk)
        else:
            raise ShapeError(f"LinearAttention: decay last axis {decay.shape[2]} must be H_kv or H_kv*d_k")
        dec = dec.transpose(1, 0, 2, 3)[..., None]  # (T, B, H, d_k or 1, 1)
    bet: np.ndarray | None = None
    if beta is not None:
        if beta.ndim != 3 or beta.shape[:2] != (b, t) or beta.shape[2] not in (kv_num_heads, 1):
            raise ShapeError(f"LinearAttention: beta must be (B, T, H_kv) or (B, T, 1), has shape {beta.shape}")
        bet = beta.astype(ct).transpose(1, 0, 2)[..., None]  # (T, B, H or 1, 1)
    if past_state is not None:
        if past_state.shape != (b, kv_num_heads, dk, dv):
            raise ShapeError(f"LinearAttention: past_state {past_state.shape} is not ({b}, {kv_num_heads}, {dk}, {dv})")
        state = past_state.astype(ct)
        state_dtype = past_state.dtype
    else:
        state = np.zeros((b, kv_num_heads, dk, dv), ct)
        state_dtype = query.dtype
    sc = ct.type(scale if scale else 1.0 / np.sqrt(dk))
    out = np.empty((t, b, kv_num_heads, g, dv), ct)
    for i in range(t):
        if dec is not None:
            state = state * dec[i]
        ki = k[i]
        vi = v[i]
        if bet is not None:
            retrieved = np.matmul(ki[..., None, :], state)[..., 0, :]  # S^T k: (B, H, d_v)
            vi = bet[i] * (vi - retrieved)
        state = state + ki[..., :, None] * vi[..., None, :]
        out[i] = np.matmul(q[i], state)  # (B, H, g, d_v)
    out *= sc
    y = out.transpose(1, 0, 2, 3, 4).reshape(b, t, q_num_heads * dv)
    return y.astype(query.dtype), state.astype(state_dtype)


# ---------------------------------------------------------------------------------------------
# CausalConvWithState (27)
# ---------------------------------------------------------------------------------------------


@kernel("CausalConvWithState", 27)
def causal_conv_with_state(
    input: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None = None,
    past_state: np.ndarray | None = None,
    *,
    activation: str = "none",
) -> tuple[np.ndarray, np.ndarray]:
    """CausalConvWithState-27: depthwise causal 1-D convolution carrying the last k-1 positions."""
    if activation not in ("none", "silu", "swish"):
        raise EvaluationError(f"CausalConvWithState: activation {activation!r} is not none, silu or swish")
    if input.ndim != 3 or weight.ndim != 3:
        raise ShapeError(f"CausalConvWithState: input {input.shape} and weight {weight.shape} must be 3-D")
    batch, channels, length = input.shape
    k = weight.shape[2]
    if weight.shape[:2] != (channels, 1) or k < 1:
        raise ShapeError(f"CausalConvWithState: weight must be ({channels}, 1, k), has shape {weight.shape}")
    if past_state is None:
        pad = np.zeros((batch, channels, k - 1), input.dtype)
    else:
        if past_state.shape != (batch, channels, k - 1):
            raise ShapeError(f"CausalConvWithState: past_state must be ({batch}, {channels}, {k - 1})")
        pad = past_state.astype(input.dtype, copy=False)
    padded = np.concatenate((pad, input), axis=2)
    ct = work_dtype(input.dtype)
    p = padded.astype(ct, copy=False)
    w = weight.astype(ct, copy=False)[:, 0, :]
    # One multiply-add per kernel tap, each over every batch item, channel and position.
    acc = p[:, :, 0:length] * w[:, 0:1]
    for j in range(1, k):
        acc += p[:, :, j : j + length] * w[:, j : j + 1]
    if bias is not None:
        if bias.shape != (channels,):
            raise ShapeError(f"CausalConvWithState: bias must be ({channels},), has shape {bias.shape}")
        acc += bias.astype(ct)[:, None]
    if activation != "none":
        acc = acc * _sigmoid(acc)
    present = padded[:, :, length:]
    return acc.astype(input.dtype, copy=False), np.ascontiguousarray(present)
