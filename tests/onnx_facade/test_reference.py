"""onnxcore.onnx.reference against onnx.reference: the same outputs, names, operator sets and verbose printout for
a model, a graph, a node and a function, and a user's OpRun run as a custom kernel of the session (issue 38)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import onnxcore.onnx as oc_onnx
from onnxcore.onnx.reference import OpRun as OurOpRun
from onnxcore.onnx.reference import ReferenceEvaluator as Ours

onnx = pytest.importorskip("onnx")
from onnx.reference import ReferenceEvaluator as Theirs  # noqa: E402
from onnx.reference.op_run import OpRun as TheirOpRun  # noqa: E402

LIBS = {"ours": (oc_onnx, Ours), "theirs": (onnx, Theirs)}


def _linear(m: Any, custom: bool = False) -> Any:
    """X @ (A [+ I * alpha]) + B, then Relu; the custom AddEyeLike in domain 'optimized' when asked."""
    h, f = m.helper, m.TensorProto.FLOAT
    nodes = [h.make_node("MatMul", ["X", "A1" if custom else "A"], ["XA"]), h.make_node("Add", ["XA", "B"], ["S"])]
    nodes.append(h.make_node("Relu", ["S"], ["Y"]))
    if custom:
        nodes.insert(0, h.make_node("AddEyeLike", ["A"], ["A1"], domain="optimized", alpha=2.0))
    graph = h.make_graph(
        nodes,
        "lr",
        [h.make_tensor_value_info(n, f, [None, None]) for n in ("X", "A")],
        [h.make_tensor_value_info("Y", f, [None, None])],
        [m.numpy_helper.from_array(np.array([[0.5, -0.25]], np.float32), "B")],
    )
    imports = [h.make_opsetid("", 18)] + ([h.make_opsetid("optimized", 1)] if custom else [])
    return h.make_model(graph, opset_imports=imports, ir_version=8)


def _feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {"X": rng.standard_normal((4, 2)).astype(np.float32), "A": rng.standard_normal((2, 2)).astype(np.float32)}


def _eye_like(base: type) -> type:
    class AddEyeLike(base):  # type: ignore[misc,valid-type]
        op_domain = "optimized"

        def _run(self, X: np.ndarray, alpha: float = 1.0) -> tuple[np.ndarray]:
            X = X.copy()
            X[np.diag_indices(X.shape[0])] += alpha
            return (X,)

    return AddEyeLike


@pytest.mark.parametrize("verbose", [0, 1, 2, 3, 4])
def test_a_model_runs_and_prints_as_onnx_reference(verbose: int, capsys: pytest.CaptureFixture[str]) -> None:
    results, printed = [], []
    for m, evaluator in LIBS.values():
        sess = evaluator(_linear(m), verbose=verbose)
        assert (sess.input_names, sess.output_names, sess.opsets) == (["X", "A"], ["Y"], {"": 18})
        assert str(sess) == "ReferenceEvaluator(X, A) -> Y"
        results.append(sess.run(None, _feeds()))
        printed.append(capsys.readouterr().out)
    ours, theirs = results
    assert isinstance(ours, list) and len(ours) == len(theirs) == 1
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    if verbose < 3:  # node lines only: the same text
        assert printed[0] == printed[1]
    else:  # the summaries hold the values' ranges or first values: the same lines up to float32 rounding
        ours_lines, their_lines = printed[0].splitlines(), printed[1].splitlines()
        assert [line.split(":")[0] for line in ours_lines] == [line.split(":")[0] for line in their_lines]
        assert len(ours_lines) == 1 + 2 + 2 * 3  # +C B, +I X and A, then each node and its output
    nodes = ["MatMul(X, A) -> XA", "Add(XA, B) -> S", "Relu(S) -> Y"]
    assert [line for line in printed[0].splitlines() if "->" in line] == (nodes if verbose > 1 else [])


def test_a_users_oprun_is_a_custom_kernel_with_its_attributes() -> None:
    feeds = _feeds()
    ours = Ours(_linear(oc_onnx, custom=True), new_ops=[_eye_like(OurOpRun)]).run(None, feeds)
    theirs = Theirs(_linear(onnx, custom=True), new_ops=[_eye_like(TheirOpRun)]).run(None, feeds)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    expected = np.maximum(feeds["X"] @ (feeds["A"] + 2.0 * np.eye(2, dtype=np.float32)) + [[0.5, -0.25]], 0)
    np.testing.assert_allclose(ours[0], expected, rtol=1e-6)
    with pytest.raises(AttributeError, match="op_domain"):
        Ours(_linear(oc_onnx, custom=True), new_ops=[object])  # type: ignore[list-item]
    not_an_oprun = type("AddEyeLike", (), {"op_domain": "optimized"})
    with pytest.raises(TypeError, match="inherit from OpRun"):
        Ours(_linear(oc_onnx, custom=True), new_ops=[not_an_oprun])


def test_an_onnx_model_a_path_and_octets_are_taken(tmp_path: Any) -> None:
    model = _linear(onnx)
    onnx.save(model, str(tmp_path / "m.onnx"))
    expected = Theirs(model).run(None, _feeds())[0]
    for proto in (model, str(tmp_path / "m.onnx"), model.SerializeToString()):
        np.testing.assert_allclose(Ours(proto).run(["Y"], _feeds())[0], expected, rtol=1e-6)


def test_intermediate_results_are_every_value_by_name() -> None:
    ours = Ours(_linear(oc_onnx)).run(None, _feeds(), intermediate=True)
    theirs = Theirs(_linear(onnx)).run(None, _feeds(), intermediate=True)
    theirs.pop("", None)  # onnx's placeholder of an absent optional input
    assert sorted(ours) == sorted(theirs) == ["A", "B", "S", "X", "XA", "Y"]
    for name, value in theirs.items():
        np.testing.assert_allclose(ours[name], value, rtol=1e-6)


def test_a_node_and_a_graph_run_as_onnx_runs_them() -> None:
    x = np.array([[-1.0, 2.0], [3.0, -4.0]], np.float32)
    for m, evaluator in LIBS.values():
        node = m.helper.make_node("Transpose", ["X"], ["Y"], perm=[1, 0])
        sess = evaluator(node)
        assert (sess.input_names, sess.output_names) == (["X"], ["Y"])
        np.testing.assert_array_equal(sess.run(None, {"X": x})[0], x.T)
    graph_ours, graph_theirs = _linear(oc_onnx).graph, _linear(onnx).graph
    a = Ours(graph_ours, opsets={"": 18}).run(None, _feeds())[0]
    b = Theirs(graph_theirs, opsets={"": 18}).run(None, _feeds())[0]
    np.testing.assert_allclose(a, b, rtol=1e-6)
    with pytest.raises(TypeError, match="opsets"):
        Ours(graph_ours)


def test_a_function_runs_with_its_attributes() -> None:
    results = []
    for m, evaluator in LIBS.values():
        h = m.helper
        body = [h.make_node("Constant", [], ["k"]), h.make_node("Add", ["X", "k"], ["Z"])]
        ref = h.make_attribute_ref("value_float", m.AttributeProto.FLOAT)
        ref.ref_attr_name = "shift"
        body[0].attribute.append(ref)
        fn = h.make_function("local", "Shift", ["X"], ["Z"], body, [h.make_opsetid("", 18)], attributes=["shift"])
        results.append(evaluator(fn).run(None, {"X": np.arange(3, dtype=np.float32)}, attributes={"shift": 1.5}))
    np.testing.assert_allclose(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][0], np.arange(3, dtype=np.float32) + 1.5)
