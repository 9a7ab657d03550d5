"""make_model's and the version converter's opset imports, and assignment to a model's fields, against onnx 1.23:
the same fields present (Annex B presence: proto2, every singular field), so the same text and the same octets;
and every repeated message field of a built model with protobuf's list API (issue 38)."""

from __future__ import annotations

from typing import Any

import pytest

import onnxcore.onnx as oc_onnx

onnx = pytest.importorskip("onnx")


def _graph(m: Any) -> Any:
    h = m.helper
    x = h.make_tensor_value_info("X", m.TensorProto.FLOAT, [None, 2])
    y = h.make_tensor_value_info("Y", m.TensorProto.FLOAT, [None, 2])
    return h.make_graph([h.make_node("Relu", ["X"], ["Y"])], "g", [x], [y])


def _text_of_imports(model: Any) -> list[str]:
    return [str(o) for o in model.opset_import]


def test_make_models_default_import_leaves_the_domain_absent_as_onnx() -> None:
    ours = oc_onnx.helper.make_model(_graph(oc_onnx), ir_version=8)
    theirs = onnx.helper.make_model(_graph(onnx), ir_version=8)
    theirs.opset_import[0].version = ours.opset_import[0].version  # onnx declares its newest operator set
    assert not ours.opset_import[0].HasField("domain") and not theirs.opset_import[0].HasField("domain")
    assert _text_of_imports(ours) == _text_of_imports(theirs)
    assert 'domain: ""' not in str(ours)
    assert ours.SerializeToString() == theirs.SerializeToString()


def test_make_opsetid_states_the_default_domain_as_onnx() -> None:
    for domain in ("", "ai.onnx.ml"):
        ours, theirs = oc_onnx.helper.make_opsetid(domain, 3), onnx.helper.make_opsetid(domain, 3)
        assert ours.HasField("domain") and theirs.HasField("domain")
        assert str(ours) == str(theirs)
        assert ours.SerializeToString() == theirs.SerializeToString()
    models = [
        m.helper.make_model(_graph(m), opset_imports=[m.helper.make_opsetid("", 17)], ir_version=8)
        for m in (oc_onnx, onnx)
    ]
    assert str(models[0]) == str(models[1])
    assert models[0].SerializeToString() == models[1].SerializeToString()


def test_assigning_a_default_value_makes_the_field_present_as_protobuf() -> None:
    built = []
    for m in (oc_onnx, onnx):
        model = m.helper.make_model(_graph(m), ir_version=8)
        del model.opset_import[:]
        opset = model.opset_import.add()  # the list API on a built model's repeated field
        opset.domain = ""
        opset.version = 15
        model.producer_version = ""
        model.model_version = 0
        model.doc_string = ""
        assert model.HasField("producer_version") and model.HasField("model_version")
        built.append(model)
    ours, theirs = built
    assert str(ours) == str(theirs)
    assert ours.SerializeToString() == theirs.SerializeToString()
    # and it reads back with the same presence
    again = oc_onnx.load_model_from_string(theirs.SerializeToString())
    assert again.opset_import[0].HasField("domain") and str(again) == str(theirs)


def test_every_repeated_message_field_of_a_built_model_has_the_list_api() -> None:
    model = oc_onnx.helper.make_model(_graph(oc_onnx), ir_version=8)
    for name in ("opset_import", "functions", "metadata_props", "training_info"):
        assert hasattr(getattr(model, name), "add"), name
    model.opset_import = [oc_onnx.helper.make_opsetid("ai.onnx.ml", 3)]  # a plain list assigned: adopted
    model.opset_import.add(domain="", version=17)
    assert [(o.domain, o.version) for o in model.opset_import] == [("ai.onnx.ml", 3), ("", 17)]


def test_the_converted_models_imports_state_their_domain_as_onnxs_converter() -> None:
    h = onnx.helper
    x = h.make_tensor_value_info("X", onnx.TensorProto.FLOAT, [3])
    graph = h.make_graph([h.make_node("Relu", ["X"], ["Y"])], "g", [x], [h.make_tensor_value_info("Y", 1, [3])])
    source = h.make_model(graph, opset_imports=[onnx.OperatorSetIdProto(version=11)], ir_version=7)
    assert not source.opset_import[0].HasField("domain")
    theirs = onnx.version_converter.convert_version(source, 13)
    ours = oc_onnx.version_converter.convert_version(oc_onnx.load_model_from_string(source.SerializeToString()), 13)
    assert _text_of_imports(ours) == _text_of_imports(theirs) == ['domain: ""\nversion: 13\n']


def _plain_lists(msg: Any, path: str = "") -> list[str]:
    """The repeated message fields of ``msg`` and the messages it holds that are plain lists (no ``add()``)."""
    found = []
    for f in msg._SPEC.fields:
        value = getattr(msg, f.name)
        if f.kind != "message":
            continue
        if f.repeated:
            if type(value) is list:
                found.append(f"{path}.{f.name}")
            for i, item in enumerate(value):
                found += _plain_lists(item, f"{path}.{f.name}[{i}]")
        elif value is not None:
            found += _plain_lists(value, f"{path}.{f.name}")
    return found


def test_every_message_the_helpers_build_has_list_classes_throughout() -> None:
    h, o = oc_onnx.helper, oc_onnx
    x = h.make_tensor_value_info("X", o.TensorProto.FLOAT, [2])
    body = h.make_graph([h.make_node("Relu", ["X"], ["Y"])], "s", [x], [h.make_tensor_value_info("Y", 1, [2])])
    t = h.make_tensor("t", o.TensorProto.FLOAT, [2], [1.0, 2.0])
    node = h.make_node("If", ["c"], ["Y"], then_branch=body, else_branch=body)
    graph = h.make_graph([node], "g", [h.make_tensor_value_info("c", 9, [])], [x], [t], value_info=[x])
    fn = h.make_function("d", "F", ["X"], ["Y"], [h.make_node("Relu", ["X"], ["Y"])], [h.make_opsetid("", 18)])
    seq = h.make_sequence("s", o.SequenceProto.TENSOR, [t])
    built = {
        "model": h.make_model(graph, functions=[fn]),
        "training_info": h.make_training_info(body, [("a", "b")], body, [("c", "d")]),
        "sparse": h.make_sparse_tensor(t, h.make_tensor("i", o.TensorProto.INT64, [1], [0]), [2]),
        "sequence": seq,
        "map": h.make_map("m", o.TensorProto.INT64, [1, 2], seq),
        "optional": h.make_optional("o", o.OptionalProto.TENSOR, t),
        "graphs attribute": h.make_attribute("gs", [body, body]),
        "tensors attribute": h.make_attribute("ts", [t]),
    }
    assert {name: _plain_lists(msg) for name, msg in built.items()} == {name: [] for name in built}
