"""Regular expressions in RE2 syntax, matched in time linear in the input (RegexFullMatch, ONNX 1-2).

The operator's definition names RE2's syntax, whose matching never backtracks. Python's :mod:`re` backtracks,
so a model's pattern such as ``(a+)+$`` could stall the evaluator on a short input (issue 29). This module
parses the pattern into a small program of instructions (a Thompson NFA) and runs it as a lazily built DFA:
each state is a set of program positions; a transition is computed once per (state, character) and cached, so
a string of ``n`` characters costs ``n`` dictionary lookups once warm and at most ``n * len(program)`` steps
when cold. The cache is bounded (dropped and rebuilt when full, as RE2 does), so memory stays bounded too.

Syntax accepted (RE2's): literals and escapes (``\\a \\f \\t \\n \\r \\v``, ``\\xHH``, ``\\x{H...}``, octal
``\\0``, ``\\123``, ``\\Q...\\E``, any escaped punctuation); ``.``; classes ``[...]`` with ranges, negation,
escapes and POSIX classes (``[[:alpha:]]``); ``\\d \\D \\s \\S \\w \\W`` (ASCII, as in RE2); groups ``(...)``,
``(?:...)``, ``(?P<name>...)``, ``(?<name>...)``; flags ``(?imsU)`` and ``(?imsU:...)``; alternation;
repetition ``* + ? {n} {n,} {n,m}`` and their non-greedy forms (greediness does not change whether a string
matches in full); assertions ``^ $ \\A \\z \\b \\B``. Refused with an :class:`~onnxcore.errors.EvaluationError`,
as RE2 refuses them: backreferences, lookaround, possessive quantifiers, atomic groups, conditionals, a
repetition count above 1000. Refused although RE2 accepts them: Unicode classes ``\\p...``/``\\P...`` and
``\\C`` (no Unicode tables in the core; refused, never approximated: Clause 4.4).
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from typing import Any

from onnxcore.errors import EvaluationError

__all__ = ["Re2Pattern", "compile_re2", "python_pattern"]

_MAX_REPEAT = 1000  # RE2's bound on one counted repetition
_MAX_PROGRAM = 200_000  # instructions: a pattern whose expansion is larger is refused (RE2 bounds its program too)
_MAX_CACHE = 20_000  # DFA transitions kept before the cache is dropped

# Instruction opcodes
_CHAR, _SPLIT, _JMP, _ASSERT, _MATCH = range(5)
# Assertion kinds
_BOT, _EOT, _BOL, _EOL, _WORDB, _NWORDB = range(6)
# Character contexts (of the previous and the next character)
_START, _NL, _WORD, _OTHER, _END = range(5)

_WORD_CHARS = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")

Ranges = list[tuple[int, int]]

_PERL: dict[str, Ranges] = {
    "d": [(0x30, 0x39)],
    "s": [(0x09, 0x0A), (0x0C, 0x0D), (0x20, 0x20)],  # RE2's \s: [\t\n\f\r ] (no \v)
    "w": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)],
}
_POSIX: dict[str, Ranges] = {
    "alnum": [(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)],
    "alpha": [(0x41, 0x5A), (0x61, 0x7A)],
    "ascii": [(0x00, 0x7F)],
    "blank": [(0x09, 0x09), (0x20, 0x20)],
    "cntrl": [(0x00, 0x1F), (0x7F, 0x7F)],
    "digit": [(0x30, 0x39)],
    "graph": [(0x21, 0x7E)],
    "lower": [(0x61, 0x7A)],
    "print": [(0x20, 0x7E)],
    "punct": [(0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)],
    "space": [(0x09, 0x0D), (0x20, 0x20)],
    "upper": [(0x41, 0x5A)],
    "word": _PERL["w"],
    "xdigit": [(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)],
}
_SIMPLE_ESCAPES = {"a": 0x07, "f": 0x0C, "t": 0x09, "n": 0x0A, "r": 0x0D, "v": 0x0B}
_MAX_CODE = 0x10FFFF


def _normalize(ranges: Ranges) -> Ranges:
    out: Ranges = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def _negate(ranges: Ranges) -> Ranges:
    out: Ranges = []
    nxt = 0
    for lo, hi in _normalize(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= _MAX_CODE:
        out.append((nxt, _MAX_CODE))
    return out


@functools.lru_cache(maxsize=1)
def _case_orbits() -> dict[int, tuple[int, ...]]:
    """Each cased code point -> every code point equal to it under simple case folding (RE2's orbits, e.g.
    ``k``, ``K`` and the Kelvin sign), from Python's own case mappings. Built once, on the first ``(?i)``."""
    parent: dict[int, int] = {}

    def find(c: int) -> int:
        while parent.get(c, c) != c:
            c = parent[c]
        return c

    for c in range(0x1E944):  # the last cased code point (Adlam) is below this
        ch = chr(c)
        for other in (ch.lower(), ch.upper()):
            if len(other) == 1 and other != ch:
                a, b = find(c), find(ord(other))
                if a != b:
                    parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for c in parent:
        groups.setdefault(find(c), []).append(c)
    orbits: dict[int, tuple[int, ...]] = {}
    for root, members in groups.items():
        orbit = tuple(sorted({root, *members}))
        for m in orbit:
            orbits[m] = orbit
    return orbits


