"""Annex B as queryable data: :class:`FieldSpec`, :class:`MessageSpec`, :class:`EnumSpec`.

The rows come from :mod:`onnxcore.proto.annex_b` (generated from the spec). Codec, validator and
inspector all read the same objects, so there is one transcription of Annex B in the package.
"""

from __future__ import annotations

from typing import Any

from onnxcore.proto.annex_b import ENUMS, MESSAGES

__all__ = [
    "WIRE_VARINT",
    "WIRE_I64",
    "WIRE_LEN",
    "WIRE_I32",
    "FieldSpec",
    "MessageSpec",
    "EnumSpec",
    "MESSAGE_SPECS",
    "ENUM_SPECS",
]

# Table 10 (Clause 12.2.1).
WIRE_VARINT = 0
WIRE_I64 = 1
WIRE_LEN = 2
WIRE_I32 = 5

_SCALAR_WIRE = {
    "int32": WIRE_VARINT,
    "int64": WIRE_VARINT,
    "uint64": WIRE_VARINT,
    "bool": WIRE_VARINT,
    "double": WIRE_I64,
    "float": WIRE_I32,
    "string": WIRE_LEN,
    "bytes": WIRE_LEN,
}


class FieldSpec:
    """One row of an Annex B field table.

    Attributes:
        message: Qualified name of the message holding the field.
        name: Field name, as in Annex B.
        tag: Field tag.
        wire_type: The wire type Annex B records (2 for a packed repeated field).
        type: ``int32``, ``int64``, ``uint64``, ``float``, ``double``, ``string``, ``bytes``,
            or the qualified name of a message or enumeration.
        kind: ``"scalar"``, ``"enum"`` or ``"message"``.
        obligation: ``mandatory``, ``optional``, ``repeated``, ``deprecated`` or
            ``one of the group``.
        repeated: Whether the field is repeated.
        packed: Whether Annex B records the packed form for it.
        oneof: The oneof group the field belongs to, or ``None``.
        index: Position of the field in its table (also its presence bit).
        element_wire_type: Wire type of one element (differs from ``wire_type`` when packed).
    """

    __slots__ = (
        "default",
        "element_wire_type",
        "index",
        "kind",
        "message",
        "name",
        "obligation",
        "oneof",
        "packed",
        "repeated",
        "tag",
        "type",
        "wire_type",
    )

    def __init__(self, message: str, index: int, row: tuple[Any, ...]) -> None:
        name, tag, wire_type, type_, kind, obligation, repeated, packed, oneof = row
        self.message: str = message
        self.index: int = index
        self.name: str = name
        self.tag: int = tag
        self.wire_type: int = wire_type
        self.type: str = type_
        self.kind: str = kind
        self.obligation: str = obligation
        self.repeated: bool = repeated
        self.packed: bool = packed
        self.oneof: str | None = oneof
        self.element_wire_type: int = _SCALAR_WIRE.get(type_, WIRE_VARINT if kind == "enum" else WIRE_LEN)
        default: object
        if repeated:
            default = None
        elif kind == "message":
            default = None
        elif type_ in ("float", "double"):
            default = 0.0
        elif type_ == "string":
            default = ""
        elif type_ == "bytes":
            default = b""
        elif type_ == "bool":
            default = False
        else:
            default = 0
        self.default: object = default

    def __repr__(self) -> str:
        return f"FieldSpec({self.message}.{self.name}, tag={self.tag}, wire_type={self.wire_type}, type={self.type})"


class MessageSpec:
    """One message of Annex B: its fields, reserved tags and names, oneof groups."""

    __slots__ = ("by_name", "by_tag", "fields", "name", "oneofs", "reserved_names", "reserved_tags")

    def __init__(self, row: tuple[Any, ...]) -> None:
        name, fields, reserved_tags, reserved_names = row
        self.name: str = name
        self.fields: tuple[FieldSpec, ...] = tuple(FieldSpec(name, i, r) for i, r in enumerate(fields))
        self.by_name: dict[str, FieldSpec] = {f.name: f for f in self.fields}
        self.by_tag: dict[int, FieldSpec] = {f.tag: f for f in self.fields}
        self.reserved_tags: frozenset[int] = frozenset(reserved_tags)
        self.reserved_names: frozenset[str] = frozenset(reserved_names)
        groups: dict[str, list[str]] = {}
        for f in self.fields:
            if f.oneof is not None:
                groups.setdefault(f.oneof, []).append(f.name)
        self.oneofs: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in groups.items()}

    def __repr__(self) -> str:
        return f"MessageSpec({self.name}, {len(self.fields)} fields)"


class EnumSpec:
    """One enumeration of Annex B."""

    __slots__ = ("by_value", "name", "values")

    def __init__(self, row: tuple[Any, ...]) -> None:
        name, values = row
        self.name: str = name
        self.values: tuple[tuple[str, int], ...] = tuple(values)
        self.by_value: dict[int, str] = {v: n for n, v in reversed(self.values)}

    def __repr__(self) -> str:
        return f"EnumSpec({self.name}, {len(self.values)} values)"


MESSAGE_SPECS: dict[str, MessageSpec] = {row[0]: MessageSpec(row) for row in MESSAGES}
ENUM_SPECS: dict[str, EnumSpec] = {row[0]: EnumSpec(row) for row in ENUMS}
