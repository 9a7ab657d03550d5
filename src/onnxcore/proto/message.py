"""The base class of every Annex B record class: presence, equality, repr."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

if TYPE_CHECKING:
    from onnxcore.proto.spec import FieldSpec, MessageSpec

__all__ = ["Message", "copy_message"]

_D = struct.Struct("<d")


def _float_bits(v: float) -> bytes:
    return _D.pack(v)


class Message:
    """Base of the Annex B record classes.

    Fields are plain slots named as in Annex B. Presence of a singular scalar field is tracked
    separately (``_present``) because presence is meaning in this format: a field set to its
    default value is still written when it was present (Clause 12.3.2, Annex B).
    Unknown fields read from the wire are kept in ``_unknown`` as their original octets and are
    written back after the known fields (Clause 12.4).
    """

    __slots__ = ("_present", "_unknown")

    _SPEC: ClassVar[MessageSpec]
    _present: int
    _unknown: list[tuple[int, bytes | bytearray | memoryview]] | None

    def _field(self, name: str) -> FieldSpec:
        try:
            return self._SPEC.by_name[name]
        except KeyError:
            raise ValueError(f"{self._SPEC.name} has no field {name!r}") from None

    def has(self, name: str) -> bool:
        """Whether field ``name`` is present.

        A repeated field is present when it holds at least one value; an embedded message when
        it is not ``None``; a scalar when it was read from the wire or given explicitly, or when
        its value differs from the default.
        """
        f = self._field(name)
        return self._has(f)

    def _has(self, f: FieldSpec) -> bool:
        v = getattr(self, f.name)
        if f.repeated:
            return len(v) > 0
        if f.kind == "message":
            return v is not None
        if self._present >> f.index & 1:
            return True
        if isinstance(v, float):
            return _float_bits(v) != _float_bits(0.0)
        return bool(v != f.default)

    def mark_present(self, name: str) -> None:
        """Mark a scalar field present although it holds its default (so it is written)."""
        f = self._field(name)
        if f.repeated or f.kind == "message":
            raise ValueError(f"{self._SPEC.name}.{name} is not a singular scalar field")
        self._present |= 1 << f.index

    def clear_field(self, name: str) -> None:
        """Reset field ``name`` to absent."""
        f = self._field(name)
        if f.repeated:
            setattr(self, name, [])
        elif f.kind == "message":
            setattr(self, name, None)
        else:
            setattr(self, name, f.default)
            self._present &= ~(1 << f.index)

    def which_oneof(self, group: str) -> str | None:
        """Name of the present member of oneof ``group`` (the last one in table order), or None."""
        members = self._SPEC.oneofs.get(group)
        if members is None:
            raise ValueError(f"{self._SPEC.name} has no oneof group {group!r}")
        found = None
        for m in members:
            if self._has(self._SPEC.by_name[m]):
                found = m
        return found

    def present_fields(self) -> list[str]:
        """Names of the present fields, in table order."""
        return [f.name for f in self._SPEC.fields if self._has(f)]

    @property
    def unknown_fields(self) -> list[tuple[int, bytes]]:
        """The unknown fields kept from the wire, as ``(tag, octets of key and value)``."""
        return [(t, bytes(b)) for t, b in (self._unknown or [])]

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Message)
        for f in self._SPEC.fields:
            a = getattr(self, f.name)
            b = getattr(other, f.name)
            if f.repeated or f.kind == "message":
                if f.type in ("float", "double") and f.repeated:
                    if len(a) != len(b) or any(_float_bits(x) != _float_bits(y) for x, y in zip(a, b)):
                        return False
                elif a != b:
                    return False
                continue
            if self._has(f) != other._has(f):
                return False
            if isinstance(a, float) and isinstance(b, float):
                if _float_bits(a) != _float_bits(b):
                    return False
            elif a != b:
                return False
        return self.unknown_fields == other.unknown_fields

    __hash__ = None  # type: ignore[assignment]  # mutable records

    def __repr__(self) -> str:
        parts = []
        for f in self._SPEC.fields:
            if not self._has(f):
                continue
            v: Any = getattr(self, f.name)
            parts.append(f"{f.name}={_short(v)}")
        if self._unknown:
            parts.append(f"<{len(self._unknown)} unknown fields>")
        return f"{self._SPEC.name}({', '.join(parts)})"

    def __copy__(self) -> Message:
        return copy_message(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Message:
        return copy_message(self)


M = TypeVar("M", bound=Message)


def copy_message(msg: M) -> M:
    """A deep copy of ``msg`` (zero-copy ``raw_data`` views are shared, being read-only)."""
    cls = type(msg)
    out = cls.__new__(cls)
    for f in msg._SPEC.fields:
        v = getattr(msg, f.name)
        if f.kind == "message":
            if f.repeated:
                v = [copy_message(x) for x in v]
            elif v is not None:
                v = copy_message(v)
        elif f.repeated:
            v = list(v)
        setattr(out, f.name, v)
    out._present = msg._present
    out._unknown = list(msg._unknown) if msg._unknown else None
    return out


def _short(v: Any) -> str:
    if isinstance(v, memoryview | bytes | bytearray) and len(v) > 32:
        return f"<{len(v)} bytes>"
    if isinstance(v, list) and len(v) > 8:
        head = ", ".join(_short(x) for x in v[:8])
        return f"[{head}, ... {len(v)} items]"
    if isinstance(v, list):
        return "[" + ", ".join(_short(x) for x in v) + "]"
    if isinstance(v, memoryview):
        return repr(bytes(v))
    return repr(v)