def _fold(ranges: Ranges) -> Ranges:
    """Add every case variant of every character in ``ranges`` (the ``i`` flag)."""
    orbits = _case_orbits()
    extra: Ranges = []
    for lo, hi in ranges:
        if hi - lo > len(orbits):  # a wide range: walk the cased points instead of the range
            extra += [(o, o) for c, orbit in orbits.items() if lo <= c <= hi for o in orbit]
        else:
            extra += [(o, o) for c in range(lo, hi + 1) for o in orbits.get(c, ())]
    return _normalize(ranges + extra)


class _CharSet:
    """A set of code points as sorted disjoint ranges; membership by bisection."""

    __slots__ = ("highs", "lows")

    def __init__(self, ranges: Ranges) -> None:
        norm = _normalize(ranges)
        self.lows = [lo for lo, _ in norm]
        self.highs = [hi for _, hi in norm]

    def __contains__(self, c: int) -> bool:
        i = bisect_right(self.lows, c) - 1
        return i >= 0 and c <= self.highs[i]


# ---------------------------------------------------------------------------------------------
# Parsing to a tree: ("lit", ranges) | ("cat", [..]) | ("alt", [..]) | ("rep", node, lo, hi) | ("assert", kind)
# ---------------------------------------------------------------------------------------------

Node = tuple[Any, ...]


