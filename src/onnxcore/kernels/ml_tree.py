"""Tree ensembles of ``ai.onnx.ml``: TreeEnsembleRegressor and TreeEnsembleClassifier (1, 3, 5) and
TreeEnsemble (5).

Every encoding is first flattened into one :class:`_Forest`: arrays indexed by node (feature, threshold,
comparison mode, true/false child, NaN routing, set membership) plus, per node, the weights it gives to
each target; then compiled into the tables of :class:`~onnxcore.kernels._tree_eval.CompiledForest`. Evaluation
is vectorised: all rows go through all trees at once, one tree level per step, with numpy index arithmetic;
only the number of levels is a Python loop. A session does the flattening and compiling once per node (the
kernels' ``prepare`` step, :func:`onnxcore.kernels.registry.kernel`); a direct call does it on every call.

A node routes a row to its true child when the comparison ``x[feature] <mode> threshold`` holds, or when
the feature is NaN and the node's ``missing_value_tracks_true`` is set. Comparisons are made in float64
on values already rounded to their declared type (float thresholds to float32, ``*_as_tensor`` ones in
their own type), which is exact for float32 and float64 inputs.

Aggregation (SUM, AVERAGE, MIN, MAX) is per target over the leaves reached; a target no reached leaf
votes for scores 0 (plus its base value). The classifier's binary conventions (one voted class, the
second Z column) follow onnxruntime, the reference consumer; the tests compare with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels import accel
from onnxcore.kernels._ml_common import row_max, row_sum
from onnxcore.kernels._tree_eval import CompiledForest
from onnxcore.kernels._util import check_elements, distinct
from onnxcore.kernels.ml import (
    ML,
    POST_TRANSFORMS,
    as_rows,
    check_post_transform,
    encode_strings,
    post_transform_rows,
    probit,
    sigmoid,
    string_array,
)
from onnxcore.kernels.registry import kernel

__all__ = ["ForestParts", "combined_forest", "forest_parts", "forest_rows"]

_MODES = {"BRANCH_LEQ": 0, "BRANCH_LT": 1, "BRANCH_GTE": 2, "BRANCH_GT": 3, "BRANCH_EQ": 4, "BRANCH_NEQ": 5}
_MEMBER = 6
_LEAF = 7
_AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")


class _Forest:
    """A flattened tree ensemble: node arrays, tree roots and the dense per-node target weights."""

    __slots__ = (
        "false_idx",
        "feature",
        "member_row",
        "member_sets",
        "missing_true",
        "mode",
        "n_targets",
        "roots",
        "threshold",
        "true_idx",
        "w_has",
        "w_node",
        "w_row",
        "w_sum",
        "w_target",
        "w_value",
    )

    def __init__(
        self,
        feature: np.ndarray,
        threshold: np.ndarray,
        mode: np.ndarray,
        true_idx: np.ndarray,
        false_idx: np.ndarray,
        missing_true: np.ndarray,
        roots: np.ndarray,
        n_targets: int,
        w_node: np.ndarray,
        w_target: np.ndarray,
        w_value: np.ndarray,
        member_sets: list[np.ndarray] | None = None,
    ) -> None:
        m = feature.size
        self.feature = feature.astype(np.int64)
        self.threshold = threshold.astype(np.float64)
        self.mode = mode.astype(np.int8)
        self.true_idx = true_idx.astype(np.int64)
        self.false_idx = false_idx.astype(np.int64)
        self.missing_true = missing_true.astype(bool)
        self.roots = roots.astype(np.int64)
        inner = self.mode != _LEAF
        for name, arr in (("true", self.true_idx), ("false", self.false_idx)):
            bad = inner & ((arr < 0) | (arr >= m))
            if bad.any():
                raise EvaluationError(f"tree ensemble: node {int(np.flatnonzero(bad)[0])} has no valid {name} child")
        if self.roots.size and (self.roots.min() < 0 or self.roots.max() >= m):
            raise EvaluationError("tree ensemble: a tree root is not a node")
        if inner.any() and self.feature[inner].min() < 0:
            raise EvaluationError("tree ensemble: negative feature id")
        # Set membership: row r of member_sets (NaN padded) is the set of the r-th BRANCH_MEMBER node.
        sets = member_sets or []
        self.member_row = np.full(m, -1, dtype=np.int64)
        members = np.flatnonzero(self.mode == _MEMBER)
        if members.size != len(sets):
            raise EvaluationError(f"tree ensemble: {members.size} BRANCH_MEMBER nodes but {len(sets)} member sets")
        self.member_row[members] = np.arange(members.size)
        width = max([s.size for s in sets] + [1])
        self.member_sets = np.full((len(sets), width), np.nan)
        for i, s in enumerate(sets):
            self.member_sets[i, : s.size] = s
        # Weights as dense rows over the targets, one row per node that carries weights plus a last,
        # empty row shared by every other node (w_row maps a node to its row).
        self.n_targets = n_targets
        if w_target.size and (w_target.min() < 0 or w_target.max() >= n_targets):
            bad = int(w_target[(w_target < 0) | (w_target >= n_targets)][0])
            raise EvaluationError(f"tree ensemble: a weight's target or class id {bad} is not in 0..{n_targets - 1}")
        if w_node.size and (w_node.min() < 0 or w_node.max() >= m):
            raise EvaluationError("tree ensemble: a weight refers to a node that does not exist")
        self.w_node, self.w_target, self.w_value = w_node, w_target, w_value.astype(np.float64)
        carriers = distinct(w_node)
        # The dense weight rows: a target count read from the model (Clause 15.2: refused before allocating).
        check_elements((carriers.size + 1, n_targets), "tree ensemble weights", itemsize=8)
        self.w_row = np.full(m, carriers.size, dtype=np.int64)
        self.w_row[carriers] = np.arange(carriers.size)
        rows = self.w_row[w_node]
        self.w_sum = np.zeros((carriers.size + 1, n_targets))
        np.add.at(self.w_sum, (rows, w_target), self.w_value)
        self.w_has = np.zeros((carriers.size + 1, n_targets), dtype=bool)
        self.w_has[rows, w_target] = True

    def _extreme(self, fn: Any, start: float) -> np.ndarray:
        """Per weight-row minimum or maximum of the weights (``start`` where a target has none)."""
        out = np.full(self.w_sum.shape, start)
        fn.at(out, (self.w_row[self.w_node], self.w_target), self.w_value)
        return out


class ForestParts(NamedTuple):
    """What a prepared TreeEnsembleRegressor/Classifier node is made of, for evaluating several that read one input
    with one walk (``kernels/fused/forests.py``).

    Attributes:
        forest: Its flattened trees.
        acc_dtype: The type its sums are made in.
        base: Its base_values (float64, at most ``width``).
        width: Its targets (regressor) or classes (classifier).
        finish_summed: Its outputs from its sums with ``base`` added, where that is how it computes them (a SUM
            regressor; a classifier whose every row gets a vote for every class); else None.
        finish_votes: Its outputs from its sums without ``base`` and its votes (a classifier); else None.
        as_is: ``finish_summed`` returns its sums themselves (a regressor without post transform, summing in
            float32).
        finish_key: Equal for two nodes whose ``finish_summed`` compute the same function of their rows (a row's
            outputs depend on that row alone): the members of a joined walk that share it are finished together,
            their rows stacked (None: finished alone).
    """

    forest: _Forest
    acc_dtype: np.dtype[Any]
    base: np.ndarray
    width: int
    finish_summed: Callable[[np.ndarray], Any] | None
    finish_votes: Callable[[np.ndarray, np.ndarray], Any] | None
    as_is: bool = False
    finish_key: Any = None


def _with_parts(run: Callable[[np.ndarray], Any], parts: ForestParts | None) -> Callable[[np.ndarray], Any]:
    """A prepared node's function ``run``, carrying its ``parts`` (None when it cannot join another's walk: an
    aggregate other than SUM) as an attribute: the plan calls the function itself, not a wrapper (a one-tree model's
    run at one row is about 5 us, of which a call layer is a few percent)."""
    setattr(run, _PARTS, parts)  # (a function's attribute, which mypy does not type)
    return run


_PARTS = "forest_parts"


def forest_parts(step: Any) -> ForestParts | None:
    """The parts of a prepared TreeEnsembleRegressor/Classifier node's function (its kernel's ``prepare``), else
    None (another function, or a node that cannot join another's walk)."""
    parts = getattr(step, _PARTS, None)
    return parts if isinstance(parts, ForestParts) else None


def combined_forest(forests: list[_Forest]) -> _Forest | None:
    """The ``forests`` as one whose targets are theirs side by side (forest ``e``'s target ``t`` is the sum of the
    targets before it plus ``t``), its trees theirs in order: one walk gives every forest's sums, each target's
    from its own forest's trees in their order (the same additions). None when one has set-membership nodes."""
    if any(f.member_sets.shape[0] for f in forests):
        return None
    node_off = np.cumsum([0] + [f.feature.size for f in forests[:-1]])
    target_off = np.cumsum([0] + [f.n_targets for f in forests[:-1]])

    def cat(name: str, offsets: Any = None) -> np.ndarray:
        parts = [getattr(f, name) for f in forests]
        if offsets is not None:
            parts = [p + o for p, o in zip(parts, offsets)]
        return np.concatenate(parts)

    return _Forest(
        cat("feature"),
        cat("threshold"),
        cat("mode"),
        cat("true_idx", node_off),
        cat("false_idx", node_off),
        cat("missing_true"),
        cat("roots", node_off),
        int(sum(f.n_targets for f in forests)),
        cat("w_node", node_off),
        cat("w_target", target_off),
        cat("w_value"),
    )


# ---------------------------------------------------------------------------------------------
# Legacy encoding (TreeEnsembleRegressor / TreeEnsembleClassifier): nodes named by (tree id, node id)
# ---------------------------------------------------------------------------------------------


def _ints(v: Any) -> np.ndarray:
    return np.asarray(v if v is not None else [], dtype=np.int64).ravel()


def _values(plain: list[float] | None, tensor: np.ndarray | None, name: str) -> np.ndarray:
    """FLOATS attribute (rounded to float32) or its ``*_as_tensor`` form (kept in its own type), as float64."""
    if tensor is not None and plain:
        raise EvaluationError(f"{name} and {name}_as_tensor are both set")
    if tensor is not None:
        return np.asarray(tensor).astype(np.float64).ravel()
    return np.asarray(plain or [], dtype=np.float32).astype(np.float64)


def _legacy_forest(attrs: dict[str, Any], prefix: str, n_targets: int, ids_name: str) -> tuple[_Forest, np.ndarray]:
    """Build a forest from the ``nodes_*`` attributes and the ``<prefix>_*`` leaf weights; return it and the
    weight ids (class or target of each weight)."""
    treeids = _ints(attrs.get("nodes_treeids"))
    nodeids = _ints(attrs.get("nodes_nodeids"))
    featureids = _ints(attrs.get("nodes_featureids"))
    trueids = _ints(attrs.get("nodes_truenodeids"))
    falseids = _ints(attrs.get("nodes_falsenodeids"))
    modes_s = list(attrs.get("nodes_modes") or [])
    thr = _values(attrs.get("nodes_values"), attrs.get("nodes_values_as_tensor"), "nodes_values")
    m = treeids.size
    if m == 0:
        raise EvaluationError("tree ensemble: no nodes")
    sizes = {nodeids.size, featureids.size, trueids.size, falseids.size, len(modes_s)}
    if sizes != {m} or thr.size not in (m,):
        raise EvaluationError("tree ensemble: the nodes_* attributes have different lengths")
    try:
        mode = np.asarray([_LEAF if s == "LEAF" else _MODES[s] for s in modes_s], dtype=np.int8)
    except KeyError as e:
        raise EvaluationError(f"tree ensemble: unknown node mode {e.args[0]!r}") from None
    mvt = _ints(attrs.get("nodes_missing_value_tracks_true"))
    missing = np.zeros(m, dtype=bool)
    missing[: min(m, mvt.size)] = mvt[:m] != 0
    # (tree id, node id) -> position, by sorting a combined key.
    lo = int(min(nodeids.min(), trueids.min(), falseids.min()))
    span = int(max(nodeids.max(), trueids.max(), falseids.max())) - lo + 1
    tlo = int(treeids.min())
    if (int(treeids.max()) - tlo + 1) * span >= 2**62:
        raise EvaluationError("tree ensemble: tree/node ids out of range")
    key = (treeids - tlo) * span + (nodeids - lo)
    order = np.argsort(key, kind="stable")
    skey = key[order]
    if skey.size > 1 and (np.diff(skey) == 0).any():
        raise EvaluationError("tree ensemble: a (tree id, node id) pair appears twice")

    def find(tree: np.ndarray, node: np.ndarray, what: str) -> np.ndarray:
        k = (tree - tlo) * span + (node - lo)
        pos = np.minimum(np.searchsorted(skey, k), skey.size - 1)
        found = skey[pos] == k
        if not found.all():
            raise EvaluationError(f"tree ensemble: {what} refers to a node that does not exist")
        return order[pos]

    inner = mode != _LEAF
    true_idx = np.full(m, -1, dtype=np.int64)
    false_idx = np.full(m, -1, dtype=np.int64)
    true_idx[inner] = find(treeids[inner], trueids[inner], "a true branch")
    false_idx[inner] = find(treeids[inner], falseids[inner], "a false branch")
    # A tree's root is its node that no node of the tree points to (the first listed such node).
    child = np.zeros(m, dtype=bool)
    child[true_idx[inner]] = True
    child[false_idx[inner]] = True
    _, first = np.unique(treeids, return_index=True)
    roots = []
    for tid in treeids[np.sort(first)]:
        cand = np.flatnonzero((treeids == tid) & ~child)
        if cand.size == 0:
            raise EvaluationError(f"tree ensemble: tree {int(tid)} has no root (a cycle)")
        roots.append(cand[0])
    w_tree = _ints(attrs.get(f"{prefix}_treeids"))
    w_node = _ints(attrs.get(f"{prefix}_nodeids"))
    w_ids = _ints(attrs.get(ids_name))
    w_val = _values(attrs.get(f"{prefix}_weights"), attrs.get(f"{prefix}_weights_as_tensor"), f"{prefix}_weights")
    if not (w_tree.size == w_node.size == w_ids.size == w_val.size):
        raise EvaluationError(f"tree ensemble: the {prefix}_* attributes have different lengths")
    w_pos = find(w_tree, w_node, f"a {prefix} weight") if w_tree.size else np.zeros(0, np.int64)
    # Weights attached to interior nodes take no part (no row ends there).
    forest = _Forest(
        featureids, thr, mode, true_idx, false_idx, missing, np.asarray(roots), n_targets, w_pos, w_ids, w_val
    )
    return forest, w_ids


def _weight_dtype(tensor: np.ndarray | None) -> Any:
    """The precision the leaf weights are summed in: double for a double tensor, else float (as onnxruntime)."""
    return np.float64 if tensor is not None and np.asarray(tensor).dtype == np.float64 else np.float32


def forest_rows(x: np.ndarray) -> np.ndarray:
    rows = as_rows(np.asarray(x))
    # float32 stays float32 (the compiled forest compares it exactly); everything else is read in float64.
    return rows if rows.dtype == np.float32 else rows.astype(np.float64)


def _base(plain: list[float] | None, tensor: np.ndarray | None) -> np.ndarray:
    return _values(plain, tensor, "base_values")


def _prepare_regressor(attrs: dict[str, Any]) -> Callable[[np.ndarray], np.ndarray]:
    post = check_post_transform(attrs.get("post_transform", "NONE"))
    agg = attrs.get("aggregate_function", "SUM")
    if agg not in _AGGREGATES:
        raise EvaluationError(f"unknown aggregate_function {agg!r} (one of {', '.join(_AGGREGATES)})")
    n_targets = attrs.get("n_targets")
    if n_targets is None:
        ids = _ints(attrs.get("target_ids"))
        n_targets = int(ids.max()) + 1 if ids.size else 1
    forest, _ = _legacy_forest(attrs, "target", int(n_targets), "target_ids")
    compiled = CompiledForest(forest, _weight_dtype(attrs.get("target_weights_as_tensor")))
    base = _base(attrs.get("base_values"), attrs.get("base_values_as_tensor"))
    if base.size and base.size != int(n_targets):
        raise EvaluationError(f"tree ensemble: {base.size} base_values for {int(n_targets)} targets")

    def finish(scores: np.ndarray) -> np.ndarray:
        if post == "NONE" and scores.dtype == np.float32:
            return scores  # (a fresh array; float32 -> float64 -> float32 would give the same values)
        return post_transform_rows(scores, post).astype(np.float32)

    def regress(x: np.ndarray) -> np.ndarray:
        rows = forest_rows(x)
        if agg == "SUM":
            scores = compiled.sum_plus(rows, base)  # (a small batch: walk, sums and base in one compiled call)
        else:
            scores, _ = compiled.aggregate(rows, agg, need_has=False)
            if base.size:
                scores += base
        return finish(scores)

    as_is = post == "NONE" and compiled.acc_dtype == np.float32
    parts = ForestParts(forest, compiled.acc_dtype, base, int(n_targets), finish, None, as_is) if agg == "SUM" else None
    return _with_parts(regress, parts)


_REGRESSOR_DOC = """Sum (or average, min, max) per target of the weights of the leaves reached, plus base_values,
    then the post transform; ``[N, n_targets]`` float32."""


def _prepare_regressor_1(**attrs: Any) -> Callable[[np.ndarray], np.ndarray]:
    for k in attrs:
        if k.endswith("_as_tensor"):
            raise EvaluationError(f"TreeEnsembleRegressor-1 has no attribute {k} (added in version 3)")
    return _prepare_regressor(attrs)


def _prepare_regressor_3(**attrs: Any) -> Callable[[np.ndarray], np.ndarray]:
    return _prepare_regressor(attrs)


@kernel("TreeEnsembleRegressor", 1, domain=ML, prepare=_prepare_regressor_1)
def tree_ensemble_regressor_1(x: np.ndarray, **attrs: Any) -> np.ndarray:
    return _prepare_regressor_1(**attrs)(x)


@kernel("TreeEnsembleRegressor", 3, 5, domain=ML, prepare=_prepare_regressor_3)
def tree_ensemble_regressor_3(x: np.ndarray, **attrs: Any) -> np.ndarray:
    return _prepare_regressor_3(**attrs)(x)


tree_ensemble_regressor_1.__doc__ = _REGRESSOR_DOC
tree_ensemble_regressor_3.__doc__ = _REGRESSOR_DOC + "\n\n    Version 3 adds the ``*_as_tensor`` (double) attributes."


def _prepare_classifier(attrs: dict[str, Any]) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    post = check_post_transform(attrs.get("post_transform", "NONE"))
    strings = bool(attrs.get("classlabels_strings"))
    if strings:
        labels: np.ndarray = string_array(encode_strings(attrs["classlabels_strings"]))
    elif attrs.get("classlabels_int64s"):
        labels = _ints(attrs["classlabels_int64s"])
    else:
        raise EvaluationError("TreeEnsembleClassifier: one of classlabels_int64s and classlabels_strings is required")
    k = labels.size
    forest, class_ids = _legacy_forest(attrs, "class", k, "class_ids")
    compiled = CompiledForest(forest, _weight_dtype(attrs.get("class_weights_as_tensor")))
    base = _base(attrs.get("base_values"), attrs.get("base_values_as_tensor"))
    if base.size > k:
        raise EvaluationError(f"TreeEnsembleClassifier: {base.size} base_values for {k} classes")
    w = _values(attrs.get("class_weights"), attrs.get("class_weights_as_tensor"), "class_weights")
    binary = distinct(class_ids).size == 1
    all_pos = bool((w >= 0).all())

    post_fn = _ROW_TRANSFORMS[post]
    # Every row gets a vote for every class (a tree all of whose leaves vote for each class): the top class is the
    # plain argmax, decided without the vote mask.
    all_vote = compiled.all_vote

    plain = all_vote and k != 2  # the votes are not read

    one_row = _ONE_ROW.get(post) if plain and k <= _ONE_ROW_CLASSES else None

    def finish_summed(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # (the plain case: the outputs from the sums, base_values added)
        if one_row is not None and scores.shape[0] == 1:
            done = one_row(scores, labels)
            if done is not None:
                return done
        if post == "NONE" and scores.dtype == np.float32:
            return labels[scores.argmax(axis=1)], scores  # float32 -> float64 -> float32 is exact
        return labels[scores.argmax(axis=1)], post_fn(scores).astype(np.float32)

    def finish_votes(scores: np.ndarray, has: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # (the outputs from the sums without base_values and the votes)
        if k != 2:
            return _multiclass(scores, has, base, labels, post)
        return _binary(scores, has, base, labels, post, binary, all_pos)

    def classify(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rows = forest_rows(x)
        if plain and rows.shape[0]:
            if one_row is _softmax_one_row and rows.shape[0] == 1:
                e = np.empty(k)
                found = compiled.sum_plus_shift(rows, base, e)
                if found is not None:
                    # The walk shifted the row into e (one compiled call); a NaN score takes the batch path.
                    scores, top = found
                    if top >= 0:
                        return _softmax_scaled(e, top, labels)
                    return labels[scores.argmax(axis=1)], post_fn(scores).astype(np.float32)
            return finish_summed(compiled.sum_plus(rows, base))
        scores, has = compiled.aggregate(rows, "SUM", need_has=not plain)
        return finish_votes(scores, has)

    # (an empty batch takes the votes' path in either case)
    # (what finish_summed depends on: the transform, the labels, the class count; base_values are added before it)
    key = ("classifier", post, k, labels.dtype.str, tuple(labels.tolist())) if plain else None
    return _with_parts(classify, ForestParts(forest, compiled.acc_dtype, base, k, finish_summed if plain else None,
                                             finish_votes, False, key))  # fmt: skip


def _softmax_rows(s: np.ndarray) -> np.ndarray:
    """:func:`onnxcore.kernels.ml.softmax_rows` (the same operations, so the same bits) in float64, by direct
    ufunc calls into one buffer: a 1-row call costs a few microseconds less."""
    if s.shape[1] == 0:
        return s if s.dtype == np.float64 else s.astype(np.float64)
    e = np.empty(s.shape)
    if s.dtype != np.float64:
        e[...] = s
        s = e
    np.subtract(s, row_max(s), out=e)
    np.exp(e, out=e)
    return np.divide(e, row_sum(e), out=e)


def _top_of_row(row: list[float]) -> int | None:
    """numpy's argmax of one row of scores (the first of the largest), or None when a score is NaN (or the sum of
    the scores is, as with infinities of both signs): such rows take the numpy path."""
    total = 0.0
    for v in row:
        total += v
    if total != total:
        return None
    return row.index(max(row))


def _softmax_one_row(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The top class and :func:`_softmax_rows` of a single row of at most :data:`_ONE_ROW_CLASSES` scores, then as
    float32, on Python floats with one numpy ``exp``: the same operations on the same float64 values (``s - max``,
    numpy's ``exp``, the sum from left to right as numpy adds fewer than eight values, the division, the rounding
    to float32), so the same bits, in a few microseconds less than the whole-array calls. None: the numpy path."""
    if accel.enabled():
        # Two compiled calls around numpy's exp (the same operations, fewer calls than on Python floats).
        e = np.empty(scores.shape[1])
        top = accel.jit_tree().tree_softmax_shift(scores, e)
        return None if top < 0 else _softmax_scaled(e, top, labels)
    row = scores.tolist()[0]
    best = _top_of_row(row)
    if best is None:
        return None
    m = row[best]
    e = np.array([v - m for v in row])
    np.exp(e, out=e)
    ev = e.tolist()
    total = 0.0
    for v in ev:
        total += v
    return labels[best : best + 1].copy(), np.array([[v / total for v in ev]], dtype=np.float32)


def _softmax_scaled(e: np.ndarray, top: int, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The end of :func:`_softmax_one_row` on the compiled path, from the shifted scores ``e`` and the top class:
    numpy's ``exp``, then the compiled division by the sum (the classifier's one-row path calls it after the walk's
    own shift, :meth:`~onnxcore.kernels._tree_eval.CompiledForest.sum_plus_shift`)."""
    np.exp(e, out=e)
    z = np.empty((1, e.size), np.float32)
    accel.jit_tree().tree_softmax_scale(e, z)
    return labels[top : top + 1].copy(), z


def _none_one_row(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The top class and the scores of a single row as float32 (post_transform NONE), without numpy's argmax."""
    best = _top_of_row(scores.tolist()[0])
    if best is None:
        return None
    z = scores if scores.dtype == np.float32 else scores.astype(np.float32)
    return labels[best : best + 1].copy(), z


# Classes up to which numpy's row sum adds left to right (from eight values on it adds pairwise).
_ONE_ROW_CLASSES = 7
# post_transform -> the single-row path of a classifier whose every row gets a vote for every class.
_ONE_ROW: dict[str, Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray] | None]] = {
    "SOFTMAX": _softmax_one_row,
    "NONE": _none_one_row,
}


def _none_rows(s: np.ndarray) -> np.ndarray:
    return s if s.dtype == np.float64 else s.astype(np.float64)


def _transform(name: str) -> Callable[[np.ndarray], np.ndarray]:
    return lambda s: post_transform_rows(s, name)


# post_transform name -> the row function, chosen once per node.
_ROW_TRANSFORMS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    name: _transform(name) for name in POST_TRANSFORMS
} | {"NONE": _none_rows, "SOFTMAX": _softmax_rows}


def _multiclass(
    scores: np.ndarray, has: np.ndarray, base: np.ndarray, labels: np.ndarray, post: str
) -> tuple[np.ndarray, np.ndarray]:
    n = scores.shape[0]
    if base.size:
        scores[:, : base.size] += base
        has[:, : base.size] = True
    # The top class is the best scoring among the classes some leaf (or a base value) scored.
    if has.all():
        best = np.argmax(scores, axis=1) if n else np.zeros(0, np.int64)
    else:
        best = np.argmax(np.where(has, scores, -np.inf), axis=1) if n else np.zeros(0, np.int64)
        best = np.where(has.any(axis=1), best, 0)
    z = post_transform_rows(scores, post)
    return labels[best], z.astype(np.float32)


def _binary(
    scores: np.ndarray, has: np.ndarray, base: np.ndarray, labels: np.ndarray, post: str, binary: bool, all_pos: bool
) -> tuple[np.ndarray, np.ndarray]:
    # Two classes. A forest voting for one class only is a binary model: its score is that class's.
    n = scores.shape[0]
    s0, s1 = scores[:, 0].copy(), scores[:, 1].copy()
    if base.size == 2:
        s0 += base[0]
        s1 += base[1]
        two = np.ones(n, dtype=bool)
    else:
        if base.size == 1:
            s0 += base[0]
        two = has[:, 1].copy()
    pos = np.where(has[:, 1], s1, np.where(has[:, 0], s0, 0.0))
    if binary and all_pos:
        win = pos > 0.5
    else:
        win = pos > 0
    z = np.zeros((n, 2))
    if two.any():
        z[two] = post_transform_rows(np.stack([s0[two], s1[two]], axis=1), post)
    one = ~two
    if one.any():
        s = s0[one]
        if post == "PROBIT":
            z[one, 0] = probit(s)
        elif binary and all_pos:
            z[one] = np.stack([1.0 - s, s], axis=1)
        elif binary or base.size == 0:
            z[one] = np.stack([sigmoid(-s), sigmoid(s)], axis=1) if post == "LOGISTIC" else np.stack([-s, s], axis=1)
        else:
            z[one, 0] = s
    return labels[win.astype(np.int64)], z.astype(np.float32)


_CLASSIFIER_DOC = """Per class, the sum of the weights of the leaves reached plus base_values; the top class and
    the (post-transformed) class scores ``[N, E]``."""


def _prepare_classifier_1(**attrs: Any) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    for k in attrs:
        if k.endswith("_as_tensor"):
            raise EvaluationError(f"TreeEnsembleClassifier-1 has no attribute {k} (added in version 3)")
    return _prepare_classifier(attrs)


def _prepare_classifier_3(**attrs: Any) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    return _prepare_classifier(attrs)


@kernel("TreeEnsembleClassifier", 1, domain=ML, prepare=_prepare_classifier_1)
def tree_ensemble_classifier_1(x: np.ndarray, **attrs: Any) -> tuple[np.ndarray, np.ndarray]:
    return _prepare_classifier_1(**attrs)(x)


@kernel("TreeEnsembleClassifier", 3, 5, domain=ML, prepare=_prepare_classifier_3)
def tree_ensemble_classifier_3(x: np.ndarray, **attrs: Any) -> tuple[np.ndarray, np.ndarray]:
    return _prepare_classifier_3(**attrs)(x)


tree_ensemble_classifier_1.__doc__ = _CLASSIFIER_DOC
tree_ensemble_classifier_3.__doc__ = _CLASSIFIER_DOC + "\n\n    Version 3 adds the ``*_as_tensor`` (double) attributes."


# ---------------------------------------------------------------------------------------------
# TreeEnsemble (5): interior nodes and leaves in separate arrays, modes and splits as tensors
# ---------------------------------------------------------------------------------------------


def _prepare_tree_ensemble(
    *,
    nodes_featureids: list[int],
    nodes_modes: np.ndarray,
    nodes_splits: np.ndarray,
    nodes_truenodeids: list[int],
    nodes_falsenodeids: list[int],
    nodes_trueleafs: list[int],
    nodes_falseleafs: list[int],
    leaf_targetids: list[int],
    leaf_weights: np.ndarray,
    tree_roots: list[int],
    aggregate_function: int = 1,
    post_transform: int = 0,
    n_targets: int | None = None,
    nodes_hitrates: np.ndarray | None = None,
    nodes_missing_value_tracks_true: list[int] | None = None,
    membership_values: np.ndarray | None = None,
) -> Callable[[np.ndarray], np.ndarray]:
    """Aggregate per target the weights of the leaves reached (AVERAGE 0, SUM 1, MIN 2, MAX 3), then the post
    transform (NONE 0, SOFTMAX 1, LOGISTIC 2, SOFTMAX_ZERO 3, PROBIT 4); ``[N, n_targets]`` in X's type.

    BRANCH_MEMBER nodes (mode 6) test membership in their set of ``membership_values`` (sets listed in
    node order, separated by NaN).
    """
    if not 0 <= aggregate_function < len(_AGGREGATES):
        raise EvaluationError(f"TreeEnsemble: aggregate_function {aggregate_function} is not in 0..3")
    if not 0 <= post_transform < len(POST_TRANSFORMS):
        raise EvaluationError(f"TreeEnsemble: post_transform {post_transform} is not in 0..4")
    # Enumeration of the definition: 0 NONE, 1 SOFTMAX, 2 LOGISTIC, 3 SOFTMAX_ZERO, 4 PROBIT.
    post = POST_TRANSFORMS[post_transform]
    feat = _ints(nodes_featureids)
    m = feat.size
    modes = np.asarray(nodes_modes).astype(np.int64).ravel()
    splits = np.asarray(nodes_splits).astype(np.float64).ravel()
    t_ids, f_ids = _ints(nodes_truenodeids), _ints(nodes_falsenodeids)
    t_leaf, f_leaf = _ints(nodes_trueleafs) != 0, _ints(nodes_falseleafs) != 0
    if {modes.size, splits.size, t_ids.size, f_ids.size, t_leaf.size, f_leaf.size} != {m}:
        raise EvaluationError("TreeEnsemble: the nodes_* attributes have different lengths")
    if modes.size and (modes.min() < 0 or modes.max() > _MEMBER):
        raise EvaluationError("TreeEnsemble: a node mode is not in 0..6")
    targets = _ints(leaf_targetids)
    weights = np.asarray(leaf_weights).astype(np.float64).ravel()
    n_leaf = targets.size
    if weights.size != n_leaf:
        raise EvaluationError("TreeEnsemble: leaf_targetids and leaf_weights have different lengths")
    for name, ids, is_leaf in (("true", t_ids, t_leaf), ("false", f_ids, f_leaf)):
        bound = np.where(is_leaf, n_leaf, m)
        if ((ids < 0) | (ids >= bound)).any():
            raise EvaluationError(f"TreeEnsemble: a {name} branch points outside the nodes/leaves")
    # One node space: interior nodes 0..m-1, then leaves m..m+L-1.
    total = m + n_leaf
    feature = np.concatenate([feat, np.zeros(n_leaf, np.int64)])
    threshold = np.concatenate([splits, np.zeros(n_leaf)])
    mode = np.concatenate([modes, np.full(n_leaf, _LEAF)])
    true_idx = np.concatenate([np.where(t_leaf, t_ids + m, t_ids), np.full(n_leaf, -1)])
    false_idx = np.concatenate([np.where(f_leaf, f_ids + m, f_ids), np.full(n_leaf, -1)])
    mvt = _ints(nodes_missing_value_tracks_true)
    missing = np.zeros(total, dtype=bool)
    missing[: min(m, mvt.size)] = mvt[:m] != 0
    sets: list[np.ndarray] = []
    n_member = int((modes == _MEMBER).sum())
    if n_member:
        if membership_values is None:
            raise EvaluationError("TreeEnsemble: BRANCH_MEMBER nodes need membership_values")
        mv = np.asarray(membership_values).astype(np.float64).ravel()
        cuts = np.flatnonzero(np.isnan(mv))
        parts = np.split(mv, cuts)
        sets = [parts[0]] + [p[1:] for p in parts[1:]]
        # A trailing NaN ends the last set rather than opening an empty one.
        if len(sets) == n_member + 1 and sets[-1].size == 0:
            sets = sets[:-1]
        if len(sets) != n_member:
            raise EvaluationError(f"TreeEnsemble: {len(sets)} membership sets for {n_member} BRANCH_MEMBER nodes")
    if n_targets is None:
        n_targets = int(targets.max()) + 1 if targets.size else 1
    roots = _ints(tree_roots)
    if roots.size and (roots.min() < 0 or roots.max() >= m):
        raise EvaluationError("TreeEnsemble: a tree root is not an interior node")
    forest = _Forest(
        feature,
        threshold,
        mode,
        true_idx,
        false_idx,
        missing,
        roots,
        int(n_targets),
        np.arange(m, total, dtype=np.int64),
        targets,
        weights,
        sets,
    )
    compiled = CompiledForest(forest, _weight_dtype(leaf_weights))
    agg = _AGGREGATES[aggregate_function]

    def evaluate(x: np.ndarray) -> np.ndarray:
        xa = np.asarray(x)
        if xa.ndim != 2:
            raise EvaluationError(f"TreeEnsemble: X must be [N, F], got shape {xa.shape}")
        rows = xa if xa.dtype == np.float32 else xa.astype(np.float64)
        scores, _ = compiled.aggregate(rows, agg, need_has=False)
        return post_transform_rows(scores, post).astype(xa.dtype)

    return evaluate


@kernel("TreeEnsemble", 5, domain=ML, prepare=_prepare_tree_ensemble)
def tree_ensemble(
    x: np.ndarray,
    *,
    nodes_featureids: list[int],
    nodes_modes: np.ndarray,
    nodes_splits: np.ndarray,
    nodes_truenodeids: list[int],
    nodes_falsenodeids: list[int],
    nodes_trueleafs: list[int],
    nodes_falseleafs: list[int],
    leaf_targetids: list[int],
    leaf_weights: np.ndarray,
    tree_roots: list[int],
    aggregate_function: int = 1,
    post_transform: int = 0,
    n_targets: int | None = None,
    nodes_hitrates: np.ndarray | None = None,
    nodes_missing_value_tracks_true: list[int] | None = None,
    membership_values: np.ndarray | None = None,
) -> np.ndarray:
    """Aggregate per target the weights of the leaves reached (AVERAGE 0, SUM 1, MIN 2, MAX 3), then the post
    transform (NONE 0, SOFTMAX 1, LOGISTIC 2, SOFTMAX_ZERO 3, PROBIT 4); ``[N, n_targets]`` in X's type.

    BRANCH_MEMBER nodes (mode 6) test membership in their set of ``membership_values`` (sets listed in
    node order, separated by NaN).
    """
    return _prepare_tree_ensemble(
        nodes_featureids=nodes_featureids,
        nodes_modes=nodes_modes,
        nodes_splits=nodes_splits,
        nodes_truenodeids=nodes_truenodeids,
        nodes_falsenodeids=nodes_falsenodeids,
        nodes_trueleafs=nodes_trueleafs,
        nodes_falseleafs=nodes_falseleafs,
        leaf_targetids=leaf_targetids,
        leaf_weights=leaf_weights,
        tree_roots=tree_roots,
        aggregate_function=aggregate_function,
        post_transform=post_transform,
        n_targets=n_targets,
        nodes_hitrates=nodes_hitrates,
        nodes_missing_value_tracks_true=nodes_missing_value_tracks_true,
        membership_values=membership_values,
    )(x)
