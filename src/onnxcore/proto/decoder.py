"""Decoding of Annex B messages under Clause 12, driven by :mod:`onnxcore.proto.spec`.

Decoding is zero-copy for ``TensorProto.raw_data`` (a ``memoryview`` into the input) and keeps
unknown fields as their octets (Clause 12.4). This module also binds the record classes to their specs
(``MESSAGE_CLASSES``) and holds what encoding shares with decoding (``NanBits``, the integer ranges, the
fixed-width formats); encoding is :mod:`onnxcore.proto.encoder`.
"""

from __future__ import annotations

import mmap
import struct
import sys
from collections.abc import Callable
from types import FunctionType
from typing import Any, TypeVar

import numpy as np

from onnxcore.errors import DecodeError, DecodeLimitError
from onnxcore.limits import DEFAULT_LIMITS, collection_paused
from onnxcore.proto import decoders_gen
from onnxcore.proto import messages as _m
from onnxcore.proto.decoder_source import MESSAGES, decoder_source, hooked, inline_message_fields
from onnxcore.proto.message import Message, install_oneof_assignment, install_presence_assignment
from onnxcore.proto.spec import MESSAGE_SPECS, WIRE_LEN, FieldSpec
from onnxcore.wire.reader import Buffer, read_length, read_varint, skip_value

__all__ = [
    "MESSAGE_CLASSES",
    "DEFAULT_MAX_DEPTH",
    "NanBits",
    "decode_message",
    "decode_recording",
]

M = TypeVar("M", bound=Message)

# Nesting limit of embedded messages while decoding (Clause 15.4). Protobuf's own default is 100;
# ours is higher so that models nesting subgraphs a few dozen levels deep still load.
DEFAULT_MAX_DEPTH = 256
# Embedded messages in one repeated field, and in all (Clause 15.4): see Limits.
DEFAULT_MAX_REPEATED = DEFAULT_LIMITS.max_repeated_messages
DEFAULT_MAX_MESSAGES = DEFAULT_LIMITS.max_messages
_UNBOUNDED = 1 << 62
# The memory bound of decoding (issue 29): the objects a decode builds for embedded messages and repeated
# fields may cost at most DECODE_BYTES_PER_OCTET times the input octets plus DECODE_BYTES_BASE. Measured:
# real models cost 15 to 33 octets of memory per input octet (the light model zoo, a 50,000-node graph), an
# empty entry (two octets) 36 to 100 (an AttributeProto the most, 192 + 8 octets): the bound admits every
# real model and refuses a file of hundreds of thousands of empty entries before it costs more.
DECODE_BYTES_PER_OCTET = 64
DECODE_BYTES_BASE = 32 << 20
# What a list costs the budget when the decoder creates one for a repeated field (56 octets, plus slack).
_LIST_COST = 64


def _collect_classes() -> dict[str, type[Message]]:
    out: dict[str, type[Message]] = {}

    def visit(cls: Any, prefix: str) -> None:
        for name, val in vars(cls).items():
            if isinstance(val, type) and issubclass(val, Message) and val is not Message:
                qn = f"{prefix}.{name}" if prefix else name
                if qn in MESSAGE_SPECS and qn not in out:
                    out[qn] = val
                    visit(val, qn)

    visit(_m, "")
    return out


MESSAGE_CLASSES: dict[str, type[Message]] = _collect_classes()
for _name, _cls in MESSAGE_CLASSES.items():
    _cls._SPEC = MESSAGE_SPECS[_name]
for _cls in MESSAGE_CLASSES.values():
    if _cls._SPEC.oneofs:
        install_oneof_assignment(_cls)
    _cls._LISTS = {
        f.name: MESSAGE_CLASSES[f.type]._List for f in _cls._SPEC.fields if f.repeated and f.kind == "message"
    }
# The classes whose fields onnx scripts assign after building a model (one or a few per model: their decode is not
# the codec's hot path), given protobuf's assignment: presence of a scalar, the list class of a repeated message.
_PRESENCE_ASSIGNED = ("ModelProto", "OperatorSetIdProto")
for _name in _PRESENCE_ASSIGNED:
    install_presence_assignment(MESSAGE_CLASSES[_name])