class _Parser:
    __slots__ = ("flags", "i", "pattern", "size")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.i = 0
        self.flags = {"i": False, "m": False, "s": False, "U": False}
        self.size = 0

    def error(self, why: str) -> EvaluationError:
        return EvaluationError(f"RegexFullMatch: pattern {self.pattern!r}: {why} (at offset {self.i}; RE2 syntax)")

    def peek(self) -> str | None:
        return self.pattern[self.i] if self.i < len(self.pattern) else None

    def parse(self) -> Node:
        node = self.alternation()
        if self.i < len(self.pattern):
            raise self.error("unmatched ')'")
        return node

    def alternation(self) -> Node:
        branches = [self.concatenation()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.concatenation())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def concatenation(self) -> Node:
        items: list[Node] = []
        while True:
            c = self.peek()
            if c is None or c in "|)":
                return ("cat", items)
            atom = self.atom()
            if atom is None:
                continue
            items.append(self.repetition(atom))

    def repetition(self, atom: Node) -> Node:
        while True:
            c = self.peek()
            if c in ("*", "+", "?"):
                self.i += 1
                lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
            elif c == "{":
                counted = self.counted()
                if counted is None:
                    return atom
                lo, hi = counted
            else:
                return atom
            if self.peek() == "?":
                self.i += 1  # non-greedy: the same set of full matches
            if self.peek() in ("*", "+", "?") or (self.peek() == "{" and self._looks_counted()):
                raise self.error("bad repetition operator (possessive or repeated quantifier)")
            atom = ("rep", atom, lo, hi)

    def _looks_counted(self) -> bool:
        save = self.i
        try:
            return self.counted() is not None
        finally:
            self.i = save

    def counted(self) -> tuple[int, int | None] | None:
        """``{n}``, ``{n,}``, ``{n,m}``; None (and nothing consumed) when the brace is a literal, as in RE2."""
        j = self.i + 1
        p = self.pattern
        k = j
        while k < len(p) and p[k].isdigit():
            k += 1
        if k == j:
            return None
        lo = int(p[j:k])
        hi: int | None = lo
        if k < len(p) and p[k] == ",":
            k += 1
            m = k
            while k < len(p) and p[k].isdigit():
                k += 1
            hi = int(p[m:k]) if k > m else None
        if k >= len(p) or p[k] != "}":
            return None
        self.i = k + 1
        if lo > _MAX_REPEAT or (hi is not None and (hi > _MAX_REPEAT or hi < lo)):
            raise self.error(f"bad repetition operator {p[j - 1 : k + 1]!r} (counts up to {_MAX_REPEAT})")
        return lo, hi

    def lit(self, ranges: Ranges) -> Node:
        return ("lit", _fold(ranges) if self.flags["i"] else _normalize(ranges))

    def atom(self) -> Node | None:
        p = self.pattern
        c = p[self.i]
        if c == "(":
            return self.group()
        if c == "[":
            return self.lit(self.char_class())
        if c == ".":
            self.i += 1
            return self.lit([(0, _MAX_CODE)] if self.flags["s"] else [(0, 9), (11, _MAX_CODE)])
        if c == "^":
            self.i += 1
            return ("assert", _BOL if self.flags["m"] else _BOT)
        if c == "$":
            self.i += 1
            return ("assert", _EOL if self.flags["m"] else _EOT)
        if c in "*+?":
            raise self.error("missing argument to repetition operator")
        if c == "{" and self._looks_counted():
            raise self.error("missing argument to repetition operator")
        if c == "\\":
            return self.escape()
        self.i += 1
        return self.lit([(ord(c), ord(c))])

    def group(self) -> Node | None:
        p = self.pattern
        self.i += 1
        saved = dict(self.flags)
        if p.startswith("?", self.i):
            rest = p[self.i + 1 :]
            if rest.startswith(("P<", "<")) and not rest.startswith(("<=", "<!")):
                end = p.find(">", self.i)
                name = p[self.i + (3 if rest.startswith("P<") else 2) : end] if end > 0 else ""
                if end < 0 or not name or not all(ch.isalnum() or ch == "_" for ch in name):
                    raise self.error("invalid named capture group")
                self.i = end + 1
            elif rest.startswith((":",)):
                self.i += 2
            elif rest[:1] in ("=", "!", ">", "(") or rest.startswith(("<=", "<!", "P=", "P>")):
                raise self.error("lookaround, atomic groups, conditionals and backreferences are not RE2 syntax")
            else:
                self.i += 1
                negate = False
                seen = False
                while True:
                    ch = self.peek()
                    if ch is None:
                        raise self.error("missing closing )")
                    self.i += 1
                    if ch in "imsU":
                        self.flags[ch] = not negate
                        seen = True
                    elif ch == "-" and not negate:
                        negate = True
                        seen = False
                    elif ch == ")":
                        if negate and not seen:
                            raise self.error("invalid flag group")
                        return None  # flags for the rest of the enclosing group
                    elif ch == ":":
                        if negate and not seen:
                            raise self.error("invalid flag group")
                        break
                    else:
                        raise self.error(f"invalid flag {ch!r}")
        node = self.alternation()
        if self.peek() != ")":
            raise self.error("missing closing )")
        self.i += 1
        self.flags = saved
        return node

    def escape(self) -> Node:
        p = self.pattern
        if self.i + 1 >= len(p):
            raise self.error("trailing backslash")
        c = p[self.i + 1]
        if c in "AzbB":
            self.i += 2
            return ("assert", {"A": _BOT, "z": _EOT, "b": _WORDB, "B": _NWORDB}[c])
        if c == "Q":
            end = p.find("\\E", self.i + 2)
            text = p[self.i + 2 :] if end < 0 else p[self.i + 2 : end]
            self.i = len(p) if end < 0 else end + 2
            return ("cat", [self.lit([(ord(ch), ord(ch))]) for ch in text])
        return self.lit(self.escape_ranges())

    def escape_ranges(self) -> Ranges:
        """The ranges of the escape at ``self.i`` (a backslash), consumed."""
        p = self.pattern
        c = p[self.i + 1]
        self.i += 2
        if c.lower() in _PERL:
            r = _PERL[c.lower()]
            return _negate(r) if c.isupper() else list(r)
        if c in _SIMPLE_ESCAPES:
            return [(_SIMPLE_ESCAPES[c],) * 2]
        if c == "x":
            if self.peek() == "{":
                end = p.find("}", self.i)
                digits = p[self.i + 1 : end] if end > 0 else ""
                self.i = end + 1
            else:
                digits = p[self.i : self.i + 2]
                self.i += 2
                if len(digits) < 2:
                    raise self.error("invalid escape \\x")
            try:
                code = int(digits, 16)
            except ValueError:
                raise self.error("invalid escape \\x") from None
            if not digits or code > _MAX_CODE:
                raise self.error("invalid escape \\x")
            return [(code, code)]
        if c in "01234567":
            # \0 and \1-\7 followed by an octal digit are octal; a lone \1-\9 is a backreference (RE2 refuses it)
            if c != "0" and not (self.i < len(p) and p[self.i] in "01234567"):
                raise self.error("backreferences are not RE2 syntax")
            digits = c
            while len(digits) < 3 and self.i < len(p) and p[self.i] in "01234567":
                digits += p[self.i]
                self.i += 1
            return [(int(digits, 8),) * 2]
        if c in "89":
            raise self.error("backreferences are not RE2 syntax")
        if c in "pPC":
            raise self.error(f"\\{c} (Unicode classes, single bytes) is not supported by onnxcore")
        if c.isalnum() or c == "_":
            raise self.error(f"invalid escape \\{c}")
        return [(ord(c), ord(c))]

    def char_class(self) -> Ranges:
        p = self.pattern
        self.i += 1
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        ranges: Ranges = []
        first = True
        while True:
            c = self.peek()
            if c is None:
                raise self.error("missing closing ]")
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if p.startswith("[:", self.i):
                end = p.find(":]", self.i + 2)
                name = p[self.i + 2 : end] if end > 0 else ""
                neg = name.startswith("^")
                key = name[1:] if neg else name
                if end < 0 or key not in _POSIX:
                    raise self.error(f"invalid character class range {p[self.i : end + 2]!r}")
                self.i = end + 2
                ranges += _negate(_POSIX[key]) if neg else _POSIX[key]
                continue
            lo_r = self.class_atom()
            if (
                self.peek() == "-"
                and self.i + 1 < len(p)
                and p[self.i + 1] != "]"
                and len(lo_r) == 1
                and lo_r[0][0] == lo_r[0][1]
            ):
                self.i += 1
                hi_r = self.class_atom()
                if len(hi_r) != 1 or hi_r[0][0] != hi_r[0][1] or hi_r[0][0] < lo_r[0][0]:
                    raise self.error("invalid character class range")
                ranges.append((lo_r[0][0], hi_r[0][0]))
            else:
                ranges += lo_r
        if self.flags["i"]:
            ranges = _fold(ranges)
        return _negate(ranges) if negate else ranges

    def class_atom(self) -> Ranges:
        c = self.pattern[self.i]
        if c == "\\":
            if self.i + 1 >= len(self.pattern):
                raise self.error("trailing backslash")
            return self.escape_ranges()
        self.i += 1
        return [(ord(c), ord(c))]


