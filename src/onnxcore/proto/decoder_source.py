"""The source of the codec's per-class decoders (Clause 12, Annex B): one function ``decode`` per message class.

:mod:`onnxcore.proto.decoder` compiles (or takes precompiled from :mod:`onnxcore.proto.decoders_gen`, which
``tools/gen_decoders.py`` writes from :func:`decoder_source`) one decoder per class, its fields inline, from Annex
B's tables. The source is pure text: it names only fields of Annex B, never anything read from input, and reads
everything else from the namespace the codec runs it in:

* the codec's helpers and constants: ``read_varint``, ``read_length``, ``one_field``, ``DecodeError``,
  ``DecodeLimitError``, ``utf8_error``, ``count_error``, ``I64_LIM``, ``U64``, ``I32_MIN``, ``I32_LIM``,
  ``DECODERS``, ``DEC``, ``F32``, ``U32``, ``NanBits``, ``RUN_BULK``, ``float_bulk``, ``varint_bulk``, ``osa``;
* the messages of its errors, :data:`MESSAGES`;
* per embedded-message field read inline (:func:`inline_message_fields`), ``new_<index>``, ``cls_<index>`` and
  ``cost_<index>``: the blank constructor, the class and the decode budget's cost of the field's message (by name,
  not as numbers in the source: the sizes are this interpreter's, and the source is the same on every one, so the
  precompiled decoders serve them all).
"""

from __future__ import annotations

from onnxcore.proto.message import Message
from onnxcore.proto.spec import WIRE_I32, WIRE_LEN, WIRE_VARINT, FieldSpec

__all__ = ["MESSAGES", "RECORDED", "decoder_source", "hooked", "inline_message_fields"]

# The classes whose messages a decode lists as it makes them (decode_recording): the tensors, so that a load finds
# whether any has external data without a second walk over every node (a 50,000-node graph: 12 % of its load).
RECORDED = frozenset({"TensorProto"})

# The messages the generated source formats its errors with (in its namespace under these names).
MESSAGES = {
    "LIMIT_MSG": "messages nested deeper than %d levels (Clause 15.4)",
    "INT32_MSG": "value %d is outside the int32 range (Clause 12.2.3)",
}


def hooked(cls: type[Message]) -> bool:
    """Whether assignment to a field of ``cls`` runs a Python ``__setattr__`` (the decoder then stores with
    ``object.__setattr__``)."""
    return cls.__setattr__ is not Message.__setattr__


def inline_message_fields(cls: type[Message]) -> list[FieldSpec]:
    """The embedded-message fields ``cls``'s decoder reads inline (those outside oneof groups): for each, the source
    names ``new_<index>``, ``cls_<index>`` and ``cost_<index>``, which the codec puts in its namespace."""
    return [f for f in cls._SPEC.fields if f.oneof is None and f.kind == "message"]


def _repeated_child(f: FieldSpec) -> list[str]:
    """The lines reading one element of a repeated message field ``f`` into ``lst`` (its record's octets are
    ``buf[a:b]``): the count and cost limits, the depth limit, the child's decoder, the element's place named in an
    error."""
    return [
        "            lim[1] -= 1",
        f"            lim[2] -= cost_{f.index}",
        "            if len(lst) >= lim[0] or lim[1] < 0 or lim[2] < 0:",
        f"                raise count_error(lim, len(lst), a, {f.name!r})",
        f"            child = new_{f.index}()",
        "            if depth >= max_depth:",
        f"                raise DecodeLimitError(LIMIT_MSG % max_depth, a, {f.name!r})",
        "            try:",
        f"                DECODERS[cls_{f.index}](child, buf, a, b, depth + 1, max_depth, lim)",
        "            except DecodeError as e:",
        f"                e.add_parent(f'{f.name}[{{len(lst)}}]')",
        "                raise",
        "            lst.append(child)",
    ]


def _next_record(key: int, indent: str) -> list[str]:
    """The end of a loop over a run of one field's records: the next record's one-octet ``key`` compared in place
    (another record goes back to the loop over keys), at ``indent``."""
    return [
        f"{indent}if pos < end and buf[pos] == {key}:",
        f"{indent}    pos += 1",
        f"{indent}else:",
        f"{indent}    break",
    ]


