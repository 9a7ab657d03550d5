"""SVMClassifier's single-row path (decisions summed and votes counted on Python floats and ints, issue 27) agrees bit
for bit with the batch path on the same row (the same BLAS products; a batch of several rows may round its products
otherwise, so the reference is the batch path run on one row): seeded random one-vs-one models of three and four
classes, each kernel type, several post transforms, integer and string labels, float32 and float64 inputs, ties in
the votes. The kernel's agreement with onnxruntime and scikit-learn is in test_ml.py and test_sklearn_models.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from onnxcore.kernels import accel, ml_linear
from onnxcore.kernels.registry import lookup

svc = lookup("ai.onnx.ml", "SVMClassifier", 1).fn


def _attrs(rng: np.random.Generator, k: int, kernel: str, post: str, strings: bool) -> dict[str, Any]:
    vpc = [int(v) for v in rng.integers(1, 5, k)]
    n_vec, f = sum(vpc), 4
    labels: dict[str, Any] = (
        {"classlabels_strings": [f"c{i}" for i in range(k)]}
        if strings
        else {"classlabels_ints": [7 * i for i in range(k)]}
    )
    return {
        **labels,
        "coefficients": [float(v) for v in rng.standard_normal((k - 1) * n_vec)],
        "kernel_params": [0.3, 0.5, 2.0],
        "kernel_type": kernel,
        "post_transform": post,
        "rho": [float(v) for v in rng.standard_normal(k * (k - 1) // 2) * 0.1],
        "support_vectors": [float(v) for v in rng.standard_normal(n_vec * f)],
        "vectors_per_class": vpc,
    }


@pytest.mark.parametrize("strings", [False, True])
@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX"])
@pytest.mark.parametrize("kernel", ["RBF", "LINEAR", "POLY", "SIGMOID"])
@pytest.mark.parametrize("k", [3, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_row_equals_the_batch_path(
    k: int, kernel: str, post: str, strings: bool, dtype: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(k * 100 + len(kernel) + len(post))
    attrs = _attrs(rng, k, kernel, post, strings)
    x = rng.standard_normal((12, 4)).astype(dtype)
    x[5] = 0.0  # every decision rho alone: ties in the votes
    rows = [x[r : r + 1] for r in range(x.shape[0])]
    got = [svc(row, **attrs) for row in rows]
    monkeypatch.setattr(ml_linear, "_ONE_ROW", 0)
    for (lab, sc), row in zip(got, rows):
        want_lab, want_sc = svc(row, **attrs)
        assert lab.dtype == want_lab.dtype and lab.shape == want_lab.shape == (1,) and lab[0] == want_lab[0]
        assert sc.dtype == want_sc.dtype and sc.shape == want_sc.shape
        assert sc.tobytes() == want_sc.tobytes()


def _pairwise(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    pr = rng.uniform(1e-7, 1 - 1e-7, size=(n, k * (k - 1) // 2))
    if n > 3:
        pr[3, 0] = np.nan  # a row onnxruntime's loop stops on at once (a NaN error is never the largest)
    r = np.zeros((n, k, k))
    iu, ju = np.triu_indices(k, 1)
    r[:, iu, ju] = pr
    r[:, ju, iu] = 1.0 - pr
    return r


@pytest.mark.parametrize("k", [2, 3, 4, 7])
@pytest.mark.parametrize("n", [1, 3, 5, 40])
def test_probability_coupling_paths_give_the_same_bits(k: int, n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """libsvm's coupling of pairwise probabilities (SVMClassifier with prob_a/prob_b) on Python floats, vectorised
    over rows, and compiled (when the accelerator is available): the same bits, signs of zero and NaN rows
    included, since each adds its terms in index order."""
    r = _pairwise(np.random.default_rng(100 * k + n), n, k)
    results = []
    for scalar_rows in (0, 1000):
        monkeypatch.setattr(ml_linear, "_SCALAR_ROWS", scalar_rows)
        with accel.use(False):
            results.append(ml_linear._couple_probabilities(r))
    if accel.available():
        with accel.use(True):
            results.append(ml_linear._couple_probabilities(r))
    first = results[0]
    assert first.shape == (n, k)
    assert np.allclose(np.nansum(first, axis=1), 1.0)
    for other in results[1:]:
        assert np.array_equal(first, other, equal_nan=True)
        assert np.array_equal(np.signbit(first), np.signbit(other))


def _with_probabilities(rng: np.random.Generator, attrs: dict[str, Any], k: int) -> dict[str, Any]:
    pairs = k * (k - 1) // 2
    # Slopes of both signs and up to 40 in size: Platt arguments of both signs, some beyond the [1e-7, 1 - 1e-7]
    # bounds the pairwise probabilities are kept within.
    return {
        **attrs,
        "prob_a": [float(v) for v in rng.uniform(-40.0, 40.0, pairs)],
        "prob_b": [float(v) for v in rng.uniform(-1.0, 1.0, pairs)],
    }


@pytest.mark.parametrize("strings", [False, True])
@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX"])
@pytest.mark.parametrize("kernel", ["RBF", "LINEAR", "POLY", "SIGMOID"])
@pytest.mark.parametrize("k", [2, 3, 5])
@pytest.mark.parametrize("probabilities", [True, False])
def test_one_row_paths_with_and_without_probabilities_agree(
    k: int, kernel: str, post: str, strings: bool, probabilities: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One row three ways (the accelerator's two passes around numpy's exp, the one-row path on Python floats and
    ints, the batch path on that row; the first skipped without the accelerator): the same label and the same score
    bits, with probability coupling (Platt slopes large enough to reach the clip's bounds) and without, two classes
    included; a row of zeros (ties in the votes) and a row holding NaN (every decision NaN: each pair votes its
    second class, and the probabilities are NaN wherever the paths make them so)."""
    rng = np.random.default_rng(1000 * k + 10 * len(kernel) + len(post) + probabilities)
    attrs = _attrs(rng, k, kernel, post, strings)
    if probabilities:
        attrs = _with_probabilities(rng, attrs, k)
    x = rng.standard_normal((10, 4)).astype(np.float32)
    x[4] = 0.0
    x[7, 2] = np.nan
    rows = [x[r : r + 1] for r in range(x.shape[0])]
    ways = []
    if accel.available():
        with accel.use(True):
            ways.append([svc(row, **attrs) for row in rows])
    with accel.use(False):
        ways.append([svc(row, **attrs) for row in rows])
        monkeypatch.setattr(ml_linear, "_ONE_ROW", 0)
        ways.append([svc(row, **attrs) for row in rows])
    want = ways[-1]
    columns = k if probabilities else 2 if k == 2 else k * (k - 1) // 2
    for got in ways[:-1]:
        for r, ((lab, sc), (want_lab, want_sc)) in enumerate(zip(got, want)):
            assert lab.dtype == want_lab.dtype and lab.shape == want_lab.shape == (1,) and lab[0] == want_lab[0], r
            assert sc.dtype == want_sc.dtype == np.float32 and sc.shape == want_sc.shape == (1, columns), r
            if r == 7:
                assert np.array_equal(sc, want_sc, equal_nan=True), r
            else:
                assert sc.tobytes() == want_sc.tobytes(), r
    # every decision of the NaN row is NaN: each pair votes its second class, so the last class wins
    assert want[7][0][0] == (f"c{k - 1}".encode() if strings else 7 * (k - 1))
