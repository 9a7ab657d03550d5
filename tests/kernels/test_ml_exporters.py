"""Tree ensembles and SVMs as exporters write them (skl2onnx, onnxmltools for LightGBM and XGBoost), against
onnxruntime at 1 and 1,000 rows: labels equal, scores within 1e-5; and the same results for any number of kernel
threads (the compiled forest splits its traversal by trees, :mod:`onnxcore.kernels.threads`)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
sklearn = pytest.importorskip("sklearn")
skl2onnx = pytest.importorskip("skl2onnx")

from sklearn.datasets import make_classification, make_regression  # noqa: E402

import onnxcore  # noqa: E402
from onnxcore.kernels import accel  # noqa: E402

N_FEATURES = 12
# onnxmltools declares LightGBM's label as [1] whatever the batch: the session says so (Clause 9.4), as intended.
pytestmark = pytest.mark.filterwarnings("ignore::onnxcore.errors.OutputShapeWarning")


@functools.cache
def _data(kind: str) -> tuple[np.ndarray, np.ndarray]:
    if kind == "regression":
        x, y = make_regression(600, N_FEATURES, random_state=0)
    elif kind == "binary":
        x, y = make_classification(600, N_FEATURES, n_informative=6, random_state=0)
    else:
        x, y = make_classification(600, N_FEATURES, n_informative=6, n_classes=3, random_state=0)
    return x.astype(np.float32), y


def _sklearn(est: Any, kind: str) -> bytes:
    x, y = _data(kind)
    est.fit(x, y)
    opts = {id(est): {"zipmap": False}} if kind != "regression" else None
    return skl2onnx.to_onnx(est, x[:1], options=opts, target_opset={"": 17, "ai.onnx.ml": 3}).SerializeToString()


def _lightgbm(kind: str) -> bytes:
    lightgbm = pytest.importorskip("lightgbm")
    convert = pytest.importorskip("onnxmltools.convert")
    types = pytest.importorskip("onnxmltools.convert.common.data_types")
    x, y = _data(kind)
    init = [("x", types.FloatTensorType([None, N_FEATURES]))]
    if kind == "regression":
        m = lightgbm.LGBMRegressor(n_estimators=40, random_state=0, verbose=-1).fit(x, y)
        return convert.convert_lightgbm(m, initial_types=init, target_opset=15).SerializeToString()
    m = lightgbm.LGBMClassifier(n_estimators=40, random_state=0, verbose=-1).fit(x, y)
    return convert.convert_lightgbm(m, initial_types=init, zipmap=False, target_opset=15).SerializeToString()


def _xgboost(kind: str) -> bytes:
    xgboost = pytest.importorskip("xgboost")
    convert = pytest.importorskip("onnxmltools.convert")
    types = pytest.importorskip("onnxmltools.convert.common.data_types")
    x, y = _data(kind)
    init = [("x", types.FloatTensorType([None, N_FEATURES]))]
    if kind == "regression":
        m = xgboost.XGBRegressor(n_estimators=40, max_depth=5, random_state=0).fit(x, y)
    else:
        m = xgboost.XGBClassifier(n_estimators=40, max_depth=5, random_state=0).fit(x, y)
    return convert.convert_xgboost(m, initial_types=init, target_opset=15).SerializeToString()


def _model(name: str) -> bytes:
    from sklearn.ensemble import (
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.svm import SVC, SVR

    builders = {
        "rf-classifier-3": lambda: _sklearn(RandomForestClassifier(30, max_depth=8, random_state=0), "multiclass"),
        "rf-classifier-2": lambda: _sklearn(RandomForestClassifier(30, random_state=0), "binary"),
        "rf-regressor": lambda: _sklearn(RandomForestRegressor(30, max_depth=8, random_state=0), "regression"),
        "gb-classifier-3": lambda: _sklearn(GradientBoostingClassifier(n_estimators=30, random_state=0), "multiclass"),
        "gb-classifier-2": lambda: _sklearn(GradientBoostingClassifier(n_estimators=30, random_state=0), "binary"),
        "gb-regressor": lambda: _sklearn(GradientBoostingRegressor(n_estimators=30, random_state=0), "regression"),
        "lightgbm-classifier-3": lambda: _lightgbm("multiclass"),
        "lightgbm-classifier-2": lambda: _lightgbm("binary"),
        "lightgbm-regressor": lambda: _lightgbm("regression"),
        "xgboost-classifier-3": lambda: _xgboost("multiclass"),
        "xgboost-classifier-2": lambda: _xgboost("binary"),
        "xgboost-regressor": lambda: _xgboost("regression"),
        "svc-3": lambda: _sklearn(SVC(probability=True, random_state=0), "multiclass"),
        "svr": lambda: _sklearn(SVR(), "regression"),
    }
    return builders[name]()


MODELS = [
    "rf-classifier-3",
    "rf-classifier-2",
    "rf-regressor",
    "gb-classifier-3",
    "gb-classifier-2",
    "gb-regressor",
    "lightgbm-classifier-3",
    "lightgbm-classifier-2",
    "lightgbm-regressor",
    "xgboost-classifier-3",
    "xgboost-classifier-2",
    "xgboost-regressor",
    "svc-3",
    "svr",
]


def _inputs(model: bytes, rows: int, seed: int) -> dict[str, np.ndarray]:
    name = onnxcore.load(model).graph.input[0].name
    x = np.random.default_rng(seed).standard_normal((rows, N_FEATURES)).astype(np.float32) * 2
    return {name: x}


def _compare(got: list[Any], expected: list[Any], where: str) -> None:
    assert len(got) == len(expected), where
    for g, e in zip(got, expected):
        g, e = np.asarray(g), np.asarray(e)
        assert g.shape == e.shape, where
        if e.dtype.kind in "iub" or e.dtype.kind in "OUS":
            assert np.array_equal(g, e), where  # labels: exactly
        else:
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5, err_msg=where)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("rows", [1, 1000])
def test_exported_model_matches_onnxruntime(name: str, rows: int) -> None:
    model = _model(name)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    theirs = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    ours = onnxcore.Session(model)
    feeds = _inputs(model, rows, seed=rows)
    _compare(ours.run(None, feeds), theirs.run(None, feeds), f"{name}, {rows} rows")


@pytest.mark.skipif(not accel.available(), reason="the accelerator is not available (numba or ONNXCORE_ACCEL=0)")
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("rows", [1, 3])
def test_compiled_and_numpy_paths_agree_bit_for_bit(name: str, rows: int) -> None:
    """The small-batch compiled path (one call walks and sums) and the numpy path give the same bits, labels and
    scores, with and without a NaN to route."""
    model = _model(name)
    feeds = _inputs(model, rows, seed=11 + rows)
    nan_feeds = {k: v.copy() for k, v in feeds.items()}
    next(iter(nan_feeds.values()))[0, ::3] = np.nan
    for f in (feeds, nan_feeds):
        with accel.use(False):
            a = onnxcore.Session(model).run(None, f)
        with accel.use(True):
            b = onnxcore.Session(model).run(None, f)
        for x, y in zip(a, b):
            x, y = np.asarray(x), np.asarray(y)
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name


@pytest.mark.parametrize("name", ["rf-classifier-3", "lightgbm-classifier-3", "xgboost-regressor"])
def test_same_results_for_any_thread_count(name: str) -> None:
    model = _model(name)
    feeds = _inputs(model, 3000, seed=7)
    one = onnxcore.Session(model, threads=1).run(None, feeds)
    for threads in (2, 3, 5):
        other = onnxcore.Session(model, threads=threads).run(None, feeds)
        for a, b in zip(one, other):
            assert np.array_equal(np.asarray(a), np.asarray(b)), (name, threads)


@pytest.mark.usefixtures("accel_path")
def test_nan_routing_matches_onnxruntime() -> None:
    # XGBoost routes a missing value (NaN) by each node's default direction (missing_value_tracks_true).
    model = _model("xgboost-classifier-3")
    feeds = _inputs(model, 500, seed=3)
    x = next(iter(feeds.values()))
    x[np.random.default_rng(4).random(x.shape) < 0.2] = np.nan
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    theirs = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    for threads in (1, 2):
        _compare(onnxcore.Session(model, threads=threads).run(None, feeds), theirs.run(None, feeds), "NaN")
    one = {k: v[:1] for k, v in feeds.items()}
    _compare(onnxcore.Session(model).run(None, one), theirs.run(None, one), "NaN, 1 row")


def test_session_threads_option() -> None:
    model = _model("gb-regressor")
    assert onnxcore.Session(model).threads == 1
    assert onnxcore.Session(model, threads=0).threads >= 1
    with pytest.raises(ValueError):
        onnxcore.Session(model, threads=-1)
    with pytest.raises(TypeError):
        onnxcore.Session(model, threads=1.5)  # type: ignore[arg-type]
