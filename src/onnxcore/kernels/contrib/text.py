"""com.microsoft Tokenizer: the operator skl2onnx writes for scikit-learn's CountVectorizer and TfidfVectorizer.

Each string of X ([C] or [N, C]) becomes a row of tokens along a new last axis, padded with ``pad_value`` to the
longest row (D tokens): Y is [C, D] or [N, C, D]. Two modes: ``separators`` (regular expressions; the text between
two matches is a token; ``[""]`` splits into characters) or ``tokenexp`` (each leftmost match is a token, the
search resuming after it). Tokens of fewer than ``mincharnum`` characters are dropped; ``mark`` puts the
start-of-text (U+0002) and end-of-text (U+0003) characters around each row, the padding after them.

Taken from onnxruntime where its definition is silent (tested against it in tests/kernels/contrib):

- the expressions are RE2's; Python's ``re`` stands in as for RegexFullMatch (``onnxcore.kernels.text``: ASCII
  classes, RE2-only or Python-only syntax refused by name -- ``(?u)`` of scikit-learn's default pattern included,
  which onnxruntime refuses too); the expressions skl2onnx writes read alike in both;
- ``tokenexp`` ``"."`` is the character mode of ``separators`` ``[""]`` (every character, a newline included);
- character mode with ``mincharnum`` above 1 is refused (onnxruntime refuses it);
- an empty match of ``tokenexp`` yields no token (the search moves one character on);
- in separators mode the empty pieces (two adjacent separators, a separator at either end) are not tokens, and
  an empty match of a separator drops the character where it matched (so ``" *"``, which matches the empty
  string everywhere, leaves no token; ``"\\b"`` drops the character after each word boundary);
- a row without tokens is its two markers (with ``mark``) and padding; when no row has a token, D is 0 and no
  marker is written;
- an empty input ([0] or [N, 0]) gives an empty output of the same shape, without a token axis.
"""

from __future__ import annotations

import re
from typing import AnyStr

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels.registry import kernel
from onnxcore.kernels.text import _bytes_of, _compile_re2, _decode, _encode

__all__: list[str] = []

_START, _END = b"\x02", b"\x03"


def _by_expression(text: AnyStr, rx: re.Pattern[AnyStr]) -> list[AnyStr]:
    if rx.groups == 0:  # findall gives the whole matches (faster than finditer)
        return [t for t in rx.findall(text) if t]
    return [m.group(0) for m in rx.finditer(text) if m.end() > m.start()]


def _by_separators(text: AnyStr, rx: re.Pattern[AnyStr]) -> list[AnyStr]:
    pieces = []
    pos = 0
    while pos <= len(text):
        m = rx.search(text, pos)
        if m is None:
            pieces.append(text[pos:])
            break
        pieces.append(text[pos : m.start()])
        # an empty separator match drops the character where it matched (onnxruntime)
        pos = m.end() if m.end() > m.start() else m.start() + 1
    return [piece for piece in pieces if piece]


class _Splitter:
    """One mode of the operator over both forms of a string: ASCII octets matched as they are (the expressions are
    ASCII and RE2's classes are ASCII, so octets and characters coincide), anything else decoded to characters."""

    __slots__ = ("chars", "expression", "rx", "rx_bytes")

    def __init__(self, pattern: str | None, *, expression: bool) -> None:
        self.expression = expression
        self.chars = pattern is None
        self.rx = None if pattern is None else _compile_re2(pattern, "Tokenizer")
        self.rx_bytes = None
        if self.rx is not None and pattern is not None and pattern.isascii():
            self.rx_bytes = re.compile(pattern.encode("ascii"), self.rx.flags & ~(re.ASCII | re.UNICODE))

    def tokens(self, item: bytes, mincharnum: int) -> list[bytes]:
        if self.chars:  # character mode (mincharnum is 1 there)
            if item.isascii():
                return [item[i : i + 1] for i in range(len(item))]
            return [_encode(c) for c in _decode(item)]
        split = _by_expression if self.expression else _by_separators
        if self.rx_bytes is not None and item.isascii():
            found = split(item, self.rx_bytes)
            return found if mincharnum == 1 else [t for t in found if len(t) >= mincharnum]
        assert self.rx is not None
        return [_encode(t) for t in split(_decode(item), self.rx) if len(t) >= mincharnum]


@kernel("Tokenizer", 1, domain="com.microsoft")
def tokenizer(
    X: np.ndarray, *, mark: int, mincharnum: int, pad_value: str, separators: list[str] | None = None,
    tokenexp: str | None = None,
) -> np.ndarray:  # fmt: skip
    """Tokenizer: split every string of X into tokens along a new last axis (see the module docstring)."""
    if X.ndim not in (1, 2):
        raise ShapeError(f"Tokenizer: X must be [C] or [N, C], got shape {X.shape}")
    if mincharnum < 1:
        raise EvaluationError(f"Tokenizer: mincharnum must be positive, got {mincharnum}")
    seps = [_decode(_bytes_of(s)) for s in separators or []]
    exp = None if tokenexp is None else _decode(_bytes_of(tokenexp))
    pad = _bytes_of(pad_value)
    if bool(seps) == (exp is not None and exp != ""):
        raise EvaluationError("Tokenizer: exactly one of 'separators' and 'tokenexp' must be set")
    if exp == ".":  # character mode, as separators [""] (a newline is a character too)
        seps, exp = [""], None
    if seps == [""] and mincharnum > 1:
        raise EvaluationError(
            f"Tokenizer: mincharnum {mincharnum} leaves no token in character mode (onnxruntime refuses it)"
        )
    if exp:
        splitter = _Splitter(exp, expression=True)
    elif seps == [""]:
        splitter = _Splitter(None, expression=False)
    else:  # every separator, an empty one included (it matches everywhere)
        splitter = _Splitter("|".join(f"(?:{s})" for s in seps), expression=False)
    if X.size == 0:  # onnxruntime: [0] -> [0], [N, 0] -> [N, 0] (no token axis)
        return np.empty(X.shape, dtype=object)
    rows = [splitter.tokens(_bytes_of(item), mincharnum) for item in X.reshape(-1)]
    d = max(len(r) for r in rows)
    if d and mark:  # no token anywhere: no markers either (onnxruntime)
        rows = [[_START, *r, _END] for r in rows]
        d += 2
    out = np.full((len(rows), d), pad, dtype=object)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out.reshape(*X.shape, d)
