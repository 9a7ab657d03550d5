"""Random arrays for every element type, with the special values (NaN, infinities, -0.0, subnormals, extremes)."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.types import ElementType

E = ElementType


def random_array(et: ElementType, n: int, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """``n`` values of ``et``: every code of a type of <= 8 bits first, then random bit patterns."""
    dt = et.np_dtype
    if et is E.STRING:
        pool = [b"", b"a", "h\u00e9llo".encode(), "\u4e2d\u6587".encode(), b"x" * 40, b"0.5", b"INF"]
        return np.array([pool[int(i)] for i in rng.integers(0, len(pool), n)] + [], dtype=object)
    if et is E.BOOL:
        return rng.integers(0, 2, n).astype(np.bool_)
    if 0 < et.bits <= 8:
        codes = np.concatenate([np.arange(1 << et.bits), rng.integers(0, 1 << et.bits, n)]).astype(np.uint8)[:n]
        return codes.view(dt).copy()
    size = dt.itemsize
    raw = rng.integers(0, 256, n * size, dtype=np.uint8).view(dt).copy()
    if et.is_float or et.is_complex:
        specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0], dtype=np.float64)
        if et.is_float:
            fi = np.finfo(dt) if dt.kind == "f" else None
            extra = [] if fi is None else [float(fi.max), float(fi.min), float(fi.tiny), float(fi.smallest_subnormal)]
            vals = np.concatenate([specials, np.array(extra, dtype=np.float64)]).astype(dt)
        else:
            vals = np.empty(specials.size, dtype=dt)
            vals.real = specials
            vals.imag = specials[::-1]
        k = min(n, vals.size)
        raw[:k] = vals[:k]
    elif et.is_integer:
        ii = np.iinfo(dt)
        ext = np.array([ii.min, ii.max, 0, 1], dtype=dt)
        k = min(n, ext.size)
        raw[:k] = ext[:k]
    return raw


def same_bits(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> bool:
    """Same dtype, shape and octets (object arrays: same elements)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype == object:
        return bool(all(x == y for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist(), strict=True)))
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
