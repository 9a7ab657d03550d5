"""com.microsoft Tokenizer: the operator skl2onnx writes for scikit-learn's CountVectorizer and TfidfVectorizer.

Each string of X ([C] or [N, C]) becomes a row of tokens along a new last axis, padded with ``pad_value`` to the
longest row (D tokens): Y is [C, D] or [N, C, D]. Two modes: ``separators`` (regular expressions; the text between
two matches is a token; ``[""]`` splits into characters) or ``tokenexp`` (each leftmost match is a token, the
search resuming after it). Tokens of fewer than ``mincharnum`` characters are dropped; ``mark`` puts the
start-of-text (U+0002) and end-of-text (U+0003) characters around each row, the padding after them.

Taken from onnxruntime where its definition is silent (tested against it in tests/kernels/contrib):

- the expressions are RE2's, parsed and refused as for RegexFullMatch (``onnxcore.libs.re2``: ASCII classes,
  what RE2 refuses refused by name -- ``(?u)`` of scikit-learn's default pattern included, which onnxruntime
  refuses too) and searched leftmost-first in linear time (:meth:`Re2Pattern.search`), so that no pattern can
  stall the evaluator (issue 29); Python's ``re`` stands in where it provably gives the same tokens in bounded
  time (see :class:`_Splitter`), as for the expressions skl2onnx writes;
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
import warnings
from collections.abc import Callable
from typing import Any, AnyStr

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels.registry import kernel
from onnxcore.kernels.text import _bytes_of, _decode, _encode
from onnxcore.libs.re2 import Re2Pattern, compile_re2

__all__: list[str] = []

_START, _END = b"\x02", b"\x03"


# A pattern with one backtracking choice per start (Re2Pattern.backtracking 1) costs Python's re up to
# len(text)**2 * len(program) steps: re searches a text only up to this bound, the linear matcher beyond it.
_QUADRATIC_WORK = 1 << 22
# RE2 syntax that Python's re reads otherwise: POSIX classes, "{,n}" (a literal in RE2), "\12" (octal in RE2).
_READ_OTHERWISE = re.compile(r"\[:\^?[a-z]+:\]|\{,|\\[1-9]")
# One bracketed class repeated, "[...]+" (skl2onnx's "[a-zA-Z0-9_]+"): no bracket inside, so the last "]" closes the
# class (or, escaped, leaves it open and RE2 refuses the pattern) and "+" repeats it.
_ONE_CLASS_RUNS = re.compile(r"\[[^\[\]]*\]\+")
# The octets bytes.split() splits at (bytes.isspace: not str's \x1c-\x1f).
_SPLIT_AT = b" \t\n\r\x0b\x0c"


def _by_expression(text: AnyStr, rx: re.Pattern[AnyStr]) -> list[AnyStr]:
    if rx.groups == 0:  # findall gives the whole matches (faster than finditer)
        return [t for t in rx.findall(text) if t]
    return [m.group(0) for m in rx.finditer(text) if m.end() > m.start()]


def _split_at(text: AnyStr, search: Callable[[AnyStr, int], tuple[int, int] | None]) -> list[AnyStr]:
    """The non-empty pieces of ``text`` between the separator matches ``search(text, pos)`` finds (a span or None);
    an empty separator match drops the character where it matched (onnxruntime)."""
    pieces = []
    pos = 0
    while pos <= len(text):
        m = search(text, pos)
        if m is None:
            pieces.append(text[pos:])
            break
        start, end = m
        pieces.append(text[pos:start])
        pos = end if end > start else start + 1
    return [piece for piece in pieces if piece]


def _by_separators(text: AnyStr, rx: re.Pattern[AnyStr]) -> list[AnyStr]:
    def search(t: AnyStr, pos: int) -> tuple[int, int] | None:
        m = rx.search(t, pos)
        return None if m is None else m.span()

    return _split_at(text, search)


def _linear_by_expression(text: str, rx: Re2Pattern) -> list[str]:
    """As :func:`_by_expression` (``re.finditer``'s positions: after an empty match the search resumes where it
    was, an empty match there excluded), with the linear-time matcher."""
    tokens = []
    pos = 0
    no_empty_at = -1
    while pos <= len(text):
        m = rx.search(text, pos, no_empty_at=no_empty_at)
        if m is None:
            break
        start, end = m
        if end > start:
            tokens.append(text[start:end])
            pos, no_empty_at = end, -1
        else:
            pos = no_empty_at = start
    return tokens


def _linear_by_separators(text: str, rx: Re2Pattern) -> list[str]:
    """As :func:`_by_separators`, with the linear-time matcher."""
    return _split_at(text, rx.search)


class _Splitter:
    """One mode of the operator. Every search is RE2's, in time linear in the text (a model's pattern cannot
    stall the evaluator, issue 29), by :meth:`Re2Pattern.search`; Python's re (C, faster per character) stands
    in only where it provably gives the same tokens in bounded time: an ASCII pattern that re reads as RE2 does
    and whose backtracking is proved at most quadratic (``Re2Pattern.backtracking``), on an ASCII text (octets
    and characters coincide) short enough for that bound, with no vertical tab (in re's ``\\s``, not RE2's) and
    no final newline where the pattern has ``$`` (re's ``$`` also matches before it)."""

    __slots__ = ("chars", "dollar", "expression", "quadratic", "re2", "runs", "rx_bytes")

    def __init__(self, pattern: str | None, *, expression: bool) -> None:
        self.expression = expression
        self.chars = pattern is None
        self.re2: Re2Pattern | None = None
        self.rx_bytes: re.Pattern[bytes] | None = None
        self.quadratic = 0
        self.dollar = False
        self.runs: bytes | None = None
        if pattern is None:
            return
        try:
            self.re2 = compile_re2(pattern)
        except EvaluationError as e:
            raise EvaluationError(str(e).replace("RegexFullMatch", "Tokenizer", 1)) from None
        if expression and _ONE_CLASS_RUNS.fullmatch(pattern) and not self.re2.nullable:
            # "[...]+": its leftmost-first matches in an ASCII text are the maximal runs of the class's characters,
            # which bytes.split() gives once every other octet is made a space, when the class has none of the
            # octets split() splits at; the class's ASCII characters are those the pattern matches alone (RE2's
            # own reading). Three times findall's speed (1,000 rows: 720 -> 220 us).
            members = bytes(b for b in range(128) if self.re2.fullmatch(chr(b)))
            if members and not any(b in members for b in _SPLIT_AT):
                self.runs = bytes(b if b in members else 32 for b in range(256))
        cost = self.re2.backtracking
        if cost is not None and pattern.isascii() and not _READ_OTHERWISE.search(pattern):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # re's FutureWarning on "[[" and "--" in classes (literal in both)
                    self.rx_bytes = re.compile(pattern.encode("ascii"))
            except re.error:
                self.rx_bytes = None  # RE2 syntax re cannot read (\z, \Q...\E, \x{..}, (?U), ...)
            self.quadratic = cost * self.re2.size
            self.dollar = "$" in pattern

    def _python_may(self, item: bytes) -> bool:
        return (
            self.rx_bytes is not None
            and item.isascii()
            and b"\x0b" not in item
            and not (self.dollar and item.endswith(b"\n"))
            and len(item) * len(item) * self.quadratic <= _QUADRATIC_WORK
        )

    def all_python(self, items: list[bytes], mincharnum: int) -> list[list[bytes]] | None:
        """The tokens of every item when Python's re may search each of them (:meth:`_python_may` of every item,
        decided once over all of them), else None (each item is then tokenized on its own)."""
        if self.runs is not None and items and b"".join(items).isascii():
            runs = self.runs
            found = [item.translate(runs).split() for item in items]
            return found if mincharnum == 1 else [[t for t in f if len(t) >= mincharnum] for f in found]
        rx = self.rx_bytes
        if rx is None or self.chars or not items:
            return None
        joined = b"".join(items)
        longest = max(map(len, items))
        if not joined.isascii() or b"\x0b" in joined or longest * longest * self.quadratic > _QUADRATIC_WORK:
            return None
        if self.dollar and any(item.endswith(b"\n") for item in items):
            return None
        if self.expression and rx.groups == 0 and self.re2 is not None and not self.re2.nullable:
            # A pattern that matches no empty string gives whole, non-empty tokens: findall's list as it is.
            found = list(map(rx.findall, items))
        else:
            split = _by_expression if self.expression else _by_separators
            found = [split(item, rx) for item in items]
        return found if mincharnum == 1 else [[t for t in f if len(t) >= mincharnum] for f in found]

    def tokens(self, item: bytes, mincharnum: int) -> list[bytes]:
        if self.chars:  # character mode (mincharnum is 1 there)
            if item.isascii():
                return [item[i : i + 1] for i in range(len(item))]
            return [_encode(c) for c in _decode(item)]
        if self._python_may(item):
            assert self.rx_bytes is not None
            split = _by_expression if self.expression else _by_separators
            found = split(item, self.rx_bytes)
            return found if mincharnum == 1 else [t for t in found if len(t) >= mincharnum]
        assert self.re2 is not None
        linear = _linear_by_expression if self.expression else _linear_by_separators
        return [_encode(t) for t in linear(_decode(item), self.re2) if len(t) >= mincharnum]


class _Tokenizer:
    """The Tokenizer of one node: its attributes checked and its expression compiled once (a session prepares one
    per node, see ``prepare``; a direct call makes one per call)."""

    __slots__ = ("mark", "mincharnum", "pad", "splitter")

    def __init__(
        self, *, mark: int, mincharnum: int, pad_value: str, separators: list[str] | None = None,
        tokenexp: str | None = None,
    ) -> None:  # fmt: skip
        if mincharnum < 1:
            raise EvaluationError(f"Tokenizer: mincharnum must be positive, got {mincharnum}")
        seps = [_decode(_bytes_of(s)) for s in separators or []]
        exp = None if tokenexp is None else _decode(_bytes_of(tokenexp))
        self.pad = _bytes_of(pad_value)
        if bool(seps) == (exp is not None and exp != ""):
            raise EvaluationError("Tokenizer: exactly one of 'separators' and 'tokenexp' must be set")
        if exp == ".":  # character mode, as separators [""] (a newline is a character too)
            seps, exp = [""], None
        if seps == [""] and mincharnum > 1:
            raise EvaluationError(
                f"Tokenizer: mincharnum {mincharnum} leaves no token in character mode (onnxruntime refuses it)"
            )
        if exp:
            self.splitter = _Splitter(exp, expression=True)
        elif seps == [""]:
            self.splitter = _Splitter(None, expression=False)
        else:  # every separator, an empty one included (it matches everywhere)
            self.splitter = _Splitter("|".join(f"(?:{s})" for s in seps), expression=False)
        self.mark, self.mincharnum = mark, mincharnum

    def __call__(self, X: np.ndarray) -> np.ndarray:
        if X.ndim not in (1, 2):
            raise ShapeError(f"Tokenizer: X must be [C] or [N, C], got shape {X.shape}")
        if X.size == 0:  # onnxruntime: [0] -> [0], [N, 0] -> [N, 0] (no token axis)
            return np.empty(X.shape, dtype=object)
        splitter, mincharnum = self.splitter, self.mincharnum
        items = X.reshape(-1).tolist()
        if not set(map(type, items)) <= {bytes}:
            items = [_bytes_of(item) for item in items]
        rows = splitter.all_python(items, mincharnum)
        if rows is None:
            rows = [splitter.tokens(item, mincharnum) for item in items]
        d = max(map(len, rows))
        if d and self.mark:  # no token anywhere: no markers either (onnxruntime)
            rows = [[_START, *r, _END] for r in rows]
            d += 2
        # Every row padded to d, laid out in one assignment (not one numpy slice per row).
        pad = self.pad
        flat: list[bytes] = []
        for r in rows:
            flat += r
            if len(r) < d:
                flat += [pad] * (d - len(r))
        out = np.empty(len(flat), dtype=object)
        out[:] = flat
        return out.reshape(*X.shape, d)


def _prepare_tokenizer(**attrs: Any) -> _Tokenizer:
    return _Tokenizer(**attrs)


@kernel("Tokenizer", 1, domain="com.microsoft", prepare=_prepare_tokenizer)
def tokenizer(
    X: np.ndarray, *, mark: int, mincharnum: int, pad_value: str, separators: list[str] | None = None,
    tokenexp: str | None = None,
) -> np.ndarray:  # fmt: skip
    """Tokenizer: split every string of X into tokens along a new last axis (see the module docstring)."""
    if X.ndim not in (1, 2):  # (the shape is refused before the attributes, as before the node was prepared)
        raise ShapeError(f"Tokenizer: X must be [C] or [N, C], got shape {X.shape}")
    return _Tokenizer(mark=mark, mincharnum=mincharnum, pad_value=pad_value, separators=separators, tokenexp=tokenexp)(
        X
    )
