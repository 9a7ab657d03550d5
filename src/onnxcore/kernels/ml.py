"""Operators of the ``ai.onnx.ml`` domain (ONNX 1-2 operator definitions): the feature transforms and encoders.

ArrayFeatureExtractor, Binarizer, CategoryMapper, Imputer, LabelEncoder (1, 2, 4), Normalizer, OneHotEncoder and
Scaler live here; the operators of maps (CastMap, DictVectorizer, FeatureVectorizer, ZipMap) in
:mod:`onnxcore.kernels.ml_maps`; the score post-transforms they share with the classifiers and regressors of
:mod:`onnxcore.kernels.ml_linear` and :mod:`onnxcore.kernels.ml_tree` are in :mod:`onnxcore.kernels._ml_common`
(also reached here).

Runtime values (Clause 6.8): a sequence is a ``list``, a STRING tensor an object array of ``bytes``. STRINGS
attributes arrive as ``list[str]`` and are encoded to UTF-8 where they meet tensor elements.

Where the definitions leave a detail open (the shapes of 1-D inputs, the fill of sparse CastMap
output, the row-wise Normalizer), the kernels do what the reference runtimes agree on; the tests
compare them with onnxruntime.
"""

from __future__ import annotations

import contextlib
import math
from itertools import repeat
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels import accel
from onnxcore.kernels._ml_common import (
    NARROW,
    POST_TRANSFORMS,
    again_rows,
    as_rows,
    check_post_transform,
    encode_strings,
    max_of_row,
    post_transform_rows,
    probit,
    row_max,
    row_sum,
    sigmoid,
    softmax_rows,
    string_array,
    sum_of_row,
)
from onnxcore.kernels.registry import kernel

# (the shared helpers are also reached here, where the classifiers' modules and the tests have read them)
__all__ = [
    "POST_TRANSFORMS",
    "as_rows",
    "check_post_transform",
    "encode_strings",
    "post_transform_rows",
    "probit",
    "sigmoid",
    "softmax_rows",
    "string_array",
]

ML = "ai.onnx.ml"


_FEW_LOOKUPS = 32  # up to this many elements a numeric Lookup reads its dict (Lookup's docstring)


