"""The ai.onnx.ml operators against the ONNX 1-3 vectors and onnxruntime on random models and inputs.

Tree ensembles: random forests (several trees, every branch mode, NaN routing, EQ/NEQ hits on a value grid),
all aggregates, base values, post transforms, the legacy encodings (versions 1, 3 with *_as_tensor) and
TreeEnsemble 5 (with BRANCH_MEMBER); classifiers with int and string labels, binary and multiclass.
Linear models, SVMs (every kernel, with and without probabilities), Scaler, Normalizer, LabelEncoder,
OneHotEncoder, ZipMap and the small transforms are compared with onnxruntime too. Where onnxruntime cannot
be fed (maps with string or double values) or rejects the input (NaN for Binarizer), values come from the
operator definition text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from runtime.node_harness import assert_close, run_single_node_case

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

from kernels.ml_oracle import assert_same, both, make_model, run_ort, run_ours  # noqa: E402
from onnxcore.kernels.ml import softmax_rows  # noqa: E402
from onnxcore.kernels.ml_tree import _softmax_rows  # noqa: E402

GRID = np.array([-1.0, -0.5, 0.0, 0.5, 1.0], dtype=np.float32)
MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]
POSTS = ["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"]


def test_node_vectors(node_cases: list[Path]) -> None:
    cases = [c for c in node_cases if c.name.startswith("test_ai_onnx_ml_") and "expanded" not in c.name]
    assert len(cases) >= 8
    for case in cases:
        out = run_single_node_case(case)
        assert out is not None, case.name
        actual, expected = out
        for a, e in zip(actual, expected):
            assert_close(a, e)


def test_every_since_version_registered() -> None:
    from onnxcore.kernels.registry import kernel_versions

    versions: dict[str, set[int]] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain == "ai.onnx.ml":
            versions.setdefault(s.name, set()).add(s.since_version)
    assert len(versions) == 19
    for op, vs in versions.items():
        assert set(kernel_versions("ai.onnx.ml", op)) == vs, op


# ---------------------------------------------------------------------------------------------
# Random forests
# ---------------------------------------------------------------------------------------------


def _grid_x(rng: np.random.Generator, n: int, f: int, nan: bool = True) -> np.ndarray:
    x = rng.choice(GRID, size=(n, f)) + rng.choice([0.0, 0.0, 0.25], size=(n, f)).astype(np.float32)
    if nan:
        x[rng.random((n, f)) < 0.1] = np.nan
    return x.astype(np.float32)


def _random_forest(
    rng: np.random.Generator,
    n_trees: int,
    n_features: int,
    leaf_ids: Any,
    modes: list[str] = MODES,
    max_depth: int = 4,
    weight_low: float = -1.0,
) -> dict[str, list]:
    """Legacy-encoded forest; ``leaf_ids(rng)`` gives the target/class ids a leaf votes for."""
    a: dict[str, list] = {k: [] for k in ("tree", "node", "feat", "mode", "val", "true", "false", "miss")}
    w: dict[str, list] = {k: [] for k in ("tree", "node", "id", "weight")}
    for t in range(n_trees):
        counter = [0]

        def build(depth: int, t: int = t, counter: list[int] = counter) -> int:
            nid = counter[0]
            counter[0] += 1
            pos = len(a["tree"])
            for k in a:
                a[k].append(0)
            a["tree"][pos], a["node"][pos] = t, nid
            if depth >= max_depth or (depth > 0 and rng.random() < 0.25):
                a["mode"][pos] = "LEAF"
                a["val"][pos] = 0.0
                for i in leaf_ids(rng):
                    w["tree"].append(t)
                    w["node"].append(nid)
                    w["id"].append(int(i))
                    w["weight"].append(float(np.float32(rng.uniform(weight_low, 1.0))))
                return nid
            a["mode"][pos] = str(rng.choice(modes))
            a["feat"][pos] = int(rng.integers(n_features))
            a["val"][pos] = float(rng.choice(GRID))
            a["miss"][pos] = int(rng.integers(2))
            a["true"][pos] = build(depth + 1, t, counter)
            a["false"][pos] = build(depth + 1, t, counter)
            return nid

        build(0)
    return {
        "nodes_treeids": a["tree"],
        "nodes_nodeids": a["node"],
        "nodes_featureids": a["feat"],
        "nodes_modes": a["mode"],
        "nodes_values": a["val"],
        "nodes_truenodeids": a["true"],
        "nodes_falsenodeids": a["false"],
        "nodes_missing_value_tracks_true": a["miss"],
        "_w_tree": w["tree"],
        "_w_node": w["node"],
        "_w_id": w["id"],
        "_w_weight": w["weight"],
    }


def _regressor_attrs(forest: dict[str, list], n_targets: int, as_tensor: bool) -> dict[str, Any]:
    attrs = {k: v for k, v in forest.items() if not k.startswith("_")}
    attrs.update(
        n_targets=n_targets,
        target_treeids=forest["_w_tree"],
        target_nodeids=forest["_w_node"],
        target_ids=forest["_w_id"],
    )
    if as_tensor:
        attrs["nodes_values_as_tensor"] = numpy_helper.from_array(np.asarray(attrs.pop("nodes_values"), np.float64))
        attrs["target_weights_as_tensor"] = numpy_helper.from_array(np.asarray(forest["_w_weight"], np.float64))
    else:
        attrs["target_weights"] = forest["_w_weight"]
    return attrs


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("version", [1, 3])
def test_tree_regressor(version: int) -> None:
    rng = np.random.default_rng(10 + version)
    x = _grid_x(rng, 60, 4)
    for n_targets in (1, 3):
        forest = _random_forest(rng, 5, 4, lambda r, k=n_targets: r.choice(k, size=r.integers(1, k + 1), replace=False))
        for agg in ("SUM", "AVERAGE", "MIN", "MAX"):
            posts = POSTS if n_targets > 1 else ["NONE", "PROBIT"]
            for post in posts if agg == "SUM" else ["NONE"]:
                attrs = _regressor_attrs(forest, n_targets, as_tensor=version == 3 and agg != "MAX")
                attrs.update(aggregate_function=agg, post_transform=post)
                if agg == "AVERAGE":
                    attrs["base_values"] = list(rng.uniform(-1, 1, n_targets).astype(np.float32).astype(float))
                xin = x.astype(np.float64) if version == 3 else x
                ours, ref = both("TreeEnsembleRegressor", version, {"X": xin}, [("Y", TP.FLOAT)], **attrs)
                # onnxruntime's probit is an approximation of erfinv (relative error ~1e-3).
                tol = 5e-3 if post == "PROBIT" else 1e-5
                assert_same(ours, ref, rtol=tol, atol=tol, msg=f"v{version} targets={n_targets} {agg} {post}")


@pytest.mark.usefixtures("accel_path")
def test_tree_regressor_int_input_and_single_node_trees() -> None:
    rng = np.random.default_rng(3)
    forest = _random_forest(rng, 4, 3, lambda r: [0], max_depth=2)
    # Append a tree that is a single leaf.
    forest["nodes_treeids"].append(99)
    forest["nodes_nodeids"].append(0)
    for k, v in (("featureids", 0), ("modes", "LEAF"), ("values", 0.0), ("truenodeids", 0), ("falsenodeids", 0)):
        forest[f"nodes_{k}"].append(v)
    forest["nodes_missing_value_tracks_true"].append(0)
    forest["_w_tree"].append(99)
    forest["_w_node"].append(0)
    forest["_w_id"].append(0)
    forest["_w_weight"].append(2.5)
    # onnxruntime has no integer-input kernel: compare with its result on the same values as float32.
    x = rng.integers(-2, 3, size=(20, 3)).astype(np.int64)
    model = make_model(
        "TreeEnsembleRegressor", 3, {"X": x.astype(np.float32)}, [("Y", TP.FLOAT)], _regressor_attrs(forest, 1, False)
    )
    ref = run_ort(model, {"X": x.astype(np.float32)})
    for xi in (x, x.astype(np.int32)):
        assert_same(run_ours(model, {"X": xi}), ref)


def _classifier_attrs(forest: dict[str, list], labels: list, base: list[float] | None, post: str) -> dict[str, Any]:
    attrs = {k: v for k, v in forest.items() if not k.startswith("_")}
    attrs.update(
        class_treeids=forest["_w_tree"],
        class_nodeids=forest["_w_node"],
        class_ids=forest["_w_id"],
        class_weights=forest["_w_weight"],
        post_transform=post,
    )
    if isinstance(labels[0], str):
        attrs["classlabels_strings"] = labels
    else:
        attrs["classlabels_int64s"] = labels
    if base is not None:
        attrs["base_values"] = base
    return attrs


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("labels", [[10, 20, 30], ["cat", "dog", "eel", "fox"]])
def test_tree_classifier_multiclass(labels: list) -> None:
    rng = np.random.default_rng(len(labels))
    k = len(labels)
    x = _grid_x(rng, 50, 5)
    forest = _random_forest(rng, 4, 5, lambda r: r.choice(k, size=r.integers(1, k + 1), replace=False))
    for post in POSTS:
        for base in (None, list(rng.uniform(-0.5, 0.5, k).astype(np.float32).astype(float))):
            attrs = _classifier_attrs(forest, labels, base, post)
            out_t = TP.STRING if isinstance(labels[0], str) else TP.INT64
            ours, ref = both("TreeEnsembleClassifier", 1, {"X": x}, [("Y", out_t), ("Z", TP.FLOAT)], **attrs)
            tol = 5e-3 if post == "PROBIT" else 1e-5
            assert_same(ours, ref, rtol=tol, atol=tol, msg=f"{post} base={base is not None}")


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize(
    ("voted", "low", "base"),
    [
        ([1], 0.0, None),  # binary, one class voted, weights all positive
        ([1], -1.0, None),  # binary, mixed weights
        ([0], 0.0, None),  # only class 0 voted: one score expanded to two columns
        ([0], -1.0, None),
        ([0], -1.0, [0.25]),
        ([0, 1], -1.0, None),  # both classes voted
        # Not compared: both classes voted with two base values, where onnxruntime scores class 1 with
        # base_values[1] + the class-0 sum and ignores the class-1 sum; we add each class's base to its sum.
    ],
)
def test_tree_classifier_binary(voted: list[int], low: float, base: list[float] | None) -> None:
    rng = np.random.default_rng(7)
    x = _grid_x(rng, 50, 3)
    forest = _random_forest(rng, 3, 3, lambda r: voted, weight_low=low)
    for labels in ([0, 1], ["no", "yes"]):
        for post in ("NONE", "LOGISTIC"):
            if voted == [0] and base is None and post == "LOGISTIC" and low == 0.0:
                continue
            attrs = _classifier_attrs(forest, labels, base, post)
            out_t = TP.STRING if isinstance(labels[0], str) else TP.INT64
            ours, ref = both("TreeEnsembleClassifier", 3, {"X": x}, [("Y", out_t), ("Z", TP.FLOAT)], **attrs)
            assert_same(ours, ref, msg=f"voted={voted} low={low} base={base} {labels} {post}")


@pytest.mark.usefixtures("accel_path")
def test_tree_classifier_as_tensor_double() -> None:
    rng = np.random.default_rng(11)
    x = _grid_x(rng, 40, 4).astype(np.float64)
    forest = _random_forest(rng, 3, 4, lambda r: r.choice(3, size=2, replace=False))
    attrs = _classifier_attrs(forest, [1, 2, 3], None, "SOFTMAX")
    attrs["nodes_values_as_tensor"] = numpy_helper.from_array(np.asarray(attrs.pop("nodes_values"), np.float64))
    attrs["class_weights_as_tensor"] = numpy_helper.from_array(np.asarray(attrs.pop("class_weights"), np.float64))
    attrs["base_values_as_tensor"] = numpy_helper.from_array(np.array([0.1, 0.2, 0.3]))
    ours, ref = both("TreeEnsembleClassifier", 3, {"X": x}, [("Y", TP.INT64), ("Z", TP.FLOAT)], **attrs)
    assert_same(ours, ref)


def _to_tree_ensemble_5(forest: dict[str, list], member_every: int = 0) -> dict[str, Any]:
    """Re-encode a legacy forest (one weight per leaf) as TreeEnsemble-5 attributes."""
    tree, node = forest["nodes_treeids"], forest["nodes_nodeids"]
    inner = [i for i, m in enumerate(forest["nodes_modes"]) if m != "LEAF"]
    leaves = [i for i, m in enumerate(forest["nodes_modes"]) if m == "LEAF"]
    ipos = {(tree[i], node[i]): p for p, i in enumerate(inner)}
    lpos = {(tree[i], node[i]): p for p, i in enumerate(leaves)}
    w = {
        (t, n): (i, v) for t, n, i, v in zip(forest["_w_tree"], forest["_w_node"], forest["_w_id"], forest["_w_weight"])
    }
    codes = {m: c for c, m in enumerate(MODES)}
    modes, splits, members = [], [], []
    for c, i in enumerate(inner):
        if member_every and c % member_every == 0:
            modes.append(6)
            splits.append(0.0)
            # onnxruntime only implements integer-valued sets.
            members.extend([float(c % 3 - 1), 1.0, np.nan])
        else:
            modes.append(codes[forest["nodes_modes"][i]])
            splits.append(forest["nodes_values"][i])
    tl, tid, fl, fid = [], [], [], []
    for i in inner:
        for key, flags, ids in (("nodes_truenodeids", tl, tid), ("nodes_falsenodeids", fl, fid)):
            child = (tree[i], forest[key][i])
            flags.append(int(child in lpos))
            ids.append(lpos[child] if child in lpos else ipos[child])
    roots = [ipos[(t, 0)] for t in sorted(set(tree))]
    attrs: dict[str, Any] = dict(
        nodes_featureids=[forest["nodes_featureids"][i] for i in inner],
        nodes_modes=numpy_helper.from_array(np.asarray(modes, np.uint8)),
        nodes_splits=numpy_helper.from_array(np.asarray(splits, np.float32)),
        nodes_truenodeids=tid,
        nodes_trueleafs=tl,
        nodes_falsenodeids=fid,
        nodes_falseleafs=fl,
        nodes_missing_value_tracks_true=[forest["nodes_missing_value_tracks_true"][i] for i in inner],
        leaf_targetids=[w[(tree[i], node[i])][0] for i in leaves],
        leaf_weights=numpy_helper.from_array(np.asarray([w[(tree[i], node[i])][1] for i in leaves], np.float32)),
        tree_roots=roots,
    )
    if members:
        attrs["membership_values"] = numpy_helper.from_array(np.asarray(members, np.float32))
    return attrs


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tree_ensemble_5(dtype: type) -> None:
    rng = np.random.default_rng(5)
    x = _grid_x(rng, 50, 4).astype(dtype)
    forest = _random_forest(rng, 4, 4, lambda r: [int(r.integers(2))])
    for member_every in (0, 3):
        attrs = _to_tree_ensemble_5(forest, member_every)
        if member_every:
            # onnxruntime truncates X to an integer before the set look-up (1.25 is "in" {1}); the
            # definition tests the value itself, so the comparison uses integer-valued features.
            x = np.where(np.isnan(x), x, np.round(x)).astype(dtype)
        if dtype == np.float64:
            for k in ("nodes_splits", "leaf_weights", "membership_values"):
                if k in attrs:
                    attrs[k] = numpy_helper.from_array(numpy_helper.to_array(attrs[k]).astype(np.float64))
        for agg in range(4):
            for post in range(5) if agg == 1 else [0]:
                a = dict(attrs, n_targets=2, aggregate_function=agg, post_transform=post)
                out = [("Y", helper.np_dtype_to_tensor_dtype(x.dtype))]
                ours = run_ours(make_model("TreeEnsemble", 5, {"X": x}, out, a), {"X": x})
                # The definition numbers SOFTMAX 1 and LOGISTIC 2; onnxruntime reads 1 as LOGISTIC and 2 as
                # SOFTMAX (its internal order), so it is given the other number to compute the same transform.
                a_ort = dict(a, post_transform={1: 2, 2: 1}.get(post, post))
                ref = run_ort(make_model("TreeEnsemble", 5, {"X": x}, out, a_ort), {"X": x})
                tol = 5e-3 if post == 4 else 1e-5
                assert_same(ours, ref, rtol=tol, atol=tol, msg=f"member={member_every} agg={agg} post={post}")


def test_tree_ensemble_vectorised_speed() -> None:
    # 20 trees of depth 8 over 20000 rows: a level-at-a-time evaluation takes well under a second.
    import time

    from onnxcore.kernels.registry import lookup

    rng = np.random.default_rng(0)
    forest = _random_forest(rng, 20, 6, lambda r: [0], max_depth=8, modes=["BRANCH_LEQ"])
    attrs = _regressor_attrs(forest, 1, False)
    x = rng.standard_normal((20000, 6)).astype(np.float32)
    kernel = lookup("ai.onnx.ml", "TreeEnsembleRegressor", 3).fn
    # A first call on a tenth of the rows (the same path: enough rows to split over the kernel threads) compiles the
    # accelerator's walk for these types (seconds, once per machine: numba caches it on disk), so that the bound
    # below is on the evaluation.
    kernel(x[:2000], **attrs)
    t0 = time.perf_counter()
    y = kernel(x, **attrs)
    assert y.shape == (20000, 1)
    assert time.perf_counter() - t0 < 3.0


@pytest.mark.usefixtures("accel_path")
def test_tree_errors() -> None:
    from onnxcore.errors import EvaluationError
    from onnxcore.kernels.registry import lookup

    fn = lookup("ai.onnx.ml", "TreeEnsembleRegressor", 3).fn
    base = dict(
        nodes_treeids=[0, 0, 0],
        nodes_nodeids=[0, 1, 2],
        nodes_featureids=[0, 0, 0],
        nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
        nodes_values=[0.0, 0.0, 0.0],
        nodes_truenodeids=[1, 0, 0],
        nodes_falsenodeids=[2, 0, 0],
        target_treeids=[0, 0],
        target_nodeids=[1, 2],
        target_ids=[0, 0],
        target_weights=[1.0, 2.0],
        n_targets=1,
    )
    x = np.array([[-1.0], [1.0]], np.float32)
    assert fn(x, **base).tolist() == [[1.0], [2.0]]
    with pytest.raises(EvaluationError):
        fn(x, **dict(base, nodes_truenodeids=[7, 0, 0]))
    with pytest.raises(EvaluationError):
        fn(x, **dict(base, nodes_featureids=[3, 0, 0]))
    with pytest.raises(EvaluationError):
        fn(x, **dict(base, nodes_modes=["BRANCH_XX", "LEAF", "LEAF"]))
    with pytest.raises(EvaluationError):  # a cycle: node 1 points back to the root
        fn(x, **dict(base, nodes_modes=["BRANCH_LEQ", "BRANCH_LEQ", "LEAF"], nodes_truenodeids=[1, 0, 0]))


# ---------------------------------------------------------------------------------------------
# Linear models and SVMs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("labels", [[3, 5, 7], ["a", "b", "c"]])
def test_linear_classifier_multiclass(labels: list) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((30, 4)).astype(np.float32)
    coef = rng.standard_normal(12).astype(np.float32).astype(float).tolist()
    inter = rng.standard_normal(3).astype(np.float32).astype(float).tolist()
    key = "classlabels_strings" if isinstance(labels[0], str) else "classlabels_ints"
    out_t = TP.STRING if isinstance(labels[0], str) else TP.INT64
    for post in ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO"):
        for xin in (x, x.astype(np.float64), np.round(x * 3).astype(np.int64)):
            attrs = {key: labels, "coefficients": coef, "intercepts": inter, "post_transform": post}
            ours, ref = both("LinearClassifier", 1, {"X": xin}, [("Y", out_t), ("Z", TP.FLOAT)], **attrs)
            assert_same(ours, ref, msg=post)


def test_linear_classifier_binary() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((30, 3)).astype(np.float32)
    for labels, key, out_t in (([4, 9], "classlabels_ints", TP.INT64), (["n", "y"], "classlabels_strings", TP.STRING)):
        # One score s per row, expanded to [1 - s, s] (NONE) or [1 - p, p] with p = sigmoid(s) (LOGISTIC).
        for post in ("NONE", "LOGISTIC"):
            attrs = {key: labels, "coefficients": [0.5, -1.0, 2.0], "intercepts": [0.25], "post_transform": post}
            ours, ref = both("LinearClassifier", 1, {"X": x}, [("Y", out_t), ("Z", TP.FLOAT)], **attrs)
            assert_same(ours, ref, msg=post)


def test_linear_regressor() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((25, 4)).astype(np.float32)
    for targets in (1, 3):
        coef = rng.standard_normal(4 * targets).astype(np.float32).astype(float).tolist()
        inter = rng.standard_normal(targets).astype(np.float32).astype(float).tolist()
        for post in POSTS if targets > 1 else ["NONE"]:
            xin = x if post != "PROBIT" else (np.abs(x) * 0.01).astype(np.float32)
            attrs = dict(coefficients=coef, intercepts=inter, targets=targets, post_transform=post)
            if post == "PROBIT":
                attrs["intercepts"] = [0.5] * targets
                attrs["coefficients"] = [0.1] * (4 * targets)
            ours, ref = both("LinearRegressor", 1, {"X": xin}, [("Y", TP.FLOAT)], **attrs)
            tol = 5e-3 if post == "PROBIT" else 1e-5
            assert_same(ours, ref, rtol=tol, atol=tol, msg=f"targets={targets} {post}")


def _svc_attrs(rng: np.random.Generator, k: int, f: int, kernel: str, proba: bool) -> dict[str, Any]:
    vpc = [2, 3, 1, 2][:k]
    n_vec = sum(vpc)
    attrs: dict[str, Any] = dict(
        kernel_type=kernel,
        kernel_params=[0.3, 0.5, 3.0] if kernel == "POLY" else [0.3, 0.2, 0.0],
        vectors_per_class=vpc,
        support_vectors=rng.standard_normal(n_vec * f).astype(np.float32).astype(float).tolist(),
        coefficients=rng.standard_normal((k - 1) * n_vec).astype(np.float32).astype(float).tolist(),
        rho=rng.standard_normal(k * (k - 1) // 2).astype(np.float32).astype(float).tolist(),
    )
    if proba:
        attrs["prob_a"] = rng.uniform(-2, -0.5, k * (k - 1) // 2).astype(np.float32).astype(float).tolist()
        attrs["prob_b"] = rng.uniform(-0.2, 0.2, k * (k - 1) // 2).astype(np.float32).astype(float).tolist()
    return attrs


@pytest.mark.parametrize("kernel", ["LINEAR", "POLY", "RBF", "SIGMOID"])
def test_svm_classifier(kernel: str) -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((20, 3)).astype(np.float32)
    for k in (2, 3, 4):
        for proba in (False, True):
            attrs = _svc_attrs(rng, k, 3, kernel, proba)
            labels = list(range(10, 10 + k))
            for post in (POSTS if k == 3 else ("NONE", "SOFTMAX")) if k > 2 else ("NONE",):
                a = dict(attrs, classlabels_ints=labels, post_transform=post)
                ours, ref = both("SVMClassifier", 1, {"X": x}, [("Y", TP.INT64), ("Z", TP.FLOAT)], **a)
                # The probability coupling iterates to a tolerance of 0.005/k (as libsvm): compare loosely.
                tol = 5e-3 if post == "PROBIT" else 2e-3 if proba else 1e-4
                assert_same(ours, ref, rtol=tol, atol=tol, msg=f"k={k} proba={proba} {post}")
    a = dict(_svc_attrs(rng, 3, 3, kernel, False), classlabels_strings=["x", "y", "z"])
    ours, ref = both("SVMClassifier", 1, {"X": x.astype(np.float64)}, [("Y", TP.STRING), ("Z", TP.FLOAT)], **a)
    assert_same(ours, ref, rtol=1e-4, atol=1e-4)


def test_svm_classifier_linear_layout() -> None:
    rng = np.random.default_rng(6)
    x = rng.standard_normal((20, 3)).astype(np.float32)
    for k in (2, 3):
        for positive in (False, True):
            coef = rng.standard_normal(k * 3).astype(np.float32)
            coef = np.abs(coef) if positive else coef
            a = dict(
                coefficients=coef.astype(float).tolist(),
                rho=[0.1],
                classlabels_ints=list(range(k)),
                kernel_params=[0.0, 0.0, 0.0],  # onnxruntime insists on the attribute
            )
            ours, ref = both("SVMClassifier", 1, {"X": x}, [("Y", TP.INT64), ("Z", TP.FLOAT)], **a)
            assert_same(ours, ref, rtol=1e-5, atol=1e-5, msg=f"k={k} positive={positive}")


@pytest.mark.parametrize("kernel", ["LINEAR", "POLY", "RBF", "SIGMOID"])
def test_svm_regressor(kernel: str) -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((20, 3)).astype(np.float32)
    n_sv = 4
    attrs = dict(
        kernel_type=kernel,
        kernel_params=[0.3, 0.5, 2.0],
        n_supports=n_sv,
        support_vectors=rng.standard_normal(n_sv * 3).astype(np.float32).astype(float).tolist(),
        coefficients=rng.standard_normal(n_sv).astype(np.float32).astype(float).tolist(),
        rho=[0.2],
    )
    for one_class in (0, 1):
        ours, ref = both("SVMRegressor", 1, {"X": x}, [("Y", TP.FLOAT)], **dict(attrs, one_class=one_class))
        assert_same(ours, ref, rtol=1e-5, atol=1e-5, msg=f"one_class={one_class}")
    lin = dict(coefficients=[0.5, -1.0, 2.0], rho=[0.3], kernel_params=[0.0, 0.0, 0.0])
    ours, ref = both("SVMRegressor", 1, {"X": x}, [("Y", TP.FLOAT)], **lin)
    assert_same(ours, ref, rtol=1e-5, atol=1e-5)


def test_probit_accuracy() -> None:
    from onnxcore.kernels.ml import probit

    # Quantiles of the standard normal distribution (values of Phi^-1 from tables).
    p = np.array([0.5, 0.975, 0.025, 0.8413447460685429, 0.001, 1e-10])
    expected = np.array([0.0, 1.959963984540054, -1.959963984540054, 1.0, -3.090232306167814, -6.361340902404056])
    np.testing.assert_allclose(probit(p), expected, rtol=1e-8, atol=1e-9)
    assert np.isnan(probit(np.array([-0.5, 1.5]))).all()


# ---------------------------------------------------------------------------------------------
# Transforms and encoders
# ---------------------------------------------------------------------------------------------


def test_scaler_normalizer() -> None:
    rng = np.random.default_rng(9)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    x[1] = 0
    x[2] = -np.abs(x[2])
    for xin in (x, x.astype(np.float64), np.round(x * 4).astype(np.int32), np.round(x * 4).astype(np.int64)):
        for norm in ("MAX", "L1", "L2"):
            ours, ref = both("Normalizer", 1, {"X": xin}, [("Y", TP.FLOAT)], norm=norm)
            assert_same(ours, ref, msg=f"{norm} {xin.dtype}")
        attrs = dict(offset=[0.5, 1.0, -2.0, 3.0], scale=[2.0, 1.0, -1.0, 0.5])
        ours, ref = both("Scaler", 1, {"X": xin}, [("Y", TP.FLOAT)], **attrs)
        assert_same(ours, ref, msg=f"scaler {xin.dtype}")
    ours, ref = both("Scaler", 1, {"X": x}, [("Y", TP.FLOAT)], offset=[0.5], scale=[2.0])
    assert_same(ours, ref)


def test_label_encoder() -> None:
    s = np.array([[b"a", b"b"], [b"zz", b"c"]], dtype=object)
    i = np.array([1, 7, 3, -2], np.int64)
    f = np.array([0.5, np.nan, 2.0, -0.0], np.float32)
    cases: list[tuple[int, dict, dict, int]] = [
        (2, {"X": s}, dict(keys_strings=["a", "b", "c"], values_int64s=[1, 2, 3], default_int64=42), TP.INT64),
        (2, {"X": s}, dict(keys_strings=["a", "b"], values_floats=[1.5, 2.5]), TP.FLOAT),
        (2, {"X": i}, dict(keys_int64s=[1, 3, 7], values_strings=["x", "y", "z"], default_string="?"), TP.STRING),
        (2, {"X": f}, dict(keys_floats=[0.5, 2.0], values_int64s=[5, 6]), TP.INT64),
        (4, {"X": f}, dict(keys_floats=[0.5, float("nan")], values_strings=["half", "nan"]), TP.STRING),
        (
            4,
            {"X": i},
            dict(
                keys_tensor=numpy_helper.from_array(np.array([1, 3], np.int64)),
                values_tensor=numpy_helper.from_array(np.array([0.5, 1.5], np.float64)),
                default_tensor=numpy_helper.from_array(np.array([9.0], np.float64)),
            ),
            TP.DOUBLE,
        ),
        (
            4,
            {"X": f.astype(np.float64)},
            dict(
                keys_tensor=numpy_helper.from_array(np.array([0.5, np.nan], np.float64)),
                values_tensor=numpy_helper.from_array(np.array([4, 5], np.int64)),
            ),
            TP.INT64,
        ),
    ]
    for version, feeds, attrs, out_t in cases:
        ours, ref = both("LabelEncoder", version, feeds, [("Y", out_t)], **attrs)
        assert_same(ours, ref, msg=str(attrs))
    # Version 4: "If a key is repeated, the last key takes precedence" (onnxruntime keeps the first).
    from onnxcore.kernels.registry import lookup

    fn = lookup("ai.onnx.ml", "LabelEncoder", 4).fn
    out = fn(i, keys_int64s=[1, 3, 3], values_int64s=[10, 30, 31])
    assert out.dtype == np.int64 and out.tolist() == [10, -1, 31, -1]
    # int16/int32 keys and values (onnxruntime has no kernel for them); the default of an integral
    # values_tensor is -1.
    out = fn(i.astype(np.int16), keys_tensor=np.array([1, 3], np.int16), values_tensor=np.array([4, 5], np.int32))
    assert out.dtype == np.int32 and out.tolist() == [4, -1, 5, -1]
    out = fn(i.astype(np.int32), keys_tensor=np.array([7], np.int32), values_tensor=np.array([b"s"], dtype=object))
    assert out.dtype == object and out.tolist() == [b"_Unused", b"s", b"_Unused", b"_Unused"]


def test_label_encoder_1() -> None:
    from onnxcore.kernels.registry import lookup

    fn = lookup("ai.onnx.ml", "LabelEncoder", 1).fn
    out = fn(np.array([b"b", b"q", b"a"], dtype=object), classes_strings=["a", "b"], default_int64=-5)
    assert out.dtype == np.int64 and out.tolist() == [1, -5, 0]
    out = fn(np.array([1, 5, 0], np.int64), classes_strings=["a", "b"], default_string="none")
    assert out.dtype == object and out.tolist() == [b"b", b"none", b"a"]


def test_one_hot_encoder() -> None:
    from onnxcore.errors import EvaluationError
    from onnxcore.kernels.registry import lookup

    cases = [
        ({"X": np.array([[1, 3], [2, 9]], np.int64)}, dict(cats_int64s=[1, 2, 3])),
        ({"X": np.array([1.7, 2.0, -3.0], np.float64)}, dict(cats_int64s=[1, 2, -3])),
        # An infinity is no category (the short path, which every finite row takes, leaves such values to
        # nan_to_num).
        ({"X": np.array([[7.9, 2.5], [np.inf, -0.5]], np.float32)}, dict(cats_int64s=[0, 2, 7])),
        ({"X": np.array([[b"a"], [b"q"]], dtype=object)}, dict(cats_strings=["q", "a", "w"])),
    ]
    for feeds, attrs in cases:
        ours, ref = both("OneHotEncoder", 1, feeds, [("Y", TP.FLOAT)], **attrs)
        assert_same(ours, ref)
    with pytest.raises(EvaluationError):
        lookup("ai.onnx.ml", "OneHotEncoder", 1).fn(np.array([5], np.int64), cats_int64s=[1], zeros=0)
    # NaN reads as 0 (numpy's nan_to_num, then the truncation): category 0 here, where onnxruntime finds none.
    got = lookup("ai.onnx.ml", "OneHotEncoder", 1).fn(np.array([np.nan, 2.0], np.float32), cats_int64s=[0, 2])
    assert got.tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_zipmap() -> None:
    rng = np.random.default_rng(12)
    x = rng.random((4, 3)).astype(np.float32)
    for key, labels, kt in (
        ("classlabels_strings", ["a", "b", "c"], TP.STRING),
        ("classlabels_int64s", [5, 1, 3], TP.INT64),
    ):
        t = helper.make_sequence_type_proto(
            helper.make_map_type_proto(kt, helper.make_tensor_type_proto(TP.FLOAT, None))
        )
        ours, ref = both("ZipMap", 1, {"X": x}, [("Z", t)], **{key: labels})
        assert isinstance(ours[0], list) and all(isinstance(m, dict) for m in ours[0])
        assert_same(ours, ref)


def test_small_transforms() -> None:
    rng = np.random.default_rng(13)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    cases: list[tuple[str, dict, list, dict]] = [
        ("Binarizer", {"X": x}, [("Y", TP.FLOAT)], dict(threshold=0.25)),
        ("Binarizer", {"X": np.array([[1, 5, -2]], np.float32)}, [("Y", TP.FLOAT)], dict(threshold=1.0)),
        (
            "Imputer",
            {"X": np.where(x > 1, np.nan, x).astype(np.float32)},
            [("Y", TP.FLOAT)],
            dict(imputed_value_floats=[1.0, 2.0, 3.0, 4.0], replaced_value_float=float("nan")),
        ),
        (
            "Imputer",
            {"X": np.array([[1, 0, -1]], np.int64)},
            [("Y", TP.INT64)],
            dict(imputed_value_int64s=[7], replaced_value_int64=-1),
        ),
        (
            "CategoryMapper",
            {"X": np.array([b"a", b"c", b"zz"], object)},
            [("Y", TP.INT64)],
            dict(cats_strings=["a", "b", "c"], cats_int64s=[1, 2, 3], default_int64=9),
        ),
        (
            "CategoryMapper",
            {"X": np.array([[1, 5], [3, 2]], np.int64)},
            [("Y", TP.STRING)],
            dict(cats_strings=["a", "b", "c"], cats_int64s=[1, 2, 3], default_string="q"),
        ),
        ("ArrayFeatureExtractor", {"X": x, "Y": np.array([0, 3, 3], np.int64)}, [("Z", TP.FLOAT)], {}),
        ("ArrayFeatureExtractor", {"X": x[0], "Y": np.array([[1, 2]], np.int64)}, [("Z", TP.FLOAT)], {}),
        ("FeatureVectorizer", {"A": x[:, :2], "B": x[:, 2:]}, [("Y", TP.FLOAT)], dict(inputdimensions=[2, 3])),
        (
            "FeatureVectorizer",
            {"A": x[:, :3].astype(np.float64), "B": x[:, 1:].astype(np.float64)},
            [("Y", TP.FLOAT)],
            dict(inputdimensions=[2, 3]),
        ),
        ("CastMap", {"X": {3: np.float32(1.5), 1: np.float32(2.0)}}, [("Y", TP.FLOAT)], {}),
        (
            "CastMap",
            {"X": {3: np.float32(1.5), 1: np.float32(2.0)}},
            [("Y", TP.INT64)],
            dict(cast_to="TO_INT64", map_form="SPARSE", max_map=5),
        ),
        ("CastMap", {"X": {3: np.float32(1.5), 1: np.float32(-2.0)}}, [("Y", TP.STRING)], dict(cast_to="TO_STRING")),
        (
            "DictVectorizer",
            {"X": {b"a": np.float32(1.5), b"c": np.float32(2.0)}},
            [("Y", TP.FLOAT)],
            dict(string_vocabulary=["c", "b", "a"]),
        ),
        (
            "DictVectorizer",
            {"X": {5: np.float32(1.5), 1: np.float32(2.0)}},
            [("Y", TP.FLOAT)],
            dict(int64_vocabulary=[1, 2, 5]),
        ),
    ]
    for op, feeds, outs, attrs in cases:
        ours, ref = both(op, 1, feeds, outs, **attrs)
        assert_same(ours, ref, msg=f"{op} {attrs}")


def test_maps_onnxruntime_cannot_feed() -> None:
    # onnxruntime's Python binding cannot pass maps with string or double values; expected values follow
    # the definitions: CastMap orders by key (SPARSE places by key), DictVectorizer fills by vocabulary.
    from onnxcore.kernels.registry import lookup

    cast_map = lookup("ai.onnx.ml", "CastMap", 1).fn
    out = cast_map({3: b"1.5", 1: b"2"}, cast_to="TO_FLOAT")
    assert out.dtype == np.float32 and out.tolist() == [[2.0, 1.5]]
    out = cast_map({3: b"15", 1: b"2"}, cast_to="TO_INT64", map_form="SPARSE", max_map=5)
    assert out.dtype == np.int64 and out.tolist() == [[0, 2, 0, 15, 0]]
    out = cast_map({2: b"x", 0: b"y"}, cast_to="TO_STRING")
    assert out.dtype == object and out.tolist() == [[b"y", b"x"]]
    dv = lookup("ai.onnx.ml", "DictVectorizer", 1).fn
    out = dv(None, {5: np.asarray(1.5), 1: np.asarray(-2.0)}, int64_vocabulary=[1, 2, 5])
    assert out.dtype == np.float64 or out.dtype == np.float32
    assert out.tolist() == [[-2.0, 0.0, 1.5]]
    out = dv(None, {b"b": b"x"}, string_vocabulary=["a", "b"])
    assert out.dtype == object and out.tolist() == [[b"", b"x"]]
    assert lookup("ai.onnx.ml", "Binarizer", 1).fn(np.array([np.nan, 2.0]), threshold=1.0)[1] == 1.0


@pytest.mark.usefixtures("accel_path")
def test_tree_ensemble_float16() -> None:
    # onnxruntime refuses float16 TreeEnsemble models at shape inference; the float16 result must be the
    # float32 evaluation of the same (float16-exact) splits, weights and inputs, rounded once.
    from onnxcore.kernels.registry import lookup

    rng = np.random.default_rng(21)
    forest = _random_forest(rng, 3, 4, lambda r: [int(r.integers(2))])
    attrs = dict(_to_tree_ensemble_5(forest, 0), n_targets=2)
    a16 = dict(attrs)
    for k in ("nodes_splits", "leaf_weights"):
        a16[k] = numpy_helper.from_array(numpy_helper.to_array(attrs[k]).astype(np.float16))
        attrs[k] = numpy_helper.from_array(numpy_helper.to_array(a16[k]).astype(np.float32))
    x16 = _grid_x(rng, 30, 4).astype(np.float16)
    out = [("Y", TP.FLOAT16)]
    y16 = run_ours(make_model("TreeEnsemble", 5, {"X": x16}, out, a16), {"X": x16})[0]
    x32 = x16.astype(np.float32)
    y32 = run_ours(make_model("TreeEnsemble", 5, {"X": x32}, [("Y", TP.FLOAT)], attrs), {"X": x32})[0]
    assert y16.dtype == np.float16
    assert y16.tolist() == y32.astype(np.float16).tolist()
    assert lookup("ai.onnx.ml", "TreeEnsemble", 5) is not None


@pytest.mark.usefixtures("accel_path")
def test_empty_batch() -> None:
    rng = np.random.default_rng(22)
    forest = _random_forest(rng, 3, 4, lambda r: [int(r.integers(2))])
    x0 = np.zeros((0, 4), np.float32)
    cases: list[tuple[str, int, list, dict]] = [
        ("TreeEnsemble", 5, [("Y", TP.FLOAT)], dict(_to_tree_ensemble_5(forest, 0), n_targets=2)),
        ("TreeEnsembleRegressor", 3, [("Y", TP.FLOAT)], _regressor_attrs(forest, 2, False)),
        (
            "TreeEnsembleClassifier",
            3,
            [("Y", TP.INT64), ("Z", TP.FLOAT)],
            _classifier_attrs(forest, [1, 2, 3], None, "NONE"),
        ),
        (
            "LinearClassifier",
            1,
            [("Y", TP.INT64), ("Z", TP.FLOAT)],
            dict(coefficients=[float(v) for v in range(8)], intercepts=[1.0, 2.0], classlabels_ints=[3, 4]),
        ),
        ("Normalizer", 1, [("Y", TP.FLOAT)], dict(norm="L2")),
        (
            "SVMClassifier",
            1,
            [("Y", TP.INT64), ("Z", TP.FLOAT)],
            dict(
                coefficients=[float(v) for v in range(8)], rho=[0.1], classlabels_ints=[3, 4], kernel_params=[0.0] * 3
            ),
        ),
    ]
    for op, version, outs, attrs in cases:
        ours, ref = both(op, version, {"X": x0}, outs, **attrs)
        assert_same(ours, ref, msg=op)


@pytest.mark.parametrize("shape", [(1, 3), (1, 9), (5, 4), (2, 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tree_classifier_softmax_is_the_shared_softmax_bit_for_bit(shape: tuple[int, int], dtype: type) -> None:
    """The classifier's direct-ufunc softmax gives the bits of ml.softmax_rows (after the float64 conversion of
    post_transform_rows), infinities and NaN included."""
    s = (np.random.default_rng(shape[0] * 10 + shape[1]).standard_normal(shape) * 30).astype(dtype)
    if s.size > 2:
        s.flat[1], s.flat[-1] = np.inf, np.nan
    for rows in (s, s[:, ::-1]):
        want = softmax_rows(np.asarray(rows, dtype=np.float64))
        got = _softmax_rows(rows)
        assert got.dtype == np.float64 and np.array_equal(got, want, equal_nan=True)
