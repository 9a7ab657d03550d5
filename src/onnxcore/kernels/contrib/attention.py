"""onnxruntime's ``com.microsoft`` attention family: Attention, MultiHeadAttention and RotaryEmbedding.

GroupQueryAttention is in ``gqa.py``. Each kernel computes every head of every batch item with two batched
matmuls; masks are composed into one additive bias broadcast over the heads. Float16 and bfloat16 compute in
float32 and round once at the end.

onnxruntime's ContribOperators definitions leave some behaviour open; taken from onnxruntime 1.31 (CPU) as the
fact, and tested against it:

* A key masked by ``mask_index`` / ``key_padding_mask`` gets ``mask_filter_value`` (default -10000) *added* to
  its score, not -inf: a query whose keys are all masked attends to them uniformly, as onnxruntime's does.
  A key hidden by ``unidirectional`` gets the lowest float instead (it replaces the mask value).
* ``unidirectional`` hides key ``j`` from query ``i`` when ``j > past + i``, on every query row but the
  last, which sees every key: the same as causal attention in self attention, and onnxruntime's result in
  MultiHeadAttention's cross attention (more keys than queries).
* ``mask_index`` forms: (B) key lengths (right padding), (2B) end positions then start positions (left
  padding), (B, T) and (B, S, T) raw 0/1 masks (nonzero keeps a key). The (B, 1, M, M) form is refused,
  as onnxruntime's CPU kernel refuses it.
* ``attention_bias`` is added after the mask. ``do_rotary`` on Attention is refused as onnxruntime's CPU
  kernel refuses it (its message says to use MultiHeadAttention with RotaryEmbedding).
* MultiHeadAttention's packed QKV (B, S, N, 3, H) and packed KV (B, L, N, 2, H), which onnxruntime's CPU
  kernel refuses, are read as the definition states (no bias with them) and tested against the same
  attention on the separate Q, K, V.
* MultiHeadAttention's ``past_sequence_length`` (past and present sharing one buffer): the first
  ``past_sequence_length`` rows of past_key/past_value are the past; present is the buffer with the new rows
  written after them, its other rows kept (onnxruntime's CPU kernel).
* ``mask_index``/``key_padding_mask`` of (3B + 2) values: the first B are key lengths (onnxruntime's CPU).
  ``key_padding_mask`` has no (2B) form (refused, as by onnxruntime); (B, L) with a past is refused too.
* Attention's present with a V hidden size other than Q's and K's (``qkv_hidden_sizes``) is refused: K and V
  do not stack into one tensor (onnxruntime returns K's buffer read in V's shape).
* MultiHeadAttention's fourth output ``qk`` is refused: onnxruntime 1.31 cannot run a node that names it.
* RotaryEmbedding's ``scale`` and ``is_packed_batching`` change nothing, as in onnxruntime's CPU kernel.
* MultiHeadAttention with key/value in BNSH (cross attention reusing projected keys) ignores the key and
  value parts of ``bias``, uses K and V as they are, and returns them as present_key/present_value.

Positions taken where onnxruntime's CPU kernel gives no answer: Attention without ``bias`` projects with no
bias (onnxruntime 1.31 crashes: a segmentation fault); Attention with both ``past`` and ``attention_bias`` adds the bias
(onnxruntime refuses the pair, the definition does not); Attention's ``past_present_share_buffer`` is refused
(onnxruntime's CPU kernel refuses every ``past_sequence_length`` it is given).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels.attention import rotary_rotate, work_dtype
from onnxcore.kernels.registry import KernelContext, kernel

__all__: list[str] = []

_DOMAIN = "com.microsoft"
_MASK_FILTER = -10000.0


def split_heads(x: np.ndarray, num_heads: int, op: str, name: str) -> np.ndarray:
    """(B, S, N*H) -> (B, N, S, H)."""
    if x.ndim != 3:
        raise ShapeError(f"{op}: {name} must have rank 3 (batch, sequence, hidden), has shape {x.shape}")
    b, s, hidden = x.shape
    if num_heads <= 0 or hidden % num_heads:
        raise ShapeError(f"{op}: {name} hidden size {hidden} is not a multiple of num_heads={num_heads}")
    return x.reshape(b, s, num_heads, hidden // num_heads).transpose(0, 2, 1, 3)


def merge_heads(y: np.ndarray) -> np.ndarray:
    """(B, N, S, H) -> (B, S, N*H)."""
    b, n, s, h = y.shape
    return y.transpose(0, 2, 1, 3).reshape(b, s, n * h)


def softmax_rows(x: np.ndarray, sink: np.ndarray | None = None) -> np.ndarray:
    """Softmax over the last axis, in place; ``sink`` (broadcast to the rows) is an extra logit in the denominator.

    A row that is -inf everywhere (and has no sink) gives zeros, never NaN.
    """
    m = np.max(x, axis=-1, keepdims=True, initial=-np.inf)
    if sink is not None:
        m = np.maximum(m, sink)
    m[np.isneginf(m)] = 0
    with np.errstate(invalid="ignore", over="ignore"):
        np.subtract(x, m, out=x)
        np.exp(x, out=x)
        s = np.sum(x, axis=-1, keepdims=True)
        if sink is not None:
            s = s + np.exp(sink - m)
        s[s == 0] = 1
        np.divide(x, s, out=x)
    return x


def causal_allowed(sq: int, total: int, offset: Any) -> np.ndarray:
    """(…, Sq, T) booleans: key ``j`` visible to query ``i`` when ``j <= i + offset`` (offset broadcasts)."""
    i = np.arange(sq).reshape(sq, 1)
    j = np.arange(total).reshape(1, total)
    return j <= i + offset


def _mask_bias(
    mask: np.ndarray | None,
    *,
    op: str,
    ct: np.dtype[Any],
    batch: int,
    sq: int,
    total: int,
    past_len: int,
    causal: bool,
    filter_value: float,
    start_positions: bool = True,
) -> np.ndarray | None:
    """The additive mask of Attention/MultiHeadAttention, shaped (B, 1, Sq, T) or (1, 1, Sq, T), or None."""
    bias: np.ndarray | None = None
    if mask is not None:
        m = np.asarray(mask).astype(np.int64, copy=False)
        keys = np.arange(total)
        if m.ndim == 1 and m.shape[0] in (batch, 3 * batch + 2):
            masked = keys[None, :] >= m[:batch, None]
            masked = masked[:, None, :]
        elif m.ndim == 1 and m.shape[0] == 2 * batch and start_positions:
            end, start = m[:batch], np.minimum(m[batch:], total)
            masked = (keys[None, :] >= end[:, None]) | (keys[None, :] < start[:, None])
            masked = masked[:, None, :]
        elif m.ndim == 2 and m.shape == (batch, total):
            masked = (m <= 0)[:, None, :]
        elif m.ndim == 3 and m.shape == (batch, sq, total):
            masked = m <= 0
        else:
            raise ShapeError(
                f"{op}: mask of shape {m.shape} is none of ({batch},), "
                + (f"({2 * batch},), " if start_positions else "")
                + f"({3 * batch + 2},), "
                f"({batch}, {total}) or ({batch}, {sq}, {total}) (batch, sequence {sq}, total sequence {total})"
            )
        bias = np.where(masked, ct.type(filter_value), ct.type(0))
    if causal:
        hidden = ~causal_allowed(sq, total, past_len)
        if sq:
            hidden[-1] = False  # onnxruntime leaves the last query row unmasked (it matters when L > S)
        low = ct.type(np.finfo(ct).min)
        bias = np.where(hidden, low, ct.type(0))[None] if bias is None else np.where(hidden, low, bias)
    return None if bias is None else bias[:, None]


def _check_bias_shape(attention_bias: np.ndarray, op: str, batch: int, heads: int, sq: int, total: int) -> None:
    ab = attention_bias.shape
    if len(ab) != 4 or ab[0] not in (1, batch) or ab[1] not in (1, heads) or ab[2:] != (sq, total):
        raise ShapeError(f"{op}: attention_bias has shape {ab}, expected ({batch} or 1, {heads} or 1, {sq}, {total})")


def _sdpa(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    bias: np.ndarray | None,
    attention_bias: np.ndarray | None,
    *,
    scale: float,
) -> np.ndarray:
    """softmax(scale * q k' + bias + attention_bias) v over (B, N, S, H) arrays in the compute type."""
    scores = np.matmul(q * q.dtype.type(scale), k.swapaxes(-1, -2))
    if bias is not None:
        scores += bias
    if attention_bias is not None:
        scores += attention_bias.astype(scores.dtype, copy=False)
    return np.matmul(softmax_rows(scores), v)


# ---------------------------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------------------------


@kernel("Attention", 1, domain=_DOMAIN, context=True)
def attention(
    ctx: KernelContext,
    input: np.ndarray,
    weights: np.ndarray,
    bias: np.ndarray | None = None,
    mask_index: np.ndarray | None = None,
    past: np.ndarray | None = None,
    attention_bias: np.ndarray | None = None,
    past_sequence_length: np.ndarray | None = None,
    *,
    num_heads: int,
    do_rotary: int = 0,
    mask_filter_value: float = _MASK_FILTER,
    past_present_share_buffer: int = 0,
    qkv_hidden_sizes: list[int] | None = None,
    rotary_embedding_dim: int = 0,
    scale: float = 0.0,
    unidirectional: int = 0,
) -> tuple[np.ndarray, ...]:
    """com.microsoft Attention-1: self attention with the Q, K, V projections packed in one weight.

    Returns ``(output, present)``; present is (2, B, N, past + S, H).
    """
    op = "com.microsoft::Attention"
    if do_rotary:
        raise EvaluationError(f"{op}: do_rotary is not supported (as onnxruntime's CPU kernel: use RotaryEmbedding)")
    if past_present_share_buffer or past_sequence_length is not None:
        raise EvaluationError(f"{op}: past_present_share_buffer / past_sequence_length are not supported")
    if input.ndim != 3 or weights.ndim != 2 or weights.shape[0] != input.shape[2]:
        raise ShapeError(f"{op}: input {input.shape} and weights {weights.shape} do not match")
    total_width = weights.shape[1]
    if qkv_hidden_sizes:
        sizes = [int(d) for d in qkv_hidden_sizes]
        if len(sizes) != 3 or sum(sizes) != total_width or sizes[0] != sizes[1]:
            raise ShapeError(f"{op}: qkv_hidden_sizes {sizes} do not fit weights {weights.shape}")
    else:
        if total_width % 3:
            raise ShapeError(f"{op}: weights width {total_width} is not 3 * hidden_size")
        sizes = [total_width // 3] * 3
    if any(d % num_heads for d in sizes):
        raise ShapeError(f"{op}: hidden sizes {sizes} are not multiples of num_heads={num_heads}")
    if bias is not None and bias.shape != (total_width,):
        raise ShapeError(f"{op}: bias has shape {bias.shape}, expected ({total_width},)")
    ct = work_dtype(input.dtype)
    qkv = np.matmul(input.astype(ct, copy=False), weights.astype(ct, copy=False))
    if bias is not None:
        qkv += bias.astype(ct, copy=False)
    d0, d1 = sizes[0], sizes[0] + sizes[1]
    q = split_heads(qkv[..., :d0], num_heads, op, "Q")
    k = split_heads(qkv[..., d0:d1], num_heads, op, "K")
    v = split_heads(qkv[..., d1:], num_heads, op, "V")
    batch, _, sq, head = q.shape
    if past is not None:
        if past.ndim != 5 or past.shape[0] != 2 or past.shape[1:3] != (batch, num_heads) or past.shape[4] != head:
            raise ShapeError(f"{op}: past has shape {past.shape}, expected (2, {batch}, {num_heads}, P, {head})")
        if sizes[2] != sizes[0]:
            raise ShapeError(f"{op}: with past, Q, K and V must have one hidden size, have {sizes}")
        pc = past.astype(ct, copy=False)
        k = np.concatenate((pc[0], k), axis=2)
        v = np.concatenate((pc[1], v), axis=2)
    past_len = 0 if past is None else past.shape[3]
    total = k.shape[2]
    if attention_bias is not None:
        _check_bias_shape(attention_bias, op, batch, num_heads, sq, total)
    mbias = _mask_bias(
        mask_index,
        op=op,
        ct=ct,
        batch=batch,
        sq=sq,
        total=total,
        past_len=past_len,
        causal=bool(unidirectional),
        filter_value=mask_filter_value,
    )
    s = scale if scale else 1.0 / float(np.sqrt(head))
    y = merge_heads(_sdpa(q, k, v, mbias, attention_bias, scale=s))
    if sizes[2] != sizes[0]:
        if len(ctx.outputs_requested) > 1 and ctx.outputs_requested[1]:
            # K and V of different head sizes do not stack into one (2, B, N, T, H) present.
            raise EvaluationError(f"{op}: present needs Q, K and V of one hidden size, qkv_hidden_sizes are {sizes}")
        return (y.astype(input.dtype, copy=False),)
    return y.astype(input.dtype, copy=False), np.stack((k, v)).astype(input.dtype, copy=False)


# ---------------------------------------------------------------------------------------------
# MultiHeadAttention
# ---------------------------------------------------------------------------------------------


def _unpack(
    query: np.ndarray, key: np.ndarray | None, value: np.ndarray | None, bias: np.ndarray | None, n: int, op: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Packed QKV (B, S, N, 3, H) or packed KV (B, L, N, 2, H) as separate (B, S, N*H) query, key and value."""
    if bias is not None:
        raise EvaluationError(f"{op}: bias is not defined with packed QKV / packed KV inputs")
    if query.ndim == 5:
        if key is not None or value is not None:
            raise EvaluationError(f"{op}: packed QKV (5-D query) takes no key or value")
        if query.shape[2:4] != (n, 3):
            raise ShapeError(f"{op}: packed QKV has shape {query.shape}, expected (B, S, {n}, 3, H)")
        b, s, _, _, h = query.shape
        parts = [query[:, :, :, i].reshape(b, s, n * h) for i in range(3)]
        return parts[0], parts[1], parts[2]
    assert key is not None
    if value is not None or key.shape[2:4] != (n, 2):
        raise ShapeError(f"{op}: packed KV has shape {key.shape} (expected (B, L, {n}, 2, H)) and takes no value")
    b, s, _, _, h = key.shape
    return query, key[:, :, :, 0].reshape(b, s, n * h), key[:, :, :, 1].reshape(b, s, n * h)


@kernel("MultiHeadAttention", 1, domain=_DOMAIN, context=True)
def multi_head_attention(
    ctx: KernelContext,
    query: np.ndarray,
    key: np.ndarray | None = None,
    value: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    key_padding_mask: np.ndarray | None = None,
    attention_bias: np.ndarray | None = None,
    past_key: np.ndarray | None = None,
    past_value: np.ndarray | None = None,
    past_sequence_length: np.ndarray | None = None,
    cache_indirection: np.ndarray | None = None,
    *,
    num_heads: int,
    mask_filter_value: float = _MASK_FILTER,
    scale: float = 0.0,
    unidirectional: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """com.microsoft MultiHeadAttention-1: self or cross attention on projected Q, K, V (plus their bias).

    Returns ``(output, present_key, present_value)``, the presents (B, N, past + L, H).
    """
    op = "com.microsoft::MultiHeadAttention"
    if len(ctx.outputs_requested) > 3 and ctx.outputs_requested[3]:
        # onnxruntime 1.31 cannot run a node that names it (its type inference leaves QK unbound): no reference.
        raise EvaluationError(f"{op}: the qk output is not supported")
    if query.ndim == 5 or (key is not None and key.ndim == 5):
        query, key, value = _unpack(query, key, value, bias, num_heads, op)
    if key is None or value is None or query.ndim != 3:
        raise EvaluationError(f"{op}: query must be (B, S, D) with key and value, or packed QKV (B, S, N, 3, H)")
    if cache_indirection is not None:
        raise EvaluationError(f"{op}: cache_indirection (beam search) is not supported")
    if past_sequence_length is not None and past_key is None:
        raise EvaluationError(f"{op}: past_sequence_length needs past_key/past_value (a shared buffer)")
    if (past_key is None) != (past_value is None):
        raise EvaluationError(f"{op}: past_key and past_value must be given together")
    ct = work_dtype(query.dtype)
    batch, sq, hidden = query.shape
    buffers: tuple[np.ndarray, np.ndarray] | None = None
    qc = query.astype(ct, copy=False)
    kc = key.astype(ct, copy=False)
    vc = value.astype(ct, copy=False)
    if key.ndim == 4 and value.ndim == 4:
        # Cross attention on keys/values already in (B, N, L, H): used as they are, bias on Q only.
        if past_key is not None:
            raise EvaluationError(f"{op}: past_key/past_value cannot be combined with key/value in BNSH")
        if key.shape[:2] != (batch, num_heads) or value.shape[:3] != key.shape[:3]:
            raise ShapeError(f"{op}: key {key.shape} / value {value.shape} do not match ({batch}, {num_heads}, L, H)")
        if bias is not None:
            qc = qc + bias[:hidden].astype(ct, copy=False)
        q = split_heads(qc, num_heads, op, "query")
        k, v = kc, vc
    elif key.ndim == 3 and value.ndim == 3:
        if key.shape[:2] != value.shape[:2] or key.shape[0] != batch or key.shape[2] != hidden:
            raise ShapeError(f"{op}: query {query.shape}, key {key.shape} and value {value.shape} do not match")
        if bias is not None:
            if bias.shape != (2 * hidden + value.shape[2],):
                raise ShapeError(f"{op}: bias has shape {bias.shape}, expected ({2 * hidden + value.shape[2]},)")
            bc = bias.astype(ct, copy=False)
            qc, kc, vc = qc + bc[:hidden], kc + bc[hidden : 2 * hidden], vc + bc[2 * hidden :]
        q = split_heads(qc, num_heads, op, "query")
        k = split_heads(kc, num_heads, op, "key")
        v = split_heads(vc, num_heads, op, "value")
        if past_key is not None and past_value is not None:
            if past_key.shape[:2] != (batch, num_heads) or past_key.shape[3] != k.shape[3]:
                raise ShapeError(f"{op}: past_key {past_key.shape} does not match key heads {k.shape}")
            if past_value.shape[:3] != past_key.shape[:3] or past_value.shape[3] != v.shape[3]:
                raise ShapeError(f"{op}: past_value {past_value.shape} does not match {past_key.shape} / value")
            k, v, buffers = _extend_cache(past_key, past_value, k, v, past_sequence_length, ct, op)
    else:
        raise ShapeError(f"{op}: key {key.shape} and value {value.shape} must both be 3-D or both 4-D")
    if q.shape[3] != k.shape[3]:
        raise ShapeError(f"{op}: head size of key ({k.shape[3]}) differs from query's ({q.shape[3]})")
    total = k.shape[2]
    past_len = 0 if past_key is None else total - kc.shape[1]
    if attention_bias is not None:
        _check_bias_shape(attention_bias, op, batch, num_heads, sq, total)
    mbias = _mask_bias(
        key_padding_mask,
        op=op,
        ct=ct,
        batch=batch,
        sq=sq,
        total=total,
        past_len=past_len,
        causal=bool(unidirectional),
        filter_value=mask_filter_value,
        start_positions=False,  # MultiHeadAttention's key_padding_mask has no (2B) form
    )
    s = scale if scale else 1.0 / float(np.sqrt(q.shape[3]))
    y = merge_heads(_sdpa(q, k, v, mbias, attention_bias, scale=s))
    dt = query.dtype
    if buffers is not None:
        k, v = buffers
    return y.astype(dt, copy=False), k.astype(dt, copy=False), v.astype(dt, copy=False)


def _extend_cache(
    past_key: np.ndarray,
    past_value: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    past_sequence_length: np.ndarray | None,
    ct: np.dtype[Any],
    op: str,
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """(keys, values attended, shared-buffer presents or None).

    Without ``past_sequence_length`` the cache is the past followed by the new rows. With it, past_key and
    past_value are buffers whose first ``past_sequence_length`` rows are the past: the new rows are written
    after them into a copy of the buffers (its other rows kept), as onnxruntime does.
    """
    pk, pv = past_key.astype(ct, copy=False), past_value.astype(ct, copy=False)
    if past_sequence_length is None:
        return np.concatenate((pk, k), axis=2), np.concatenate((pv, v), axis=2), None
    lens = np.asarray(past_sequence_length).reshape(-1)
    if lens.size != 1:
        raise ShapeError(f"{op}: past_sequence_length must hold one value, has shape {np.shape(past_sequence_length)}")
    p, cap, new = int(lens[0]), pk.shape[2], k.shape[2]
    if p < 0 or p + new > cap:
        raise EvaluationError(f"{op}: past_sequence_length {p} plus {new} new rows exceeds the buffer's {cap} rows")
    bk, bv = pk.copy(), pv.copy()
    bk[:, :, p : p + new] = k
    bv[:, :, p : p + new] = v
    return bk[:, :, : p + new], bv[:, :, : p + new], (bk, bv)


# ---------------------------------------------------------------------------------------------
# RotaryEmbedding
# ---------------------------------------------------------------------------------------------


def rotary_positions(position_ids: np.ndarray, batch: int, seq: int, op: str) -> np.ndarray:
    """(B, S) positions from position_ids of shape (1,) (an offset added to 0..S-1) or (B, S)."""
    pos = np.asarray(position_ids).astype(np.int64, copy=False)
    if pos.size == 1 and pos.ndim <= 1:
        return np.broadcast_to(pos.reshape(()) + np.arange(seq, dtype=np.int64), (batch, seq))
    if pos.shape != (batch, seq):
        raise ShapeError(f"{op}: position_ids has shape {pos.shape}, expected (1,) or ({batch}, {seq})")
    return pos


def rotate_heads(
    x: np.ndarray,
    pos: np.ndarray,
    cos_cache: np.ndarray,
    sin_cache: np.ndarray,
    *,
    rot: int,
    interleaved: bool,
    op: str,
) -> np.ndarray:
    """RoPE of ``x`` (B, N, S, H) in its compute type at positions ``pos`` (B, S) read from the caches."""
    if cos_cache.ndim != 2 or cos_cache.shape != sin_cache.shape:
        raise ShapeError(f"{op}: cos_cache {cos_cache.shape} and sin_cache {sin_cache.shape} must be one 2-D shape")
    half = rot // 2
    if rot % 2 or rot > x.shape[3] or cos_cache.shape[1] < half:
        raise ShapeError(f"{op}: rotary dimension {rot} does not fit head size {x.shape[3]} / caches {cos_cache.shape}")
    if pos.size and (pos.min() < 0 or pos.max() >= cos_cache.shape[0]):
        raise EvaluationError(f"{op}: a position is outside the caches' {cos_cache.shape[0]} rows")
    cos = cos_cache[pos, :half].astype(x.dtype)[:, None]  # (B, 1, S, half)
    sin = sin_cache[pos, :half].astype(x.dtype)[:, None]
    return rotary_rotate(x, cos, sin, rot, interleaved=interleaved)


@kernel("RotaryEmbedding", 1, domain=_DOMAIN)
def rotary_embedding(
    input: np.ndarray,
    position_ids: np.ndarray,
    cos_cache: np.ndarray,
    sin_cache: np.ndarray,
    *,
    interleaved: int = 0,
    is_packed_batching: int = 0,
    num_heads: int = 0,
    rotary_embedding_dim: int = 0,
    scale: float = 1.0,
) -> np.ndarray:
    """com.microsoft RotaryEmbedding-1: RoPE on (B, S, N*H) or (B, N, S, H) input at the positions given.

    Positions: position_ids (1,) is an offset added to 0..S-1; (B, S) gives each. ``scale`` and
    ``is_packed_batching`` are accepted and change nothing, as in onnxruntime's CPU kernel.
    """
    op = "com.microsoft::RotaryEmbedding"
    if cos_cache.ndim != 2:
        raise ShapeError(f"{op}: cos_cache must be 2-D (max_sequence_length, rotary_dim / 2), has {cos_cache.shape}")
    if rotary_embedding_dim > 0 and num_heads <= 0:
        raise EvaluationError(f"{op}: num_heads must be given with rotary_embedding_dim")
    ct = work_dtype(input.dtype)
    if input.ndim == 4:
        x = input.astype(ct, copy=False)
        head = x.shape[3]
    elif input.ndim == 3:
        hidden = input.shape[2]
        head = hidden // num_heads if num_heads > 0 else 2 * cos_cache.shape[1]
        if head <= 0 or hidden % head:
            raise ShapeError(f"{op}: hidden size {hidden} is not a multiple of the head size {head}")
        x = split_heads(input.astype(ct, copy=False), hidden // head, op, "input")
    else:
        raise ShapeError(f"{op}: input must have rank 3 or 4, has shape {input.shape}")
    rot = rotary_embedding_dim if rotary_embedding_dim > 0 else head
    pos = rotary_positions(position_ids, x.shape[0], x.shape[2], op)
    y = rotate_heads(x, pos, cos_cache, sin_cache, rot=rot, interleaved=bool(interleaved), op=op)
    if input.ndim == 3:
        y = merge_heads(y)
    return y.astype(input.dtype, copy=False)
