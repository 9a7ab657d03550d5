"""The linear-time RE2 matcher behind RegexFullMatch (onnxcore.libs.re2; issue 29).

Oracles: Google's RE2 itself through its Python binding (``google-re2``) on random patterns and strings, and
onnxruntime's RegexFullMatch (which uses RE2) on the patterns that made Python's backtracking ``re`` hang.
"""

from __future__ import annotations

import random
import re

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from onnxcore import kernels
from onnxcore.errors import EvaluationError
from onnxcore.libs.re2 import compile_re2

re2 = pytest.importorskip("re2", reason="google-re2 (the oracle) is not installed")

_ATOMS = [
    "a",
    "b",
    "K",
    "é",
    "ß",
    ".",
    "[ab]",
    "[^a]",
    "[a-cx-z]",
    r"\d",
    r"\D",
    r"\w",
    r"\W",
    r"\s",
    r"\S",
    "[[:alpha:]]",
    "[[:^digit:]]",
    "[[:punct:]]",
    r"\.",
    r"\n",
    r"\x41",
    r"\x{e9}",
    r"\101",
    "a{2}",
    "b{1,3}",
    "(a*)",
    r"\b",
    r"\B",
    "^",
    "$",
    r"\A",
    r"\z",
    "[]a]",
    "[a-]",
    r"\Qa.b\E",
    "{",
    "a{,2}",
]
_CHARS = "abcKké.ß_-1 \nxA{},"


def _pattern(rng: random.Random, depth: int = 0) -> str:
    k = rng.randrange(5 if depth < 3 else 1)
    if k == 0:
        return rng.choice(_ATOMS)
    if k == 1:
        return _pattern(rng, depth + 1) + _pattern(rng, depth + 1)
    if k == 2:
        return "(" + _pattern(rng, depth + 1) + "|" + _pattern(rng, depth + 1) + ")"
    if k == 3:
        return "(?" + rng.choice(["i", "s", "m", "is", "-i", "P<g>", "", "U"]) + ":" + _pattern(rng, depth + 1) + ")"
    return "(?:" + _pattern(rng, depth + 1) + ")" + rng.choice(["*", "+", "?", "{0,2}", "{2}", "{1,}", "*?", "+?"])


def _re2_compiles(pattern: str) -> bool:
    try:
        re2.compile(pattern)
    except Exception:  # the binding's error class is private
        return False
    return True


@pytest.mark.parametrize("seed", range(4))
def test_agrees_with_re2_on_random_patterns(seed: int) -> None:
    rng = random.Random(seed)
    compared = 0
    for _ in range(400):
        pattern = _pattern(rng)
        if not _re2_compiles(pattern):
            with pytest.raises(EvaluationError):
                compile_re2(pattern)
            continue
        ours = compile_re2(pattern)
        for _ in range(15):
            text = "".join(rng.choice(_CHARS) for _ in range(rng.randrange(7)))
            expected = re2.fullmatch(pattern, text) is not None
            assert ours.fullmatch(text) == expected, (pattern, text)
            compared += 1
    assert compared > 3000


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("a$", "a\n", False),  # RE2's $ is the end of the text (Python's re also accepts before a final newline)
        ("(?m)a$\n", "a\n", True),
        ("(?i)k", "\u212a", True),  # simple case folding orbits: k, K and the Kelvin sign
        ("(?i)[a-z]+", "\u017fK", True),  # long s folds to s
        ("[^a]", "\n", True),
        (".", "\n", False),
        ("(?s).", "\n", True),
        (r"\bfoo\b", "foo", True),
        (r"a\Bb", "ab", True),
        ("x{1000}", "x" * 1000, True),
        ("", "", True),
        ("a|", "", True),
        ("()*", "", True),
    ],
)
def test_semantics_against_re2(pattern: str, text: str, expected: bool) -> None:
    assert (re2.fullmatch(pattern, text) is not None) == expected  # the oracle first: the case is RE2's fact
    assert compile_re2(pattern).fullmatch(text) == expected


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a)\1",
        r"\8",
        "a(?=b)",
        "(?<=a)b",
        "(?<!x)y",
        "(?P<n>a)(?P=n)",
        "a++",
        "a**",
        "(?>a)",
        "*a",
        "a{1001}",
        "(a",
        "a)",
        "[a",
        r"\xZZ",
        r"\q",
        "a{2,1}",
    ],
)
def test_refuses_what_re2_refuses(pattern: str) -> None:
    assert not _re2_compiles(pattern)
    with pytest.raises(EvaluationError, match="RegexFullMatch"):
        compile_re2(pattern)


