"""Regular expressions in RE2 syntax, matched and searched in time linear in the input (RegexFullMatch, ONNX 1-2;
com.microsoft Tokenizer).

The operator's definition names RE2's syntax, whose matching never backtracks. Python's :mod:`re` backtracks,
so a model's pattern such as ``(a+)+$`` could stall the evaluator on a short input (issue 29). This module
parses the pattern into a small program of instructions (a Thompson NFA) and runs it as a lazily built DFA:
each state is a set of program positions; a transition is computed once per (state, character) and cached, so
a string of ``n`` characters costs ``n`` dictionary lookups once warm and at most ``n * len(program)`` steps
when cold. The cache is bounded (dropped and rebuilt when full, as RE2 does), so memory stays bounded too.
A search (:meth:`Re2Pattern.search`, leftmost-first as RE2 and Perl) runs the same program as a Pike VM: threads
in priority order, each with its start, one step per character; the steps are cached by (threads, character) as
the DFA's are, so a warm search costs a lookup and a list of starts per character.

Syntax accepted (RE2's): literals and escapes (``\\a \\f \\t \\n \\r \\v``, ``\\xHH``, ``\\x{H...}``, octal
``\\0``, ``\\123``, ``\\Q...\\E``, any escaped punctuation); ``.``; classes ``[...]`` with ranges, negation,
escapes and POSIX classes (``[[:alpha:]]``); ``\\d \\D \\s \\S \\w \\W`` (ASCII, as in RE2); groups ``(...)``,
``(?:...)``, ``(?P<name>...)``, ``(?<name>...)``; flags ``(?imsU)`` and ``(?imsU:...)``; alternation;
repetition ``* + ? {n} {n,} {n,m}`` and their non-greedy forms (greediness does not change whether a string
matches in full, only which match a search prefers); assertions ``^ $ \\A \\z \\b \\B``. Refused with an
:class:`~onnxcore.errors.EvaluationError`, as RE2 refuses them: backreferences, lookaround, possessive quantifiers,
atomic groups, conditionals, a repetition count above 1000. Refused although RE2 accepts them: Unicode classes
``\\p...``/``\\P...`` and ``\\C`` (no Unicode tables in the core; refused, never approximated: Clause 4.4).
"""

from __future__ import annotations

import functools
from bisect import bisect_right
from typing import Any

from onnxcore.errors import EvaluationError

__all__ = ["Re2Pattern", "compile_re2"]

_MAX_REPEAT = 1000  # RE2's bound on one counted repetition
_MAX_PROGRAM = 200_000  # instructions: a pattern whose expansion is larger is refused (RE2 bounds its program too)
_MAX_CACHE = 20_000  # DFA transitions kept before the cache is dropped
_MAX_HELD = 2_000_000  # thread positions the cached search steps may hold before they are dropped

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
# Parsing to a tree: ("lit", ranges) | ("cat", [..]) | ("alt", [..]) | ("rep", node, lo, hi, greedy) | ("assert", kind)
# ---------------------------------------------------------------------------------------------

Node = tuple[Any, ...]


