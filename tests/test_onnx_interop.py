"""The onnx package's objects at every public entry point, onnx's constants on our classes, and file
errors catchable as the built-in exceptions (issue 22)."""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import onnxcore as oc
from onnxcore.external import externalize, internalize, load_external_data
from onnxcore.external.reference import ReferenceRule, make_error
from onnxcore.graph import bind
from onnxcore.infer import annotate, infer, infer_shapes, infer_types
from onnxcore.proto.decoder import MESSAGE_CLASSES


def _onnx_model() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 2])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", 3])],
        [w],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


# ---- from_onnx / to_onnx ------------------------------------------------------------------------


def test_from_onnx_gives_our_class_of_the_same_name() -> None:
    m = _onnx_model()
    ours = oc.from_onnx(m)
    assert isinstance(ours, oc.ModelProto)
    assert oc.encode(ours) == m.SerializeToString()
    assert isinstance(oc.from_onnx(onnx.TypeProto.Tensor()), oc.TypeProto.Tensor)
    assert isinstance(oc.from_onnx(m.graph.initializer[0], oc.TensorProto), oc.TensorProto)


def test_from_onnx_passes_ours_through() -> None:
    ours = oc.from_onnx(_onnx_model())
    assert oc.from_onnx(ours) is ours


def test_round_trip_to_onnx() -> None:
    m = _onnx_model()
    assert oc.to_onnx(oc.from_onnx(m)) == m.SerializeToString()
    back = oc.to_onnx(oc.from_onnx(m), onnx.ModelProto)
    assert isinstance(back, onnx.ModelProto)
    assert back.SerializeToString() == m.SerializeToString()
    assert onnx.load_from_string(oc.to_onnx(oc.from_onnx(m))) == m


@pytest.mark.parametrize("bad", ["model.onnx", 3, None, object()])
def test_from_onnx_refuses_what_is_not_a_message(bad: object) -> None:
    with pytest.raises(TypeError, match="expects an ONNX message") as e:
        oc.from_onnx(bad)
    assert isinstance(e.value, oc.OnnxCoreError)


def test_from_onnx_refuses_another_message_than_expected() -> None:
    with pytest.raises(TypeError, match=r"expects a TensorProto .* got onnx's ModelProto"):
        oc.from_onnx(_onnx_model(), oc.TensorProto)


def test_to_onnx_refuses_another_class() -> None:
    with pytest.raises(TypeError, match="TensorProto from a ModelProto"):
        oc.to_onnx(oc.from_onnx(_onnx_model()), onnx.TensorProto)


def test_every_onnx_message_class_converts() -> None:
    """Every Annex B message onnx has, by its descriptor's name (nested ones too)."""
    seen = 0
    for name, cls in MESSAGE_CLASSES.items():
        onnx_cls: object = onnx
        for part in name.split("."):
            onnx_cls = getattr(onnx_cls, part, None)
        if onnx_cls is None:
            continue
        assert type(oc.from_onnx(onnx_cls())) is cls  # type: ignore[operator]
        seen += 1
    assert seen >= 25


# ---- every entry point ----------------------------------------------------------------------------


def test_infer_shapes_with_onnx_model() -> None:
    m = _onnx_model()
    got = infer_shapes(m)
    assert got.shapes == infer_shapes(oc.from_onnx(m)).shapes
    assert got.shapes["graph"]["h"] == ("N", 3)


def test_infer_and_infer_types_with_onnx_model() -> None:
    m = _onnx_model()
    assert infer(m).type_strings == infer(oc.from_onnx(m)).type_strings
    assert infer_types(m) == infer_types(oc.from_onnx(m))
    assert infer(m).type_strings["graph"]["y"] == "tensor(float)"


def test_annotate_with_onnx_model() -> None:
    m = _onnx_model()
    out = annotate(m)
    assert isinstance(out, oc.ModelProto)
    assert out == annotate(oc.from_onnx(m))
    assert m.graph.value_info == []  # the onnx object is unchanged


def test_inference_with_onnx_model_and_its_bound_model() -> None:
    m = _onnx_model()
    bound = bind(m)
    assert isinstance(bound.model, oc.ModelProto)
    assert infer_shapes(m, bound=bound).shapes == infer_shapes(oc.from_onnx(m)).shapes


def test_check_with_onnx_model() -> None:
    m = _onnx_model()
    report = oc.check(m)
    assert report.findings == oc.check(oc.from_onnx(m)).findings
    assert report.ok


