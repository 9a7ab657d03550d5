"""Consistency of the ``ai.onnx.ml`` operators' attributes (Clause 7.3.1: a node's attributes SHALL satisfy the
signature of its operator as ONNX 1-2 defines it).

The definitions size their attribute lists against each other and against the input: a linear classifier's
coefficients are classes x features, an SVM's support vectors are ``sum(vectors_per_class)`` x features, a tree
ensemble's ``nodes_*`` arrays describe one node per position, a label encoder's keys and values pair up. A model that
breaks one of these relations cannot be evaluated as defined (onnxcore's kernels refuse it at run time; onnxruntime
reads past or around the arrays, see docs/validation.md), so each relation is an error here, one rule per operator,
naming the attribute. The features are the input's last extent when it is statically known (declared or inferred,
Clause 9; a quick check, ``full=False``, compares the attributes with each other only); nothing is reported from an
unknown extent.
"""

from __future__ import annotations

from onnxcore.validate.catalog import rule
from onnxcore.validate.context import Context, NodeRef
from onnxcore.validate.sized import Attrs, Found, features, nodes_of, one_of, same_length

__all__: list[str] = []

ML = "ai.onnx.ml"
CLAUSE = "7.3.1"


def _labels(at: Attrs, *names: str) -> int | None:
    got = at.first_size(*names)
    return got[1] if got is not None and got[1] > 0 else None


def _features_note(f: int) -> str:
    return f"{f} features (the input's last extent)"


# ---- linear models ------------------------------------------------------------------------------------


@rule(
    "E-ML-LINEAR-CLASSIFIER",
    CLAUSE,
    "LinearClassifier: coefficients that are not classes x features, or intercepts not one per class",
)
def linear_classifier(ctx: Context) -> Found:
    for ref in nodes_of(ctx, ML, "LinearClassifier"):
        at = Attrs(ref)
        yield from one_of(at, ("classlabels_ints", "classlabels_strings"), required=False)
        classes = _labels(at, "classlabels_ints", "classlabels_strings")
        n = at.size("coefficients")
        e = at.size("intercepts") or None
        f = features(ctx, ref)
        if e is not None and classes is not None and e != classes and not (e == 1 and classes == 2):
            yield at.where("intercepts"), f"LinearClassifier: {e} intercepts for {classes} class labels"
        if n is None:
            continue
        if n == 0:
            yield at.where("coefficients"), "LinearClassifier: coefficients is empty"
            continue
        if f is not None and f > 0:
            rows, rest = divmod(n, f)
            if rest:
                yield (
                    at.where("coefficients"),
                    f"LinearClassifier: {n} coefficients are not whole rows of {_features_note(f)}",
                )
            elif e is not None and rows != e:
                yield (
                    at.where("coefficients"),
                    f"LinearClassifier: {n} coefficients for {e} classes (intercepts) x {_features_note(f)}: "
                    f"{e * f} expected",
                )
            elif e is None and classes is not None and rows != classes and not (rows == 1 and classes == 2):
                yield (
                    at.where("coefficients"),
                    f"LinearClassifier: {n} coefficients for {classes} classes (labels) x {_features_note(f)}: "
                    f"{classes * f} expected",
                )
        elif e is not None and n % e:
            yield at.where("coefficients"), f"LinearClassifier: {n} coefficients are not {e} classes (intercepts) x k"


@rule(
    "E-ML-LINEAR-REGRESSOR",
    CLAUSE,
    "LinearRegressor: coefficients that are not targets x features, or intercepts not one per target",
)
def linear_regressor(ctx: Context) -> Found:
    for ref in nodes_of(ctx, ML, "LinearRegressor"):
        at = Attrs(ref)
        targets = at.int("targets", 1)
        if targets < 1:
            yield at.where("targets"), f"LinearRegressor: targets is {targets}; at least 1"
            continue
        n = at.size("coefficients")
        f = features(ctx, ref)
        if n is not None:
            if f is not None and n != targets * f:
                yield (
                    at.where("coefficients"),
                    f"LinearRegressor: {n} coefficients for {targets} targets x {_features_note(f)}: "
                    f"{targets * f} expected",
                )
            elif f is None and n % targets:
                yield at.where("coefficients"), f"LinearRegressor: {n} coefficients are not {targets} targets x k"
        e = at.size("intercepts")
        if e and e not in (1, targets):
            yield at.where("intercepts"), f"LinearRegressor: {e} intercepts for {targets} targets"


