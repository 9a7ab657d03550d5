"""``onnxcore.dask.run``: a model over Dask arrays and data frames, lazily, one session per worker."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd

from onnxcore.dask.frames import ColumnPlan, feeds_from_frame, input_dtype, outputs_to_frame, plan_columns
from onnxcore.dask.sessions import ModelRef, prepare_model, session_for, spill
from onnxcore.errors import InputError, OnnxCoreError
from onnxcore.runtime import Session

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

    The client builds a session of its own too, for a run on two rows of zeros (arrays) or of the frame's
    ``meta`` (data frames) that gives the outputs' dtypes, trailing shapes and ZipMap keys; nothing is computed
    on the inputs until the result is.

    Returns:
        For arrays: a list of Dask arrays, one per output, chunked along axis 0 as the inputs. For a data
        frame: a Dask data frame on the same partitions and index (columns: :mod:`onnxcore.dask.frames`).

    Raises:
        InputError: inputs that do not fit the model (names, element types, columns).
        OnnxCoreError: an output that is not one row per input row.
    """
    ref, data, loaded = prepare_model(model, check=check, allow_outside=allow_outside)
    # The client's own session: a two-row sample run gives the outputs' dtypes and per-row shapes (meta).
    local = Session(loaded, check=check)
    names = list(output_names) if output_names is not None else [d.name for d in local.outputs]
    if isinstance(inputs, dd.DataFrame):
        return _run_frame(ref, ship(ref, data, client), local, names, inputs, columns)
    arrays = _as_arrays(local, inputs)
    return _run_arrays(ref, ship(ref, data, client), local, names, arrays)


# ---------------------------------------------------------------------------------------------- arrays


def _as_arrays(session: Session, inputs: Any) -> dict[str, da.Array]:
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
    rows = first.chunks[0]
    out: dict[str, da.Array] = {}
    for name, arr in inputs.items():
        if arr.shape[0] != first.shape[0]:
            raise InputError(f"input {name!r} has {arr.shape[0]} rows, another input {first.shape[0]}")
        out[name] = arr.rechunk((rows, *((-1,) * (arr.ndim - 1))))
    return out


def _sample_run(session: Session, names: list[str], feeds: dict[str, Any]) -> list[Any]:
    try:
        return list(session.run(names, feeds))
    except OnnxCoreError as e:
        raise OnnxCoreError(f"the model does not run on a two-row sample of the inputs' types: {e}") from e


def _run_block(ref: ModelRef, payload: Any, input_names: tuple[str, ...], names: list[str], *blocks: Any) -> Any:
    session = session_for(ref, payload)
    return tuple(session.run(names, dict(zip(input_names, blocks))))


def _pick(outputs: tuple[Any, ...], k: int) -> Any:
    return outputs[k]


def _run_arrays(
    ref: ModelRef, payload: Any, local: Session, names: list[str], arrays: dict[str, da.Array]
) -> list[da.Array]:
    sample = {
        n: np.zeros((2, *a.shape[1:]), dtype=a.dtype) if a.dtype != object else np.full((2, *a.shape[1:]), "", object)
        for n, a in arrays.items()
    }
    probe = _sample_run(local, names, sample)
    for name, value in zip(names, probe):
        if not isinstance(value, np.ndarray) or value.ndim == 0 or value.shape[0] != 2:
            raise OnnxCoreError(
                f"output {name!r} is not one row per input row (on a two-row sample: "
                f"{getattr(value, 'shape', type(value).__name__)}); arrays need batched tensor outputs"
            )
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
        *args,
        concatenate=True,
        dtype=object,
        meta=np.empty((0,), dtype=object),
        name=f"onnxcore-run-{ref.key[:12]}-{dask.base.tokenize(*arrays.values(), names)}",
    )
    out: list[da.Array] = []
    for k, value in enumerate(probe):
        rest = value.shape[1:]
        out.append(
            tuples.map_blocks(
                _pick,
                k,
                new_axis=list(range(1, 1 + len(rest))),
                chunks=(rows, *((e,) for e in rest)),
                dtype=value.dtype,
                meta=np.empty((0,) * value.ndim, dtype=value.dtype),
            )
        )
    return out


# ---------------------------------------------------------------------------------------------- frames


def _run_partition(
    frame: pd.DataFrame, ref: ModelRef, payload: Any, plan: ColumnPlan, names: list[str], meta: pd.DataFrame
) -> pd.DataFrame:
    if len(frame) == 0:
        return meta.iloc[:0].set_axis(frame.index[:0])
    session = session_for(ref, payload)
    outputs = session.run(names, feeds_from_frame(session, frame, plan))
    result = outputs_to_frame(names, outputs, frame.index)
    if list(result.columns) != list(meta.columns):
        raise OnnxCoreError(
            f"the outputs of a partition give columns {list(result.columns)}, the sample gave {list(meta.columns)}"
        )
    return result.astype(meta.dtypes.to_dict())


def _run_frame(
    ref: ModelRef,
    payload: Any,
    local: Session,
    names: list[str],
    frame: dd.DataFrame,
    columns: Mapping[str, str | Sequence[str]] | None,
) -> dd.DataFrame:
    plan = plan_columns(local, list(frame.columns), columns)
    sample = frame._meta_nonempty.iloc[:2]
    for col in sample.columns:
        if not pd.api.types.is_numeric_dtype(sample[col].dtype):
            sample[col] = sample[col].astype(object).where(sample[col].notna(), "")
    probe = _sample_run(local, names, feeds_from_frame(local, sample, plan))
    meta = outputs_to_frame(names, probe, sample.index).iloc[:0]
    return frame.map_partitions(_run_partition, ref, payload, plan, names, meta, meta=meta, align_dataframes=False)
