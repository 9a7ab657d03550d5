"""com.microsoft MurmurHash3: the operator skl2onnx writes for scikit-learn's FeatureHasher.

Each element of X is hashed with MurmurHash3's 32-bit x86 variant (Austin Appleby's public-domain algorithm, the
one scikit-learn's ``murmurhash3_32`` computes) under the attribute ``seed``; Y has X's shape, ``uint32`` when
``positive`` is 1 (the default) and ``int32`` (the same 32 bits read as signed) otherwise.

What is hashed, taken from onnxruntime where the definition is silent (tested against it in
tests/kernels/contrib/test_contrib_hash.py):

- a string: its UTF-8 bytes;
- a number: the bytes of its value in X's element type, little-endian (4 bytes for int32, uint32 and float,
  8 for int64, uint64 and double), so an int32 key hashes as scikit-learn hashes that integer and a float the
  bits of its IEEE representation (0.0 and 0 hash alike, -0.0 does not);
- ``seed`` is read modulo 2**32 (an int64 attribute, a 32-bit seed).
"""

from __future__ import annotations

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels.registry import kernel
from onnxcore.kernels.text import _bytes_of

__all__: list[str] = []

_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_MASK = 0xFFFFFFFF


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_block(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    """One 4-byte block of the body: the block scrambled into the running hash (uint32 arrays, wrapping)."""
    k = _rotl(k * np.uint32(_C1), 15) * np.uint32(_C2)
    h = _rotl(h ^ k, 13)
    return h * np.uint32(5) + np.uint32(0xE6546B64)


def _finish(h: np.ndarray, length: np.ndarray | int) -> np.ndarray:
    """The length folded in and the final avalanche (fmix32)."""
    h = h ^ np.uint32(length) if isinstance(length, int) else h ^ length.astype(np.uint32)
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def _hash_words(words: np.ndarray, seed: int) -> np.ndarray:
    """The hashes of keys made of whole 4-byte words: ``words`` is [n, w] uint32 (the keys' little-endian
    words), every key ``4 * w`` bytes long, so there is no tail."""
    h = np.full(words.shape[0], seed, dtype=np.uint32)
    for j in range(words.shape[1]):
        h = _mix_block(h, words[:, j])
    return _finish(h, 4 * words.shape[1])


def _hash_bytes(data: bytes, seed: int) -> int:
    """The hash of one key of any length (a string's bytes)."""
    n = len(data)
    body = n - n % 4
    words = np.frombuffer(data[:body], dtype="<u4").astype(np.uint32)
    h = np.array([seed], dtype=np.uint32)
    for w in words:
        h = _mix_block(h, np.array([w], dtype=np.uint32))
    tail = data[body:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * _C1) & _MASK
        k = ((k << 15) | (k >> 17)) & _MASK
        k = (k * _C2) & _MASK
        h = h ^ np.uint32(k)
    return int(_finish(h, n)[0])


@kernel("MurmurHash3", 1, domain="com.microsoft")
def murmur_hash3(X: np.ndarray, *, positive: int = 1, seed: int = 0) -> np.ndarray:
    """MurmurHash3: the 32-bit MurmurHash3 of every element of X (see the module docstring)."""
    if positive not in (0, 1):
        raise EvaluationError(f"MurmurHash3: attribute 'positive' must be 0 or 1, got {positive}")
    seed32 = int(seed) & _MASK
    if X.dtype == object or X.dtype.kind in "SU":
        flat = [_hash_bytes(_bytes_of(v), seed32) for v in X.reshape(-1)]
        hashes = np.array(flat, dtype=np.uint32).reshape(X.shape)
    elif X.dtype.kind in "iuf" and X.dtype.itemsize in (4, 8):
        # The little-endian bytes of every value, read as whole 32-bit words: one word per 4-byte key, two per
        # 8-byte key.
        raw = np.ascontiguousarray(X.reshape(-1), dtype=X.dtype.newbyteorder("<"))
        words = raw.view("<u4").astype(np.uint32).reshape(raw.size, X.dtype.itemsize // 4)
        hashes = _hash_words(words, seed32).reshape(X.shape)
    else:
        raise EvaluationError(f"MurmurHash3: X of element type {X.dtype} is not one the definition allows")
    return hashes if positive else hashes.view(np.int32)
