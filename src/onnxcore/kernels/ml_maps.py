"""Operators of the ``ai.onnx.ml`` domain (ONNX 1-2 operator definitions) on maps: CastMap, DictVectorizer,
FeatureVectorizer and ZipMap (split from :mod:`onnxcore.kernels.ml` by concern).

Runtime values (Clause 6.8): a map is a ``dict`` (STRING keys as ``bytes``, integral keys as ``int``, values as
0-d values: 0-d arrays, or numpy scalars as ZipMap makes them), a sequence a ``list``, a STRING tensor an object
array of ``bytes``.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels._ml_common import as_rows, encode_strings, string_array
from onnxcore.kernels.ml import lookup_table
from onnxcore.kernels.registry import KernelContext, kernel

__all__ = ["ScoreMaps"]

ML = "ai.onnx.ml"
_F32 = np.dtype(np.float32)


# ---------------------------------------------------------------------------------------------
# Maps and vectors: CastMap, DictVectorizer, FeatureVectorizer, ZipMap
# ---------------------------------------------------------------------------------------------


def _map_items(m: Any, name: str) -> tuple[list[Any], list[Any]]:
    if not isinstance(m, dict):
        raise EvaluationError(f"{name}: input must be a map, got {type(m).__name__}")
    keys = list(m.keys())
    vals = [np.asarray(v).reshape(()) if np.asarray(v).size == 1 else np.asarray(v) for v in m.values()]
    for v in vals:
        if v.shape != ():
            raise EvaluationError(f"{name}: map values must be single elements")
    return keys, [v.item() for v in vals]


def _to_str_bytes(v: Any) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    # Numbers print as C's "%f" does (six decimals), as onnxruntime's CastMap writes them.
    return f"{float(v):f}".encode() if isinstance(v, float | np.floating) else str(v).encode()


@kernel("CastMap", 1, domain=ML)
def cast_map(x: Any, *, cast_to: str = "TO_FLOAT", map_form: str = "DENSE", max_map: int = 1) -> np.ndarray:
    """The map's values in ascending key order as a ``[1, K]`` tensor (SPARSE: ``[1, max_map]`` indexed by key)."""
    keys, vals = _map_items(x, "CastMap")
    try:
        k = np.asarray([int(kk) for kk in keys], dtype=np.int64)
    except (TypeError, ValueError):
        raise EvaluationError("CastMap: the map keys must be int64") from None
    order = np.argsort(k, kind="stable")
    k = k[order]
    vals = [vals[i] for i in order]
    out: np.ndarray
    if cast_to == "TO_FLOAT":
        try:
            conv: np.ndarray = np.asarray([float(v) for v in vals], dtype=np.float32)
        except ValueError:
            raise EvaluationError("CastMap: a value does not convert to float") from None
        fill: Any = 0.0
    elif cast_to == "TO_INT64":
        try:
            conv = np.asarray([int(float(v)) for v in vals], dtype=np.int64)
        except (ValueError, OverflowError):
            raise EvaluationError("CastMap: a value does not convert to int64") from None
        fill = 0
    elif cast_to == "TO_STRING":
        conv = string_array([_to_str_bytes(v) for v in vals])
        fill = b"0"
    else:
        raise EvaluationError(f"CastMap: cast_to must be TO_FLOAT, TO_STRING or TO_INT64, got {cast_to!r}")
    if map_form == "DENSE":
        return conv.reshape(1, -1)
    if map_form != "SPARSE":
        raise EvaluationError(f"CastMap: map_form must be DENSE or SPARSE, got {map_form!r}")
    if k.size and (k.min() < 0 or k.max() >= max_map):
        raise EvaluationError(f"CastMap: a key is outside [0, max_map={max_map})")
    out = np.empty((max_map,), dtype=conv.dtype)
    out[...] = fill
    out[k] = conv
    return out.reshape(1, -1)


@kernel("DictVectorizer", 1, domain=ML, context=True)
def dict_vectorizer(
    ctx: KernelContext,
    x: Any,
    *,
    int64_vocabulary: list[int] | None = None,
    string_vocabulary: list[str] | None = None,
) -> np.ndarray:
    """A ``[1, V]`` tensor with the map's value of each vocabulary entry (zero where the map lacks it)."""
    keys, vals = _map_items(x, "DictVectorizer")
    if string_vocabulary:
        vocab: np.ndarray = string_array(encode_strings(string_vocabulary))
        karr: np.ndarray = string_array([_to_str_bytes(kk) for kk in keys])
    elif int64_vocabulary:
        vocab = np.asarray(int64_vocabulary, dtype=np.int64)
        karr = np.asarray([int(kk) for kk in keys], dtype=np.int64)
    else:
        raise EvaluationError("DictVectorizer: a vocabulary attribute is required")
    dtype = _map_value_dtype(ctx, vals)
    is_str = dtype is object
    out = string_array([b""] * vocab.size) if is_str else np.zeros((vocab.size,), dtype=dtype)
    if karr.size:
        pos = lookup_table(vocab, np.arange(vocab.size, dtype=np.int64), karr, np.int64(-1))
        if is_str:
            varr: np.ndarray = string_array([_to_str_bytes(v) for v in vals])
        else:
            varr = np.asarray(vals, dtype=dtype)
        ok = pos >= 0
        out[pos[ok]] = varr[ok]
    return out.reshape(1, -1)


