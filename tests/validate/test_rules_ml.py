"""The attribute-consistency rules (Clause 7.3.1) of the ai.onnx.ml operators and of Constant, ConstantOfShape and
TfIdfVectorizer (issue 41 item 2): each operator's consistent model passes and runs; the same model with one
attribute resized is an error naming that attribute, and the session refuses it before any run."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import onnxcore
from onnxcore.errors import ValidationError

pytest.importorskip("onnx", reason="onnx.helper builds the models")
mutants_ml = pytest.importorskip("mutants_ml")

CASES = {c.code: c for c in mutants_ml.CASES}


@pytest.mark.parametrize("code", list(CASES))
def test_consistent_model_has_no_finding_and_runs(code: str) -> None:
    case = CASES[code]
    report = onnxcore.check(case.model(False))
    assert report.findings == [], str(report)
    if case.feed is not None:
        outputs = onnxcore.Session(case.model(False)).run(None, {"x": case.feed})
        assert len(outputs) == len(case.outputs)


@pytest.mark.parametrize("code", list(CASES))
def test_resized_attribute_is_an_error_naming_it(code: str) -> None:
    case = CASES[code]
    report = onnxcore.check(case.model(True))
    mine = [f for f in report.errors if f.code == code]
    assert [f.location for f in mine] == [case.location()], str(report)
    assert mine[0].clause == "7.3.1"
    if case.blamed is not None:
        assert case.blamed in mine[0].message
    with pytest.raises(ValidationError, match=code):
        onnxcore.Session(case.model(True))


def test_features_come_from_the_inferred_extent() -> None:
    # The input declares no feature extent; a Cast in front of the classifier does not change it, and the
    # inferred shape of the Cast's output gives 4 features (declared [n, 4] on the graph input only).
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto as T
    from onnx import helper

    node_cast = helper.make_node("Cast", ["x"], ["xf"], to=T.FLOAT)
    node = helper.make_node(
        "LinearClassifier",
        ["xf"],
        ["y", "z"],
        "n",
        domain="ai.onnx.ml",
        coefficients=[0.1] * 12,
        intercepts=[0.0, 0.1],
        classlabels_ints=[0, 1],
    )
    g = helper.make_graph(
        [node_cast, node],
        "g",
        [helper.make_tensor_value_info("x", T.DOUBLE, ["n", 4])],
        [helper.make_tensor_value_info("y", T.INT64, ["n"]), helper.make_tensor_value_info("z", T.FLOAT, ["n", 2])],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    data = m.SerializeToString()
    assert onnx.load_from_string(data)
    full = onnxcore.check(data)
    assert [f.code for f in full.errors] == ["E-ML-LINEAR-CLASSIFIER"], str(full)
    assert "2 classes (intercepts) x 4 features" in full.errors[0].message
    # A quick check infers nothing: 12 coefficients are 2 classes x 6 features as far as the attributes tell.
    assert onnxcore.check(data, full=False).errors == []


def test_check_flags_onnxruntime_logreg_iris() -> None:
    datasets = pytest.importorskip("onnxruntime.datasets")
    path = datasets.get_example("logreg_iris.onnx")
    proc = subprocess.run(
        [sys.executable, "-m", "onnxcore", "check", path], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "E-ML-LINEAR-CLASSIFIER" in proc.stdout
    assert 'node[0] "LinearClassifier"/attribute[1] "coefficients"' in proc.stdout
    assert "12 coefficients for 3 classes (intercepts) x 2 features" in proc.stdout


def test_onnxruntime_sample_models_flagged_are_those_docs_list() -> None:
    # docs/validation.md lists the samples the rules flag: logreg_iris.onnx alone among those onnxruntime ships.
    datasets = pytest.importorskip("onnxruntime.datasets")
    from pathlib import Path

    flagged = []
    for path in sorted(Path(datasets.__file__).parent.glob("*.onnx")):
        report = onnxcore.check(path)
        if any(f.code.startswith(("E-ML-", "E-OP-CONSTANT", "E-OP-TFIDF")) for f in report.errors):
            flagged.append(path.name)
    assert flagged == ["logreg_iris.onnx"]


def test_onnxruntime_reads_part_of_logreg_iris_coefficients() -> None:
    # What docs/validation.md says onnxruntime does with the inconsistent sample: it runs, taking the first
    # 3 classes x 2 features of the 12 coefficients as the weights and ignoring the other 6, so its scores are not
    # those of the model the coefficients describe (4 features).
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    datasets = pytest.importorskip("onnxruntime.datasets")
    path = datasets.get_example("logreg_iris.onnx")
    attrs = {a.name: a for a in onnx.load(path).graph.node[0].attribute}
    w = np.array(attrs["coefficients"].floats, np.float64)
    b = np.array(attrs["intercepts"].floats, np.float64)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).normal(size=(3, 2)).astype(np.float32) * 3
    labels, probs = sess.run(None, {sess.get_inputs()[0].name: x})
    scores = x.astype(np.float64) @ w[:6].reshape(3, 2).T + b
    assert labels.tolist() == np.argmax(scores, axis=1).tolist()
    logistic = 1.0 / (1.0 + np.exp(-scores))
    got = np.array([[p[k] for k in range(3)] for p in probs])
    np.testing.assert_allclose(got, logistic / logistic.sum(axis=1, keepdims=True), rtol=1e-5)
    with pytest.raises(onnxcore.OnnxCoreError, match="coefficients"):
        onnxcore.Session(path)
