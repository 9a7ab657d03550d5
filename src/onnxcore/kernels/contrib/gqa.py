"""onnxruntime's ``com.microsoft`` GroupQueryAttention: grouped-query attention over a BNSH KV cache.

Positions are per batch item: item ``b`` holds ``seqlens_k[b] + 1`` tokens after this step, so its new
tokens sit at positions ``past_b .. past_b + S - 1`` with ``past_b = seqlens_k[b] + 1 - S`` (0 on the first
prompt, when the step covers ``total_sequence_length`` tokens and there is no past: right-padded prompts).
The new keys and values are written into the cache at those rows.

Taken from onnxruntime 1.31 (CPU) as the fact where the definition is silent, and tested against it:

* the causal window of ``local_window_size`` W holds W keys, the query's own included (keys ``p - W + 1 .. p``);
* a key past an item's length is never attended; a padded query row of a prompt attends as the item's
  last token does (its causal window ends there);
* softcap applies to the scaled scores, then ``attention_bias`` is added; ``smooth_softmax`` adds a zero
  logit to the softmax's denominator, ``head_sink`` a per-head logit;
* ``do_rotary`` rotates Q and K (before K enters the cache) at the positions above, or at ``position_ids``;
  on a first prompt at ``position_ids[0, 0] + s`` for every item (the definition: only the first element);
* present is as long as the larger of past_key's length and ``total_sequence_length``: an item's past rows,
  then its new rows (all S rows of a padded prompt), then zeros;
* output_qk (``qk_output`` 1: scores after softcap and bias; 2: probabilities) is 0 where a key is not
  attended (onnxruntime leaves whatever its buffer held there).

Refused: quantized caches (``k_scale``/``v_scale``), ``q_norm_weight``/``k_norm_weight`` (CUDA/WebGPU
only in onnxruntime) and ``sliding_window_cache``.
"""

from __future__ import annotations

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels.attention import grouped_matmul, work_dtype
from onnxcore.kernels.contrib.attention import merge_heads, rotate_heads, softmax_rows, split_heads
from onnxcore.kernels.registry import kernel

__all__: list[str] = []

_OP = "com.microsoft::GroupQueryAttention"


