"""Control flow: ``If``, ``Loop`` and ``Scan`` (Clause 8.3; semantics from the ONNX 1-2 definitions).

Every version of each shares one evaluation rule; the versions differ in the types their
constraints admit (sequences and optionals from Loop-13/If-13, more element types later), which
the kernels pass through untouched. Subgraphs run through ``ctx.run_subgraph``, which supplies the
values the body reads from enclosing scopes (Clause 5.4.3, 7.6). The number of iterations of one
evaluation is bounded by ``Limits.max_loop_iterations`` (Clause 15.4): exceeding it raises
:class:`onnxcore.LimitError`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, LimitError
from onnxcore.kernels.registry import KernelContext, kernel
from onnxcore.limits import active_limits
from onnxcore.proto import GraphProto, TypeProto
from onnxcore.types import ElementType

__all__ = ["if_", "loop", "scan", "scan_8"]

_IF_VERSIONS = (1, 11, 13, 16, 19, 21, 23, 24, 25)
_LOOP_VERSIONS = (1, 11, 13, 16, 19, 21, 23, 24, 25)
_SCAN_VERSIONS = (9, 11, 16, 19, 21, 23, 24, 25)


def _scalar_bool(v: Any, what: str) -> bool:
    a = np.asarray(v)
    if a.size != 1:
        raise EvaluationError(f"{what} must hold exactly one element, got shape {a.shape}")
    return bool(a.reshape(-1)[0])


def _scalar_int(v: Any, what: str) -> int:
    a = np.asarray(v)
    if a.size != 1:
        raise EvaluationError(f"{what} must hold exactly one element, got shape {a.shape}")
    return int(a.reshape(-1)[0])


def _limit() -> int | None:
    # Clause 15.4: the limits of the session evaluating (active_limits), as every kernel reads them.
    lim = active_limits().max_loop_iterations
    return None if lim is None else int(lim)


def _refuse(ctx: KernelContext, n: int | str) -> LimitError:
    node = ctx.node
    return LimitError(
        f"{node.op_type} node {node.name!r}: more than max_loop_iterations={_limit()} iterations ({n}) (Clause 15.4)"
    )


def _empty_stack(body: GraphProto, out_index: int, rank_hint: int | None = None) -> np.ndarray:
    """The value of a scan output after no iterations: leading extent 0, the rest as declared."""
    tp: TypeProto | None = body.output[out_index].type if out_index < len(body.output) else None
    dtype: Any = np.float32
    shape: list[int] = []
    tt = tp.tensor_type if tp is not None else None
    if tt is not None:
        if tt.elem_type:
            dtype = ElementType(tt.elem_type).np_dtype
        if tt.shape is not None:
            shape = [int(d.dim_value) if d.has("dim_value") else 0 for d in tt.shape.dim]
    elif rank_hint:
        shape = [0] * rank_hint
    return np.zeros([0, *shape], dtype=dtype)


@kernel("If", *_IF_VERSIONS, context=True)
def if_(ctx: KernelContext, cond: Any, *, then_branch: GraphProto, else_branch: GraphProto) -> tuple[Any, ...]:
    """If: evaluate ``then_branch`` when the single element of ``cond`` is true, else ``else_branch``."""
    branch = then_branch if _scalar_bool(cond, "If: cond") else else_branch
    return tuple(ctx.run_subgraph(branch, []))  # type: ignore[misc]


@kernel("Loop", *_LOOP_VERSIONS, context=True)
def loop(ctx: KernelContext, M: Any = None, cond: Any = None, *v_initial: Any, body: GraphProto) -> tuple[Any, ...]:
    """Loop: iterate ``body`` while ``i < M`` (when M is given) and ``cond`` (when cond is given).

    The body takes (iteration number, condition, carried values...) and yields (condition, carried
    values..., scan outputs...). When the ``cond`` input is left unsupplied the condition the body
    yields is ignored. Scan outputs are the per-iteration values stacked on a new leading axis.
    """
    run = ctx.run_subgraph
    assert run is not None
    n_carried = len(v_initial)
    n_scan = len(body.output) - 1 - n_carried
    if n_scan < 0:
        raise EvaluationError(
            f"Loop: the body yields {len(body.output)} outputs, fewer than 1 + {n_carried} carried values"
        )
    trip = None if M is None else _scalar_int(M, "Loop: M")
    keep = True if cond is None else _scalar_bool(cond, "Loop: cond")
    limit = _limit()
    if trip is not None and limit is not None and trip > limit:
        # Refused before the first iteration, whether or not a condition is given (issue 41): a trip count past
        # the limit states more work than the limit allows; a model whose condition ends the loop early states
        # a smaller M, or leaves M empty and is bounded at the limit by the count below. Exporters write a while
        # loop as M = 2**63 - 1 with a condition: the message says how to run one from a trusted model.
        err = _refuse(ctx, trip)
        if cond is not None:
            err = LimitError(
                f"{err} A loop its condition ends may declare a large M (exporters write 2**63 - 1 for a while "
                "loop): a session with Limits(max_loop_iterations=None) runs it, bounded by its condition alone."
            )
        raise err
    carried = list(v_initial)
    scans: list[list[Any]] = [[] for _ in range(n_scan)]
    cond_value = np.array(keep)
    i = 0
    while keep and (trip is None or i < trip):
        if limit is not None and i >= limit:
            raise _refuse(ctx, f"at least {i + 1}")
        outs = run(body, [np.array(i, dtype=np.int64), cond_value, *carried])
        if cond is not None:
            keep = _scalar_bool(outs[0], "Loop: the body's condition")
            cond_value = np.asarray(outs[0]).reshape(())
        carried = outs[1 : 1 + n_carried]
        for j in range(n_scan):
            scans[j].append(outs[1 + n_carried + j])
        i += 1
    results: list[Any] = list(carried)
    for j in range(n_scan):
        if scans[j]:
            results.append(np.stack(scans[j]))
        else:
            results.append(_empty_stack(body, 1 + n_carried + j))
    return tuple(results)


def _norm_axes(axes: list[int] | None, ranks: list[int], what: str) -> list[int]:
    out = []
    for k, r in enumerate(ranks):
        a = 0 if axes is None else axes[k]
        if not -r <= a < r:
            raise EvaluationError(f"Scan: {what}[{k}] = {a} is out of range for rank {r}")
        out.append(a + r if a < 0 else a)
    return out


def _take(x: np.ndarray, axis: int, t: int) -> np.ndarray:
    return x[(slice(None),) * axis + (t,)]


@kernel("Scan", *_SCAN_VERSIONS, context=True)
def scan(
    ctx: KernelContext,
    *initial_state_and_scan_inputs: Any,
    body: GraphProto,
    num_scan_inputs: int,
    scan_input_axes: list[int] | None = None,
    scan_input_directions: list[int] | None = None,
    scan_output_axes: list[int] | None = None,
    scan_output_directions: list[int] | None = None,
) -> tuple[Any, ...]:
    """Scan (9 and later): iterate ``body`` over slices of the scan inputs along their scan axes.

    The body takes (states..., one slice of each scan input) and yields (states..., scan output
    elements...). Direction 1 reads a scan input from its end, respectively builds a scan output
    by prepending. Scan outputs are stacked along their scan output axis.
    """
    run = ctx.run_subgraph
    assert run is not None
    args = initial_state_and_scan_inputs
    m = int(num_scan_inputs)
    n_state = len(args) - m
    if m < 1 or n_state < 0:
        raise EvaluationError(f"Scan: num_scan_inputs={m} does not fit {len(args)} inputs")
    states = list(args[:n_state])
    xs = [np.asarray(x) for x in args[n_state:]]
    in_axes = _norm_axes(scan_input_axes, [x.ndim for x in xs], "scan_input_axes")
    in_dirs = list(scan_input_directions) if scan_input_directions is not None else [0] * m
    lengths = {x.shape[a] for x, a in zip(xs, in_axes)}
    if len(lengths) != 1:
        raise EvaluationError(f"Scan: scan inputs differ in sequence length along their axes: {sorted(lengths)}")
    seq_len = lengths.pop()
    limit = _limit()
    if limit is not None and seq_len > limit:
        raise _refuse(ctx, seq_len)
    n_out = len(body.output) - n_state
    if n_out < 0:
        raise EvaluationError(f"Scan: the body yields {len(body.output)} outputs, fewer than {n_state} states")
    collected: list[list[Any]] = [[] for _ in range(n_out)]
    for t in range(seq_len):
        elems = [_take(x, a, seq_len - 1 - t if d == 1 else t) for x, a, d in zip(xs, in_axes, in_dirs)]
        outs = run(body, [*states, *elems])
        states = list(outs[:n_state])
        for j in range(n_out):
            collected[j].append(outs[n_state + j])
    out_dirs = list(scan_output_directions) if scan_output_directions is not None else [0] * n_out
    results: list[Any] = list(states)
    for j in range(n_out):
        if collected[j]:
            stacked = np.stack(collected[j])
        else:
            stacked = _empty_stack(body, n_state + j)
        if out_dirs[j] == 1:
            stacked = stacked[::-1]
        axis = 0 if scan_output_axes is None else int(scan_output_axes[j])
        r = stacked.ndim
        if not -r <= axis < r:
            raise EvaluationError(f"Scan: scan_output_axes[{j}] = {axis} is out of range for rank {r}")
        if axis < 0:
            axis += r
        if axis:
            stacked = np.moveaxis(stacked, 0, axis)
        results.append(np.ascontiguousarray(stacked))
    return tuple(results)


@kernel("Scan", 8, context=True)
def scan_8(
    ctx: KernelContext,
    sequence_lens: Any,
    *initial_state_and_scan_inputs: Any,
    body: GraphProto,
    num_scan_inputs: int,
    directions: list[int] | None = None,
) -> tuple[Any, ...]:
    """Scan-8: like later versions, but axis 0 of every input is a batch axis and the scan axis is 1.

    Each batch entry is scanned separately, over its ``sequence_lens`` entry when given (else the
    full length); scan outputs of shorter entries are padded with zeros to the full length.
    """
    run = ctx.run_subgraph
    assert run is not None
    args = initial_state_and_scan_inputs
    m = int(num_scan_inputs)
    n_state = len(args) - m
    if m < 1 or n_state < 0:
        raise EvaluationError(f"Scan: num_scan_inputs={m} does not fit {len(args)} inputs")
    inits = [np.asarray(s) for s in args[:n_state]]
    xs = [np.asarray(x) for x in args[n_state:]]
    if any(x.ndim < 2 for x in xs):
        raise EvaluationError("Scan-8: scan inputs need a batch axis and a sequence axis")
    batch = xs[0].shape[0]
    max_len = xs[0].shape[1]
    if any(x.shape[0] != batch or x.shape[1] != max_len for x in xs):
        raise EvaluationError("Scan-8: scan inputs differ in batch size or sequence length")
    if any(s.ndim < 1 or s.shape[0] != batch for s in inits):
        shapes = [s.shape for s in inits]
        raise EvaluationError(f"Scan-8: initial states {shapes} do not have the batch size {batch} on axis 0")
    dirs = list(directions) if directions is not None else [0] * m
    lens = [max_len] * batch
    if sequence_lens is not None:
        sl = np.asarray(sequence_lens).reshape(-1)
        if sl.shape[0] != batch:
            raise EvaluationError(f"Scan-8: sequence_lens has {sl.shape[0]} entries for batch size {batch}")
        lens = [int(v) for v in sl]
        if any(not 0 <= v <= max_len for v in lens):
            raise EvaluationError(f"Scan-8: sequence_lens {lens} outside [0, {max_len}]")
    limit = _limit()
    if limit is not None and max_len * batch > limit:
        raise _refuse(ctx, max_len * batch)
    n_out = len(body.output) - n_state
    final_states: list[list[Any]] = [[] for _ in range(n_state)]
    per_batch_out: list[list[np.ndarray]] = [[] for _ in range(n_out)]
    for b in range(batch):
        states: list[Any] = [s[b] for s in inits]
        n = lens[b]
        collected: list[list[Any]] = [[] for _ in range(n_out)]
        for t in range(n):
            elems = [x[b, n - 1 - t if d == 1 else t] for x, d in zip(xs, dirs)]
            outs = run(body, [*states, *elems])
            states = list(outs[:n_state])
            for j in range(n_out):
                collected[j].append(np.asarray(outs[n_state + j]))
        for k in range(n_state):
            final_states[k].append(np.asarray(states[k]))
        for j in range(n_out):
            if collected[j]:
                st = np.stack(collected[j])
                if n < max_len:
                    pad = np.zeros((max_len - n, *st.shape[1:]), dtype=st.dtype)
                    st = np.concatenate([st, pad])
            else:
                st = _empty_stack(body, n_state + j)
                st = np.zeros((max_len, *st.shape[1:]), dtype=st.dtype)
            per_batch_out[j].append(st)
    results: list[Any] = []
    for k in range(n_state):
        results.append(np.stack(final_states[k]) if batch else np.zeros((0, *inits[k].shape[1:]), inits[k].dtype))
    for j in range(n_out):
        if batch:
            results.append(np.stack(per_batch_out[j]))
        else:
            e = _empty_stack(body, n_state + j)
            results.append(np.zeros((0, 0, *e.shape[1:]), dtype=e.dtype))
    return tuple(results)
