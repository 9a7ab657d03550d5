"""``onnx.numpy_helper``: arrays and Python values from and to messages, over :mod:`onnxcore.types`.

Adapters only: onnx's argument names and defaults (``name=None``, ``base_dir=""``) translated to
:func:`onnxcore.to_array`, :func:`onnxcore.from_array`, :func:`onnxcore.value_from_proto` and
:func:`onnxcore.value_to_proto`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from onnxcore.build.helper import make_optional, make_sequence
from onnxcore.proto.bridge import as_message
from onnxcore.proto.message import adopt_lists
from onnxcore.proto.messages import MapProto, OptionalProto, SequenceProto, TensorProto
from onnxcore.types import from_array as _from_array
from onnxcore.types import to_array as _to_array
from onnxcore.types import value_from_proto, value_to_proto

__all__ = ["from_array", "from_dict", "from_list", "from_optional", "to_array", "to_dict", "to_list", "to_optional"]


def to_array(tensor: TensorProto | Any, base_dir: str = "") -> npt.NDArray[Any]:
    """The contents of a TensorProto as a numpy array (``onnx.numpy_helper.to_array``).

    A STRING tensor gives ``str`` elements decoded from UTF-8, as onnx's does (:func:`onnxcore.to_array` keeps the
    ``bytes``).
    """
    arr = _to_array(tensor, base_dir=base_dir or None)
    if arr.dtype == object:
        return np.array([s.decode("utf-8") for s in arr.reshape(-1)], dtype=object).reshape(arr.shape)
    return arr


def from_array(array: Any, name: str | None = None) -> TensorProto:
    """A TensorProto holding ``array`` in ``raw_data`` (STRING in ``string_data``), as onnx writes it."""
    return _from_array(np.asarray(array) if not isinstance(array, np.ndarray | np.generic) else array, name or "")


def to_list(sequence: SequenceProto | Any) -> list[Any]:
    """The values of a SequenceProto as a list."""
    out: list[Any] = value_from_proto(as_message(sequence, SequenceProto, "to_list"))
    return out


def from_list(lst: list[Any], name: str | None = None, dtype: int | None = None) -> SequenceProto:
    """A SequenceProto of ``lst`` (arrays, lists or dicts); ``dtype`` (a ``SequenceProto.DataType``) types an
    empty list."""
    if not lst:
        return make_sequence(name or "", SequenceProto.TENSOR if dtype is None else dtype, [])
    if not all(isinstance(v, type(lst[0])) for v in lst):
        raise TypeError(
            "The element type in the input list is not the same for all elements and therefore is not supported "
            "as a sequence."
        )
    out: SequenceProto = value_to_proto(list(lst), name or "")
    return adopt_lists(out)


def to_dict(map_proto: MapProto | Any) -> dict[Any, Any]:
    """The entries of a MapProto as a dict."""
    out: dict[Any, Any] = value_from_proto(as_message(map_proto, MapProto, "to_dict"))
    return out


def from_dict(dict_: dict[Any, Any], name: str | None = None) -> MapProto:
    """A MapProto of ``dict_``."""
    if not dict_:
        raise ValueError("Cannot convert an empty dictionary to MapProto.")
    out: MapProto = value_to_proto(dict(dict_), name or "")
    return adopt_lists(out)


def to_optional(optional: OptionalProto | Any) -> Any:
    """The value an OptionalProto holds, or None."""
    return value_from_proto(as_message(optional, OptionalProto, "to_optional"))


def from_optional(opt: Any, name: str | None = None, dtype: int | None = None) -> OptionalProto:
    """An OptionalProto holding ``opt`` (None: an empty optional, of element kind ``dtype`` when given)."""
    if opt is None:
        return OptionalProto(name=name or "", elem_type=OptionalProto.UNDEFINED if dtype is None else dtype)
    inner = value_to_proto(opt, "")
    kinds = {TensorProto: OptionalProto.TENSOR, SequenceProto: OptionalProto.SEQUENCE, MapProto: OptionalProto.MAP}
    kind = kinds.get(type(inner), OptionalProto.OPTIONAL)
    return adopt_lists(make_optional(name or "", kind if dtype is None else dtype, inner))