# ---------------------------------------------------------------------------------------------
# Compilation to a program, and the lazily built DFA
# ---------------------------------------------------------------------------------------------


class _Compiler:
    __slots__ = ("pattern", "prog")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.prog: list[list[Any]] = []

    def emit(self, op: int, a: Any = None, b: Any = None) -> int:
        if len(self.prog) >= _MAX_PROGRAM:
            raise EvaluationError(
                f"RegexFullMatch: pattern {self.pattern[:80]!r} expands to more than {_MAX_PROGRAM} instructions"
            )
        self.prog.append([op, a, b])
        return len(self.prog) - 1

    def gen(self, node: Node) -> None:
        kind = node[0]
        if kind == "lit":
            self.emit(_CHAR, _CharSet(node[1]))
        elif kind == "assert":
            self.emit(_ASSERT, node[1])
        elif kind == "cat":
            for sub in node[1]:
                self.gen(sub)
        elif kind == "alt":
            branches: list[Node] = node[1]
            jumps = []
            for sub in branches[:-1]:
                split = self.emit(_SPLIT)
                self.prog[split][1] = len(self.prog)
                self.gen(sub)
                jumps.append(self.emit(_JMP))
                self.prog[split][2] = len(self.prog)
            self.gen(branches[-1])
            for j in jumps:
                self.prog[j][1] = len(self.prog)
        else:  # rep
            sub, lo, hi = node[1], int(node[2]), node[3]
            for _ in range(lo):
                self.gen(sub)
            if hi is None:
                split = self.emit(_SPLIT)
                self.prog[split][1] = len(self.prog)
                self.gen(sub)
                self.emit(_JMP, split)
                self.prog[split][2] = len(self.prog)
            else:
                ends = []
                for _ in range(int(hi) - lo):
                    split = self.emit(_SPLIT)
                    self.prog[split][1] = len(self.prog)
                    ends.append(split)
                    self.gen(sub)
                for s in ends:
                    self.prog[s][2] = len(self.prog)


