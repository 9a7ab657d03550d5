"""TfIdfVectorizer's paths (a few tokens on Python ints, look-up tables, the binary search, integer and opaque
keys, the dense table and the pairs counted into the output) against the definition computed on Python numbers,
bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from onnxcore.errors import EvaluationError
from onnxcore.kernels import text
from onnxcore.kernels.registry import lookup

_WORDS = ["alpha", "beta", "", "ü", "#", "gamma", "δέλτα", "zeta"]


def _tfidf(x: np.ndarray, **attrs: Any) -> np.ndarray:
    k = lookup("", "TfIdfVectorizer", 9)
    assert k is not None
    out: np.ndarray = k.fn(x, **attrs)
    return out


def _definition(x: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """The operator's definition on Python numbers: every n-gram of every length and skip looked up as a tuple of
    items (the first of repeated pool n-grams), counted, weighted in float64, summed per output coordinate."""
    strings = "pool_strings" in attrs
    pool = [s.encode() for s in attrs["pool_strings"]] if strings else list(attrs["pool_int64s"])
    starts = list(attrs["ngram_counts"])
    ends = [*starts[1:], len(pool)]
    index: dict[tuple[Any, ...], int] = {}
    k = 0
    for n, (lo, hi) in enumerate(zip(starts, ends), start=1):
        for j in range(lo, hi, n):
            if attrs["min_gram_length"] <= n <= attrs["max_gram_length"]:
                index.setdefault(tuple(pool[j : j + n]), k)
            k += 1
    w = attrs.get("weights") or [1.0] * k
    out_idx = attrs["ngram_indexes"]
    rows = x.reshape(1, -1) if x.ndim == 1 else x
    items = [[v.encode() if isinstance(v, str) else v for v in row] for row in rows.tolist()]
    y = np.zeros((len(items), max(out_idx, default=-1) + 1), np.float64)
    for r, row in enumerate(items):
        counts: dict[int, int] = {}
        for n in range(attrs["min_gram_length"], attrs["max_gram_length"] + 1):
            for skip in range(attrs["max_skip_count"] + 1 if n > 1 else 1):
                step = skip + 1
                for i in range(len(row) - (n - 1) * step):
                    g = index.get(tuple(row[i : i + (n - 1) * step + 1 : step]))
                    if g is not None:
                        counts[g] = counts.get(g, 0) + 1
        for g, c in counts.items():
            mode = attrs["mode"]
            y[r, out_idx[g]] += (c if mode == "TF" else (w[g] if mode == "IDF" else c * w[g])) + 0.0
    y32 = y.astype(np.float32)
    return y32.reshape(-1) if x.ndim == 1 else y32


def _case(seed: int, strings: bool, shared: bool) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    vocab = list(range(2, 10)) if not strings else _WORDS
    pick = (lambda k: [int(v) for v in rng.choice(vocab, k)]) if not strings else (
        lambda k: [str(v) for v in rng.choice(vocab, k)]
    )  # fmt: skip
    uni = pick(6)
    bi = pick(2 * 20)
    tri = pick(3 * 6)
    pool = uni + bi + tri  # (repeated n-grams among them)
    n_grams = 6 + 20 + 6
    order = [int(v) for v in rng.permutation(n_grams)]
    if shared:
        order[3] = order[10]  # two n-grams, one coordinate
    weights = [float(v) for v in rng.uniform(-2.0, 2.0, n_grams)]
    weights[1], weights[7], weights[8] = -0.0, 0.0, -0.0
    min_n = int(rng.integers(1, 4))
    attrs: dict[str, Any] = {
        "mode": ["TF", "IDF", "TFIDF"][seed % 3], "min_gram_length": min_n,
        "max_gram_length": int(rng.integers(min_n, 4)), "max_skip_count": int(rng.integers(0, 3)),
        "ngram_counts": [0, 6, 46], "ngram_indexes": order,
    }  # fmt: skip
    if seed % 4:
        attrs["weights"] = weights
    attrs["pool_strings" if strings else "pool_int64s"] = pool
    return attrs


def _inputs(seed: int, strings: bool) -> list[np.ndarray]:
    rng = np.random.default_rng(seed + 100)
    out = []
    for shape in [(0, 5), (1, 7), (3, 9), (16, 11), (200, 12), (1000, 3), (9,), (300,), (2, 0), (0,)]:
        size = int(np.prod(shape))
        if strings:
            words = [*_WORDS, "unknown", "omega"]
            a = np.empty(size, dtype=object)
            a[:] = [words[i].encode() for i in rng.integers(0, len(words), size)]
            out.append(a.reshape(shape))
        else:
            out.append(rng.integers(0, 12, shape).astype(np.int64 if seed % 2 else np.int32))
    return out


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("strings", [False, True])
@pytest.mark.parametrize("seed", range(9))
@pytest.mark.parametrize("keys", ["table", "search", "rows"])
def test_tfidf_paths_count_as_the_definition(
    seed: int, strings: bool, shared: bool, keys: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every path, every mode, 1- to 3-grams with skips, unknown items, the empty string, non-ASCII words, repeated
    pool n-grams, weights of every sign and both zeros, 0 to 1,000 rows, 1-D and 2-D inputs, shared coordinates;
    the n-grams found by look-up tables, by the binary search of integer keys, or of opaque row keys."""
    if keys != "table":
        monkeypatch.setattr(text, "_LUT_KEYS", 0)
    if keys == "rows":
        monkeypatch.setattr(text, "_INT_KEY_BITS", 1)
    attrs = _case(seed, strings, shared)
    for x in _inputs(seed, strings):
        got = _tfidf(x, **attrs)
        want = _definition(x, attrs)
        assert got.dtype == np.float32 and got.shape == want.shape, (x.shape, got.shape, want.shape)
        assert got.tobytes() == want.tobytes(), x.shape


def test_tfidf_table_paths_take_str_items_as_their_octets_and_refuse_others() -> None:
    """Past a few tokens (the missed items' types gathered by numpy): str items are looked up as their octets, an
    item that is no string is refused by our error, as for a few."""
    attrs = _case(3, True, False)
    x = _inputs(3, True)[4]
    want = _tfidf(x, **attrs)
    as_str = np.array([v.decode() for v in x.ravel()], dtype=object).reshape(x.shape)
    assert _tfidf(as_str, **attrs).tobytes() == want.tobytes()
    mixed = x.copy()
    mixed[::3] = as_str[::3]
    assert _tfidf(mixed, **attrs).tobytes() == want.tobytes()
    for odd in (5, 2.5):
        bad = x.copy()
        bad[150, 7] = odd
        with pytest.raises(EvaluationError, match="expected a string element"):
            _tfidf(bad, **attrs)
