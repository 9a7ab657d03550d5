"""The linear models and the Normalizer on many rows with the accelerator (more than the compiled small-row loop
takes): BLAS's product, then compiled passes around numpy's own exp (``_jit_ml.linear_scores_pass`` /
``linear_exp_finish``), and the Normalizer's row sums inline for rows of fewer than eight
values. Each gives the numpy path's values bit for bit (Clause 11.4 asks less; the tests hold the paths equal so
that the accelerator never changes a result)."""

from __future__ import annotations

import numpy as np
import pytest

from onnxcore.kernels import accel, ml_linear
from onnxcore.kernels.ml import _Normalizer

pytestmark = pytest.mark.skipif(
    not accel.available(), reason="the accelerator (numba) is not installed or ONNXCORE_ACCEL=0"
)


def _rows(n: int, f: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, f)).astype(np.float32)
    x[3, min(1, f - 1)] = np.nan  # a NaN score row
    x[5, :] = 1e4  # exp overflows where not shifted
    x[6, :] = -1e4
    x[8, :] = 0.0
    x[9, 0] = np.inf
    return x


def _both(make, x: np.ndarray) -> tuple[object, object]:  # type: ignore[no-untyped-def]
    with accel.use(True):
        fast = make()(x)
    with accel.use(False):
        slow = make()(x)
    return fast, slow


@pytest.mark.parametrize("post", ["NONE", "SOFTMAX", "LOGISTIC"])
@pytest.mark.parametrize("classes", [2, 3, 10])
@pytest.mark.parametrize("n", [65, 1000])
@pytest.mark.parametrize("labels", ["ints", "strings", "none"])
def test_a_classifier_on_many_rows_gives_the_numpy_paths_bits(post: str, classes: int, n: int, labels: str) -> None:
    f = 7
    rng = np.random.default_rng(classes * 10 + n)
    coef = list(rng.standard_normal(classes * f))
    intercepts = list(rng.standard_normal(classes))
    kw: dict[str, object] = {}
    if labels == "ints":
        kw["classlabels_ints"] = [10 + i for i in range(classes)]
    elif labels == "strings":
        kw["classlabels_strings"] = [f"c{i}" for i in range(classes)]
    x = _rows(n, f, n)
    for b in (intercepts, None):

        def make(b=b):  # type: ignore[no-untyped-def]
            return ml_linear._LinearClassifier(coefficients=coef, intercepts=b, post_transform=post, **kw)

        (y1, z1), (y2, z2) = _both(make, x)
        assert z1.dtype == z2.dtype == np.float32 and z1.shape == z2.shape == (n, classes)
        np.testing.assert_array_equal(z1, z2)
        assert y1.dtype == y2.dtype and y1.tolist() == y2.tolist()
        assert np.isnan(z1[3]).all() and not np.isnan(np.delete(z1, [3, 9], axis=0)).any()


@pytest.mark.parametrize("post", ["NONE", "SOFTMAX", "LOGISTIC", "PROBIT"])
@pytest.mark.parametrize("labels", ["ints", "strings", "none", "three"])
@pytest.mark.parametrize("intercept", [True, False])
def test_a_binary_classifier_on_many_rows_gives_the_numpy_paths_bits(post: str, labels: str, intercept: bool) -> None:
    """One score per row with two labels (a one-vs-rest member, a binary logistic regression): the label by the
    score's sign, the two columns 1 - p and p; the transforms the passes do not take, and a score without two
    labels, on the numpy path."""
    f = 6
    rng = np.random.default_rng(len(post) + len(labels))
    kw: dict[str, object] = {}
    if labels == "ints":
        kw["classlabels_ints"] = [3, 7]
    elif labels == "strings":
        kw["classlabels_strings"] = ["no", "yes"]
    elif labels == "three":
        kw["classlabels_ints"] = [1, 2, 3]
    coef = list(rng.standard_normal(f))
    x = _rows(400, f, 3)

    def make():  # type: ignore[no-untyped-def]
        return ml_linear._LinearClassifier(
            coefficients=coef, intercepts=[0.25] if intercept else None, post_transform=post, **kw
        )

    (y1, z1), (y2, z2) = _both(make, x)
    assert z1.dtype == z2.dtype == np.float32 and z1.shape == z2.shape
    np.testing.assert_array_equal(z1, z2)
    assert y1.dtype == y2.dtype and y1.tolist() == y2.tolist()


@pytest.mark.parametrize("post", ["NONE", "SOFTMAX", "LOGISTIC"])
@pytest.mark.parametrize("targets", [1, 3, 9])
@pytest.mark.parametrize("intercepts", [0, 1, -1])
def test_a_regressor_on_many_rows_gives_the_numpy_paths_bits(post: str, targets: int, intercepts: int) -> None:
    f = 5
    rng = np.random.default_rng(targets)
    coef = list(rng.standard_normal(targets * f))
    b = None if intercepts == 0 else list(rng.standard_normal(1 if intercepts == 1 else targets))
    x = _rows(300, f, targets)

    def make():  # type: ignore[no-untyped-def]
        return ml_linear._LinearRegressor(coefficients=coef, intercepts=b, targets=targets, post_transform=post)

    fast, slow = _both(make, x)
    assert fast.dtype == slow.dtype == np.float32 and fast.shape == slow.shape == (300, targets)
    np.testing.assert_array_equal(fast, slow)


@pytest.mark.parametrize("norm", ["MAX", "L1", "L2"])
@pytest.mark.parametrize("cols", [1, 2, 3, 7, 8, 12])
def test_the_normalizer_on_many_rows_gives_the_numpy_paths_bits(norm: str, cols: int) -> None:
    """Rows of fewer than eight values summed inline in numpy's order, longer ones pairwise: a zero row (kept),
    NaN and infinities included."""
    x = _rows(500, cols, cols)
    x[11] = 0.0
    x[12, 0] = -np.inf
    fast, slow = _both(lambda: _Normalizer(norm=norm), x)
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(fast[8], np.zeros(cols, np.float32))
