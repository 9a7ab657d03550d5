"""Feeds as onnxruntime takes them: the conversions the façade makes before :class:`onnxcore.Session` checks a feed.

Each conversion is listed in docs/onnxruntime.md ("Feeds"); what onnxruntime 1.31 does was read by trying it:

* a ``list`` for a tensor input becomes an array of the input's element type (onnxruntime casts a list: ints to
  float, floats to int64 by truncation); a list that is not rectangular, or of strings for a numeric input, or
  holding NaN or an infinity for an integer input, is refused;
* a Python or numpy scalar becomes a 0-d array of the input's element type (onnxruntime 1.31 refuses scalars:
  ``RuntimeError: Unable to handle object``; a difference, in the lenient direction);
* a numpy array is taken as it is: one of another element type is refused (onnxruntime does not cast arrays);
* for a STRING input, every element that is not ``str`` or ``bytes`` becomes ``str(x)``: None is ``'None'``, a
  NaN ``'nan'``, 1 is ``'1'`` (onnxruntime reads an object array so);
* a ``dict`` for a map input: keys must be ``str`` (a map of string keys) or integers (numpy's too), values are
  converted as a tensor of the map's value type; a scalar value fills a value type declared ``[1]`` (skl2onnx's
  DictVectorizer input). A list of dicts is a sequence of maps, and is refused for a map input, as onnxruntime
  refuses it;
* a ``list`` or ``tuple`` for a sequence input: its elements converted as above;
* an :class:`~onnxcore.runtime.ort_values.OrtValue`: its value.

Failures are :class:`~onnxcore.errors.InputError`, naming the input; the façade raises them as onnxruntime's
``InvalidArgument`` (also the ``InputError``; a ``RuntimeError``, as onnxruntime's refusals of a feed are).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from onnxcore.errors import InputError
from onnxcore.proto import TensorProto, TypeProto
from onnxcore.runtime.feeds import np_dtype
from onnxcore.runtime.ort_values import OrtValue

__all__ = ["convert_feeds"]

_STRING = int(TensorProto.DataType.STRING)
_SCALARS = (bool, int, float, str, bytes, np.generic)


def convert_feeds(feeds: Mapping[str, Any], types: Mapping[str, TypeProto | None]) -> Mapping[str, Any]:
    """The feeds with each value converted as onnxruntime converts it (module docstring); ``feeds`` itself when
    every value is a numpy array that is not an object array (nothing to convert).

    Args:
        feeds: The caller's feeds by input name (names already checked).
        types: The declared type of each input (None: undeclared, taken as given).

    Raises:
        InputError: a value that cannot be converted to its input's type.
    """
    for value in feeds.values():
        if type(value) is not np.ndarray or value.dtype.kind == "O":
            break
    else:
        return feeds  # the common case: arrays only, checked by the session as they are
    out: dict[str, Any] = {}
    for name, value in feeds.items():
        if type(value) is np.ndarray and value.dtype.kind != "O":
            out[name] = value
            continue
        if isinstance(value, OrtValue):  # onnxruntime takes an OrtValue in run()'s feeds too
            value = value.numpy()
        tp = types.get(name)
        out[name] = value if tp is None else _convert(value, tp, f"input {name!r}")
    return out


def _convert(value: Any, tp: TypeProto, where: str) -> Any:
    kind = tp.which_oneof("value")
    if kind == "tensor_type" and tp.tensor_type is not None:
        return _tensor(value, int(tp.tensor_type.elem_type), where)
    if kind == "sequence_type" and tp.sequence_type is not None and isinstance(value, list | tuple):
        et = tp.sequence_type.elem_type
        return [v if et is None else _convert(v, et, f"{where}[{i}]") for i, v in enumerate(value)]
    if kind == "map_type" and tp.map_type is not None:
        return _map(value, tp.map_type, where)
    if kind == "optional_type" and tp.optional_type is not None and tp.optional_type.elem_type is not None:
        return None if value is None else _convert(value, tp.optional_type.elem_type, where)
    return value


def _tensor(value: Any, elem: int, where: str) -> Any:
    if elem == _STRING:
        return _strings(value, where)
    want = np_dtype(elem) if elem else None
    if isinstance(value, np.ndarray) or want is None:
        return value
    if isinstance(value, list | tuple) or isinstance(value, _SCALARS):
        return _cast(value, want, where)
    return value


def _cast(value: Any, want: np.dtype[Any], where: str) -> np.ndarray:
    what = "list" if isinstance(value, list | tuple) else type(value).__name__
    try:
        arr = np.array(value)
    except ValueError as exc:  # a ragged list
        raise InputError(f"{where}: could not create a tensor from the given {what} ({exc})") from None
    if want.kind == "b" and arr.dtype.kind in "US":
        return arr != ""  # onnxruntime reads each element's truth, as Python does: a non-empty text is true
    if arr.dtype == object or arr.dtype.kind in "USV":
        raise InputError(
            f"{where}: could not create a tensor of {want} from the given {what} (its elements are {arr.dtype})"
        )
    if arr.dtype.kind in "fc" and want.kind in "iu" and arr.size and not np.isfinite(arr).all():
        raise InputError(f"{where}: the given {what} holds NaN or an infinity, and the input is {want}")
    try:
        with np.errstate(all="ignore"):
            return arr.astype(want)
    except (ValueError, TypeError, OverflowError) as exc:
        raise InputError(f"{where}: could not convert the given {what} to {want} ({exc})") from None


def _strings(value: Any, where: str) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "US":
            return value
        if value.dtype != object:
            raise InputError(f"{where}: element type {value.dtype} where the input declares string (Clause 6.2)")
        arr = value
    elif isinstance(value, list | tuple):
        try:
            arr = np.array(value, dtype=object)
        except ValueError:  # ragged in a way numpy refuses even for objects: one element per item
            arr = np.empty(len(value), dtype=object)
            arr[:] = list(value)
    elif isinstance(value, _SCALARS):
        arr = np.array(value, dtype=object)
    else:
        return value
    if all(type(x) is str or type(x) is bytes for x in arr.flat):
        return arr
    out = np.empty(arr.shape, dtype=object)
    for idx, x in np.ndenumerate(arr):
        # onnxruntime reads an element that is not text as its str(): None is 'None', NaN 'nan'.
        out[idx] = x if isinstance(x, str | bytes) else str(x)
    return out


def _map(value: Any, mt: TypeProto.Map, where: str) -> Any:
    if isinstance(value, list):
        raise InputError(
            f"{where}: a list (of {len(value)} dicts?) fed for a map input: feed one dict (a list of dicts is a "
            "sequence of maps)"
        )
    if not isinstance(value, Mapping):
        return value
    string_keys = int(mt.key_type) == _STRING
    vt = mt.value_type
    out: dict[Any, Any] = {}
    for k, v in value.items():
        if string_keys:
            if not isinstance(k, str | bytes):
                raise InputError(f"{where}: key {k!r} ({type(k).__name__}) in a map whose keys are strings")
        elif isinstance(k, bool) or not isinstance(k, numbers.Integral):
            raise InputError(f"{where}: key {k!r} ({type(k).__name__}) in a map whose keys are integers")
        else:
            k = int(k)
        out[k] = _map_value(v, vt, f"{where}[{k!r}]")
    return out


def _map_value(v: Any, vt: TypeProto | None, where: str) -> Any:
    if vt is None:
        return v
    converted = _convert(v, vt, where)
    tt = vt.tensor_type if vt.which_oneof("value") == "tensor_type" else None
    if isinstance(converted, np.ndarray) and converted.ndim == 0 and tt is not None and tt.shape is not None:
        dims = tt.shape.dim
        # A scalar for a value type declared [1] (or [1, 1]): the one element of that shape.
        if dims and all(not d.has("dim_value") or d.dim_value == 1 for d in dims):
            return converted.reshape((1,) * len(dims))
    return converted
