"""skl2onnx's ``decision_path`` option against scikit-learn's ``decision_path``, and the reading of the tree
ensembles' votes it rests on (docs/conformance.md, "Tree ensembles: several votes of one leaf").

skl2onnx writes the path as a second TreeEnsembleRegressor whose leaves vote their own node id, followed by a
LabelEncoder from node id to path string. For a regressor it writes one vote per leaf, and onnxcore's paths equal
scikit-learn's. For a classifier it copies the classifier's votes, one per class, each weighing the leaf id: the
ai.onnx.ml definition ("A leaf may have multiple votes, where each vote is weighted by the associated
target_weights index") sums them, as onnx.reference and onnxcore do, and onnxruntime, with one target, keeps the
first vote only (with two targets it sums). The tests below show each of these facts.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
skl2onnx = pytest.importorskip("skl2onnx")
sklearn_tree = pytest.importorskip("sklearn.tree")
sklearn_ensemble = pytest.importorskip("sklearn.ensemble")

from onnx import helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import onnxcore  # noqa: E402

ML = "ai.onnx.ml"


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.RandomState(0)
    x = rng.randn(300, 4).astype(np.float32)
    y = x[:, 0] + x[:, 1] ** 2
    return x, y, (y > 0.5).astype(np.int64) + (y > 1.5)


def _ours(model: Any, x: np.ndarray) -> list[Any]:
    # skl2onnx declares the path output without a shape (E-IO-TYPE): run without the strict check.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return onnxcore.Session(model.SerializeToString(), check=False).run(None, {"X": x})


def _sklearn_paths(model: Any, x: np.ndarray) -> list[str]:
    paths = model.decision_path(x)
    indicator = (paths[0] if isinstance(paths, tuple) else paths).toarray().astype(int)
    return ["".join(map(str, row)) for row in indicator]


def _as_paths(column: Any, rows: int) -> list[str]:
    values = np.asarray(column).reshape(rows, -1)
    return ["".join(v.decode() if isinstance(v, bytes) else str(v) for v in row) for row in values]


@pytest.mark.parametrize(
    "make",
    [
        lambda: sklearn_tree.DecisionTreeRegressor(max_depth=5, random_state=0),
        lambda: sklearn_tree.ExtraTreeRegressor(max_depth=6, random_state=0),
        lambda: sklearn_ensemble.RandomForestRegressor(n_estimators=3, max_depth=5, random_state=0),
    ],
    ids=["tree", "extra_tree", "forest"],
)
def test_regressor_decision_path_equals_scikit_learn(make: Any) -> None:
    x, y, _ = _data()
    model = make().fit(x, y)
    onx = skl2onnx.to_onnx(model, x[:1], options={id(model): {"decision_path": True}}, target_opset={"": 17, ML: 3})
    ours = _ours(onx, x)
    assert _as_paths(ours[1], len(x)) == _sklearn_paths(model, x)
    np.testing.assert_allclose(np.asarray(ours[0]).ravel(), model.predict(x), rtol=1e-5, atol=1e-5)
    theirs = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"X": x})
    assert _as_paths(theirs[1], len(x)) == _as_paths(ours[1], len(x))


def _path_node_model(onx: Any) -> tuple[Any, Any]:
    """The TreeEnsembleRegressor skl2onnx writes for a classifier's path, alone in a model."""
    node = next(n for n in onx.graph.node if n.op_type == "TreeEnsembleRegressor")
    graph = helper.make_graph(
        [node], "path", [helper.make_tensor_value_info("X", 1, [None, 4])],
        [helper.make_tensor_value_info(node.output[0], 1, [None, 1])],
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(ML, 3)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8), node


