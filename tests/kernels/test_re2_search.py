"""Leftmost-first search in linear time (Re2Pattern.search) and the com.microsoft Tokenizer built on it (issue 29).

Oracles: Google's RE2 through its Python binding (``google-re2``) on random patterns and texts, unicode included;
Python's re on the patterns our analysis hands to it (``Re2Pattern.backtracking`` not None), which must give the
same spans and tokens; onnxruntime's Tokenizer on hostile patterns (its RE2 is linear too).
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from kernels.contrib import check
from onnxcore.kernels import contrib  # noqa: F401  (registers the com.microsoft kernels)
from onnxcore.kernels.contrib import text as tokenizer_module
from onnxcore.libs.re2 import compile_re2

re2 = pytest.importorskip("re2", reason="google-re2 (the oracle) is not installed")

# No \B: RE2 tests it between the octets of a multi-octet character (a match inside "é") and never on an empty
# text, where ours reads characters (test_re2's fullmatch cases cover \B).
_ATOMS = ["a", "b", "é", "K", ".", "[ab]", "[^a]", r"\d", r"\w", r"\W", r"\s", "[[:alpha:]]", r"\b", "^", "$"]
_ATOMS += [r"\A", r"\z", "(a*)", "a{2}", "b{1,3}", r"\x{e9}", r"\Qa.\E", "x"]
# What Python's re reads as RE2 does (no POSIX class, \z, \Q, \x{}, (?U)); texts without \v or a final newline.
_RE_ATOMS = ["a", "b", "é", ".", "[ab]", "[^a]", r"\d", r"\w", r"\W", r"\s", r"\b", r"\B", "^", "(a*)", "a{2}", "x"]
_QUANT = ["*", "+", "?", "{0,2}", "{2}", "{1,}", "*?", "+?", "??", "{1,3}?"]
_CHARS = "abaxé K1 \n._"


def _pattern(rng: random.Random, atoms: list[str], depth: int = 0) -> str:
    k = rng.randrange(5 if depth < 3 else 1)
    if k == 0:
        return rng.choice(atoms)
    if k == 1:
        return _pattern(rng, atoms, depth + 1) + _pattern(rng, atoms, depth + 1)
    if k == 2:
        return "(" + _pattern(rng, atoms, depth + 1) + "|" + _pattern(rng, atoms, depth + 1) + ")"
    if k == 3:
        return "(?" + rng.choice(["s", "m", "", "P<g>"]) + ":" + _pattern(rng, atoms, depth + 1) + ")"
    return "(?:" + _pattern(rng, atoms, depth + 1) + ")" + rng.choice(_QUANT)


def _text(rng: random.Random, n: int = 9) -> str:
    return "".join(rng.choice(_CHARS) for _ in range(rng.randrange(n)))


@pytest.mark.parametrize("seed", range(4))
def test_search_agrees_with_re2(seed: int) -> None:
    rng = random.Random(seed)
    compared = 0
    for _ in range(400):
        pattern = _pattern(rng, _ATOMS)
        try:
            theirs = re2.compile(pattern)
        except Exception:  # the binding's error class is private; refusals are test_re2's subject
            continue
        ours = compile_re2(pattern)
        for _ in range(10):
            text = _text(rng)
            pos = rng.randrange(len(text) + 1)
            m = theirs.search(text, pos)
            assert ours.search(text, pos) == (None if m is None else m.span()), (pattern, text, pos)
            compared += 1
    assert compared > 2500


@pytest.mark.parametrize("seed", range(4))
def test_search_agrees_with_python_re_where_the_tokenizer_uses_it(seed: int) -> None:
    # The patterns whose backtracking the analysis bounds are the ones the Tokenizer may give to Python's re: on
    # them re's leftmost-first spans must be ours (and RE2's), so that the choice never changes a token.
    rng = random.Random(100 + seed)
    handed = compared = 0
    for _ in range(600):
        pattern = _pattern(rng, _RE_ATOMS)
        ours = compile_re2(pattern)
        if ours.backtracking is None:
            continue
        try:
            py = re.compile(pattern, re.ASCII)
        except re.error:  # a group name used twice: re refuses it, RE2 reads it
            continue
        handed += 1
        for _ in range(10):
            text = _text(rng).rstrip("\n") or "a"  # Python's re finds no \B in an empty text, RE2 does
            pos = rng.randrange(len(text) + 1)
            m = py.search(text, pos)
            assert ours.search(text, pos) == (None if m is None else m.span()), (pattern, text, pos)
            compared += 1
    assert handed > 100 and compared > 1000


@pytest.mark.parametrize("seed", range(3))
def test_every_pattern_searches_as_re_where_both_agree(seed: int) -> None:
    # Beyond the bounded class: any pattern both read alike, on texts where re2 and re agree (empty repetitions
    # such as (a*)* are where the two engines differ by design; RE2's answer is ours, tested above).
    rng = random.Random(200 + seed)
    compared = 0
    for _ in range(300):
        pattern = _pattern(rng, _RE_ATOMS)
        try:
            py = re.compile(pattern, re.ASCII)
        except re.error:
            continue
        ours, theirs = compile_re2(pattern), re2.compile(pattern)
        for _ in range(8):
            text = _text(rng, 7).rstrip("\n") or "a"
            a, b = py.search(text), theirs.search(text)
            if (a and a.span()) != (b and b.span()):
                continue
            assert ours.search(text) == (None if a is None else a.span()), (pattern, text)
            compared += 1
    assert compared > 1500


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("a|ab", "xab"),
        ("(a|ab)(c|bcd)(d*)", "abcd"),
        ("a*?b", "aaab"),
        ("a{2,3}?", "aaaa"),
        ("(?U)a+", "aaa"),  # (?U) swaps greediness
        ("(?U)a+?", "aaa"),
        (r"\bfoo\b", "a foo b"),
        ("x*", "abxd"),
        ("$", "ab\n"),  # RE2's $: the end only
        ("(?m)^b", "a\nb"),
        ("(?i)k", "\u212a"),  # Kelvin sign folds to k
        ("é+", "aééb"),
        (r"\B", ""),  # in an empty text (RE2; Python's re finds none)
        (r"a\B", "ab"),
    ],
)
def test_search_semantics_against_re2(pattern: str, text: str) -> None:
    m = re2.compile(pattern).search(text)
    assert compile_re2(pattern).search(text) == (None if m is None else m.span())


def _tokens(text: str, *, tokenexp: str | None = None, separators: list[str] | None = None) -> list[str]:
    out = tokenizer_module.tokenizer(
        np.array([text], dtype=object),
        mark=0,
        mincharnum=1,
        pad_value="#",
        separators=separators,
        tokenexp=tokenexp,
    )
    return [t.decode() if isinstance(t, bytes) else t for t in out.reshape(-1) if t not in ("#", b"#")]


@pytest.mark.parametrize("seed", range(3))
def test_tokenizer_gives_the_same_tokens_by_either_matcher(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # The same inputs through the linear matcher only (the bound on re's work set to nothing) and as usual.
    rng = random.Random(300 + seed)
    cases = []
    for _ in range(150):
        pattern = _pattern(rng, _RE_ATOMS)
        text = _text(rng, 14).rstrip("\n")
        mode = rng.choice(["tokenexp", "separators"])
        if mode == "tokenexp" and pattern in (".",):
            continue
        cases.append((mode, pattern, text))
    usual = [_tokens(t, **{m: p if m == "tokenexp" else [p]}) for m, p, t in cases]
    monkeypatch.setattr(tokenizer_module, "_QUADRATIC_WORK", -1)
    monkeypatch.setattr(tokenizer_module._Splitter, "_python_may", lambda self, item: False)
    linear = [_tokens(t, **{m: p if m == "tokenexp" else [p]}) for m, p, t in cases]
    assert linear == usual


@pytest.mark.parametrize(
    ("pattern", "safe"),
    [
        ("[a-zA-Z0-9_]+", 0),
        (r"\b\w\w+\b", 1),
        ("(?: )|(?:,)|(?:[.])", 0),
        ("a+|b+c", 1),
        ("(a+)+$", None),
        ("(a|aa)+b", None),
        (r"\w+\w+x", None),
        ("(a|b)(c|d)", None),
    ],
)
def test_the_backtracking_analysis(pattern: str, safe: int | None) -> None:
    assert compile_re2(pattern).backtracking == safe


_HOSTILE = textwrap.dedent(
    """
    import signal, sys
    import numpy as np
    signal.alarm(30)  # a search that backtracks takes years on these: the child dies with SIGALRM
    from onnxcore.kernels import run
    base = {"mark": 0, "mincharnum": 1, "pad_value": "#"}
    x = np.array(["a" * 40 + "!", "a" * 3000, "aaa aa" * 50], dtype=object)
    print(run("Tokenizer", 1, x, domain="com.microsoft", tokenexp="(a|aa)+b", **base)[0].shape)
    print(run("Tokenizer", 1, x, domain="com.microsoft", separators=["(a+)+$"], **base)[0].shape)
    print(run("Tokenizer", 1, x, domain="com.microsoft", tokenexp=r"(\\w+\\s?)*b", **base)[0].shape)
    print(run("Tokenizer", 1, x, domain="com.microsoft", tokenexp=r"\\w+x", **base)[0].shape)
    """
)


def test_hostile_patterns_do_not_stall_the_tokenizer() -> None:
    # Before: Python's re searched, exponentially ((a|aa)+b on 40 a's) or quadratically (\w+x on 3000 a's).
    proc = subprocess.run([sys.executable, "-c", _HOSTILE], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["(3,", "0)", "(3,", "1)", "(3,", "0)", "(3,", "0)"]


_AGAINST_ORT = [
    {"tokenexp": "(a|aa)+b"},
    {"tokenexp": r"(\w+\s?)*x"},
    {"tokenexp": r"\w+\w+a"},
    {"tokenexp": "[[:alpha:]]+"},  # POSIX classes: Python's re misreads them; refused before, RE2's now
    {"tokenexp": r"a+?b|\d{2,}"},
    {"tokenexp": r"[a-z]+\z"},
    {"separators": ["(a+)+$"]},
    {"separators": ["[[:space:]]+", ","]},
    {"separators": [r"\Q.\E"]},
]


@pytest.mark.parametrize("mode", _AGAINST_ORT, ids=repr)
def test_tokenizer_patterns_against_onnxruntime(mode: dict[str, object]) -> None:
    # onnxruntime's Tokenizer searches with RE2 (linear too): the same tokens, hostile patterns included.
    x = np.array(
        ["aaaaaaaaaaaaaaaaaaaaaaaa!", "ab aab 12 345", "x y.z, w\tv", "café au lait aab", "", "aaaa a"], dtype=object
    )
    check("Tokenizer", [x], 1, {"mark": 0, "mincharnum": 1, "pad_value": "#", **mode})
