"""com.microsoft Tokenizer against onnxruntime, and scikit-learn text pipelines converted by skl2onnx: onnxcore's
outputs equal scikit-learn's and onnxruntime's."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import numpy as np
import pytest

from kernels.contrib import check, run_ort_model, run_ours_model
from onnxcore.errors import EvaluationError
from onnxcore.kernels import run
from onnxcore.kernels.contrib.text import _Tokenizer

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

TEXTS = np.array(
    [
        "Hello World",
        "I love computer science !",
        "  leading and trailing  ",
        "",
        "x",
        "tabs\tand\nnewlines",
        "unicode café naïve Ωmega",
        "a-b_c d.e,f",
    ],
    dtype=object,
)

MODES: list[dict[str, Any]] = [
    {"separators": [" "]},
    {"separators": [" ", "\t", "\n"]},
    {"separators": [""]},
    {"separators": ["[.,]", " "]},
    {"tokenexp": "[a-zA-Z0-9_]+"},
    {"tokenexp": "."},
    {"tokenexp": "[a-z]{3,}"},
    {"tokenexp": r"\w+"},
    {"tokenexp": "a*"},
    {"tokenexp": "(?i)[A-C]+"},
]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: repr(m))
@pytest.mark.parametrize("mark", [0, 1])
@pytest.mark.parametrize("mincharnum", [1, 2, 4])
def test_tokenizer_1d(mode: dict[str, Any], mark: int, mincharnum: int) -> None:
    if mincharnum > 1 and mode in ({"separators": [""]}, {"tokenexp": "."}):
        # character mode with a minimum length: both refuse it
        with pytest.raises(EvaluationError, match="character mode"):
            run("Tokenizer", 1, TEXTS, domain="com.microsoft", mark=mark, mincharnum=mincharnum, pad_value="#", **mode)
        with pytest.raises(Exception, match="char level"):
            check("Tokenizer", [TEXTS], 1, {"mark": mark, "mincharnum": mincharnum, "pad_value": "#", **mode})
        return
    check("Tokenizer", [TEXTS], 1, {"mark": mark, "mincharnum": mincharnum, "pad_value": "#", **mode})


@pytest.mark.parametrize("mode", MODES[:6], ids=lambda m: repr(m))
@pytest.mark.parametrize("mark", [0, 1])
def test_tokenizer_2d(mode: dict[str, Any], mark: int) -> None:
    check("Tokenizer", [TEXTS.reshape(2, 4)], 1, {"mark": mark, "mincharnum": 1, "pad_value": "<pad>", **mode})


@pytest.mark.parametrize(
    "separators", [["", " "], [" *"], ["e*"], [r"\b"], [" |$"], ["^a"], ["(?: |)"], ["a", "b*"], ["$"]]
)
def test_tokenizer_separators_matching_the_empty_string(separators: list[str]) -> None:
    # onnxruntime drops the character where a separator matches the empty string
    x = np.array(["ab cd", "eeHello", " Hello World", "xy", "abc de fgh ij", "aaa b", "", "b"], dtype=object)
    check("Tokenizer", [x], 1, {"mark": 0, "mincharnum": 1, "pad_value": "#", "separators": separators})


@pytest.mark.parametrize(
    "x", [np.array(["", " "], dtype=object), np.zeros((0,), dtype=object), np.zeros((3, 0), dtype=object)]
)
@pytest.mark.parametrize("mark", [0, 1])
def test_tokenizer_no_token_and_empty_inputs(x: np.ndarray, mark: int) -> None:
    check("Tokenizer", [x], 1, {"mark": mark, "mincharnum": 1, "pad_value": "#", "separators": [" "]})


def test_tokenizer_refusals() -> None:
    x = np.array([b"a b"], dtype=object)
    base = {"mark": 0, "mincharnum": 1, "pad_value": "#"}
    with pytest.raises(EvaluationError, match="exactly one"):
        run("Tokenizer", 1, x, domain="com.microsoft", **base)
    with pytest.raises(EvaluationError, match="exactly one"):
        run("Tokenizer", 1, x, domain="com.microsoft", separators=[" "], tokenexp="a", **base)
    # scikit-learn's default pattern as written; RE2 (so onnxruntime) refuses the (?u) flag too
    with pytest.raises(EvaluationError, match="RE2"):
        run("Tokenizer", 1, x, domain="com.microsoft", tokenexp=r"(?u)\b\w\w+\b", **base)
    with pytest.raises(Exception, match="tokenexp"):
        check("Tokenizer", [x], 1, {**base, "tokenexp": r"(?u)\b\w\w+\b"})


# ---- scikit-learn pipelines, as users convert them ---------------------------------------------------------------

sklearn = pytest.importorskip("sklearn")
skl2onnx = pytest.importorskip("skl2onnx")
from skl2onnx import convert_sklearn  # noqa: E402
from skl2onnx.common.data_types import StringTensorType  # noqa: E402
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402

CORPUS = np.array(
    [
        "This is the first document.",
        "This document is the second document.",
        "And this is the third one.",
        "Is this the first document?",
        "The cat sat on the mat!",
        "Dogs and cats, living together...",
        "No more documents here.",
        "Second thoughts about the third cat",
        # No one-letter word: skl2onnx writes scikit-learn's default pattern (words of 2+ characters) as
        # [a-zA-Z0-9_]+ and leaves one-letter words to the vocabulary, which changes the n-grams around them
        # (a departure of the conversion, where onnxcore still equals onnxruntime).
        "The dog, the cat and the mat: all of them",
        "Documents about dogs are the best ones",
    ],
    dtype=object,
)
LABELS = np.array([0, 1, 0, 1, 1, 0, 1, 0, 1, 0])
UNSEEN = np.array(["the first cat", "dogs and documents", "", "nothing known here", "MAT mat Mat"], dtype=object)
ONE_LETTER = np.array(["a dog and a cat", "I am a document"], dtype=object)

VECTORIZERS = [
    TfidfVectorizer(),
    CountVectorizer(),
    TfidfVectorizer(ngram_range=(1, 2)),
    CountVectorizer(ngram_range=(1, 3)),
    TfidfVectorizer(analyzer="char", ngram_range=(1, 3)),
    CountVectorizer(analyzer="char", ngram_range=(2, 4)),
    TfidfVectorizer(stop_words="english"),
    CountVectorizer(stop_words=["the", "is", "a"]),
    TfidfVectorizer(token_pattern=r"[a-z]{3,}"),
    CountVectorizer(token_pattern=r"\b\w+\b", lowercase=False),
    TfidfVectorizer(norm="l1", max_features=12),
]


def _ort_copy(model: Any) -> Any:
    # onnxruntime needs an installed locale for StringNormalizer's default en_US; C.UTF-8 is present everywhere
    # (the lower-casing of these ASCII texts does not depend on it).
    m = copy.deepcopy(model)
    for n in m.graph.node:
        if n.op_type == "StringNormalizer":
            for a in [a for a in n.attribute if a.name == "locale"]:
                n.attribute.remove(a)
            n.attribute.append(onnx.helper.make_attribute("locale", "C.UTF-8"))
    return m


@pytest.mark.parametrize("vectorizer", VECTORIZERS, ids=repr)
def test_text_classifier_pipeline(vectorizer: Any) -> None:
    pipe = make_pipeline(vectorizer, LogisticRegression(max_iter=500)).fit(CORPUS, LABELS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = convert_sklearn(
            pipe,
            initial_types=[("input", StringTensorType([None, 1]))],
            options={id(pipe.steps[-1][1]): {"zipmap": False}},
        )
    assert "Tokenizer" in {n.op_type for n in model.graph.node}
    for texts in (CORPUS, UNSEEN, ONE_LETTER):
        feeds = {"input": texts.reshape(-1, 1)}
        ours = run_ours_model(model, feeds)
        theirs = run_ort_model(_ort_copy(model), feeds)
        np.testing.assert_array_equal(ours[0], theirs[0])
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-6)
        if texts is ONE_LETTER:
            continue  # the conversion departs from scikit-learn here (see CORPUS)
        np.testing.assert_array_equal(ours[0], pipe.predict(texts))
        np.testing.assert_allclose(ours[1], pipe.predict_proba(texts), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "vectorizer", [TfidfVectorizer(), CountVectorizer(analyzer="char", ngram_range=(1, 2))], ids=repr
)
def test_vectorizer_alone(vectorizer: Any) -> None:
    vectorizer.fit(CORPUS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = convert_sklearn(vectorizer, initial_types=[("input", StringTensorType([None, 1]))])
    feeds = {"input": UNSEEN.reshape(-1, 1)}
    ours = run_ours_model(model, feeds)
    np.testing.assert_allclose(ours[0], vectorizer.transform(UNSEEN).toarray(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[0], run_ort_model(_ort_copy(model), feeds)[0], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "items",
    [
        ["the quick fox", "a b", "", "x-y z"],  # every item for Python's re: decided once over all of them
        ["the quick fox", "caf\u00e9 au lait", "a\x0bb c"],  # one non-ASCII and one vertical tab: item by item
    ],
)
def test_tokenizer_whole_input_decision_matches_item_by_item(items: list[str]) -> None:
    """A Tokenizer node decides once for the whole input whether Python's re may search it (issue 42); the tokens
    are those of deciding item by item."""
    x = np.array([s.encode() for s in items], dtype=object)
    tok = _Tokenizer(mark=0, mincharnum=1, pad_value="#", tokenexp="[a-zA-Z0-9_]+")
    got = tok(x)
    one_by_one = [tok.splitter.tokens(item, 1) for item in x.tolist()]
    width = max(map(len, one_by_one))
    assert got.shape == (len(items), width)
    for row, want in zip(got.tolist(), one_by_one):
        assert row == want + [b"#"] * (width - len(want))
