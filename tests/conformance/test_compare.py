"""The comparison rule of the test-package runner (Clause 11.5, ONNX 1-3 conventions)."""

from __future__ import annotations

import numpy as np

from onnxcore.conformance.compare import compare_values


def test_float_tolerance() -> None:
    e = np.array([1.0, 100.0, 0.0], dtype=np.float32)
    assert compare_values(e * (1 + 5e-4), e).ok
    c = compare_values(np.array([1.0, 100.3, 0.0], dtype=np.float32), e)
    assert not c.ok and "1 of 3" in c.reason and c.where == "(1,)"
    assert abs(c.max_abs - 0.3) < 1e-4
    assert not compare_values(np.array([0, 0, 1e-6], dtype=np.float32), np.zeros(3, np.float32)).ok


def test_nan_inf_and_exact_types() -> None:
    e = np.array([np.nan, np.inf, -np.inf], dtype=np.float32)
    assert compare_values(e.copy(), e).ok
    assert not compare_values(np.array([np.nan, np.inf, np.inf], dtype=np.float32), e).ok
    assert not compare_values(np.array([0.0, np.inf, -np.inf], dtype=np.float32), e).ok
    assert compare_values(np.array([1, 2], np.int64), np.array([1, 2], np.int64)).ok
    assert not compare_values(np.array([1, 3], np.int64), np.array([1, 2], np.int64)).ok
    assert not compare_values(np.array([1, 2], np.int32), np.array([1, 2], np.int64)).ok
    s = np.array([b"a", b"b"], dtype=object)
    assert compare_values(s.copy(), s).ok
    assert not compare_values(np.array([b"a", b"c"], dtype=object), s).ok


def test_composites() -> None:
    a = [np.ones(2, np.float32), np.zeros(1, np.float32)]
    assert compare_values([x.copy() for x in a], a).ok
    assert not compare_values(a[:1], a).ok
    assert compare_values({1: np.ones(1)}, {1: np.ones(1)}).ok
    assert not compare_values({2: np.ones(1)}, {1: np.ones(1)}).ok
    assert compare_values(None, None).ok
    assert not compare_values(np.ones(1), None).ok
    assert not compare_values(np.ones((2, 1), np.float32), np.ones(2, np.float32)).ok