assert len(MESSAGE_CLASSES) == len(MESSAGE_SPECS), "every Annex B message has a record class"


# Zero-copy bytes fields: kept as memoryviews into the input.
_ZERO_COPY = {("TensorProto", "raw_data")}

_U64 = 1 << 64
_I64_LIM = 1 << 63
_I32_MIN = -(1 << 31)
_I32_LIM = 1 << 31
_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")
_F64 = struct.Struct("<d")


class NanBits(float):
    """A float32 NaN read from the wire, carrying its exact 32-bit pattern.

    Converting a binary32 signalling NaN to a Python float (binary64) may quiet it; keeping the
    original bits lets the encoder write it back octet for octet (Clause 12.2.4).
    """

    __slots__ = ("bits",)

    bits: int

    def __new__(cls, bits: int) -> NanBits:
        obj = super().__new__(cls, _F32.unpack(_U32.pack(bits))[0])
        obj.bits = bits
        return obj

    def __repr__(self) -> str:
        return f"nan(0x{self.bits:08x})"


def _f32(raw: Buffer, pos: int) -> float:
    v: float = _F32.unpack_from(raw, pos)[0]
    if v != v:
        return NanBits(_U32.unpack_from(raw, pos)[0])
    return v


# Operation codes of the decode tables, grouped by wire type so dispatch is a range test.
# Length-delimited:
_STR, _R_STR, _MSG, _R_MSG, _BYT, _R_BYT, _RAW = range(7)
# Variable-length integers:
_I64, _I32, _U64_OP, _R_I64, _R_I32, _R_U64 = range(7, 13)
# Fixed width:
_FLT, _R_FLT, _DBL, _R_DBL = range(13, 17)
# Packed repeated numbers:
_P_I64, _P_I32, _P_U64, _P_FLT, _P_DBL = range(17, 22)

_REPEATED_OP = {_STR: _R_STR, _BYT: _R_BYT, _I64: _R_I64, _I32: _R_I32, _U64_OP: _R_U64, _FLT: _R_FLT, _DBL: _R_DBL}
_PACKED_OP = {_I64: _P_I64, _I32: _P_I32, _U64_OP: _P_U64, _FLT: _P_FLT, _DBL: _P_DBL}

_Entry = tuple[int, str, int, Any, tuple[tuple[str, int], ...]]


def _scalar_op(f: FieldSpec) -> int:
    if f.kind == "enum" or f.type == "int32":
        return _I32
    return {
        "int64": _I64,
        "uint64": _U64_OP,
        "float": _FLT,
        "double": _DBL,
        "string": _STR,
        "bytes": _BYT,
    }[f.type]


def _make_blank(cls: type[Message]) -> Callable[[], Message]:
    """A constructor of an absent-everything instance of ``cls``, without keyword processing.

    Decoding creates one message per embedded occurrence (50,000 nodes: 50,000 calls), so the
    generated ``__init__`` with its keyword arguments is worth bypassing here. Every repeated field gets
    its list at once: an empty entry of two octets costs the object and its lists, which the decode budget
    charges (issue 29). (Lists made on first access would need a ``__getattr__`` on messages, which keeps
    Python from specialising every attribute read of every message: ``check`` of a 50,000-node graph
    took 46 % longer that way.)
    """
    lines = ["def blank():", "    o = new(raw)"]
    ns: dict[str, Any] = {"new": object.__new__, "cls": cls, "raw": cls, "osa": object.__setattr__}
    if hooked(cls):
        # A class with a oneof clears the other members on assignment, and a few mark presence (a Python
        # __setattr__). The blank is made as a twin class of the same slots without it, filled with plain stores,
        # then given its class.
        ns["raw"] = type(f"{cls.__name__}Blank", (Message,), {"__slots__": cls.__slots__})
    for f in cls._SPEC.fields:
        if f.repeated and f.kind == "message":
            # The element's list class, with protobuf's add(): about 60 ns more than a plain list.
            value = f"L_{f.name}()"
            ns[f"L_{f.name}"] = cls._LISTS[f.name]
        elif f.repeated:
            value = "[]"
        elif f.kind == "message":
            value = "None"
        else:
            value = repr(f.default)
        lines.append(f"    o.{f.name} = {value}")
    lines += ["    o._present = 0", "    o._unknown = None"]
    if hooked(cls):
        lines.append("    osa(o, '__class__', cls)")
    lines.append("    return o")
    exec("\n".join(lines), ns)  # field names come from Annex B (schema.py), never from input
    blank: Callable[[], Message] = ns["blank"]
    return blank