def _context(c: str) -> int:
    if c == "\n":
        return _NL
    return _WORD if c in _WORD_CHARS else _OTHER


def _holds(kind: int, prev: int, nxt: int) -> bool:
    if kind == _BOT:
        return prev == _START
    if kind == _EOT:
        return nxt == _END
    if kind == _BOL:
        return prev in (_START, _NL)
    if kind == _EOL:
        return nxt in (_END, _NL)
    boundary = (prev == _WORD) != (nxt == _WORD)
    return boundary if kind == _WORDB else not boundary


State = tuple[frozenset[int], int]


class Re2Pattern:
    """A compiled pattern: :meth:`fullmatch` in time linear in the string's length."""

    __slots__ = ("_cache", "_prog", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        compiler = _Compiler(pattern)
        compiler.gen(_Parser(pattern).parse())
        compiler.emit(_MATCH)
        self._prog: list[tuple[int, Any, Any]] = [(int(op), a, b) for op, a, b in compiler.prog]
        self._cache: dict[tuple[State, str], State] = {}

    def _closure(self, pcs: frozenset[int], prev: int, nxt: int) -> list[int]:
        """Program positions reachable without consuming, under the context (prev, next): CHAR and MATCH."""
        prog = self._prog
        seen: set[int] = set()
        out: list[int] = []
        stack = sorted(pcs, reverse=True)
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op, a, b = prog[pc]
            if op == _SPLIT:
                stack.append(b)
                stack.append(a)
            elif op == _JMP:
                stack.append(a)
            elif op == _ASSERT:
                if _holds(a, prev, nxt):
                    stack.append(pc + 1)
            else:
                out.append(pc)
        return out

    def _step(self, state: State, c: str) -> State:
        pcs, prev = state
        nxt = _context(c)
        code = ord(c)
        prog = self._prog
        moved = frozenset(
            pc + 1 for pc in self._closure(pcs, prev, nxt) if prog[pc][0] == _CHAR and code in prog[pc][1]
        )
        return moved, nxt

    def fullmatch(self, text: str) -> bool:
        """Whether the whole of ``text`` matches the pattern."""
        state: State = (frozenset((0,)), _START)
        cache = self._cache
        for c in text:
            key = (state, c)
            nxt = cache.get(key)
            if nxt is None:
                if len(cache) >= _MAX_CACHE:
                    cache.clear()
                nxt = cache[key] = self._step(state, c)
            state = nxt
            if not state[0]:
                return False
        prog = self._prog
        return any(prog[pc][0] == _MATCH for pc in self._closure(state[0], state[1], _END))


@functools.lru_cache(maxsize=64)
def compile_re2(pattern: str) -> Re2Pattern:
    """The compiled form of an RE2 ``pattern`` (cached).

    Raises:
        EvaluationError: the pattern is not RE2 syntax, uses what onnxcore does not support (Unicode classes),
            or is too large.
    """
    return Re2Pattern(pattern)


# RE2's POSIX classes, which Python's re would silently read as a set of characters ("[[:alpha:]]").
_POSIX_CLASS = re.compile(r"\[:\^?[a-z]+:\]")


def python_pattern(pattern: str, op: str) -> re.Pattern[str]:
    """``pattern`` checked as RE2 syntax, then compiled by Python's :mod:`re` with ASCII classes (as RE2 reads
    ``\\d``, ``\\w``, ``\\s``), for an operator that searches and splits (Tokenizer), which the matcher above
    does not do. Such a search backtracks: it is not linear in the input as :meth:`Re2Pattern.fullmatch` is.

    Raises:
        EvaluationError: not RE2 syntax (named for ``op``), or RE2 syntax Python's re reads differently (POSIX
            classes) or not at all.
    """
    try:
        compile_re2(pattern)
    except EvaluationError as e:
        raise EvaluationError(str(e).replace("RegexFullMatch", op, 1)) from None
    if _POSIX_CLASS.search(pattern):
        raise EvaluationError(f"{op}: POSIX character classes in {pattern!r} are not supported")
    try:
        return re.compile(pattern, re.ASCII)
    except re.error as e:
        raise EvaluationError(f"{op}: pattern {pattern!r} is RE2 syntax Python's re cannot read: {e}") from None