# ---- support vector machines --------------------------------------------------------------------------------


@rule(
    "E-ML-SVM-CLASSIFIER",
    CLAUSE,
    "SVMClassifier: support vectors, coefficients, rho or prob_a/prob_b that do not fit the classes, "
    "vectors_per_class and features",
)
def svm_classifier(ctx: Context) -> Found:
    for ref in nodes_of(ctx, ML, "SVMClassifier"):
        yield from _svm_classifier(ctx, ref, Attrs(ref))


def _svm_classifier(ctx: Context, ref: NodeRef, at: Attrs) -> Found:
    labels = ("classlabels_ints", "classlabels_strings")
    found = list(one_of(at, labels))
    yield from found
    k = _labels(at, *labels)
    if found or k is None:
        return
    f = features(ctx, ref)
    vpc = at.ints("vectors_per_class") or []
    n = at.size("coefficients") or 0
    pairs = k * (k - 1) // 2
    yield from same_length(at, ("prob_a", "prob_b"), "the pairwise probability parameters")
    pa = at.size("prob_a") or 0
    if pa and pa != pairs:
        yield at.where("prob_a"), f"SVMClassifier: {pa} prob_a values for {k} classes: {pairs} pairs expected"
    if not vpc:
        # liblinear's layout: one row of coefficients per class.
        if f is not None and n != k * f:
            yield (
                at.where("coefficients"),
                f"SVMClassifier: {n} coefficients for {k} classes x {_features_note(f)} (no support vectors): "
                f"{k * f} expected",
            )
        elif f is None and n % k:
            yield at.where("coefficients"), f"SVMClassifier: {n} coefficients are not {k} classes x k"
        return
    if len(vpc) != k or any(v < 0 for v in vpc):
        yield (
            at.where("vectors_per_class"),
            f"SVMClassifier: vectors_per_class has {len(vpc)} values for {k} classes (each a count >= 0)",
        )
        return
    vectors = sum(vpc)
    sv = at.size("support_vectors") or 0
    if f is not None and sv != vectors * f:
        yield (
            at.where("support_vectors"),
            f"SVMClassifier: support_vectors has {sv} values for {vectors} vectors (vectors_per_class) x "
            f"{_features_note(f)}: {vectors * f} expected",
        )
    elif f is None and vectors and sv % vectors:
        yield at.where("support_vectors"), f"SVMClassifier: support_vectors has {sv} values, not {vectors} vectors x k"
    if n != (k - 1) * vectors:
        yield (
            at.where("coefficients"),
            f"SVMClassifier: {n} coefficients for {k} classes and {vectors} vectors: (classes - 1) x vectors = "
            f"{(k - 1) * vectors} expected",
        )
    rho = at.size("rho") or 0
    if rho != pairs:
        yield at.where("rho"), f"SVMClassifier: {rho} rho values for {k} classes: one per pair of classes, {pairs}"


@rule(
    "E-ML-SVM-REGRESSOR",
    CLAUSE,
    "SVMRegressor: support vectors or coefficients that do not fit n_supports and the features",
)
def svm_regressor(ctx: Context) -> Found:
    for ref in nodes_of(ctx, ML, "SVMRegressor"):
        at = Attrs(ref)
        s = at.int("n_supports", 0)
        f = features(ctx, ref)
        n = at.size("coefficients") or 0
        sv = at.size("support_vectors") or 0
        if s < 0:
            yield at.where("n_supports"), f"SVMRegressor: n_supports is {s}"
            continue
        if s == 0:
            if f is not None and n != f:
                yield (
                    at.where("coefficients"),
                    f"SVMRegressor: {n} coefficients for {_features_note(f)} (n_supports is 0): {f} expected",
                )
            continue
        if f is not None and sv != s * f:
            yield (
                at.where("support_vectors"),
                f"SVMRegressor: support_vectors has {sv} values for {s} vectors (n_supports) x {_features_note(f)}: "
                f"{s * f} expected",
            )
        elif f is None and sv % s:
            yield at.where("support_vectors"), f"SVMRegressor: support_vectors has {sv} values, not {s} vectors x k"
        if n != s:
            yield at.where("coefficients"), f"SVMRegressor: {n} coefficients for {s} support vectors (n_supports)"