class Lookup:
    """``keys -> values`` prepared once, for the encoders' look-ups (a session prepares one per node).

    STRING keys (``bytes``) go into a dict: one hash look-up per element, where sorting object arrays and
    searching them compared Python objects ``log n`` times per element, and sorted the keys on every call.
    Numeric keys are sorted once and searched with ``searchsorted``; a few elements (a row's leaf of each tree of
    an isolation forest) are looked up in a dict of the same keys instead, one call rather than the search's eight
    numpy calls (8 -> 1.5 us). A NaN key matches every NaN element. When a key repeats, the last occurrence wins.
    """

    __slots__ = ("_aliased", "_few", "_nan", "_table", "_uk", "_uv", "values")

    def __init__(self, keys: np.ndarray, values: np.ndarray) -> None:
        keys = np.asarray(keys)
        self.values = values = np.asarray(values)
        self._table: dict[Any, Any] | None = None
        self._aliased = False
        self._nan: Any = None
        self._uk = self._uv = keys[:0]
        if keys.dtype == object:
            table = dict(zip(keys.tolist(), values.tolist(), strict=True))  # later keys overwrite: last wins
            if all(type(k) is bytes for k in table):
                # Each key also as the str it decodes to, so that a str element finds what its UTF-8 encoding
                # would (see :meth:`strings`); a key that is no UTF-8 text equals no encoded str.
                for k, v in list(table.items()):
                    with contextlib.suppress(UnicodeDecodeError):
                        table[k.decode("utf-8")] = v
                self._aliased = True
            self._table = table
            return
        if keys.dtype.kind == "f":
            nan_mask = np.isnan(keys)
            if nan_mask.any():
                self._nan = values[np.flatnonzero(nan_mask)[-1]]
                keys, values = keys[~nan_mask], values[~nan_mask]
        if keys.size:
            # Last occurrence wins: unique over the reversed keys keeps the first of each, i.e. the last.
            self._uk, first = np.unique(keys[::-1], return_index=True)
            self._uv = values[::-1][first]
        # The same keys as Python numbers, for a few elements: equal numbers are equal keys (0.0 and -0.0 too, as
        # in the search); numeric values only (their Python numbers go back into the values' type exactly).
        self._few: dict[Any, Any] | None = None
        if keys.dtype.kind in "biuf" and values.dtype.kind in "biuf":
            self._few = dict(zip(self._uk.tolist(), self._uv.tolist(), strict=True))

    def strings(self, x: np.ndarray, default: Any) -> np.ndarray:
        """Every element of a STRING tensor mapped as its ``bytes`` (a ``str`` as its UTF-8 encoding), without
        converting the tensor first when the keys are all ``bytes`` (their ``str`` aliases match a ``str``
        element directly; a session's STRING values are ``bytes`` already)."""
        if self._aliased:
            try:
                return self(x, default)
            except EvaluationError:
                pass  # an element that is neither (a bytearray, ...): converted as below
        return self(_as_bytes_array(x), default)

    def __call__(self, x: np.ndarray, default: Any) -> np.ndarray:
        """Every element of ``x`` mapped (``default`` where its key is absent), in ``x``'s shape."""
        x = np.asarray(x)
        dtype = self.values.dtype
        if self._table is not None:
            get = self._table.get
            flat = x.ravel().tolist()
            looked = map(get, flat, repeat(default, len(flat)))  # one C-level pass of dict look-ups
            try:
                if dtype.kind == "O":
                    out = np.empty(len(flat), dtype=object)
                    out[:] = list(looked)
                    return out.reshape(x.shape)
                # (fromiter: the numbers straight into the array, no list of them first)
                return np.fromiter(looked, dtype=dtype, count=len(flat)).reshape(x.shape)
            except TypeError:
                raise EvaluationError("input elements are not comparable with the keys") from None
        few = self._few
        if few is not None and x.size <= _FEW_LOOKUPS and x.dtype.kind in "biu":
            # (integer elements only: a NaN element, which the dict cannot find, takes the search below)
            flat = x.ravel().tolist()
            return np.array([few.get(v, default) for v in flat], dtype=dtype).reshape(x.shape)
        out = np.empty(x.shape, dtype=dtype)
        out[...] = default
        if x.size == 0:
            return out
        uk = self._uk
        if uk.size:
            flat = x.ravel()
            try:
                pos = np.searchsorted(uk, flat)
            except TypeError:
                raise EvaluationError("input elements are not comparable with the keys") from None
            pos = np.minimum(pos, uk.size - 1)
            hit = uk[pos] == flat
            res = out.reshape(-1)
            res[hit] = self._uv[pos[hit]]
        if self._nan is not None and x.dtype.kind == "f":
            out[np.isnan(x)] = self._nan
        return out


def lookup_table(keys: np.ndarray, values: np.ndarray, x: np.ndarray, default: Any) -> np.ndarray:
    """Map every element of ``x`` through ``keys -> values`` (``default`` when absent): :class:`Lookup` made
    for one call."""
    return Lookup(keys, values)(x, default)


# ---------------------------------------------------------------------------------------------
# ArrayFeatureExtractor, Binarizer, Imputer, Scaler, Normalizer
# ---------------------------------------------------------------------------------------------


_COMPILED_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _compiled_rows(x: np.ndarray) -> bool:
    """Whether ``x`` (rows, or one row) takes the accelerator's one-pass loop of Imputer, Scaler or Normalizer."""
    return x.ndim <= 2 and x.dtype in _COMPILED_TYPES and x.flags.c_contiguous and accel.enabled()


_FEW = 16  # up to this many values a check reads them as a Python list (one call, not a reduction per test)


