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
