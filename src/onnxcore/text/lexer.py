"""The tokens of the ONNX textual syntax, each with the line and column it starts at."""

from __future__ import annotations

import re
from dataclasses import dataclass

from onnxcore.errors import OnnxCoreError

__all__ = ["TextSyntaxError", "Token", "tokenize"]


class TextSyntaxError(OnnxCoreError, ValueError):
    """Text that is not the ONNX textual syntax; ``line`` and ``column`` (both from 1) say where.

    Attributes:
        line: The line of the offending token.
        column: Its column.
    """

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.line = line
        self.column = column


@dataclass(frozen=True, slots=True)
class Token:
    """One token: its kind (``id``, ``str``, ``int``, ``float``, ``eof`` or the punctuation itself).

    Attributes:
        kind: What the token is.
        text: The source text (for ``str``, the unescaped contents).
        line: Its line, from 1.
        column: Its column, from 1.
    """

    kind: str
    text: str
    line: int
    column: int


_PATTERN = re.compile(
    r"""
    (?P<space>[ \t\r\n]+|\#[^\n]*)
    |(?P<float>[-+]?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+))
    |(?P<int>[-+]?\d+)
    |(?P<id>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<str>")
    |(?P<punct>=>|[()\[\]{}<>,=:@.?\-+])
    """,
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "'": "'", "0": "\0"}


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``, ending with an ``eof`` token.

    Raises:
        TextSyntaxError: An unterminated string or a character outside the syntax.
    """
    tokens: list[Token] = []
    pos = 0
    line = 1
    line_start = 0
    n = len(text)
    while pos < n:
        m = _PATTERN.match(text, pos)
        column = pos - line_start + 1
        if m is None:
            raise TextSyntaxError(f"unexpected character {text[pos]!r}", line, column)
        kind = m.lastgroup or ""
        if kind == "space":
            chunk = m.group()
            breaks = chunk.count("\n")
            if breaks:
                line += breaks
                line_start = pos + chunk.rindex("\n") + 1
            pos = m.end()
            continue
        if kind == "str":
            out: list[str] = []
            i = pos + 1
            start_line, start_col = line, column
            while True:
                if i >= n:
                    raise TextSyntaxError("unterminated string", start_line, start_col)
                c = text[i]
                if c == '"':
                    break
                if c == "\\" and i + 1 < n:
                    out.append(_ESCAPES.get(text[i + 1], text[i + 1]))
                    i += 2
                    continue
                if c == "\n":
                    line += 1
                    line_start = i + 1
                out.append(c)
                i += 1
            tokens.append(Token("str", "".join(out), start_line, start_col))
            pos = i + 1
            continue
        value = m.group()
        tokens.append(Token(value if kind == "punct" else kind, value, line, column))
        pos = m.end()
    tokens.append(Token("eof", "", line, pos - line_start + 1))
    return tokens