def test_save_and_encode_with_onnx_model(tmp_path: Path) -> None:
    m = _onnx_model()
    assert oc.encode(m) == m.SerializeToString()
    oc.save(m, tmp_path / "m.onnx")
    assert onnx.load(str(tmp_path / "m.onnx")) == m


def test_to_array_value_from_proto_type_from_proto_with_onnx_objects() -> None:
    t = numpy_helper.from_array(np.array([[1, 2], [3, 4]], dtype=np.int64), "t")
    np.testing.assert_array_equal(oc.to_array(t), numpy_helper.to_array(t))
    np.testing.assert_array_equal(oc.value_from_proto(t), numpy_helper.to_array(t))
    seq = helper.make_sequence("s", onnx.SequenceProto.TENSOR, [t])
    got = oc.value_from_proto(seq)
    assert len(got) == 1 and got[0].tolist() == [[1, 2], [3, 4]]
    tp = helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, ["N", 3])
    assert oc.type_from_proto(tp) == oc.type_from_proto(oc.from_onnx(tp))
    assert str(oc.type_from_proto(tp)).startswith("tensor(float")


def test_entry_points_refuse_the_wrong_message() -> None:
    t = numpy_helper.from_array(np.zeros(2, np.float32), "t")
    m = _onnx_model()
    with pytest.raises(TypeError, match=r"to_array expects a TensorProto .* got onnx's ModelProto"):
        oc.to_array(m)
    with pytest.raises(TypeError, match=r"infer_shapes expects a ModelProto .* got onnx's TensorProto"):
        infer_shapes(t)
    with pytest.raises(TypeError, match="check expects a ModelProto"):
        oc.check(t)
    with pytest.raises(TypeError, match="type_from_proto expects a TypeProto"):
        oc.type_from_proto(t)
    with pytest.raises(TypeError, match="value_from_proto expects"):
        oc.value_from_proto(m)
    with pytest.raises(TypeError, match="encode expects"):
        oc.encode("not a message")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="from_onnx"):
        oc.load(m)  # type: ignore[arg-type]


def test_external_entry_points_with_onnx_model(tmp_path: Path) -> None:
    big = numpy_helper.from_array(np.arange(512, dtype=np.float32), "big")
    graph = helper.make_graph(
        [helper.make_node("Identity", ["big"], ["y"])],
        "g",
        [],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [512])],
        [big],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    out, parts = externalize(m, location="w.bin", size_threshold=16)
    ours_out, ours_parts = externalize(oc.from_onnx(m), location="w.bin", size_threshold=16)
    assert out == ours_out and b"".join(parts) == b"".join(ours_parts)
    assert internalize(m) == internalize(oc.from_onnx(m))
    # In place: onnx's objects are refused with the way to convert them.
    with pytest.raises(TypeError, match="from_onnx"):
        load_external_data(m, str(tmp_path))


def test_session_with_onnx_model() -> None:
    m = _onnx_model()
    x = np.ones((1, 2), np.float32)
    (y,) = oc.Session(m).run(None, {"x": x})
    np.testing.assert_allclose(np.asarray(y), np.maximum(x @ np.arange(6, dtype=np.float32).reshape(2, 3), 0))


# ---- onnx's constants on our classes ----------------------------------------------------------------


def _class_level_enums() -> list[tuple[str, str, int]]:
    """(message, value name, number) of every nested enum value onnx exposes on a message class."""
    out = []
    for mod in (onnx.onnx_ml_pb2, onnx.onnx_data_pb2, onnx.onnx_operators_ml_pb2):
        for name, desc in mod.DESCRIPTOR.message_types_by_name.items():
            cls = getattr(mod, name)
            for enum in desc.enum_types:
                for v in enum.values:
                    assert getattr(cls, v.name) == v.number
                    out.append((name, v.name, v.number))
    return out


def test_onnx_enum_constants_on_our_classes() -> None:
    values = _class_level_enums()
    assert ("TensorProto", "BFLOAT16", 16) in values
    for msg, name, number in values:
        ours = getattr(getattr(oc, msg), name)
        assert ours == number == getattr(getattr(onnx, msg), name), (msg, name)
        assert int(ours) == number


