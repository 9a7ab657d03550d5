"""``onnxcore.onnx`` mirrors onnx's module tree: the same calls on onnx and on the façade give the same messages
(octets), texts and answers; the errors are catchable by onnx's names."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxcore as oc
import onnxcore.onnx as facade
from onnxcore.onnx import (
    checker,
    compose,
    external_data_helper,
    helper,
    inliner,
    numpy_helper,
    parser,
    printer,
    shape_inference,
    utils,
    version_converter,
)
from onnxcore.onnx.tools.update_model_dims import update_inputs_outputs_dims

onnx = pytest.importorskip("onnx")
for _name in ("compose", "inliner", "utils", "version_converter", "numpy_helper", "parser", "printer"):
    importlib.import_module(f"onnx.{_name}")
from onnx.tools import update_model_dims as onnx_dims  # noqa: E402

MODULES = [
    "helper",
    "numpy_helper",
    "checker",
    "shape_inference",
    "compose",
    "utils",
    "inliner",
    "external_data_helper",
    "version_converter",
    "parser",
    "printer",
]


def _model(m: Any) -> Any:
    """A small model built with onnx's helper names on module ``m`` (onnx or the façade)."""
    h = m.helper
    x = h.make_tensor_value_info("X", m.TensorProto.FLOAT, ["N", 3])
    y = h.make_tensor_value_info("Y", m.TensorProto.FLOAT, ["N", 3])
    w = m.numpy_helper.from_array(np.arange(3, dtype=np.float32), "W")
    nodes = [
        h.make_node("Add", ["X", "W"], ["S"], name="add"),
        h.make_node("Relu", ["S"], ["R"], name="relu"),
        h.make_node("Neg", ["R"], ["Y"], name="neg"),
    ]
    g = h.make_graph(nodes, "g", [x], [y], [w])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=8, producer_name="t")


def _same(ours: Any, theirs: Any) -> None:
    assert ours.SerializeToString() == theirs.SerializeToString()
    assert str(ours) == str(theirs)


def test_module_tree_and_top_level_names() -> None:
    """Every onnx module named in the brief exists in the façade, with the names scripts call."""
    for name in MODULES:
        assert importlib.import_module(f"onnxcore.onnx.{name}") is getattr(facade, name)
    for name in (
        "load",
        "save",
        "load_model",
        "save_model",
        "load_model_from_string",
        "load_from_string",
        "load_tensor",
        "save_tensor",
        "load_tensor_from_string",
        "convert_model_to_external_data",
        "load_external_data_for_model",
        "write_external_data_tensors",
        "ModelProto",
        "TensorProto",
        "IR_VERSION",
    ):
        assert hasattr(facade, name) and hasattr(onnx, name)
    for name in [n for n in dir(onnx) if n.endswith("Proto")]:
        assert getattr(facade, name) is getattr(oc, name)
    assert facade.TensorProto.FLOAT == onnx.TensorProto.FLOAT
    assert facade.IR_VERSION >= 10
    assert facade.defs.onnx_opset_version() == onnx.defs.onnx_opset_version()
    assert facade.defs.get_schema("Relu").since_version == onnx.defs.get_schema("Relu").since_version
    assert facade.defs.has("Relu") and not facade.defs.has("NoSuchOp")
    missing = [n for n in dir(onnx.helper) if n.startswith(("make_", "printable_", "tensor_dtype", "np_dtype"))]
    assert [n for n in missing if not hasattr(helper, n)] == []