def _split_packed(query: np.ndarray, num_heads: int, kv_num_heads: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(B, S, (N + 2 Nkv) H) -> Q (B, S, N H), K, V (B, S, Nkv H)."""
    width = query.shape[2]
    parts = num_heads + 2 * kv_num_heads
    if width % parts:
        raise ShapeError(f"{_OP}: packed QKV width {width} is not (num_heads + 2 * kv_num_heads) * head_size")
    head = width // parts
    a, b = num_heads * head, (num_heads + kv_num_heads) * head
    return query[..., :a], query[..., a:b], query[..., b:]


@kernel("GroupQueryAttention", 1, domain="com.microsoft")
def group_query_attention(
    query: np.ndarray,
    key: np.ndarray | None,
    value: np.ndarray | None,
    past_key: np.ndarray | None,
    past_value: np.ndarray | None,
    seqlens_k: np.ndarray,
    total_sequence_length: np.ndarray,
    cos_cache: np.ndarray | None = None,
    sin_cache: np.ndarray | None = None,
    position_ids: np.ndarray | None = None,
    attention_bias: np.ndarray | None = None,
    head_sink: np.ndarray | None = None,
    k_scale: np.ndarray | None = None,
    v_scale: np.ndarray | None = None,
    q_norm_weight: np.ndarray | None = None,
    k_norm_weight: np.ndarray | None = None,
    *,
    num_heads: int,
    kv_num_heads: int,
    causal: int = 1,
    do_rotary: int = 0,
    k_quant_type: str = "NONE",
    kv_cache_bit_width: int = 0,
    local_window_size: int = -1,
    qk_norm_epsilon: float = 1e-6,
    qk_output: int = 0,
    rotary_interleaved: int = 0,
    scale: float = 0.0,
    sliding_window_cache: int = 0,
    smooth_softmax: int = -1,
    softcap: float = 0.0,
    v_quant_type: str = "NONE",
) -> tuple[np.ndarray, ...]:
    """com.microsoft GroupQueryAttention-1.

    Returns ``(output, present_key, present_value, output_qk)``; output_qk is the scaled scores (``qk_output``
    1) or the probabilities (2), shaped (B, N, S, total_sequence_length).
    """
    if k_scale is not None or v_scale is not None or _text(k_quant_type) != "NONE" or _text(v_quant_type) != "NONE":
        raise EvaluationError(f"{_OP}: quantized KV caches (k_scale/v_scale, k/v_quant_type) are not supported")
    if q_norm_weight is not None or k_norm_weight is not None:
        raise EvaluationError(f"{_OP}: q_norm_weight/k_norm_weight are not supported (nor by onnxruntime's CPU)")
    if sliding_window_cache:
        raise EvaluationError(f"{_OP}: sliding_window_cache=1 is not supported")
    if num_heads <= 0 or kv_num_heads <= 0 or num_heads % kv_num_heads:
        raise EvaluationError(
            f"{_OP}: num_heads={num_heads} must be a positive multiple of kv_num_heads={kv_num_heads}"
        )
    if causal not in (0, 1) or (not causal and local_window_size != -1):
        raise EvaluationError(f"{_OP}: causal must be 0 or 1, and local_window_size -1 when causal is 0")
    if qk_output not in (0, 1, 2):
        raise EvaluationError(f"{_OP}: qk_output={qk_output} is not 0, 1 or 2")
    if (past_key is None) != (past_value is None):
        raise EvaluationError(f"{_OP}: past_key and past_value must be given together")
    if query.ndim != 3:
        raise ShapeError(f"{_OP}: query must be (batch, sequence, hidden), has shape {query.shape}")
    if key is None and value is None:
        qp, kp, vp = _split_packed(query, num_heads, kv_num_heads)
    elif key is not None and value is not None:
        qp, kp, vp = query, key, value
    else:
        raise EvaluationError(f"{_OP}: key and value must be given together (or both left out for packed QKV)")
    ct = work_dtype(query.dtype)
    q = split_heads(qp.astype(ct, copy=False), num_heads, _OP, "query")
    k = split_heads(kp.astype(ct, copy=False), kv_num_heads, _OP, "key")
    v = split_heads(vp.astype(ct, copy=False), kv_num_heads, _OP, "value")
    batch, _, sq, head = q.shape
    if k.shape[:3] != (batch, kv_num_heads, sq) or k.shape[3] != head or v.shape != k.shape:
        raise ShapeError(f"{_OP}: key {kp.shape} / value {vp.shape} do not match query {qp.shape}")

    lens = np.asarray(seqlens_k).astype(np.int64).reshape(-1) + 1  # tokens held by each item after this step
    if lens.shape != (batch,):
        raise ShapeError(f"{_OP}: seqlens_k has shape {np.shape(seqlens_k)}, expected ({batch},)")
    total = int(np.asarray(total_sequence_length).reshape(-1)[0])
    past_cap = 0 if past_key is None else past_key.shape[2]
    first_prompt = past_cap == 0 and sq == total
    past_lens = np.zeros(batch, np.int64) if first_prompt else lens - sq
    if lens.size and (lens.max() > total or past_lens.min() < 0 or past_lens.max() > past_cap):
        raise EvaluationError(
            f"{_OP}: seqlens_k {np.asarray(seqlens_k).tolist()} does not fit sequence {sq}, "
            f"total_sequence_length {total} and past length {past_cap}"
        )
    present_len = max(past_cap, total)
    pos = past_lens[:, None] + np.arange(sq)  # (B, S) absolute positions of the new tokens

    if do_rotary:
        if cos_cache is None or sin_cache is None:
            raise EvaluationError(f"{_OP}: do_rotary=1 needs cos_cache and sin_cache")
        rpos = pos
        if position_ids is not None:
            rpos = np.asarray(position_ids).astype(np.int64)
            if rpos.shape != (batch, sq):
                raise ShapeError(f"{_OP}: position_ids has shape {rpos.shape}, expected ({batch}, {sq})")
            if first_prompt:
                # As the definition says (and onnxruntime does): a first prompt reads only the first element.
                rpos = np.broadcast_to(rpos[0, 0] + np.arange(sq), (batch, sq))
        rot = 2 * cos_cache.shape[1]
        q = rotate_heads(q, rpos, cos_cache, sin_cache, rot=rot, interleaved=bool(rotary_interleaved), op=_OP)
        k = rotate_heads(k, rpos, cos_cache, sin_cache, rot=rot, interleaved=bool(rotary_interleaved), op=_OP)

    # The cache: past rows, then the new rows written at each item's positions ((B, T, Nkv, H) for the scatter).
    cache_dt = query.dtype if past_key is None else past_key.dtype
    pk = np.zeros((batch, present_len, kv_num_heads, head), ct)
    pv = np.zeros((batch, present_len, kv_num_heads, head), ct)
    if past_key is not None and past_value is not None:
        if (
            past_key.shape[:2] != (batch, kv_num_heads)
            or past_key.shape[3] != head
            or past_value.shape != past_key.shape
        ):
            raise ShapeError(f"{_OP}: past_key {past_key.shape} / past_value {past_value.shape} do not match")
        pk[:, :past_cap] = past_key.astype(ct).transpose(0, 2, 1, 3)
        pv[:, :past_cap] = past_value.astype(ct).transpose(0, 2, 1, 3)
        stale = np.arange(present_len)[None, :] >= past_lens[:, None]  # (B, T): past rows after an item's past
        pk[stale] = 0
        pv[stale] = 0
    rows = np.arange(batch)[:, None]
    pk[rows, pos] = k.transpose(0, 2, 1, 3)
    pv[rows, pos] = v.transpose(0, 2, 1, 3)
    present_key = pk.transpose(0, 2, 1, 3)
    present_value = pv.transpose(0, 2, 1, 3)

    # Scores over the first `total` cache rows (columns are absolute key positions).
    s = scale if scale else 1.0 / float(np.sqrt(head))
    keys = present_key[:, :, :total]
    scores = grouped_matmul(q * ct.type(s), keys.swapaxes(-1, -2))  # (B, N, S, T)
    if softcap > 0:
        scores = ct.type(softcap) * np.tanh(scores / ct.type(softcap))
    j = np.arange(total)
    # A key past the item's length is padding, for the padded query rows of a prompt too.
    allowed = np.broadcast_to(j[None, None, :] < lens[:, None, None], (batch, sq, total))
    if causal:
        # A padded query row of a prompt (position past the item's last token) is masked as that last token.
        last = np.minimum(pos, lens[:, None] - 1)[:, :, None]
        allowed = allowed & (j[None, None, :] <= last)
        if local_window_size > 0:
            # The window holds local_window_size keys, the query's own position included (onnxruntime 1.31).
            allowed &= j[None, None, :] > last - local_window_size
    if attention_bias is not None:
        ab = attention_bias.shape
        if len(ab) != 4 or ab[0] not in (1, batch) or ab[1] not in (1, num_heads) or ab[2:] != (sq, total):
            raise ShapeError(
                f"{_OP}: attention_bias has shape {ab}, expected ({batch} or 1, {num_heads} or 1, {sq}, {total})"
            )
        scores += attention_bias.astype(ct, copy=False)
    scores = np.where(allowed[:, None], scores, ct.type(-np.inf))
    qk = np.where(allowed[:, None], scores, 0).astype(query.dtype) if qk_output == 1 else None
    sink: np.ndarray | None = None
    if head_sink is not None:
        sink = head_sink.astype(ct).reshape(1, num_heads, 1, 1)
    elif smooth_softmax == 1:
        sink = np.zeros((1, 1, 1, 1), ct)
    probs = softmax_rows(scores, sink)
    if qk_output == 2:
        qk = probs.astype(query.dtype)
    y = merge_heads(grouped_matmul(probs, present_value[:, :, :total]))
    out_k = present_key.astype(cache_dt, copy=False)
    out_v = present_value.astype(cache_dt, copy=False)
    if qk is None:
        qk = np.zeros((batch, num_heads, sq, total), query.dtype)
    return y.astype(query.dtype, copy=False), out_k, out_v, qk


def _text(v: str | bytes) -> str:
    return v.decode() if isinstance(v, bytes) else v
