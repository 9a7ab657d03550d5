"""What a model's outputs look like per row, and which batches its inputs take, decided on the client before any task.

Output metadata comes from type and shape inference (Clause 9, :func:`onnxcore.infer.infer_both`), not from a run:
each output's element type, its extents after the batch axis (dimension variables kept, an extent inference cannot
tell left unknown: a Dask chunk of unknown size), and for a sequence of maps (ZipMap) its keys, read from the
ZipMap node's labels. Only an output whose rank or type inference cannot tell falls back to running the model on a
sample of zeros of the batch the inputs declare (:func:`sample_feeds`).

Batches: an input whose axis 0 declares a fixed extent ``B`` (many exported CNNs declare 1) takes exactly ``B`` rows
per run. Each task then runs its rows ``B`` at a time (:func:`run_rows`) and joins the results; its rows must be a
whole number of batches: :func:`fixed_batch` finds ``B`` and :func:`batch_chunks` re-chunks an array so that every
chunk is, or refuses (naming the input and the axis) when the rows cannot be cut so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from onnxcore.errors import InputError, OnnxCoreError
from onnxcore.infer import infer_both
from onnxcore.proto.messages import ModelProto
from onnxcore.runtime import Session
from onnxcore.types import ElementType, MapType, SequenceType, TensorType, type_from_proto

__all__ = ["OutputMeta", "batch_chunks", "check_fixed_axes", "fixed_batch", "output_meta", "run_rows", "sample_feeds"]

Extent = int | str | None


@dataclass(frozen=True, slots=True)
class OutputMeta:
    """One output as inference tells it.

    Attributes:
        name: The output's name.
        dtype: The numpy dtype of a tensor output's elements (object for STRING); None when unknown.
        rest: The extents after the batch axis (int, a dimension variable, or None: unknown); None when the rank is
            unknown or the output is not a tensor.
        first: The extent of axis 0 (the batch axis when it matches the inputs').
        keys: For a sequence of maps (ZipMap): its keys in the order of its labels; None otherwise.
        scalar: Whether inference tells a tensor of rank 0 (no batch axis at all).
    """

    name: str
    dtype: np.dtype[Any] | None
    rest: tuple[Extent, ...] | None
    first: Extent = None
    keys: tuple[Any, ...] | None = None
    scalar: bool = False

    @property
    def known(self) -> bool:
        """Whether inference tells enough to make the output's Dask metadata (type, and rank or map keys)."""
        return self.keys is not None or (self.dtype is not None and self.rest is not None)


def _declared_extents(session: Session, name: str) -> tuple[Extent, ...] | None:
    desc = next(d for d in session.inputs if d.name == name)
    t = desc.type
    if not isinstance(t, TensorType) or t.shape is None:
        return None
    return tuple(t.shape.extents)


def fixed_batch(session: Session, names: Iterable[str]) -> int | None:
    """The fixed extent the fed inputs declare on axis 0 (their batch axis), or None when none fixes it.

    Raises:
        InputError: two inputs fixing different extents, or an extent below 1.
    """
    found: tuple[str, int] | None = None
    for name in names:
        ext = _declared_extents(session, name)
        if not ext or not isinstance(ext[0], int):
            continue
        if ext[0] < 1:
            raise InputError(f"input {name!r} declares {ext[0]} rows on axis 0: nothing to run in batches")
        if found is not None and found[1] != ext[0]:
            raise InputError(
                f"input {name!r} declares {ext[0]} rows on axis 0, input {found[0]!r} {found[1]}: no common batch"
            )
        found = (name, ext[0])
    return None if found is None else found[1]


def check_fixed_axes(session: Session, name: str, shape: Sequence[int]) -> None:
    """Refuse, before any task runs, an array whose extents after axis 0 contradict the input's declaration.

    Raises:
        InputError: a rank or a fixed extent that differs, naming the input and the axis.
    """
    ext = _declared_extents(session, name)
    if ext is None:
        return
    if len(ext) != len(shape):
        raise InputError(f"input {name!r}: an array of rank {len(shape)} where the model declares rank {len(ext)}")
    for axis in range(1, len(ext)):
        want = ext[axis]
        if isinstance(want, int) and shape[axis] != want:
            raise InputError(
                f"input {name!r}: extent {shape[axis]} on axis {axis} where the model declares {want}; "
                "only axis 0 is cut into chunks"
            )


def batch_chunks(name: str, chunks: tuple[int, ...], batch: int) -> tuple[int, ...]:
    """Row chunks for an input of fixed batch ``batch``: ``chunks`` when each is a whole number of batches, else
    chunks of as many whole batches as the first chunk holds (at least one).

    Raises:
        InputError: the rows are not a whole number of batches, naming the input and axis 0.
    """
    if all(c % batch == 0 for c in chunks):
        return chunks
    rows = sum(chunks)
    if rows % batch:
        raise InputError(
            f"input {name!r} declares a fixed batch of {batch} rows on axis 0, the array has {rows} rows: "
            f"not a whole number of batches (cut or pad the rows to a multiple of {batch})"
        )
    per = max(batch, (chunks[0] // batch) * batch)
    full, last = divmod(rows, per)
    return (per,) * full + ((last,) if last else ())


def run_rows(session: Session, names: list[str], feeds: Mapping[str, Any], batch: int | None) -> list[Any]:
    """``session.run`` of ``feeds``, ``batch`` rows at a time when the model fixes its batch, results joined by row.

    Raises:
        OnnxCoreError: rows that are not a whole number of batches, or an output that is not one row per input row.
    """
    if batch is None:
        return list(session.run(names, dict(feeds)))
    rows = len(next(iter(feeds.values())))
    if rows % batch:
        raise OnnxCoreError(f"{rows} rows are not a whole number of the model's fixed batch of {batch} rows")
    if rows == batch:
        return list(session.run(names, dict(feeds)))
    parts = [
        session.run(names, {n: v[start : start + batch] for n, v in feeds.items()}) for start in range(0, rows, batch)
    ]
    joined: list[Any] = []
    for k, name in enumerate(names):
        pieces = [p[k] for p in parts]
        if all(isinstance(p, list) for p in pieces):
            joined.append([item for p in pieces for item in p])
        elif all(isinstance(p, np.ndarray) and p.ndim > 0 and p.shape[0] == batch for p in pieces):
            joined.append(np.concatenate(pieces, axis=0))
        else:
            raise OnnxCoreError(f"output {name!r} is not one row per input row of the model's batch of {batch}")
    return joined


def _zipmap_keys(model: ModelProto, name: str) -> tuple[Any, ...] | None:
    graph = model.graph
    if graph is None:
        return None
    for node in graph.node:
        if node.op_type == "ZipMap" and node.domain == "ai.onnx.ml" and name in node.output:
            for a in node.attribute:
                if a.name == "classlabels_strings" and len(a.strings):
                    return tuple(bytes(s).decode("utf-8", "surrogateescape") for s in a.strings)
                if a.name == "classlabels_int64s" and len(a.ints):
                    return tuple(int(v) for v in a.ints)
    return None


def output_meta(model: ModelProto, session: Session, names: Sequence[str]) -> list[OutputMeta]:
    """Each output of ``names`` as type and shape inference describe it (module docstring)."""
    types, shapes = infer_both(model)
    declared = {d.name: d.type_proto for d in session.outputs}
    known = types.types().get("graph", {})
    out: list[OutputMeta] = []
    for name in names:
        tp = known.get(name) or declared.get(name)
        vt = type_from_proto(tp) if tp is not None else None
        if isinstance(vt, SequenceType) and isinstance(vt.elem, MapType):
            out.append(OutputMeta(name, None, None, None, _zipmap_keys(model, name)))
            continue
        if not isinstance(vt, TensorType) or vt.elem_type is None:
            out.append(OutputMeta(name, None, None))
            continue
        dtype = np.dtype(object) if vt.elem_type == ElementType.STRING else np.dtype(vt.elem_type.np_dtype)
        shape = shapes.shape(name)
        if shape is None or len(shape) == 0:
            out.append(OutputMeta(name, dtype, None, None, scalar=shape is not None))
            continue
        out.append(OutputMeta(name, dtype, tuple(shape[1:]), shape[0]))
    return out


def check_rows(metas: Sequence[OutputMeta], batch_axis: Extent) -> None:
    """Refuse an output whose axis 0 is known not to be one row per input row (``batch_axis``: the inputs').

    Raises:
        OnnxCoreError: a scalar output, or a fixed axis 0 that is not the inputs' batch.
    """
    for m in metas:
        if m.scalar:
            raise OnnxCoreError(f"output {m.name!r} is a scalar: not one row per input row")
        first = m.first
        if isinstance(first, int) and first != batch_axis:
            raise OnnxCoreError(
                f"output {m.name!r} has {first} rows on axis 0 whatever the input's rows (inferred): not one row per "
                "input row; arrays and data frames need batched outputs"
            )


def sample_feeds(shapes: Mapping[str, tuple[tuple[int, ...], np.dtype[Any]]], rows: int) -> dict[str, np.ndarray]:
    """Zeros (empty strings) of ``rows`` rows for each input: a sample for the outputs inference cannot describe."""
    return {
        n: np.zeros((rows, *rest), dtype=dt) if dt.kind != "O" else np.full((rows, *rest), "", object)
        for n, (rest, dt) in shapes.items()
    }


def chunk_extent(e: Extent) -> float:
    """A trailing extent as a Dask chunk: the extent, or NaN (unknown until computed)."""
    return e if isinstance(e, int) else math.nan
