"""The classical-ML part of the benchmark corpus (issue 42, item 4): every scikit-learn estimator family skl2onnx
converts, and CatBoost's own exporter, each at 1, 16 and 1,000 rows.

The families: linear models (LogisticRegression with and without ZipMap, Ridge, LinearSVC), SVMs (an SVC pipeline,
SVR), trees and ensembles (DecisionTree, RandomForest with ZipMap, ExtraTrees, GradientBoosting regression,
HistGradientBoosting), neighbours (KNeighbors), naive Bayes, clustering (KMeans), decomposition (PCA,
TruncatedSVD), scalers, encoders with string categories (OneHotEncoder, OrdinalEncoder in a ColumnTransformer over
a table's columns, as skl2onnx writes a DataFrame: one input per column), imputers, text vectorizers (TF-IDF) and
CatBoost when it is installed. LightGBM, XGBoost, the random forest, gradient boosting and the SVM of the first
corpus stay in ``corpus_models._tabular`` (the same rows).

Each model is fitted on seeded data and converted once; each row count is an entry whose ``.npz`` holds the feeds
and the framework's outputs (``predict``, then ``predict_proba``/``decision_function``/``transform``), checked
against onnxruntime when made, as ``corpus_models`` does. A ZipMap output (a list of one map per row) is compared
as the matrix of its values in key order (:func:`as_arrays`).
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROWS = (1, 16, 1000)
FEATURES = 10
_WORDS = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi "
    "chi psi omega red green blue small large fast slow good bad new old"
).split()
_CITIES = ["Paris", "Lyon", "Nice", "Lille", "Nantes", "Brest", "Metz", "Tours"]
_COLOURS = ["red", "green", "blue", "black", "white"]


@dataclass
class MLRecipe:
    """One model: ``make()`` gives the unfitted estimator, ``data`` the kind of table it is fitted on."""

    name: str
    family: str
    make: Callable[[], Any]
    data: str = "numeric"  # numeric | missing | table | text | regression
    zipmap: bool = False
    outputs: str = "proba"  # proba | decision | predict | transform | cluster
    converter: str = "skl2onnx"  # skl2onnx | catboost
    input_name: str = "input"  # of a one-matrix model (CatBoost's exporter names it "features")


# ---------------------------------------------------------------------------------------------------- data


def _numeric(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, FEATURES)).astype(np.float32)
    score = x[:, 0] + x[:, 1] * x[:, 2] - x[:, 3] + 0.3 * rng.standard_normal(n)
    y = (score > 0).astype(np.int64) + (x[:, 4] > 1.0).astype(np.int64)  # three classes
    return x, y, (score + 0.5 * x[:, 5]).astype(np.float32)


def _table(n: int, seed: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """A table as a DataFrame's columns, each (n, 1): two string columns and four numeric ones."""
    rng = np.random.default_rng(seed)
    cols: dict[str, np.ndarray] = {
        "city": np.array(rng.choice(_CITIES, n), dtype=object).reshape(n, 1),
        "colour": np.array(rng.choice(_COLOURS, n), dtype=object).reshape(n, 1),
    }
    for k in range(4):
        cols[f"x{k}"] = rng.standard_normal((n, 1)).astype(np.float32)
    city_effect = np.array([_CITIES.index(c) % 3 for c in cols["city"][:, 0]], dtype=np.float32)
    y = (cols["x0"][:, 0] + city_effect - (cols["colour"][:, 0] == "red") + 0.3 * rng.standard_normal(n)).astype(
        np.float32
    )
    return cols, y


