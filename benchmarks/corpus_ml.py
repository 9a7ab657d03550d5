"""The classical-ML part of the benchmark corpus (issue 42, item 4): every scikit-learn estimator family skl2onnx
converts, and CatBoost's own exporter, each at 1, 16 and 1,000 rows.

The families: linear models (LogisticRegression with and without ZipMap, SGDClassifier, Perceptron, Ridge, Lasso,
ElasticNet over PolynomialFeatures, LinearSVC), discriminant analysis (linear and quadratic), SVMs (an SVC
pipeline, NuSVC, SVR, LinearSVR, OneClassSVM), trees and ensembles (DecisionTree classifier and regressor,
RandomForest and ExtraTrees with ZipMap, ExtraTrees regression, GradientBoosting classification with ZipMap and
regression, AdaBoost, Bagging, IsolationForest, HistGradientBoosting), meta-estimators (soft voting, stacking,
calibration, one-vs-rest), neural networks (MLPClassifier, MLPRegressor), neighbours (KNeighbors classifier and
regressor, LocalOutlierFactor), naive Bayes (Gaussian, Bernoulli, multinomial), clustering (KMeans,
GaussianMixture), decomposition (PCA, TruncatedSVD, KernelPCA), scalers (and a Binarizer), feature selection (a
FeatureUnion of PCA and SelectKBest), encoders with string categories (OneHotEncoder, OrdinalEncoder in a
ColumnTransformer over a table's columns, as skl2onnx writes a DataFrame: one input per column) and a
KBinsDiscretizer, imputers, text vectorizers (TF-IDF, word and bigram counts) and CatBoost when it is installed.
LightGBM, XGBoost, the random forest, gradient boosting and the SVM of the first corpus stay in
``corpus_models._tabular`` (the same rows).

Each model is fitted on seeded data and converted once; each row count is an entry whose ``.npz`` holds the feeds
and the framework's outputs (``predict``, then ``predict_proba``/``decision_function``/``transform``; an outlier
detector's ``predict`` is its -1/1 label, then its ``decision_function``), checked against onnxruntime when made, as
``corpus_models`` does. A ZipMap output (a list of one map per row) is compared as the matrix of its values in key
order (:func:`as_arrays`).
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
    outputs: str = "proba"  # proba | decision | predict | transform | cluster | outlier
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


def _meta(name: str, members: dict[str, Any], **kwargs: Any) -> Callable[[], Any]:
    """A meta-estimator ``sklearn.<module>.<Class>`` whose estimator arguments (``members``: a factory, or a list
    of (name, factory) for voting, stacking and a FeatureUnion) are made afresh on each call: an estimator instance
    made once and passed along would be shared, and refitted, by every model that holds it."""

    def make() -> Any:
        made = {k: m() if callable(m) else [(n, f()) for n, f in m] for k, m in members.items()}
        return _skl(name, **made, **kwargs)()

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


# The ensembles added for issue 42 hold 50 members or fewer and the networks 64 units a layer or fewer: the
# corpus stays quick to make.
RECIPES: list[MLRecipe] = [
    MLRecipe("logreg", "ML linear", _pipe(_skl("preprocessing.StandardScaler"),
             _skl("linear_model.LogisticRegression"))),
    MLRecipe("logreg_zipmap", "ML linear", _skl("linear_model.LogisticRegression"), zipmap=True),
    MLRecipe("ridge", "ML linear", _skl("linear_model.Ridge"), data="regression", outputs="predict"),
    MLRecipe("linear_svc", "ML linear", _skl("svm.LinearSVC", random_state=0), outputs="decision"),
    MLRecipe("sgd_logreg", "ML linear", _pipe(_skl("preprocessing.MaxAbsScaler"),
             _skl("linear_model.SGDClassifier", loss="log_loss", random_state=0))),
    MLRecipe("perceptron", "ML linear", _skl("linear_model.Perceptron", random_state=0), outputs="decision"),
    MLRecipe("lasso", "ML linear", _skl("linear_model.Lasso", alpha=0.01), data="regression", outputs="predict"),
    MLRecipe("poly_elasticnet", "ML linear", _pipe(_skl("preprocessing.PolynomialFeatures", 2),
             _skl("preprocessing.StandardScaler"), _skl("linear_model.ElasticNet", alpha=0.01)), data="regression",
             outputs="predict"),
    MLRecipe("lda", "ML discriminant analysis", _skl("discriminant_analysis.LinearDiscriminantAnalysis")),
    MLRecipe("qda", "ML discriminant analysis", _skl("discriminant_analysis.QuadraticDiscriminantAnalysis")),
    MLRecipe("svc_pipeline", "ML SVM", _pipe(_skl("preprocessing.StandardScaler"), _skl("svm.SVC", probability=True,
             random_state=0)), zipmap=True),
    MLRecipe("svr", "ML SVM", _skl("svm.SVR"), data="regression", outputs="predict"),
    MLRecipe("nusvc_robust", "ML SVM", _pipe(_skl("preprocessing.RobustScaler"), _skl("svm.NuSVC", nu=0.2,
             probability=True, random_state=0))),
    MLRecipe("linear_svr", "ML SVM", _skl("svm.LinearSVR", random_state=0), data="regression", outputs="predict"),
    MLRecipe("one_class_svm", "ML SVM", _skl("svm.OneClassSVM", nu=0.1), outputs="outlier"),
    MLRecipe("decision_tree", "ML trees", _skl("tree.DecisionTreeClassifier", max_depth=8, random_state=0)),
    MLRecipe("random_forest_zipmap", "ML trees", _skl("ensemble.RandomForestClassifier", 50, max_depth=8,
             random_state=0), zipmap=True),
    MLRecipe("extra_trees", "ML trees", _skl("ensemble.ExtraTreesRegressor", 50, max_depth=8, random_state=0),
             data="regression", outputs="predict"),
    MLRecipe("gradient_boosting_reg", "ML trees", _skl("ensemble.GradientBoostingRegressor", n_estimators=100,
             random_state=0), data="regression", outputs="predict"),
    MLRecipe("hist_gradient_boosting", "ML trees", _skl("ensemble.HistGradientBoostingClassifier", max_iter=50,
             random_state=0)),
    MLRecipe("decision_tree_reg", "ML trees", _skl("tree.DecisionTreeRegressor", max_depth=8, random_state=0),
             data="regression", outputs="predict"),
    MLRecipe("extra_trees_zipmap", "ML trees", _skl("ensemble.ExtraTreesClassifier", 50, max_depth=8,
             random_state=0), zipmap=True),
    MLRecipe("gradient_boosting_zipmap", "ML trees", _skl("ensemble.GradientBoostingClassifier", n_estimators=50,
             random_state=0), zipmap=True),
    MLRecipe("adaboost", "ML trees", _skl("ensemble.AdaBoostClassifier", n_estimators=50, random_state=0)),
    MLRecipe("adaboost_reg", "ML trees", _skl("ensemble.AdaBoostRegressor", n_estimators=50, random_state=0),
             data="regression", outputs="predict"),
    MLRecipe("bagging", "ML trees", _meta("ensemble.BaggingClassifier",
             {"estimator": _skl("tree.DecisionTreeClassifier", max_depth=8)}, n_estimators=20, random_state=0)),
    MLRecipe("isolation_forest", "ML trees", _skl("ensemble.IsolationForest", n_estimators=50, random_state=0),
             outputs="outlier"),
    MLRecipe("catboost", "ML trees", _catboost, converter="catboost", zipmap=True, input_name="features"),
    MLRecipe("voting_soft_zipmap", "ML meta-estimators", _meta("ensemble.VotingClassifier", {"estimators": [
             ("lr", _skl("linear_model.LogisticRegression")), ("tree", _skl("tree.DecisionTreeClassifier",
             max_depth=6, random_state=0)), ("nb", _skl("naive_bayes.GaussianNB"))]}, voting="soft",
             flatten_transform=False), zipmap=True),
    MLRecipe("stacking", "ML meta-estimators", _meta("ensemble.StackingClassifier", {"estimators": [
             ("lr", _skl("linear_model.LogisticRegression")), ("forest", _skl("ensemble.RandomForestClassifier", 20,
             max_depth=6, random_state=0))], "final_estimator": _skl("linear_model.LogisticRegression")})),
    MLRecipe("calibrated_svc", "ML meta-estimators", _meta("calibration.CalibratedClassifierCV",
             {"estimator": _skl("svm.LinearSVC", random_state=0)}, cv=3)),
    MLRecipe("one_vs_rest", "ML meta-estimators", _meta("multiclass.OneVsRestClassifier",
             {"estimator": _skl("linear_model.LogisticRegression")})),
    MLRecipe("mlp", "ML neural network", _pipe(_skl("preprocessing.StandardScaler"),
             _skl("neural_network.MLPClassifier", hidden_layer_sizes=(64, 32), max_iter=300, random_state=0))),
    MLRecipe("mlp_reg", "ML neural network", _skl("neural_network.MLPRegressor", hidden_layer_sizes=(64, 32),
             max_iter=300, random_state=0), data="regression", outputs="predict"),
    MLRecipe("knn", "ML neighbours", _skl("neighbors.KNeighborsClassifier", 5)),
    MLRecipe("knn_reg", "ML neighbours", _skl("neighbors.KNeighborsRegressor", 5), data="regression",
             outputs="predict"),
    MLRecipe("local_outlier_factor", "ML neighbours", _skl("neighbors.LocalOutlierFactor", 20, novelty=True),
             outputs="outlier"),
    MLRecipe("gaussian_nb", "ML naive Bayes", _skl("naive_bayes.GaussianNB")),
    MLRecipe("bernoulli_nb", "ML naive Bayes", _skl("naive_bayes.BernoulliNB")),
    # Multinomial naive Bayes counts: the scaler puts the features in [0, 1], clipping test rows outside the
    # training range so that no count is negative.
    MLRecipe("minmax_multinomial_nb", "ML naive Bayes", _pipe(_skl("preprocessing.MinMaxScaler", clip=True),
             _skl("naive_bayes.MultinomialNB"))),
    MLRecipe("kmeans", "ML clustering", _skl("cluster.KMeans", 8, n_init=3, random_state=0), outputs="cluster"),
    MLRecipe("gaussian_mixture", "ML clustering", _skl("mixture.GaussianMixture", 4, random_state=0)),
    MLRecipe("pca", "ML decomposition", _skl("decomposition.PCA", 5, random_state=0), outputs="transform"),
    MLRecipe("truncated_svd", "ML decomposition", _skl("decomposition.TruncatedSVD", 5, random_state=0),
             outputs="transform"),
    MLRecipe("kernel_pca", "ML decomposition", _skl("decomposition.KernelPCA", 5, kernel="rbf", random_state=0),
             outputs="transform"),
    MLRecipe("scalers", "ML scalers", _pipe(_skl("preprocessing.StandardScaler"), _skl("preprocessing.MinMaxScaler"),
             _skl("preprocessing.Normalizer")), outputs="transform"),
    MLRecipe("binarizer_logreg", "ML scalers", _pipe(_skl("preprocessing.Binarizer"),
             _skl("linear_model.LogisticRegression"))),
    MLRecipe("feature_union", "ML feature selection", _pipe(_meta("pipeline.FeatureUnion", {"transformer_list": [
             ("pca", _skl("decomposition.PCA", 3, random_state=0)), ("kbest", _skl("feature_selection.SelectKBest",
             k=4))]}), _skl("linear_model.LogisticRegression"))),
    MLRecipe("imputer_logreg", "ML imputers", _pipe(_skl("impute.SimpleImputer"), _skl("preprocessing.StandardScaler"),
             _skl("linear_model.LogisticRegression")), data="missing"),
    MLRecipe("onehot_ridge", "ML encoders", _columns(_skl("preprocessing.OneHotEncoder", handle_unknown="ignore"),
             _skl("linear_model.Ridge")), data="table", outputs="predict"),
    MLRecipe("ordinal_forest", "ML encoders", _columns(_skl("preprocessing.OrdinalEncoder"),
             _skl("ensemble.RandomForestRegressor", 30, max_depth=6, random_state=0)), data="table",
             outputs="predict"),
    MLRecipe("kbins_logreg", "ML encoders", _pipe(_skl("preprocessing.KBinsDiscretizer", 5, encode="onehot-dense",
             strategy="uniform"), _skl("linear_model.LogisticRegression"))),
    MLRecipe("tfidf_logreg", "ML text", _pipe(_skl("feature_extraction.text.TfidfVectorizer"),
             _skl("linear_model.LogisticRegression")), data="text"),
    MLRecipe("count_nb", "ML text", _pipe(_skl("feature_extraction.text.CountVectorizer", ngram_range=(1, 2)),
             _skl("naive_bayes.MultinomialNB")), data="text"),
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

    model.fit(x, target if _regression(recipe, model) else y)
    return model, feeds, lambda f: f[recipe.input_name]


def _regression(recipe: MLRecipe, model: Any) -> bool:
    """Whether ``model`` is fitted on the continuous target: a regressor is, whatever its ``data`` (a regressor fed
    the three class labels would fit but model nothing a user has), and a classifier said to be on regression data
    is a recipe's mistake."""
    from sklearn.base import is_classifier, is_regressor

    if recipe.data == "regression" and is_classifier(model):
        raise ValueError(f"{recipe.name}: a classifier on regression data")
    return recipe.data == "regression" or is_regressor(model)


