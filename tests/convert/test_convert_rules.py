"""Operator set conversion: refusals all at once, subgraphs and functions, Casts, what is kept (issue 24)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

import onnxcore as oc
from onnxcore import helper
from onnxcore.errors import ConversionError
from onnxcore.infer import annotate
from onnxcore.proto import TensorProto

F = TensorProto.DataType.FLOAT
I64 = TensorProto.DataType.INT64


def model_of(nodes: list[Any], inputs: list[Any], outputs: list[Any], opset: int, **kw: Any) -> Any:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=kw.pop("initializer", []))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kw)


def ort_run(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(oc.encode(model), providers=["CPUExecutionProvider"])
    return [np.asarray(v) for v in sess.run(None, feeds)]


def ours(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(v) for v in oc.Session(model).run(None, feeds)]


def test_every_refusal_at_once_and_nothing_rewritten() -> None:
    x = helper.make_tensor_value_info("x", F, [2, 3, 4])
    axes = helper.make_tensor_value_info("axes", I64, [1])
    y1 = helper.make_tensor_value_info("y1", F, [2, 1, 4])
    y2 = helper.make_tensor_value_info("y2", F, [2, 3, 4])
    nodes = [
        helper.make_node("ReduceSum", ["x", "axes"], ["y1"], name="sum_by_input"),
        helper.make_node("Gelu", ["x"], ["y2"], name="gelu"),
    ]
    model = model_of(nodes, [x, axes], [y1, y2], 20)
    before = oc.encode(model)
    with pytest.raises(ConversionError) as info:
        oc.convert_version(model, 12)
    refusals = info.value.refusals
    assert [r.location for r in refusals] == ['graph/node[0] "sum_by_input"', 'graph/node[1] "gelu"']
    assert refusals[0].op_type == "ReduceSum" and refusals[0].from_version == 13 and refusals[0].to_version == 12
    assert "not a constant" in refusals[0].reason
    assert "first defined in version 20" in refusals[1].reason
    assert "sum_by_input" in str(info.value) and "gelu" in str(info.value)
    assert oc.encode(model) == before  # no partial rewrite


def test_axes_attribute_becomes_initializer_and_back() -> None:
    x = helper.make_tensor_value_info("x", F, [2, 3, 4])
    y = helper.make_tensor_value_info("y", F, [2, 4])
    model = model_of(
        [helper.make_node("ReduceSum", ["x"], ["y"], axes=[1], keepdims=0, name="r")], [x], [y], 11, doc_string="d"
    )
    helper.set_model_props(model, {"author": "me"})
    up = oc.convert_version(model, 13)
    (node,) = up.graph.node
    assert len(node.input) == 2 and not node.attribute[1:] and node.name == "r"
    assert node.input[1] in {t.name for t in up.graph.initializer}
    assert up.doc_string == "d" and [(p.key, p.value) for p in up.metadata_props] == [("author", "me")]
    feeds = {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4)}
    np.testing.assert_array_equal(ort_run(up, feeds)[0], ort_run(model, feeds)[0])
    down = oc.convert_version(up, 11)
    assert not oc.check(down).errors
    np.testing.assert_array_equal(ours(down, feeds)[0], ort_run(model, feeds)[0])


def test_subgraph_and_function_nodes_converted() -> None:
    """An If branch and a model-local function body, each with Unsqueeze-11, moved to 13 (axes as inputs)."""
    branch_out = helper.make_tensor_value_info("b", F, [1, 3])
    then = helper.make_graph([helper.make_node("Unsqueeze", ["x"], ["b"], axes=[0])], "then", [], [branch_out])
    other_out = helper.make_tensor_value_info("c", F, [3, 1])
    other = helper.make_graph([helper.make_node("Unsqueeze", ["x"], ["c"], axes=[1])], "else", [], [other_out])
    fn = helper.make_function(
        "local", "addone", ["a"], ["o"], [helper.make_node("Unsqueeze", ["a"], ["o"], axes=[-1])],
        [helper.make_opsetid("", 11)],
    )  # fmt: skip
    nodes = [
        helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other),
        helper.make_node("addone", ["x"], ["z"], domain="local"),
    ]
    x = helper.make_tensor_value_info("x", F, [3])
    cond = helper.make_tensor_value_info("cond", TensorProto.DataType.BOOL, [])
    outs = [helper.make_tensor_value_info("y", F, [None, None]), helper.make_tensor_value_info("z", F, [3, 1])]
    graph = helper.make_graph(nodes, "g", [cond, x], outs)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 11), helper.make_opsetid("local", 1)], functions=[fn]
    )
    up = oc.convert_version(model, 13)
    assert not oc.check(up).errors
    assert up.functions[0].opset_import[0].version == 13
    assert [n.op_type for n in up.functions[0].node] == ["Constant", "Unsqueeze"]  # no initializers there
    assert all(len(n.input) == 2 for g in (up.graph.node[0].attribute) for n in g.g.node)
    for c in (True, False):
        feeds = {"cond": np.array(c), "x": np.arange(3, dtype=np.float32)}
        for a, b in zip(ours(up, feeds), ort_run(model, feeds)):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(ort_run(up, feeds), ort_run(model, feeds)):
            np.testing.assert_array_equal(a, b)


def test_type_admitted_only_later_gets_exact_casts() -> None:
    """Equal on int8 (Equal-11) down to 7, which admits int32 but not int8: Casts to int32 around it."""
    a = helper.make_tensor_value_info("a", TensorProto.DataType.INT8, [5])
    b = helper.make_tensor_value_info("b", TensorProto.DataType.INT8, [5])
    y = helper.make_tensor_value_info("y", TensorProto.DataType.BOOL, [5])
    model = model_of([helper.make_node("Equal", ["a", "b"], ["y"])], [a, b], [y], 13)
    down = oc.convert_version(model, 7)
    assert [n.op_type for n in down.graph.node] == ["Cast", "Cast", "Equal"]
    assert not oc.check(down).errors
    feeds = {"a": np.array([-128, 0, 5, 127, 3], np.int8), "b": np.array([-128, 1, 5, 127, -3], np.int8)}
    np.testing.assert_array_equal(ours(down, feeds)[0], ort_run(model, feeds)[0])
    np.testing.assert_array_equal(ort_run(down, feeds)[0], ort_run(model, feeds)[0])


def test_inexact_type_change_is_refused() -> None:
    """Gemm on int32 needs Gemm-11; computing it in a wider type is not offered (not a selecting operator)."""
    a = helper.make_tensor_value_info("a", TensorProto.DataType.INT32, [2, 2])
    y = helper.make_tensor_value_info("y", TensorProto.DataType.INT32, [2, 2])
    model = model_of([helper.make_node("Gemm", ["a", "a", "a"], ["y"], name="mm")], [a], [y], 13)
    with pytest.raises(ConversionError) as info:
        oc.convert_version(model, 8)
    assert "not admitted" in info.value.refusals[0].reason


def test_old_broadcast_axis_up() -> None:
    """Add-6 with broadcast=1, axis=1 places B at axis 1; Add-7 aligns trailing axes: B is unsqueezed."""
    a = helper.make_tensor_value_info("a", F, [2, 3, 4])
    b = helper.make_tensor_value_info("b", F, [3])
    y = helper.make_tensor_value_info("y", F, [2, 3, 4])
    model = model_of([helper.make_node("Add", ["a", "b"], ["y"], broadcast=1, axis=1)], [a, b], [y], 6)
    up = oc.convert_version(model, 13)
    assert not oc.check(up).errors
    feeds = {"a": np.ones((2, 3, 4), np.float32), "b": np.array([1, 2, 3], np.float32)}
    expected = feeds["a"] + feeds["b"].reshape(3, 1)
    np.testing.assert_array_equal(ort_run(up, feeds)[0], expected)
    np.testing.assert_array_equal(ours(up, feeds)[0], expected)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_external_data_kept_unread(tmp_path: Path) -> None:
    """A model with external data converts without its data file (moved away meanwhile); the file is untouched."""
    w = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    x = helper.make_tensor_value_info("x", F, [1, 64])
    y = helper.make_tensor_value_info("y", F, [1, 1, 64])
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Unsqueeze", ["m"], ["y"], axes=[0])]
    model = model_of(nodes, [x], [y], 11, initializer=[oc.from_array(w, "w")])
    src = tmp_path / "m.onnx"
    oc.save(model, src, external_data=True)
    data = next(p for p in tmp_path.iterdir() if p.name != "m.onnx")
    digest = _sha(data)
    loaded = oc.load(src, external_data=False)
    away = tmp_path / "away.bin"
    data.rename(away)  # converting must not need the file
    converted = oc.convert_version(loaded, 13)
    away.rename(data)
    out = tmp_path / "m13.onnx"
    oc.save(converted, out)
    assert _sha(data) == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["m.onnx", "m13.onnx", data.name])
    (t,) = [t for t in oc.load(out, external_data=False).graph.initializer if t.name == "w"]
    assert t.data_location == TensorProto.DataLocation.EXTERNAL
    feeds = {"x": np.ones((1, 64), np.float32)}
    np.testing.assert_allclose(ours(oc.load(out), feeds)[0], (feeds["x"] @ w)[None], rtol=1e-5)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    return subprocess.run(
        [sys.executable, "-m", "onnxcore", *args], capture_output=True, text=True, cwd=cwd, env=env, check=False
    )


def test_cli_convert_opset(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", F, [2, 3])
    axes = helper.make_tensor_value_info("axes", I64, [1])
    y = helper.make_tensor_value_info("y", F, [1, 2, 3])
    ok = model_of([helper.make_node("Unsqueeze", ["x"], ["y"], axes=[0])], [x], [y], 11)
    oc.save(ok, tmp_path / "ok.onnx")
    r = _cli("convert", "ok.onnx", "ok13.onnx", "--opset", "13", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert oc.load(tmp_path / "ok13.onnx").opset_import[0].version == 13
    bad = model_of([helper.make_node("Unsqueeze", ["x", "axes"], ["y"], name="u")], [x, axes], [y], 13)
    oc.save(bad, tmp_path / "bad.onnx")
    r = _cli("convert", "bad.onnx", "bad11.onnx", "--opset", "11", cwd=tmp_path)
    assert r.returncode == 1
    # The refused nodes on stdout, one per line; the failure is the one line on stderr (issue 41 item 4).
    assert 'graph/node[0] "u" (Unsqueeze-13 -> opset 11)' in r.stdout and "Traceback" not in r.stderr
    assert r.stderr.splitlines() == [
        "onnxcore convert: cannot convert to ai.onnx opset 11: 1 node refused (listed above); nothing written"
    ]
    assert not (tmp_path / "bad11.onnx").exists()


def test_ml_label_encoder_1_up_and_back() -> None:
    """LabelEncoder-1's class list becomes LabelEncoder-2's key/value map and back (ai.onnx.ml)."""
    x = helper.make_tensor_value_info("x", TensorProto.DataType.STRING, [4])
    y = helper.make_tensor_value_info("y", I64, [4])
    node = helper.make_node(
        "LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml", classes_strings=["a", "b", "c"], default_int64=-7
    )
    graph = helper.make_graph([node], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.ml", 1)])
    up = oc.convert_version(model, 2, domain="ai.onnx.ml")
    assert not oc.check(up).errors
    assert {a.name for a in up.graph.node[0].attribute} == {"keys_strings", "values_int64s", "default_int64"}
    feeds = {"x": np.array(["c", "a", "zz", "b"], dtype=object)}
    expected = ort_run(model, feeds)[0]
    np.testing.assert_array_equal(expected, [2, 0, -7, 1])
    np.testing.assert_array_equal(ours(up, feeds)[0], expected)
    np.testing.assert_array_equal(ort_run(up, feeds)[0], expected)
    back = oc.convert_version(up, 1, domain="ai.onnx.ml")
    np.testing.assert_array_equal(ort_run(back, feeds)[0], expected)


def test_cli_convert_opset_external_data_stays_beside(tmp_path: Path) -> None:
    """OUT beside MODEL keeps the data file referenced (byte-identical); elsewhere it is refused (exit 2)."""
    w = np.arange(4096, dtype=np.float32).reshape(64, 64)
    x = helper.make_tensor_value_info("x", F, [1, 64])
    y = helper.make_tensor_value_info("y", F, [1, 1, 64])
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Unsqueeze", ["m"], ["y"], axes=[0])]
    oc.save(model_of(nodes, [x], [y], 11, initializer=[oc.from_array(w, "w")]), tmp_path / "m.onnx", external_data=True)
    data = next(p for p in tmp_path.iterdir() if p.name != "m.onnx")
    digest = _sha(data)
    r = _cli("convert", "m.onnx", "m13.onnx", "--opset", "13", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert _sha(data) == digest
    feeds = {"x": np.ones((1, 64), np.float32)}
    np.testing.assert_array_equal(ours(oc.load(tmp_path / "m13.onnx"), feeds)[0], (feeds["x"] @ w)[None])
    (tmp_path / "sub").mkdir()
    r = _cli("convert", "m.onnx", "sub/m13.onnx", "--opset", "13", cwd=tmp_path)
    assert r.returncode == 2 and "external data" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "sub" / "m13.onnx").exists()


def test_value_info_of_an_annotated_model_covers_the_values_a_rewrite_adds() -> None:
    # Softmax-11 on a rank-3 input coerces to 2-D; Softmax-13 does not: going up, the adapter adds Flatten/Reshape
    # helper values. An annotated model (value_info for its intermediates) keeps stating every intermediate.
    x = helper.make_tensor_value_info("x", F, [2, 3, 4])
    y = helper.make_tensor_value_info("y", F, [2, 3, 4])
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Softmax", ["r"], ["y"], axis=1)]
    model = annotate(model_of(nodes, [x], [y], 11))
    assert [vi.name for vi in model.graph.value_info] == ["r"]
    up = oc.convert_version(model, 13)
    intermediates = {o for n in up.graph.node for o in n.output} - {"y"}
    assert len(intermediates) > 1  # the rewrite added values
    stated = {vi.name: vi for vi in up.graph.value_info}
    assert set(stated) == intermediates
    assert all(vi.type.tensor_type.shape is not None for vi in stated.values())
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)}
    np.testing.assert_allclose(ours(up, feeds)[0], ort_run(model, feeds)[0], rtol=1e-6)
    # A model that states no intermediates gets none.
    assert not oc.convert_version(model_of(nodes, [x], [y], 11), 13).graph.value_info
