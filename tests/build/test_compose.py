"""Composition (issue 23 part 5): add_prefix and merge_models against onnx.compose, on the light zoo and on
small models built with onnx.helper (subgraphs reading outer names, model-local functions, external data)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx.compose
import pytest
from corpus import light_model_input, shipped_models
from onnx import TensorProto, helper, numpy_helper

import onnxcore as oc
from onnxcore.build import CompositionError, add_prefix, add_prefix_graph, check_overlapping_names, merge_models
from onnxcore.build.compose import merge_graphs
from onnxcore.proto.message_walk import walk_messages

LIGHT = {p.name: p for p in shipped_models() if p.name.startswith("light_")}
SQUEEZENET = LIGHT["light_squeezenet.onnx"]
ZFNET = LIGHT["light_zfnet512.onnx"]
PRODUCER = "onnxcore.build.compose.merge_models"


def _run(model: object, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(v) for v in oc.Session(model).run(None, feeds)]


def _assert_conforms(model: oc.ModelProto) -> None:
    report = oc.check(model)
    assert not report.errors, str(report)


def _differences(ours: oc.Message, theirs: object) -> list[str]:
    """The fields of ``ours`` that differ from onnx's result (converted by from_onnx), one level down.

    Listed difference: onnx.compose sets an empty node name (``name = prefix + name`` when empty), making an
    empty name field present; ours leaves an absent name absent. Those are cleared before comparing.
    """
    t = oc.from_onnx(theirs)
    walk = walk_messages(t)
    for i in walk.by_class.get(oc.NodeProto, []):
        node = walk.entries[i][0]
        assert isinstance(node, oc.NodeProto)
        if not node.name:
            node.clear_field("name")
    out = []
    for f in ours._SPEC.fields:
        a, b = getattr(ours, f.name), getattr(t, f.name)
        if a == b:
            continue
        if isinstance(a, oc.Message) and isinstance(b, oc.Message):
            out.extend(f"{f.name}.{sub}" for sub in _differences(a, b))
        else:
            out.append(f.name)
    return out


def _postprocess(opsets: list[onnx.OperatorSetIdProto], ir_version: int) -> onnx.ModelProto:
    """Softmax, ArgMax and TopK over squeezenet's [1, 1000, 1, 1] scores (TopK's k an input from opset 10)."""
    version = next(o.version for o in opsets if o.domain in ("", "ai.onnx"))
    if version >= 10:
        topk = helper.make_node("TopK", ["flat", "k"], ["top_values", "top_indices"], name="topk")
        inits = [numpy_helper.from_array(np.array([5], dtype=np.int64), "k")]
    else:
        topk = helper.make_node("TopK", ["flat"], ["top_values", "top_indices"], name="topk", k=5)
        inits = []
    graph = helper.make_graph(
        [
            helper.make_node("Softmax", ["scores"], ["probs"], axis=1, name="softmax"),
            helper.make_node("ArgMax", ["probs"], ["best"], axis=1, name="argmax"),
            helper.make_node("Flatten", ["probs"], ["flat"], axis=1, name="flatten"),
            topk,
        ],
        "post",
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1000, 1, 1])],
        [
            helper.make_tensor_value_info("best", TensorProto.INT64, [1, 1, 1, 1]),
            helper.make_tensor_value_info("top_values", TensorProto.FLOAT, [1, 5]),
            helper.make_tensor_value_info("top_indices", TensorProto.INT64, [1, 5]),
        ],
        inits,
    )
    return helper.make_model(graph, opset_imports=opsets, ir_version=ir_version)


# ---- merge_models on the light zoo --------------------------------------------------------------------------


def test_squeezenet_feeding_a_postprocessor() -> None:
    m1 = onnx.load(str(SQUEEZENET))
    m2 = _postprocess(list(m1.opset_import), m1.ir_version)
    io_map = [("softmaxout_1", "scores")]
    merged = merge_models(m1, m2, io_map)
    _assert_conforms(merged)

    name, x = light_model_input(SQUEEZENET)
    (scores,) = _run(m1, {name: x})
    expected = _run(m2, {"scores": scores})
    assert [o.name for o in merged.graph.output] == ["best", "top_values", "top_indices"]
    for got, want in zip(_run(merged, {name: x}), expected, strict=True):
        np.testing.assert_array_equal(got, want)

    # The same as onnx.compose but for opset_import: onnx lists both models' imports (ai.onnx 9 twice).
    theirs = onnx.compose.merge_models(m1, m2, io_map, producer_name=PRODUCER)
    assert _differences(merged, theirs) == ["opset_import"]
    assert [(o.domain, o.version) for o in theirs.opset_import] == [("", 9), ("", 9)]
    assert [(o.domain, o.version) for o in merged.opset_import] == [("", 9)]


def test_two_light_models_side_by_side() -> None:
    m1, m2 = onnx.load(str(SQUEEZENET)), onnx.load(str(ZFNET))
    merged = merge_models(m1, m2, [], prefix1="squeeze/", prefix2="zf/")
    _assert_conforms(merged)
    n1, x1 = light_model_input(SQUEEZENET)
    n2, x2 = light_model_input(ZFNET)
    got = _run(merged, {"squeeze/" + n1: x1, "zf/" + n2: x2})
    want = _run(m1, {n1: x1}) + _run(m2, {n2: x2})
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)

    theirs = onnx.compose.merge_models(m1, m2, [], prefix1="squeeze/", prefix2="zf/", producer_name=PRODUCER)
    assert _differences(merged, theirs) == ["opset_import"]


def test_overlapping_names_are_refused_with_a_hint() -> None:
    m = onnx.load(str(SQUEEZENET))
    with pytest.raises(CompositionError, match=r"both use the edge names .*'softmaxout_1'.*prefix1= and/or prefix2="):
        merge_models(m, m, [])
    with pytest.raises(ValueError, match="overlapping names"):
        onnx.compose.merge_models(m, m, [])
    kinds = [kind for kind, _names in check_overlapping_names(m.graph, m.graph)]
    assert kinds == ["edge", "initializer", "node"]


@pytest.mark.parametrize("path", [SQUEEZENET, ZFNET], ids=lambda p: p.stem)
def test_add_prefix_matches_onnx_on_the_light_zoo(path: Path) -> None:
    m = onnx.load(str(path))
    ours = add_prefix(m, "p/")
    assert _differences(ours, onnx.compose.add_prefix(m, "p/")) == []
    _assert_conforms(ours)


@pytest.mark.parametrize(
    "flag",
    ["rename_nodes", "rename_edges", "rename_inputs", "rename_outputs", "rename_initializers", "rename_value_infos"],
)
def test_add_prefix_flags_match_onnx(flag: str) -> None:
    m = _postprocess([helper.make_opsetid("", 13)], 8)
    m.graph.value_info.append(helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 1000, 1, 1]))
    ours = add_prefix(m, "q_", **{flag: False})
    assert _differences(ours, onnx.compose.add_prefix(m, "q_", **{flag: False})) == []


def test_add_prefix_leaves_its_argument_alone_unless_inplace() -> None:
    m = oc.from_onnx(_postprocess([helper.make_opsetid("", 13)], 8))
    before = oc.encode(m)
    out = add_prefix(m, "a_")
    assert out is not m and oc.encode(m) == before
    assert add_prefix(m, "a_", inplace=True) is m
    assert m.graph.input[0].name == "a_scores"
    with pytest.raises(oc.MessageTypeError, match="inplace=True needs onnxcore's ModelProto"):
        add_prefix(_postprocess([helper.make_opsetid("", 13)], 8), "a_", inplace=True)


# ---- subgraphs and functions ----------------------------------------------------------------------------------


def _model_with_subgraphs() -> onnx.ModelProto:
    """An If whose branches read an outer initializer, an outer node output and an outer input, and a Loop
    whose body has inputs and values of its own and reads an outer value."""
    f = TensorProto.FLOAT
    then_g = helper.make_graph(
        [helper.make_node("Add", ["h", "w"], ["t_sum"], name="then_add")],
        "then",
        [],
        [helper.make_tensor_value_info("t_sum", f, [2])],
    )
    else_g = helper.make_graph(
        [helper.make_node("Sub", ["h", "x"], ["e_diff"], name="else_sub")],
        "else",
        [],
        [helper.make_tensor_value_info("e_diff", f, [2])],
    )
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
            helper.make_node("Add", ["acc_in", "w"], ["acc_out"], name="body_add"),
        ],
        "body",
        [
            helper.make_tensor_value_info("iter", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", f, [2]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", f, [2]),
        ],
    )
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["h"], name="relu"),
            helper.make_node("If", ["c"], ["branch"], name="if", then_branch=then_g, else_branch=else_g),
            helper.make_node("Loop", ["n", "", "branch"], ["looped"], name="loop", body=body),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", f, [2]),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("n", TensorProto.INT64, []),
        ],
        [helper.make_tensor_value_info("looped", f, [2])],
        [numpy_helper.from_array(np.array([1.0, 2.0], dtype=np.float32), "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_add_prefix_renames_subgraphs_consistently() -> None:
    m = _model_with_subgraphs()
    ours = add_prefix(m, "s_")
    _assert_conforms(ours)
    g = ours.graph
    else_g, then_g = g.node[1].attribute[0].g, g.node[1].attribute[1].g  # onnx.helper sorts attributes
    assert list(then_g.node[0].input) == ["s_h", "s_w"]  # an outer node output and an outer initializer
    assert list(else_g.node[0].input) == ["s_h", "s_x"]  # an outer input
    assert then_g.node[0].name == "s_then_add" and then_g.output[0].name == "s_t_sum"
    body = g.node[2].attribute[0].g
    assert [v.name for v in body.input] == ["s_iter", "s_cond_in", "s_acc_in"]
    assert list(body.node[1].input) == ["s_acc_in", "s_w"]
    feeds = {"x": np.array([-1.0, 3.0], np.float32), "c": np.array(True), "n": np.array(3, np.int64)}
    renamed = {"s_" + k: v for k, v in feeds.items()}
    for c in (True, False):
        feeds["c"] = renamed["s_c"] = np.array(c)
        np.testing.assert_array_equal(_run(ours, renamed)[0], _run(m, feeds)[0])

    # Listed difference: onnx.compose adds the outer graph's initializers to its renaming only after the
    # subgraphs are done, so a branch reading the initializer 'w' keeps reading 'w', which no longer exists.
    theirs = onnx.compose.add_prefix(m, "s_")
    assert list(theirs.graph.node[1].attribute[1].g.node[0].input) == ["s_h", "w"]
    assert _differences(ours, theirs) == ["graph.node"]


def test_add_prefix_graph_on_a_subgraph_reading_outer_names_only() -> None:
    g = oc.from_onnx(_model_with_subgraphs().graph)
    out = add_prefix_graph(g, "z_", rename_edges=False)
    assert [n.output[0] for n in out.node] == ["h", "branch", "z_looped"]
    then_g = out.node[1].attribute[1].g
    # 'h' is a node output (not renamed with rename_edges=False), 'w' an initializer (renamed).
    assert list(then_g.node[0].input) == ["h", "z_w"]
    assert then_g.output[0].name == "z_t_sum"


def _model_with_function() -> onnx.ModelProto:
    f = TensorProto.FLOAT
    fn = helper.make_function(
        "local",
        "AddRelu",
        ["a", "b"],
        ["y"],
        [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
        [helper.make_opsetid("", 17)],
    )
    then_g = helper.make_graph(
        [helper.make_node("AddRelu", ["x", "x"], ["t"], domain="local", name="in_branch")],
        "then",
        [],
        [helper.make_tensor_value_info("t", f, [2])],
    )
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"])], "else", [], [helper.make_tensor_value_info("e", f, [2])]
    )
    graph = helper.make_graph(
        [
            helper.make_node("AddRelu", ["x", "x"], ["y1"], domain="local", name="call"),
            helper.make_node("If", ["c"], ["y2"], then_branch=then_g, else_branch=else_g),
        ],
        "g",
        [helper.make_tensor_value_info("x", f, [2]), helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y1", f, [2]), helper.make_tensor_value_info("y2", f, [2])],
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
        ir_version=8,
        functions=[fn],
    )


def test_add_prefix_renames_functions_and_their_callers() -> None:
    m = _model_with_function()
    ours = add_prefix(m, "f_")
    _assert_conforms(ours)
    assert ours.functions[0].name == "f_AddRelu"
    assert list(ours.functions[0].node[0].input) == ["a", "b"]  # a function body's names are its own
    assert ours.graph.node[0].op_type == "f_AddRelu"
    assert ours.graph.node[1].attribute[1].g.node[0].op_type == "f_AddRelu"
    feeds = {"x": np.array([-1.0, 2.0], np.float32), "c": np.array(True)}
    got = _run(ours, {"f_" + k: v for k, v in feeds.items()})
    for g, w in zip(got, _run(m, feeds), strict=True):
        np.testing.assert_array_equal(g, w)
    # Listed difference: onnx.compose renames the callers in the top-level graph and function bodies only.
    theirs = onnx.compose.add_prefix(m, "f_")
    assert theirs.graph.node[1].attribute[1].g.node[0].op_type == "AddRelu"
    assert _differences(ours, theirs) == ["graph.node"]
    assert add_prefix(m, "f_", rename_functions=False).functions[0].name == "AddRelu"


def test_add_prefix_keeps_external_data_references(tmp_path: Path) -> None:
    m = onnx.load(str(SQUEEZENET))
    path = tmp_path / "model.onnx"
    onnx.save_model(m, str(path), save_as_external_data=True, location="weights.bin", size_threshold=0)
    loaded = oc.load(path, external_data=False)
    external = [t for t in loaded.graph.initializer if t.external_data]
    assert external
    out = add_prefix(loaded, "x/")
    by_name = {t.name: t for t in out.graph.initializer}
    for t in external:
        moved = by_name["x/" + t.name]
        assert moved.external_data == t.external_data
        assert moved.data_location == t.data_location


# ---- merging: connections, functions, refusals ----------------------------------------------------------------


def _tiny(op: str, x: str, y: str, opset: int = 17, shape: tuple[int, ...] = (2,)) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node(op, [x], [y], name=f"{op.lower()}_{y}")],
        f"g_{op.lower()}",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, shape)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def test_different_opset_versions_are_refused() -> None:
    m1, m2 = _tiny("Relu", "x", "y", opset=13), _tiny("Neg", "a", "b", opset=17)
    with pytest.raises(
        CompositionError,
        match=r"domain 'ai\.onnx' is imported at version 13 by the first model and at version 17 by the second",
    ):
        merge_models(m1, m2, [("y", "a")])
    with pytest.raises(ValueError, match="different operator set ids"):
        onnx.compose.merge_models(m1, m2, [("y", "a")])
    # "" and "ai.onnx" are one domain.
    m2.opset_import[0].domain = "ai.onnx"
    m2.opset_import[0].version = 13
    merged = merge_models(m1, m2, [("y", "a")])
    assert [(o.domain, o.version) for o in merged.opset_import] == [("", 13)]


def test_ir_version_is_the_greater() -> None:
    m1, m2 = _tiny("Relu", "x", "y"), _tiny("Neg", "a", "b")
    m2.ir_version = 9
    merged = merge_models(m1, m2, [("y", "a")])
    assert merged.ir_version == 9
    _assert_conforms(merged)
    with pytest.raises(ValueError, match="IR version mismatch"):  # listed difference: onnx refuses
        onnx.compose.merge_models(m1, m2, [("y", "a")])


def test_connection_reaches_into_subgraphs_and_pass_through_outputs() -> None:
    m1 = _tiny("Relu", "x", "y")
    then_g = helper.make_graph(
        [helper.make_node("Neg", ["a"], ["t"])],
        "then",
        [],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])],
    )
    else_g = helper.make_graph(
        [helper.make_node("Abs", ["a"], ["e"])],
        "else",
        [],
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])],
    )
    g2 = helper.make_graph(
        [helper.make_node("If", ["c"], ["z"], then_branch=then_g, else_branch=else_g)],
        "g2",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        ],
        [
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
        ],
    )
    m2 = helper.make_model(g2, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    merged = merge_models(m1, m2, [("y", "a")])
    _assert_conforms(merged)
    assert [v.name for v in merged.graph.input] == ["x", "c"]
    assert [v.name for v in merged.graph.output] == ["z", "a"]  # 'a' passed through: kept by an Identity
    x = np.array([-1.0, 2.0], np.float32)
    z, a = _run(merged, {"x": x, "c": np.array(True)})
    np.testing.assert_array_equal(z, -np.maximum(x, 0))
    np.testing.assert_array_equal(a, np.maximum(x, 0))


def test_functions_are_merged_and_clashes_refused() -> None:
    m1 = _model_with_function()
    m2 = _model_with_function()
    with pytest.raises(CompositionError, match="both use the"):
        merge_models(m1, m2, [])
    merged = merge_models(m1, m2, [], prefix1="a_", prefix2="b_")
    assert [f.name for f in merged.functions] == ["a_AddRelu", "b_AddRelu"]
    _assert_conforms(merged)

    # The same function in both models is kept once (onnx refuses any two functions of one name).
    m3 = add_prefix(_model_with_function(), "c_", rename_functions=False)
    merged = merge_models(m1, m3, [])
    assert [f.name for f in merged.functions] == ["AddRelu"]
    _assert_conforms(merged)
    with pytest.raises(ValueError, match="overlapping local function names"):
        onnx.compose.merge_models(m1, oc.to_onnx(m3, onnx.ModelProto), [])

    # The same (domain, name, overload) with another body is refused.
    m3.functions[0].node[1].op_type = "Sigmoid"
    with pytest.raises(CompositionError, match="both models define function local:AddRelu with different bodies"):
        merge_models(m1, m3, [])


def test_metadata_is_merged_and_conflicts_refused() -> None:
    m1, m2 = _tiny("Relu", "x", "y"), _tiny("Neg", "a", "b")
    helper.set_model_props(m1, {"author": "me", "task": "relu"})
    helper.set_model_props(m2, {"author": "me", "license": "MIT"})
    merged = merge_models(m1, m2, [("y", "a")])
    assert {e.key: e.value for e in merged.metadata_props} == {"author": "me", "task": "relu", "license": "MIT"}
    helper.set_model_props(m2, {"author": "you"})
    with pytest.raises(CompositionError, match="metadata property 'author' is 'me' in the first model and 'you'"):
        merge_models(m1, m2, [("y", "a")])


def test_io_map_mistakes_are_refused() -> None:
    m1, m2 = _tiny("Relu", "x", "y"), _tiny("Neg", "a", "b")
    with pytest.raises(CompositionError, match="'nope' is not an output of the first graph"):
        merge_models(m1, m2, [("nope", "a")])
    with pytest.raises(CompositionError, match="'nope' is not an input of the second graph"):
        merge_models(m1, m2, [("y", "nope")])
    m2.graph.input[0].type.tensor_type.elem_type = TensorProto.INT64
    with pytest.raises(CompositionError, match="element type 1, input 'a' of the second graph takes element type 7"):
        merge_models(m1, m2, [("y", "a")])


def test_inputs_and_outputs_keep_what_they_need() -> None:
    m1 = _postprocess([helper.make_opsetid("", 13)], 8)
    m2 = _tiny("Neg", "a", "b", opset=13, shape=(1, 5))
    merged = merge_models(m1, m2, [("top_values", "a")], outputs=["best", "b"])
    _assert_conforms(merged)
    assert [v.name for v in merged.graph.output] == ["best", "b"]
    assert [n.name for n in merged.graph.node] == ["softmax", "argmax", "flatten", "topk", "neg_b"]
    merged = merge_models(m1, m2, [], outputs=["best"], prefix2="n_")
    assert [n.name for n in merged.graph.node] == ["softmax", "argmax"]
    assert [v.name for v in merged.graph.input] == ["scores", "n_a"]  # without `inputs`, every input stays
    with pytest.raises(CompositionError, match="outputs \\['nope'\\] are outputs of neither graph"):
        merge_models(m1, m2, [], outputs=["nope"], prefix2="n_")


def test_merge_graphs_prefixes_and_refuses_like_merge_models() -> None:
    g1, g2 = _tiny("Relu", "x", "y").graph, _tiny("Relu", "x", "y").graph
    with pytest.raises(CompositionError, match="'x', 'y'"):
        merge_graphs(g1, g2, [])
    g = merge_graphs(g1, g2, [("y", "x")], prefix1="a_", prefix2="b_")
    assert [n.input[0] for n in g.node] == ["a_x", "a_y"]
    assert g.name == "g_relu_g_relu"
    theirs = onnx.compose.merge_graphs(g1, g2, [("y", "x")], prefix1="a_", prefix2="b_")
    assert _differences(g, theirs) == []


def test_inputs_restrict_and_refuse_what_they_leave_out() -> None:
    m1 = _tiny("Relu", "x", "y")
    g2 = helper.make_graph(
        [helper.make_node("Neg", ["a"], ["b"], name="neg"), helper.make_node("Abs", ["u"], ["v"], name="abs")],
        "g2",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("a", "u")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("b", "v")],
    )
    m2 = helper.make_model(g2, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with pytest.raises(CompositionError, match="the outputs kept of the second graph need its input\\(s\\) 'u'"):
        merge_models(m1, m2, [("y", "a")], inputs=["x"])
    merged = merge_models(m1, m2, [("y", "a")], inputs=["x"], outputs=["b"])
    _assert_conforms(merged)
    assert [v.name for v in merged.graph.input] == ["x"]
    assert [n.name for n in merged.graph.node] == ["relu_y", "neg"]
    theirs = onnx.compose.merge_models(m1, m2, [("y", "a")], inputs=["x"], outputs=["b"], producer_name=PRODUCER)
    # Listed differences: onnx's extraction renames the graphs ("Extracted from {...}", which the merged
    # name and doc string repeat) and copies the kept inputs and outputs into value_info.
    assert theirs.graph.name == "g_relu_Extracted from {g2}"
    assert sorted(_differences(merged, theirs)) == [
        "graph.doc_string",
        "graph.name",
        "graph.value_info",
        "opset_import",
    ]


def test_merge_models_leaves_its_arguments_alone() -> None:
    m1 = oc.from_onnx(_model_with_function())
    m2 = oc.from_onnx(_tiny("Neg", "a", "b"))
    before = oc.encode(m1), oc.encode(m2)
    merge_models(m1, m2, [("y1", "a")], prefix1="p_", prefix2="q_")
    assert (oc.encode(m1), oc.encode(m2)) == before