def test_import_is_lazy() -> None:
    """``import onnxcore.onnx`` loads neither validation nor conversion nor onnx itself."""
    code = (
        "import sys, onnxcore.onnx; heavy = ('onnx', 'onnxcore.validate', 'onnxcore.convert', 'onnxcore.runtime'); "
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_build_the_same_model_and_check() -> None:
    """A model built through the façade's helper has onnx's octets and text; check_model passes both."""
    ours, theirs = _model(facade), _model(onnx)
    _same(ours, theirs)
    checker.check_model(ours)
    checker.check_model(ours, full_check=True)
    onnx.checker.check_model(theirs)


def test_check_model_raises_validation_error() -> None:
    """check_model raises a ValidationError catchable as checker.ValidationError, as onnx's is."""
    bad = _model(facade)
    bad.graph.node[1].input[0] = "nowhere"
    with pytest.raises(checker.ValidationError):
        checker.check_model(bad)
    with pytest.raises(oc.OnnxCoreError):
        checker.check_model(bad.SerializeToString())
    theirs = _model(onnx)
    theirs.graph.node[1].input[0] = "nowhere"
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(theirs)
    assert issubclass(checker.ValidationError, Exception) and issubclass(onnx.checker.ValidationError, Exception)


def test_load_save_string_tensor(tmp_path: Path) -> None:
    """save/load (path and file object), load_model_from_string, save_tensor/load_tensor: octets onnx reads."""
    model = _model(facade)
    path = tmp_path / "m.onnx"
    facade.save(model, str(path))
    _same(facade.load(str(path)), onnx.load(str(path)))
    with open(tmp_path / "f.onnx", "wb") as fh:
        facade.save_model(model, fh)
    with open(tmp_path / "f.onnx", "rb") as fh:
        _same(facade.load_model(fh), onnx.load(str(path)))
    _same(facade.load_model_from_string(model.SerializeToString()), onnx.load_model_from_string(path.read_bytes()))
    t = numpy_helper.from_array(np.ones((2, 2), np.int64), "t")
    facade.save_tensor(t, str(tmp_path / "t.pb"))
    assert onnx.load_tensor(str(tmp_path / "t.pb")).SerializeToString() == t.SerializeToString()
    assert facade.load_tensor(str(tmp_path / "t.pb")) == t
    with pytest.raises(ValueError, match="not supported"):
        facade.load_model_from_string(b"", format="json")
    facade.save(model, str(tmp_path / "m.onnxtxt"))
    assert facade.load(str(tmp_path / "m.onnxtxt")).graph.node[0].op_type == "Add"


def test_save_as_external_data(tmp_path: Path) -> None:
    """save_model(save_as_external_data=True) writes a data file onnx reads back to the same arrays."""
    model = _model(facade)
    big = numpy_helper.from_array(np.arange(4096, dtype=np.float32).reshape(1024, 4)[:, :3].copy(), "B")
    model.graph.initializer.append(big)
    path = tmp_path / "ext.onnx"
    facade.save_model(model, str(path), save_as_external_data=True, location="ext.bin", size_threshold=1024)
    assert (tmp_path / "ext.bin").exists()
    theirs = onnx.load(str(path))
    assert np.array_equal(onnx.numpy_helper.to_array(theirs.graph.initializer[1]), numpy_helper.to_array(big))


def test_two_step_external_data(tmp_path: Path) -> None:
    """convert_model_to_external_data then save_model, as onnx scripts do: onnx loads the same arrays."""
    model = _model(facade)
    model.graph.initializer.append(numpy_helper.from_array(np.arange(600, dtype=np.float32), "B"))
    external_data_helper.convert_model_to_external_data(model, location="w.bin", size_threshold=1024)
    assert external_data_helper.uses_external_data(model.graph.initializer[1])
    assert not external_data_helper.uses_external_data(model.graph.initializer[0])
    facade.save_model(model, str(tmp_path / "two.onnx"))
    theirs = onnx.load(str(tmp_path / "two.onnx"))
    assert np.array_equal(onnx.numpy_helper.to_array(theirs.graph.initializer[1]), np.arange(600, dtype=np.float32))
    ours = facade.load(str(tmp_path / "two.onnx"), load_external_data=False)
    facade.load_external_data_for_model(ours, str(tmp_path))
    assert np.array_equal(numpy_helper.to_array(ours.graph.initializer[1]), np.arange(600, dtype=np.float32))


def test_a_model_whose_data_was_loaded_saves_as_external_data_again_as_onnx(tmp_path: Path) -> None:
    """load_external_data_for_model, then save_model(save_as_external_data=True): the tensor is written anew beside
    the new model (its source file left as it was), as onnx writes it; the reload gives the same values."""
    values = np.arange(600, dtype=np.float32).reshape(20, 30)
    source = tmp_path / "src"
    source.mkdir()
    onnx_model = onnx.helper.make_model(
        onnx.helper.make_graph(
            [onnx.helper.make_node("Relu", ["W"], ["Y"])],
            "g",
            [],
            [onnx.helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, [20, 30])],
            [onnx.numpy_helper.from_array(values, "W")],
        )
    )
    onnx.save_model(onnx_model, str(source / "m.onnx"), save_as_external_data=True, location="data")
    size = (source / "data").stat().st_size
    for name, lib, nh in (("ours", facade, numpy_helper), ("theirs", onnx, onnx.numpy_helper)):
        model = lib.load(str(source / "m.onnx"), load_external_data=False)
        lib.external_data_helper.load_external_data_for_model(model, str(source))
        out = tmp_path / name
        out.mkdir()
        lib.save_model(model, str(out / "m.onnx"), save_as_external_data=True, location="data", size_threshold=1024)
        assert sorted(p.name for p in out.iterdir()) == ["data", "m.onnx"], name
        assert (source / "data").stat().st_size == size, name  # the source file is not appended to
        assert np.array_equal(nh.to_array(lib.load(str(out / "m.onnx")).graph.initializer[0]), values), name
    assert np.array_equal(
        onnx.numpy_helper.to_array(onnx.load(str(tmp_path / "ours" / "m.onnx")).graph.initializer[0]), values
    )


