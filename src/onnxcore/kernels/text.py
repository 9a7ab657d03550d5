"""String and text operators, every version of the default domain (ONNX 1-2).

StringNormalizer, StringConcat, StringSplit, RegexFullMatch and TfIdfVectorizer.

Strings are numpy object arrays of ``bytes`` (our position on Clause 6.4: octet strings). Case
changes and regular expressions work on the UTF-8 decoding (undecodable octets are carried as
surrogate escapes and encoded back unchanged); concatenation and splitting on a delimiter work
on the octets directly.

RegexFullMatch matches RE2's syntax in linear time with our own matcher (:mod:`onnxcore.libs.re2`: what it
accepts and refuses is listed there), never with Python's backtracking :mod:`re`.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels._util import broadcast_shape, check_elements, distinct
from onnxcore.kernels.registry import kernel
from onnxcore.libs.re2 import compile_re2

__all__: list[str] = []


def _bytes_of(v: Any) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    raise EvaluationError(f"expected a string element, got {type(v).__name__}")


def _strings(x: Any, what: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype != object and arr.dtype.kind not in "SU":
        raise EvaluationError(f"{what}: expected a string tensor, got {arr.dtype}")
    return arr


def _decode(b: bytes) -> str:
    return b.decode("utf-8", errors="surrogateescape")


def _encode(s: str) -> bytes:
    return s.encode("utf-8", errors="surrogateescape")


def _object_array(values: list[Any], shape: tuple[int, ...]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out.reshape(shape)


# ---------------------------------------------------------------------------------------------
# StringNormalizer
# ---------------------------------------------------------------------------------------------


def _simple_case(w: str, fn: Any) -> str:
    mapped: str = fn(w)
    if len(mapped) == len(w):
        return mapped
    return "".join(m if len(m := fn(ch)) == 1 else ch for ch in w)


@kernel("StringNormalizer", 10)
def string_normalizer(
    X: np.ndarray,
    *,
    case_change_action: str = "NONE",
    is_case_sensitive: int = 0,
    locale: str = "",
    stopwords: list[str] | None = None,
) -> np.ndarray:
    """StringNormalizer: drop the stop words of a [C] or [1, C] tensor, then change case.

    Matching stop words without case sensitivity compares lowercased forms. Case changes map
    character by character with Unicode's simple case mapping (a character whose mapping is
    several characters, like "ß" to upper case, is kept), as onnxruntime's wide-character
    mapping does; ``locale`` is accepted but only this locale-independent mapping is offered.
    When every element is dropped the result is one empty string, of shape [1] or [1, 1].
    """
    x = _strings(X, "StringNormalizer")
    if x.ndim == 1:
        two_d = False
    elif x.ndim == 2 and x.shape[0] == 1:
        two_d = True
    else:
        raise EvaluationError(f"StringNormalizer: input must have shape [C] or [1, C], got {x.shape}")
    action = case_change_action.upper()
    if action not in ("NONE", "LOWER", "UPPER"):
        raise EvaluationError(f"StringNormalizer: case_change_action {case_change_action!r} is not LOWER/UPPER/NONE")
    items = x.ravel().tolist()
    if set(map(type, items)) <= {bytes} and b"".join(items).isascii():
        # ASCII text (most of it): the octets are the characters, bytes' own case mapping is str's on them.
        return _ascii_normalized(items, action, is_case_sensitive, stopwords, two_d)
    words = [_decode(_bytes_of(v)) for v in items]
    if stopwords:
        if is_case_sensitive:
            stop = set(stopwords)
            words = [w for w in words if w not in stop]
        else:
            stop = {s.lower() for s in stopwords}
            words = [w for w in words if w.lower() not in stop]
    if action == "LOWER":
        words = [_simple_case(w, str.lower) for w in words]
    elif action == "UPPER":
        words = [_simple_case(w, str.upper) for w in words]
    values = [_encode(w) for w in words] or [b""]
    return _object_array(values, (1, len(values)) if two_d else (len(values),))


def _ascii_normalized(
    items: list[bytes], action: str, is_case_sensitive: int, stopwords: list[str] | None, two_d: bool
) -> np.ndarray:
    """StringNormalizer on ASCII elements without decoding them: the same results as the general path."""
    words = items
    if stopwords:
        if is_case_sensitive:
            stop = {_encode(s) for s in stopwords}
            words = [w for w in words if w not in stop]
        else:
            # (a stop word's lowercase form, encoded: an ASCII word's lowercase form is compared with it)
            stop = {_encode(s.lower()) for s in stopwords}
            words = [w for w in words if w.lower() not in stop]
    if action == "LOWER":
        words = list(map(bytes.lower, words))
    elif action == "UPPER":
        words = list(map(bytes.upper, words))
    values = words or [b""]
    return _object_array(values, (1, len(values)) if two_d else (len(values),))


# ---------------------------------------------------------------------------------------------
# StringConcat, StringSplit
# ---------------------------------------------------------------------------------------------


@kernel("StringConcat", 20)
def string_concat(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """StringConcat: element-wise concatenation with multidirectional broadcasting (Clause 6.6.2)."""
    x, y = _strings(X, "StringConcat"), _strings(Y, "StringConcat")
    shape = broadcast_shape(x.shape, y.shape)
    xb, yb = np.broadcast_to(x, shape).ravel(), np.broadcast_to(y, shape).ravel()
    return _object_array([_bytes_of(a) + _bytes_of(b) for a, b in zip(xb, yb)], shape)


@kernel("StringSplit", 20)
def string_split(
    X: np.ndarray, *, delimiter: str | None = None, maxsplit: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """StringSplit: split each element on ``delimiter`` (default: runs of whitespace), at most ``maxsplit`` times.

    Returns the substrings, padded with empty strings on a new last axis as long as the longest
    split, and the number of substrings of each element (int64). Whitespace splitting drops
    leading and trailing whitespace (so an empty or blank element gives no substrings); with
    a delimiter, consecutive delimiters delimit empty strings. Whitespace is ASCII whitespace.
    """
    x = _strings(X, "StringSplit")
    sep = _encode(delimiter) if delimiter else None
    limit = -1 if maxsplit is None or maxsplit < 0 else int(maxsplit)
    if sep is None:
        # Leading and trailing whitespace is removed, also from the unsplit remainder after maxsplit.
        parts = [_bytes_of(v).strip().split(None, limit) for v in x.ravel()]
    else:
        parts = [_bytes_of(v).split(sep, limit) for v in x.ravel()]
    counts = np.array([len(p) for p in parts], dtype=np.int64).reshape(x.shape)
    width = max((len(p) for p in parts), default=0)
    flat = [p[i] if i < len(p) else b"" for p in parts for i in range(width)]
    return _object_array(flat, (*x.shape, width)), counts


# ---------------------------------------------------------------------------------------------
# RegexFullMatch
# ---------------------------------------------------------------------------------------------


@kernel("RegexFullMatch", 20)
def regex_full_match(X: np.ndarray, *, pattern: str = "") -> np.ndarray:
    """RegexFullMatch: whether each element matches ``pattern`` in full (see the module text on RE2)."""
    x = _strings(X, "RegexFullMatch")
    rx = compile_re2(pattern)  # linear-time matching: a model's pattern cannot stall the evaluator (issue 29)
    return np.array([rx.fullmatch(_decode(_bytes_of(v))) for v in x.ravel()], dtype=bool).reshape(x.shape)


# ---------------------------------------------------------------------------------------------
# TfIdfVectorizer
# ---------------------------------------------------------------------------------------------


_FEW_TOKENS = 64  # inputs of at most this many tokens are counted on Python ints (_TfIdf._found_few)
_LUT_KEYS = 1 << 16  # n-gram lengths with at most this many keys (base ** n) are found by a look-up table
_INT_KEY_BITS = 62  # n-gram keys are integers while base ** n is below 2 ** this (else opaque rows, _row_keys)


def _row_keys(a: np.ndarray) -> np.ndarray:
    """Each row of the int64 matrix ``a`` as one opaque, comparable value."""
    a = np.ascontiguousarray(a, dtype=np.int64)
    return a.view(np.dtype((np.void, a.dtype.itemsize * a.shape[1]))).ravel()


class _TfIdf:
    """A TfIdfVectorizer's pool, n-gram tables and weights, made once per node (a session prepares one per node,
    see ``prepare``; a direct call makes one per call)."""

    __slots__ = ("base", "by_ids", "direct", "max_skip_count", "mode", "n_grams", "out_idx", "out_list", "out_size",
                 "pool_ints", "tables", "unigram", "unigram_list", "vocab", "w", "w_list")  # fmt: skip

    def __init__(
        self,
        *,
        max_gram_length: int,
        max_skip_count: int,
        min_gram_length: int,
        mode: str,
        ngram_counts: list[int],
        ngram_indexes: list[int],
        pool_int64s: list[int] | None = None,
        pool_strings: list[str] | None = None,
        weights: list[float] | None = None,
    ) -> None:
        if (pool_int64s is None) == (pool_strings is None):
            raise EvaluationError("TfIdfVectorizer: give exactly one of pool_int64s and pool_strings")
        if mode not in ("TF", "IDF", "TFIDF"):
            raise EvaluationError(f"TfIdfVectorizer: mode {mode!r} is not TF, IDF or TFIDF")
        if not 1 <= min_gram_length <= max_gram_length:
            raise EvaluationError(f"TfIdfVectorizer: gram lengths [{min_gram_length}, {max_gram_length}] are invalid")
        if max_skip_count < 0:
            raise EvaluationError(f"TfIdfVectorizer: max_skip_count {max_skip_count} is negative")
        self.mode, self.max_skip_count = mode, max_skip_count
        # Vocabulary ids: pool items map to [0, V), other input items to -1 (never matched).
        self.vocab: dict[bytes, int] | None = None
        self.pool_ints: np.ndarray | None = None
        if pool_strings is not None:
            vocab: dict[bytes, int] = {}
            pool_ids = np.array([vocab.setdefault(_encode(s), len(vocab)) for s in pool_strings], dtype=np.int64)
            self.vocab = vocab
        else:
            uniq, pool_ids = np.unique(np.asarray(pool_int64s, dtype=np.int64), return_inverse=True)
            pool_ids = pool_ids.astype(np.int64)
            self.pool_ints = uniq
        starts = [int(c) for c in ngram_counts]
        ends = [*starts[1:], len(pool_ids)]
        if any(not 0 <= a <= b <= len(pool_ids) for a, b in zip(starts, ends)):
            # The starting indexes in the pool of the 1-grams, 2-grams, ...: ascending, within the pool.
            raise EvaluationError(
                f"TfIdfVectorizer: ngram_counts {starts} are not ascending starts in a pool of {len(pool_ids)}"
            )
        self.n_grams = n_grams_total = len(ngram_indexes)
        self.out_size = max((int(i) for i in ngram_indexes), default=-1) + 1
        w = np.ones(n_grams_total, np.float64) if weights is None else np.asarray(weights, dtype=np.float64)
        if len(w) != n_grams_total:
            raise EvaluationError(f"TfIdfVectorizer: {len(w)} weights for {n_grams_total} n-grams")
        self.w = w
        self.w_list: list[float] = w.tolist()
        self.out_idx = out_idx = np.asarray(ngram_indexes, dtype=np.int64)
        self.out_list: list[int] = out_idx.tolist()
        if np.any(out_idx < 0):
            raise EvaluationError("TfIdfVectorizer: ngram_indexes must be non-negative")
        # No two n-grams share an output coordinate (skl2onnx's models): the counts are placed, not summed.
        self.direct = bool(distinct(out_idx).size == out_idx.size)
        # The pool's n-gram counts, checked against ngram_indexes before any is counted.
        for n, (lo, hi) in enumerate(zip(starts, ends), start=1):
            if (hi - lo) % n:
                raise EvaluationError(f"TfIdfVectorizer: pool entries [{lo}, {hi}) do not hold whole {n}-grams")
        held = sum((hi - lo) // n for n, (lo, hi) in enumerate(zip(starts, ends), start=1))
        if held != n_grams_total:
            raise EvaluationError(f"TfIdfVectorizer: the pool holds {held} n-grams, ngram_indexes {n_grams_total}")
        # Per counted length n: (n, its n-grams' sorted keys, their positions in the pool's order, base index,
        # the look-up table of their keys or None).
        self.tables: list[tuple[int, np.ndarray, np.ndarray, int, np.ndarray | None]] = []
        # The same n-grams by their ids as tuples -> their index (the first of repeated ones, as the search finds),
        # for inputs of a few tokens (_FEW_TOKENS), counted on Python ints.
        self.by_ids: dict[tuple[int, ...], int] = {}
        # An n-gram's key: its ids + 1 as the digits of one int64 in base V + 1 (an unknown id, -1, is the digit 0,
        # which no pool n-gram has) while V + 1 to the longest counted length fits in 62 bits; else its row of ids
        # as one opaque value (_row_keys). Integer keys are searched several times faster.
        vocab_size = len(self.vocab) if self.vocab is not None else len(self.pool_ints)  # type: ignore[arg-type]
        self.base = vocab_size + 1
        longest = max((n for n in range(min_gram_length, max_gram_length + 1)), default=1)
        if self.base ** min(longest, len(starts)) >= 1 << _INT_KEY_BITS:
            self.base = 0
        gram_base = 0
        for n, (lo, hi) in enumerate(zip(starts, ends), start=1):
            g = (hi - lo) // n
            if min_gram_length <= n <= max_gram_length and g:
                grams = pool_ids[lo:hi].reshape(g, n)
                pool_keys = self._keys(grams)
                order = np.argsort(pool_keys, kind="stable")
                lut = None
                if self.base and self.base**n <= _LUT_KEYS:
                    # Every key's n-gram index (-1 for none) in one table: an n-gram found is one read, where the
                    # search is a binary one per window and a gather (1,000 rows of 2-grams: 330 -> 40 us).
                    lut = np.full(self.base**n, -1, np.int64)
                    first_keys, first = np.unique(pool_keys, return_index=True)  # (the first of repeated ones)
                    lut[first_keys] = gram_base + first
                self.tables.append((n, pool_keys[order], order, gram_base, lut))
                for j, ids in enumerate(grams.tolist()):
                    self.by_ids.setdefault(tuple(ids), gram_base + j)
            gram_base += g
        # The counted 1-grams as an array: vocabulary id -> the index of its 1-gram (the first of repeated ones),
        # -1 for none; one more slot, last, for the id -1 of an unknown item. A row's 1-grams are then one look-up
        # of all its ids (the most common vectorizer counts words alone), not one search or tuple per token.
        self.unigram: np.ndarray | None = None
        self.unigram_list: list[int] | None = None
        if self.tables and self.tables[0][0] == 1:
            uni = np.full(vocab_size + 1, -1, np.int64)
            for ids_key, index in self.by_ids.items():
                if len(ids_key) == 1:
                    uni[ids_key[0]] = index
            self.unigram = uni
            self.unigram_list = uni.tolist()
            self.tables = self.tables[1:]

    def _keys(self, grams: np.ndarray) -> np.ndarray:
        """One comparable key per row of the id matrix ``grams`` ([count, n])."""
        if not self.base:
            return _row_keys(grams)
        keys = grams[:, -1] + 1
        for k in range(grams.shape[1] - 2, -1, -1):
            keys = keys * self.base + (grams[:, k] + 1)
        return keys

    def _found_few(self, ids: list[list[int]], width: int) -> list[list[int]]:
        """Per row of a few rows of ids, the index of every n-gram found (of the lengths in ``tables``, not the
        1-grams of ``unigram``), by the look-ups of their tuples: the n-grams and skips of the batch search in
        :meth:`__call__`, without its numpy calls per gram length and skip."""
        by_ids = self.by_ids
        rows: list[list[int]] = [[] for _ in ids]
        for n, _keys, _order, _base, _lut in self.tables:
            for skip in range(self.max_skip_count + 1 if n > 1 else 1):
                step = skip + 1
                count = width - (n - 1) * step
                if count <= 0:
                    break
                for r, row in enumerate(ids):
                    for i in range(count):
                        hit = by_ids.get(tuple(row[i : i + (n - 1) * step + 1 : step]))
                        if hit is not None:
                            rows[r].append(hit)
        return rows

    def _few_rows(self, ids: list[list[int]], width: int) -> np.ndarray:
        """The output for a few tokens (at most _FEW_TOKENS) when no two n-grams share an output coordinate: each
        row's n-grams counted in a dictionary on Python ints (those :meth:`_found_few` finds, and the 1-grams by
        the look-up list), each count weighted on Python floats (float64, as the batch path) and written into its
        coordinate; the batch path's values without its dozen numpy calls."""
        uni, w, out, mode = self.unigram_list, self.w_list, self.out_list, self.mode
        y = np.zeros((len(ids), self.out_size), np.float32)
        for r, found in enumerate(self._found_few(ids, width)):
            counts: dict[int, int] = {}
            if uni is not None:
                for i in ids[r]:
                    g = uni[i]
                    if g >= 0:
                        counts[g] = counts.get(g, 0) + 1
            for g in found:
                counts[g] = counts.get(g, 0) + 1
            for g, c in counts.items():
                # (+ 0.0: a -0.0 product is 0.0, as the batch path's sum into zeros makes it)
                y[r, out[g]] = (c if mode == "TF" else (w[g] if mode == "IDF" else c * w[g])) + 0.0
        return y

    def _ids(self, rows: np.ndarray, x: np.ndarray) -> np.ndarray:
        if self.vocab is not None:
            if x.dtype != object:
                raise EvaluationError("TfIdfVectorizer: pool_strings needs a string input")
            items = rows.ravel()
            flat = items.tolist()
            # One C-level pass of dictionary look-ups. The pool's keys are bytes: an item of another type (str)
            # is missed there and looked up again as its octets; an unknown item is missed either way.
            vocab = self.vocab
            try:
                ids = np.fromiter(map(vocab.get, flat, repeat(-1, len(flat))), np.int64, count=len(flat))
            except TypeError:  # an unhashable item: each converted first (which names one that is no string)
                ids = np.array([vocab.get(_bytes_of(v), -1) for v in flat], np.int64)
            # (the types of the items, of the missed ones gathered by numpy past a few, collected in C: a session's
            # items are all bytes, and then there is nothing to look up again; one Python step per miss costs as
            # much as the look-ups, and a gather by their positions as a list twice this: 1,000 rows of 11 tokens
            # 156 -> 90 us; a few items' types at once, 0.3 us, cost less than the gather's numpy calls)
            if len(flat) <= _FEW_TOKENS:
                odd = set(map(type, flat)) != {bytes}
            else:
                odd = bool(set(map(type, items[ids < 0].tolist())) - {bytes})
            if odd:
                for i in (ids < 0).nonzero()[0].tolist():
                    if type(flat[i]) is not bytes:
                        ids[i] = vocab.get(_bytes_of(flat[i]), -1)
            return ids.reshape(rows.shape)
        if x.dtype.kind not in "iu":
            raise EvaluationError(f"TfIdfVectorizer: pool_int64s needs an integer input, got {x.dtype}")
        uniq = self.pool_ints
        assert uniq is not None
        xi = rows.astype(np.int64)
        pos = np.clip(np.searchsorted(uniq, xi), 0, max(len(uniq) - 1, 0))
        return np.where(uniq[pos] == xi, pos, -1) if len(uniq) else np.full(xi.shape, -1, np.int64)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        x = np.asarray(X)
        if x.ndim not in (1, 2):
            raise EvaluationError(f"TfIdfVectorizer: input must be 1-D or 2-D, got shape {x.shape}")
        rows = x.reshape(1, -1) if x.ndim == 1 else x
        n_rows, width = rows.shape
        ids = self._ids(rows, x)
        out_size, n_grams = self.out_size, self.n_grams
        check_elements([n_rows, out_size], "TfIdfVectorizer")
        if ids.size <= _FEW_TOKENS and self.direct:
            y32 = self._few_rows(ids.tolist(), width)
            return y32.reshape(out_size) if x.ndim == 1 else y32
        # Every n-gram found, as its row and its index. The n-grams of a look-up table (the 1-grams, and each
        # length and skip with one, see __init__) as [rows, windows] tables of indexes (-1: none) side by side, their
        # hits found by one nonzero and one gather for all of them (16 rows of 1- and 2-grams: 59 -> 30 us).
        many = ids.size > _FEW_TOKENS
        looked: list[np.ndarray] = []
        rows_found: list[np.ndarray] = []
        grams_found: list[np.ndarray] = []
        if self.unigram is not None:
            looked.append(self.unigram[ids])  # (ids are in [-1, V): -1 reads the last slot, -1)
        base = self.base
        ids1 = ids + 1 if many and base and self.tables else ids  # (the digits of the keys, see _keys)
        for n, sorted_keys, order, gram_base, lut in self.tables if many else ():
            g = sorted_keys.size
            for skip in range(self.max_skip_count + 1 if n > 1 else 1):
                step = skip + 1
                span = (n - 1) * step + 1
                count = width - span + 1
                if count <= 0:
                    break
                if base:  # _keys of every window, from the columns of the digits (no stacked copy of the windows)
                    keys = ids1[:, (n - 1) * step : (n - 1) * step + count]
                    for k in range(n - 2, -1, -1):
                        keys = keys * base + ids1[:, k * step : k * step + count]
                    if lut is not None:
                        looked.append(lut[keys])
                        continue
                    keys = keys.ravel()
                else:
                    grams = np.stack([ids[:, k * step : k * step + count] for k in range(n)], axis=-1)
                    keys = _row_keys(grams.reshape(-1, n))
                pos = np.clip(np.searchsorted(sorted_keys, keys), 0, g - 1)
                hit = np.flatnonzero(sorted_keys[pos] == keys)
                rows_found.append(hit // count)
                grams_found.append(gram_base + order[pos[hit]])
        if looked:
            table = looked[0] if len(looked) == 1 else np.concatenate(looked, axis=1)
            r, c = np.nonzero(table >= 0)
            rows_found.append(r)
            grams_found.append(table[r, c])
        if not many and self.tables:
            hits = self._found_few(ids.tolist(), width)
            rows_found.append(np.array([r for r, row in enumerate(hits) for _ in row], dtype=np.int64))
            grams_found.append(np.array([g for row in hits for g in row], dtype=np.int64))
        if len(rows_found) == 1:
            rows_of, gram = rows_found[0], grams_found[0]
        else:
            rows_of = np.concatenate(rows_found) if rows_found else np.zeros(0, np.int64)
            gram = np.concatenate(grams_found) if grams_found else np.zeros(0, np.int64)
        if self.direct and width * (self.max_skip_count + 1) < 1 << 24:
            # Each n-gram its own coordinate: each (row, n-gram) pair found counted into its output coordinate, where
            # the dense path below makes four float64 passes over the whole [rows, n-grams] table (a word-count model
            # at 1,000 rows: 13 -> 4 ms; at 16 rows of 35 words 24 -> 21 us, and fewer at every size measured, 200
            # rows of 32 n-grams 64 -> 51 us: no size below which the table wins); the counts added in float32 are
            # exact (a count is at most width * (max_skip_count + 1), below 2**24) and without np.unique's sort of the
            # pairs (1,000 rows: 350 -> 90 us). The weights then applied to the counts read at the pairs found: each
            # product in float64, rounded once to float32, as the dense path; an absent n-gram's coordinate 0.0.
            y32 = np.zeros(n_rows * out_size, np.float32)
            cells = rows_of * out_size + self.out_idx[gram]
            np.add.at(y32, cells, np.float32(1.0))
            if self.mode != "TF":
                v = y32[cells].astype(np.float64)
                if self.mode == "IDF":
                    v = np.minimum(v, 1.0)
                # (+ 0.0: a -0.0 product is 0.0, as the dense path makes it; a pair found twice is written twice,
                # the same value)
                y32[cells] = v * self.w[gram] + 0.0
            return y32.reshape(out_size) if x.ndim == 1 else y32.reshape(n_rows, out_size)
        flat = rows_of * n_grams + gram
        counts = np.bincount(flat, minlength=n_rows * n_grams).astype(np.float64).reshape(n_rows, n_grams)
        if self.mode == "IDF":
            counts = np.minimum(counts, 1.0) * self.w
        elif self.mode == "TFIDF":
            counts = counts * self.w
        y = np.zeros((n_rows, out_size), np.float64)
        if self.direct:
            y[:, self.out_idx] = counts + 0.0  # (+ 0.0: a -0.0 count is 0.0, as the sum into zeros makes it)
        else:
            np.add.at(y.T, self.out_idx, counts.T)  # several n-grams share an output coordinate
        y32 = y.astype(np.float32)
        return y32.reshape(out_size) if x.ndim == 1 else y32


def _prepare_tfidf(**attrs: Any) -> _TfIdf:
    return _TfIdf(**attrs)


@kernel("TfIdfVectorizer", 9, prepare=_prepare_tfidf)
def tfidf_vectorizer(
    X: np.ndarray,
    *,
    max_gram_length: int,
    max_skip_count: int,
    min_gram_length: int,
    mode: str,
    ngram_counts: list[int],
    ngram_indexes: list[int],
    pool_int64s: list[int] | None = None,
    pool_strings: list[str] | None = None,
    weights: list[float] | None = None,
) -> np.ndarray:
    """TfIdfVectorizer: count the pool's n-grams (with up to ``max_skip_count`` skips) in each row.

    For each length ``n`` in ``[min_gram_length, max_gram_length]`` and each skip ``s`` in
    ``[0, max_skip_count]``, the n-grams of a row are ``x[i], x[i+s+1], ..., x[i+(n-1)(s+1)]``
    (1-grams are counted once, whatever the skip). ``TF`` gives counts, ``IDF`` the weight of
    every n-gram present, ``TFIDF`` counts times weights. Output ``[max(ngram_indexes) + 1]``
    (1-D input) or ``[N, max(ngram_indexes) + 1]``, float.
    """
    return _TfIdf(
        max_gram_length=max_gram_length,
        max_skip_count=max_skip_count,
        min_gram_length=min_gram_length,
        mode=mode,
        ngram_counts=ngram_counts,
        ngram_indexes=ngram_indexes,
        pool_int64s=pool_int64s,
        pool_strings=pool_strings,
        weights=weights,
    )(X)
