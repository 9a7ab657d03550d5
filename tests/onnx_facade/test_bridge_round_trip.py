"""An onnx ``ModelProto`` converts to ours and back without loss, on every ONNX 1-3 vector and shipped model."""

from __future__ import annotations

from pathlib import Path

import corpus
import pytest

import onnxcore as oc

onnx = pytest.importorskip("onnx")


def test_vectors_convert_both_ways_without_loss(node_cases: list[Path]) -> None:
    """from_onnx then to_onnx gives an equal onnx message (protobuf's ==), the same octets and the same text."""
    files = [d / "model.onnx" for d in node_cases] + corpus.shipped_models()
    assert len(files) > 1500
    lost = []
    for f in files:
        theirs = onnx.load(str(f))
        ours = oc.from_onnx(theirs)
        back = oc.to_onnx(ours, onnx.ModelProto)
        if not (back == theirs and back.SerializeToString() == theirs.SerializeToString() and str(ours) == str(back)):
            lost.append(f)
    assert lost == []


def test_edits_made_with_protobuf_methods_survive_the_round_trip() -> None:
    """A model edited through protobuf's methods on our side reads back in onnx with the edits."""
    ours = oc.from_onnx(onnx.helper.make_model(onnx.helper.make_graph([], "g", [], [])))
    ours.metadata_props.add(key="k", value="v")
    ours.graph.node.add(op_type="Relu", input=["x"], output=["y"])
    ours.opset_import[0].version = 17
    theirs = oc.to_onnx(ours, onnx.ModelProto)
    assert theirs.metadata_props[0].value == "v"
    assert theirs.graph.node[0].op_type == "Relu"
    assert theirs.opset_import[0].version == 17


def test_a_library_built_on_onnx_takes_what_to_onnx_gives() -> None:
    """skl2onnx's algebra refuses our messages (it checks protobuf's classes); to_onnx's objects it takes, and the
    model it makes comes back by from_onnx and runs (docs/onnx.md, "Libraries built on onnx")."""
    import numpy as np

    algebra = pytest.importorskip("skl2onnx.algebra.onnx_ops")
    import onnxcore.onnx as facade

    vi = facade.helper.make_tensor_value_info("X", facade.TensorProto.FLOAT, [None, 2])
    op = algebra.OnnxAdd("X", np.array([1, 2], dtype=np.float32), op_version=13, output_names=["Y"])
    with pytest.raises(NotImplementedError, match="Unsupported type"):
        op.to_onnx({"X": vi})
    model = op.to_onnx({"X": oc.to_onnx(vi, onnx.ValueInfoProto)})
    out = oc.Session(oc.from_onnx(model)).run(None, {"X": np.ones((1, 2), np.float32)})
    assert out[0].tolist() == [[2.0, 3.0]]
