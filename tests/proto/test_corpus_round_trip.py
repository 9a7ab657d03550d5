"""Round trip over the ONNX 1-3 test vectors and the models shipped in the onnx wheel (Clause 12)."""

from __future__ import annotations

from pathlib import Path

import corpus
import pytest

import onnxcore as oc

onnx = pytest.importorskip("onnx")

_PB_CLASSES = (oc.TensorProto, oc.SequenceProto, oc.MapProto, oc.OptionalProto)


def _models(node_cases: list[Path]) -> list[Path]:
    return [d / "model.onnx" for d in node_cases] + corpus.shipped_models()


def test_models_byte_exact(node_cases: list[Path]) -> None:
    """encode(decode(b)) == b for every model file protobuf wrote."""
    files = _models(node_cases)
    assert len(files) > 1500
    bad = [f for f in files if oc.encode(oc.load(f)) != f.read_bytes()]
    assert bad == []


def test_pb_files_byte_exact(node_cases: list[Path]) -> None:
    """Every input/output .pb of the vectors re-encodes to the same octets under its own message class."""
    count = 0
    bad = []
    for case in node_cases:
        model = onnx.load(str(case / "model.onnx"), load_external_data=False)
        kinds = {f"input_{i}.pb": vi.type for i, vi in enumerate(model.graph.input)}
        kinds |= {f"output_{i}.pb": vi.type for i, vi in enumerate(model.graph.output)}
        for pb in sorted(case.glob("test_data_set_*/*.pb")):
            t = kinds[pb.name].WhichOneof("value")
            cls = {
                "sequence_type": oc.SequenceProto,
                "map_type": oc.MapProto,
                "optional_type": oc.OptionalProto,
            }.get(t or "", oc.TensorProto)
            data = pb.read_bytes()
            if oc.encode(oc.decode(cls, data)) != data:
                bad.append(pb)
            count += 1
    assert count > 5000
    assert bad == []


def test_differential_against_onnx(node_cases: list[Path]) -> None:
    """What we decode, re-encoded and parsed by onnx, equals what onnx parsed from the file.

    The top-level fields are also permuted at the octet level (decreasing tag order, the order of a
    repeated field's elements kept) to make sure the comparison is about content, not octets copied through.
    """
    files = _models(node_cases)[::7]
    for f in files:
        data = f.read_bytes()
        ours = oc.load(f)
        theirs = onnx.ModelProto()
        theirs.ParseFromString(data)
        again = onnx.ModelProto()
        again.ParseFromString(oc.encode(ours))
        assert again == theirs, f
        # Field order permuted: our decoder folds it back to the same content.
        recs = list(oc.wire.iter_fields(data))
        recs.sort(key=lambda r: -r.tag)  # stable: a repeated field keeps its order
        permuted = b"".join(data[r.offset : r.value_end] for r in recs)
        assert oc.decode(oc.ModelProto, permuted) == ours, f


def test_onnx_built_messages_decode_equal() -> None:
    """A model exercising many fields, built by onnx.helper, decodes to the same content."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [
            helper.make_node("Add", ["x", "w"], ["y"], name="add", doc_string="d"),
            helper.make_node("Constant", [], ["c"], value_floats=[1.5, -0.0, float("inf")]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor("w", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="p")
    helper.set_model_props(model, {"k": "v"})
    data = model.SerializeToString()
    ours = oc.decode(oc.ModelProto, data)
    assert ours.graph.node[0].name == "add"
    assert ours.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"
    assert ours.graph.initializer[0].float_data == [1.0, 2.0, 3.0]
    assert ours.metadata_props[0].key == "k"
    assert oc.encode(ours) == data
