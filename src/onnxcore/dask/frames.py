"""Tables in, tables out: which columns feed which model input, and how outputs become columns.

Columns to inputs (:func:`plan_columns`, decided once on the client, before any task runs):

1. ``columns=`` given by the caller wins: an input name mapped to a column name or a list of them.
2. An input with a column of its own name takes that column: as ``[N]`` for a rank-1 input, as ``[N, 1]``
   for a rank-2 input (skl2onnx's layout for a data frame, one input per column).
3. When exactly one input is left, it takes every column no input took, in the table's order, stacked
   to ``[N, k]`` (skl2onnx's layout for a matrix ``X``); a fixed declared ``k`` must match.

Values are converted to the input's element type: numbers with numpy's cast (a float64 column feeds a
float32 input, as scikit-learn's converters declare), text as UTF-8 strings.

Outputs to columns (:func:`outputs_to_frame`): a tensor ``[N]`` or ``[N, 1]`` is the column named as the
output; ``[N, k]`` is ``k`` columns ``name_0 ... name_{k-1}``; a sequence of ``N`` maps (ZipMap) is a
column ``name_KEY`` per key; STRING values are ``str``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from onnxcore.errors import InputError, OnnxCoreError
from onnxcore.runtime import Session
from onnxcore.types import ElementType, TensorType

__all__ = ["ColumnPlan", "feeds_from_frame", "input_dtype", "outputs_to_frame", "plan_columns"]

# input name -> a column (fed as [N] or [N, 1] by the input's rank) or a list of columns (stacked to [N, k])
ColumnPlan = dict[str, "str | list[str]"]


def input_dtype(session: Session, name: str) -> np.dtype[Any] | None:
    """The numpy dtype the input declares (object for STRING), or None when undeclared."""
    desc = next(d for d in session.inputs if d.name == name)
    t = desc.type
    if not isinstance(t, TensorType) or t.elem_type is None:
        return None
    if t.elem_type == ElementType.STRING:
        return np.dtype(object)
    return np.dtype(t.elem_type.np_dtype)


def _extents(session: Session, name: str) -> tuple[Any, ...] | None:
    desc = next(d for d in session.inputs if d.name == name)
    t = desc.type
    if not isinstance(t, TensorType) or t.shape is None:
        return None
    return t.shape.extents


def plan_columns(session: Session, names: Sequence[str], columns: Mapping[str, Any] | None = None) -> ColumnPlan:
    """Which columns feed each input the caller must feed (module docstring: rules 1-3).

    Raises:
        InputError: a named column is missing, an input is left without columns, or a stacked width
            contradicts the declared one.
    """
    needed = [d.name for d in session.inputs if not d.has_default]
    known = list(names)
    plan: ColumnPlan = {}
    for name, cols in (columns or {}).items():
        if name not in {d.name for d in session.inputs}:
            raise InputError(f"columns: the model has no input {name!r}; inputs: {needed}")
        listed = [cols] if isinstance(cols, str) else list(cols)
        missing = [c for c in listed if c not in known]
        if missing:
            raise InputError(f"columns: {missing} are not columns of the table; columns: {known}")
        plan[name] = cols if isinstance(cols, str) else listed
    for name in needed:
        if name not in plan and name in known:
            plan[name] = name
    left = [n for n in needed if n not in plan]
    used = {c for v in plan.values() for c in ([v] if isinstance(v, str) else v)}
    rest = [c for c in known if c not in used]
    if len(left) == 1 and rest:
        plan[left[0]] = rest
        left = []
    if left:
        raise InputError(
            f"inputs {left} have no columns: name a column after each, or pass columns={{input: [column, ...]}}; "
            f"columns not used: {rest}"
        )
    for name, cols in plan.items():
        ext = _extents(session, name)
        if ext is None:
            continue
        if isinstance(cols, list):
            if len(ext) != 2:
                raise InputError(f"input {name!r} has rank {len(ext)}: {len(cols)} columns stack to rank 2 only")
            if isinstance(ext[1], int) and ext[1] != len(cols):
                raise InputError(
                    f"input {name!r} declares {ext[1]} features, the table gives {len(cols)} columns: {cols}"
                )
        elif len(ext) not in (1, 2) or (len(ext) == 2 and isinstance(ext[1], int) and ext[1] != 1):
            raise InputError(f"input {name!r} has shape {list(ext)}: a single column feeds [N] or [N, 1] only")
    return plan


def _column_values(series: pd.Series, dtype: np.dtype[Any] | None, where: str) -> np.ndarray:
    if dtype is not None and dtype.kind == "O":
        values = series.to_numpy(dtype=object, na_value="")
        return np.array([v if isinstance(v, str | bytes) else str(v) for v in values], dtype=object)
    try:
        return series.to_numpy(dtype=dtype) if dtype is not None else series.to_numpy()
    except (TypeError, ValueError) as e:
        what = f"column {series.name!r} of dtype {series.dtype}"
        raise InputError(f"{where}: {what} does not convert to {dtype}: {e}") from None


def feeds_from_frame(session: Session, frame: pd.DataFrame, plan: ColumnPlan) -> dict[str, np.ndarray]:
    """The feeds of one partition, by the plan of :func:`plan_columns`."""
    feeds: dict[str, np.ndarray] = {}
    for name, cols in plan.items():
        dtype = input_dtype(session, name)
        where = f"input {name!r}"
        if isinstance(cols, str):
            value = _column_values(frame[cols], dtype, where)
            ext = _extents(session, name)
            feeds[name] = value.reshape(-1, 1) if ext is not None and len(ext) == 2 else value
        else:
            parts = [_column_values(frame[c], dtype, where) for c in cols]
            feeds[name] = np.stack(parts, axis=1) if parts else np.empty((len(frame), 0), dtype or np.float32)
    return feeds


def _as_column(value: np.ndarray) -> Any:
    if value.dtype == object:
        return [v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else v for v in value]
    return value


def outputs_to_frame(names: Sequence[str], outputs: Sequence[Any], index: Any) -> pd.DataFrame:
    """The outputs of one partition as a data frame on ``index`` (module docstring for the columns).

    Raises:
        OnnxCoreError: an output that is neither a tensor of ``N`` rows nor a sequence of ``N`` maps.
    """
    n = len(index)
    data: dict[str, Any] = {}
    for name, value in zip(names, outputs):
        if isinstance(value, np.ndarray):
            if value.ndim == 0 or value.shape[0] != n:
                raise OnnxCoreError(f"output {name!r} has shape {list(value.shape)}: not one row per input row ({n})")
            if value.ndim == 1 or (value.ndim == 2 and value.shape[1] == 1):
                data[name] = _as_column(value.reshape(n))
            else:
                flat = value.reshape(n, -1)
                for j in range(flat.shape[1]):
                    data[f"{name}_{j}"] = _as_column(flat[:, j])
        elif isinstance(value, list) and len(value) == n and all(isinstance(m, dict) for m in value):
            keys = list(value[0]) if value else []
            for key in keys:
                label = key.decode("utf-8", "surrogateescape") if isinstance(key, bytes) else key
                col = np.array([m[key] for m in value])
                data[f"{name}_{label}"] = col.astype(np.float32) if col.dtype == np.float64 else col
        else:
            raise OnnxCoreError(
                f"output {name!r} is a {type(value).__name__}: only tensors and sequences of maps become columns"
            )
    return pd.DataFrame(data, index=index)