def _text(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    docs, labels = [], []
    for _ in range(n):
        words = rng.choice(_WORDS, int(rng.integers(3, 12)))
        docs.append(" ".join(words))
        labels.append(int(sum(_WORDS.index(w) for w in words[:3]) % 3))
    return np.array(docs, dtype=object).reshape(n, 1), np.array(labels, np.int64)


def _frame(cols: dict[str, np.ndarray]) -> Any:
    import pandas as pd

    return pd.DataFrame({k: v[:, 0] for k, v in cols.items()})


# ------------------------------------------------------------------------------------------------ recipes


def _skl(name: str, *args: Any, **kwargs: Any) -> Callable[[], Any]:
    """``sklearn.<module>.<Class>(*args, **kwargs)`` made when called (scikit-learn imported late)."""

    def make() -> Any:
        import importlib

        module, cls = name.rsplit(".", 1)
        return getattr(importlib.import_module(f"sklearn.{module}"), cls)(*args, **kwargs)

    return make


def _pipe(*steps: Callable[[], Any]) -> Callable[[], Any]:
    def make() -> Any:
        from sklearn.pipeline import make_pipeline

        return make_pipeline(*(s() for s in steps))

    return make


def _columns(encoder: Callable[[], Any], head: Callable[[], Any]) -> Callable[[], Any]:
    """A ColumnTransformer over the table (strings encoded, numbers scaled) followed by ``head``."""

    def make() -> Any:
        from sklearn.compose import ColumnTransformer
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import StandardScaler

        ct = ColumnTransformer(
            [("cat", encoder(), ["city", "colour"]), ("num", StandardScaler(), [f"x{k}" for k in range(4)])]
        )
        return Pipeline([("columns", ct), ("head", head())])

    return make


def _catboost() -> Any:
    import catboost

    return catboost.CatBoostClassifier(
        iterations=100, depth=6, random_seed=0, verbose=False, thread_count=1, allow_writing_files=False
    )


RECIPES: list[MLRecipe] = [
    MLRecipe("logreg", "ML linear", _pipe(_skl("preprocessing.StandardScaler"),
             _skl("linear_model.LogisticRegression"))),
    MLRecipe("logreg_zipmap", "ML linear", _skl("linear_model.LogisticRegression"), zipmap=True),
    MLRecipe("ridge", "ML linear", _skl("linear_model.Ridge"), data="regression", outputs="predict"),
    MLRecipe("linear_svc", "ML linear", _skl("svm.LinearSVC", random_state=0), outputs="decision"),
    MLRecipe("svc_pipeline", "ML SVM", _pipe(_skl("preprocessing.StandardScaler"), _skl("svm.SVC", probability=True,
             random_state=0)), zipmap=True),
    MLRecipe("svr", "ML SVM", _skl("svm.SVR"), data="regression", outputs="predict"),
    MLRecipe("decision_tree", "ML trees", _skl("tree.DecisionTreeClassifier", max_depth=8, random_state=0)),
    MLRecipe("random_forest_zipmap", "ML trees", _skl("ensemble.RandomForestClassifier", 50, max_depth=8,
             random_state=0), zipmap=True),
    MLRecipe("extra_trees", "ML trees", _skl("ensemble.ExtraTreesRegressor", 50, max_depth=8, random_state=0),
             data="regression", outputs="predict"),
    MLRecipe("gradient_boosting_reg", "ML trees", _skl("ensemble.GradientBoostingRegressor", n_estimators=100,
             random_state=0), data="regression", outputs="predict"),
    MLRecipe("hist_gradient_boosting", "ML trees", _skl("ensemble.HistGradientBoostingClassifier", max_iter=50,
             random_state=0)),
    MLRecipe("knn", "ML neighbours", _skl("neighbors.KNeighborsClassifier", 5)),
    MLRecipe("gaussian_nb", "ML naive Bayes", _skl("naive_bayes.GaussianNB")),
    MLRecipe("kmeans", "ML clustering", _skl("cluster.KMeans", 8, n_init=3, random_state=0), outputs="cluster"),
    MLRecipe("pca", "ML decomposition", _skl("decomposition.PCA", 5, random_state=0), outputs="transform"),
    MLRecipe("truncated_svd", "ML decomposition", _skl("decomposition.TruncatedSVD", 5, random_state=0),
             outputs="transform"),
    MLRecipe("scalers", "ML scalers", _pipe(_skl("preprocessing.StandardScaler"), _skl("preprocessing.MinMaxScaler"),
             _skl("preprocessing.Normalizer")), outputs="transform"),
    MLRecipe("imputer_logreg", "ML imputers", _pipe(_skl("impute.SimpleImputer"), _skl("preprocessing.StandardScaler"),
             _skl("linear_model.LogisticRegression")), data="missing"),
    MLRecipe("onehot_ridge", "ML encoders", _columns(_skl("preprocessing.OneHotEncoder", handle_unknown="ignore"),
             _skl("linear_model.Ridge")), data="table", outputs="predict"),
    MLRecipe("ordinal_forest", "ML encoders", _columns(_skl("preprocessing.OrdinalEncoder"),
             _skl("ensemble.RandomForestRegressor", 30, max_depth=6, random_state=0)), data="table",
             outputs="predict"),
    MLRecipe("tfidf_logreg", "ML text", _pipe(_skl("feature_extraction.text.TfidfVectorizer"),
             _skl("linear_model.LogisticRegression")), data="text"),
    MLRecipe("catboost", "ML trees", _catboost, converter="catboost", zipmap=True, input_name="features"),
]  # fmt: skip


# ---------------------------------------------------------------------------------------------- conversion


def _fit(recipe: MLRecipe) -> tuple[Any, Callable[[int], dict[str, np.ndarray]], Callable[[dict[str, Any]], Any]]:
    """The fitted model, the feeds of ``n`` test rows, and the framework's input from feeds."""
    model = recipe.make()
    if recipe.data == "table":
        cols, y = _table(2000, 0)
        model.fit(_frame(cols), y)
        return model, lambda n: _table(n, 1)[0], _frame
    if recipe.data == "text":
        docs, labels = _text(2000, 0)
        model.fit(docs[:, 0], labels)
        return model, lambda n: {"input": _text(n, 1)[0]}, lambda f: f["input"][:, 0]
    x, y, target = _numeric(2000, 0)
    if recipe.data == "missing":
        x = x.copy()
        x[np.random.default_rng(2).random(x.shape) < 0.1] = np.nan

    def feeds(n: int) -> dict[str, np.ndarray]:
        xt = _numeric(n, 1)[0]
        if recipe.data == "missing":
            xt[np.random.default_rng(3).random(xt.shape) < 0.1] = np.nan
        return {recipe.input_name: xt}

    model.fit(x, target if recipe.data == "regression" else y)
    return model, feeds, lambda f: f[recipe.input_name]


def _convert(recipe: MLRecipe, model: Any, sample: dict[str, np.ndarray], path: Path) -> None:
    if recipe.converter == "catboost":
        model.save_model(str(path), format="onnx")
        return
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType

    types = [
        (k, StringTensorType([None, v.shape[1]]) if v.dtype == object else FloatTensorType([None, v.shape[1]]))
        for k, v in sample.items()
    ]
    options: dict[Any, Any] = {}
    steps = [s for _, s in model.steps] if hasattr(model, "steps") else [model]
    if hasattr(steps[-1], "predict_proba"):  # a classifier: its probabilities as a ZipMap or a matrix
        options[id(steps[-1])] = {"zipmap": recipe.zipmap}
    for step in steps:
        if type(step).__name__ == "TfidfVectorizer":
            # StringNormalizer's default locale (en_US) is often not installed; "C" lowers ASCII as sklearn does.
            options[id(step)] = {"locale": "C"}
    onx = to_onnx(model, initial_types=types, options=options or None, target_opset={"": 17, "ai.onnx.ml": 3})
    path.write_bytes(onx.SerializeToString())


def _expected(recipe: MLRecipe, model: Any, x: Any) -> tuple[list[np.ndarray], list[int]]:
    """The framework's outputs in the converted model's order, and which are labels (compared exactly)."""
    if recipe.outputs == "transform":
        return [np.asarray(model.transform(x), np.float32)], []
    if recipe.outputs == "predict":
        return [np.asarray(model.predict(x), np.float32).reshape(-1, 1)], []
    label = np.asarray(model.predict(x)).reshape(-1).astype(np.int64)
    if recipe.outputs == "cluster":
        return [label, np.asarray(model.transform(x), np.float32)], [0]
    second = model.decision_function(x) if recipe.outputs == "decision" else model.predict_proba(x)
    return [label, np.asarray(second, np.float32)], [0]


def as_arrays(outputs: Sequence[Any]) -> list[Any]:
    """Outputs as arrays: a ZipMap's list of maps becomes the (rows, classes) matrix of its values in key order."""
    flat = []
    for o in outputs:
        if isinstance(o, list) and o and isinstance(o[0], dict):
            keys = sorted(o[0])
            o = np.array([[row[k] for k in keys] for row in o], np.float32)
        flat.append(o)
    return flat


def make(cache: Path, missing: Callable[[str], bool], log: Any = sys.stderr) -> list[Any]:
    """Make the entries of every recipe with a missing row count; a recipe that fails is reported and skipped."""
    import corpus_models as cm

    entries = []
    for recipe in RECIPES:
        names = [f"ml-{recipe.name}-{rows}" for rows in ROWS]
        if not any(missing(n) for n in names):
            continue
        t0 = time.perf_counter()
        try:
            model, feeds_of, framework_input = _fit(recipe)
            path = cache / f"ml-{recipe.name}.onnx"
            tmp = cache / f"ml-{recipe.name}.tmp.onnx"
            _convert(recipe, model, feeds_of(2), tmp)
            os.replace(tmp, path)
            exporter = "catboost" if recipe.converter == "catboost" else "skl2onnx"
            for rows, name in zip(ROWS, names):
                feeds = feeds_of(rows)
                expected, exact = _expected(recipe, model, framework_input(feeds))
                entry = cm.Entry(name, recipe.family, exporter, path.name, f"{name}.npz", exact)
                # Strings stored as numpy's str (an object array needs pickle to load); both engines take either.
                arrays = {f"in:{k}": v.astype(str) if v.dtype == object else v for k, v in feeds.items()}
                arrays |= {f"out:{k}": v for k, v in enumerate(expected)}
                tmp_npz = cache / f"{name}.tmp.npz"
                np.savez(tmp_npz, **arrays)  # type: ignore[arg-type]
                os.replace(tmp_npz, cache / entry.data)
                entry.note = check(cache, entry)
                entries.append(entry)
                print(f"made {name} ({time.perf_counter() - t0:.1f} s){' ' + entry.note if entry.note else ''}",
                      file=log)  # fmt: skip
        except Exception as e:  # one recipe failing (a converter without this model) leaves the others
            print(f"ml-{recipe.name}: failed: {type(e).__name__}: {str(e)[:300]}", file=log)
            if os.environ.get("CORPUS_TRACEBACK"):
                traceback.print_exc()
    return entries


def check(cache: Path, entry: Any) -> str:
    """'' when onnxruntime reproduces the framework's outputs, else what differs."""
    import corpus_models as cm
    import onnxruntime as ort

    feeds, expected = cm.load_entry(cache, entry)
    try:
        sess = ort.InferenceSession(str(cache / entry.model), providers=["CPUExecutionProvider"])
        got = as_arrays(sess.run(None, feeds))
    except Exception as e:
        return f"onnxruntime failed: {type(e).__name__}: {str(e)[:200]}"
    msg = cm.compare(got, expected, entry.exact_outputs)
    return f"onnxruntime: {msg}" if msg else ""


def family_of(entry: Any) -> str:
    """The family a report groups an entry under: a classical-ML entry's rows are part of it ("ML linear, 16
    rows"; the tree ensembles and SVM of the first corpus too), a torch model's family is its own."""
    head, _, tail = entry.name.rpartition("-")
    if entry.exporter in ("skl2onnx", "onnxmltools", "catboost") and head and tail.isdigit():
        return f"{entry.family}, {tail} row{'s' if tail != '1' else ''}"
    return str(entry.family)


def names() -> list[str]:
    """Every entry name of this part of the corpus."""
    return [f"ml-{r.name}-{rows}" for r in RECIPES for rows in ROWS]