_BLANK: dict[type[Message], Callable[[], Message]] = {cls: _make_blank(cls) for cls in MESSAGE_CLASSES.values()}
# What one decoded message costs the memory budget: the object as created (its slots, GC header included),
# its place in a list (8) and 8 more for the list's over-allocation and the allocator's arenas (measured: a
# field of 2**19 empty attributes peaked 0.3 % above the bare sizes).
_COST: dict[type[Message], int] = {
    cls: sys.getsizeof(blank()) + 16 + _LIST_COST * sum(1 for f in cls._SPEC.fields if f.repeated)
    for cls, blank in _BLANK.items()
}
_NEW_COST: dict[Callable[[], Message], int] = {blank: _COST[cls] for cls, blank in _BLANK.items()}


def _build_decode_table(name: str) -> dict[int, _Entry]:
    spec = MESSAGE_SPECS[name]
    table: dict[int, _Entry] = {}
    for f in spec.fields:
        others: tuple[tuple[str, int], ...] = ()
        if f.oneof is not None:
            others = tuple((o, spec.by_name[o].index) for o in spec.oneofs[f.oneof] if o != f.name)
        bit = 1 << f.index
        sub = _BLANK[MESSAGE_CLASSES[f.type]] if f.kind == "message" else None
        if f.kind == "message":
            op = _R_MSG if f.repeated else _MSG
            table[(f.tag << 3) | WIRE_LEN] = (op, f.name, bit, sub, others)
            continue
        op = _scalar_op(f)
        if (name, f.name) in _ZERO_COPY:
            op = _RAW
        ewt = f.element_wire_type
        if f.repeated:
            table[(f.tag << 3) | ewt] = (_REPEATED_OP[op], f.name, bit, None, others)
            if ewt != WIRE_LEN:
                # Clause 12.3.3: a consumer accepts both forms for any repeated field.
                table[(f.tag << 3) | WIRE_LEN] = (_PACKED_OP[op], f.name, bit, None, others)
        else:
            table[(f.tag << 3) | ewt] = (op, f.name, bit, None, others)
    return table


_DECODE_TABLES: dict[type[Message], dict[int, _Entry]] = {
    cls: _build_decode_table(name) for name, cls in MESSAGE_CLASSES.items()
}
_KNOWN_TAGS: dict[type[Message], frozenset[int]] = {
    cls: frozenset(f.tag for f in MESSAGE_SPECS[name].fields) for name, cls in MESSAGE_CLASSES.items()
}


def _utf8_error(e: UnicodeDecodeError, start: int, name: str) -> DecodeError:
    return DecodeError(f"string is not valid UTF-8 (Clause 12.2.5): {e.reason}", start + e.start, name)


# Stores of the decoder's generic path and of classes with a oneof: straight to the slot, past the oneof
# assignment rule of those classes (the decoder clears the other members itself, by the wire's order).
_osa = object.__setattr__


def _clear_others(obj: Message, others: tuple[tuple[str, int], ...]) -> None:
    # A oneof group holds one value: a later member replaces an earlier one, as a later
    # occurrence of one field replaces an earlier one (Clause 12.3.2).
    spec = obj._SPEC
    for oname, oidx in others:
        f = spec.fields[oidx]
        if f.kind == "message":
            _osa(obj, oname, None)
        else:
            _osa(obj, oname, f.default)
            _osa(obj, "_present", obj._present & ~(1 << oidx))


