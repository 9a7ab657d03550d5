"""Sequence and optional operators, every version of the default domain (ONNX 1-2).

SequenceConstruct, SequenceEmpty, SequenceAt, SequenceErase, SequenceInsert, SequenceLength,
SplitToSequence, ConcatFromSequence, SequenceMap, Optional, OptionalGetElement and
OptionalHasElement.

Runtime values (common contract): a sequence is a Python ``list`` of arrays, an optional is
``None`` when it holds no element and the element itself otherwise. Kernels whose output is a
sequence or an optional return a 1-tuple, so that a list is never taken for several outputs.
Sequences are never mutated in place: every kernel returns a new list (inputs may be used again).
The versions listed for SplitToSequence, Optional, OptionalGetElement and OptionalHasElement
differ only in the types their constraints admit (checked against ``onnx.defs``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, LimitError
from onnxcore.kernels._util import normalize_axis, scalar_of
from onnxcore.kernels.registry import KernelContext, kernel
from onnxcore.limits import active_limits
from onnxcore.proto import GraphProto

__all__: list[str] = []


def _as_list(seq: Any, what: str) -> list[Any]:
    if not isinstance(seq, list):
        raise EvaluationError(f"{what}: expected a sequence, got {type(seq).__name__}")
    return seq


def _position(position: Any, n: int, *, insert: bool, what: str) -> int:
    """A position in ``[-n, n-1]`` (``[-n, n]`` when inserting), negative counting from the back."""
    arr = np.asarray(position)
    if arr.dtype.kind not in "iu":
        raise EvaluationError(f"{what}: position must be an integer tensor, got {arr.dtype}")
    p = int(scalar_of(arr, name=f"{what}: position"))
    hi = n if insert else n - 1
    if p < -n or p > hi:
        raise EvaluationError(f"{what}: position {p} is out of range [{-n}, {hi}] for a sequence of length {n}")
    return p + n if p < 0 else p


@kernel("SequenceConstruct", 11)
def sequence_construct(*inputs: np.ndarray) -> tuple[list[np.ndarray]]:
    """SequenceConstruct: the sequence of the input tensors, in order."""
    return (list(inputs),)


@kernel("SequenceEmpty", 11)
def sequence_empty(*, dtype: int = 1) -> tuple[list[np.ndarray]]:
    """SequenceEmpty: an empty sequence (``dtype`` only types it statically: a list carries no type)."""
    return ([],)


@kernel("SequenceAt", 11)
def sequence_at(input_sequence: list[np.ndarray], position: np.ndarray) -> np.ndarray:
    """SequenceAt: the tensor at ``position`` (negative counts from the back)."""
    seq = _as_list(input_sequence, "SequenceAt")
    return seq[_position(position, len(seq), insert=False, what="SequenceAt")]


@kernel("SequenceErase", 11)
def sequence_erase(input_sequence: list[np.ndarray], position: np.ndarray | None = None) -> tuple[list[np.ndarray]]:
    """SequenceErase: the sequence without the tensor at ``position`` (default: the last)."""
    seq = _as_list(input_sequence, "SequenceErase")
    if position is None:
        if not seq:
            raise EvaluationError("SequenceErase: the sequence is empty")
        p = len(seq) - 1
    else:
        p = _position(position, len(seq), insert=False, what="SequenceErase")
    return (seq[:p] + seq[p + 1 :],)


@kernel("SequenceInsert", 11)
def sequence_insert(
    input_sequence: list[np.ndarray], tensor: np.ndarray, position: np.ndarray | None = None
) -> tuple[list[np.ndarray]]:
    """SequenceInsert: the sequence with ``tensor`` inserted before ``position`` (default: at the end)."""
    seq = _as_list(input_sequence, "SequenceInsert")
    if seq and np.asarray(seq[0]).dtype != np.asarray(tensor).dtype:
        raise EvaluationError(
            f"SequenceInsert: tensor of type {np.asarray(tensor).dtype} into a sequence of {np.asarray(seq[0]).dtype}"
        )
    p = len(seq) if position is None else _position(position, len(seq), insert=True, what="SequenceInsert")
    return ([*seq[:p], tensor, *seq[p:]],)


@kernel("SequenceLength", 11)
def sequence_length(input_sequence: list[np.ndarray]) -> np.ndarray:
    """SequenceLength: the number of tensors in the sequence, as an int64 scalar."""
    return np.array(len(_as_list(input_sequence, "SequenceLength")), dtype=np.int64)


@kernel("SplitToSequence", 11, 24)
def split_to_sequence(
    input: np.ndarray, split: np.ndarray | None = None, *, axis: int = 0, keepdims: int = 1
) -> tuple[list[np.ndarray]]:
    """SplitToSequence: split ``input`` along ``axis`` into a sequence.

    Without ``split`` the parts have length 1, and ``keepdims=0`` removes the split axis from
    them; a scalar ``split`` gives parts of that length (the last may be shorter); a 1-D
    ``split`` gives the parts' lengths, which must sum to the extent of the axis. ``keepdims``
    is ignored when ``split`` is given.
    """
    x = np.asarray(input)
    if x.ndim == 0:
        raise EvaluationError("SplitToSequence: the input must have rank at least 1")
    ax = normalize_axis(axis, x.ndim)
    n = x.shape[ax]
    if split is None:
        parts = [np.take(x, [i], axis=ax) for i in range(n)]
        if not keepdims:
            parts = [np.squeeze(p, axis=ax) for p in parts]
        return (parts,)
    s = np.asarray(split)
    if s.dtype.kind not in "iu":
        raise EvaluationError(f"SplitToSequence: split must be an integer tensor, got {s.dtype}")
    if s.ndim == 0:
        size = int(s)
        if size <= 0:
            raise EvaluationError(f"SplitToSequence: split must be positive, got {size}")
        lengths = [size] * (n // size) + ([n % size] if n % size else [])
    elif s.ndim == 1:
        lengths = [int(v) for v in s]
        if any(v < 0 for v in lengths) or sum(lengths) != n:
            raise EvaluationError(f"SplitToSequence: split {lengths} does not partition an axis of extent {n}")
    else:
        raise EvaluationError(f"SplitToSequence: split must be a scalar or 1-D, got shape {s.shape}")
    if not lengths:
        return ([],)
    bounds = [int(b) for b in np.cumsum(lengths)[:-1]]
    return (list(np.split(x, bounds, axis=ax)),)


@kernel("ConcatFromSequence", 11)
def concat_from_sequence(input_sequence: list[np.ndarray], *, axis: int, new_axis: int = 0) -> np.ndarray:
    """ConcatFromSequence: concatenate the tensors along ``axis`` (stack on a new axis with ``new_axis=1``)."""
    seq = _as_list(input_sequence, "ConcatFromSequence")
    if not seq:
        raise EvaluationError("ConcatFromSequence: the sequence is empty (its element type and shape are unknown)")
    arrays = [np.asarray(t) for t in seq]
    rank = arrays[0].ndim
    if new_axis:
        ax = normalize_axis(axis, rank, allow_end=True)
        if any(a.shape != arrays[0].shape for a in arrays):
            raise EvaluationError("ConcatFromSequence: new_axis=1 needs tensors of one shape")
        return np.stack(arrays, axis=ax)
    if rank == 0:
        raise EvaluationError("ConcatFromSequence: cannot concatenate scalars without new_axis=1")
    ax = normalize_axis(axis, rank)
    for a in arrays[1:]:
        if a.ndim != rank or any(d != e for i, (d, e) in enumerate(zip(a.shape, arrays[0].shape)) if i != ax):
            raise EvaluationError(f"ConcatFromSequence: shapes {arrays[0].shape} and {a.shape} differ off axis {ax}")
    return np.concatenate(arrays, axis=ax)


@kernel("SequenceMap", 17, context=True)
def sequence_map(
    ctx: KernelContext, input_sequence: list[np.ndarray], *additional_inputs: Any, body: GraphProto
) -> tuple[list[Any], ...]:
    """SequenceMap: apply ``body`` to each position of the input sequence.

    Iteration ``i`` passes the ``i``-th element of ``input_sequence`` and of every additional
    input that is a sequence (all of the same length), and every additional tensor whole; the
    ``k``-th outputs of the iterations form the ``k``-th output sequence.
    """
    run = ctx.run_subgraph
    if run is None:
        raise EvaluationError("SequenceMap: no subgraph evaluator available")
    seq = _as_list(input_sequence, "SequenceMap")
    n = len(seq)
    for j, extra in enumerate(additional_inputs):
        if isinstance(extra, list) and len(extra) != n:
            raise EvaluationError(f"SequenceMap: additional input {j} is a sequence of length {len(extra)}, not {n}")
    limit = active_limits().max_loop_iterations
    if limit is not None and n > limit:
        raise LimitError(f"SequenceMap: {n} iterations exceed max_loop_iterations={limit} (Clause 15.4)")
    n_out = len(body.output)
    outs: list[list[Any]] = [[] for _ in range(n_out)]
    for i in range(n):
        args = [seq[i], *(extra[i] if isinstance(extra, list) else extra for extra in additional_inputs)]
        res = run(body, args)
        for k in range(n_out):
            outs[k].append(res[k])
    return tuple(outs)


@kernel("Optional", 15, 28)
def optional(input: Any = None, *, type: Any = None) -> tuple[Any]:
    """Optional: an optional holding ``input``, or the empty optional (of ``type``) without it."""
    if input is None and type is None:
        raise EvaluationError("Optional: give either the input or the type attribute")
    return (input,)


@kernel("OptionalGetElement", 15, 18, 28)
def optional_get_element(input: Any) -> tuple[Any]:
    """OptionalGetElement: the element of a non-empty optional (from 18, a tensor or sequence as is)."""
    if input is None:
        raise EvaluationError("OptionalGetElement: the optional is empty")
    return (input,)


@kernel("OptionalHasElement", 15, 18, 28)
def optional_has_element(input: Any = None) -> np.ndarray:
    """OptionalHasElement: whether the optional holds an element (false for an unsupplied input)."""
    return np.array(input is not None)
