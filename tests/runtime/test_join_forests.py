"""Tree-ensemble nodes reading one input run as one walk (issue 42, runtime/optimize/forests.py and
kernels/fused/forests.py): the outputs of every node are what it gives alone, bit for bit, for classifiers (boosted
and random-forest style, two classes and more, full, partial and no base values, every post transform) and
regressors, at one row, a few and more than SMALL_BATCH, with NaN and infinite features, with the accelerator on and
off; nodes of another aggregate, other input or other weight type are left apart; a failure names the node."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import onnxcore
from onnxcore import EvaluationError
from onnxcore.kernels import accel
from onnxcore.kernels.fused.forests import SMALL_BATCH, TreeEnsembles

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402

_F = 5  # features


def _trees(rng: np.random.Generator, n_trees: int, width: int, *, boosted: bool, prefix: str) -> dict[str, Any]:
    """Complete binary trees of depth 1-3 over _F features, BRANCH_LEQ everywhere; each leaf votes for one target
    (``boosted``) or for all ``width``."""
    keys = "nodes_treeids nodes_nodeids nodes_featureids nodes_modes nodes_values nodes_truenodeids "
    keys += f"nodes_falsenodeids {prefix}_treeids {prefix}_nodeids {prefix}_ids {prefix}_weights"
    a: dict[str, list[Any]] = {n: [] for n in keys.split()}
    for t in range(n_trees):
        depth = int(rng.integers(1, 4))
        inner = 2**depth - 1
        for i in range(2 * inner + 1):
            leaf = i >= inner
            a["nodes_treeids"].append(t)
            a["nodes_nodeids"].append(i)
            a["nodes_featureids"].append(0 if leaf else int(rng.integers(_F)))
            a["nodes_modes"].append("LEAF" if leaf else "BRANCH_LEQ")
            a["nodes_values"].append(0.0 if leaf else float(rng.standard_normal()))
            a["nodes_truenodeids"].append(0 if leaf else 2 * i + 1)
            a["nodes_falsenodeids"].append(0 if leaf else 2 * i + 2)
            if leaf:
                for c in [int(rng.integers(width))] if boosted else range(width):
                    a[f"{prefix}_treeids"].append(t)
                    a[f"{prefix}_nodeids"].append(i)
                    a[f"{prefix}_ids"].append(c)
                    a[f"{prefix}_weights"].append(float(rng.standard_normal()) * 2)
    return a


def _member(rng: np.random.Generator, op: str, j: int) -> dict[str, Any]:
    """The attributes of member ``j``: its kind of forest, base values and post transform vary with ``j``."""
    boosted = j % 2 == 0
    if op == "TreeEnsembleClassifier":
        k = (2, 3, 5)[j % 3]
        a = _trees(rng, int(rng.integers(1, 4)), k, boosted=boosted, prefix="class")
        a["classlabels_int64s"] = list(range(10, 10 + k))
        a["post_transform"] = ("SOFTMAX", "NONE", "LOGISTIC", "SOFTMAX_ZERO")[j % 4]
    else:
        k = (1, 2)[j % 2]
        a = _trees(rng, int(rng.integers(1, 4)), k, boosted=boosted, prefix="target")
        a["n_targets"] = k
        a["post_transform"] = ("NONE", "LOGISTIC")[(j // 2) % 2]
    if j % 3:  # (a base value per target or class, or none: a model with another count does not conform)
        a["base_values"] = [float(v) for v in rng.standard_normal(k)]
    return a


def _model(op: str, members: list[dict[str, Any]], inputs: list[str] | None = None) -> bytes:
    """One node per member, each reading ``inputs[j]`` (x by default), every output a graph output."""
    nodes, outputs = [], []
    for j, attrs in enumerate(members):
        x = inputs[j] if inputs else "x"
        if op == "TreeEnsembleClassifier":
            outs = [f"label{j}", f"prob{j}"]
            k = len(attrs["classlabels_int64s"])
            outputs += [h.make_tensor_value_info(outs[0], TP.INT64, ["n"])]
            outputs += [h.make_tensor_value_info(outs[1], TP.FLOAT, ["n", k])]
        else:
            outs = [f"y{j}"]
            outputs += [h.make_tensor_value_info(outs[0], TP.FLOAT, ["n", attrs["n_targets"]])]
        nodes.append(h.make_node(op, [x], outs, domain="ai.onnx.ml", **attrs))
    names = sorted(set(inputs or ["x"]))
    g = h.make_graph(nodes, "forests", [h.make_tensor_value_info(n, TP.FLOAT, ["n", "f"]) for n in names], outputs)
    opsets = [h.make_opsetid("", 17), h.make_opsetid("ai.onnx.ml", 3)]
    return h.make_model(g, opset_imports=opsets, ir_version=9).SerializeToString()


def _feeds(rng: np.random.Generator, rows: int, names: list[str]) -> dict[str, np.ndarray]:
    feeds = {}
    for n in names:
        x = rng.standard_normal((rows, _F)).astype(np.float32)
        if rows > 2:
            x[1, 0], x[2, 3] = np.nan, np.inf
        feeds[n] = x
    return feeds


def _same(got: list[Any], want: list[Any]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.ascontiguousarray(g).tobytes() == np.ascontiguousarray(w).tobytes()  # bit for bit


def _joined(sess: onnxcore.Session) -> list[TreeEnsembles]:
    return [step[0] for step in sess._plan.steps if isinstance(step[0], TreeEnsembles)]


@pytest.mark.parametrize("op", ["TreeEnsembleClassifier", "TreeEnsembleRegressor"])
@pytest.mark.parametrize("seed", range(4))
def test_joined_members_give_their_own_outputs_bit_for_bit(op: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    data = _model(op, [_member(rng, op, j + seed) for j in range(7)])
    joined = onnxcore.Session(data)
    alone = onnxcore.Session(data, disabled_rewrites=["join_forests"])
    assert "join_forests" in joined.fired_rewrites()
    assert len(_joined(joined)) == 1 and not _joined(alone)
    for on in (False, True):
        for rows in (1, 3, SMALL_BATCH, SMALL_BATCH + 1, 40, 0):
            feeds = _feeds(rng, rows, ["x"])
            with accel.use(on):
                for _ in range(2):  # (a second run: the shape-specialised plan)
                    _same(joined.run(None, feeds), alone.run(None, feeds))


def test_an_isolation_forest_joins_once_its_gathers_are_merged() -> None:
    # skl2onnx writes a Gather of the same columns before each tree: the repeats are merged first, then the trees,
    # which now read one value, are joined; the scores are the model's as written.
    sklearn = pytest.importorskip("sklearn.ensemble")
    skl2onnx = pytest.importorskip("skl2onnx")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((200, _F)).astype(np.float32)
    model = sklearn.IsolationForest(n_estimators=6, random_state=0).fit(x)
    onx = skl2onnx.to_onnx(model, x[:1], target_opset={"": 17, "ai.onnx.ml": 3})
    data = onx.SerializeToString()
    joined = onnxcore.Session(data)
    assert len(_joined(joined)) == 1 and "merge_repeats" in joined.fired_rewrites()
    written = onnxcore.Session(data, disabled_rewrites=["join_forests"])
    for rows in (1, 5, 30):
        feeds = {onx.graph.input[0].name: x[:rows]}
        _same(joined.run(None, feeds), written.run(None, feeds))
    np.testing.assert_array_equal(joined.run(None, {onx.graph.input[0].name: x})[0].ravel(), model.predict(x))


def test_other_aggregates_inputs_and_weight_types_are_left_apart() -> None:
    rng = np.random.default_rng(11)
    members = [_member(rng, "TreeEnsembleRegressor", j) for j in range(6)]
    members[1]["aggregate_function"] = "AVERAGE"  # not joined; the others are
    members[4]["target_weights_as_tensor"] = h.make_tensor(
        "w", TP.DOUBLE, [len(members[4]["target_weights"])], members[4].pop("target_weights")
    )  # double sums: apart from the float32 ones (a group of one: left as written)
    data = _model("TreeEnsembleRegressor", members, inputs=["x", "x", "x", "x", "x", "z"])
    sess = onnxcore.Session(data)
    (step,) = _joined(sess)
    assert len(step.steps) == 3  # members 0, 2 and 3
    alone = onnxcore.Session(data, disabled_rewrites=["join_forests"])
    for rows in (1, 20):
        feeds = _feeds(rng, rows, ["x", "z"])
        _same(sess.run(None, feeds), alone.run(None, feeds))


def test_a_failure_of_the_joined_walk_names_the_nodes() -> None:
    rng = np.random.default_rng(3)
    data = _model("TreeEnsembleClassifier", [_member(rng, "TreeEnsembleClassifier", j) for j in range(3)])
    sess = onnxcore.Session(data)
    assert _joined(sess)
    with pytest.raises(EvaluationError, match="TreeEnsembleClassifier") as info:
        sess.run(None, {"x": np.zeros((2, 2), np.float32)})  # fewer features than the trees read
    assert len(info.value.fused_nodes) == 2  # type: ignore[attr-defined]


@pytest.mark.parametrize("post", ["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"])
@pytest.mark.parametrize("k", [3, 5])
def test_members_of_one_finish_are_finished_together_bit_for_bit(post: str, k: int) -> None:
    """A bagging or AdaBoost model's trees: every member a classifier of the same classes and post transform whose
    leaves vote for every class (base values differ, as boosting's do). Their rows are stacked and finished by
    one call (the step's batches), and each member's outputs are still what it gives alone, bit for bit, at one
    row, a few and SMALL_BATCH, with NaN and infinite features, with the accelerator on and off."""
    rng = np.random.default_rng(k)
    members = []
    for j in range(9):
        a = _trees(rng, int(rng.integers(1, 4)), k, boosted=False, prefix="class")
        a["classlabels_int64s"] = list(range(7, 7 + k))
        a["post_transform"] = post
        if j % 2:
            a["base_values"] = [float(v) for v in rng.standard_normal(k)]
        members.append(a)
    data = _model("TreeEnsembleClassifier", members)
    joined = onnxcore.Session(data)
    alone = onnxcore.Session(data, disabled_rewrites=["join_forests"])
    (step,) = _joined(joined)
    assert [len(idx) for idx, *_ in step.batches] == [9]
    for on in (False, True):
        for rows in (1, 3, SMALL_BATCH):
            feeds = _feeds(rng, rows, ["x"])
            with accel.use(on):
                for _ in range(2):
                    _same(joined.run(None, feeds), alone.run(None, feeds))
