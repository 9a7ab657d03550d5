"""``onnxcore.dask.run``: a model over Dask arrays and data frames, lazily, one session per worker."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd

from onnxcore.dask.frames import ColumnPlan, feeds_from_frame, input_dtype, outputs_to_frame, plan_columns
from onnxcore.dask.meta import (
    OutputMeta,
    batch_chunks,
    check_fixed_axes,
    check_rows,
    chunk_extent,
    fixed_batch,
    output_meta,
    run_rows,
    sample_feeds,
)
from onnxcore.dask.sessions import ModelRef, prepare_model, session_for, spill
from onnxcore.errors import InputError, OnnxCoreError
from onnxcore.runtime import Session
from onnxcore.types import TensorType

__all__ = ["run", "ship"]


_LOCAL = frozenset({"threads", "threading", "processes", "multiprocessing", "sync", "synchronous", "single-threaded"})


def _client(client: Any) -> Any:
    """The distributed client to send the model to: the one given; None (local) for ``client=False`` or a local
    scheduler set in ``dask.config`` (``dask.config.set(scheduler="processes")``); else the default client."""
    if client is False:
        return None
    if client is not None:
        return client
    if dask.config.get("scheduler", None) in _LOCAL:
        return None
    try:
        from distributed import default_client  # lazy: distributed is optional even within the extra
    except ImportError:
        return None
    try:
        return default_client()
    except ValueError:
        return None


def ship(ref: ModelRef, data: bytes | None, client: Any = None) -> Any:
    """Send the model where the tasks will find it, once; return the tasks' payload argument.

    A path: nothing to send (every worker reads the file), payload None. Octets under a distributed client:
    a worker plugin gives them to each worker once, a worker that joins later included (payload None: the
    tasks carry only the hash). Octets under a local scheduler: the path of a file written once (the
    processes scheduler would otherwise pickle the octets into every task).
    """
    if data is None:
        return None
    c = _client(client)
    if c is not None:
        # lazy: the plugin subclasses distributed's WorkerPlugin, loaded only for a distributed client
        from onnxcore.dask.plugin import ModelPlugin, plugin_name

        c.register_plugin(ModelPlugin(ref.key, data), name=plugin_name(ref.key))
        return None
    return spill(ref, data)


def run(
    model: Any,
    inputs: Any,
    *,
    output_names: Sequence[str] | None = None,
    columns: Mapping[str, str | Sequence[str]] | None = None,
    client: Any = None,
    check: bool = True,
    allow_outside: bool = False,
) -> Any:
    """Evaluate ``model`` over Dask collections, lazily: one task per partition, one session per worker.

    Args:
        model: A path every worker can read (weights stay memory-mapped there), the model's octets, an
            onnxcore ``ModelProto`` or an ``onnx.ModelProto``. Octets travel once: to each worker of a
            distributed client (``client``, or the default one) in a worker plugin, or written once to a
            local file for the threaded and processes schedulers.
        inputs: A Dask array (for a model with one input to feed), a dict of them by input name (chunked
            along axis 0 alike; other axes are made one chunk), or a Dask data frame (columns to inputs:
            :mod:`onnxcore.dask.frames`).
        output_names: The outputs to compute; None for all.
        columns: For a data frame: input name to a column or a list of columns (stacked to ``[N, k]``),
            overriding the default matching.
        client: A ``distributed.Client`` to send the model's octets to. By default the current client,
            unless ``dask.config``'s scheduler is a local one; ``False``: the graph is for a local scheduler
            (threads, processes), the octets are written once to a local file.
        check: Validate the model when each worker builds its session.
        allow_outside: For a path: let external data lie outside the model's directory (Clause 15.3).

    The outputs' dtypes, trailing extents and ZipMap keys come from type and shape inference on the client
    (:mod:`onnxcore.dask.meta`; dimension variables kept, an extent inference cannot tell is a chunk of unknown
    size); nothing is computed on the inputs until the result is. A model whose inputs fix their batch on axis 0
    (``[1, 3, 224, 224]``) runs that many rows at a time in each task: an array is re-chunked to whole batches,
    or refused before any task runs when its rows are not a whole number of batches.

    Returns:
        For arrays: a list of Dask arrays, one per output, chunked along axis 0 as the inputs. For a data
        frame: a Dask data frame on the same partitions and index (columns: :mod:`onnxcore.dask.frames`).

    Raises:
        InputError: inputs that do not fit the model (names, element types, columns, fixed extents), naming the
            input and the axis.
        OnnxCoreError: an output that is not one row per input row.
    """
    ref, data, loaded = prepare_model(model, check=check, allow_outside=allow_outside)
    # The client's own session: the declared inputs and outputs, and (rarely) a sample run for an output whose
    # type or rank inference cannot tell.
    local = Session(loaded, check=check)
    names = list(output_names) if output_names is not None else [d.name for d in local.outputs]
    metas = output_meta(loaded, local, names)
    if isinstance(inputs, dd.DataFrame):
        return _run_frame(ref, ship(ref, data, client), local, names, metas, inputs, columns)
    arrays, batch = _as_arrays(local, inputs)
    return _run_arrays(ref, ship(ref, data, client), local, names, metas, arrays, batch)


# ---------------------------------------------------------------------------------------------- arrays


def _as_arrays(session: Session, inputs: Any) -> tuple[dict[str, da.Array], int | None]:
    """The arrays by input name, chunked alike along axis 0 (whole batches for a fixed batch), and that batch."""
    if isinstance(inputs, da.Array):
        needed = [d.name for d in session.inputs if not d.has_default]
        if len(needed) != 1:
            raise InputError(f"one array given, the model has {len(needed)} inputs to feed: pass a dict {needed}")
        inputs = {needed[0]: inputs}
    if not isinstance(inputs, Mapping) or not all(isinstance(v, da.Array) for v in inputs.values()):
        raise InputError("inputs: expected a dask array, a dict of dask arrays or a dask data frame")
    if not inputs:
        raise InputError("inputs: no arrays given")
    known = {d.name for d in session.inputs}
    for name, arr in inputs.items():
        if name not in known:
            raise InputError(f"{name!r} is not an input of the model; inputs: {sorted(known)}")
        want = input_dtype(session, name)
        if want is not None and want.kind != "O" and arr.dtype != want:
            raise InputError(f"input {name!r}: dask array of dtype {arr.dtype} where the model declares {want}")
        if arr.ndim == 0:
            raise InputError(f"input {name!r}: a scalar has no batch axis")
    first = next(iter(inputs.values()))
    for name, arr in inputs.items():
        if arr.shape[0] != first.shape[0]:
            raise InputError(f"input {name!r} has {arr.shape[0]} rows, another input {first.shape[0]}")
        if not any(math.isnan(e) for e in arr.shape):
            check_fixed_axes(session, name, arr.shape)
    batch = fixed_batch(session, inputs)
    rows = first.chunks[0]
    if batch is not None:
        rows = batch_chunks(next(iter(inputs)), rows, batch)
    out: dict[str, da.Array] = {}
    for name, arr in inputs.items():
        out[name] = arr.rechunk((rows, *((-1,) * (arr.ndim - 1))))
    return out, batch


def _sample_run(session: Session, names: list[str], feeds: dict[str, Any], batch: int | None) -> list[Any]:
    try:
        return run_rows(session, names, feeds, batch)
    except OnnxCoreError as e:
        raise OnnxCoreError(f"the model does not run on a sample of zeros of the inputs' types: {e}") from e


def _run_block(
    ref: ModelRef, payload: Any, input_names: tuple[str, ...], names: list[str], batch: int | None, *blocks: Any
) -> Any:
    session = session_for(ref, payload)
    outputs = run_rows(session, names, dict(zip(input_names, blocks)), batch)
    rows = blocks[0].shape[0] if blocks else 0
    for name, value in zip(names, outputs):
        if not isinstance(value, np.ndarray) or value.ndim == 0 or value.shape[0] != rows:
            raise OnnxCoreError(
                f"output {name!r} is not one row per input row ({rows} rows in, "
                f"{getattr(value, 'shape', type(value).__name__)} out); arrays need batched tensor outputs"
            )
    return tuple(outputs)


def _pick(outputs: tuple[Any, ...], k: int) -> Any:
    return outputs[k]


def _array_metas(
    local: Session, names: list[str], metas: list[OutputMeta], arrays: dict[str, da.Array], batch: int | None
) -> list[OutputMeta]:
    """The outputs' metadata, inference's, or for an output it cannot describe a sample run's (one batch of zeros)."""
    first = next(iter(arrays))
    declared = local.inputs
    axis0 = next((d.type.shape.extents[0] for d in declared if d.name == first and _has_rank(d.type)), None)
    check_rows(metas, batch if batch is not None else axis0)
    # A dimension variable of an output that an input also declares after axis 0 takes the array's extent there.
    bound: dict[str, int] = {}
    for d in declared:
        if d.name in arrays and _has_rank(d.type):
            for e, n in zip(d.type.shape.extents[1:], arrays[d.name].shape[1:]):
                if isinstance(e, str) and not math.isnan(n):
                    bound.setdefault(e, int(n))
    metas = [
        OutputMeta(m.name, m.dtype, tuple(bound.get(e, e) if isinstance(e, str) else e for e in m.rest), m.first)
        if m.rest is not None
        else m
        for m in metas
    ]
    if all(m.known and m.keys is None for m in metas):
        return metas
    rows = batch or 2
    feeds = sample_feeds({n: (tuple(a.shape[1:]), a.dtype) for n, a in arrays.items()}, rows)
    probe = _sample_run(local, names, feeds, batch)
    out = []
    for m, value in zip(metas, probe):
        if not isinstance(value, np.ndarray) or value.ndim == 0 or value.shape[0] != rows:
            raise OnnxCoreError(
                f"output {m.name!r} is not one row per input row (on a sample of {rows} rows: "
                f"{getattr(value, 'shape', type(value).__name__)}); arrays need batched tensor outputs"
            )
        out.append(m if m.known and m.keys is None else OutputMeta(m.name, value.dtype, tuple(value.shape[1:]), rows))
    return out


