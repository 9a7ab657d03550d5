"""Tensor construction, conversion and reshaping kernels.

Cast, CastLike, Constant, ConstantOfShape, EyeLike, Range, Identity, Shape, Size, Concat, Expand,
Tile, Transpose, Flatten, Reshape, Squeeze and Unsqueeze, every version of the default domain.
Slicing and padding (Slice, Split, Pad, CenterCropPad, DepthToSpace, SpaceToDepth) live in
:mod:`onnxcore.kernels.tensor_layout`.

Element conversions (Cast, CastLike) are those of :func:`onnxcore.types.convert.cast_array`
(Clause 6.3); the kernels here only choose the target type and the attributes. Reshaping
kernels return numpy views where numpy gives them: kernels never mutate their inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels._util import (
    NUMPY_FLOATS,
    axes_from_input,
    broadcast_shape,
    check_elements,
    int_list,
    normalize_axes,
    normalize_axis,
    scalar_of,
)
from onnxcore.kernels.registry import kernel
from onnxcore.types import SparseTensor, value_from_proto
from onnxcore.types.convert import ROUND_MODES, cast_array
from onnxcore.types.elements import ElementType

__all__ = ["BUILTIN_CASTS", "cast_route", "int_input", "zero_of"]

# ---------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------


def zero_of(dtype: np.dtype[Any]) -> np.ndarray:
    """The zero of ``dtype`` as a 0-d array: 0, False, or the empty octet string for STRING."""
    if dtype == np.dtype(object):
        return np.array(b"", dtype=object)
    return np.zeros((), dtype=dtype)


_TYPES_BY_TAG: dict[tuple[type, Any], ElementType] = {}  # the tags met so far (an enum call costs a microsecond)


def _element_type(tag: Any, what: str) -> ElementType:
    key = (type(tag), tag)
    known = _TYPES_BY_TAG.get(key)
    if known is not None:
        return known
    try:
        if isinstance(tag, str):
            # Cast-1 names the target type by its DataType enum name (a STRING attribute).
            et = ElementType[tag.upper()]
        else:
            et = ElementType(int(tag))
    except (KeyError, ValueError) as e:
        raise EvaluationError(f"{what}: {tag!r} is not an element type of Table 5 (Clause 6.2)") from e
    if len(_TYPES_BY_TAG) < 256:
        _TYPES_BY_TAG[key] = et
    return et


# ---------------------------------------------------------------------------------------------
# Cast, CastLike (Clause 6.3)
# ---------------------------------------------------------------------------------------------


_FEW = 16  # up to this many elements a float -> integer cast checks its bounds on Python numbers
# The values of INT32 and INT64 as [least, one past the greatest] (Python ints: exact against any float).
_INT_BOUNDS = {np.dtype(np.int64): (-(2**63), 2**63), np.dtype(np.int32): (-(2**31), 2**31)}


def _copy(a: np.ndarray, dt: np.dtype[Any]) -> np.ndarray:
    return a.copy()


def _astype(a: np.ndarray, dt: np.dtype[Any]) -> np.ndarray:
    return a.astype(dt)


def _nonzero(a: np.ndarray, dt: np.dtype[Any]) -> np.ndarray:
    return np.not_equal(a, 0)


def _float_to_int(a: np.ndarray, dt: np.dtype[Any]) -> np.ndarray | None:
    """A float to INT32/INT64 (a classifier's label after its float arithmetic) as cast_array does it (truncated
    toward zero), when every value is finite and its truncation in range; None otherwise (cast_array's rule)."""
    if not a.size:
        return None
    lo, end = _INT_BOUNDS[dt]
    # The least and the greatest value, compared with the range's ends as Python numbers (exact against Python
    # ints; NaN fails both), then numpy's cast, which truncates toward zero as cast_array does for values in range.
    if a.size <= _FEW:
        # A few values (a label per row): read as one list rather than reduced twice. The sum is NaN when one value
        # is (min and max may step over a NaN that is not first).
        vals = a.ravel().tolist()
        total = sum(vals)
        least, most = (min(vals), max(vals)) if total == total else (math.nan, math.nan)
    else:
        # Many (the labels of 1,000 rows): two reductions in the array's own type (exact: a minimum and a maximum do
        # not round; NaN propagates), where a float64 copy, its truncation, a finiteness test and two reductions ran
        # (1,000 float32 labels to INT64: 10.7 -> 5.7 us).
        least, most = float(np.minimum.reduce(a, axis=None)), float(np.maximum.reduce(a, axis=None))
    return a.astype(dt) if lo - 1 < least and most < end else None


def _route(src: np.dtype[Any], dt: np.dtype[Any]) -> Callable[[np.ndarray, np.dtype[Any]], np.ndarray | None] | None:
    """How numpy makes a cast from ``src`` to ``dt`` exactly as cast_array makes it, without its dispatch (10 us ->
    0.5 us at one row); None: cast_array. Decided once per pair of types (:data:`_ROUTES`)."""
    if not (src.isnative and dt.isnative):
        return None
    if src.kind in "biufc" and src == dt:
        # To the type the values already have (what exporters write after a label output): a copy. numpy's own
        # types only (ml_dtypes' have kind "V", except float8_e5m2's "f", which is its own type here too).
        return _copy
    if src.kind in "biu" and (dt.kind == "b" or (dt.kind == "f" and (dt.itemsize >= 4 or src.kind == "b"))):
        # Booleans and integers to BOOL (nonzero is true) or to FLOAT/DOUBLE (rounded to nearest, even on a tie: an
        # attention mask's int64 -> bool), bool to any float (a comparison's mask as a float).
        return _astype
    if src.kind in "biu" and dt.kind in "iu":
        # Between integer types (a classifier's int32 classes to its INT64 label): astype keeps the low bits, which
        # is cast_array's wrap modulo 2**bits.
        return _astype
    if src in NUMPY_FLOATS and dt.kind == "b":
        return _nonzero  # a float to BOOL (skl2onnx's "no probability" mask): nonzero is true, NaN included
    if src in NUMPY_FLOATS and dt in NUMPY_FLOATS:
        # Between numpy's float types (ml_dtypes' float8_e5m2 has kind "f" too, and its own saturation): a wider one
        # is exact; a narrower one (skl2onnx's double pipelines cast to FLOAT) rounds to nearest even and overflows
        # to infinity, which is what cast_array's astype gives.
        return _astype
    if src.kind == "f" and src.itemsize >= 4 and dt in _INT_BOUNDS:
        return _float_to_int
    return None


_ROUTES: dict[tuple[np.dtype[Any], np.dtype[Any]], Any] = {}  # (source, target) -> _route's answer

CastRoute = Callable[[np.ndarray, np.dtype[Any]], "np.ndarray | None"]


def cast_route(src: np.dtype[Any], dt: np.dtype[Any]) -> CastRoute | None:
    """How the Cast kernels (Cast-6 and later, CastLike) compute a cast of an array of ``src`` to ``dt`` without
    cast_array's dispatch: a function ``(array, dt)`` giving what they give, or None when it declines (a value out of
    range, NaN to an integer: cast_array's rule then); None when cast_array computes every such cast. Decided once per
    pair of types (a plan's Cast step asks it once per input type)."""
    key = (src, dt)
    route = _ROUTES.get(key, _cast)  # (_cast: a pair not met yet)
    if route is _cast:
        route = _route(src, dt)
        if len(_ROUTES) < 256:
            _ROUTES[key] = route
    return route


def _cast(x: np.ndarray, to: ElementType, saturate: int, round_mode: str) -> np.ndarray:
    a = np.asarray(x)
    if round_mode in ROUND_MODES:  # (cast_array refuses an unknown round_mode with TensorError)
        dt = to.np_dtype
        route = cast_route(a.dtype, dt)
        if route is not None:
            y = route(a, dt)
            if y is not None:
                return y
    return cast_array(a, to, saturate=bool(saturate), round_mode=round_mode)


def _cast_19(x: np.ndarray, to: ElementType, saturate: int) -> np.ndarray:
    # Cast-19 to Cast-23 tabulate +/-Inf -> NaN for the saturating FNUZ casts; onnx PR 7085 (a
    # "spec clarification", fixing onnx issue 6220) corrected that table to +/-FLT_MAX in
    # Cast-24, which is what the reference implementation and onnxruntime do at every version.
    # We follow the corrected table at every version (cast_array implements it).
    return _cast(x, to, saturate, "up")


@kernel("Cast", 1)
def cast_1(input: np.ndarray, *, to: str | int) -> np.ndarray:
    """Cast-1: ``to`` is the name of a DataType enum value (a STRING attribute)."""
    return _cast(input, _element_type(to, "Cast"), 1, "up")


@kernel("Cast", 6, 9, 13)
def cast_6(input: np.ndarray, *, to: int) -> np.ndarray:
    """Cast-6 to Cast-13: ``to`` is an element type tag; no narrow float targets exist yet."""
    return _cast(input, _element_type(to, "Cast"), 1, "up")


@kernel("Cast", 19, 21, 23)
def cast_19(input: np.ndarray, *, to: int, saturate: int = 1) -> np.ndarray:
    """Cast-19 to Cast-23: adds ``saturate`` for the float 8 targets."""
    return _cast_19(input, _element_type(to, "Cast"), saturate)


@kernel("Cast", 24, 25, 28)
def cast_24(input: np.ndarray, *, to: int, saturate: int = 1, round_mode: str = "up") -> np.ndarray:
    """Cast-24 and later: adds FLOAT8E8M0 and its ``round_mode``."""
    return _cast(input, _element_type(to, "Cast"), saturate, round_mode)


BUILTIN_CASTS = frozenset((cast_6, cast_19, cast_24))
"""The Cast kernels whose numeric target is an ``int`` tag and whose casts :func:`cast_route` computes."""


def _target_of(target_type: np.ndarray) -> ElementType:
    return ElementType.from_dtype(np.asarray(target_type).dtype)


@kernel("CastLike", 15)
def castlike_15(input: np.ndarray, target_type: np.ndarray) -> np.ndarray:
    """CastLike-15: cast to the element type of ``target_type``."""
    return _cast(input, _target_of(target_type), 1, "up")


@kernel("CastLike", 19, 21, 23)
def castlike_19(input: np.ndarray, target_type: np.ndarray, *, saturate: int = 1) -> np.ndarray:
    """CastLike-19 to CastLike-23 (``saturate`` as Cast-19)."""
    return _cast_19(input, _target_of(target_type), saturate)


@kernel("CastLike", 24, 25)
def castlike_24(input: np.ndarray, target_type: np.ndarray, *, saturate: int = 1, round_mode: str = "up") -> np.ndarray:
    """CastLike-24 and later (``saturate`` and ``round_mode`` as Cast-24)."""
    return _cast(input, _target_of(target_type), saturate, round_mode)


# ---------------------------------------------------------------------------------------------
# Constant, ConstantOfShape, EyeLike, Range
# ---------------------------------------------------------------------------------------------


def _densify(sparse: Any) -> np.ndarray:
    """The dense tensor of a sparse value (a ``SparseTensor``, or a ``SparseTensorProto``)."""
    sp = sparse if isinstance(sparse, SparseTensor) else value_from_proto(sparse)
    if not isinstance(sp, SparseTensor):
        raise EvaluationError(f"Constant: sparse_value is not a sparse tensor ({type(sparse).__name__})")
    check_elements(list(sp.dims), "Constant sparse_value")
    return np.asarray(sp.to_dense())


def _bytes(s: str | bytes) -> bytes:
    return s if isinstance(s, bytes) else s.encode("utf-8")


@kernel("Constant", 1, 9)
def constant_1(*, value: np.ndarray | None = None) -> np.ndarray:
    """Constant-1, Constant-9: the ``value`` tensor attribute."""
    if value is None:
        raise EvaluationError("Constant: the value attribute is required")
    return np.asarray(value)


@kernel("Constant", 11)
def constant_11(*, value: np.ndarray | None = None, sparse_value: Any = None) -> np.ndarray:
    """Constant-11: exactly one of ``value`` and ``sparse_value`` (made dense)."""
    return constant_12(value=value, sparse_value=sparse_value)


@kernel("Constant", 12, 13, 19, 21, 23, 24, 25)
def constant_12(
    *,
    value: np.ndarray | None = None,
    sparse_value: Any = None,
    value_float: float | None = None,
    value_floats: list[float] | None = None,
    value_int: int | None = None,
    value_ints: list[int] | None = None,
    value_string: str | None = None,
    value_strings: list[str] | None = None,
) -> np.ndarray:
    """Constant-12 and later: exactly one of the value attributes gives the output."""
    given = [
        n
        for n, v in (
            ("value", value),
            ("sparse_value", sparse_value),
            ("value_float", value_float),
            ("value_floats", value_floats),
            ("value_int", value_int),
            ("value_ints", value_ints),
            ("value_string", value_string),
            ("value_strings", value_strings),
        )
        if v is not None
    ]
    if len(given) != 1:
        raise EvaluationError(f"Constant needs exactly one value attribute, got {given or 'none'}")
    if value is not None:
        return np.asarray(value)
    if sparse_value is not None:
        return _densify(sparse_value)
    if value_float is not None:
        return np.array(value_float, dtype=np.float32)
    if value_floats is not None:
        return np.array(value_floats, dtype=np.float32).reshape(-1)
    if value_int is not None:
        return np.array(value_int, dtype=np.int64)
    if value_ints is not None:
        return np.array(value_ints, dtype=np.int64).reshape(-1)
    if value_string is not None:
        return np.array(_bytes(value_string), dtype=object)
    strs = value_strings or []
    out = np.empty(len(strs), dtype=object)
    out[:] = [_bytes(s) for s in strs]
    return out


def int_input(value: np.ndarray, what: str) -> list[int]:
    """The Python ints of a 0-/1-D integer tensor input (a shape, pads, starts, ...).

    Raises:
        EvaluationError: the tensor has rank above 1 or a non-integer element type.
    """
    arr = np.asarray(value)
    if arr.ndim > 1:
        raise EvaluationError(f"{what} must be a 1-D tensor, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise EvaluationError(f"{what} must be an integer tensor, got {arr.dtype}")
    return int_list(arr)


@kernel("ConstantOfShape", 9, 20, 21, 23, 24, 25)
def constant_of_shape(input: np.ndarray, *, value: np.ndarray | None = None) -> np.ndarray:
    """ConstantOfShape: a tensor of shape ``input`` filled with the one element of ``value``."""
    shape = int_input(input, "ConstantOfShape shape")
    if value is None:
        fill = np.zeros((), dtype=np.float32)
    else:
        v = np.asarray(value)
        if v.size != 1:
            raise EvaluationError(f"ConstantOfShape: value must hold one element, got shape {v.shape}")
        fill = v.reshape(())
    check_elements(shape, "ConstantOfShape", itemsize=fill.dtype.itemsize)
    out = np.empty(shape, dtype=fill.dtype)
    out[...] = fill
    return out


@kernel("EyeLike", 9, 22)
def eye_like(input: np.ndarray, *, dtype: int | None = None, k: int = 0) -> np.ndarray:
    """EyeLike: ones on diagonal ``k`` of a matrix shaped like ``input``."""
    x = np.asarray(input)
    if x.ndim != 2:
        raise EvaluationError(f"EyeLike: input must be 2-D, got shape {x.shape}")
    dt = x.dtype if dtype is None else _element_type(dtype, "EyeLike").np_dtype
    if dt == np.dtype(object):
        raise EvaluationError("EyeLike: STRING is not an output type")
    n, m = x.shape
    out = np.zeros((n, m), dtype=dt)
    rows = np.arange(max(0, -k), min(n, m - k)) if m - k > 0 else np.zeros(0, np.int64)
    if rows.size:
        out[rows, rows + k] = np.ones((), dtype=dt)
    return out


def _range(start: np.ndarray, limit: np.ndarray, delta: np.ndarray, stash_type: int | None) -> np.ndarray:
    dt = np.asarray(start).dtype
    for v, what in ((limit, "limit"), (delta, "delta")):
        if np.asarray(v).dtype != dt:
            raise EvaluationError(f"Range: {what} is {np.asarray(v).dtype}, start is {dt}")
    s, lim, d = (scalar_of(v, name=w) for v, w in ((start, "start"), (limit, "limit"), (delta, "delta")))
    if d == 0:
        raise EvaluationError("Range: delta must not be zero")
    if dt.kind in "iu":
        s, lim, d = int(s), int(lim), int(d)
        n = max(-((s - lim) // d), 0)
        check_elements([n], "Range", itemsize=8)  # the int64 ramp, before the cast
        # s + i * d lies between s and lim, so within T: numpy's arange in T gives those n values in one call (the
        # ramp, its product and its cast cost 1.5 us more at a decoder step's few positions); its count is worked
        # out in floats, so it is checked, and the exact ramp taken when it differs.
        r = np.arange(s, lim, d, dtype=dt)
        return r if r.size == n else (s + np.arange(n, dtype=np.int64) * d).astype(dt)
    # output[i] = start + i * delta in T's arithmetic; float16/bfloat16 are stashed in float32
    # when Range-27's stash_type is 1 (its default).
    narrow = dt in (np.dtype(np.float16), ElementType.BFLOAT16.np_dtype)
    ct = np.dtype(np.float32) if narrow and stash_type in (None, 1) else dt
    if ct == ElementType.BFLOAT16.np_dtype:

        def rnd(a: Any) -> np.ndarray:
            # bfloat16 arithmetic: each operation exact in float32, then rounded once.
            return np.asarray(a, dtype=np.float32).astype(ct)

        def f32(a: np.ndarray) -> np.ndarray:
            return a.astype(np.float32)

    else:

        def rnd(a: Any) -> np.ndarray:
            return np.asarray(a).astype(ct)

        def f32(a: np.ndarray) -> np.ndarray:
            return a

    cs, cl, cd = (np.asarray(v).reshape(()).astype(ct) for v in (start, limit, delta))
    span = float(rnd(f32(cl) - f32(cs)))
    q = span / float(cd)
    if math.isnan(q) or math.isinf(q):
        raise EvaluationError(f"Range: cannot count the elements from {s} to {lim} by {d}")
    n = max(math.ceil(q), 0)
    check_elements([n], "Range", itemsize=max(ct.itemsize, dt.itemsize))
    i = np.arange(n).astype(ct)
    vals = rnd(f32(rnd(f32(i) * f32(cd))) + f32(cs))
    return vals.astype(dt)


@kernel("Range", 11)
def range_11(start: np.ndarray, limit: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Range-11: ``start + i * delta`` for ``i < max(ceil((limit - start) / delta), 0)``."""
    return _range(start, limit, delta, None)


@kernel("Range", 27)
def range_27(start: np.ndarray, limit: np.ndarray, delta: np.ndarray, *, stash_type: int = 1) -> np.ndarray:
    """Range-27: adds float16/bfloat16, computed in float32 when ``stash_type`` is 1."""
    return _range(start, limit, delta, stash_type)


# ---------------------------------------------------------------------------------------------
# Identity, Shape, Size
# ---------------------------------------------------------------------------------------------


@kernel("Identity", 1, 13, 14, 16, 19, 21, 23, 24, 25)
def identity(input: Any) -> tuple[Any]:
    """Identity: the input itself (tensors, and from Identity-14/16 sequences and optionals).

    Returned as a 1-tuple so that a sequence value (a list) is never mistaken for the list of
    outputs.
    """
    return (input,)


@kernel("Shape", 1, 13)
def shape_1(data: np.ndarray) -> np.ndarray:
    """Shape-1, Shape-13: the shape of ``data`` as a 1-D int64 tensor."""
    return np.array(np.shape(data), dtype=np.int64)


@kernel("Shape", 15, 19, 21, 23, 24, 25)
def shape_15(data: np.ndarray, *, start: int = 0, end: int | None = None) -> np.ndarray:
    """Shape-15 and later: the dims ``start:end``, each clamped to ``[0, rank]`` after adding rank."""
    dims = data.shape if type(data) is np.ndarray else np.shape(data)
    r = len(dims)
    lo = int(start)
    lo = min(max(lo + r if lo < 0 else lo, 0), r)
    if end is None:
        hi = r
    else:
        hi = int(end)
        hi = min(max(hi + r if hi < 0 else hi, 0), r)
    return np.array(dims[lo:hi], dtype=np.int64)


@kernel("Size", 1, 13, 19, 21, 23, 24, 25)
def size(data: np.ndarray) -> np.ndarray:
    """Size: the number of elements of ``data`` as a 0-d int64 tensor."""
    return np.array(np.size(data), dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# Concat, Expand, Tile, Transpose
# ---------------------------------------------------------------------------------------------


def _concat(inputs: tuple[np.ndarray, ...], axis: int) -> np.ndarray:
    if inputs:
        # The common case (a KV cache and its new step, the halves of a rotary embedding, a table's columns): arrays
        # of one type and rank, concatenated by numpy without the checks' calls; whatever numpy refuses (extents
        # that differ off the axis) goes through the checks below, which name the problem.
        x0 = inputs[0]
        if type(x0) is np.ndarray and -x0.ndim <= axis < x0.ndim:
            # numpy checks the rest: casting "no" to the first input's type refuses any other type (TypeError) and
            # concatenate refuses other ranks (ValueError), instead of a Python loop over the inputs (four [1, 1]
            # scores of a mixture model: 1.8 -> 1.3 us)
            for x in inputs:  # (a loop, not all() of a generator: this runs on every call)
                if type(x) is not np.ndarray:
                    break
            else:
                try:
                    return np.concatenate(inputs, axis=axis, dtype=x0.dtype, casting="no")
                except (TypeError, ValueError):
                    pass
    if not inputs:
        raise EvaluationError("Concat needs at least one input")
    arrs = [np.asarray(x) for x in inputs]
    r = arrs[0].ndim
    if r == 0:
        raise EvaluationError("Concat: inputs must have rank >= 1")
    a = normalize_axis(axis, r)
    for x in arrs[1:]:
        if x.ndim != r or x.shape[:a] != arrs[0].shape[:a] or x.shape[a + 1 :] != arrs[0].shape[a + 1 :]:
            raise EvaluationError(f"Concat: shapes {[y.shape for y in arrs]} differ off axis {a}")
        if x.dtype != arrs[0].dtype:
            raise EvaluationError(f"Concat: element types differ ({arrs[0].dtype} and {x.dtype})")
    return np.concatenate(arrs, axis=a)


@kernel("Concat", 1)
def concat_1(*inputs: np.ndarray, axis: int = 1) -> np.ndarray:
    """Concat-1: ``axis`` defaults to 1."""
    return _concat(inputs, axis)


@kernel("Concat", 4, 11, 13)
def concat_4(*inputs: np.ndarray, axis: int | None = None) -> np.ndarray:
    """Concat-4 and later: ``axis`` is required (negative from Concat-11)."""
    if axis is None:
        raise EvaluationError("Concat: the axis attribute is required")
    return _concat(inputs, axis)


@kernel("Expand", 8, 13)
def expand(input: np.ndarray, shape: np.ndarray) -> np.ndarray:
    """Expand: broadcast ``input`` and ``shape`` multidirectionally (Clause 6.6.2)."""
    x = np.asarray(input)
    target = int_input(shape, "Expand shape")
    out_shape = broadcast_shape(x.shape, target)
    check_elements(list(out_shape), "Expand", itemsize=x.dtype.itemsize)
    # A materialised copy (a broadcast view is read-only and may alias one element many times), broadcast by copyto
    # (np.array of a broadcast_to view: 7.6 against 1.1 us for a GQA head repeat of 3,072 values).
    y = np.empty(out_shape, x.dtype)
    np.copyto(y, x)
    return y


@kernel("Tile", 1)
def tile_1(input: np.ndarray, tiles: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """Tile-1: repeat ``input`` ``tiles`` times along ``axis`` (both scalar inputs)."""
    x = np.asarray(input)
    a = normalize_axis(int(scalar_of(axis, name="axis")), x.ndim)
    t = int(scalar_of(tiles, name="tiles"))
    reps = [1] * x.ndim
    reps[a] = t
    return _tile(x, reps)


@kernel("Tile", 6, 13)
def tile_6(input: np.ndarray, repeats: np.ndarray) -> np.ndarray:
    """Tile-6 and later: ``output_dim[i] = input_dim[i] * repeats[i]``."""
    x = np.asarray(input)
    reps = int_input(repeats, "Tile repeats")
    if len(reps) != x.ndim:
        raise EvaluationError(f"Tile: repeats has {len(reps)} values for an input of rank {x.ndim}")
    return _tile(x, reps)


def _tile(x: np.ndarray, reps: list[int]) -> np.ndarray:
    if any(r < 0 for r in reps):
        raise EvaluationError(f"Tile: negative repeats {reps}")
    check_elements([d * r for d, r in zip(x.shape, reps)], "Tile", itemsize=x.dtype.itemsize)
    return np.tile(x, reps) if x.ndim else x.copy()


@kernel("Transpose", 1, 13, 21, 23, 24, 25)
def transpose(data: np.ndarray, *, perm: list[int] | None = None) -> np.ndarray:
    """Transpose: permute the axes by ``perm`` (reversed by default); a view."""
    x = np.asarray(data)
    if perm is None:
        return x.transpose()
    p = [int(v) for v in perm]
    if sorted(p) != list(range(x.ndim)):
        raise EvaluationError(f"Transpose: perm {p} is not a permutation of the {x.ndim} axes")
    return x.transpose(p)


# ---------------------------------------------------------------------------------------------
# Flatten, Reshape, Squeeze, Unsqueeze
# ---------------------------------------------------------------------------------------------


@kernel("Flatten", 1, 9)
def flatten_1(input: np.ndarray, *, axis: int = 1) -> np.ndarray:
    """Flatten-1, -9: ``axis`` in [0, rank] (a negative one is defined only from Flatten-11)."""
    if axis < 0:
        raise EvaluationError(f"Flatten: axis={axis} is negative, which this version does not define (from 11)")
    return flatten(input, axis=axis)


@kernel("Flatten", 11, 13, 21, 23, 24, 25)
def flatten(input: np.ndarray, *, axis: int = 1) -> np.ndarray:
    """Flatten: dims before ``axis`` to the rows, the rest to the columns (negative from 11)."""
    x = np.asarray(input)
    r = x.ndim
    if not -r <= axis <= r:
        raise EvaluationError(f"Flatten: axis={axis} is out of range [{-r}, {r}]")
    a = axis + r if axis < 0 else axis
    return x.reshape(math.prod(x.shape[:a]), math.prod(x.shape[a:]))


def _reshape(x: np.ndarray, shape: list[int], allowzero: int) -> np.ndarray:
    dims = list(shape)
    if any(d < -1 for d in dims):
        raise EvaluationError(f"Reshape: invalid extent in shape {dims}")
    infer = [i for i, d in enumerate(dims) if d == -1]
    if len(infer) > 1:
        raise EvaluationError(f"Reshape: shape {dims} has more than one -1")
    if allowzero:
        if infer and 0 in dims:
            raise EvaluationError(f"Reshape: with allowzero, shape {dims} may not hold both 0 and -1")
    else:
        for i, d in enumerate(dims):
            if d == 0:
                if i >= x.ndim:
                    raise EvaluationError(f"Reshape: 0 at position {i} of {dims} has no input dim to copy")
                dims[i] = x.shape[i]
    if infer:
        known = math.prod(d for d in dims if d != -1)
        if known == 0 or x.size % known:
            raise EvaluationError(f"Reshape: cannot infer -1 of {shape} for {x.size} elements (shape {x.shape})")
        dims[infer[0]] = x.size // known
    if math.prod(dims) != x.size:
        raise EvaluationError(f"Reshape: shape {shape} does not hold the {x.size} elements of shape {x.shape}")
    return x.reshape(dims)


@kernel("Reshape", 1)
def reshape_1(
    data: np.ndarray, *, shape: list[int] | None = None, consumed_inputs: list[int] | None = None
) -> np.ndarray:
    """Reshape-1: the new shape is the ``shape`` attribute (``consumed_inputs`` is legacy, ignored)."""
    if shape is None:
        raise EvaluationError("Reshape-1: the shape attribute is required")
    return _reshape(np.asarray(data), [int(d) for d in shape], 0)


@kernel("Reshape", 5, 13)
def reshape_5(data: np.ndarray, shape: np.ndarray) -> np.ndarray:
    """Reshape-5, Reshape-13: the new shape is an input; 0 copies the input's extent."""
    return _reshape(np.asarray(data), int_input(shape, "Reshape shape"), 0)


@kernel("Reshape", 14, 19, 21, 23, 24, 25)
def reshape_14(data: np.ndarray, shape: np.ndarray, *, allowzero: int = 0) -> np.ndarray:
    """Reshape-14 and later: ``allowzero`` makes 0 an explicit zero extent."""
    return _reshape(np.asarray(data), int_input(shape, "Reshape shape"), allowzero)


def _squeeze(x: np.ndarray, axes: list[int] | None) -> np.ndarray:
    # An empty axes list squeezes every extent of 1, as an absent one does (onnxruntime reads an
    # empty axes input so; the definition does not distinguish the two).
    if not axes:
        return x.reshape([d for d in x.shape if d != 1])
    ax = normalize_axes(axes, x.ndim)
    for a in ax:
        if x.shape[a] != 1:
            raise EvaluationError(f"Squeeze: axis {a} has extent {x.shape[a]}, not 1 (shape {x.shape})")
    return x.reshape([d for i, d in enumerate(x.shape) if i not in ax])


@kernel("Squeeze", 1, 11)
def squeeze_1(data: np.ndarray, *, axes: list[int] | None = None) -> np.ndarray:
    """Squeeze-1, Squeeze-11: ``axes`` attribute (negative from 11); all extents of 1 if absent."""
    return _squeeze(np.asarray(data), None if axes is None else [int(a) for a in axes])


@kernel("Squeeze", 13, 21, 23, 24, 25)
def squeeze_13(data: np.ndarray, axes: np.ndarray | None = None) -> np.ndarray:
    """Squeeze-13 and later: ``axes`` is an optional input."""
    return _squeeze(np.asarray(data), axes_from_input(axes))


def _unsqueeze(x: np.ndarray, axes: list[int]) -> np.ndarray:
    r = x.ndim + len(axes)
    ax = set(normalize_axes(axes, r))
    it = iter(x.shape)
    return x.reshape([1 if i in ax else next(it) for i in range(r)])


@kernel("Unsqueeze", 1, 11)
def unsqueeze_1(data: np.ndarray, *, axes: list[int] | None = None) -> np.ndarray:
    """Unsqueeze-1, Unsqueeze-11: ``axes`` attribute, positions in the output (negative from 11)."""
    if axes is None:
        raise EvaluationError("Unsqueeze: the axes attribute is required")
    return _unsqueeze(np.asarray(data), [int(a) for a in axes])


@kernel("Unsqueeze", 13, 21, 23, 24, 25)
def unsqueeze_13(data: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """Unsqueeze-13 and later: ``axes`` is a required input."""
    ax = axes_from_input(axes)
    if ax is None:
        raise EvaluationError("Unsqueeze: the axes input is required")
    return _unsqueeze(np.asarray(data), ax)