def _map_value_dtype(ctx: KernelContext, vals: list[Any]) -> Any:
    types = ctx.input_types if ctx is not None else None
    t = types[0] if types else None
    if t is not None:
        try:
            elem = t.map_type.value_type.tensor_type.elem_type
        except AttributeError:
            elem = 0
        table = {1: np.float32, 11: np.float64, 7: np.int64, 8: object}
        if elem in table:
            return table[elem]
    if vals and isinstance(vals[0], bytes | str):
        return object
    if vals and isinstance(vals[0], int | np.integer) and not isinstance(vals[0], bool):
        return np.int64
    return np.float32


@kernel("FeatureVectorizer", 1, domain=ML)
def feature_vectorizer(*xs: np.ndarray, inputdimensions: list[int] | None = None) -> np.ndarray:
    """Concatenate the inputs (each ``[N, C_i]``, 1-D as ``[1, C]``) along axis 1 as float32.

    Each input contributes ``inputdimensions[i]`` columns: extra columns are dropped, missing ones are 0.
    """
    if not xs:
        raise EvaluationError("FeatureVectorizer: at least one input is required")
    rows = [np.asarray(a).reshape(1, -1) if np.asarray(a).ndim <= 1 else np.asarray(a) for a in xs]
    rows = [r.reshape(r.shape[0], -1) for r in rows]
    n = rows[0].shape[0]
    if any(r.shape[0] != n for r in rows):
        raise EvaluationError(f"FeatureVectorizer: inputs have different batch sizes {[r.shape[0] for r in rows]}")
    dims = list(inputdimensions) if inputdimensions else [r.shape[1] for r in rows]
    if len(dims) != len(rows):
        raise EvaluationError(f"FeatureVectorizer: {len(dims)} inputdimensions for {len(rows)} inputs")
    out = np.zeros((n, int(sum(dims))), dtype=np.float32)
    col = 0
    for r, d in zip(rows, dims, strict=True):
        take = min(int(d), r.shape[1])
        out[:, col : col + take] = r[:, :take]
        col += int(d)
    return out


class ScoreMaps(list):
    """ZipMap's output: a list of maps, one per row, read as any sequence of maps is; it also keeps the labels and
    the ``[rows, labels]`` float32 scores it was made from, so that a caller that wants Python numbers (the
    onnxruntime API) converts them in one pass instead of one call per cell. A caller that changes the list or its
    maps should not read ``scores`` after."""

    __slots__ = ("labels", "scores")

    labels: list[Any]
    scores: np.ndarray


class _ZipMap:
    """ZipMap's labels converted once (a session prepares one per node; a direct call makes one per call); a call
    makes its cells and maps by C-level passes (``map``) rather than a Python loop per cell.

    Each map value is a float32 0-d value in numpy's scalar form (``numpy.float32``: shape ``()``, its own value,
    immutable), made by iterating the scores in C: a 0-d array view per cell costs three times as much (1,000
    rows of three classes: 230 us against 70), and an immutable cell cannot be changed through another."""

    __slots__ = ("labels",)

    def __init__(
        self, *, classlabels_int64s: list[int] | None = None, classlabels_strings: list[str] | None = None
    ) -> None:
        if classlabels_strings:
            self.labels: list[Any] = encode_strings(classlabels_strings)
        elif classlabels_int64s:
            self.labels = [int(v) for v in classlabels_int64s]
        else:
            raise EvaluationError("ZipMap: one of classlabels_int64s and classlabels_strings is required")

    def __call__(self, x: np.ndarray) -> list[dict[Any, np.float32]]:
        labels = self.labels
        if type(x) is np.ndarray and x.ndim == 2 and x.dtype is _F32 and x.shape[1] == len(labels):
            # A classifier's float32 scores (the common case): the copy below without the conversions that leave
            # them as they are (1 row: 2.6 -> 1.9 us)
            scores = x.copy()
        else:
            rows = as_rows(np.asarray(x, dtype=np.float32))
            if rows.shape[1] != len(labels):
                raise EvaluationError(f"ZipMap: X has {rows.shape[1]} columns for {len(labels)} labels")
            scores = np.array(rows, dtype=np.float32, order="C")  # (a copy: the scores the maps were made from)
        cells = iter(scores.ravel())  # numpy.float32 scalars, one per cell, made as they are taken
        n = scores.shape[0]
        if n == 1:
            out = ScoreMaps((dict(zip(labels, cells)),))  # (one map: without the two maps' iterators)
        else:
            # one dict per row of the next len(labels) cells (zip stops at the last label, before taking a cell more)
            out = ScoreMaps(map(dict, map(zip, repeat(labels, n), repeat(cells, n))))
        out.labels, out.scores = labels, scores
        return out


@kernel("ZipMap", 1, domain=ML, prepare=_ZipMap)
def zip_map(
    x: np.ndarray, *, classlabels_int64s: list[int] | None = None, classlabels_strings: list[str] | None = None
) -> list[dict[Any, np.float32]]:
    """One map per row of ``X``: class label -> the row's score in that label's column."""
    return _ZipMap(classlabels_int64s=classlabels_int64s, classlabels_strings=classlabels_strings)(x)
