"""Models before IR version 4 (issue 39): their initializers, listed among the graph inputs as IR 3 required, are
constants to the optimizer by default, as onnxruntime treats them (its ``Graph::CanOverrideInitializer`` is
``ir_version >= 4``; Clause 7.2 lets a consumer allow overriding, it does not oblige one); an option keeps them
overridable. The result stays valid for its IR version: every initializer is still listed among the inputs."""

from __future__ import annotations

from pathlib import Path

import corpus
import numpy as np
import pytest
from optimize_models import T, model, ort_run, tensor, vi

import onnxcore
from onnxcore import helper
from onnxcore.optimizer import optimize
from onnxcore.proto import ModelProto
from onnxcore.runtime import Session

pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")


def _ir3(m: ModelProto) -> ModelProto:
    """``m`` as IR version 3 writes it: every initializer also a graph input."""
    assert m.graph is not None
    listed = {v.name for v in m.graph.input}
    m.graph.input = [*m.graph.input, *(vi(t.name, int(t.data_type), list(t.dims)) for t in m.graph.initializer
                                       if t.name not in listed)]  # fmt: skip
    m.ir_version = 3
    m.opset_import = [helper.make_opsetid("", 8)]
    return m


def _scaled() -> ModelProto:
    """y = x * (a + b): ``a + b`` folds only if ``a`` and ``b`` are constants."""
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])]
    inits = [tensor("a", np.array([1.0, 2.0], np.float32)), tensor("b", np.array([0.5, 0.25], np.float32))]
    return _ir3(model(nodes, [vi("x", T.FLOAT, ["n", 2])], [vi("y", T.FLOAT, ["n", 2])], inits))


def _input_names(m: ModelProto) -> set[str]:
    assert m.graph is not None
    return {v.name for v in m.graph.input}


def test_ir3_initializers_fold_as_constants_and_stay_listed_as_inputs() -> None:
    src = _scaled()
    out, report = optimize(src)
    assert out.graph is not None
    assert [n.op_type for n in out.graph.node] == ["Mul"]
    assert report.fired.get("fold_constants")
    # The folded sum is an initializer, listed among the inputs (IR 3); a and b, read by nothing, are gone from both.
    inits = {t.name for t in out.graph.initializer}
    assert inits == {"s"} and inits <= _input_names(out)
    assert "a" not in _input_names(out) and "b" not in _input_names(out)
    onnx.checker.check_model(onnx.load_from_string(onnxcore.encode(out)), full_check=True)
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(ort_run(out, {"x": x})[0], ort_run(src, {"x": x})[0])


def test_ir3_initializers_kept_overridable_on_request() -> None:
    src = _scaled()
    out, _ = optimize(src, overridable_initializers=True)
    assert out.graph is not None
    assert [n.op_type for n in out.graph.node] == ["Add", "Mul"]
    assert {"a", "b"} <= _input_names(out)
    # Overriding works in onnxcore's Session whatever the IR version (the native API allows it, Clause 7.2).
    x = np.ones((1, 2), np.float32)
    got = Session(out).run(None, {"x": x, "a": np.zeros(2, np.float32)})[0]
    np.testing.assert_array_equal(got, [[0.5, 0.25]])


def test_ir4_initializers_listed_as_inputs_stay_overridable_by_default() -> None:
    src = _scaled()
    src.ir_version = 4
    out, _ = optimize(src)
    assert out.graph is not None
    assert [n.op_type for n in out.graph.node] == ["Add", "Mul"]
    # ... and a caller may declare them constants.
    out, _ = optimize(src, overridable_initializers=False)
    assert out.graph is not None
    assert [n.op_type for n in out.graph.node] == ["Mul"]


def _zoo(stem: str) -> Path:
    paths = [p for p in corpus.shipped_models() if p.stem == stem]
    if not paths:
        pytest.skip(f"{stem} is not in this onnx wheel")
    return paths[0]


def test_ir3_zoo_model_batchnorms_fold_and_onnxruntime_agrees(tmp_path: Path) -> None:
    path = _zoo("light_shufflenet")
    src = corpus.with_random_weights(path)
    assert src.ir_version < 4
    assert any(n.op_type == "BatchNormalization" for n in src.graph.node)
    out, report = optimize(src.SerializeToString())
    assert report.verified
    assert report.ops_after.get("BatchNormalization", 0) == 0, report.ops_after
    assert report.fired.get("fold_batchnorm")
    assert report.nodes_after < report.nodes_before
    assert out.graph is not None and out.ir_version == src.ir_version
    assert {t.name for t in out.graph.initializer} <= _input_names(out)  # IR 3: every initializer an input
    written = onnx.load_from_string(onnxcore.encode(out))
    onnx.checker.check_model(written, full_check=True)
    name, x = corpus.light_model_input(path)
    want = ort_run(onnxcore.load(src.SerializeToString()), {name: x})
    got = ort_run(out, {name: x})
    for g, w in zip(got, want, strict=True):
        # Conv weights scaled by the BatchNormalization's factors round differently: the conformance tolerance.
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)


def test_ir3_subgraph_folded_values_are_constant_nodes() -> None:
    """A subgraph's signature has no room for IR 3's initializers-as-inputs: what folds there is a Constant node."""

    def branch(name: str, k: float) -> object:
        c1 = helper.make_node("Constant", [], [f"{name}_c1"], value=tensor(f"{name}_t1", np.array([k, k], np.float32)))
        c2 = helper.make_node("Constant", [], [f"{name}_c2"], value=tensor(f"{name}_t2", np.array([1, 2], np.float32)))
        add = helper.make_node("Add", [f"{name}_c1", f"{name}_c2"], [f"{name}_s"])
        mul = helper.make_node("Mul", ["x", f"{name}_s"], [f"{name}_y"])
        return helper.make_graph([c1, c2, add, mul], name, [], [vi(f"{name}_y", T.FLOAT, ["n", 2])])

    node = helper.make_node("If", ["c"], ["y"], then_branch=branch("then", 2.0), else_branch=branch("else", 3.0))
    src = _ir3(model([node], [vi("x", T.FLOAT, ["n", 2]), vi("c", T.BOOL, [])], [vi("y", T.FLOAT, ["n", 2])]))
    out, report = optimize(src)
    assert report.fired.get("fold_constants")
    assert out.graph is not None
    for a in out.graph.node[0].attribute:
        assert a.g is not None and not a.g.initializer
        assert [n.op_type for n in a.g.node] == ["Constant", "Mul"]
    onnx.checker.check_model(onnx.load_from_string(onnxcore.encode(out)), full_check=True)
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    for c in (True, False):
        feeds = {"x": x, "c": np.array(c)}
        np.testing.assert_array_equal(ort_run(out, feeds)[0], ort_run(src, feeds)[0])
