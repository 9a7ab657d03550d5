"""onnxruntime's normalizations: SkipLayerNormalization, SkipSimplifiedLayerNormalization,
EmbedLayerNormalization (com.microsoft), and its default-domain extensions LayerNormalization-1 and
SimplifiedLayerNormalization-1.

The standardization is ai.onnx's (``onnxcore.kernels.normalization._standardize``: the mean and variance over the
normalized axes, in float32 for float16 and bfloat16); the root-mean-square form is the same reduction without
the centring. The statistics outputs (mean, inv_std_var) have the type U of the definition (float for the
com.microsoft operators; for the default-domain ones the stash type) and the shape of the input with the
normalized axes kept as 1.

Taken from onnxruntime where its definitions are silent:

- Skip*: the input is (B, S, H) or (N, H); skip has the input's shape, or (S, H), or (1, S, H); gamma, beta and
  bias are 1-D of H; ``input_skip_bias_sum`` is ``input + skip + bias`` rounded to the input's type, and the
  normalization reads that rounded sum;
- EmbedLayerNormalization: position ids are ``0 .. S-1`` when not given (a given ``position_ids`` of shape
  (1, S) is shared by the batch); ``mask_index`` is the number of non-zero mask entries per sequence, zeros
  without a mask; an id outside its embedding table is refused;
- the statistics of SimplifiedLayerNormalization-1 are the inverse root mean square only.
"""

from __future__ import annotations

import numpy as np

from onnxcore.errors import ShapeError
from onnxcore.kernels._util import normalize_axis
from onnxcore.kernels.conv import work_dtype
from onnxcore.kernels.normalization import _standardize, _stash_dtype
from onnxcore.kernels.registry import kernel

__all__: list[str] = []

MS = "com.microsoft"


