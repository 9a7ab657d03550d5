"""Comparing evaluated values with expected ones (Clause 11.5; ONNX 1-3 harness conventions).

Floating-point tensors pass when ``|actual - expected| <= atol + rtol * |expected|`` element-wise, NaN equal
to NaN and infinities equal to themselves (same sign); integers, booleans and strings compare exactly.
Sequences, maps and optionals compare element by element.

For element types narrower than float32 (float16, bfloat16, the float8, float6 and float4 types) the expected
values are themselves rounded to the type, so two correct results may differ by a unit in the last place:
``rtol`` is raised to twice the type's machine epsilon (two ulps relative, the onnx backend harness's own
widening for bfloat16) for the types whose epsilon exceeds ``rtol`` (bfloat16 and the 8-bit and narrower
floats; float16's epsilon is below 1e-3). This is the tolerance onnxcore states per element type
(Clause 11.5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Comparison", "compare_values", "compare_type_and_shape", "type_rtol", "DEFAULT_RTOL", "DEFAULT_ATOL"]

# The onnx backend harness's convention for float32 (Clause 11.5 editorial note).
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-7


@dataclass
class Comparison:
    """Outcome of comparing one value.

    Attributes:
        ok: Whether the values agree within tolerance.
        reason: Why not (empty when ok).
        max_abs: Largest absolute error over floating-point elements (0 for exact types).
        max_rel: Largest relative error (``|a - e| / |e|`` over elements with ``|e| > atol / rtol``, where
            the relative criterion governs).
        where: Index of the worst element, as text.
        dtype: The expected element dtype name.
    """

    ok: bool
    reason: str = ""
    max_abs: float = 0.0
    max_rel: float = 0.0
    where: str = ""
    dtype: str = ""


def type_rtol(dtype: np.dtype[Any], rtol: float = DEFAULT_RTOL) -> float:
    """The relative tolerance applied to ``dtype``: ``rtol``, or two ulps for types narrower than float32."""
    if dtype.kind in "fc" and dtype.itemsize >= 4:
        return rtol
    # ml_dtypes lazily (a slow import, types/elements.py): float16 and the narrow floats only reach this line.
    import ml_dtypes

    try:
        eps = float(ml_dtypes.finfo(dtype).eps)
    except (ValueError, TypeError):
        return rtol
    # float16's ulp (2^-10) is within the harness's 1e-3 already; the coarser types get two ulps.
    return rtol if eps <= rtol else 2.0 * eps


def _is_float(dt: np.dtype[Any]) -> bool:
    return dt.kind in "fc" or (dt.kind == "V" and dt.itemsize <= 2) or "float" in dt.name


def _tensor(actual: Any, expected: np.ndarray, rtol: float, atol: float) -> Comparison:
    if not isinstance(actual, np.ndarray):
        return Comparison(False, f"expected a tensor, got {type(actual).__name__}", dtype=str(expected.dtype))
    dt = str(expected.dtype)
    if actual.shape != expected.shape:
        return Comparison(False, f"shape {actual.shape} != expected {expected.shape}", dtype=dt)
    if actual.dtype != expected.dtype:
        return Comparison(False, f"dtype {actual.dtype} != expected {expected.dtype}", dtype=dt)
    if expected.dtype == object:
        eq = np.array([a == e for a, e in zip(actual.ravel(), expected.ravel())], dtype=bool)
        if eq.all():
            return Comparison(True, dtype=dt)
        i = int(np.flatnonzero(~eq)[0])
        return Comparison(False, f"string element {i} differs", where=_index(i, expected.shape), dtype=dt)
    if not _is_float(expected.dtype):
        if np.array_equal(actual, expected):
            return Comparison(True, dtype=dt)
        diffs = np.flatnonzero(actual.ravel() != expected.ravel())
        i = int(diffs[0])
        diff = abs(int(actual.ravel()[i]) - int(expected.ravel()[i])) if expected.dtype.kind in "iub" else 0
        return Comparison(
            False,
            f"{diffs.size} elements differ",
            max_abs=float(diff),
            where=_index(i, expected.shape),
            dtype=dt,
        )
    rtol = type_rtol(expected.dtype, rtol)
    if expected.dtype.kind == "c":
        a = actual.astype(np.complex128)
        e = expected.astype(np.complex128)
    else:
        a = actual.astype(np.float64)
        e = expected.astype(np.float64)
    if e.size == 0:
        return Comparison(True, dtype=dt)
    both_nan = np.isnan(a) & np.isnan(e)
    same_inf = np.isinf(e) & (a == e)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(a - e)
        err = np.where(both_nan | same_inf, 0.0, err)
        err = np.where(np.isnan(err), np.inf, err)
        tol = atol + rtol * np.abs(np.where(np.isfinite(e), e, 0.0))
        # Relative error where the relative criterion governs (|e| beyond atol/rtol); near zero only atol does.
        big = np.abs(e) > (atol / rtol if rtol > 0 else 0.0)
        rel = np.where(big, err / np.where(big, np.abs(e), 1.0), 0.0)
    bad = err > tol
    worst = int(np.argmax(err))
    comp = Comparison(
        not bool(bad.any()),
        max_abs=float(err.ravel()[worst]) if err.size else 0.0,
        max_rel=float(np.max(rel)) if rel.size else 0.0,
        where=_index(worst, e.shape),
        dtype=dt,
    )
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        comp.reason = (
            f"{int(bad.sum())} of {e.size} elements outside rtol={rtol}, atol={atol}; "
            f"first at {_index(i, e.shape)}: {a.ravel()[i]!r} vs expected {e.ravel()[i]!r}"
        )
    return comp


def compare_values(actual: Any, expected: Any, *, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL) -> Comparison:
    """Compare an evaluated value with the expected one (tensor, sequence, map, optional)."""
    if expected is None:
        return Comparison(actual is None, "" if actual is None else "expected an absent optional")
    if isinstance(expected, np.ndarray):
        return _tensor(actual, expected, rtol, atol)
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return Comparison(False, f"expected a sequence of {len(expected)}, got {_describe(actual)}")
        worst = Comparison(True)
        for i, (a, e) in enumerate(zip(actual, expected)):
            c = compare_values(a, e, rtol=rtol, atol=atol)
            if not c.ok:
                c.where = f"[{i}]{c.where}"
                return c
            if c.max_abs >= worst.max_abs:
                worst = c
        return worst
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            return Comparison(False, f"expected a map with keys {sorted(expected)[:5]}, got {_describe(actual)}")
        for k in expected:
            c = compare_values(actual[k], expected[k], rtol=rtol, atol=atol)
            if not c.ok:
                c.where = f"[{k!r}]{c.where}"
                return c
        return Comparison(True)
    return Comparison(bool(actual == expected), f"{actual!r} != {expected!r}")


def _index(flat: int, shape: tuple[int, ...]) -> str:
    return str(tuple(int(x) for x in np.unravel_index(flat, shape))) if shape else "()"


def compare_type_and_shape(actual: Any, expected: Any) -> Comparison:
    """Compare kind, element type and shape only (for non-deterministic operators, Clause 11.6)."""
    if isinstance(expected, np.ndarray):
        if not isinstance(actual, np.ndarray):
            return Comparison(False, f"expected a tensor, got {_describe(actual)}", dtype=str(expected.dtype))
        if actual.dtype != expected.dtype or actual.shape != expected.shape:
            return Comparison(
                False, f"{_describe(actual)} where {_describe(expected)} was expected", dtype=str(expected.dtype)
            )
        return Comparison(True, dtype=str(expected.dtype))
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return Comparison(False, f"expected a sequence of {len(expected)}, got {_describe(actual)}")
        for a, e in zip(actual, expected):
            c = compare_type_and_shape(a, e)
            if not c.ok:
                return c
        return Comparison(True)
    return compare_values(actual, expected)


def _describe(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"tensor {v.dtype}{list(v.shape)}"
    if isinstance(v, list):
        return f"sequence of {len(v)}"
    if isinstance(v, dict):
        return f"map of {len(v)}"
    return type(v).__name__
