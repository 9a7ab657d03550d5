"""Mutants of the attribute-consistency rules (``rules_ml``, ``rules_sized``): for each operator, a model that is
consistent (``Case.good``) and the same model with one attribute resized (``Case.bad``), which breaks the rule of
that operator and no other. Used by ``mutants.py`` (the mutation suite) and ``test_rules_ml.py``.

Node attributes are written by ``onnx.helper.make_node``, which sorts them by name: the location of the attribute
a finding names is its position in that order.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import onnxcore
from onnxcore.proto.messages import ModelProto

__all__ = ["CASES", "Case"]

ML = "ai.onnx.ml"


@dataclasses.dataclass(frozen=True)
class Case:
    """One operator's consistent attributes and the change that breaks its rule.

    Attributes:
        code: The rule.
        op: The operator (``domain``: ai.onnx.ml unless ``domain`` says otherwise).
        attrs: Consistent attributes.
        change: Attributes replaced (or, with value None, removed) to break the rule.
        blamed: The attribute the finding names (its location), or None for the node itself.
        what: What was changed, for the docs table.
        x: Element type and shape of the input ``x`` (None: the node takes no input).
        outputs: (name, element type, shape) of each output (a shape None: a sequence of maps, ZipMap's).
        domain: The operator's domain.
        feed: A value of ``x`` to run the consistent model on.
    """

    code: str
    op: str
    attrs: dict[str, Any]
    change: dict[str, Any]
    blamed: str | None
    what: str
    x: tuple[Any, list[int | str]] | None
    outputs: tuple[tuple[str, int, list[int | str] | None], ...]
    domain: str = ML
    feed: Any = None

    def model(self, bad: bool) -> ModelProto:
        """The model, consistent or (``bad``) broken, as onnxcore's record classes."""
        attrs = {**self.attrs, **(self.change if bad else {})}
        attrs = {k: v for k, v in attrs.items() if v is not None}
        node = helper.make_node(
            self.op, ["x"] if self.x else [], [o[0] for o in self.outputs], "n", domain=self.domain, **attrs
        )
        outs = []
        for name, elem, shape in self.outputs:
            if shape is None:
                key = T.INT64 if "classlabels_int64s" in attrs else T.STRING
                tp = helper.make_sequence_type_proto(
                    helper.make_map_type_proto(key, helper.make_tensor_type_proto(T.FLOAT, []))
                )
                outs.append(helper.make_value_info(name, tp))
            else:
                outs.append(helper.make_tensor_value_info(name, elem, shape))
        ins = []
        if self.x and self.x[0] == "map":  # DictVectorizer's input: a map from strings to floats
            map_type = helper.make_map_type_proto(T.STRING, helper.make_tensor_type_proto(T.FLOAT, []))
            ins = [helper.make_value_info("x", map_type)]
        elif self.x:
            ins = [helper.make_tensor_value_info("x", self.x[0], self.x[1])]
        g = helper.make_graph([node], "g", ins, outs)
        opsets = [helper.make_opsetid("", 17), helper.make_opsetid(ML, 3 if self.op != "TreeEnsemble" else 5)]
        m = helper.make_model(g, opset_imports=opsets, ir_version=10)
        return onnxcore.decode(ModelProto, m.SerializeToString())

    def location(self) -> str:
        """Where the finding must point."""
        if self.blamed is None:
            return 'graph/node[0] "n"'
        names = sorted(k for k, v in {**self.attrs, **self.change}.items() if v is not None)
        return f'graph/node[0] "n"/attribute[{names.index(self.blamed)}] "{self.blamed}"'


def _f(rows: int, cols: int) -> np.ndarray:
    return np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) / 7.0


_CLS = (("y", T.INT64, ["n"]), ("z", T.FLOAT, ["n", "c"]))
_REG = (("y", T.FLOAT, ["n", "t"]),)
_X4 = (T.FLOAT, ["n", 4])

# Two trees of three nodes each (a split, two leaves) on features 0 and 3.
_TREES = {
    "nodes_treeids": [0, 0, 0, 1, 1, 1],
    "nodes_nodeids": [0, 1, 2, 0, 1, 2],
    "nodes_featureids": [0, 0, 0, 3, 0, 0],
    "nodes_modes": ["BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LEQ", "LEAF", "LEAF"],
    "nodes_values": [0.5, 0.0, 0.0, 1.5, 0.0, 0.0],
    "nodes_truenodeids": [1, 0, 0, 1, 0, 0],
    "nodes_falsenodeids": [2, 0, 0, 2, 0, 0],
}