def test_constants_spelled_the_onnx_way() -> None:
    assert oc.TensorProto.FLOAT == onnx.TensorProto.FLOAT == 1
    assert oc.TensorProto.INT64 == 7
    assert oc.TensorProto.EXTERNAL == 1 and oc.TensorProto.DEFAULT == 0
    assert oc.AttributeProto.INTS == onnx.AttributeProto.INTS
    assert oc.TensorProto.FLOAT is oc.TensorProto.DataType.FLOAT


def test_constants_do_not_touch_fields_or_encoding() -> None:
    t = oc.TensorProto(name="t", data_type=oc.TensorProto.FLOAT, dims=[1], float_data=[1.0])
    assert t.present_fields() == ["dims", "data_type", "float_data", "name"]
    assert oc.encode(t) == helper.make_tensor("t", onnx.TensorProto.FLOAT, [1], [1.0]).SerializeToString()
    a = oc.AttributeProto(name="a", type=oc.AttributeProto.INTS, ints=[1])
    assert a.ints == [1] and a.type == 7


# ---- file errors as built-ins ------------------------------------------------------------------------


def test_missing_model_is_file_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "missing.onnx"
    with pytest.raises(FileNotFoundError, match=r"missing\.onnx") as e:
        oc.load(missing)
    assert isinstance(e.value, oc.OnnxCoreError) and isinstance(e.value, oc.ModelFileNotFoundError)
    assert e.value.filename == str(missing)
    with pytest.raises(FileNotFoundError):
        oc.check(missing)
    with pytest.raises(FileNotFoundError):
        oc.Session(str(missing))


def test_directory_is_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError, match=str(tmp_path.name)) as e:
        oc.load(tmp_path)
    assert isinstance(e.value, oc.OnnxCoreError)


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="permissions do not bind root")
def test_unreadable_is_permission_error(tmp_path: Path) -> None:
    p = tmp_path / "m.onnx"
    p.write_bytes(_onnx_model().SerializeToString())
    p.chmod(0)
    with pytest.raises(PermissionError) as e:
        oc.load(p)
    assert isinstance(e.value, oc.OnnxCoreError)


def test_missing_external_data_file_is_file_not_found(tmp_path: Path) -> None:
    t = oc.TensorProto(name="w", data_type=oc.TensorProto.FLOAT, dims=[4], data_location=oc.TensorProto.EXTERNAL)
    t.external_data = [oc.StringStringEntryProto(key="location", value="w.bin")]
    graph = oc.GraphProto(name="g", initializer=[t])
    model = oc.ModelProto(ir_version=8, graph=graph, opset_import=[oc.OperatorSetIdProto(version=17)])
    oc.save(model, tmp_path / "m.onnx")
    with pytest.raises(FileNotFoundError, match=r"w\.bin") as e:
        oc.load(tmp_path / "m.onnx")
    assert isinstance(e.value, oc.ExternalDataError)
    assert e.value.rule == "not-found"


def test_external_data_location_that_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "w.bin").mkdir()
    t = oc.TensorProto(name="w", data_type=oc.TensorProto.FLOAT, dims=[4], data_location=oc.TensorProto.EXTERNAL)
    t.external_data = [oc.StringStringEntryProto(key="location", value="w.bin")]
    model = oc.ModelProto(ir_version=8, graph=oc.GraphProto(name="g", initializer=[t]))
    oc.save(model, tmp_path / "m.onnx")
    with pytest.raises(IsADirectoryError) as e:
        oc.load(tmp_path / "m.onnx")
    assert isinstance(e.value, oc.ExternalDataError)


def test_file_errors_pickle() -> None:
    e = oc.ModelFileNotFoundError("cannot read x.onnx", 2, "x.onnx")
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is oc.ModelFileNotFoundError and str(back) == str(e) and back.filename == "x.onnx"


def test_permission_errors_map_to_permission_error() -> None:
    """(As root the file test above is skipped: the mapping itself, for both kinds of file.)"""
    from_model = oc.errors.file_error(PermissionError(13, "Permission denied", "x.onnx"), "cannot read x.onnx")
    assert isinstance(from_model, PermissionError) and isinstance(from_model, oc.ModelPermissionError)
    ext = make_error("w", "w.bin", ReferenceRule.UNREADABLE, "'w.bin' cannot be read", PermissionError)
    assert isinstance(ext, PermissionError) and isinstance(ext, oc.ExternalDataError)


def test_session_refuses_another_onnx_message() -> None:
    with pytest.raises(TypeError, match="Session expects a ModelProto"):
        oc.Session(numpy_helper.from_array(np.zeros(2, np.float32), "t"))