@kernel("ArrayFeatureExtractor", 1, domain=ML)
def array_feature_extractor(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Select the elements at indices ``Y`` along the last axis of ``X`` (a 1-D ``X`` gives ``[1, K]``)."""
    x = np.asarray(x)
    idx = np.asarray(y).ravel()
    if x.ndim == 0:
        raise EvaluationError("ArrayFeatureExtractor: X must have rank >= 1")
    n = x.shape[-1]
    if idx.size <= _FEW:
        # A few indices (a classifier's label per row): checked as Python ints, not by two reductions.
        listed = idx.tolist()
        bad = bool(listed) and (min(listed) < 0 or max(listed) >= n)
    elif not idx.size:
        bad = False
    elif idx.dtype.kind in "iu":
        # One reduction for both bounds: read as unsigned, a negative index is larger than any extent (1,000
        # indices: 10.8 -> 9.7 us, the minimum's reduction saved).
        bad = bool(idx.view(np.dtype(f"u{idx.dtype.itemsize}")).max() >= n)
    else:
        bad = bool(idx.min() < 0 or idx.max() >= n)
    if bad:
        raise EvaluationError(f"ArrayFeatureExtractor: index out of range [0, {n}) in {idx.tolist()}")
    # (ndarray.take: np.take without its Python wrapper)
    out = x.take(idx if idx.dtype == np.int64 else idx.astype(np.int64), axis=-1)
    if x.ndim == 1:
        out = out.reshape(1, -1)
    return out


@kernel("Binarizer", 1, domain=ML)
def binarizer(x: np.ndarray, *, threshold: float = 0.0) -> np.ndarray:
    """1 where ``X > threshold``, else 0, in the element type of ``X`` (NaN stays NaN)."""
    x = np.asarray(x)
    out = (x > threshold).astype(x.dtype)
    if x.dtype.kind == "f":
        nan = np.isnan(x)
        if nan.any():  # (most inputs have none: no where and no second cast)
            np.copyto(out, x, where=nan)
    return out


class _Imputer:
    """An Imputer's values converted once (a session prepares one per node; a direct call makes one per call), the
    imputed values cast once per element type met."""

    __slots__ = ("_fills", "_seen", "floats", "ints", "nan", "rv_float", "rv_int")

    def __init__(
        self,
        *,
        imputed_value_floats: list[float] | None = None,
        imputed_value_int64s: list[int] | None = None,
        replaced_value_float: float = 0.0,
        replaced_value_int64: int = 0,
    ) -> None:
        self.floats = np.asarray(imputed_value_floats or [], dtype=np.float64)
        self.ints = np.asarray(imputed_value_int64s or [], dtype=np.int64)
        self.rv_float, self.rv_int = float(replaced_value_float), int(replaced_value_int64)
        self.nan = bool(np.isnan(self.rv_float))
        self._fills: dict[np.dtype[Any], np.ndarray] = {}
        self._seen = -1  # the feature count of the rows an earlier call took into the compiled loop (again_rows)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        fill = self._fills.get(x.dtype) if again_rows(x, self._seen) else None
        if fill is not None:  # (the fill of this element type was made by an earlier call)
            out = np.empty(x.shape, x.dtype)
            accel.jit_ml().impute_rows(x, fill, self.nan, x.dtype.type(self.rv_float), out)
            return out
        x = np.asarray(x)
        imputed: np.ndarray = self.floats if x.dtype.kind == "f" else self.ints
        if imputed.size == 0:
            raise EvaluationError("Imputer: the imputed value attribute for this element type is missing")
        feats = x.shape[-1] if x.ndim else 1
        if imputed.size not in (1, feats):
            raise EvaluationError(f"Imputer: {imputed.size} imputed values for {feats} features")
        fill = self._fills.get(x.dtype)
        if fill is None:
            fill = imputed.astype(x.dtype)
            if len(self._fills) < 8:
                self._fills[x.dtype] = fill
        if x.ndim == 0:
            fill = fill.reshape(())
        elif _compiled_rows(x):
            # One compiled pass: cheaper than numpy's comparison, copy and masked copy (3x at a row)
            out = np.empty(x.shape, x.dtype)
            replaced = x.dtype.type(self.rv_float)  # (numpy compares an array with a Python float in its type)
            accel.jit_ml().impute_rows(as_rows(x), fill, self.nan, replaced, as_rows(out))
            if x.ndim == 2 and x.dtype in self._fills:
                self._seen = feats
            return out
        # A copy of X with the replaced elements overwritten: what where(hit, fill, X) gives, in one pass over X
        # and a masked one, without broadcasting the fill to X's shape first.
        if x.dtype.kind == "f":
            hit = np.isnan(x) if self.nan else x == self.rv_float
        else:
            hit = x == self.rv_int
        out = x.copy()
        np.copyto(out, fill, where=hit)
        return out


def _prepare_imputer(**attrs: Any) -> _Imputer:
    return _Imputer(**attrs)


@kernel("Imputer", 1, domain=ML, prepare=_prepare_imputer)
def imputer(
    x: np.ndarray,
    *,
    imputed_value_floats: list[float] | None = None,
    imputed_value_int64s: list[int] | None = None,
    replaced_value_float: float = 0.0,
    replaced_value_int64: int = 0,
) -> np.ndarray:
    """Replace the elements equal to the replaced value (NaN matches NaN) by the imputed value of their feature."""
    return _Imputer(
        imputed_value_floats=imputed_value_floats,
        imputed_value_int64s=imputed_value_int64s,
        replaced_value_float=replaced_value_float,
        replaced_value_int64=replaced_value_int64,
    )(x)


class _Scaler:
    """A Scaler's offsets and scales converted once (prepared once per node)."""

    __slots__ = ("_seen", "off", "sc")

    def __init__(self, *, offset: list[float] | None = None, scale: list[float] | None = None) -> None:
        self.off = np.asarray(offset if offset else [0.0], dtype=np.float32)
        self.sc = np.asarray(scale if scale else [1.0], dtype=np.float32)
        self._seen = -1  # as _Imputer's

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if again_rows(x, self._seen):
            out = np.empty(x.shape, np.float32)
            accel.jit_ml().scale_rows(x, self.off, self.sc, out)
            return out
        x = np.asarray(x)
        feats = x.shape[-1] if x.ndim else 1
        off, sc = self.off, self.sc
        if off.size not in (1, feats):
            raise EvaluationError(f"Scaler: offset has {off.size} values for {feats} features")
        if sc.size not in (1, feats):
            raise EvaluationError(f"Scaler: scale has {sc.size} values for {feats} features")
        if x.ndim == 0:  # (a scalar broadcasts to the attributes' shape)
            return ((x.astype(np.float32) - off) * sc).astype(np.float32)
        if _compiled_rows(x):
            # One compiled pass, the same float32 steps: cheaper than numpy's two calls at any size (1.5x at a
            # row, 3x at a thousand)
            out = np.empty(x.shape, np.float32)
            accel.jit_ml().scale_rows(as_rows(x), off, sc, as_rows(out))
            if x.ndim == 2:
                self._seen = feats
            return out
        if x.dtype == np.float32:
            y = x - off  # a new array, as float32 throughout: the scale is applied in place
        else:
            y = x.astype(np.float32)  # (astype copies)
            np.subtract(y, off, out=y)
        y *= sc
        return y


def _prepare_scaler(**attrs: Any) -> _Scaler:
    return _Scaler(**attrs)


@kernel("Scaler", 1, domain=ML, prepare=_prepare_scaler)
def scaler(x: np.ndarray, *, offset: list[float] | None = None, scale: list[float] | None = None) -> np.ndarray:
    """``(X - offset) * scale`` per feature (last axis), as float32."""
    return _Scaler(offset=offset, scale=scale)(x)


_NORMS = ("MAX", "L1", "L2")


class _Normalizer:
    """A Normalizer with its norm decided once (a session prepares one per node; a direct call makes one per call).

    The row divisors are one reduction; the quotient is computed in place in the float64 copy of the rows and
    converted to float32 once. Only when some divisor is zero are those rows put back unchanged (what
    ``where(div == 0, rows, rows / div)`` gives, the same values, without its three passes on every call).
    """

    __slots__ = ("_kind", "_seen", "norm")

    def __init__(self, *, norm: str = "MAX") -> None:
        if norm not in _NORMS:
            raise EvaluationError(f"Normalizer: norm must be MAX, L1 or L2, got {norm!r}")
        self.norm = norm
        self._kind = _NORMS.index(norm)
        self._seen = -1  # as _Imputer's (rows of no feature are never taken there: it stays -1 for them)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if again_rows(x, self._seen) and x.size:
            out = np.empty(x.shape, np.float32)
            accel.jit_ml().normalize_rows(x, self._kind, out)
            return out
        x = np.asarray(x)
        if x.size and _compiled_rows(x):
            # One compiled pass per row, the same sums in numpy's order (see _jit_ml.normalize_rows): 3x cheaper
            # than numpy's conversion, reduction and division at a row, 1.7-7x at a thousand
            out = np.empty(x.shape, np.float32)
            accel.jit_ml().normalize_rows(as_rows(x), self._kind, as_rows(out))
            if x.ndim == 2:
                self._seen = x.shape[1]
            return out
        rows = as_rows(x).astype(np.float64)  # a new array: divided in place
        n, c = rows.shape
        norm = self.norm
        if n == 1 and 0 < c <= NARROW:
            # One row: its divisor on Python floats (the reductions' values: abs, squares and the square root are
            # exact or correctly rounded either way, the sum in numpy's order), no reduction call.
            vals = rows[0].tolist()
            if norm == "MAX":
                d = max_of_row(vals)
            elif norm == "L1":
                d = sum_of_row([abs(v) for v in vals])
            else:
                d = math.sqrt(sum_of_row([v * v for v in vals]))
            if d != 0:
                rows /= d
            return rows.astype(np.float32).reshape(x.shape)
        if norm == "MAX":
            div = row_max(rows)[:, 0] if c else np.zeros(n)
        elif norm == "L1":
            div = row_sum(np.abs(rows))[:, 0]
        else:
            div = np.sqrt(row_sum(np.square(rows))[:, 0])
        zero = (0.0 in div.tolist()) if n <= _FEW else not div.all()
        if zero:
            keep = div == 0
            np.divide(rows, np.where(keep, 1.0, div)[:, None], out=rows, where=~keep[:, None])
        else:
            np.divide(rows, div[:, None], out=rows)
        return rows.astype(np.float32).reshape(x.shape)


@kernel("Normalizer", 1, domain=ML, prepare=_Normalizer)
def normalizer(x: np.ndarray, *, norm: str = "MAX") -> np.ndarray:
    """Normalise each row (``[N, C]``, or ``[C]`` as one row) by its max, L1 or L2 norm.

    A row whose divisor is zero is returned unchanged.
    """
    return _Normalizer(norm=norm)(x)


# ---------------------------------------------------------------------------------------------
# Encoders: CategoryMapper, LabelEncoder, OneHotEncoder
# ---------------------------------------------------------------------------------------------


def _is_string(x: np.ndarray) -> bool:
    return x.dtype.kind in "OSU"  # (the kind alone: ``x.dtype == object`` converts the type, 0.15 us a call)


def _as_bytes_array(x: np.ndarray) -> np.ndarray:
    flat = x.ravel().tolist()
    kinds = set(map(type, flat))  # the element types in one C-level pass (a session's feeds are bytes already)
    if x.dtype == object and str not in kinds:
        return x
    if kinds == {str}:
        return string_array(list(map(str.encode, flat)), x.shape)
    return string_array([v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in flat], x.shape)


class _CategoryMapper:
    """CategoryMapper's two look-ups, made once per node."""

    __slots__ = ("default_int", "default_str", "to_int", "to_str")

    def __init__(
        self,
        *,
        cats_int64s: list[int] | None = None,
        cats_strings: list[str] | None = None,
        default_int64: int = -1,
        default_string: str = "_Unused",
    ) -> None:
        ints = np.asarray(cats_int64s or [], dtype=np.int64)
        strs = string_array(encode_strings(cats_strings))
        if ints.size != strs.size:
            raise EvaluationError(f"CategoryMapper: {ints.size} cats_int64s but {strs.size} cats_strings")
        self.to_int, self.to_str = Lookup(strs, ints), Lookup(ints, strs)
        self.default_int, self.default_str = np.int64(default_int64), default_string.encode("utf-8")

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        if _is_string(x):
            return self.to_int.strings(x, self.default_int)
        return self.to_str(x.astype(np.int64), self.default_str)


@kernel("CategoryMapper", 1, domain=ML, prepare=_CategoryMapper)
def category_mapper(
    x: np.ndarray,
    *,
    cats_int64s: list[int] | None = None,
    cats_strings: list[str] | None = None,
    default_int64: int = -1,
    default_string: str = "_Unused",
) -> np.ndarray:
    """Strings to integers (default ``default_int64``) or integers to strings (default ``default_string``)."""
    return _CategoryMapper(
        cats_int64s=cats_int64s, cats_strings=cats_strings, default_int64=default_int64, default_string=default_string
    )(x)


class _LabelEncoder1:
    """LabelEncoder-1's classes, made once per node."""

    __slots__ = ("classes", "default_int", "default_str", "index")

    def __init__(
        self, *, classes_strings: list[str] | None = None, default_int64: int = -1, default_string: str = "_Unused"
    ) -> None:
        self.classes = string_array(encode_strings(classes_strings))
        self.index = Lookup(self.classes, np.arange(self.classes.size, dtype=np.int64))
        self.default_int, self.default_str = np.int64(default_int64), default_string.encode("utf-8")

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        if _is_string(x):
            return self.index.strings(x, self.default_int)
        xi = x.astype(np.int64)
        ok = (xi >= 0) & (xi < self.classes.size)
        out = np.empty(x.shape, dtype=object)
        out[...] = self.default_str
        out[ok] = self.classes[xi[ok]]
        return out


@kernel("LabelEncoder", 1, domain=ML, prepare=_LabelEncoder1)
def label_encoder_1(
    x: np.ndarray,
    *,
    classes_strings: list[str] | None = None,
    default_int64: int = -1,
    default_string: str = "_Unused",
) -> np.ndarray:
    """Version 1: a string becomes its index in ``classes_strings``; an integer indexes ``classes_strings``."""
    return _LabelEncoder1(classes_strings=classes_strings, default_int64=default_int64, default_string=default_string)(
        x
    )


def _keys_values(attrs: dict[str, Any], allow_tensor: bool) -> tuple[np.ndarray, np.ndarray, str]:
    """The key and value arrays of LabelEncoder 2/4 and the kind of the values (strings|int64s|floats|tensor)."""
    keys: np.ndarray | None = None
    values: np.ndarray | None = None
    kind = ""
    given_k = [k for k in ("keys_strings", "keys_int64s", "keys_floats", "keys_tensor") if attrs.get(k) is not None]
    given_v = [
        k for k in ("values_strings", "values_int64s", "values_floats", "values_tensor") if attrs.get(k) is not None
    ]
    if not allow_tensor and ("keys_tensor" in given_k or "values_tensor" in given_v):
        raise EvaluationError("LabelEncoder: keys_tensor/values_tensor need version 4")
    if len(given_k) != 1 or len(given_v) != 1:
        raise EvaluationError("LabelEncoder: exactly one keys_* and one values_* attribute must be set")
    k, v = given_k[0], given_v[0]
    if k == "keys_strings":
        keys = string_array(encode_strings(attrs[k]))
    elif k == "keys_int64s":
        keys = np.asarray(attrs[k], dtype=np.int64)
    elif k == "keys_floats":
        keys = np.asarray(attrs[k], dtype=np.float32)
    else:
        keys = np.asarray(attrs[k]).ravel()
        if keys.dtype.kind in "SUO":
            keys = _as_bytes_array(keys)
    if v == "values_strings":
        values, kind = string_array(encode_strings(attrs[v])), "strings"
    elif v == "values_int64s":
        values, kind = np.asarray(attrs[v], dtype=np.int64), "int64s"
    elif v == "values_floats":
        values, kind = np.asarray(attrs[v], dtype=np.float32), "floats"
    else:
        values, kind = np.asarray(attrs[v]).ravel(), "tensor"
        if values.dtype.kind in "SUO":
            values = _as_bytes_array(values)
    if keys.size != values.size:
        raise EvaluationError(f"LabelEncoder: {keys.size} keys but {values.size} values")
    return keys, values, kind


class _LabelEncoder:
    """LabelEncoder-2/4's keys, values and default, made once per node."""

    __slots__ = ("default", "keys_dtype", "lookup")

    def __init__(
        self,
        version: int,
        *,
        default_float: float = -0.0,
        default_int64: int = -1,
        default_string: str = "_Unused",
        default_tensor: np.ndarray | None = None,
        **attrs: Any,
    ) -> None:
        keys, values, kind = _keys_values(attrs, allow_tensor=version >= 4)
        default: Any
        if kind == "tensor":
            if default_tensor is not None:
                d = np.asarray(default_tensor).ravel()
                if d.size != 1:
                    raise EvaluationError("LabelEncoder: default_tensor must hold one element")
                default = d[0]
                if isinstance(default, str):
                    default = default.encode("utf-8")
            elif values.dtype == object:
                default = b"_Unused"
            elif values.dtype.kind in "iu":
                default = -1
            else:
                default = -0.0
        else:
            default = {
                "strings": default_string.encode("utf-8"),
                "int64s": np.int64(default_int64),
                "floats": np.float32(default_float),
            }[kind]
        self.default, self.keys_dtype, self.lookup = default, keys.dtype, Lookup(keys, values)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        kd = self.keys_dtype
        string = _is_string(x)
        if string != (kd.kind == "O"):
            raise EvaluationError(f"LabelEncoder: input of type {x.dtype} does not match keys of type {kd}")
        if string:
            return self.lookup.strings(x, self.default)
        if x.dtype != kd and kd.kind == "f":
            # Keys and input share an element type by definition; compare floats in the keys' precision.
            x = x.astype(kd)
        return self.lookup(x, self.default)


def _prepare_label_encoder_2(**attrs: Any) -> _LabelEncoder:
    return _LabelEncoder(2, **attrs)


def _prepare_label_encoder_4(**attrs: Any) -> _LabelEncoder:
    return _LabelEncoder(4, **attrs)


@kernel("LabelEncoder", 2, domain=ML, prepare=_prepare_label_encoder_2)
def label_encoder_2(
    x: np.ndarray,
    *,
    default_float: float = -0.0,
    default_int64: int = -1,
    default_string: str = "_Unused",
    **attrs: Any,
) -> np.ndarray:
    """Version 2: map each element through the parallel ``keys_*``/``values_*`` lists (default for absent keys)."""
    return _LabelEncoder(
        2, default_float=default_float, default_int64=default_int64, default_string=default_string, **attrs
    )(x)


@kernel("LabelEncoder", 4, domain=ML, prepare=_prepare_label_encoder_4)
def label_encoder_4(
    x: np.ndarray,
    *,
    default_float: float = -0.0,
    default_int64: int = -1,
    default_string: str = "_Unused",
    default_tensor: np.ndarray | None = None,
    **attrs: Any,
) -> np.ndarray:
    """Version 4: as version 2, plus keys/values/default given as tensors (int16, int32, double too)."""
    return _LabelEncoder(
        4,
        default_float=default_float,
        default_int64=default_int64,
        default_string=default_string,
        default_tensor=default_tensor,
        **attrs,
    )(x)


_MISSING = np.int64(-1)  # OneHotEncoder's position of a value that is no category (the table's last row)


class _OneHotEncoder:
    """OneHotEncoder's categories, made once per node: each element's position, then a row of a table whose
    last row (position -1, an unknown value) is all zeros."""

    __slots__ = ("ints", "rows", "strings", "zeros")

    def __init__(self, *, cats_int64s: list[int] | None = None, cats_strings: list[str] | None = None, zeros: int = 1):
        strs = string_array(encode_strings(cats_strings))
        ints = np.asarray(cats_int64s or [], dtype=np.int64)
        self.strings = Lookup(strs, np.arange(strs.size, dtype=np.int64)) if strs.size else None
        self.ints = Lookup(ints, np.arange(ints.size, dtype=np.int64)) if ints.size else None
        self.zeros = zeros
        self.rows = {n: np.eye(n + 1, n, dtype=np.float32) for n in {strs.size, ints.size} if n}

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        if _is_string(x):
            lookup = self.strings
            if lookup is None:
                raise EvaluationError("OneHotEncoder: the cats_* attribute matching the input type is missing")
            pos = lookup.strings(x, _MISSING)
        else:
            # Numbers are truncated to integers before the look-up (definition text).
            lookup = self.ints
            if lookup is None:
                raise EvaluationError("OneHotEncoder: the cats_* attribute matching the input type is missing")
            if x.dtype.kind == "f":
                # (nan_to_num only when a value is not finite: it costs 5 us even on a row that has none)
                xv = np.trunc(x if np.isfinite(x).all() else np.nan_to_num(x)).astype(np.int64)
            else:
                xv = x.astype(np.int64)
            pos = lookup(xv, _MISSING)
        if not self.zeros and (pos < 0).any():
            raise EvaluationError("OneHotEncoder: an input value is not among the categories and zeros=0")
        # (ndarray.take: the table's rows gathered without fancy indexing's machinery; -1 is the row of zeros)
        table = self.rows[lookup.values.size]
        return table.take(pos, axis=0) if pos.ndim else table[pos]


@kernel("OneHotEncoder", 1, domain=ML, prepare=_OneHotEncoder)
def one_hot_encoder(
    x: np.ndarray, *, cats_int64s: list[int] | None = None, cats_strings: list[str] | None = None, zeros: int = 1
) -> np.ndarray:
    """One float32 one-hot vector per element over the categories (a new last axis)."""
    return _OneHotEncoder(cats_int64s=cats_int64s, cats_strings=cats_strings, zeros=zeros)(x)
