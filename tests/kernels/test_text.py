"""String operators against the ONNX 1-3 vectors and onnxruntime (StringNormalizer, StringConcat,
StringSplit, RegexFullMatch, TfIdfVectorizer)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from runtime.node_harness import assert_close, run_single_node_case

import onnxcore
from kernels import assert_every_version_has_a_kernel
from onnxcore.errors import EvaluationError
from onnxcore.kernels.registry import lookup

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

PREFIXES = ("test_strnormalizer", "test_string_concat", "test_string_split", "test_regex_full_match", "test_tfidf")


def test_node_vectors(node_cases: list[Path]) -> None:
    cases = [c for c in node_cases if c.name.startswith(PREFIXES) and "expanded" not in c.name]
    assert len(cases) >= 27
    for case in cases:
        out = run_single_node_case(case)
        assert out is not None, case.name
        actual, expected = out
        for a, e in zip(actual, expected):
            assert_close(a, e)


def _fn(op: str, version: int) -> Any:
    k = lookup("", op, version)
    assert k is not None
    return k.fn


def _strs(*items: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    a = np.empty(len(items), dtype=object)
    a[:] = [s.encode("utf-8") for s in items]
    return a.reshape(shape if shape is not None else (len(items),))


def _ort(op: str, opset: int, feeds: dict[str, np.ndarray], attrs: dict[str, Any], outs: list[int]) -> list[Any]:
    def tt(v: np.ndarray) -> int:
        return TensorProto.STRING if v.dtype == object else helper.np_dtype_to_tensor_dtype(v.dtype)

    ins = [helper.make_tensor_value_info(k, tt(v), list(v.shape)) for k, v in feeds.items()]
    names = [f"o{i}" for i in range(len(outs))]
    node = helper.make_node(op, list(feeds), names, **attrs)
    graph = helper.make_graph(
        [node], "g", ins, [helper.make_tensor_value_info(n, t, None) for n, t in zip(names, outs)]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ort_feeds = {
        k: (np.array([s.decode() for s in v.ravel()], dtype=object).reshape(v.shape) if v.dtype == object else v)
        for k, v in feeds.items()
    }
    return sess.run(None, ort_feeds)


def _as_bytes(a: np.ndarray) -> list[Any]:
    return [s.encode("utf-8") if isinstance(s, str) else s for s in np.asarray(a, dtype=object).ravel()]


@pytest.mark.parametrize(
    "attrs",
    [
        {"case_change_action": "LOWER", "stopwords": ["the", "A"]},
        {"case_change_action": "UPPER", "stopwords": ["The", "a"], "is_case_sensitive": 1},
        {"case_change_action": "NONE"},
        {"stopwords": ["x", "Y", "z"]},
    ],
)
def test_string_normalizer_against_onnxruntime(attrs: dict[str, Any]) -> None:
    # onnxruntime needs an installed locale for en_US; C.UTF-8 is present everywhere.
    attrs = {**attrs, "locale": "C.UTF-8"}
    for x in (_strs("The", "quick", "a", "Straße", "ÉTÉ", "the"), _strs("A", "b", "x", shape=(1, 3)), _strs("x", "y")):
        (expected,) = _ort("StringNormalizer", 10, {"x": x}, attrs, [TensorProto.STRING])
        actual = _fn("StringNormalizer", 10)(x, **attrs)
        assert actual.shape == expected.shape
        assert actual.ravel().tolist() == _as_bytes(expected)


def test_string_concat_broadcasting() -> None:
    x = _strs("a", "bé", "", shape=(3, 1))
    y = _strs("1", "2", shape=(2,))
    (expected,) = _ort("StringConcat", 20, {"x": x, "y": y}, {}, [TensorProto.STRING])
    actual = _fn("StringConcat", 20)(x, y)
    assert actual.shape == (3, 2) == expected.shape
    assert actual.ravel().tolist() == _as_bytes(expected)
    z = _fn("StringConcat", 20)(np.array(b"p", dtype=object), np.array(b"q", dtype=object))
    assert z.shape == () and z.dtype == object and z.item() == b"pq"


@pytest.mark.parametrize(
    "attrs", [{}, {"delimiter": ","}, {"delimiter": ",", "maxsplit": 1}, {"maxsplit": 2}, {"delimiter": "--"}]
)
def test_string_split_against_onnxruntime(attrs: dict[str, Any]) -> None:
    x = _strs("a,b,,c", "  one two  three ", "", "x--y--z", ",", "solo", shape=(2, 3))
    expected = _ort("StringSplit", 20, {"x": x}, attrs, [TensorProto.STRING, TensorProto.INT64])
    y, z = _fn("StringSplit", 20)(x, **attrs)
    assert y.shape == expected[0].shape and z.dtype == np.int64
    if attrs.get("delimiter"):
        # An empty element split on a delimiter: onnxruntime gives no substrings, the onnx
        # reference (and the "delimit empty strings" rule) one empty substring; we follow the latter.
        assert z[0, 2] == 1 and y[0, 2, 0] == b"" and expected[1][0, 2] == 0
        expected[1][0, 2] = 1
    assert y.ravel().tolist() == _as_bytes(expected[0])
    np.testing.assert_array_equal(z, expected[1])


@pytest.mark.parametrize(
    "pattern", [r"[a-z]+@[a-z]+\.(com|org)", r"\d{3}-\d+", r".*", r"(ab)*c?", r"[^x]*", r"é+", r"\w+\s\w+"]
)
def test_regex_full_match_against_onnxruntime(pattern: str) -> None:
    x = _strs("bob@site.com", "a@b.net", "123-4567", "", "ababc", "abx", "ééé", "foo bar", "foo\nbar", shape=(3, 3))
    (expected,) = _ort("RegexFullMatch", 20, {"x": x}, {"pattern": pattern}, [TensorProto.BOOL])
    actual = _fn("RegexFullMatch", 20)(x, pattern=pattern)
    assert actual.dtype == np.bool_
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("pattern", [r"(a)\1", r"a(?=b)", r"(?<!x)y", r"(?P<n>a)(?P=n)", r"a++", r"\pL"])
def test_regex_refuses_what_re2_refuses(pattern: str) -> None:
    with pytest.raises(EvaluationError):
        _fn("RegexFullMatch", 20)(_strs("aa"), pattern=pattern)


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize(("min_n", "max_n", "skip"), [(1, 1, 0), (1, 2, 0), (2, 2, 2), (1, 3, 1), (3, 3, 3)])
def test_tfidf_against_onnxruntime(mode: str, min_n: int, max_n: int, skip: int) -> None:
    rng = np.random.default_rng(min_n * 10 + max_n + skip)
    pool = [2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 2, 3, 5, 4, 5, 6]  # 4 unigrams, 3 bigrams, 2 trigrams
    attrs: dict[str, Any] = {
        "mode": mode,
        "min_gram_length": min_n,
        "max_gram_length": max_n,
        "max_skip_count": skip,
        "ngram_counts": [0, 4, 10],
        "ngram_indexes": [8, 0, 3, 1, 2, 7, 4, 6, 5],
        "pool_int64s": pool,
        "weights": list(rng.uniform(0.5, 2.0, 9)),
    }
    for x in (rng.integers(2, 9, (3, 12)).astype(np.int64), rng.integers(2, 9, (10,)).astype(np.int32)):
        (expected,) = _ort("TfIdfVectorizer", 9, {"x": x}, attrs, [TensorProto.FLOAT])
        actual = _fn("TfIdfVectorizer", 9)(x, **attrs)
        assert actual.dtype == np.float32 and actual.shape == expected.shape
        np.testing.assert_allclose(actual, expected, rtol=1e-6)


@pytest.mark.parametrize("counts", [[-2, 0], [0, 12], [4, 0]])
def test_tfidf_ngram_counts_outside_the_pool_are_refused(counts: list[int]) -> None:
    # ngram_counts are the starts of the 1-grams, 2-grams, ... in the pool; [-2, 0] made a ValueError inside the
    # kernel (found by the differential fuzz against onnxruntime).
    attrs: dict[str, Any] = {"mode": "TF", "min_gram_length": 1, "max_gram_length": 2, "max_skip_count": 0}
    attrs |= {"ngram_counts": counts, "ngram_indexes": [0, 1, 2, 3], "pool_int64s": [2, 3, 5, 4, 5, 6]}
    with pytest.raises(EvaluationError, match=r"ngram_counts .* are not ascending starts in a pool of 6"):
        _fn("TfIdfVectorizer", 9)(np.array([[2, 3, 5]], np.int64), **attrs)


@pytest.mark.parametrize("indexes", [[], [1, 0]])
def test_tfidf_pool_with_other_n_gram_count_than_ngram_indexes_is_refused(indexes: list[int]) -> None:
    # An IndexError inside the kernel before (the onnxruntime fuzz): the counts were written before the check.
    attrs: dict[str, Any] = {"mode": "TF", "min_gram_length": 1, "max_gram_length": 2, "max_skip_count": 0}
    attrs |= {"ngram_counts": [0, 4], "ngram_indexes": indexes, "pool_int64s": [3, 7, 2, 4, 3, 7, 4, 2]}
    with pytest.raises(EvaluationError, match=f"the pool holds 6 n-grams, ngram_indexes {len(indexes)}"):
        _fn("TfIdfVectorizer", 9)(np.array([[3, 7, 2, 4]], np.int64), **attrs)


def test_tfidf_strings_against_onnxruntime() -> None:
    words = ["a", "b", "c", "d", "ü"]
    rng = np.random.default_rng(4)
    x = _strs(*[words[i] for i in rng.integers(0, 5, 16)], shape=(2, 8))
    attrs: dict[str, Any] = {
        "mode": "TF",
        "min_gram_length": 1,
        "max_gram_length": 2,
        "max_skip_count": 1,
        "ngram_counts": [0, 3],
        "ngram_indexes": [0, 1, 2, 3, 4],
        "pool_strings": ["a", "ü", "c", "a", "b", "ü", "d"],
    }
    (expected,) = _ort("TfIdfVectorizer", 9, {"x": x}, attrs, [TensorProto.FLOAT])
    actual = _fn("TfIdfVectorizer", 9)(x, **attrs)
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("op", ["StringNormalizer", "StringConcat", "StringSplit", "RegexFullMatch", "TfIdfVectorizer"])
def test_every_since_version_has_a_kernel(op: str) -> None:
    pytest.importorskip("onnx")
    assert_every_version_has_a_kernel(op)


@pytest.mark.parametrize("sensitive", [0, 1])
@pytest.mark.parametrize("action", ["LOWER", "UPPER", "NONE"])
def test_string_normalizer_ascii_path_is_the_general_one(action: str, sensitive: int) -> None:
    """ASCII elements are normalised as octets (issue 42: no decoding per word); the results are the general
    path's and onnxruntime's, a non-ASCII stop word whose lowercase form is ASCII (the Kelvin sign) included."""
    attrs = {"case_change_action": action, "is_case_sensitive": sensitive, "locale": "C.UTF-8"}
    attrs["stopwords"] = ["THE", "\u212a", "ÿ"]
    ascii_words = _strs("The", "k", "K", "quick", "THE", "x-Y_z 9")
    (expected,) = _ort("StringNormalizer", 10, {"x": ascii_words}, attrs, [TensorProto.STRING])
    actual = _fn("StringNormalizer", 10)(ascii_words, **attrs)
    assert actual.ravel().tolist() == _as_bytes(expected)
    # One non-ASCII element sends the whole input down the general path: the ASCII words come out the same.
    mixed = _fn("StringNormalizer", 10)(_strs("The", "k", "K", "quick", "THE", "x-Y_z 9", "é"), **attrs)
    assert mixed.ravel().tolist()[: actual.size] == actual.ravel().tolist()


def test_tfidf_shared_output_coordinates_and_prepared_node_against_onnxruntime() -> None:
    """Two n-grams may share an output coordinate (summed); a session's node, prepared once, gives what a direct
    call and onnxruntime give, run after run."""
    rng = np.random.default_rng(7)
    attrs: dict[str, Any] = {
        "mode": "TFIDF",
        "min_gram_length": 1,
        "max_gram_length": 2,
        "max_skip_count": 1,
        "ngram_counts": [0, 4],
        "ngram_indexes": [0, 1, 2, 0, 3, 1],
        "pool_int64s": [2, 3, 5, 4, 2, 3, 5, 4],
        "weights": [0.5, 1.5, -2.0, 1.0, 0.25, 3.0],
    }
    x = rng.integers(2, 7, (5, 9)).astype(np.int64)
    (expected,) = _ort("TfIdfVectorizer", 9, {"x": x}, attrs, [TensorProto.FLOAT])
    direct = _fn("TfIdfVectorizer", 9)(x, **attrs)
    np.testing.assert_allclose(direct, expected, rtol=1e-6)
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.INT64, ["N", 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)], ir_version=9)
    sess = onnxcore.Session(model.SerializeToString())
    for _ in range(3):
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], direct)


@pytest.mark.parametrize("rows", [1, 16, 200])
def test_tfidf_words_looked_up_at_once_against_onnxruntime(rows: int) -> None:
    """The 1-grams are one array look-up of every token id (a word vectorizer's common case); with 2-grams too,
    on inputs of a few tokens and of many, unknown words and padding included."""
    words = ["alpha", "beta", "gamma", "delta", "#", "zeta", "", "ü"]
    rng = np.random.default_rng(rows)
    x = _strs(*[words[i] for i in rng.integers(0, len(words), rows * 6)], shape=(rows, 6))
    for max_n, counts, pool, n_grams in (
        (1, [0], ["beta", "alpha", "delta", "ü"], 4),
        (2, [0, 3], ["gamma", "alpha", "ü", "alpha", "beta", "delta", "alpha"], 5),  # 3 words, 2 pairs
    ):
        attrs: dict[str, Any] = {
            "mode": "TFIDF",
            "min_gram_length": 1,
            "max_gram_length": max_n,
            "max_skip_count": 0,
            "ngram_counts": counts,
            "ngram_indexes": list(range(n_grams))[::-1],
            "pool_strings": pool,
            "weights": list(rng.uniform(0.5, 2.0, n_grams)),
        }
        (expected,) = _ort("TfIdfVectorizer", 9, {"x": x}, attrs, [TensorProto.FLOAT])
        actual = _fn("TfIdfVectorizer", 9)(x, **attrs)
        assert actual.shape == expected.shape
        np.testing.assert_allclose(actual, expected, rtol=1e-6)


def test_tfidf_looks_up_str_items_as_their_octets() -> None:
    # The vocabulary's keys are bytes; a str item (a caller's array) is found as its UTF-8 octets, as a bytes one.
    attrs: dict[str, Any] = {"mode": "TF", "min_gram_length": 1, "max_gram_length": 1, "max_skip_count": 0}
    attrs |= {"ngram_counts": [0], "ngram_indexes": [0, 1, 2], "pool_strings": ["a", "ü", "c"]}
    as_bytes = _strs("ü", "a", "z", "ü", "c", "c")
    as_text = np.array(["ü", "a", "z", "ü", "c", "c"], dtype=object)
    mixed = np.array([b"\xc3\xbc", "a", "z", "ü", b"c", "c"], dtype=object)
    want = _fn("TfIdfVectorizer", 9)(as_bytes, **attrs)
    np.testing.assert_array_equal(want, [1, 2, 2])
    np.testing.assert_array_equal(_fn("TfIdfVectorizer", 9)(as_text, **attrs), want)
    np.testing.assert_array_equal(_fn("TfIdfVectorizer", 9)(mixed, **attrs), want)
    # one item missed as bytes and found as its octets (the misses' types are gathered in one call for many)
    np.testing.assert_array_equal(_fn("TfIdfVectorizer", 9)(np.array([b"a", "c"], dtype=object), **attrs), [1, 0, 1])


def test_tfidf_refuses_an_item_that_is_no_string_by_our_error() -> None:
    attrs: dict[str, Any] = {"mode": "TF", "min_gram_length": 1, "max_gram_length": 1, "max_skip_count": 0}
    attrs |= {"ngram_counts": [0], "ngram_indexes": [0, 1], "pool_strings": ["a", "b"]}
    for odd in (5, [1, 2]):  # hashable and not
        x = np.array([b"a", odd, b"b"], dtype=object)
        with pytest.raises(EvaluationError, match="expected a string element"):
            _fn("TfIdfVectorizer", 9)(x, **attrs)


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
def test_tfidf_large_tables_count_the_pairs_found_as_the_definition(mode: str) -> None:
    """Each n-gram its own coordinate (no dense table): the counts of the (row, n-gram) pairs found, weighted in
    float64 and rounded once to float32, are the definition's, computed here on Python numbers (1-grams and
    2-grams with one skip, weights of every sign, a zero; absent n-grams 0.0), and onnxruntime's."""
    rng = np.random.default_rng(len(mode))
    uni = list(range(10, 130))  # 120 1-grams
    bi = [(int(a), int(b)) for a, b in rng.integers(10, 140, (200, 2))]  # 2-grams (some over items outside the pool)
    bi = list(dict.fromkeys(bi))
    pool = uni + [v for pair in bi for v in pair]
    n = len(uni) + len(bi)
    weights = [float(w) for w in rng.uniform(-2.0, 2.0, n)]
    weights[3] = 0.0
    order = rng.permutation(n).tolist()  # each n-gram its own output coordinate, in another order
    attrs: dict[str, Any] = {
        "mode": mode, "min_gram_length": 1, "max_gram_length": 2, "max_skip_count": 1,
        "ngram_counts": [0, len(uni)], "ngram_indexes": order, "pool_int64s": pool, "weights": weights,
    }  # fmt: skip
    x = rng.integers(5, 145, (64, 30)).astype(np.int64)  # (each n-gram its own coordinate: the pairs path)
    actual = _fn("TfIdfVectorizer", 9)(x, **attrs)
    index = {(v,): k for k, v in enumerate(uni)} | {pair: len(uni) + k for k, pair in enumerate(bi)}
    want = np.zeros((64, n), np.float32)
    for r, row in enumerate(x.tolist()):
        counts: dict[int, int] = {}
        grams = [(v,) for v in row] + [(row[i], row[i + s]) for s in (1, 2) for i in range(len(row) - s)]
        for g in grams:
            if g in index:
                counts[index[g]] = counts.get(index[g], 0) + 1
        for k, c in counts.items():
            w = weights[k] if mode != "TF" else 1.0
            want[r, order[k]] = (c if mode == "TF" else (w if mode == "IDF" else c * w)) + 0.0
    assert actual.dtype == np.float32 and actual.shape == want.shape
    assert actual.tobytes() == want.tobytes()  # bit for bit (a zero weight's products are +0.0)
    (expected,) = _ort("TfIdfVectorizer", 9, {"x": x}, attrs, [TensorProto.FLOAT])
    np.testing.assert_allclose(actual, expected, rtol=1e-6)
