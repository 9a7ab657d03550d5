"""Models exported by skl2onnx run in our Session and agree with scikit-learn and onnxruntime.

Exercises the ai.onnx.ml kernels (tree ensembles, linear models, SVM, scalers, ZipMap) on models a real
converter wrote, rather than on hand-built nodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import onnxcore

skl2onnx = pytest.importorskip("skl2onnx")
sklearn = pytest.importorskip("sklearn")
ort = pytest.importorskip("onnxruntime")

from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC, SVR  # noqa: E402
from sklearn.tree import DecisionTreeRegressor  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 4)).astype(np.float32)
Y_CLASS = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64) + (X[:, 2] > 0.8).astype(np.int64)
Y_REG = (X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.1 * RNG.normal(size=60)).astype(np.float32)


def _both(model: Any, options: dict | None = None) -> tuple[list[Any], list[Any]]:
    onx = skl2onnx.to_onnx(model, X[:1], options=options, target_opset={"": 17, "ai.onnx.ml": 3})
    data = onx.SerializeToString()
    ours = onnxcore.Session(data).run(None, {"X": X})
    theirs = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"X": X})
    return ours, theirs


@pytest.mark.parametrize(
    "model",
    [
        LogisticRegression(max_iter=500),
        RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0),
        # SVC's Platt-scaled probabilities (probA_, probB_) are what skl2onnx converts; scikit-learn 1.9
        # deprecates them (removal in 1.11; the test extra pins 1.9.1), and its FutureWarnings are expected here.
        pytest.param(
            SVC(probability=True, random_state=0),
            marks=pytest.mark.filterwarnings("ignore:.*(probability|probA_|probB_).*:FutureWarning"),
        ),
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
    ],
    ids=["logistic", "forest", "svc", "scaler+logistic"],
)
def test_classifiers(model: Any) -> None:
    model.fit(X, Y_CLASS)
    ours, theirs = _both(model, {id(model): {"zipmap": False}})
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[0], model.predict(X))
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-4, atol=1e-5)


def test_classifier_with_zipmap() -> None:
    model = LogisticRegression(max_iter=500).fit(X, Y_CLASS)
    ours, theirs = _both(model)
    assert isinstance(ours[1], list) and isinstance(ours[1][0], dict)
    assert len(ours[1]) == len(theirs[1])
    for a, b in zip(ours[1], theirs[1]):
        assert set(a) == set(b)
        for k in a:
            assert abs(float(a[k]) - float(b[k])) < 1e-5


@pytest.mark.parametrize(
    "model",
    [
        LinearRegression(),
        DecisionTreeRegressor(max_depth=5, random_state=0),
        GradientBoostingRegressor(n_estimators=10, max_depth=3, random_state=0),
        SVR(),
        make_pipeline(StandardScaler(), LinearRegression()),
    ],
    ids=["linear", "tree", "gbr", "svr", "scaler+linear"],
)
def test_regressors(model: Any) -> None:
    model.fit(X, Y_REG)
    ours, theirs = _both(model)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ours[0].ravel(), model.predict(X), rtol=1e-3, atol=1e-3)
    assert onnxcore.check(onnxcore.decode(onnxcore.ModelProto, skl2onnx.to_onnx(model, X[:1]).SerializeToString())).ok
