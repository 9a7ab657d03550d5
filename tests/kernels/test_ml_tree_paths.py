"""TreeEnsembleClassifier's paths agree bit for bit (issue 27): a batch against the same rows one at a time (the
single-row path computes the top class and SOFTMAX or NONE scores on Python floats, the batch path with whole-array
numpy calls), and the compiled walk that adds the base values itself against the pure-numpy path. Seeded random
forests, boosted (every leaf votes for one class) and random-forest style (every leaf votes for every class), with
full, partial and no base values, float32 and double weights, up to nine classes (the single-row path takes at
most seven), NaN and infinite scores. The kernels' agreement with onnxruntime is in test_ml.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from onnxcore.kernels import accel
from onnxcore.kernels.registry import lookup

classifier = lookup("ai.onnx.ml", "TreeEnsembleClassifier", 3).fn


def _forest(rng: np.random.Generator, k: int, *, boosted: bool, n_trees: int = 12, f: int = 5) -> dict[str, Any]:
    """Complete binary trees of depth 1-4 over ``f`` features, BRANCH_LEQ everywhere."""
    a: dict[str, list[Any]] = {
        n: []
        for n in (
            "nodes_treeids nodes_nodeids nodes_featureids nodes_modes nodes_values nodes_truenodeids "
            "nodes_falsenodeids class_treeids class_nodeids class_ids class_weights"
        ).split()
    }
    for t in range(n_trees):
        depth = int(rng.integers(1, 5))
        inner = 2**depth - 1
        for i in range(2 * inner + 1):
            leaf = i >= inner
            a["nodes_treeids"].append(t)
            a["nodes_nodeids"].append(i)
            a["nodes_featureids"].append(0 if leaf else int(rng.integers(f)))
            a["nodes_modes"].append("LEAF" if leaf else "BRANCH_LEQ")
            a["nodes_values"].append(0.0 if leaf else float(rng.standard_normal()))
            a["nodes_truenodeids"].append(0 if leaf else 2 * i + 1)
            a["nodes_falsenodeids"].append(0 if leaf else 2 * i + 2)
            if leaf:
                for c in [t % k] if boosted else range(k):
                    a["class_treeids"].append(t)
                    a["class_nodeids"].append(i)
                    a["class_ids"].append(c)
                    a["class_weights"].append(float(rng.standard_normal()) * 3)
    return {**a, "classlabels_int64s": list(range(10, 10 + k))}


def _run(x: np.ndarray, attrs: dict[str, Any], *, compiled: bool) -> tuple[np.ndarray, np.ndarray]:
    with accel.use(compiled):
        return classifier(x, **attrs)


def _same(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> None:
    assert a[0].dtype == b[0].dtype and a[1].dtype == b[1].dtype
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1].shape == b[1].shape
    assert a[1].tobytes() == b[1].tobytes()  # bit for bit (NaN payloads and signed zeros included)


CASES = [
    (k, post, boosted, base, double)
    for k in (3, 7, 9)
    for post in ("SOFTMAX", "NONE", "LOGISTIC")
    for boosted in (True, False)
    for base in ("full", "partial", "none")
    for double in (False, True)
]


@pytest.mark.parametrize(("k", "post", "boosted", "base", "double"), CASES, ids=str)
def test_one_row_equals_the_batch_and_both_walks(k: int, post: str, boosted: bool, base: str, double: bool) -> None:
    rng = np.random.default_rng(k * 1000 + len(post) * 10 + boosted)
    attrs = _forest(rng, k, boosted=boosted)
    attrs["post_transform"] = post
    if base != "none":
        attrs["base_values"] = [float(v) for v in rng.standard_normal(k if base == "full" else k - 1)]
    if double:
        attrs["class_weights_as_tensor"] = np.asarray(attrs.pop("class_weights"), np.float64)
        if "base_values" in attrs:
            attrs["base_values_as_tensor"] = np.asarray(attrs.pop("base_values"), np.float64)
    x = rng.standard_normal((24, 5)).astype(np.float32)
    x[3, 1] = np.nan  # a NaN feature: routed as false, as every other value
    x[4] = np.inf
    want = _run(x, attrs, compiled=False)
    _same(_run(x, attrs, compiled=True), want)
    for r in range(x.shape[0]):
        row = (want[0][r : r + 1], want[1][r : r + 1])
        _same(_run(x[r : r + 1], attrs, compiled=False), row)
        _same(_run(x[r : r + 1], attrs, compiled=True), row)


@pytest.mark.parametrize("post", ["SOFTMAX", "NONE"])
@pytest.mark.parametrize("weight", [np.inf, -np.inf, np.nan])
def test_non_finite_scores_take_the_same_path(post: str, weight: float) -> None:
    """A NaN or infinite score (an infinite weight, infinities of both signs) gives what the batch path gives."""
    rng = np.random.default_rng(7)
    attrs = _forest(rng, 3, boosted=False, n_trees=3)
    attrs["post_transform"] = post
    w = attrs["class_weights"]
    w[0] = weight
    w[len(w) // 2] = -np.inf if weight == np.inf else weight
    x = rng.standard_normal((6, 5)).astype(np.float32)
    want = _run(np.concatenate([x, x]), attrs, compiled=False)
    for r in range(x.shape[0]):
        row = (want[0][r : r + 1], want[1][r : r + 1])
        for compiled in (False, True):
            _same(_run(x[r : r + 1], attrs, compiled=compiled), row)


_EDGES = [0.0, -0.0, 1e-45, -1e-45, 1.5, -2.25, 0.1, 3.4028234663852886e38, np.inf, -np.inf, np.nan]


def _edge_forest(rng: np.random.Generator, mode: str, n_trees: int, *, double: bool) -> dict[str, Any]:
    """Complete trees of depth 1-5 comparing with ``mode`` against thresholds at the edges of the float types
    (zeros of both signs, the smallest subnormal, the largest finite value, infinities, NaN, 0.1 which float32
    cannot hold), three classes."""
    attrs = _forest(rng, 3, boosted=True, n_trees=n_trees, f=4)
    attrs["nodes_modes"] = [m if m == "LEAF" else mode for m in attrs["nodes_modes"]]
    values = [0.0 if m == "LEAF" else float(rng.choice(_EDGES)) for m in attrs["nodes_modes"]]
    if double:
        # Thresholds of their own type, some not exact in float32 (the walk then compares in float64).
        attrs.pop("nodes_values")
        attrs["nodes_values_as_tensor"] = np.asarray(values, np.float64) + np.where(np.asarray(values) == 1.5, 1e-12, 0)
    else:
        attrs["nodes_values"] = values
    return attrs


@pytest.mark.parametrize("mode", ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"])
@pytest.mark.parametrize("double", [False, True])
@pytest.mark.parametrize("x_type", [np.float32, np.float64])
def test_compiled_walk_every_comparison_at_the_edges(mode: str, double: bool, x_type: Any) -> None:
    """The compiled walk (sixteen trees at a time in scalar lanes, the rest through the lanes array, rows as
    lanes from sixteen rows on; a strict comparison compiled as the other kind with its thresholds moved to the
    next value of their type) reaches the numpy path's leaves for every comparison, with features exactly at,
    just below and just above each edge threshold, NaN features routed as false: the same labels and scores bit
    for bit, for 37 trees (two groups of sixteen and five more) at 1, 5 and 40 rows."""
    rng = np.random.default_rng(len(mode) * 7 + double)
    attrs = _edge_forest(rng, mode, 37, double=double)
    attrs["post_transform"] = "NONE"
    dt = np.dtype(x_type)
    edges = np.asarray(_EDGES, dt)
    pool = np.concatenate([edges, np.nextafter(edges, dt.type(np.inf)), np.nextafter(edges, dt.type(-np.inf))])
    pool = np.concatenate([pool, np.asarray([1.5 + 1e-12, 0.1], np.float64).astype(dt)])
    x = rng.choice(pool, size=(40, 4)).astype(dt)
    want = _run(x, attrs, compiled=False)
    _same(_run(x, attrs, compiled=True), want)
    for rows in (slice(0, 1), slice(7, 12)):
        _same(_run(x[rows], attrs, compiled=True), (want[0][rows], want[1][rows]))
        _same(_run(x[rows], attrs, compiled=False), (want[0][rows], want[1][rows]))


regressor = lookup("ai.onnx.ml", "TreeEnsembleRegressor", 3).fn


def _as_regressor(a: dict[str, Any], k: int) -> dict[str, Any]:
    """The classifier's forest as a regressor of ``k`` targets (its class votes as target weights)."""
    names = {"class_treeids": "target_treeids", "class_nodeids": "target_nodeids", "class_ids": "target_ids"}
    out = {names.get(n, n): v for n, v in a.items() if n not in ("classlabels_int64s", "class_weights")}
    out["target_weights"] = a["class_weights"]
    return {**out, "n_targets": k}


