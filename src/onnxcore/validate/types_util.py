"""Thin adapters over :mod:`onnxcore.types` for the rules (element types, type strings, storage)."""

from __future__ import annotations

import functools
from typing import Any

from onnxcore.proto.messages import TypeProto
from onnxcore.types.elements import ElementType
from onnxcore.types.typestr import type_string  # the one spelling of type strings (re-exported for the rules)
from onnxcore.types.valuetypes import stated_dims

__all__ = [
    "elem_type",
    "type_string",
    "dims_of",
]


@functools.cache
def elem_type(tag: int) -> Any:
    """The ``ElementType`` of a wire tag, or None for tag 0 or an unlisted tag (Clause 6.2)."""

    try:
        return ElementType(tag)
    except ValueError:
        return None


def dims_of(tp: TypeProto | None) -> list[int | str | None] | None:
    """The declared dims of a tensor type: ints, dimension variables, None for unknown; None if no shape."""
    dims = stated_dims(tp)
    return None if dims is None else list(dims)


def elem_of(tp: TypeProto | None) -> int:
    """The declared element type tag of a (sparse) tensor type, 0 when not stated."""
    if tp is None:
        return 0
    t = tp.tensor_type if tp.tensor_type is not None else tp.sparse_tensor_type
    return int(t.elem_type) if t is not None else 0
