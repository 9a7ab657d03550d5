"""FlexAttention-1 of the ``ai.onnx.preview`` domain: attention with score and probability modifier subgraphs.

The evaluation follows the operator's definition and its (context-dependent) function body step by
step, with its roundings:

1. ``s = Sqrt(scale)`` in float32 (``scale`` defaults to ``1 / Sqrt(head_size)``, also float32), cast
   to the input type ``T1``; ``Q * s`` and ``K * s`` are rounded to ``T1`` and multiplied, the scores
   rounded to ``T1`` once more (the matmul itself accumulates in float32 for float16 and bfloat16,
   as Clause 11.4 permits, instead of rounding after every addition).
2. The scores are cast to the softmax type: ``softmax_precision`` when given (FLOAT, FLOAT16, DOUBLE
   or BFLOAT16), else double for double inputs and float32 for every other input type.
3. ``score_mod`` (a GRAPH attribute) runs once on the whole (B, Hq, L, S) score tensor: the
   definition gives the subgraph one rank-4 tensor, so the modification is naturally vectorised.
4. Softmax over the last axis is the Softmax-13 kernel itself (the function body calls Softmax), so
   a row that ``score_mod`` masks entirely (all -inf) yields NaN exactly as the function body does;
   unlike Attention-23's, FlexAttention's definition gives such rows no special meaning.
5. ``prob_mod`` runs once on the whole probability tensor.
6. ``Y = probs @ V`` in the softmax type (V cast to it first), then cast back to ``T1``.

Grouped-query attention (q heads a multiple of kv heads, query head ``h`` using kv head
``h // group``) reuses Attention's grouped matmul, which folds the query heads of a group into
the rows of one matmul instead of repeating K and V. Shapes are checked against the definition's
(the batch sizes of Q, K, V must be equal: the definition names them all ``batch_size``); a
modifier subgraph must return exactly one tensor of its input's shape and element type.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels.attention import grouped_matmul, work_dtype
from onnxcore.kernels.reduction import softmax as _softmax_13
from onnxcore.kernels.registry import KernelContext, kernel
from onnxcore.proto import GraphProto
from onnxcore.types.elements import ElementType

__all__ = ["flex_attention"]

_PREVIEW = "ai.onnx.preview"

# softmax_precision: a TensorProto.DataType tag among those Softmax accepts.
_SOFTMAX_TYPES = frozenset({1, 10, 11, 16})


def _matmul_rounded(a: np.ndarray, b: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """``a @ b`` (grouped over heads) for operands of ``dtype``, computed wide and rounded once to ``dtype``."""
    wt = work_dtype(dtype)
    out = grouped_matmul(a.astype(wt, copy=False), b.astype(wt, copy=False))
    return out.astype(dtype, copy=False)


def _modify(ctx: KernelContext, graph: GraphProto, value: np.ndarray, what: str) -> np.ndarray:
    """Run a modifier subgraph on ``value``; its single output must keep shape and element type."""
    run = ctx.run_subgraph
    if run is None:
        raise EvaluationError(f"FlexAttention: no subgraph evaluator is available for {what}")
    outs = run(graph, [value])
    if len(outs) != 1:
        raise EvaluationError(f"FlexAttention: {what} must produce exactly one output, produced {len(outs)}")
    out = outs[0]
    if not isinstance(out, np.ndarray) or out.shape != value.shape or out.dtype != value.dtype:
        got = f"{out.dtype}{list(out.shape)}" if isinstance(out, np.ndarray) else type(out).__name__
        raise EvaluationError(
            f"FlexAttention: {what} must return a tensor of its input's shape and type "
            f"{value.dtype}{list(value.shape)}, returned {got}"
        )
    return out


def _check_shapes(Q: np.ndarray, K: np.ndarray, V: np.ndarray) -> None:
    if Q.ndim != 4 or K.ndim != 4 or V.ndim != 4:
        raise ShapeError(f"FlexAttention: Q, K and V must be rank 4, got {Q.shape}, {K.shape}, {V.shape}")
    b, hq, _, e = Q.shape
    bk, hkv, s, ek = K.shape
    bv, hv, sv, _ = V.shape
    if bk != b or bv != b:
        raise ShapeError(f"FlexAttention: batch sizes of Q {Q.shape}, K {K.shape} and V {V.shape} differ")
    if ek != e:
        raise ShapeError(f"FlexAttention: head size of K ({ek}) differs from Q's ({e})")
    if hv != hkv or sv != s:
        raise ShapeError(f"FlexAttention: V {V.shape} does not match K {K.shape} in heads and sequence length")
    if hkv == 0 or hq % hkv:
        raise ShapeError(f"FlexAttention: q_num_heads {hq} is not a multiple of kv_num_heads {hkv}")


@kernel("FlexAttention", 1, domain=_PREVIEW, context=True)
def flex_attention(
    ctx: KernelContext,
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    *,
    prob_mod: GraphProto | None = None,
    scale: float | None = None,
    score_mod: GraphProto | None = None,
    softmax_precision: int | None = None,
) -> np.ndarray:
    """FlexAttention-1: ``Softmax(score_mod((Q @ K^T) * scale))``, then ``prob_mod``, times ``V``."""
    _check_shapes(Q, K, V)
    t1 = Q.dtype
    if K.dtype != t1 or V.dtype != t1:
        raise EvaluationError(
            f"FlexAttention: Q, K, V must share one element type, got {Q.dtype}, {K.dtype}, {V.dtype}"
        )
    if softmax_precision is None:
        sp = np.dtype(np.float64) if t1 == np.float64 else np.dtype(np.float32)
    elif int(softmax_precision) in _SOFTMAX_TYPES:
        sp = ElementType(int(softmax_precision)).np_dtype
    else:
        raise EvaluationError(
            f"FlexAttention: softmax_precision={softmax_precision} is not FLOAT (1), FLOAT16 (10), "
            "DOUBLE (11) or BFLOAT16 (16)"
        )

    # Step 1: both operands pre-scaled by sqrt(scale), computed in float32 and cast to T1.
    with np.errstate(invalid="ignore", divide="ignore"):
        f_scale = np.float32(1.0) / np.sqrt(np.float32(Q.shape[3])) if scale is None else np.float32(scale)
        root = np.sqrt(np.float32(f_scale))
    s = np.asarray(root).astype(t1)
    wt = work_dtype(t1)
    s_w = s.astype(wt)
    with np.errstate(invalid="ignore", over="ignore"):
        q = (Q.astype(wt, copy=False) * s_w).astype(t1, copy=False)
        k = (K.astype(wt, copy=False) * s_w).astype(t1, copy=False)
        scores = _matmul_rounded(q, k.swapaxes(-1, -2), t1).astype(sp, copy=False)

    # Steps 3-5: modifiers and softmax on whole tensors.
    if score_mod is not None:
        scores = _modify(ctx, score_mod, scores, "score_mod")
    with np.errstate(divide="ignore", invalid="ignore"):  # a fully masked row: NaN, no warning
        probs = _softmax_13(scores, axis=-1)
    if prob_mod is not None:
        probs = _modify(ctx, prob_mod, probs, "prob_mod")

    # Step 6: V in the softmax type, product rounded to it, then cast to T1.
    with np.errstate(invalid="ignore", over="ignore"):
        y = _matmul_rounded(probs, V.astype(sp, copy=False), sp)
    return y.astype(t1, copy=False)