# ---- tree ensembles -------------------------------------------------------------------------------------------

_NODES = (
    "nodes_treeids",
    "nodes_nodeids",
    "nodes_featureids",
    "nodes_modes",
    "nodes_values",
    "nodes_values_as_tensor",
    "nodes_truenodeids",
    "nodes_falsenodeids",
)
# Optional per-node arrays: empty means not used.
_NODES_OPTIONAL = ("nodes_missing_value_tracks_true", "nodes_hitrates", "nodes_hitrates_as_tensor")


def _optional_same(at: Attrs, names: tuple[str, ...], reference: str, what: str) -> Found:
    n0 = at.size(reference)
    if n0 is None:
        return
    for name in names:
        n = at.size(name)
        if n and n != n0:
            yield at.where(name), f"{at.label()}: {name} has {n} values, {reference} has {n0}: {what}"


def _ids_below(at: Attrs, name: str, bound: int, what: str) -> Found:
    ids = at.ints(name)
    if ids and (min(ids) < 0 or max(ids) >= bound):
        bad = [v for v in ids if v < 0 or v >= bound]
        if bad:
            yield at.where(name), f"{at.label()}: {name} holds {bad[0]}, outside [0, {bound}) ({what})"


def _feature_ids(ctx: Context, ref: NodeRef, at: Attrs) -> Found:
    f = features(ctx, ref)
    if f is None:
        return
    ids = at.ints("nodes_featureids") or []
    if not ids or (min(ids) >= 0 and max(ids) < f):
        return  # every id in range, a leaf's too (a forest of 10^5 nodes, checked at C speed)
    a = at.get("nodes_modes")
    modes = [bytes(m) for m in a.strings] if a is not None and len(a.strings) == len(ids) else [b""] * len(ids)
    for fid, mode in zip(ids, modes):
        if mode != b"LEAF" and not 0 <= fid < f:
            yield (
                at.where("nodes_featureids"),
                f"{at.label()}: nodes_featureids holds {fid}, outside the {_features_note(f)}",
            )
            return


def _tree_nodes(ctx: Context, ref: NodeRef, at: Attrs) -> Found:
    yield from same_length(at, _NODES, "one value per node")
    yield from _optional_same(at, _NODES_OPTIONAL, "nodes_nodeids", "one value per node")
    yield from _feature_ids(ctx, ref, at)


@rule(
    "E-ML-TREE-CLASSIFIER",
    CLAUSE,
    "TreeEnsembleClassifier: nodes_* or class_* arrays of unequal lengths, class ids outside the labels, "
    "base values not one per class, feature ids outside the features",
)
def tree_classifier(ctx: Context) -> Found:
    for ref in nodes_of(ctx, ML, "TreeEnsembleClassifier"):
        at = Attrs(ref)
        yield from _tree_nodes(ctx, ref, at)
        names = ("class_treeids", "class_nodeids", "class_ids", "class_weights", "class_weights_as_tensor")
        yield from same_length(at, names, "one value per leaf weight")
        labels = ("classlabels_int64s", "classlabels_strings")
        found = list(one_of(at, labels))
        yield from found
        k = _labels(at, *labels)
        if found or k is None:
            continue
        yield from _ids_below(at, "class_ids", k, f"{k} class labels")
        b = at.first_size("base_values", "base_values_as_tensor")
        if b is not None and b[1] and b[1] != k and not (b[1] == 1 and k == 2):
            yield at.where(b[0]), f"TreeEnsembleClassifier: {b[1]} {b[0]} for {k} class labels"


