"""The base class of every Annex B record class: presence, equality, repr, and protobuf's Python message API.

Beside our own names (``has``, ``clear_field``, ``which_oneof``), a message answers the methods of protobuf's
Python messages that onnx scripts call (``SerializeToString``, ``ParseFromString``, ``CopyFrom``, ``MergeFrom``,
``HasField``, ``ClearField``, ``WhichOneof``, ``ListFields``, ``ByteSize``, ``Clear``, ...), with protobuf's
semantics for proto2 messages (onnx.proto is proto2: every singular field has presence), and ``str()`` gives
protobuf's text format (:mod:`onnxcore.proto.textproto`). A repeated embedded-message field is a
:class:`RepeatedMessages` list, which adds protobuf's ``add(**fields)``. Assigning a member of a oneof clears
the other members (:func:`install_oneof_assignment`, on the three classes that have a oneof). The differences
from protobuf that remain (an absent embedded message reads as ``None``; a repeated field may be assigned) are
listed in docs/onnx.md.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from enum import IntEnum
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from onnxcore.proto.textproto import FIELDS_IN_TAG_ORDER, message_to_text

if TYPE_CHECKING:
    from onnxcore.proto.spec import FieldSpec, MessageSpec

__all__ = [
    "Message",
    "ProtoEnum",
    "RepeatedMessages",
    "adopt_lists",
    "copy_message",
    "install_codec",
    "install_oneof_assignment",
    "install_presence_assignment",
    "shallow_copy",
]

_D = struct.Struct("<d")


def _float_bits(v: float) -> bytes:
    return _D.pack(v)


_F = struct.Struct("<f")


def _binary32_bits(v: float) -> bytes:
    # A float field is binary32 on the wire (Annex B): two values that encode alike are equal, as in protobuf,
    # which stores a float field's value rounded to binary32 when it is assigned.
    bits = getattr(v, "bits", None)  # a NaN read from the wire keeps its exact pattern (decoder.NanBits)
    if bits is not None:
        return int(bits).to_bytes(4, "little")
    try:
        return _F.pack(v)
    except OverflowError:  # beyond binary32: not encodable as it is, compared as a double
        return _D.pack(v)


class ProtoEnum(IntEnum):
    """An Annex B enumeration, with the class methods of protobuf's enum wrapper (``TensorProto.DataType.Name(1)``)."""

    @classmethod
    def Name(cls, number: int) -> str:
        """The name of value ``number``.

        Raises:
            ValueError: no value of the enumeration has that number (protobuf's message).
        """
        try:
            return cls(number).name
        except ValueError:
            raise ValueError(f"Enum {cls.__name__} has no name defined for value {number!r}") from None

    @classmethod
    def Value(cls, name: str) -> int:
        """The number of value ``name``.

        Raises:
            ValueError: no value of the enumeration has that name (protobuf's message).
        """
        member = cls.__members__.get(name)
        if member is None:
            raise ValueError(f"Enum {cls.__name__} has no value defined for name {name!r}")
        return int(member)

    @classmethod
    def keys(cls) -> list[str]:
        """The value names, in declaration order."""
        return list(cls.__members__)

    @classmethod
    def values(cls) -> list[int]:
        """The value numbers, in declaration order."""
        return [int(v) for v in cls.__members__.values()]

    @classmethod
    def items(cls) -> list[tuple[str, int]]:
        """``(name, number)`` pairs, in declaration order."""
        return [(k, int(v)) for k, v in cls.__members__.items()]


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
    # The list class of a repeated field of this message type (``NodeProto._List``), and, per repeated
    # embedded-message field of this class, its element's list class (set by ``proto/decoder.py`` with ``_SPEC``).
    _List: ClassVar[type[RepeatedMessages[Any]]]
    _LISTS: ClassVar[dict[str, type[RepeatedMessages[Any]]]]
    # Per oneof member: its field and the other members of its group (classes with a oneof only).
    _ONEOF_SIBLINGS: ClassVar[dict[str, tuple[FieldSpec, tuple[FieldSpec, ...]]]]
    _present: int
    _unknown: list[tuple[int, bytes | bytearray | memoryview]] | None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._List = type(f"{cls.__name__}List", (RepeatedMessages,), {"__slots__": (), "_element": cls})

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
                    bits = _binary32_bits if f.type == "float" else _float_bits
                    if len(a) != len(b) or any(bits(x) != bits(y) for x, y in zip(a, b)):
                        return False
                elif a != b:
                    return False
                continue
            if self._has(f) != other._has(f):
                return False
            if isinstance(a, float) and isinstance(b, float):
                bits = _binary32_bits if f.type == "float" else _float_bits
                if bits(a) != bits(b):
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

    def __str__(self) -> str:
        return message_to_text(self)

    # ---- protobuf's Python message API (onnx scripts call these) -------------------------------------------

    def _no_field(self, name: str) -> ValueError:
        return ValueError(f'Protocol message {self._SPEC.name.rsplit(".", 1)[-1]} has no "{name}" field.')

    def _take(self, other: Message) -> None:
        # Become ``other`` (a fresh message nobody else holds): its values, presence and unknown fields.
        for f in self._SPEC.fields:
            setattr(self, f.name, getattr(other, f.name))
        self._present = other._present
        self._unknown = other._unknown

    def _check_same_class(self, other: object, method: str) -> None:
        if type(other) is not type(self):
            raise TypeError(
                f"Parameter to {method}() must be instance of same class: expected {type(self).__name__} "
                f"got {type(other).__name__}."
            )

    def SerializeToString(self, *, deterministic: bool | None = None) -> bytes:
        """The message's octets (Clause 12), as protobuf's ``SerializeToString``.

        Args:
            deterministic: Accepted for protobuf's signature; our encoding is always deterministic.
        """
        return _codec_encode(self)

    def SerializePartialToString(self, *, deterministic: bool | None = None) -> bytes:
        """The same as :meth:`SerializeToString` (onnx.proto has no required field)."""
        return _codec_encode(self)

    def ParseFromString(self, data: bytes | bytearray | memoryview) -> int:
        """Clear the message and read ``data`` into it; return the number of octets read.

        Raises:
            DecodeError: ``data`` is not a message of this type (protobuf raises its own ``DecodeError``).
        """
        self._take(_codec_decode(type(self), data))
        return len(memoryview(data).cast("B"))

    def MergeFromString(self, data: bytes | bytearray | memoryview) -> int:
        """Read ``data`` and merge it into the message (:meth:`MergeFrom`); return the number of octets read."""
        self.MergeFrom(_codec_decode(type(self), data))
        return len(memoryview(data).cast("B"))

    @classmethod
    def FromString(cls: type[M], data: bytes | bytearray | memoryview) -> M:
        """A new message read from ``data`` (protobuf's class method)."""
        out: M = _codec_decode(cls, data)  # type: ignore[assignment]
        return out

    def CopyFrom(self, other: Message) -> None:
        """Make the message a deep copy of ``other``, a message of the same class (``TypeError`` otherwise)."""
        self._check_same_class(other, "CopyFrom")
        if other is not self:
            self._take(copy_message(other))

    def MergeFrom(self, other: Message) -> None:
        """Merge ``other`` (same class) into the message, by protobuf's rules.

        A field present in ``other`` overwrites a singular scalar (and clears the other members of its oneof),
        a repeated field gets copies of ``other``'s elements appended, an embedded message is merged field by
        field (created when absent); unknown fields are appended.
        """
        self._check_same_class(other, "MergeFrom")
        spec = self._SPEC
        for f in spec.fields:
            v = getattr(other, f.name)
            if f.repeated:
                if v:
                    getattr(self, f.name).extend([copy_message(x) for x in v] if f.kind == "message" else v)
                continue
            if not other._has(f):
                continue
            if f.oneof is not None:
                for name in spec.oneofs[f.oneof]:
                    if name != f.name:
                        self.clear_field(name)
            if f.kind == "message":
                mine = getattr(self, f.name)
                if mine is None:
                    setattr(self, f.name, copy_message(v))
                else:
                    mine.MergeFrom(v)
            else:
                setattr(self, f.name, v)
                self._present |= 1 << f.index
        if other._unknown:
            self._unknown = (self._unknown or []) + list(other._unknown)

    def HasField(self, field_name: str) -> bool:
        """Whether singular field (or oneof group) ``field_name`` is present.

        Raises:
            ValueError: no such field, or a repeated field (it has no presence), as protobuf raises.
        """
        f = self._SPEC.by_name.get(field_name)
        if f is None:
            if field_name in self._SPEC.oneofs:
                return self.which_oneof(field_name) is not None
            raise self._no_field(field_name)
        if f.repeated:
            raise ValueError(f"Field onnx.{self._SPEC.name}.{field_name} does not have presence.")
        return self._has(f)

    def ClearField(self, field_name: str) -> None:
        """Make field ``field_name`` absent (a oneof group's name clears its present member).

        Raises:
            ValueError: no such field or group.
        """
        if field_name not in self._SPEC.by_name:
            members = self._SPEC.oneofs.get(field_name)
            if members is None:
                raise self._no_field(field_name)
            for name in members:
                self.clear_field(name)
            return
        f = self._SPEC.by_name[field_name]
        if f.repeated and f.kind == "message":
            setattr(self, field_name, self._LISTS[field_name]())
        else:
            self.clear_field(field_name)

    def WhichOneof(self, oneof_group: str) -> str | None:
        """Name of the present member of oneof group ``oneof_group``, or None.

        Raises:
            ValueError: the message has no such group.
        """
        if oneof_group not in self._SPEC.oneofs:
            raise self._no_field(oneof_group)
        return self.which_oneof(oneof_group)

    def ListFields(self) -> list[tuple[FieldSpec, Any]]:
        """``(field, value)`` of every present field in increasing tag order, as protobuf lists them.

        The field is our :class:`~onnxcore.proto.spec.FieldSpec` (``.name``, ``.tag``, ``.type``), where
        protobuf gives its descriptor.
        """
        return [(f, getattr(self, f.name)) for f in FIELDS_IN_TAG_ORDER[self._SPEC.name] if self._has(f)]

    def ByteSize(self) -> int:
        """The length of the message's octets."""
        return len(_codec_encode(self))

    def IsInitialized(self) -> bool:
        """Always true: onnx.proto declares no required field."""
        return True

    def Clear(self) -> None:
        """Make every field absent and drop the unknown fields."""
        self._take(type(self)())

    def DiscardUnknownFields(self) -> None:
        """Drop the unknown fields kept from the wire, in this message and every message it holds."""
        self._unknown = None
        for f in self._SPEC.fields:
            if f.kind != "message":
                continue
            v = getattr(self, f.name)
            for m in v if f.repeated else ([] if v is None else [v]):
                m.DiscardUnknownFields()

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as protobuf pickles its messages: by the octets (a decoded raw_data is a memoryview, which
        # pickle cannot take; the octets carry every field and the unknown ones).
        return (_from_octets, (type(self), self.SerializeToString()))

    def __copy__(self) -> Message:
        return copy_message(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Message:
        return copy_message(self)


M = TypeVar("M", bound=Message)


class RepeatedMessages(list[M], Generic[M]):
    """A repeated embedded-message field: a list, with protobuf's ``add`` (and ``MergeFrom``).

    Each message class has its own subclass (``NodeProto._List``), which knows the element class.
    """

    __slots__ = ()

    _element: ClassVar[type[Message]]

    def add(self, **fields: Any) -> M:
        """Append a new element made from ``fields`` (the message constructor's keywords) and return it."""
        try:
            item: M = self._element(**fields)  # type: ignore[assignment]
        except TypeError:
            bad = [k for k in fields if k not in self._element._SPEC.by_name]
            if bad:
                raise ValueError(
                    f'Protocol message {self._element._SPEC.name.rsplit(".", 1)[-1]} has no "{bad[0]}" field.'
                ) from None
            raise
        self.append(item)
        return item

    def MergeFrom(self, other: Iterable[M]) -> None:
        """Append copies of ``other``'s elements."""
        self.extend([copy_message(x) for x in other])

    def __repr__(self) -> str:
        # As protobuf shows a repeated message field (print(model.graph.value_info)): its elements' text format.
        return "[" + ", ".join(str(x) for x in self) + "]"


_Encode = Callable[[Message], bytes]
_Decode = Callable[[type[Message], "bytes | bytearray | memoryview"], Message]


def _no_codec(*args: Any) -> Any:
    raise RuntimeError("the codec is not installed (onnxcore.proto.encoder installs it when imported)")


_codec_encode: _Encode = _no_codec
_codec_decode: _Decode = _no_codec


def install_codec(encode: _Encode, decode: _Decode) -> None:
    """Give the messages' protobuf methods the codec (called once by :mod:`onnxcore.proto.encoder`, which is
    above this module: it imports the message classes)."""
    global _codec_encode, _codec_decode
    _codec_encode = encode
    _codec_decode = decode


def _oneof_setattr(self: Message, name: str, value: Any) -> None:
    # Assigning a member of a oneof a value replaces the member set before, as in protobuf: its siblings become
    # absent. A default value (what constructors and the decoder write for an absent field) changes nothing else.
    object.__setattr__(self, name, value)
    entry = type(self)._ONEOF_SIBLINGS.get(name)
    if entry is None:
        return
    f, siblings = entry
    if value is None or (f.kind != "message" and value == f.default):
        return
    mask = 0
    for s in siblings:
        if s.kind == "message":
            object.__setattr__(self, s.name, None)
        else:
            object.__setattr__(self, s.name, s.default)
            mask |= 1 << s.index
    if mask:
        try:
            object.__setattr__(self, "_present", self._present & ~mask)
        except AttributeError:  # inside the constructor, before its presence bits are set (it sets them all)
            pass


def install_oneof_assignment(cls: type[Message]) -> None:
    """Make assignment to a oneof member of ``cls`` clear the other members (for the few classes with a oneof:
    ``TypeProto``, ``TensorShapeProto.Dimension``, ``SimpleShardedDimProto``; the others keep the plain, fast
    attribute assignment). Called by :mod:`onnxcore.proto.decoder` once ``cls._SPEC`` is set."""
    spec = cls._SPEC
    cls._ONEOF_SIBLINGS = {
        name: (spec.by_name[name], tuple(spec.by_name[o] for o in members if o != name))
        for members in spec.oneofs.values()
        for name in members
    }
    cls.__setattr__ = _oneof_setattr  # type: ignore[assignment,method-assign]


def _presence_setattr(self: Message, name: str, value: Any) -> None:
    # protobuf's assignment: a singular scalar field assigned any value, its default included, becomes present
    # (proto2, Annex B); a repeated message field assigned a plain list gets its list class (with add()).
    f = type(self)._SPEC.by_name.get(name)
    if f is not None and f.kind == "message" and f.repeated and type(value) is list:
        value = type(self)._LISTS[name](value)
    object.__setattr__(self, name, value)
    if f is None or f.repeated or f.kind == "message":
        return
    try:
        object.__setattr__(self, "_present", self._present | 1 << f.index)
    except AttributeError:  # inside the constructor or a copy, before its presence bits are set (it sets them all)
        pass


def install_presence_assignment(cls: type[Message]) -> None:
    """Make assignment to a field of ``cls`` behave as protobuf's: a scalar becomes present, a plain list given to
    a repeated message field becomes its list class. For the few classes an onnx script assigns fields of after
    building a model (``ModelProto``, ``OperatorSetIdProto``): the others keep the plain, fast attribute
    assignment. Called by :mod:`onnxcore.proto.decoder` once ``cls._SPEC`` and ``cls._LISTS`` are set; ``cls`` has
    no oneof."""
    assert not cls._SPEC.oneofs, cls
    cls.__setattr__ = _presence_setattr  # type: ignore[assignment,method-assign]


def _from_octets(cls: type[M], data: bytes) -> M:
    """A message of ``cls`` read from ``data`` (the unpickling side of :meth:`Message.__reduce__`)."""
    return cls.FromString(data)


def adopt_lists(msg: M) -> M:
    """Give every repeated embedded-message field of ``msg``, and of the messages it holds, its list class (with
    protobuf's ``add``), in place; return ``msg``.

    Decoding, constructors and copies make those lists already; a field assigned a plain list (as code inside the
    package may do) gets one here. The onnx façade's functions call this on what they return, so that an onnx
    script never meets a repeated field without ``add``.
    """
    stack: list[Message] = [msg]
    while stack:
        m = stack.pop()
        lists = m._LISTS
        for f in m._SPEC.fields:
            if f.kind != "message":
                continue
            v = getattr(m, f.name)
            if f.repeated:
                if type(v) is list:
                    v = lists[f.name](v)
                    setattr(m, f.name, v)
                stack.extend(v)
            elif v is not None:
                stack.append(v)
    return msg


def copy_message(msg: M) -> M:
    """A deep copy of ``msg`` (zero-copy ``raw_data`` views are shared, being read-only)."""
    cls = type(msg)
    out = cls.__new__(cls)
    for f in msg._SPEC.fields:
        v = getattr(msg, f.name)
        if f.kind == "message":
            if f.repeated:
                v = msg._LISTS[f.name]([copy_message(x) for x in v])
            elif v is not None:
                v = copy_message(v)
        elif f.repeated:
            v = list(v)
        setattr(out, f.name, v)
    out._present = msg._present
    out._unknown = list(msg._unknown) if msg._unknown else None
    return out


def shallow_copy(msg: M) -> M:
    """A new ``msg`` sharing its field values, lists and embedded messages included (``copy.copy`` copies deeply):
    for a copy one of whose fields is then replaced whole, never changed in place."""
    cls = type(msg)
    out = cls.__new__(cls)
    for f in msg._SPEC.fields:
        setattr(out, f.name, getattr(msg, f.name))
    out._present = msg._present
    out._unknown = msg._unknown
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