def _has_rank(t: Any) -> bool:
    return isinstance(t, TensorType) and t.shape is not None and len(t.shape.extents) > 0


def _run_arrays(
    ref: ModelRef,
    payload: Any,
    local: Session,
    names: list[str],
    metas: list[OutputMeta],
    arrays: dict[str, da.Array],
    batch: int | None,
) -> list[da.Array]:
    metas = _array_metas(local, names, metas, arrays, batch)
    input_names = tuple(arrays)
    # blockwise names each axis with a letter: "i" the batch axis all inputs share, one letter for each
    # other axis (one chunk each, concatenated).
    letters = iter("abcdefghjklmnopqrstuvwxyz")
    args: list[Any] = []
    for arr in arrays.values():
        args += [arr, "i" + "".join(next(letters) for _ in range(arr.ndim - 1))]
    rows = next(iter(arrays.values())).chunks[0]
    tuples = da.blockwise(
        _run_block,
        "i",
        ref,
        None,
        payload,
        None,
        input_names,
        None,
        names,
        None,
        batch,
        None,
        *args,
        concatenate=True,
        dtype=object,
        meta=np.empty((0,), dtype=object),
        name=f"onnxcore-run-{ref.key[:12]}-{dask.base.tokenize(*arrays.values(), names, batch)}",
    )
    out: list[da.Array] = []
    for k, m in enumerate(metas):
        assert m.rest is not None and m.dtype is not None  # _array_metas made every output known
        ndim = 1 + len(m.rest)
        out.append(
            tuples.map_blocks(
                _pick,
                k,
                new_axis=list(range(1, ndim)),
                chunks=(rows, *((chunk_extent(e),) for e in m.rest)),
                dtype=m.dtype,
                meta=np.empty((0,) * ndim, dtype=m.dtype),
            )
        )
    return out