def _nested_budget(node: Node, budget: int) -> int:
    """What is left of ``budget`` after dividing it by the count of every repetition on the way down to the deepest
    one (the largest count of a bounded repetition, the least of an unbounded one; counts of 0 left out); 0 when
    nested repetitions multiply past the budget. Iterative: a pattern can nest deeper than Python's stack."""
    least = budget
    stack = [(node, budget)]
    while stack:
        cur, left = stack.pop()
        kind = cur[0]
        if kind == "rep":
            count = cur[3] if cur[3] is not None else cur[2]
            if count > 0:
                left //= count
            least = min(least, left)
            if least == 0:
                return 0
            stack.append((cur[1], left))
        elif kind in ("cat", "alt"):
            stack.extend((child, left) for child in cur[1])
    return least


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
                if _nested_budget(("rep", atom, lo, hi, True), _MAX_REPEAT) == 0:
                    # RE2 refuses nested counted repetitions whose counts multiply past 1000 (its parser walks
                    # the new repetition dividing 1000 by each count on the way down), before any program is
                    # built: (a{1,100}){1,100} would be a program of 10,000 copies of a{1,100}.
                    raise self.error(f"invalid repetition size: nested counts multiply past {_MAX_REPEAT}")
            else:
                return atom
            lazy = self.peek() == "?"
            if lazy:
                self.i += 1  # non-greedy: the same full matches; a search prefers fewer repetitions
            if self.peek() in ("*", "+", "?") or (self.peek() == "{" and self._looks_counted()):
                raise self.error("bad repetition operator (possessive or repeated quantifier)")
            atom = ("rep", atom, lo, hi, lazy == self.flags["U"])  # (?U) swaps greedy and non-greedy

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
        else:  # rep; a SPLIT's first target is the preferred one (RE2/Perl priorities, for searching)
            sub, lo, hi, greedy = node[1], int(node[2]), node[3], node[4]
            splits = []
            if hi is None and (lo > 0 or _nullable(sub)):
                # As RE2 compiles them, for its priorities over empty iterations: x{n,} is n-1 copies then x+,
                # one copy looping back; x* of an x that can match empty is (x+)?.
                for _ in range(lo - 1):
                    self.gen(sub)
                if lo == 0:
                    splits.append(self.emit(_SPLIT, len(self.prog) + 1))
                start = len(self.prog)
                self.gen(sub)
                loop = self.emit(_SPLIT, start, len(self.prog) + 1)
                splits.append(loop)
                for s in splits[:-1]:
                    self.prog[s][2] = len(self.prog)
            elif hi is None:
                split = self.emit(_SPLIT)
                splits.append(split)
                self.prog[split][1] = len(self.prog)
                self.gen(sub)
                self.emit(_JMP, split)
                self.prog[split][2] = len(self.prog)
            else:
                for _ in range(lo):
                    self.gen(sub)
                for _ in range(int(hi) - lo):
                    split = self.emit(_SPLIT)
                    self.prog[split][1] = len(self.prog)
                    splits.append(split)
                    self.gen(sub)
                for s in splits:
                    self.prog[s][2] = len(self.prog)
            if not greedy:
                for s in splits:
                    self.prog[s][1], self.prog[s][2] = self.prog[s][2], self.prog[s][1]


def _nullable(node: Node) -> bool:
    """Whether ``node`` can match the empty string."""
    kind = node[0]
    if kind == "lit":
        return False
    if kind == "cat":
        return all(_nullable(sub) for sub in node[1])
    if kind == "alt":
        return any(_nullable(sub) for sub in node[1])
    if kind == "rep":
        return node[2] == 0 or _nullable(node[1])
    return True  # an assertion


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
# A search step: (preferred match's thread or -1, the next threads' program positions, where each came from)
Move = tuple[int, tuple[int, ...], tuple[int, ...]]