@pytest.mark.parametrize("pattern", [r"\pL", r"\p{Greek}", r"\PN", r"\C"])
def test_refuses_unicode_classes_re2_accepts(pattern: str) -> None:
    # No Unicode tables in the core: refused by name, never approximated (Clause 4.4).
    assert _re2_compiles(pattern)
    with pytest.raises(EvaluationError, match="not supported by onnxcore"):
        compile_re2(pattern)


def test_program_size_is_bounded() -> None:
    # Flat counted repetitions pass RE2's nesting rule below; their program is bounded all the same.
    with pytest.raises(EvaluationError, match="instructions"):
        compile_re2("(?:a{1000}b{1000})" * 150)


@pytest.mark.parametrize(
    "pattern",
    [
        "(a{1,100}){1,100}$",  # issue 41's outside campaign: 10 s and 1.6 GB on 10,000 characters before
        "((a{1000}){1000}){1000}",
        "(a{2}){501}",
        "(a{2}){500}",
        "((a{2}){10}){50}",
        "(?:a{10}|b{200}){5}",
        "(?:a{10}|b{201}){5}",
        "(a{2,}){501}",
        "(a{0,2}){501}",
        "(a*){1000}",
        "(a{0}){1000}",
    ],
)
def test_nested_counted_repetitions_refused_as_re2_refuses(pattern: str) -> None:
    # RE2 refuses nested counted repetitions whose counts multiply past 1000, before building a program; the
    # binding is the oracle for which do.
    if _re2_compiles(pattern):
        compile_re2(pattern)
    else:
        with pytest.raises(EvaluationError, match="invalid repetition size"):
            compile_re2(pattern)


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(a|aa)+$", r"(.*a){12}", r"^(\w+\s?)*$", r"(x+x+)+y"])
def test_catastrophic_patterns_finish(pattern: str) -> None:
    # Each of these makes Python's re backtrack exponentially on such an input (the fuzz campaign's hangs);
    # a linear-time matcher answers at once. onnxruntime (RE2) is the oracle for the answer.
    x = np.array(["a" * 3000 + "!", "a" * 40, "x" * 3000], dtype=object).reshape(3)
    node = helper.make_node("RegexFullMatch", ["x"], ["y"], pattern=pattern)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.STRING, [3])],
        [helper.make_tensor_value_info("y", TensorProto.BOOL, [3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=10)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = sess.run(None, {"x": x})
    (actual,) = kernels.run("RegexFullMatch", 20, np.array([s.encode() for s in x], dtype=object), pattern=pattern)
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize(
    ("pattern", "nullable"),
    [
        ("[a-zA-Z0-9_]+", False),
        ("a|bc", False),
        ("(ab)+c?", False),
        ("a{2,}", False),
        ("a*", True),
        ("a?b?", True),
        ("x|", True),
        (r"\b", True),
        ("^a", False),  # an assertion then a character: no empty match
        ("(?:a{0})", True),
    ],
)
def test_nullable_says_whether_a_pattern_matches_the_empty_string(pattern: str, nullable: bool) -> None:
    """The Tokenizer takes findall's tokens as they are only for a pattern that can match no empty string."""
    rx = compile_re2(pattern)
    assert rx.nullable is nullable
    # Python's re agrees on a text whose every position is tried: an empty match appears only when nullable.
    empties = [m for m in re.finditer(pattern, "ab bc aa xa\n") if m.end() == m.start()]
    assert bool(empties) is nullable
