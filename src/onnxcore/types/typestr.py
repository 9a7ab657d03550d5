"""Type strings: the spelling operator type constraints use (``tensor(float)``, ``seq(tensor(int64))``).

Inference works on type strings rather than ``TypeProto`` messages: they are hashable, cheap to compare
and they are what the constraints of ONNX 1-2 are written in. :func:`type_string` maps a ``TypeProto``
to its string (None when the type is not fully known, Clause 9.4) and :func:`parse_type_string` maps
back to a ``TypeProto`` without shape.
"""

from __future__ import annotations

from functools import lru_cache

from onnxcore.proto.message import copy_message
from onnxcore.proto.messages import TensorProto, TypeProto

__all__ = ["ELEM_NAMES", "ELEM_TAGS", "elem_type_string", "parse_type_string", "tensor_elem", "type_string"]

# Table 5: onnx's type names are the lower-cased DataType names ("float", "bfloat16", "float8e4m3fn").
ELEM_NAMES: dict[int, str] = {int(t): t.name.lower() for t in TensorProto.DataType if int(t) != 0}
ELEM_TAGS: dict[str, int] = {v: k for k, v in ELEM_NAMES.items()}


def elem_type_string(elem_type: int) -> str | None:
    """``"tensor(<name>)"`` for an element type tag, None for 0 (undefined) or an unknown tag."""
    name = ELEM_NAMES.get(elem_type)
    return None if name is None else f"tensor({name})"


def _type_string(tp: TypeProto | None, depth: int = 0) -> str | None:
    if tp is None or depth > 64:
        return None
    t = tp.tensor_type
    if (
        t is not None
        and tp.sparse_tensor_type is None
        and tp.opaque_type is None
        and tp.sequence_type is None
        and tp.map_type is None
        and tp.optional_type is None
    ):
        # the common case, without the general oneof reading
        name = ELEM_NAMES.get(t.elem_type)
        return None if name is None else f"tensor({name})"
    kind = tp.which_oneof("value")
    if kind == "tensor_type":
        t = tp.tensor_type
        name = ELEM_NAMES.get(t.elem_type) if t is not None else None
        return None if name is None else f"tensor({name})"
    if kind == "sparse_tensor_type":
        st = tp.sparse_tensor_type
        name = ELEM_NAMES.get(st.elem_type) if st is not None else None
        return None if name is None else f"sparse_tensor({name})"
    if kind == "sequence_type":
        inner = _type_string(tp.sequence_type.elem_type, depth + 1) if tp.sequence_type is not None else None
        return None if inner is None else f"seq({inner})"
    if kind == "optional_type":
        inner = _type_string(tp.optional_type.elem_type, depth + 1) if tp.optional_type is not None else None
        return None if inner is None else f"optional({inner})"
    if kind == "map_type":
        m = tp.map_type
        if m is None:
            return None
        key = ELEM_NAMES.get(m.key_type)
        value = _type_string(m.value_type, depth + 1)
        return None if key is None or value is None else f"map({key},{value})"
    if kind == "opaque_type":
        o = tp.opaque_type
        if o is None:
            return None
        # onnx's spelling: the domain and a comma only when the domain is not the default one
        return f"opaque({o.domain},{o.name or ''})" if o.domain else f"opaque({o.name or ''})"
    return None


def type_string(tp: TypeProto | None) -> str | None:
    """The type string of ``tp`` in the canonical form of the constraints; None when not fully known.

    Read directly from the message (no value type with its shape is built): inference and validation call
    it once per declared value. :func:`onnxcore.types.type_string` is this function for messages.
    """
    return _type_string(tp)


def tensor_elem(type_str: str | None) -> str | None:
    """The element name of ``tensor(x)``, or None for anything else."""
    if type_str is not None and type_str.startswith("tensor(") and type_str.endswith(")"):
        return type_str[7:-1]
    return None


@lru_cache(maxsize=512)
def _parse(text: str) -> TypeProto:
    return _build(text.replace(" ", ""))


def _split_top(inner: str) -> tuple[str, str]:
    depth = 0
    for i, ch in enumerate(inner):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            return inner[:i], inner[i + 1 :]
    raise ValueError(f"not a map type string: map({inner})")


def _build(s: str) -> TypeProto:
    if "(" not in s or not s.endswith(")"):
        raise ValueError(f"not a type string: {s!r}")
    head, inner = s[:-1].split("(", 1)
    if head == "tensor":
        return TypeProto(tensor_type=TypeProto.Tensor(elem_type=ELEM_TAGS[inner]))
    if head == "sparse_tensor":
        return TypeProto(sparse_tensor_type=TypeProto.SparseTensor(elem_type=ELEM_TAGS[inner]))
    if head == "seq":
        return TypeProto(sequence_type=TypeProto.Sequence(elem_type=_build(inner)))
    if head == "optional":
        return TypeProto(optional_type=TypeProto.Optional(elem_type=_build(inner)))
    if head == "map":
        key, value = _split_top(inner)
        return TypeProto(map_type=TypeProto.Map(key_type=ELEM_TAGS[key], value_type=_build(value)))
    if head == "opaque":
        domain, name = _split_top(inner) if "," in inner else ("", inner)
        return TypeProto(opaque_type=TypeProto.Opaque(domain=domain or None, name=name or None))
    raise ValueError(f"not a type string: {s!r}")


def parse_type_string(text: str) -> TypeProto:
    """A new ``TypeProto`` (no shape) for a type string.

    Raises:
        ValueError: ``text`` is not a type string.
    """
    try:
        proto = _parse(text)
    except KeyError as e:
        raise ValueError(f"unknown element type in {text!r}") from e
    result = copy_message(proto)
    assert isinstance(result, TypeProto)
    return result