@pytest.mark.parametrize("rows", [1, 16, 300])
@pytest.mark.parametrize("post", ["NONE", "LOGISTIC"])
@pytest.mark.parametrize("base", [False, True])
@pytest.mark.parametrize("double", [False, True])
def test_regressor_sum_with_base_values_both_walks_alike(rows: int, post: str, base: bool, double: bool) -> None:
    """TreeEnsembleRegressor's SUM: the compiled walk that adds the base values itself (a small batch) and the numpy
    path (walk, sums, then the base added) give the same bits, float32 or double weights; NaN rows included."""
    rng = np.random.default_rng(rows + 2 * base + 4 * double)
    attrs = _as_regressor(_forest(rng, 3, boosted=True), 3)
    if base:
        attrs["base_values"] = [0.25, -1.5, 1e-3]
    if double:
        attrs["target_weights_as_tensor"] = np.asarray(attrs.pop("target_weights"), np.float64)
    attrs["post_transform"] = post
    x = rng.standard_normal((rows, 5)).astype(np.float32)
    if rows > 1:
        x[1, 2] = np.nan
    with accel.use(True):
        fast = regressor(x, **attrs)
    with accel.use(False):
        slow = regressor(x, **attrs)
    assert fast.dtype == slow.dtype == np.float32 and fast.shape == slow.shape == (rows, 3)
    assert fast.tobytes() == slow.tobytes()
