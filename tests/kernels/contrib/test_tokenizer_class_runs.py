"""The Tokenizer's runs of one class ("[...]+", split by bytes.split once the other octets are spaces) against RE2's
linear-time search of the same expression, token for token."""

from __future__ import annotations

import numpy as np
import pytest

from onnxcore.kernels.contrib.text import _Tokenizer

_PATTERNS = [
    "[a-zA-Z0-9_]+",  # skl2onnx's
    "[a-z]+",
    "[\\w-]+",
    "[.]+",
    "[!-~]+",  # every printable ASCII character but the space
    "[^ \\t\\n\\r\\x0b\\x0c]+",
    "[^ ]+",  # (the tab among its members: not by runs)
    "[^\\s]+",  # (RE2's \s has no vertical tab: a member, not by runs)
    "[a-c\\x1c\\x1f]+",  # str.split's separators, not bytes.split's
    "[\\\\a]+",
]

_ALPHABET = [chr(c) for c in range(128)] + ["é", "Ω"]


def _texts(seed: int, count: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    common = list("abcxyzAZ09_-. \t\n,\\") + ["\x0b", "\x0c", "\x1c", "\x1f", "\x00", "\x7f", "!", "~"]
    out = []
    for _ in range(count):
        k = int(rng.integers(0, 14))
        pick = common if rng.random() < 0.8 else _ALPHABET[:128]
        out.append("".join(pick[i] for i in rng.integers(0, len(pick), k)).encode())
    return out


def _linear(pattern: str, mark: int, mincharnum: int) -> _Tokenizer:
    """The node tokenizing with RE2's linear-time search alone (no re, no runs)."""
    ref = _Tokenizer(mark=mark, mincharnum=mincharnum, pad_value="#", tokenexp=pattern)
    ref.splitter.runs = None
    ref.splitter.rx_bytes = None
    return ref


def _as_array(items: list[bytes], shape: tuple[int, ...]) -> np.ndarray:
    a = np.empty(len(items), dtype=object)
    a[:] = items
    return a.reshape(shape)


@pytest.mark.parametrize("mincharnum", [1, 2])
@pytest.mark.parametrize("mark", [0, 1])
@pytest.mark.parametrize("pattern", _PATTERNS)
def test_runs_of_one_class_are_re2s_tokens(pattern: str, mark: int, mincharnum: int) -> None:
    tok = _Tokenizer(mark=mark, mincharnum=mincharnum, pad_value="#", tokenexp=pattern)
    ref = _linear(pattern, mark, mincharnum)
    by_runs = pattern not in ("[^ ]+", "[^\\s]+")
    assert (tok.splitter.runs is not None) == by_runs
    for seed, shape in enumerate([(1,), (16,), (300,), (4, 5), (0,), (3, 0)]):
        items = _texts(seed, int(np.prod(shape)))
        x = _as_array(items, shape)
        got, want = tok(x), ref(x)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert got.tolist() == want.tolist(), (pattern, shape)
    # Rows without a token, the empty string, and a non-ASCII text (every item then by the general path)
    for items in ([b"", b"  ", b"--"], [b"caf\xc3\xa9 na\xc3\xafve", b"ab cd"], [b"\xff\xfe a"]):
        x = _as_array(items, (len(items),))
        assert tok(x).tolist() == ref(x).tolist()