@rule(
    "E-ML-TREE-REGRESSOR",
    CLAUSE,
    "TreeEnsembleRegressor: nodes_* or target_* arrays of unequal lengths, target ids or base values that do not "
    "fit n_targets, feature ids outside the features",
)
def tree_regressor(ctx: Context) -> Found:
    for ref in nodes_of(ctx, ML, "TreeEnsembleRegressor"):
        at = Attrs(ref)
        yield from _tree_nodes(ctx, ref, at)
        names = ("target_treeids", "target_nodeids", "target_ids", "target_weights", "target_weights_as_tensor")
        yield from same_length(at, names, "one value per leaf weight")
        t = at.int("n_targets", 1)
        if t < 1:
            yield at.where("n_targets"), f"TreeEnsembleRegressor: n_targets is {t}; at least 1"
            continue
        yield from _ids_below(at, "target_ids", t, f"n_targets is {t}")
        b = at.first_size("base_values", "base_values_as_tensor")
        if b is not None and b[1] and b[1] != t:
            yield at.where(b[0]), f"TreeEnsembleRegressor: {b[1]} {b[0]} for {t} targets (n_targets)"


@rule(
    "E-ML-TREE-ENSEMBLE",
    CLAUSE,
    "TreeEnsemble: nodes_* or leaf_* arrays of unequal lengths, roots, children or target ids out of range, "
    "feature ids outside the features",
)
def tree_ensemble(ctx: Context) -> Found:
    for ref in nodes_of(ctx, ML, "TreeEnsemble"):
        at = Attrs(ref)
        nodes = (
            "nodes_featureids",
            "nodes_splits",
            "nodes_modes",
            "nodes_truenodeids",
            "nodes_trueleafs",
            "nodes_falsenodeids",
            "nodes_falseleafs",
        )
        found = list(same_length(at, nodes, "one value per interior node"))
        found += _optional_same(at, ("nodes_missing_value_tracks_true", "nodes_hitrates"), nodes[0], "one per node")
        found += same_length(at, ("leaf_targetids", "leaf_weights"), "one value per leaf")
        yield from found
        if found:
            continue
        n_nodes, n_leaves = at.size("nodes_featureids") or 0, at.size("leaf_targetids") or 0
        yield from _ids_below(at, "tree_roots", n_nodes, f"{n_nodes} interior nodes")
        t = at.int("n_targets", 1)
        yield from _ids_below(at, "leaf_targetids", max(t, 1), f"n_targets is {t}")
        for side in ("true", "false"):
            ids, leafs = at.ints(f"nodes_{side}nodeids") or [], at.ints(f"nodes_{side}leafs") or []
            for child, leaf in zip(ids, leafs):
                bound = n_leaves if leaf else n_nodes
                if not 0 <= child < bound:
                    what = "leaves" if leaf else "interior nodes"
                    yield (
                        at.where(f"nodes_{side}nodeids"),
                        f"TreeEnsemble: nodes_{side}nodeids holds {child}, outside the {bound} {what}",
                    )
                    break
        f = features(ctx, ref)
        ids = at.ints("nodes_featureids") or []
        if f is not None and any(not 0 <= v < f for v in ids):
            bad = next(v for v in ids if not 0 <= v < f)
            yield (
                at.where("nodes_featureids"),
                f"TreeEnsemble: nodes_featureids holds {bad}, outside the " + (_features_note(f)),
            )


# ---- per-feature transforms ---------------------------------------------------------------------------------


def _per_feature(ctx: Context, ref: NodeRef, at: Attrs, names: tuple[str, ...]) -> Found:
    f = features(ctx, ref)
    sizes = [(n, at.size(n)) for n in names]
    for name, n in sizes:
        if n is not None and f is not None and n not in (1, f):
            yield at.where(name), f"{at.label()}: {name} has {n} values for {_features_note(f)}: 1 or {f} expected"
            return
    given = [(name, n) for name, n in sizes if n is not None and n > 1]
    if len(given) == 2 and given[0][1] != given[1][1]:
        name, n = given[1]
        yield at.where(name), f"{at.label()}: {name} has {n} values, {given[0][0]} has {given[0][1]}"


