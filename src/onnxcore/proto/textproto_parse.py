"""Reading protocol buffers' text format into a message (``text_format.Parse``'s counterpart): the inverse of
``str(message)`` (:mod:`onnxcore.proto.textproto`).

It reads what protobuf prints and what people write by hand: ``name: value`` and ``name { ... }`` (also
``name: { ... }`` and ``< ... >``), a repeated field given again or as ``[a, b]``, strings in double or single
quotes with C escapes (octal, ``\\x``, ``\\n``, ...; an unknown one kept as written, as protobuf keeps it) and
adjacent literals joined, integers in decimal, hex or
octal, floats with ``inf``/``nan``, enumerations by name or number, ``#`` comments. Unknown field names are
refused by name, with the line and column.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from onnxcore.errors import OnnxCoreError
from onnxcore.proto.decoder import MESSAGE_CLASSES
from onnxcore.proto.message import Message
from onnxcore.proto.spec import ENUM_SPECS, FieldSpec

__all__ = ["TextFormatError", "parse_text"]

M = TypeVar("M", bound=Message)


class TextFormatError(OnnxCoreError, ValueError):
    """Text that is not a message of the expected class in protocol buffers' text format (a ``ValueError``)."""


_TOKEN = re.compile(
    r"""
    (?P<space>\s+|\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<number>[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fF]?|inf(?:inity)?|nan)(?![\w.]))
  | (?P<ident>[A-Za-z_][\w.]*)
  | (?P<punct>[{}<>\[\]:,;])
    """,
    re.VERBOSE | re.IGNORECASE,
)
_SIMPLE_ESCAPES = {"n": 10, "r": 13, "t": 9, '"': 34, "'": 39, "\\": 92, "a": 7, "b": 8, "f": 12, "v": 11, "?": 63}


class _Tokens:
    def __init__(self, text: str) -> None:
        self.items: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                raise self._error(text, pos, f"unexpected character {text[pos]!r}")
            if m.lastgroup != "space":
                self.items.append((m.lastgroup or "", m.group(), pos))
            pos = m.end()
        self.text = text
        self.k = 0

    def _error(self, text: str, pos: int, what: str) -> TextFormatError:
        line = text.count("\n", 0, pos) + 1
        column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        return TextFormatError(f"line {line}, column {column}: {what}")

    def error(self, what: str) -> TextFormatError:
        pos = self.items[self.k][2] if self.k < len(self.items) else len(self.text)
        return self._error(self.text, pos, what)

    def peek(self) -> tuple[str, str]:
        if self.k < len(self.items):
            kind, value, _ = self.items[self.k]
            return kind, value
        return "", ""

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if not tok[0]:
            raise self.error("unexpected end of text")
        self.k += 1
        return tok

    def accept(self, punct: str) -> bool:
        if self.peek() == ("punct", punct):
            self.k += 1
            return True
        return False

    def expect(self, punct: str) -> None:
        if not self.accept(punct):
            raise self.error(f"expected {punct!r}, found {self.peek()[1]!r}")


def _unescape(literal: str) -> bytes:
    body = literal[1:-1].encode("utf-8")
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != 0x5C:
            out.append(c)
            i += 1
            continue
        e = chr(body[i + 1])
        if e in "01234567":
            digits = re.match(rb"[0-7]{1,3}", body[i + 1 : i + 4])
            assert digits is not None
            out.append(int(digits.group(), 8) & 0xFF)
            i += 1 + len(digits.group())
        elif e in "xX":
            digits = re.match(rb"[0-9a-fA-F]{1,2}", body[i + 2 : i + 4])
            if digits is None:
                raise ValueError("\\x needs a hexadecimal digit")
            out.append(int(digits.group(), 16))
            i += 2 + len(digits.group())
        elif e in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[e])
            i += 2
        else:  # an unknown escape stays as written, as protobuf's reader keeps it
            out += body[i : i + 2]
            i += 2
    return bytes(out)