def _convert(recipe: MLRecipe, model: Any, sample: dict[str, np.ndarray], path: Path) -> None:
    if recipe.converter == "catboost":
        model.save_model(str(path), format="onnx")
        return
    from skl2onnx import get_model_alias, to_onnx
    from skl2onnx.common._registration import get_converter
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType
    from sklearn.base import is_classifier

    types = [
        (k, StringTensorType([None, v.shape[1]]) if v.dtype == object else FloatTensorType([None, v.shape[1]]))
        for k, v in sample.items()
    ]
    options: dict[Any, Any] = {}
    steps = [s for _, s in model.steps] if hasattr(model, "steps") else [model]
    if is_classifier(steps[-1]) and "zipmap" in get_converter(get_model_alias(type(steps[-1]))).get_allowed_options():
        # A classifier's probabilities or scores as a ZipMap or a matrix, as the recipe says: left to skl2onnx, a
        # Perceptron's scores would be a ZipMap (LinearSVC's converter has no such option, a mixture model is no
        # classifier).
        options[id(steps[-1])] = {"zipmap": recipe.zipmap}
    for step in steps:
        if type(step).__name__ in ("TfidfVectorizer", "CountVectorizer"):
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
    if recipe.outputs == "outlier":  # skl2onnx's second output is decision_function (score_samples less offset_)
        return [label, np.asarray(model.decision_function(x), np.float32).reshape(-1, 1)], [0]
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