class Re2Pattern:
    """A compiled pattern: :meth:`fullmatch` and :meth:`search` in time linear in the string's length.

    Attributes:
        pattern: The pattern as given.
        backtracking: How Python's backtracking :mod:`re` would fare with this pattern (see
            :func:`_backtracking`): 0, linear; 1, quadratic in the input at worst; None, worse.
        nullable: Whether the pattern can match the empty string somewhere (an assertion counts as able to).
    """

    __slots__ = ("_cache", "_held", "_moves", "_prog", "backtracking", "nullable", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        compiler = _Compiler(pattern)
        tree = _Parser(pattern).parse()
        compiler.gen(tree)
        compiler.emit(_MATCH)
        self._prog: list[tuple[int, Any, Any]] = [(int(op), a, b) for op, a, b in compiler.prog]
        self._cache: dict[tuple[State, str], State] = {}
        self._moves: dict[tuple[tuple[int, ...], int, str, bool, bool], Move] = {}
        self._held = 0  # thread positions the cached search steps hold (a large program's are long)
        self.backtracking = _backtracking(tree)
        self.nullable = _nullable(tree)

    @property
    def size(self) -> int:
        """The program's length (instructions)."""
        return len(self._prog)

    def _move(self, pcs: tuple[int, ...], prev: int, c: str, seed: bool, no_empty: bool) -> Move:
        """One step of the search over character ``c`` ("" at the end) after context ``prev``: the threads
        ``pcs`` (highest priority first), plus a new thread starting here when ``seed``, followed without
        consuming in priority order (first arrival at a position wins, as in RE2's and Perl's leftmost-first
        matching); the first to reach MATCH is the match (lower ones are cut), and the others that accept ``c``
        move on. A thread's origin is its index in ``pcs`` (``len(pcs)``: the new one). With ``no_empty`` the
        new thread may not match here (an empty match where the last one was)."""
        prog = self._prog
        nxt = _END if not c else _context(c)
        code = ord(c) if c else -1
        seen: set[int] = set()
        matched = -1
        moved: list[int] = []
        origins: list[int] = []
        roots = [*pcs, 0] if seed else list(pcs)
        for origin, root in enumerate(roots):
            stack = [root]
            while stack:
                pc = stack.pop()
                if pc in seen:
                    continue
                seen.add(pc)
                op, a, b = prog[pc]
                if op == _SPLIT:
                    stack.append(b)
                    stack.append(a)  # the preferred branch is followed first
                elif op == _JMP:
                    stack.append(a)
                elif op == _ASSERT:
                    if _holds(a, prev, nxt):
                        stack.append(pc + 1)
                elif op == _MATCH:
                    if not (no_empty and origin == len(pcs)):
                        matched = origin
                        return matched, tuple(moved), tuple(origins)
                elif code in a:
                    moved.append(pc + 1)
                    origins.append(origin)
        return matched, tuple(moved), tuple(origins)

    def search(self, text: str, pos: int = 0, *, no_empty_at: int = -1) -> tuple[int, int] | None:
        """The leftmost match in ``text`` starting at or after ``pos``, as ``(start, end)``; None if there is none.

        Among the matches starting leftmost, the one the pattern prefers (alternatives in order, greedy
        repetitions as many times as they can, non-greedy as few): what RE2 and Perl give, and what Python's
        ``re.search(text, pos)`` gives for the patterns both read alike. Assertions see the characters before
        ``pos``. An empty match at ``no_empty_at`` is passed over (``re.finditer`` after an empty match). Time
        linear in the characters examined: each step is one cached transition, or at most ``len(program)``
        steps when computed.
        """
        n = len(text)
        moves = self._moves
        prev = _START if pos == 0 else _context(text[pos - 1])
        pcs: tuple[int, ...] = ()
        starts: list[int] = []
        found: tuple[int, int] | None = None
        i = pos
        while True:
            c = text[i] if i < n else ""
            seed = found is None
            key = (pcs, prev, c, seed, seed and i == no_empty_at)
            move = moves.get(key)
            if move is None:
                if len(moves) >= _MAX_CACHE or self._held >= _MAX_HELD:
                    moves.clear()
                    self._held = 0
                move = moves[key] = self._move(*key)
                self._held += len(pcs) + len(move[1])
            matched, pcs, origins = move
            if seed:
                starts.append(i)
            if matched >= 0:
                found = (starts[matched], i)
            if i >= n or (not pcs and found is not None):
                return found
            starts = [starts[o] for o in origins]
            prev = _context(c)
            i += 1

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


def _fixed(node: Node) -> bool:
    """Whether ``node`` matches in one way only where it matches: no alternation, no repetition of varying count."""
    kind = node[0]
    if kind == "cat":
        return all(_fixed(sub) for sub in node[1])
    if kind == "rep":
        return node[2] == node[3] and _fixed(node[1])
    return kind != "alt"


def _items(node: Node) -> list[Node]:
    return [it for sub in node[1] for it in _items(sub)] if node[0] == "cat" else [node]


def _backtracking(tree: Node) -> int | None:
    """A bound on the work of a backtracking search (Python's re) with this pattern, as a power of the input's
    length: 0 (linear) or 1 (quadratic: one choice point per start), None when nothing better than exponential
    is proved. Proved only for a pattern that is one alternation at most, at the top (tried branch by branch
    from each start), each branch having at most one repetition of varying count, over a body that matches in
    one way only; a branch whose varying repetition is its last item never backtracks into it."""
    worst = 0
    for branch in tree[1] if tree[0] == "alt" else [tree]:
        items = _items(branch)
        varying = [k for k, it in enumerate(items) if it[0] == "rep" and it[2] != it[3]]
        if len(varying) > 1 or any(not _fixed(it[1] if it[0] == "rep" else it) for it in items):
            return None
        if varying and varying[0] != len(items) - 1:
            worst = 1
    return worst


@functools.lru_cache(maxsize=64)
def compile_re2(pattern: str) -> Re2Pattern:
    """The compiled form of an RE2 ``pattern`` (cached).

    Raises:
        EvaluationError: the pattern is not RE2 syntax, uses what onnxcore does not support (Unicode classes),
            or is too large.
    """
    return Re2Pattern(pattern)