CASES: list[Case] = [
    Case(
        "E-ML-LINEAR-CLASSIFIER",
        "LinearClassifier",
        {"coefficients": [0.1] * 12, "intercepts": [0.0, 0.1, 0.2], "classlabels_ints": [0, 1, 2]},
        {"coefficients": [0.1] * 8},
        "coefficients",
        "LinearClassifier: 8 coefficients for 3 classes x 4 features (logreg_iris.onnx's kind)",
        _X4,
        _CLS,
        feed=_f(2, 4),
    ),
    Case(
        "E-ML-LINEAR-REGRESSOR",
        "LinearRegressor",
        {"coefficients": [0.5] * 8, "intercepts": [1.0, 2.0], "targets": 2},
        {"intercepts": [1.0, 2.0, 3.0]},
        "intercepts",
        "LinearRegressor: 3 intercepts for 2 targets",
        _X4,
        _REG,
        feed=_f(2, 4),
    ),
    Case(
        "E-ML-SVM-CLASSIFIER",
        "SVMClassifier",
        {
            "classlabels_ints": [0, 1, 2],
            "vectors_per_class": [1, 1, 1],
            "support_vectors": [0.1] * 12,
            "coefficients": [0.5, -0.5, 0.3, -0.3, 0.2, -0.2],
            "rho": [0.1, 0.2, 0.3],
            "kernel_type": "LINEAR",
        },
        {"support_vectors": [0.1] * 10},
        "support_vectors",
        "SVMClassifier: 10 support vector values for 3 vectors x 4 features",
        _X4,
        _CLS,
        feed=_f(2, 4),
    ),
    Case(
        "E-ML-SVM-REGRESSOR",
        "SVMRegressor",
        {"n_supports": 2, "support_vectors": [0.1] * 8, "coefficients": [0.5, -0.5], "rho": [0.1]},
        {"coefficients": [0.5]},
        "coefficients",
        "SVMRegressor: 1 coefficient for n_supports 2",
        _X4,
        (("y", T.FLOAT, ["n", 1]),),
        feed=_f(2, 4),
    ),
    Case(
        "E-ML-TREE-CLASSIFIER",
        "TreeEnsembleClassifier",
        {
            **_TREES,
            "class_treeids": [0, 0, 1, 1],
            "class_nodeids": [1, 2, 1, 2],
            "class_ids": [0, 1, 0, 1],
            "class_weights": [0.4, 0.6, 0.3, 0.7],
            "classlabels_int64s": [0, 1],
        },
        {"nodes_values": [0.5, 0.0, 0.0, 1.5, 0.0]},
        "nodes_values",
        "TreeEnsembleClassifier: nodes_values one shorter than the other nodes_* arrays",
        _X4,
        _CLS,
        feed=_f(2, 4),
    ),
    Case(
        "E-ML-TREE-REGRESSOR",
        "TreeEnsembleRegressor",
        {
            **_TREES,
            "target_treeids": [0, 0, 1, 1],
            "target_nodeids": [1, 2, 1, 2],
            "target_ids": [0, 0, 0, 0],
            "target_weights": [0.4, 0.6, 0.3, 0.7],
            "n_targets": 1,
        },
        {"target_ids": [0, 0, 0, 1]},
        "target_ids",
        "TreeEnsembleRegressor: a target id 1 with n_targets 1",
        _X4,
        _REG,
        feed=_f(2, 4),
    ),
    Case(
        "E-ML-TREE-ENSEMBLE",
        "TreeEnsemble",
        {
            "nodes_featureids": [0, 3],
            "nodes_splits": numpy_helper.from_array(np.array([0.5, 1.5], np.float32)),
            "nodes_modes": numpy_helper.from_array(np.array([0, 0], np.uint8)),
            "nodes_truenodeids": [0, 2],
            "nodes_trueleafs": [1, 1],
            "nodes_falsenodeids": [1, 3],
            "nodes_falseleafs": [1, 1],
            "leaf_targetids": [0, 0, 0, 0],
            "leaf_weights": numpy_helper.from_array(np.array([0.4, 0.6, 0.3, 0.7], np.float32)),
            "tree_roots": [0, 1],
            "n_targets": 1,
            "aggregate_function": 1,
        },
        {"nodes_falsenodeids": [1, 4]},
        "nodes_falsenodeids",
        "TreeEnsemble: a leaf index 4 among 4 leaves",
        _X4,
        _REG,
        feed=_f(2, 4),
    ),
    Case(
        "E-ML-SCALER",
        "Scaler",
        {"offset": [0.0, 1.0, 2.0, 3.0], "scale": [2.0]},
        {"offset": [0.0, 1.0, 2.0]},
        "offset",
        "Scaler: 3 offsets for 4 features",
        _X4,
        (("y", T.FLOAT, ["n", 4]),),
        feed=_f(2, 4),
    ),
    Case(
        "E-ML-IMPUTER",
        "Imputer",
        {"imputed_value_floats": [1.0, 2.0, 3.0, 4.0], "replaced_value_float": 0.0},
        {"imputed_value_floats": [1.0, 2.0]},
        "imputed_value_floats",
        "Imputer: 2 imputed values for 4 features",
        _X4,
        (("y", T.FLOAT, ["n", 4]),),
        feed=_f(2, 4),
    ),
    Case(
        "E-ML-LABEL-ENCODER",
        "LabelEncoder",
        {"keys_strings": ["a", "b", "c"], "values_int64s": [1, 2, 3], "default_int64": -1},
        {"values_int64s": [1, 2]},
        "values_int64s",
        "LabelEncoder: 3 keys, 2 values",
        (T.STRING, ["n"]),
        (("y", T.INT64, ["n"]),),
        feed=np.array(["a", "c", "z"], dtype=object),
    ),
    Case(
        "E-ML-CATEGORY-MAPPER",
        "CategoryMapper",
        {"cats_strings": ["a", "b", "c"], "cats_int64s": [1, 2, 3]},
        {"cats_int64s": [1, 2]},
        "cats_int64s",
        "CategoryMapper: 3 strings, 2 integers",
        (T.STRING, ["n"]),
        (("y", T.INT64, ["n"]),),
        feed=np.array(["a", "c", "z"], dtype=object),
    ),
    Case(
        "E-ML-ZIPMAP",
        "ZipMap",
        {"classlabels_int64s": [0, 1, 2]},
        {"classlabels_int64s": [0, 1]},
        "classlabels_int64s",
        "ZipMap: 2 labels for 3 columns",
        (T.FLOAT, ["n", 3]),
        (("y", T.FLOAT, None),),
        feed=_f(2, 3),
    ),
    Case(
        "E-ML-DICT-VECTORIZER",
        "DictVectorizer",
        {"string_vocabulary": ["a", "b"]},
        {"int64_vocabulary": [1, 2]},
        "int64_vocabulary",
        "DictVectorizer: both vocabularies",
        ("map", []),
        (("y", T.FLOAT, ["a", "b"]),),
    ),
    Case(
        "E-ML-ONE-HOT-ENCODER",
        "OneHotEncoder",
        {"cats_int64s": [1, 2, 3], "zeros": 1},
        {"cats_int64s": None},
        None,
        "OneHotEncoder: no categories",
        (T.INT64, ["n"]),
        (("y", T.FLOAT, ["n", 3]),),
        feed=np.array([1, 3, 2], np.int64),
    ),
    Case(
        "E-ML-FEATURE-VECTORIZER",
        "FeatureVectorizer",
        {"inputdimensions": [4]},
        {"inputdimensions": [4, 1]},
        "inputdimensions",
        "FeatureVectorizer: 2 inputdimensions for 1 input",
        _X4,
        (("y", T.FLOAT, ["n", "w"]),),
        feed=_f(2, 4),
    ),
    Case(
        "E-OP-CONSTANT",
        "Constant",
        {"value_float": 1.5},
        {"value_int": 2},
        "value_int",
        "Constant: value_float and value_int",
        None,
        (("y", T.FLOAT, []),),
        domain="",
    ),
    Case(
        "E-OP-CONSTANT-OF-SHAPE",
        "ConstantOfShape",
        {"value": numpy_helper.from_array(np.array([2.5], np.float32))},
        {"value": numpy_helper.from_array(np.array([2.5, 1.0], np.float32))},
        "value",
        "ConstantOfShape: a value of two elements",
        (T.INT64, [2]),
        (("y", T.FLOAT, ["a", "b"]),),
        domain="",
        feed=np.array([2, 3], np.int64),
    ),
    Case(
        "E-OP-TFIDF-VECTORIZER",
        "TfIdfVectorizer",
        {
            "pool_int64s": [2, 3, 5, 4, 5, 6, 7, 8, 6, 7],
            "ngram_counts": [0, 4],
            "ngram_indexes": [0, 1, 2, 3, 4, 5, 6],
            "mode": "TF",
            "min_gram_length": 1,
            "max_gram_length": 2,
            "max_skip_count": 0,
        },
        {"ngram_indexes": [0, 1, 2, 3, 4, 5]},
        "ngram_indexes",
        "TfIdfVectorizer: 6 ngram_indexes for a pool of 7 n-grams",
        (T.INT64, ["n", 6]),
        (("y", T.FLOAT, ["n", "w"]),),
        domain="",
        feed=np.array([[2, 3, 5, 4, 5, 6], [7, 8, 6, 7, 2, 3]], np.int64),
    ),
]
