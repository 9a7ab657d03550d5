"""Protocol buffers' text format of a message: ``str(message)``, as ``print(onnx_model)`` shows it.

The text is what protobuf's Python runtime (its upb core) prints for ``str()`` of an onnx message, character
for character: present fields in increasing tag order, one ``name: value`` line each (an element per line for
a repeated field), an embedded message as ``name {`` ... ``}`` indented by two spaces, enumerations by their
name, strings and bytes quoted with C escapes (a string's non-ASCII characters as they are, a bytes field's
octets above 0x7e in octal), a float as the shortest of
``%.6g``/``%.9g`` that reads back to the same binary32 value, a double as ``%.15g`` or else ``%.17g``, and
``inf``/``-inf``/``nan``. Unknown fields are not shown (protobuf's ``str()`` leaves them out too), nor is an
enumeration field holding a number outside its enumeration (onnx.proto is proto2, whose enumerations are
closed: protobuf keeps such a number as an unknown field).

It is a view of a message, beside the codec; the ONNX textual syntax (``onnx.printer``'s) is
:mod:`onnxcore.text`, another format.
"""

from __future__ import annotations

import math
import struct
from typing import TYPE_CHECKING, Any

from onnxcore.proto.spec import ENUM_SPECS, MESSAGE_SPECS, FieldSpec

if TYPE_CHECKING:
    from onnxcore.proto.message import Message

__all__ = ["FIELDS_IN_TAG_ORDER", "message_to_text"]

_F32 = struct.Struct("<f")

# Fields of each message in the order the text lists them: increasing tag (Annex B's tables need not be).
FIELDS_IN_TAG_ORDER: dict[str, tuple[FieldSpec, ...]] = {
    name: tuple(sorted(spec.fields, key=lambda f: f.tag)) for name, spec in MESSAGE_SPECS.items()
}

# C escapes of the octets that have one, then octal for the other unprintable ASCII octets: as str.translate
# tables over code points 0-255 (a bytes field read as Latin-1), and over 0-127 for a string.
_ESCAPES: dict[int, str] = {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x22: '\\"', 0x27: "\\'", 0x5C: "\\\\"}
_BYTES_TABLE: dict[int, str] = {
    b: _ESCAPES.get(b, f"\\{b:03o}") for b in range(256) if b in _ESCAPES or not 0x20 <= b < 0x7F
}
_STRING_TABLE: dict[int, str] = {b: text for b, text in _BYTES_TABLE.items() if b < 0x80}


def _quote_bytes(value: bytes | bytearray | memoryview) -> str:
    return '"' + bytes(value).decode("latin-1").translate(_BYTES_TABLE) + '"'


def _quote_string(value: str) -> str:
    # A string's characters beyond ASCII stay as they are; only ASCII characters are escaped.
    return '"' + value.translate(_STRING_TABLE) + '"'


def _float32(value: float) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value != value:
        return "nan"
    try:
        v = _F32.unpack(_F32.pack(value))[0]
    except OverflowError:  # a Python float beyond binary32: protobuf stores it as infinity
        return "inf" if value > 0 else "-inf"
    text = f"{v:.6g}"
    if _F32.unpack(_F32.pack(float(text)))[0] != v:
        text = f"{v:.9g}"
    return text


def _float64(value: float) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value != value:
        return "nan"
    text = f"{value:.15g}"
    if float(text) != value:
        text = f"{value:.17g}"
    return text


def _scalar(f: FieldSpec, value: Any) -> str:
    t = f.type
    if t == "string":
        return _quote_string(value)
    if t == "bytes":
        return _quote_bytes(value)
    if t == "float":
        return _float32(value)
    if t == "double":
        return _float64(value)
    if t == "bool":
        return "true" if value else "false"
    return str(int(value))


def _write(msg: Message, pad: str, out: list[str]) -> None:
    for f in FIELDS_IN_TAG_ORDER[msg._SPEC.name]:
        if not msg._has(f):
            continue
        value = getattr(msg, f.name)
        values = value if f.repeated else (value,)
        if f.kind == "message":
            inner = pad + "  "
            for v in values:
                out.append(f"{pad}{f.name} {{\n")
                _write(v, inner, out)
                out.append(f"{pad}}}\n")
        elif f.kind == "enum":
            # onnx.proto is proto2: its enumerations are closed, so protobuf keeps a number outside the
            # enumeration as an unknown field, which str() does not show.
            names = ENUM_SPECS[f.type].by_value
            for v in values:
                name = names.get(int(v))
                if name is not None:
                    out.append(f"{pad}{f.name}: {name}\n")
        else:
            for v in values:
                out.append(f"{pad}{f.name}: {_scalar(f, v)}\n")


def message_to_text(msg: Message) -> str:
    """``msg`` in protocol buffers' text format, as ``str()`` of the onnx package's message gives it.

    Args:
        msg: Any Annex B message.

    Returns:
        The text, one line per field value, each line ending with a newline ("" for an empty message).
    """
    out: list[str] = []
    _write(msg, "", out)
    return "".join(out)
