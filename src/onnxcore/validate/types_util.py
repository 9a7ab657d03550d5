"""Thin adapters over :mod:`onnxcore.types` for the rules (element types, type strings, storage)."""

from __future__ import annotations

import functools
from typing import Any

from onnxcore.infer.results import stated_dims
from onnxcore.proto.messages import TypeProto

__all__ = [
    "elem_ir_version",
    "elem_type",
    "type_string",
    "tensor_type_string",
    "dims_of",
]


@functools.cache
def elem_type(tag: int) -> Any:
    """The ``ElementType`` of a wire tag, or None for tag 0 or an unlisted tag (Clause 6.2)."""
    from onnxcore.types.elements import ElementType

    try:
        return ElementType(tag)
    except ValueError:
        return None


def elem_ir_version(tag: int) -> int | None:
    """The IR version that introduced element type ``tag`` (Table 12), None if the tag is invalid."""
    et = elem_type(tag)
    return None if et is None else int(et.ir_version)


@functools.cache
def tensor_type_string(tag: int) -> str | None:
    """``"tensor(float)"`` for tag 1, None for an invalid tag."""
    et = elem_type(tag)
    return None if et is None else f"tensor({et.type_name})"


def type_string(tp: TypeProto | None) -> str | None:
    """The onnx type string of a declared type (``"tensor(float)"``, ``"seq(tensor(int64))"``...).

    None where the type is unknown or incomplete; unknown is never an error by itself (Clause 9.4).
    """
    if tp is None:
        return None
    t = tp.tensor_type
    if t is not None and tp.which_oneof("value") == "tensor_type":
        # The common case, without the general conversion.
        return tensor_type_string(t.elem_type) if t.elem_type else None
    from onnxcore.types import type_string as impl

    try:
        s = impl(tp)
    except Exception:  # an unanalysable type is unknown, not a crash
        return None
    return s if isinstance(s, str) else None


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