def test_numpy_helper_round_trips() -> None:
    """numpy_helper's from/to functions give onnx's octets and values."""
    for arr in (np.arange(6, dtype=np.float32).reshape(2, 3), np.array([b"a", b"bc"], dtype=object), np.int8(3)):
        a = numpy_helper.from_array(arr, "a")
        b = onnx.numpy_helper.from_array(np.asarray(arr), "a")
        assert a.SerializeToString() == b.SerializeToString()
        assert np.array_equal(numpy_helper.to_array(a), onnx.numpy_helper.to_array(b))
    lst = [np.arange(3, dtype=np.int64), np.arange(2, dtype=np.int64)]
    seq_a, seq_b = numpy_helper.from_list(lst, "s"), onnx.numpy_helper.from_list(lst, "s")
    assert [x.tolist() for x in numpy_helper.to_list(seq_a)] == [x.tolist() for x in onnx.numpy_helper.to_list(seq_b)]
    d = {1: np.array(1.5, dtype=np.float32), 2: np.array(2.5, dtype=np.float32)}
    map_a, map_b = numpy_helper.from_dict(d, "m"), onnx.numpy_helper.from_dict(d, "m")
    assert map_a.key_type == map_b.key_type
    assert {k: float(v) for k, v in numpy_helper.to_dict(map_a).items()} == {1: 1.5, 2: 2.5}
    opt = numpy_helper.from_optional(np.array([1, 2], dtype=np.int32), "o")
    assert numpy_helper.to_optional(opt).tolist() == [1, 2]
    assert numpy_helper.to_optional(numpy_helper.from_optional(None, "n")) is None


def test_infer_shapes_states_what_onnx_states() -> None:
    """infer_shapes adds a value_info per intermediate value with onnx's types and shapes."""
    ours = shape_inference.infer_shapes(_model(facade))
    theirs = onnx.shape_inference.infer_shapes(_model(onnx))
    assert {v.name: str(v) for v in ours.graph.value_info} == {v.name: str(v) for v in theirs.graph.value_info}
    octets = shape_inference.infer_shapes(_model(facade).SerializeToString())
    assert isinstance(octets, bytes)


def test_infer_shapes_strict_mode() -> None:
    """strict_mode raises InferenceError on a declared output type inference contradicts."""
    bad = _model(facade)
    bad.graph.output[0].type.tensor_type.elem_type = facade.TensorProto.INT64
    with pytest.raises(shape_inference.InferenceError):
        shape_inference.infer_shapes(bad, strict_mode=True)
    shape_inference.infer_shapes(bad)  # not strict: no error


FUNCTION = """
<opset_import: ["" : 18], domain: "local">
Scale <alpha> (x) => (y) {
    a = Constant <value_float: float = @alpha> ()
    y = Mul (x, a)
}
"""


def test_infer_function_output_types() -> None:
    """The output types of a function for input types and attributes, as onnx infers them."""
    f_ours, f_theirs = parser.parse_function(FUNCTION), onnx.parser.parse_function(FUNCTION)
    t_ours = helper.make_tensor_type_proto(facade.TensorProto.FLOAT, [2, 3])
    t_theirs = onnx.helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, [2, 3])
    a_ours, a_theirs = [helper.make_attribute("alpha", 2.0)], [onnx.helper.make_attribute("alpha", 2.0)]
    ours = shape_inference.infer_function_output_types(f_ours, [t_ours], a_ours)
    theirs = onnx.shape_inference.infer_function_output_types(f_theirs, [t_theirs], a_theirs)
    assert [str(t) for t in ours] == [str(t) for t in theirs]


MODEL_WITH_FUNCTIONS = """
<ir_version: 9, opset_import: ["" : 18, "local" : 1]>
main (float[2] x) => (float[2] z) {
    y = local.Twice (x)
    z = local.Plus1 (y)
}
<opset_import: ["" : 18], domain: "local">
Twice (a) => (b) {
    b = Add (a, a)
}
<opset_import: ["" : 18, "local" : 1], domain: "local">
Plus1 (a) => (b) {
    one = Constant <value = float[1] {1.0}> ()
    t = local.Twice (one)
    half = Constant <value = float[1] {0.5}> ()
    u = Mul (t, half)
    b = Add (a, u)
}
"""