def test_classifier_path_votes_are_summed_as_the_definition_says() -> None:
    x, _, yc = _data()
    model = sklearn_tree.DecisionTreeClassifier(max_depth=4, random_state=0).fit(x, yc)
    opts = {id(model): {"decision_path": True, "zipmap": False}}
    onx = skl2onnx.to_onnx(model, x[:1], options=opts, target_opset={"": 17, ML: 3})
    path_model, node = _path_node_model(onx)
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    leaf = model.apply(x).astype(np.float32)
    n_classes = len(model.classes_)
    # skl2onnx gives every leaf one vote per class, each weighing the leaf's id, all for target 0.
    assert attrs["target_nodeids"].count(attrs["target_nodeids"][0]) == n_classes
    assert set(attrs["target_ids"]) == {0}

    ours = np.asarray(_ours(path_model, x)[0]).ravel()
    reference = ReferenceEvaluator(path_model).run(None, {"X": x})[0].ravel()
    theirs = (
        ort.InferenceSession(path_model.SerializeToString(), providers=["CPUExecutionProvider"])
        .run(None, {"X": x})[0]
        .ravel()
    )
    np.testing.assert_array_equal(ours, n_classes * leaf)  # the votes summed: the definition's reading
    np.testing.assert_array_equal(reference, ours)
    np.testing.assert_array_equal(theirs, leaf)  # onnxruntime's single-target path keeps the first vote only

    # The path's strings are then scikit-learn's for onnxruntime only; onnxcore's walk reaches the same leaves, as
    # the path model with one vote per leaf shows.
    assert _as_paths(ort.InferenceSession(onx.SerializeToString()).run(None, {"X": x})[2], len(x)) == (
        _sklearn_paths(model, x)
    )
    keep = [i for i, n in enumerate(attrs["target_nodeids"]) if i == attrs["target_nodeids"].index(n)]
    for name in ("target_ids", "target_nodeids", "target_treeids", "target_weights"):
        del node.attribute[[a.name for a in node.attribute].index(name)]
        node.attribute.append(helper.make_attribute(name, [attrs[name][i] for i in keep]))
    one_vote, _ = _path_node_model(onx)
    np.testing.assert_array_equal(np.asarray(_ours(one_vote, x)[0]).ravel(), leaf)


def _one_split(weights: list[float], nodeids: list[int], targets: list[int], n_targets: int) -> Any:
    """x <= 0 goes to leaf 1, else to leaf 2; the votes as given."""
    node = helper.make_node(
        "TreeEnsembleRegressor", ["X"], ["Y"], domain=ML, n_targets=n_targets,
        nodes_nodeids=[0, 1, 2], nodes_treeids=[0, 0, 0], nodes_featureids=[0, 0, 0], nodes_values=[0.0, 0.0, 0.0],
        nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"], nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0],
        target_ids=targets, target_nodeids=nodeids, target_treeids=[0] * len(nodeids), target_weights=weights,
    )  # fmt: skip
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("X", 1, [None, 1])],
        [helper.make_tensor_value_info("Y", 1, [None, n_targets])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(ML, 3)], ir_version=8)


def test_several_votes_of_one_leaf_for_one_target() -> None:
    x = np.array([[-1.0], [1.0]], dtype=np.float32)
    one_target = _one_split([1.0, 10.0, 5.0], [1, 1, 2], [0, 0, 0], 1)
    two_targets = _one_split([1.0, 10.0, 5.0, 7.0], [1, 1, 2, 1], [0, 0, 0, 1], 2)
    for model, summed in [(one_target, [[11.0], [5.0]]), (two_targets, [[11.0, 7.0], [5.0, 0.0]])]:
        assert np.asarray(_ours(model, x)[0]).tolist() == summed
        assert ReferenceEvaluator(model).run(None, {"X": x})[0].tolist() == summed

    def ort_run(model: Any) -> list[list[float]]:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return np.asarray(sess.run(None, {"X": x})[0]).tolist()

    # onnxruntime sums the two votes with two targets, and keeps the first with one: its own two readings.
    assert ort_run(two_targets) == [[11.0, 7.0], [5.0, 0.0]]
    assert ort_run(one_target) == [[1.0], [5.0]]