# ---------------------------------------------------------------------------------------------- frames


def _run_partition(
    frame: pd.DataFrame,
    ref: ModelRef,
    payload: Any,
    plan: ColumnPlan,
    names: list[str],
    meta: pd.DataFrame,
    batch: int | None,
) -> pd.DataFrame:
    if len(frame) == 0:
        return meta.iloc[:0].set_axis(frame.index[:0])
    session = session_for(ref, payload)
    outputs = run_rows(session, names, feeds_from_frame(session, frame, plan), batch)
    result = outputs_to_frame(names, outputs, frame.index)
    if list(result.columns) != list(meta.columns):
        raise OnnxCoreError(
            f"the outputs of a partition give columns {list(result.columns)}, the model's outputs {list(meta.columns)}"
        )
    return result.astype(meta.dtypes.to_dict())


def _frame_meta(
    local: Session,
    names: list[str],
    metas: list[OutputMeta],
    frame: dd.DataFrame,
    plan: ColumnPlan,
    batch: int | None,
) -> pd.DataFrame:
    """The result's empty frame: one synthetic row per output as inference describes it, made into columns as a
    partition's outputs are; a sample run (one batch of the frame's ``meta``) only for an output inference cannot
    describe (its rank, or the trailing extents that name the columns)."""
    rows = batch or 1
    sample = frame._meta_nonempty.iloc[:rows]
    if len(sample) < rows:
        sample = sample.iloc[[k % len(sample) for k in range(rows)]]
    axis0 = None if batch is None else batch
    check_rows(metas, axis0 if axis0 is not None else "")
    synthetic: list[Any] = []
    for m in metas:
        if m.keys is not None:
            synthetic.append([dict.fromkeys(m.keys, np.float32(0))] * rows)
        elif m.known and m.rest is not None and all(isinstance(e, int) for e in m.rest):
            assert m.dtype is not None
            shape = (rows, *(int(e) for e in m.rest if isinstance(e, int)))
            synthetic.append(np.zeros(shape, m.dtype) if m.dtype.kind != "O" else np.full(shape, "", object))
        else:
            synthetic.append(None)
    if any(v is None for v in synthetic):
        for col in sample.columns:
            if not pd.api.types.is_numeric_dtype(sample[col].dtype):
                sample[col] = sample[col].astype(object).where(sample[col].notna(), "")
        probe = _sample_run(local, names, feeds_from_frame(local, sample, plan), batch)
        synthetic = [p if v is None else v for v, p in zip(synthetic, probe)]
    return outputs_to_frame(names, synthetic, sample.index).iloc[:0]


def _run_frame(
    ref: ModelRef,
    payload: Any,
    local: Session,
    names: list[str],
    metas: list[OutputMeta],
    frame: dd.DataFrame,
    columns: Mapping[str, str | Sequence[str]] | None,
) -> dd.DataFrame:
    plan = plan_columns(local, list(frame.columns), columns)
    batch = fixed_batch(local, plan)
    if batch is not None and batch > 1:
        # A partition's length is known only once computed: a batch of 1 fits any, a larger one would be found
        # not to fit only inside a task.
        name = next(n for n in plan if (fixed_batch(local, [n]) or 0) > 1)
        raise InputError(
            f"input {name!r} declares a fixed batch of {batch} rows on axis 0: a data frame's partitions have "
            "lengths unknown before they are computed; feed a dask array (re-chunked to whole batches) instead"
        )
    meta = _frame_meta(local, names, metas, frame, plan, batch)
    return frame.map_partitions(
        _run_partition, ref, payload, plan, names, meta, batch, meta=meta, align_dataframes=False
    )