@rule("E-ML-SCALER", CLAUSE, "Scaler: offset or scale not of 1 value or one per feature (or of different lengths)")
def scaler(ctx: Context) -> Found:
    for ref in nodes_of(ctx, ML, "Scaler"):
        yield from _per_feature(ctx, ref, Attrs(ref), ("offset", "scale"))


@rule(
    "E-ML-IMPUTER",
    CLAUSE,
    "Imputer: both or neither imputed_value_floats and imputed_value_int64s, or not of 1 value or one per feature",
)
def imputer(ctx: Context) -> Found:
    for ref in nodes_of(ctx, ML, "Imputer"):
        at = Attrs(ref)
        names = ("imputed_value_floats", "imputed_value_int64s")
        found = list(one_of(at, names))
        yield from found
        if not found:
            yield from _per_feature(ctx, ref, at, names)


# ---- maps from labels to labels -------------------------------------------------------------------------------

_KEYS = ("keys_strings", "keys_int64s", "keys_floats", "keys_tensor")
_VALUES = ("values_strings", "values_int64s", "values_floats", "values_tensor")


@rule("E-ML-LABEL-ENCODER", CLAUSE, "LabelEncoder: keys and values not one kind each, or of unequal lengths")
def label_encoder(ctx: Context) -> Found:
    for ref in nodes_of(ctx, ML, "LabelEncoder"):
        at = Attrs(ref)
        if ref.schema is not None and ref.schema.since_version < 2:
            continue  # version 1 maps through classes_strings alone
        found = [*one_of(at, _KEYS), *one_of(at, _VALUES)]
        yield from found
        if found:
            continue
        (key,) = at.given(*_KEYS)
        (value,) = at.given(*_VALUES)
        yield from same_length(at, (key, value), "keys and values pair up")


@rule("E-ML-CATEGORY-MAPPER", CLAUSE, "CategoryMapper: cats_strings and cats_int64s of unequal lengths")
def category_mapper(ctx: Context) -> Found:
    for ref in nodes_of(ctx, ML, "CategoryMapper"):
        yield from same_length(Attrs(ref), ("cats_strings", "cats_int64s"), "the two lists pair up")


@rule(
    "E-ML-ZIPMAP",
    CLAUSE,
    "ZipMap: both or neither classlabels_strings and classlabels_int64s, or labels not one per input column",
)
def zipmap(ctx: Context) -> Found:
    for ref in nodes_of(ctx, ML, "ZipMap"):
        at = Attrs(ref)
        names = ("classlabels_strings", "classlabels_int64s")
        found = list(one_of(at, names))
        yield from found
        k = _labels(at, *names)
        f = features(ctx, ref)
        if not found and k is not None and f is not None and k != f:
            (name,) = at.given(*names)
            yield at.where(name), f"ZipMap: {k} labels in {name} for an input of {f} columns (its last extent)"


@rule("E-ML-DICT-VECTORIZER", CLAUSE, "DictVectorizer: both or neither string_vocabulary and int64_vocabulary")
def dict_vectorizer(ctx: Context) -> Found:
    for ref in nodes_of(ctx, ML, "DictVectorizer"):
        yield from one_of(Attrs(ref), ("string_vocabulary", "int64_vocabulary"))


@rule("E-ML-ONE-HOT-ENCODER", CLAUSE, "OneHotEncoder: both or neither cats_strings and cats_int64s")
def one_hot_encoder(ctx: Context) -> Found:
    for ref in nodes_of(ctx, ML, "OneHotEncoder"):
        yield from one_of(Attrs(ref), ("cats_strings", "cats_int64s"))


@rule("E-ML-FEATURE-VECTORIZER", CLAUSE, "FeatureVectorizer: inputdimensions not one per input")
def feature_vectorizer(ctx: Context) -> Found:
    for ref in nodes_of(ctx, ML, "FeatureVectorizer"):
        at = Attrs(ref)
        n = at.size("inputdimensions")
        inputs = len(ref.node.input)
        if n is not None and n != inputs:
            yield at.where("inputdimensions"), f"FeatureVectorizer: {n} inputdimensions for {inputs} inputs"