def _decode_packed(buf: Buffer, op: int, a: int, b: int, name: str) -> list[Any]:
    if op == _P_FLT:
        if (b - a) % 4:
            raise DecodeError(f"packed float field of {b - a} octets is not a multiple of 4", a, name)
        arr = np.frombuffer(buf[a:b], dtype="<f4")
        vals: list[Any] = arr.tolist()
        if len(vals) and np.isnan(arr).any():
            bits = np.frombuffer(buf[a:b], dtype="<u4")
            for i in np.flatnonzero(np.isnan(arr)).tolist():
                vals[i] = NanBits(int(bits[i]))
        return vals
    if op == _P_DBL:
        if (b - a) % 8:
            raise DecodeError(f"packed double field of {b - a} octets is not a multiple of 8", a, name)
        return np.frombuffer(buf[a:b], dtype="<f8").tolist()
    out: list[int] = []
    append = out.append
    pos = a
    while pos < b:
        c = buf[pos]
        if c < 0x80:
            v = c
            pos += 1
        else:
            v, pos = read_varint(buf, pos, b)
        if op == _P_I64:
            if v >= _I64_LIM:
                v -= _U64
        elif op == _P_I32:
            if v >= _I64_LIM:
                v -= _U64
            if not _I32_MIN <= v < _I32_LIM:
                raise DecodeError(f"value {v} is outside the int32 range (Clause 12.2.3)", pos, name)
        append(v)
    return out


# A run of unpacked repeated records of one field (proto2's default form: a tree ensemble's node tables, 10^5
# records of ``key value``) is read record by record up to _RUN_BULK records, then in chunks with numpy: the
# records' octets checked and converted as arrays, each value as the record-by-record path reads it.
_RUN_BULK = 32
_RUN_CHUNK = 4096  # records (floats) or octets (varints) of the first chunk; doubled after each whole chunk


