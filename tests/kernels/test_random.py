"""Random generators: shapes, types, ranges, statistics and seeding (Clause 8.5, 11.6).

The outputs are non-deterministic, so no exact values are compared (not even the ONNX 1-3
Bernoulli vectors': they come from another generator). Statistical checks use enough samples
that a correct sampler fails them with negligible probability (bounds of 6 standard errors).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from runtime.node_harness import run_single_node_case

from kernels import assert_every_version_has_a_kernel
from onnxcore.errors import EvaluationError
from onnxcore.kernels.registry import KernelContext, lookup

N = 200_000


def _call(op: str, version: int, *args: Any, rng: Any = None, **attrs: Any) -> np.ndarray:
    k = lookup("", op, version)
    assert k is not None and k.context
    ctx = KernelContext(None, since_version=version, opset_version=version, num_outputs=1, rng=rng)
    return k.fn(ctx, *args, **attrs)


def _check_mean_var(y: np.ndarray, mean: float, var: float) -> None:
    v = y.astype(np.float64).ravel()
    n = v.size
    assert abs(v.mean() - mean) < 6 * np.sqrt(var / n)
    # Var of the sample variance is about 2 var^2 / n (normal) and smaller for the uniform.
    assert abs(v.var() - var) < 6 * var * np.sqrt(2.0 / n)


def test_node_vectors_shapes_and_types(node_cases: list[Path]) -> None:
    cases = [c for c in node_cases if c.name.startswith("test_bernoulli") and "expanded" not in c.name]
    assert len(cases) == 3
    for case in cases:
        out = run_single_node_case(case)
        assert out is not None
        (a,), (e,) = out
        assert a.shape == e.shape and a.dtype == e.dtype
        assert set(np.unique(a).tolist()) <= {0, 1}


@pytest.mark.parametrize("version", [1, 22])
def test_random_normal(version: int) -> None:
    y = _call("RandomNormal", version, shape=[N // 100, 100], mean=2.5, scale=0.5, dtype=11)
    assert y.shape == (N // 100, 100) and y.dtype == np.float64
    _check_mean_var(y, 2.5, 0.25)
    assert _call("RandomNormal", version, shape=[3, 0]).shape == (3, 0)
    assert _call("RandomNormal", version, shape=[4], dtype=10).dtype == np.float16
    if version == 22:
        assert _call("RandomNormal", 22, shape=[4], dtype=16).dtype == ml_dtypes.bfloat16
    with pytest.raises(EvaluationError):
        _call("RandomNormal", version, shape=[2], dtype=6)


@pytest.mark.parametrize("version", [1, 22])
def test_random_uniform(version: int) -> None:
    y = _call("RandomUniform", version, shape=[N], low=-3.0, high=5.0)
    assert y.dtype == np.float32 and y.shape == (N,)
    assert y.min() >= -3.0 and y.max() < 5.0
    _check_mean_var(y, 1.0, 64 / 12)
    h = _call("RandomUniform", version, shape=[N], dtype=10, low=0.0, high=1.0)
    assert h.dtype == np.float16 and float(h.max()) < 1.0 and float(h.min()) >= 0.0


@pytest.mark.parametrize("version", [1, 22])
def test_like_variants(version: int) -> None:
    x = np.zeros((300, 400), np.float16)
    y = _call("RandomNormalLike", version, x, mean=-1.0, scale=2.0)
    assert y.shape == x.shape and y.dtype == np.float16
    _check_mean_var(y.astype(np.float32), -1.0, 4.0)
    u = _call("RandomUniformLike", version, np.zeros((N,), np.int32), dtype=1, low=10.0, high=12.0)
    assert u.dtype == np.float32 and u.min() >= 10.0 and u.max() < 12.0
    _check_mean_var(u, 11.0, 4 / 12)
    with pytest.raises(EvaluationError):
        _call("RandomUniformLike", version, np.zeros((2,), np.int32))  # int input needs dtype


@pytest.mark.parametrize("version", [15, 22])
def test_bernoulli(version: int) -> None:
    p = np.array([0.0, 0.2, 0.5, 0.9, 1.0], np.float32)
    x = np.broadcast_to(p, (N // 5, 5))
    y = _call("Bernoulli", version, x)
    assert y.dtype == np.float32 and y.shape == x.shape
    means = y.astype(np.float64).mean(axis=0)
    se = np.sqrt(p * (1 - p) / (N // 5)) + 1e-12
    assert np.all(np.abs(means - p) <= 6 * se)
    assert _call("Bernoulli", version, x[:2], dtype=9).dtype == np.bool_
    assert _call("Bernoulli", version, x[:2].astype(np.float64), dtype=7).dtype == np.int64
    with pytest.raises(EvaluationError):
        _call("Bernoulli", version, np.array([1.5], np.float32))


@pytest.mark.parametrize("version", [7, 22])
def test_multinomial(version: int) -> None:
    probs = np.array([[0.1, 0.0, 0.6, 0.3], [0.25, 0.25, 0.25, 0.25]])
    logits = np.log(np.maximum(probs, 1e-300)).astype(np.float32)
    y = _call("Multinomial", version, logits, sample_size=N // 2)
    assert y.dtype == np.int32 and y.shape == (2, N // 2)
    assert y.min() >= 0 and y.max() <= 3
    for r in range(2):
        freq = np.bincount(y[r], minlength=4) / y.shape[1]
        se = np.sqrt(probs[r] * (1 - probs[r]) / y.shape[1]) + 1e-12
        assert np.all(np.abs(freq - probs[r]) <= 6 * se), (r, freq)
    assert _call("Multinomial", version, logits, sample_size=3, dtype=7).dtype == np.int64
    assert _call("Multinomial", version, np.zeros((0, 4), np.float32), sample_size=2).shape == (0, 2)


def test_seed_gives_same_numbers_and_no_seed_does_not() -> None:
    a = _call("RandomNormal", 22, shape=[8], seed=3.0)
    b = _call("RandomNormal", 22, shape=[8], seed=3.0)
    c = _call("RandomNormal", 22, shape=[8], seed=4.0)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    x = np.full((64,), 0.5, np.float32)
    np.testing.assert_array_equal(_call("Bernoulli", 22, x, seed=1.5), _call("Bernoulli", 22, x, seed=1.5))
    logits = np.zeros((2, 10), np.float32)
    np.testing.assert_array_equal(
        _call("Multinomial", 22, logits, sample_size=20, seed=9.0),
        _call("Multinomial", 22, logits, sample_size=20, seed=9.0),
    )
    d = _call("RandomUniform", 22, shape=[16])
    e = _call("RandomUniform", 22, shape=[16])
    assert not np.array_equal(d, e)


def test_context_generator_is_used() -> None:
    y1 = _call("RandomUniform", 22, shape=[5], rng=np.random.default_rng(42))
    y2 = _call("RandomUniform", 22, shape=[5], rng=np.random.default_rng(42))
    np.testing.assert_array_equal(y1, y2)


@pytest.mark.parametrize(
    "op", ["RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial"]
)
def test_every_since_version_has_a_kernel(op: str) -> None:
    pytest.importorskip("onnx")
    assert_every_version_has_a_kernel(op)