def _run(model: Any, x: np.ndarray) -> np.ndarray:
    out: np.ndarray = oc.Session(model).run(["z"], {"x": x})[0]
    return out


def test_inliner_against_onnx() -> None:
    """inline_local_functions removes every function and computes what onnx's inlined model computes."""
    x = np.array([1.0, -2.0], dtype=np.float32)
    ours = inliner.inline_local_functions(parser.parse_model(MODEL_WITH_FUNCTIONS))
    theirs = onnx.inliner.inline_local_functions(onnx.parser.parse_model(MODEL_WITH_FUNCTIONS))
    assert len(ours.functions) == len(theirs.functions) == 0
    assert [n.op_type for n in ours.graph.node] == [n.op_type for n in theirs.graph.node]
    assert np.array_equal(_run(ours, x), _run(oc.from_onnx(theirs), x))
    assert np.array_equal(_run(ours, x), 2 * x + 1)
    checker.check_model(ours)
    partial = inliner.inline_selected_functions(parser.parse_model(MODEL_WITH_FUNCTIONS), [("local", "Twice")])
    theirs_partial = onnx.inliner.inline_selected_functions(
        onnx.parser.parse_model(MODEL_WITH_FUNCTIONS), [("local", "Twice")]
    )
    assert [f.name for f in partial.functions] == [f.name for f in theirs_partial.functions] == ["Plus1"]
    assert np.array_equal(_run(partial, x), 2 * x + 1)


def test_extract_model_against_onnx(tmp_path: Path) -> None:
    """extract_model writes the sub-model onnx's writes (same nodes, inputs, outputs, initializers)."""
    src = tmp_path / "src.onnx"
    onnx.save(_model(onnx), str(src))
    utils.extract_model(str(src), str(tmp_path / "ours.onnx"), ["S"], ["Y"])
    onnx.utils.extract_model(str(src), str(tmp_path / "theirs.onnx"), ["S"], ["Y"])
    ours, theirs = onnx.load(str(tmp_path / "ours.onnx")), onnx.load(str(tmp_path / "theirs.onnx"))
    assert [n.name for n in ours.graph.node] == [n.name for n in theirs.graph.node] == ["relu", "neg"]
    for field in ("input", "output", "initializer", "value_info"):
        assert [str(v) for v in getattr(ours.graph, field)] == [str(v) for v in getattr(theirs.graph, field)]
    assert ours.graph.name == theirs.graph.name and ours.producer_name == theirs.producer_name
    with pytest.raises(ValueError, match="not found"):
        utils.extract_model(str(src), str(tmp_path / "x.onnx"), ["nope"], ["Y"])


def test_update_inputs_outputs_dims_against_onnx() -> None:
    """update_inputs_outputs_dims sets values, parameters and generated parameters as onnx does."""
    ours = update_inputs_outputs_dims(_model(facade), {"X": ["B", 3]}, {"Y": [-1, 3]})
    theirs = onnx_dims.update_inputs_outputs_dims(_model(onnx), {"X": ["B", 3]}, {"Y": [-1, 3]})
    _same(ours.graph, theirs.graph)
    with pytest.raises(ValueError, match="Contradicts"):
        update_inputs_outputs_dims(_model(facade), {"X": ["B", 4]}, {"Y": ["B", 3]})


def test_expand_out_dim_against_onnx() -> None:
    """expand_out_dim adds the Unsqueeze nodes onnx adds; the output gains the dimension."""
    ours = compose.expand_out_dim(_model(facade), 0)
    theirs = onnx.compose.expand_out_dim(_model(onnx), 0)
    assert [(n.op_type, list(n.input), list(n.output)) for n in ours.graph.node] == [
        (n.op_type, list(n.input), list(n.output)) for n in theirs.graph.node
    ]
    x = np.ones((2, 3), dtype=np.float32)
    assert oc.Session(ours).run(["Y"], {"X": x})[0].shape == (1, 2, 3)


def test_version_converter_parser_printer() -> None:
    """convert_version, parse_*, to_text under onnx's names."""
    converted = version_converter.convert_version(_model(facade), 13)
    assert converted.opset_import[0].version == 13
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert printer.to_text(_model(facade)) == onnx.printer.to_text(_model(onnx))
    with pytest.raises(parser.ParseError):
        parser.parse_model("<ir_version: 8> main (float x) => (")