def _number(tok: _Tokens, text: str, f: FieldSpec) -> Any:
    lower = text.lower()
    if f.type in ("float", "double"):
        if re.fullmatch(r"[-+]?(inf|infinity|nan)", lower):
            lower = lower.replace("infinity", "inf")
        elif not lower.lstrip("+-").startswith("0x"):
            lower = lower.removesuffix("f")  # a float literal's suffix, 1.5f
        try:
            return float(lower)
        except ValueError:
            raise tok.error(f"{f.name}: {text!r} is not a number") from None
    octal = re.fullmatch(r"([-+]?)0([0-7]+)", lower)
    try:
        if octal is not None:
            return int(octal.group(1) + octal.group(2), 8)
        return int(lower, 0)
    except ValueError:
        raise tok.error(f"{f.name}: {text!r} is not an integer") from None


def _scalar(tok: _Tokens, f: FieldSpec) -> Any:
    kind, text = tok.take()
    if f.type in ("string", "bytes"):
        if kind != "string":
            raise tok.error(f"{f.name}: expected a quoted string, found {text!r}")
        parts = [text]
        while tok.peek()[0] == "string":
            parts.append(tok.take()[1])
        try:
            raw = b"".join(_unescape(p) for p in parts)
        except ValueError as e:
            raise tok.error(f"{f.name}: {e}") from None
        if f.type == "bytes":
            return raw
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise tok.error(f"{f.name}: the string is not valid UTF-8") from None
    if f.kind == "enum":
        if kind == "ident":
            values = dict(ENUM_SPECS[f.type].values)
            if text not in values:
                raise tok.error(f"{f.name}: {text!r} is not a value of {f.type}")
            return values[text]
        return _number(tok, text, f)
    if f.type == "bool":
        if text in ("true", "True", "t", "1"):
            return True
        if text in ("false", "False", "f", "0"):
            return False
        raise tok.error(f"{f.name}: expected true or false, found {text!r}")
    if kind not in ("number", "ident"):
        raise tok.error(f"{f.name}: expected a number, found {text!r}")
    return _number(tok, text, f)


def _message_body(tok: _Tokens, cls: type[Message], close: str | None) -> Message:
    msg = cls()
    while True:
        if close is None and not tok.peek()[0]:
            return msg
        if close is not None and tok.accept(close):
            return msg
        kind, name = tok.peek()
        f = cls._SPEC.by_name.get(name) if kind == "ident" else None
        if f is None:
            raise tok.error(f"{cls._SPEC.name} has no field {name!r}" if name else "unexpected end of text")
        tok.take()
        if f.kind == "message":
            tok.accept(":")  # optional before a message
        else:
            tok.expect(":")
        values = _list(tok, f) if f.repeated else [_value(tok, f)]
        for v in values:
            if f.repeated:
                getattr(msg, f.name).append(v)
            else:
                setattr(msg, f.name, v)
                if f.kind != "message":
                    msg.mark_present(f.name)
        tok.accept(";") or tok.accept(",")


def _sub_message(tok: _Tokens, f: FieldSpec) -> Message:
    cls = MESSAGE_CLASSES[f.type]
    if tok.accept("{"):
        return _message_body(tok, cls, "}")
    if tok.accept("<"):
        return _message_body(tok, cls, ">")
    raise tok.error(f"{f.name}: expected '{{' or '<'")


def _value(tok: _Tokens, f: FieldSpec) -> Any:
    return _sub_message(tok, f) if f.kind == "message" else _scalar(tok, f)


def _list(tok: _Tokens, f: FieldSpec) -> list[Any]:
    # A repeated field's values: one, or a bracketed list ``[a, b]``.
    if not tok.accept("["):
        return [_value(tok, f)]
    out: list[Any] = []
    if tok.accept("]"):
        return out
    while True:
        out.append(_value(tok, f))
        if tok.accept("]"):
            return out
        tok.expect(",")


def parse_text(text: str, cls: type[M]) -> M:
    """A message of ``cls`` read from protocol buffers' text format (``text_format.Parse(text, cls())``).

    Raises:
        TextFormatError: not the text of a ``cls`` message; the message names the line and column.
    """
    msg = _message_body(_Tokens(text), cls, None)
    assert isinstance(msg, cls)
    return msg