def decoder_source(cls: type[Message]) -> str:
    """The source of ``cls``'s decoder, a function ``decode(obj, buf, pos, end, depth, max_depth, lim)``: the common
    field forms inline, the rest through the codec's generic ``one_field``.

    Inline: strings, embedded messages and varint scalars outside oneof groups, repeated strings and
    messages, unpacked repeated varints. Everything else (packed forms, bytes, floats, oneof members,
    unknown fields, wrong wire types) takes the generic path, which has the same semantics.
    The generated source names only fields of Annex B (schema.py), never anything read from input.
    """
    spec = cls._SPEC
    body: list[str] = []
    plain = not hooked(cls)

    def store(name: str, value: str) -> str:
        return f"obj.{name} = {value}" if plain else f"osa(obj, {name!r}, {value})"

    present = "            obj._present |= {bit}" if plain else "            osa(obj, '_present', obj._present | {bit})"
    for f in spec.fields:
        if f.oneof is not None:
            continue
        bit = 1 << f.index
        if f.kind == "message":
            key = (f.tag << 3) | WIRE_LEN
            body.append(f"        elif key == {key}:")
            if f.repeated and key < 0x80:
                # A writer puts the elements of a repeated field one after the other (a graph's nodes): the run of
                # this field's records is read in one loop, the next record's one-octet key compared in place.
                run = [*_LEN_READ, *_repeated_child(f), *_next_record(key, "            ")]
                body += [f"            lst = obj.{f.name}", "            while True:", *["    " + line for line in run]]
                continue
            body += _LEN_READ
            if f.repeated:
                body += [f"            lst = obj.{f.name}", *_repeated_child(f)]
            else:
                body += [
                    f"            child = obj.{f.name}",
                    "            if child is None:",
                    f"                child = new_{f.index}()",
                    f"                {store(f.name, 'child')}",
                    f"                lim[2] -= cost_{f.index}",
                    "            if depth >= max_depth:",
                    f"                raise DecodeLimitError(LIMIT_MSG % max_depth, a, {f.name!r})",
                    "            try:",
                    f"                DECODERS[cls_{f.index}](child, buf, a, b, depth + 1, max_depth, lim)",
                    "            except DecodeError as e:",
                    f"                e.add_parent({f.name!r})",
                    "                raise",
                ]
        elif f.type == "string":
            key = (f.tag << 3) | WIRE_LEN
            body.append(f"        elif key == {key}:")
            body += _LEN_READ
            if f.repeated:
                body.append(f"            lst = obj.{f.name}")
            text_store = "lst.append(text)" if f.repeated else store(f.name, "text")
            body += [
                "            try:",
                "                text = DEC(buf[a:b])",
                "            except UnicodeDecodeError as e:",
                f"                raise utf8_error(e, a, {f.name!r}) from None",
                f"            {text_store}",
            ]
            if not f.repeated:
                body.append(present.format(bit=bit))
        elif f.repeated and f.type == "bytes" and ((f.tag << 3) | WIRE_LEN) < 0x80:
            # A tree ensemble's nodes_modes, a string tensor's string_data: one record per element, the run of
            # this field's records read in one loop (the next record's key compared in place).
            key = (f.tag << 3) | WIRE_LEN
            body += [
                f"        elif key == {key}:",
                f"            lst = obj.{f.name}",
                "            while True:",
                *["    " + line for line in _LEN_READ],
                "                lst.append(bytes(buf[a:b]))",
                *_next_record(key, "                "),
            ]
        elif f.repeated and f.type == "float" and f.element_wire_type == WIRE_I32 and ((f.tag << 3) | WIRE_I32) < 0x80:
            # Unpacked repeated floats (proto2's default form, which onnx writes for AttributeProto.floats: a tree
            # ensemble's thresholds and weights, 10^5 records): the run of records of this field read in one loop,
            # each value as _one_field reads it (a NaN keeps its bits, Clause 12.2.4), then the key of the next
            # record compared in place; another key goes back to the loop above.
            key = (f.tag << 3) | WIRE_I32
            body += [
                f"        elif key == {key}:",
                f"            lst = obj.{f.name}",
                "            taken = 0",
                "            while True:",
                "                if taken == RUN_BULK:",
                f"                    pos, done = float_bulk(lst, buf, pos, end, {key})",
                "                    if done:",
                "                        break",
                "                if pos + 4 > end:",
                f"                    raise DecodeError('truncated 32-bit value', pos, {f.name!r})",
                "                v = F32(buf, pos)[0]",
                "                if v != v:",
                "                    v = NanBits(U32(buf, pos)[0])",
                "                lst.append(v)",
                "                pos += 4",
                "                taken += 1",
                *_next_record(key, "                "),
            ]
        elif f.repeated and f.type == "int64" and ((f.tag << 3) | WIRE_VARINT) < 0x80:
            # Unpacked repeated int64 (proto2's default form: AttributeProto.ints, a tree ensemble's node tables,
            # 10^5 records): the run of this field's records read in one loop, a value of one or two octets inline,
            # each as the branch below reads it; then the next record's key compared in place.
            key = (f.tag << 3) | WIRE_VARINT
            body += [
                f"        elif key == {key}:",
                f"            lst = obj.{f.name}",
                "            taken = 0",
                "            while True:",
                "                taken += 1",
                "                if taken == RUN_BULK:",
                f"                    pos = varint_bulk(lst, buf, pos, end, {key})",
                "                    taken = 0",
                "                c = buf[pos] if pos < end else 0x80",
                "                if c < 0x80:",
                "                    lst.append(c)",
                "                    pos += 1",
                "                else:",
                "                    c2 = buf[pos + 1] if pos + 1 < end else 0x80",
                "                    if c2 < 0x80:",
                "                        lst.append((c & 0x7F) | (c2 << 7))",
                "                        pos += 2",
                "                    else:",
                "                        v, pos = read_varint(buf, pos, end)",
                "                        if v >= I64_LIM:",
                "                            v -= U64",
                "                        lst.append(v)",
                *_next_record(key, "                "),
            ]
        elif f.element_wire_type == WIRE_VARINT and (f.type in ("int64", "int32") or f.kind == "enum"):
            key = (f.tag << 3) | WIRE_VARINT
            body += [
                f"        elif key == {key}:",
                "            vpos = pos",
                "            if pos < end and buf[pos] < 0x80:",
                "                v = buf[pos]",
                "                pos += 1",
                "            else:",
                "                v, pos = read_varint(buf, pos, end)",
                "                if v >= I64_LIM:",
                "                    v -= U64",
            ]
            if f.type != "int64":
                body += [
                    "                if not I32_MIN <= v < I32_LIM:",
                    f"                    raise DecodeError(INT32_MSG % v, vpos, {f.name!r})",
                ]
            if f.repeated:
                body += [f"            lst = obj.{f.name}", "            lst.append(v)"]
            else:
                body += [f"            {store(f.name, 'v')}", present.format(bit=bit)]
    lines = ["def decode(obj, buf, pos, end, depth, max_depth, lim):"]
    if spec.name in RECORDED:
        # Every message of this class the decode makes is listed in lim[4] (decode_message's ``recorded``).
        lines.append("    lim[4].append(obj)")
    lines += [
        "    while pos < end:",
        "        key_pos = pos",
        "        c = buf[pos]",
        "        if c < 0x80:",
        "            key = c",
        "            pos += 1",
        *_KEY_READ_2[: 3 if any(f.tag >= 16 for f in spec.fields) else 0],
        "        else:",
        "            key, pos = read_varint(buf, pos, end)",
        "        if False:",
        "            pass",
        *body,
        "        else:",
        "            pos = one_field(obj, key, key_pos, buf, pos, end, depth, max_depth, lim)",
    ]
    return "\n".join(lines) + "\n"


# A key of two octets inline, in the decoders of classes with tags from 16 (AttributeProto.type, tag 20, in every
# attribute), as read_varint reads it.
_KEY_READ_2 = [
    "        elif pos + 1 < end and buf[pos + 1] < 0x80:",
    "            key = (c & 0x7F) | (buf[pos + 1] << 7)",
    "            pos += 2",
]

# A length of one octet inline (a and b: the value's first octet and the one after it), any other through
# read_length, which refuses a length beyond ``end`` (Clause 12.2.5) as the inline test does.
_LEN_READ = [
    "            a = pos + 1",
    "            c = buf[pos] if pos < end else 0x80",
    "            b = a + c",
    "            if c >= 0x80 or b > end:",
    "                a, b = read_length(buf, pos, end)",
    "            pos = b",
]