def _float_bulk(lst: list[Any], buf: Buffer, pos: int, end: int, key: int) -> tuple[int, bool]:
    """Read the float records of a run from ``pos`` (a value's first octet), five octets each (the value, then the
    next record's one-octet ``key``), while the key repeats. Returns the position after the last value read and
    whether the run ended there (the octet at the position is not ``key``, or the input ends); when it did not
    end, what is left is less than one whole record and the caller reads on."""
    chunk = _RUN_CHUNK
    while True:
        n = min(chunk, (end - pos) // 5)
        if n == 0:
            return pos, False
        rec = np.frombuffer(buf, np.uint8, count=5 * n, offset=pos).reshape(n, 5)
        other = np.flatnonzero(rec[:, 4] != key)
        m = int(other[0]) + 1 if other.size else n
        raw = np.ascontiguousarray(rec[:m, :4]).view("<f4").ravel()
        vals: list[Any] = raw.tolist()
        nan = np.isnan(raw)
        if nan.any():
            # Clause 12.2.4: a NaN keeps its 32-bit pattern, as _f32 keeps it.
            for i, bits in zip(np.flatnonzero(nan).tolist(), raw.view("<u4")[nan].tolist(), strict=True):
                vals[i] = NanBits(bits)
        lst.extend(vals)
        if other.size:
            return pos + 5 * m - 1, True
        pos += 5 * n
        chunk *= 2


def _varint_bulk(lst: list[Any], buf: Buffer, pos: int, end: int, key: int) -> int:
    """Read the int64 records of a run from ``pos`` (a value's first octet) while the next record's one-octet key
    is ``key`` and each value has at most nine octets (below 2**63: no sign to apply, no bound to check); return the
    position of the first value not read (the caller reads on from there, record by record)."""
    chunk = _RUN_CHUNK
    while pos < end:
        size = min(chunk, end - pos)
        b = np.frombuffer(buf, np.uint8, count=size, offset=pos)
        term = np.flatnonzero(b < 0x80)
        # From a value's first octet, the octets below 0x80 alternate: a value's last octet, then the next record's
        # key (itself below 0x80) right after it, and so on while the run lasts.
        ends, keys = term[0::2], term[1::2]
        k = keys.size
        ok = (keys == ends[:k] + 1) & (b[keys] == key)
        starts = np.empty(k, np.intp)
        if k:
            starts[0] = 0
            starts[1:] = keys[:-1] + 1
        lengths = ends[:k] - starts + 1
        ok &= lengths <= 9
        bad = np.flatnonzero(~ok)
        m = int(bad[0]) if bad.size else k  # values followed by the key of another record of the run
        if m == 0:
            return pos
        starts, lengths = starts[:m], lengths[:m]
        vals = np.zeros(m, np.uint64)
        for j in range(int(lengths.max())):
            sel = lengths > j
            vals[sel] |= (b[starts[sel] + j] & 0x7F).astype(np.uint64) << np.uint64(7 * j)
        lst.extend(vals.tolist())
        pos += int(keys[m - 1]) + 1
        if m < k or size < chunk:
            return pos
        chunk *= 2
    return pos


def _count_error(lim: list[Any], count: int, pos: int, name: str) -> DecodeLimitError:
    """The refusal of one more embedded message.

    ``lim`` is [per repeated field, messages remaining in all, memory budget remaining, memory budget, the list of
    recorded messages (decode_recording)].
    """
    if count >= lim[0]:
        return DecodeLimitError(
            f"more than {lim[0]} messages in one repeated field (max_repeated_messages, Clause 15.4)", pos, name
        )
    if lim[2] < 0:
        return DecodeLimitError(
            f"decoding would cost more than {lim[3]} octets of memory ({DECODE_BYTES_PER_OCTET} per input octet "
            f"+ {DECODE_BYTES_BASE}): too many embedded messages for the input's size (Clause 15.4)",
            pos,
            name,
        )
    return DecodeLimitError("more embedded messages than max_messages allows in all (Clause 15.4)", pos, name)


def _decode_into(obj: Message, buf: Buffer, pos: int, end: int, depth: int, max_depth: int, lim: list[Any]) -> None:
    """Decode the fields in ``buf[pos:end]`` into ``obj`` (the generated decoder of its class, in the variant for
    ``buf``'s type: :func:`_make_decoder`)."""
    decoders = _DECODERS_VIEW if type(buf) is memoryview else _DECODERS
    decoders[type(obj)](obj, buf, pos, end, depth, max_depth, lim)


def _one_field(
    obj: Message, key: int, key_pos: int, buf: Buffer, pos: int, end: int, depth: int, max_depth: int, lim: list[Any]
) -> int:
    """Decode one field whose key was read (any form, any field); return the position after it."""
    entry = _DECODE_TABLES[type(obj)].get(key)
    if entry is None:
        return _unknown_field(obj, buf, key, key_pos, pos, end)
    op, name, bit, sub, others = entry
    if op <= _RAW:
        c = buf[pos] if pos < end else 0x80
        if c < 0x80 and pos + 1 + c <= end:
            a = pos + 1
            b = a + c
        else:
            a, b = read_length(buf, pos, end)
        pos = b
        if op == _R_STR:
            try:
                getattr(obj, name).append(str(buf[a:b], "utf-8"))
            except UnicodeDecodeError as e:
                raise _utf8_error(e, a, name) from None
        elif op == _R_MSG:
            lst = getattr(obj, name)
            lim[1] -= 1
            lim[2] -= _NEW_COST[sub]
            if len(lst) >= lim[0] or lim[1] < 0 or lim[2] < 0:
                raise _count_error(lim, len(lst), a, name)
            child = sub()
            if depth >= max_depth:
                raise DecodeLimitError(f"messages nested deeper than {max_depth} levels (Clause 15.4)", a, name)
            try:
                _decode_into(child, buf, a, b, depth + 1, max_depth, lim)
            except DecodeError as e:
                e.add_parent(f"{name}[{len(lst)}]")
                raise
            lst.append(child)
        elif op == _STR:
            try:
                _osa(obj, name, str(buf[a:b], "utf-8"))
            except UnicodeDecodeError as e:
                raise _utf8_error(e, a, name) from None
            _osa(obj, "_present", obj._present | bit)
            if others:
                _clear_others(obj, others)
        elif op == _MSG:
            child = getattr(obj, name)
            if child is None:
                child = sub()
                lim[2] -= _NEW_COST[sub]
                _osa(obj, name, child)
            if others:
                _clear_others(obj, others)
            if depth >= max_depth:
                raise DecodeLimitError(f"messages nested deeper than {max_depth} levels (Clause 15.4)", a, name)
            try:
                # A message field given twice is merged field by field (Clause 12.3.2).
                _decode_into(child, buf, a, b, depth + 1, max_depth, lim)
            except DecodeError as e:
                e.add_parent(name)
                raise
        elif op == _RAW:
            # Zero-copy whatever ``buf`` is (a memoryview, or the bytes/mmap object behind one).
            _osa(obj, name, memoryview(buf)[a:b])
            _osa(obj, "_present", obj._present | bit)
        elif op == _BYT:
            _osa(obj, name, bytes(buf[a:b]))
            _osa(obj, "_present", obj._present | bit)
        else:
            getattr(obj, name).append(bytes(buf[a:b]))
        return pos
    if op <= _R_U64:
        vpos = pos
        if pos < end and buf[pos] < 0x80:
            v = buf[pos]
            pos += 1
        else:
            v, pos = read_varint(buf, pos, end)
        if op == _I64 or op == _R_I64:
            if v >= _I64_LIM:
                v -= _U64
        elif op == _I32 or op == _R_I32:
            if v >= _I64_LIM:
                v -= _U64
            if not _I32_MIN <= v < _I32_LIM:
                raise DecodeError(f"value {v} is outside the int32 range (Clause 12.2.3)", vpos, name)
        if op >= _R_I64:
            getattr(obj, name).append(v)
        else:
            _osa(obj, name, v)
            _osa(obj, "_present", obj._present | bit)
            if others:
                _clear_others(obj, others)
        return pos
    if op == _FLT or op == _R_FLT:
        if pos + 4 > end:
            raise DecodeError("truncated 32-bit value", pos, name)
        fv = _f32(buf, pos)
        pos += 4
        if op == _FLT:
            _osa(obj, name, fv)
            _osa(obj, "_present", obj._present | bit)
        else:
            getattr(obj, name).append(fv)
        return pos
    if op == _DBL or op == _R_DBL:
        if pos + 8 > end:
            raise DecodeError("truncated 64-bit value", pos, name)
        dv = _F64.unpack_from(buf, pos)[0]
        pos += 8
        if op == _DBL:
            _osa(obj, name, dv)
            _osa(obj, "_present", obj._present | bit)
        else:
            getattr(obj, name).append(dv)
        return pos
    # Packed repeated field (Clause 12.3.3); appended to what is there already.
    a, b = read_length(buf, pos, end)
    pos = b
    getattr(obj, name).extend(_decode_packed(buf, op, a, b, name))
    return pos


def _unknown_field(obj: Message, buf: Buffer, key: int, key_pos: int, pos: int, end: int) -> int:
    wire_type = key & 7
    tag = key >> 3
    if wire_type in (3, 4):
        raise DecodeError(f"wire type {wire_type} SHALL NOT appear (Clause 12.2.1)", key_pos)
    if wire_type not in (0, 1, 2, 5):
        raise DecodeError(f"invalid wire type {wire_type}", key_pos)
    if tag < 1:
        raise DecodeError("field tag 0 (a tag is at least 1, Clause 12.3.1)", key_pos)
    spec = obj._SPEC
    f = spec.by_tag.get(tag)
    if f is not None:
        raise DecodeError(
            f"field {f.name} (tag {tag}) has wire type {wire_type}, expected {f.element_wire_type}",
            key_pos,
            f.name,
        )
    # Clause 12.4: skip by wire type alone, and keep the octets so a rewrite reproduces them.
    npos = skip_value(buf, wire_type, pos, end)
    if obj._unknown is None:
        obj._unknown = []
    obj._unknown.append((tag, buf[key_pos:npos]))
    return npos


def _make_decoder(
    cls: type[Message], view: bool = False
) -> Callable[[Message, Buffer, int, int, int, int, list[Any]], None]:
    """A decoder specialised to ``cls`` (:mod:`onnxcore.proto.decoder_source` writes its source), its code taken
    from the precompiled module :mod:`onnxcore.proto.decoders_gen` when that holds the same source (compiling it
    here was 0.5-1 ms per class, a dozen classes in every process that reads a model: issue 42, item 3), else
    compiled now.

    With ``view``, the variant for a memoryview input (:func:`_source`): the same code in a namespace whose ``DEC``
    decodes a memoryview's slice (``bytes.decode`` takes bytes only) and whose ``DECODERS`` are the view variants.
    """
    source, ns = decoder_source(cls), _decoder_namespace(cls)
    if view:
        ns["DEC"] = _view_text
        ns["DECODERS"] = _DECODERS_VIEW
    key = cls._SPEC.name.replace(".", "_")
    fn = getattr(decoders_gen, f"decode_{key}", None)
    if fn is not None and decoders_gen.SOURCES.get(key) == source:
        made: Callable[..., None] = FunctionType(fn.__code__, ns, "decode")
        return made
    exec(source, ns)
    decoder: Callable[[Message, Buffer, int, int, int, int, list[Any]], None] = ns["decode"]
    return decoder


def _decoder_namespace(cls: type[Message]) -> dict[str, Any]:
    """The namespace ``cls``'s generated decoder runs in (the names :mod:`onnxcore.proto.decoder_source` lists)."""
    ns: dict[str, Any] = {
        "read_varint": read_varint,
        "read_length": read_length,
        "one_field": _one_field,
        "DecodeError": DecodeError,
        "DecodeLimitError": DecodeLimitError,
        "utf8_error": _utf8_error,
        "I64_LIM": _I64_LIM,
        "U64": _U64,
        "I32_MIN": _I32_MIN,
        "I32_LIM": _I32_LIM,
        "DECODERS": _DECODERS,
        # A string field's text from a slice of bytes (the input's bytes or mmap, whose slices are bytes): 50 ns
        # less per string than str(octets, "utf-8"), the same strict decoding and errors. _make_decoder's view
        # variant puts a memoryview's in its place.
        "DEC": bytes.decode,
        "count_error": _count_error,
        "F32": _F32.unpack_from,
        "U32": _U32.unpack_from,
        "NanBits": NanBits,
        "RUN_BULK": _RUN_BULK,
        "float_bulk": _float_bulk,
        "varint_bulk": _varint_bulk,
        "osa": object.__setattr__,
        **MESSAGES,
    }
    for f in inline_message_fields(cls):
        child = MESSAGE_CLASSES[f.type]
        ns[f"new_{f.index}"] = _BLANK[child]
        ns[f"cls_{f.index}"] = child
        ns[f"cost_{f.index}"] = _COST[child]
    return ns


def _view_text(octets: memoryview) -> str:
    """A string field's text from a memoryview's slice (the view variant's ``DEC``)."""
    return str(octets, "utf-8")


_Decoder = Callable[[Message, Buffer, int, int, int, int, list[Any]], None]


def _deferred_decoder(cls: type[Message], view: bool = False) -> _Decoder:
    """A stand-in that makes ``cls``'s decoder on the first message of that class, puts it in its place and decodes.

    Generating and compiling the 33 decoders took 60-80 ms of ``import onnxcore`` (most of the package's own import
    time, issue 42 item 3), while a model uses a dozen classes; a generated decoder reads ``DECODERS`` at each
    call, so it finds the made one from then on. Two threads may both make one: the same code, the last one kept.
    """

    def first(obj: Message, buf: Buffer, pos: int, end: int, depth: int, max_depth: int, lim: list[Any]) -> None:
        decoder = _make_decoder(cls, view)
        (_DECODERS_VIEW if view else _DECODERS)[cls] = decoder
        decoder(obj, buf, pos, end, depth, max_depth, lim)

    return first


# The decoders of bytes and mmap inputs, and those of memoryview inputs (see _make_decoder).
_DECODERS: dict[type[Message], _Decoder] = {cls: _deferred_decoder(cls) for cls in MESSAGE_CLASSES.values()}
_DECODERS_VIEW: dict[type[Message], _Decoder] = {cls: _deferred_decoder(cls, True) for cls in MESSAGE_CLASSES.values()}


def _source(buf: memoryview) -> Buffer:
    """The object to decode from: the bytes or mmap behind ``buf`` when it spans all of it, else ``buf``.

    Slicing bytes or an mmap gives bytes, from which ``str`` decodes about twice as fast as from a
    memoryview slice; strings are most of a large graph. ``raw_data`` stays a zero-copy view either way.
    """
    obj = buf.obj
    if isinstance(obj, bytes | mmap.mmap) and buf.c_contiguous and len(obj) == buf.nbytes:
        return obj
    return buf


def decode_message(
    cls: type[M],
    data: Buffer,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_repeated: int | None = DEFAULT_MAX_REPEATED,
    max_messages: int | None = DEFAULT_MAX_MESSAGES,
) -> M:
    """Decode ``data`` as one message of class ``cls``.

    Args:
        cls: The message class.
        data: The octets.
        max_depth: Messages nested deeper are refused.
        max_repeated: Embedded messages in one repeated field (e.g. ``GraphProto.node``); None for no bound.
        max_messages: Embedded messages in repeated fields in all; None for no bound.

    Raises:
        DecodeError: malformed input, with the byte offset and field path (a :class:`DecodeLimitError` for a
            bound exceeded).
    """
    obj, _recorded = decode_recording(
        cls, data, max_depth=max_depth, max_repeated=max_repeated, max_messages=max_messages
    )
    return obj


def decode_recording(
    cls: type[M],
    data: Buffer,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_repeated: int | None = DEFAULT_MAX_REPEATED,
    max_messages: int | None = DEFAULT_MAX_MESSAGES,
) -> tuple[M, list[Message]]:
    """:func:`decode_message`, and every message of a recorded class (``TensorProto``) it made, in the order made:
    whatever the depth (an initializer, a node attribute's tensor, a subgraph's or a sparse tensor's), the root too
    when it is one. A caller looking for tensors of some kind looks at these instead of walking the whole tree.
    """
    if cls not in _DECODE_TABLES:
        raise TypeError(f"{cls!r} is not an Annex B message class")
    buf = data if isinstance(data, memoryview) else memoryview(data)
    if buf.format != "B" or buf.ndim != 1:
        buf = buf.cast("B")
    obj: M = _BLANK[cls]()  # type: ignore[assignment]
    # The budget counts the objects' own sizes; 1/16 of the bound is kept for what it does not count (the
    # allocator's arenas, the over-allocation of long lists).
    bound = DECODE_BYTES_PER_OCTET * len(buf) + DECODE_BYTES_BASE
    budget = bound - bound // 16 if max_messages is not None else _UNBOUNDED
    recorded: list[Message] = []
    lim: list[Any] = [
        _UNBOUNDED if max_repeated is None else max_repeated,
        _UNBOUNDED if max_messages is None else max_messages,
        budget,
        bound,
        recorded,
    ]
    # Millions of small messages are millions of container objects: the cyclic garbage collector, triggered by
    # their allocation, would scan them over and over (80 % of decoding time for a field of 10^6 empty entries).
    # A decoded message tree holds no cycle, so the collector is paused while it is built.
    with collection_paused():
        try:
            _decode_into(obj, _source(buf), 0, len(buf), 0, max_depth, lim)
        except DecodeError as e:
            e.add_parent(cls._SPEC.name)
            raise
        except RecursionError:
            raise DecodeLimitError("messages nested too deeply for the interpreter stack (Clause 15.4)", 0) from None
    return obj, recorded


def _decode_for_api(cls: type[Message], data: bytes | bytearray | memoryview) -> Message:
    # protobuf's ParseFromString copies what it reads; raw_data views into a caller's mutable buffer would
    # change with it, so anything but immutable bytes is copied first.
    return decode_message(cls, data if isinstance(data, bytes) else bytes(data))
