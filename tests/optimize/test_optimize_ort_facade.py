"""``SessionOptions.optimized_model_filepath`` writes the model through onnxcore.optimize's passes: standard operators
only, every graph (subgraphs too), and onnxruntime gives what the session gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from optimize_models import T, model, ops, ort_run, tensor, vi

import onnxcore
from onnxcore import helper

pytest.importorskip("onnxruntime")


def _model() -> onnxcore.ModelProto:
    w = tensor("w", np.arange(4, dtype=np.float32))
    branch = helper.make_graph(
        [helper.make_node("Identity", ["X"], ["bi"]), helper.make_node("Neg", ["w"], ["bw"]),
         helper.make_node("Mul", ["bi", "bw"], ["by"])],
        "b", [], [vi("by", T.FLOAT, ["N", 4])],
    )  # fmt: skip
    nodes = [
        helper.make_node("Identity", ["X"], ["a"]),
        helper.make_node("Mul", ["a", "w"], ["m1"]),
        helper.make_node("Mul", ["a", "w"], ["m2"]),
        helper.make_node("Add", ["m1", "m2"], ["s"]),
        helper.make_node("If", ["C"], ["i"], then_branch=branch, else_branch=branch),
        helper.make_node("Add", ["s", "i"], ["Y"]),
        helper.make_node("Relu", ["X"], ["dead"]),
    ]
    return model(nodes, [vi("X", T.FLOAT, ["N", 4]), vi("C", T.BOOL, [])], [vi("Y", T.FLOAT, ["N", 4])], [w])


def test_the_written_model_is_the_optimized_one(tmp_path: Path) -> None:
    path = tmp_path / "opt.onnx"
    so = onnxcore.SessionOptions()
    so.optimized_model_filepath = str(path)
    feeds = {"X": np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32), "C": np.array(True)}
    m = _model()
    ours = onnxcore.InferenceSession(onnxcore.encode(m), so).run(None, feeds)
    written = onnxcore.load(path)
    assert ops(written) == ["Mul", "Add", "If", "Add"]  # Identity, the repeat and the dead Relu gone
    body = written.graph.node[2].attribute[0].g
    assert [n.op_type for n in body.node] == ["Mul"]  # the branch's Identity gone, its Neg folded
    assert all(n.domain in ("", "ai.onnx") for n in written.graph.node)
    assert onnxcore.check(written).ok
    np.testing.assert_allclose(ort_run(written, feeds)[0], ours[0], rtol=1e-6)


def test_disabled_optimizers_switch_the_same_passes_off(tmp_path: Path) -> None:
    path = tmp_path / "opt.onnx"
    so = onnxcore.SessionOptions()
    so.optimized_model_filepath = str(path)
    onnxcore.InferenceSession(onnxcore.encode(_model()), so, disabled_optimizers=["EliminateIdentity"])
    assert "Identity" in ops(onnxcore.load(path))