def _plain_lists(msg: Any, path: str = "") -> list[str]:
    """Paths of the repeated embedded-message fields of ``msg`` (and below) that are plain lists (no ``add``)."""
    out = []
    for f in msg._SPEC.fields:
        if f.kind != "message":
            continue
        v = getattr(msg, f.name)
        if f.repeated:
            if type(v) is list:
                out.append(f"{path}.{f.name}")
            for i, x in enumerate(v):
                out += _plain_lists(x, f"{path}.{f.name}[{i}]")
        elif v is not None:
            out += _plain_lists(v, f"{path}.{f.name}")
    return out


def test_every_result_has_add_on_its_repeated_message_fields() -> None:
    """What the façade's functions return has protobuf's add() on every repeated message field, at any depth."""
    m = _model(facade)
    w = numpy_helper.from_array(np.ones(2, np.float32), "w")
    results = [
        m,
        helper.make_attribute("ts", [w, w]),
        shape_inference.infer_shapes(m),
        version_converter.convert_version(m, 13),
        compose.add_prefix(m, "p_"),
        compose.merge_models(m, compose.add_prefix(m, "q_"), io_map=[("Y", "q_X")]),
        compose.expand_out_dim(m, 0),
        inliner.inline_local_functions(parser.parse_model(MODEL_WITH_FUNCTIONS)),
        utils.extract_model_proto(shape_inference.infer_shapes(m), ["S"], ["Y"]),
        numpy_helper.from_list([np.ones(2, np.float32)]),
        facade.load_model_from_string(m.SerializeToString()),
    ]
    assert [(k, _plain_lists(r)) for k, r in enumerate(results) if _plain_lists(r)] == []
    merged = results[5]
    merged.opset_import.add(domain="x", version=1)
    merged.graph.node[0].attribute.add(name="z", i=1, type=facade.AttributeProto.INT)
    assert merged.opset_import[-1].domain == "x"


def test_external_data_one_file_per_tensor_and_attributes(tmp_path: Path) -> None:
    """all_tensors_to_one_file=False writes a file per tensor (named after it); convert_attribute moves Constant
    values too; onnx reads the result, and we read what onnx's own two steps write."""
    big = np.arange(512, dtype=np.float32)

    def build(m: Any) -> Any:
        h = m.helper
        const = h.make_node("Constant", [], ["C"], value=m.numpy_helper.from_array(big, "cv"))
        add = h.make_node("Add", ["X", "C"], ["Y"])
        g = h.make_graph(
            [const, add],
            "g",
            [h.make_tensor_value_info("X", m.TensorProto.FLOAT, [512])],
            [h.make_tensor_value_info("Y", m.TensorProto.FLOAT, [512])],
            [m.numpy_helper.from_array(big, "W")],
        )
        return h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=8)

    ours = build(facade)
    external_data_helper.convert_model_to_external_data(ours, all_tensors_to_one_file=False, convert_attribute=True)
    facade.save_model(ours, str(tmp_path / "ours.onnx"))
    assert (tmp_path / "W").exists() and (tmp_path / "cv").exists()
    loaded = onnx.load(str(tmp_path / "ours.onnx"))
    assert np.array_equal(onnx.numpy_helper.to_array(loaded.graph.initializer[0]), big)
    assert np.array_equal(onnx.numpy_helper.to_array(loaded.graph.node[0].attribute[0].t), big)

    theirs = build(onnx)
    (tmp_path / "o").mkdir()
    onnx.external_data_helper.convert_model_to_external_data(theirs, location="w.data", size_threshold=1024)
    onnx.save_model(theirs, str(tmp_path / "o" / "theirs.onnx"))
    back = facade.load(str(tmp_path / "o" / "theirs.onnx"))
    assert np.array_equal(numpy_helper.to_array(back.graph.initializer[0]), big)
    assert oc.Session(back).run(["Y"], {"X": big})[0].tolist() == (2 * big).tolist()


def test_textproto_format_both_ways(tmp_path: Path) -> None:
    """save/load with format="textproto" (or by the .textproto extension), read and written by onnx too."""
    model = _model(facade)
    facade.save(model, str(tmp_path / "ours.textproto"))
    assert (tmp_path / "ours.textproto").read_text(encoding="utf-8") == str(model)
    _same(facade.load(str(tmp_path / "ours.textproto")), onnx.load(str(tmp_path / "ours.textproto")))
    onnx.save(_model(onnx), str(tmp_path / "theirs.txt"), format="textproto")
    _same(facade.load(str(tmp_path / "theirs.txt"), format="textproto"), _model(onnx))
    again = facade.load_model_from_string(str(model).encode(), format="textproto")
    assert again == model