def _rms(xw: np.ndarray, axes: tuple[int, ...], epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """(normalized, inv_rms) of ``xw`` over ``axes`` (keepdims), in ``xw``'s dtype."""
    ms = np.mean(np.square(xw), axis=axes, keepdims=True)
    inv = 1 / np.sqrt(ms + xw.dtype.type(epsilon))
    return xw * inv, inv


def _affine(norm: np.ndarray, scale: np.ndarray, bias: np.ndarray | None, out: np.dtype) -> np.ndarray:
    wd = work_dtype(out)
    y = norm.astype(wd, copy=False) * scale.astype(wd, copy=False)
    if bias is not None:
        y += bias.astype(wd, copy=False)
    return y.astype(out, copy=False)


# ---- the default-domain extensions -------------------------------------------------------------------------------


@kernel("LayerNormalization", 1)
def layer_normalization_1(
    X: np.ndarray, Scale: np.ndarray, B: np.ndarray | None = None, *, axis: int = -1, epsilon: float = 1e-5,
    stash_type: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """onnxruntime's LayerNormalization-1 (ai.onnx LayerNormalization-17's semantics; Scale and B may have another
    float type V than X, which Y takes)."""
    a = normalize_axis(axis, X.ndim)
    stash = _stash_dtype(stash_type)
    norm, mean, inv = _standardize(X.astype(stash), tuple(range(a, X.ndim)), epsilon)
    out_stash = np.float64 if stash == np.float64 else np.float32
    y = _affine(norm.astype(X.dtype).astype(work_dtype(X.dtype)), Scale, B, Scale.dtype)
    return y, mean.astype(out_stash), inv.astype(out_stash)


@kernel("SimplifiedLayerNormalization", 1)
def simplified_layer_normalization(
    X: np.ndarray, scale: np.ndarray, *, axis: int = -1, epsilon: float = 1e-5, stash_type: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """onnxruntime's SimplifiedLayerNormalization-1 (root-mean-square normalization): ``X / sqrt(mean(X^2) +
    epsilon) * scale`` over ``[axis, rank)``; returns Y (scale's type) and inv_std_var."""
    a = normalize_axis(axis, X.ndim)
    stash = _stash_dtype(stash_type)
    norm, inv = _rms(X.astype(stash), tuple(range(a, X.ndim)), epsilon)
    out_stash = np.float64 if stash == np.float64 else np.float32
    y = _affine(norm.astype(X.dtype).astype(work_dtype(X.dtype)), scale, None, scale.dtype)
    return y, inv.astype(out_stash)


# ---- com.microsoft -----------------------------------------------------------------------------------------------


def _skip_sum(
    op: str, input: np.ndarray, skip: np.ndarray, gamma: np.ndarray, params: tuple[np.ndarray | None, ...]
) -> np.ndarray:
    if input.ndim not in (2, 3):
        raise ShapeError(f"{op}: input must be (B, S, H) or (N, H), got {input.shape}")
    h = input.shape[-1]
    if skip.shape != input.shape and not (skip.ndim in (2, 3) and skip.shape[-2:] == input.shape[-2:]):
        raise ShapeError(f"{op}: skip {skip.shape} must have the input's shape {input.shape} or its last two extents")
    if skip.ndim == 3 and skip.shape != input.shape and skip.shape[0] != 1:
        raise ShapeError(f"{op}: skip {skip.shape} must have the input's shape {input.shape} or (1, S, H)")
    for name, p in (("gamma", gamma), *zip(("beta", "bias"), params, strict=False)):
        if p is not None and p.shape != (h,):
            raise ShapeError(f"{op}: {name} must be 1-D of the hidden size {h}, got {p.shape}")
    wd = work_dtype(input.dtype)
    s = input.astype(wd) + skip.astype(wd)
    bias = params[-1]
    if bias is not None:
        s += bias.astype(wd)
    return s.astype(input.dtype)


@kernel("SkipLayerNormalization", 1, domain=MS)
def skip_layer_normalization(
    input: np.ndarray, skip: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None = None,
    bias: np.ndarray | None = None, *, epsilon: float = 1e-12,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """SkipLayerNormalization: layer normalization over the last axis of ``input + skip + bias``, times gamma
    plus beta; returns output, mean, inv_std_var (float) and input_skip_bias_sum."""
    s = _skip_sum("SkipLayerNormalization", input, skip, gamma, (beta, bias))
    norm, mean, inv = _standardize(s.astype(np.float32 if s.dtype != np.float64 else s.dtype), (s.ndim - 1,), epsilon)
    y = _affine(norm, gamma, beta, input.dtype)
    return y, mean.astype(np.float32), inv.astype(np.float32), s


@kernel("SkipSimplifiedLayerNormalization", 1, domain=MS)
def skip_simplified_layer_normalization(
    input: np.ndarray, skip: np.ndarray, gamma: np.ndarray, bias: np.ndarray | None = None, *,
    epsilon: float = 1e-12,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """SkipSimplifiedLayerNormalization: root-mean-square normalization over the last axis of ``input + skip +
    bias``, times gamma; returns output, mean (zeros: there is no centring), inv_std_var and
    input_skip_bias_sum."""
    s = _skip_sum("SkipSimplifiedLayerNormalization", input, skip, gamma, (bias,))
    norm, inv = _rms(s.astype(np.float32 if s.dtype != np.float64 else s.dtype), (s.ndim - 1,), epsilon)
    y = _affine(norm, gamma, None, input.dtype)
    return y, np.zeros(inv.shape, np.float32), inv.astype(np.float32), s


def _lookup(table: np.ndarray, ids: np.ndarray, name: str) -> np.ndarray:
    if table.ndim != 2:
        raise ShapeError(f"EmbedLayerNormalization: {name} must be 2-D, got {table.shape}")
    bad = (ids < 0) | (ids >= table.shape[0])
    if np.any(bad):
        raise ShapeError(
            f"EmbedLayerNormalization: an index into {name} is out of range [0, {table.shape[0]}): "
            f"{int(ids[bad].flat[0])}"
        )
    return table[ids]


@kernel("EmbedLayerNormalization", 1, domain=MS)
def embed_layer_normalization(
    input_ids: np.ndarray, segment_ids: np.ndarray | None, word_embedding: np.ndarray,
    position_embedding: np.ndarray, segment_embedding: np.ndarray | None, gamma: np.ndarray, beta: np.ndarray,
    mask: np.ndarray | None = None, position_ids: np.ndarray | None = None, *, epsilon: float = 1e-12,
    mask_index_type: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """EmbedLayerNormalization: layer normalization of the sum of word, position and (optional) segment
    embeddings; returns output (B, S, H), mask_index (B) and embedding_sum (B, S, H)."""
    if input_ids.ndim != 2:
        raise ShapeError(f"EmbedLayerNormalization: input_ids must be (B, S), got {input_ids.shape}")
    b, s = input_ids.shape
    if position_ids is None:
        pos = np.broadcast_to(np.arange(s, dtype=np.int64), (b, s))
    elif position_ids.shape in ((b, s), (1, s)):
        pos = np.broadcast_to(position_ids, (b, s))
    else:
        raise ShapeError(
            f"EmbedLayerNormalization: position_ids must be ({b}, {s}) or (1, {s}), got {position_ids.shape}"
        )
    wd = work_dtype(word_embedding.dtype)
    emb = _lookup(word_embedding, input_ids, "word_embedding").astype(wd)
    emb += _lookup(position_embedding, pos, "position_embedding").astype(wd)
    if segment_embedding is not None and segment_ids is not None:
        if segment_ids.shape != input_ids.shape:
            raise ShapeError(f"EmbedLayerNormalization: segment_ids {segment_ids.shape} must be {input_ids.shape}")
        emb += _lookup(segment_embedding, segment_ids, "segment_embedding").astype(wd)
    h = emb.shape[-1]
    for name, p in (("gamma", gamma), ("beta", beta)):
        if p.shape != (h,):
            raise ShapeError(f"EmbedLayerNormalization: {name} must be 1-D of the hidden size {h}, got {p.shape}")
    total = emb.astype(word_embedding.dtype)
    norm, _, _ = _standardize(emb, (2,), epsilon)
    y = _affine(norm, gamma, beta, word_embedding.dtype)
    if mask is not None:
        if mask.shape != input_ids.shape:
            raise ShapeError(f"EmbedLayerNormalization: mask {mask.shape} must be {input_ids.shape}")
        mask_index = np.count_nonzero(mask, axis=1).astype(np.int32)
    else:
        mask_index = np.zeros((b,), np.int32)
    return y, mask_index, total
