"""Type inference on hand-built graphs: attribute-typed outputs, control flow, model-local functions,
mismatches and malformed models (Clauses 7.6, 8.4, 9.4). onnx's shape inference is the oracle."""

from __future__ import annotations

import pytest

import onnxcore
import onnxcore.defs
from onnxcore.infer import infer, infer_types, node_location
from onnxcore.types.typestr import type_string

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import shape_inference  # noqa: E402

FLOAT = T.FLOAT


def ours(model) -> onnxcore.ModelProto:
    return onnxcore.decode(onnxcore.ModelProto, model.SerializeToString())


def onnx_types(model) -> dict[str, str]:
    """Type strings onnx infers for the top-level graph's values (its oracle for these models)."""
    inferred = shape_inference.infer_shapes(model, strict_mode=True)
    out = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        t = type_string(onnxcore.decode(onnxcore.TypeProto, vi.type.SerializeToString()))
        if t is not None:
            out[vi.name] = t
    return out


def make_model(nodes, inputs, outputs, *, opset=21, functions=(), value_info=(), extra_opsets=()):
    g = h.make_graph(nodes, "g", inputs, outputs, value_info=list(value_info))
    imports = [h.make_opsetid("", opset), *extra_opsets]
    return h.make_model(g, opset_imports=imports, functions=list(functions), ir_version=10)


def untyped(name: str):
    return onnx.ValueInfoProto(name=name)


def agree_with_onnx(model) -> dict[str, str]:
    theirs = onnx_types(model)
    mine = infer(ours(model)).type_strings["graph"]
    for name, t in theirs.items():
        assert mine.get(name) == t, (name, t, mine.get(name))
    return mine


def test_attribute_typed_outputs_agree_with_onnx():
    sparse = h.make_sparse_tensor(
        h.make_tensor("v", T.INT32, [2], [5, 6]), h.make_tensor("i", T.INT64, [2], [0, 3]), [4]
    )
    nodes = [
        h.make_node("Cast", ["x"], ["cast"], to=T.INT64),
        h.make_node("CastLike", ["x", "cast"], ["castlike"]),
        h.make_node("Shape", ["x"], ["shape"]),
        h.make_node("Size", ["x"], ["size"]),
        h.make_node("ConstantOfShape", ["shape"], ["cos_default"]),
        h.make_node("ConstantOfShape", ["shape"], ["cos_i32"], value=h.make_tensor("v", T.INT32, [1], [3])),
        h.make_node("EyeLike", ["m"], ["eye_same"]),
        h.make_node("EyeLike", ["m"], ["eye_dtype"], dtype=T.DOUBLE),
        h.make_node("RandomNormal", [], ["rn"], shape=[2]),
        h.make_node("RandomUniform", [], ["ru"], shape=[2], dtype=T.FLOAT16),
        h.make_node("RandomNormalLike", ["x"], ["rnl"]),
        h.make_node("RandomUniformLike", ["x"], ["rul"], dtype=T.DOUBLE),
        h.make_node("Multinomial", ["m"], ["mult"]),
        h.make_node("Multinomial", ["m"], ["mult64"], dtype=T.INT64),
        h.make_node("Bernoulli", ["x"], ["bern"]),
        h.make_node("Bernoulli", ["x"], ["bern_b"], dtype=T.BOOL),
        h.make_node("Constant", [], ["c_ints"], value_ints=[1, 2]),
        h.make_node("Constant", [], ["c_float"], value_float=1.5),
        h.make_node("Constant", [], ["c_str"], value_strings=["a"]),
        h.make_node("Constant", [], ["c_t"], value=h.make_tensor("t", T.UINT8, [1], [1])),
        h.make_node("Constant", [], ["c_sparse"], sparse_value=sparse),
        h.make_node("SequenceEmpty", [], ["seq_empty"]),
        h.make_node("SequenceEmpty", [], ["seq_i64"], dtype=T.INT64),
        h.make_node("SequenceConstruct", ["x", "x"], ["seq"]),
        h.make_node("SequenceAt", ["seq", "size"], ["seq_at"]),
        h.make_node("ConcatFromSequence", ["seq"], ["concat"], axis=0),
        h.make_node("SplitToSequence", ["cast"], ["split"]),
        h.make_node("SequenceLength", ["seq"], ["seq_len"]),
        h.make_node("Optional", ["x"], ["opt"]),
        h.make_node("Optional", [], ["opt_t"], type=h.make_tensor_type_proto(T.INT8, None)),
        h.make_node("OptionalHasElement", ["opt"], ["has"]),
        h.make_node("OptionalGetElement", ["opt"], ["got"]),
        h.make_node("QuantizeLinear", ["x", "scale"], ["q_default"]),
        h.make_node("QuantizeLinear", ["x", "scale"], ["q_dtype"], output_dtype=T.INT8),
        h.make_node("DequantizeLinear", ["q_dtype", "scale"], ["dq"]),
        h.make_node("HannWindow", ["size"], ["hann"]),
        h.make_node("HammingWindow", ["size"], ["hamming"], output_datatype=T.DOUBLE),
        h.make_node("LayerNormalization", ["x", "x"], ["ln", "ln_mean", "ln_inv"], axis=-1),
    ]
    inputs = [
        h.make_tensor_value_info("x", FLOAT, [3]),
        h.make_tensor_value_info("m", FLOAT, [2, 2]),
        h.make_tensor_value_info("scale", FLOAT, []),
    ]
    outputs = [h.make_tensor_value_info("cast", T.UNDEFINED, None)]
    mine = agree_with_onnx(make_model(nodes, inputs, outputs))
    expected = {
        "cast": "tensor(int64)",
        "castlike": "tensor(int64)",
        "cos_default": "tensor(float)",
        "cos_i32": "tensor(int32)",
        "eye_same": "tensor(float)",
        "eye_dtype": "tensor(double)",
        "rn": "tensor(float)",
        "ru": "tensor(float16)",
        "rnl": "tensor(float)",
        "rul": "tensor(double)",
        "mult": "tensor(int32)",
        "mult64": "tensor(int64)",
        "bern": "tensor(float)",
        "bern_b": "tensor(bool)",
        "c_ints": "tensor(int64)",
        "c_float": "tensor(float)",
        "c_str": "tensor(string)",
        "c_t": "tensor(uint8)",
        "c_sparse": "tensor(int32)",
        "seq_empty": "seq(tensor(float))",
        "seq_i64": "seq(tensor(int64))",
        "seq": "seq(tensor(float))",
        "seq_at": "tensor(float)",
        "concat": "tensor(float)",
        "split": "seq(tensor(int64))",
        "seq_len": "tensor(int64)",
        "opt": "optional(tensor(float))",
        "opt_t": "optional(tensor(int8))",
        "has": "tensor(bool)",
        "got": "tensor(float)",
        "q_default": "tensor(uint8)",
        "q_dtype": "tensor(int8)",
        "dq": "tensor(float)",
        "hann": "tensor(float)",
        "hamming": "tensor(double)",
        "ln": "tensor(float)",
        "ln_mean": "tensor(float)",
        "ln_inv": "tensor(float)",
        "shape": "tensor(int64)",
        "size": "tensor(int64)",
    }
    for name, t in expected.items():
        assert mine.get(name) == t, name


def test_if_outputs_come_from_the_branches():
    then_g = h.make_graph([h.make_node("Cast", ["x"], ["t_out"], to=T.INT32)], "then", [], [untyped("t_out")])
    else_g = h.make_graph(
        [h.make_node("Shape", ["x"], ["s"]), h.make_node("Cast", ["s"], ["e_out"], to=T.INT32)],
        "else",
        [],
        [untyped("e_out")],
    )
    nodes = [
        h.make_node("ReduceSum", ["x"], ["sum"]),
        h.make_node("Cast", ["sum"], ["cond"], to=T.BOOL),
        h.make_node("If", ["cond"], ["y"], name="if1", then_branch=then_g, else_branch=else_g),
        h.make_node("Neg", ["y"], ["z"]),
    ]
    model = make_model(nodes, [h.make_tensor_value_info("x", FLOAT, [3])], [untyped("z")])
    mine = agree_with_onnx(model)
    assert mine["y"] == mine["z"] == "tensor(int32)"
    r = infer(ours(model))
    assert r.type_strings['graph/node[2] "if1"/then_branch']["t_out"] == "tensor(int32)"
    assert r.type_strings['graph/node[2] "if1"/else_branch']["s"] == "tensor(int64)"
    # the subgraph node sees the outer value x (Clause 7.6)
    inner = r.node('graph/node[2] "if1"/then_branch/node[0]')
    assert inner is not None and inner.input_types == ("tensor(float)",)


def test_if_branches_that_disagree_give_unknown():
    then_g = h.make_graph([h.make_node("Cast", ["x"], ["a"], to=T.INT32)], "then", [], [untyped("a")])
    else_g = h.make_graph([h.make_node("Cast", ["x"], ["b"], to=T.INT64)], "else", [], [untyped("b")])
    nodes = [h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    model = make_model(
        nodes, [h.make_tensor_value_info("x", FLOAT, [3]), h.make_tensor_value_info("c", T.BOOL, [])], [untyped("y")]
    )
    assert "y" not in infer(ours(model)).type_strings["graph"]


def _loop_model(*, body_inputs_typed: bool):
    if body_inputs_typed:
        body_in = [
            h.make_tensor_value_info("i", T.INT64, []),
            h.make_tensor_value_info("cond_in", T.BOOL, []),
            h.make_tensor_value_info("acc_in", FLOAT, [3]),
        ]
    else:
        body_in = [untyped("i"), untyped("cond_in"), untyped("acc_in")]
    body = h.make_graph(
        [
            h.make_node("Identity", ["cond_in"], ["cond_out"]),
            h.make_node("Add", ["acc_in", "x"], ["acc_out"]),
            h.make_node("Cast", ["i"], ["scan_out"], to=T.INT32),
        ],
        "body",
        body_in,
        [untyped("cond_out"), untyped("acc_out"), untyped("scan_out")],
    )
    nodes = [
        h.make_node("Constant", [], ["trip"], value=h.make_tensor("t", T.INT64, [], [4])),
        h.make_node("Constant", [], ["go"], value=h.make_tensor("t", T.BOOL, [], [True])),
        h.make_node("Loop", ["trip", "go", "x"], ["acc", "scans"], name="loop1", body=body),
    ]
    return make_model(nodes, [h.make_tensor_value_info("x", FLOAT, [3])], [untyped("acc"), untyped("scans")])


@pytest.mark.parametrize("typed", [True, False])
def test_loop_outputs(typed):
    model = _loop_model(body_inputs_typed=typed)
    mine = agree_with_onnx(model)
    assert mine["acc"] == "tensor(float)"
    assert mine["scans"] == "tensor(int32)"
    r = infer(ours(model))
    body = r.type_strings['graph/node[2] "loop1"/body']
    assert body == {
        "i": "tensor(int64)",
        "cond_in": "tensor(bool)",
        "acc_in": "tensor(float)",
        "cond_out": "tensor(bool)",
        "acc_out": "tensor(float)",
        "scan_out": "tensor(int32)",
    }
    assert not r.mismatches


def test_scan_outputs():
    body = h.make_graph(
        [
            h.make_node("Add", ["s_in", "e"], ["s_out"]),
            h.make_node("Cast", ["e"], ["y"], to=T.DOUBLE),
        ],
        "body",
        [untyped("s_in"), untyped("e")],
        [untyped("s_out"), untyped("y")],
    )
    nodes = [h.make_node("Scan", ["s0", "xs"], ["s_final", "ys"], body=body, num_scan_inputs=1)]
    model = make_model(
        nodes,
        [h.make_tensor_value_info("s0", FLOAT, [2]), h.make_tensor_value_info("xs", FLOAT, [5, 2])],
        [untyped("s_final"), untyped("ys")],
    )
    mine = agree_with_onnx(model)
    assert mine["s_final"] == "tensor(float)"
    assert mine["ys"] == "tensor(double)"


def test_sequence_map():
    body = h.make_graph([h.make_node("Cast", ["e"], ["o"], to=T.INT64)], "body", [untyped("e")], [untyped("o")])
    nodes = [
        h.make_node("SequenceConstruct", ["x"], ["seq"]),
        h.make_node("SequenceMap", ["seq"], ["mapped"], body=body),
    ]
    model = make_model(nodes, [h.make_tensor_value_info("x", FLOAT, [3])], [untyped("mapped")])
    mine = agree_with_onnx(model)
    assert mine["mapped"] == "seq(tensor(int64))"


def _local_functions():
    # local:CastTo(X) -> Y with attribute "to" referenced by the body's Cast (Clause 8.4), and a default
    cast_to = h.make_function(
        "local",
        "CastTo",
        ["X"],
        ["Y"],
        [h.make_node("Relu", ["X"], ["R"]), _ref_cast()],
        [h.make_opsetid("", 21)],
        attributes=[],
        attribute_protos=[h.make_attribute("to", T.FLOAT16)],
    )
    twice = h.make_function(
        "local",
        "Twice",
        ["A"],
        ["B"],
        [h.make_node("CastTo", ["A"], ["M"], domain="local", to=T.DOUBLE), h.make_node("Add", ["M", "M"], ["B"])],
        [h.make_opsetid("", 21), h.make_opsetid("local", 1)],
    )
    return [cast_to, twice]


def _ref_cast():
    node = h.make_node("Cast", ["R"], ["Y"])
    a = onnx.AttributeProto(name="to", ref_attr_name="to", type=onnx.AttributeProto.INT)
    node.attribute.append(a)
    return node


def test_model_local_functions_per_call_site():
    nodes = [
        h.make_node("CastTo", ["x"], ["y_i64"], domain="local", to=T.INT64),
        h.make_node("CastTo", ["x"], ["y_default"], domain="local"),
        h.make_node("Twice", ["x"], ["y_twice"], domain="local"),
        h.make_node("Neg", ["y_i64"], ["z"]),
    ]
    model = make_model(
        nodes,
        [h.make_tensor_value_info("x", FLOAT, [3])],
        [untyped("z"), untyped("y_default"), untyped("y_twice")],
        functions=_local_functions(),
        extra_opsets=[h.make_opsetid("local", 1)],
    )
    mine = agree_with_onnx(model)
    assert mine["y_i64"] == mine["z"] == "tensor(int64)"
    assert mine["y_default"] == "tensor(float16)"
    assert mine["y_twice"] == "tensor(double)"
    r = infer(ours(model))
    call = r.node("graph/node[0]")
    assert call is not None and call.function is not None and call.function.name == "CastTo" and call.schema is None
    # the bodies as written: untyped inputs, unresolved references, nothing contradicts
    body = r.type_strings['functions[0] "local:CastTo"']
    assert "Y" not in body
    assert 'functions[1] "local:Twice"' in r.type_strings
    assert not r.mismatches


def test_recursive_function_stays_unknown():
    rec = h.make_function(
        "local", "Rec", ["X"], ["Y"], [h.make_node("Rec", ["X"], ["Y"], domain="local")], [h.make_opsetid("local", 1)]
    )
    model = make_model(
        [h.make_node("Rec", ["x"], ["y"], domain="local")],
        [h.make_tensor_value_info("x", FLOAT, [3])],
        [untyped("y")],
        functions=[rec],
        extra_opsets=[h.make_opsetid("local", 1)],
    )
    r = infer(ours(model))
    assert "y" not in r.type_strings["graph"]


def test_declared_type_contradicted_is_reported():
    nodes = [h.make_node("Cast", ["x"], ["y"], name="c", to=T.INT64), h.make_node("Relu", ["x"], ["z"])]
    model = make_model(
        nodes,
        [h.make_tensor_value_info("x", FLOAT, [3])],
        [h.make_tensor_value_info("y", T.INT32, [3]), untyped("z")],
        value_info=[h.make_tensor_value_info("z", T.DOUBLE, [3])],
    )
    r = infer(ours(model))
    got = {(m.name, m.location, m.declared, m.inferred) for m in r.mismatches}
    assert got == {
        ("y", 'graph/node[0] "c"/output[0]', "tensor(int32)", "tensor(int64)"),
        ("z", "graph/node[1]/output[0]", "tensor(double)", "tensor(float)"),
    }
    # declared types are what the model states: they win downstream
    assert r.type_strings["graph"]["y"] == "tensor(int32)"
    types = infer_types(ours(model))
    assert types["graph"]["y"].tensor_type.shape is not None  # the declared message, shape included


def test_subgraph_input_contradicting_its_feed_is_reported():
    model = _loop_model(body_inputs_typed=True)
    model.graph.node[2].attribute[0].g.input[2].type.tensor_type.elem_type = T.INT64  # acc_in: int64
    r = infer(ours(model))
    assert [(m.name, m.location) for m in r.mismatches] == [("acc_in", 'graph/node[2] "loop1"/body/input[2]')]


def test_unknown_stays_unknown():
    nodes = [
        h.make_node("Mystery", ["x"], ["a"], domain="com.example"),
        h.make_node("Relu", ["a"], ["b"]),
        h.make_node("Add", ["x", "c"], ["d"]),  # c never produced
    ]
    model = make_model(
        nodes,
        [h.make_tensor_value_info("x", FLOAT, [3])],
        [untyped("b"), untyped("d")],
        extra_opsets=[h.make_opsetid("com.example", 1)],
    )
    r = infer(ours(model))
    g = r.type_strings["graph"]
    assert "a" not in g and "b" not in g
    assert g["d"] == "tensor(float)"  # one input binds T
    assert not r.mismatches
    mystery = r.node("graph/node[0]")
    assert mystery is not None and mystery.schema is None and mystery.output_types == (None,)


def test_conflicting_bindings_are_exposed():
    nodes = [h.make_node("Add", ["x", "n"], ["y"])]
    model = make_model(
        nodes, [h.make_tensor_value_info("x", FLOAT, [3]), h.make_tensor_value_info("n", T.INT64, [3])], [untyped("y")]
    )
    r = infer(ours(model))
    nt = r.node("graph/node[0]")
    assert nt is not None
    assert nt.conflicts == frozenset({"T"})
    assert nt.input_types == ("tensor(float)", "tensor(int64)")
    assert "y" not in r.type_strings["graph"]


def test_binding_follows_the_model_opset():
    # Clause 14.4: at opset 12 Clip-11's min/max are bound as T; nodes bind per import
    model = make_model(
        [h.make_node("Clip", ["x", "lo"], ["y"])],
        [h.make_tensor_value_info("x", FLOAT, [3]), h.make_tensor_value_info("lo", FLOAT, [])],
        [untyped("y")],
        opset=12,
    )
    r = infer(ours(model))
    nt = r.node("graph/node[0]")
    assert nt is not None and nt.schema is not None and nt.schema.since_version == 12
    assert r.type_strings["graph"]["y"] == "tensor(float)"
    # an op newer than the import binds nothing: outputs unknown
    model = make_model(
        [h.make_node("Gelu", ["x"], ["y"])], [h.make_tensor_value_info("x", FLOAT, [3])], [untyped("y")], opset=19
    )
    r = infer(ours(model))
    assert r.node("graph/node[0]").schema is None and "y" not in r.type_strings["graph"]


def test_malformed_models_never_raise():
    bad_scan_body = h.make_graph([], "b", [], [])
    nodes = [
        h.make_node("Cast", ["x"], ["a"]),  # no "to"
        h.make_node("Cast", ["x"], ["b"], to="oops"),  # wrong attribute type
        h.make_node("Cast", ["x"], ["b2"], to=999),  # not an element type
        h.make_node("If", ["x"], ["c"]),  # no branches
        h.make_node("Loop", [], ["d"]),  # no body, no inputs
        h.make_node("Scan", ["x"], ["e"], body=bad_scan_body),  # no num_scan_inputs
        h.make_node("Scan", ["x"], ["e2"], body=bad_scan_body, num_scan_inputs=5),
        h.make_node("Relu", ["x", "x", "x"], ["f", "g"]),  # too many inputs and outputs
        h.make_node("ConstantOfShape", ["x"], ["k"], value=h.make_attribute("value", 1.0).t),
        h.make_node("Constant", [], ["l"]),  # no value at all
        h.make_node("SequenceAt", ["x", "x"], ["m"]),  # not a sequence
        h.make_node("Optional", [], ["o"]),
        h.make_node("CastMap", ["x"], ["p"], domain="ai.onnx.ml", cast_to="TO_NOWHERE"),
    ]
    model = make_model(nodes, [h.make_tensor_value_info("x", FLOAT, [3])], [untyped("a")])
    r = infer(ours(model))
    g = r.type_strings["graph"]
    for name in ("a", "b", "b2", "c", "d", "e", "e2", "g", "l", "m", "o", "p"):
        assert name not in g, name
    assert g["f"] == "tensor(float)"
    # an empty model, a model without a graph
    assert infer(onnxcore.ModelProto()).type_strings == {}


def test_node_location_format():
    n = onnxcore.NodeProto(name="conv1")
    assert node_location("graph", 12, n) == 'graph/node[12] "conv1"'
    assert node_location("graph", 3, onnxcore.NodeProto()) == "graph/node[3]"


def test_ml_operators_agree_with_onnx():
    ml = [h.make_opsetid("ai.onnx.ml", 4)]
    nodes = [
        h.make_node("CategoryMapper", ["s"], ["cm_i"], domain="ai.onnx.ml", cats_strings=["a"], cats_int64s=[1]),
        h.make_node("CategoryMapper", ["i"], ["cm_s"], domain="ai.onnx.ml", cats_strings=["a"], cats_int64s=[1]),
        h.make_node("LabelEncoder", ["s"], ["le_f"], domain="ai.onnx.ml", keys_strings=["a"], values_floats=[1.0]),
        h.make_node("LabelEncoder", ["i"], ["le_s"], domain="ai.onnx.ml", keys_int64s=[1], values_strings=["a"]),
        h.make_node(
            "LinearClassifier",
            ["x"],
            ["lc_label", "lc_scores"],
            domain="ai.onnx.ml",
            coefficients=[1.0, 2.0],
            classlabels_strings=["a", "b"],
        ),
        h.make_node(
            "LinearClassifier",
            ["x"],
            ["lc_ilabel", "lc_iscores"],
            domain="ai.onnx.ml",
            coefficients=[1.0, 2.0],
            classlabels_ints=[0, 1],
        ),
        h.make_node("ZipMap", ["lc_scores"], ["zm"], domain="ai.onnx.ml", classlabels_strings=["a", "b"]),
        h.make_node("ZipMap", ["lc_iscores"], ["zm_i"], domain="ai.onnx.ml", classlabels_int64s=[0, 1]),
        h.make_node("CastMap", ["m"], ["cast_map"], domain="ai.onnx.ml", cast_to="TO_STRING"),
        h.make_node("DictVectorizer", ["m"], ["dv"], domain="ai.onnx.ml", int64_vocabulary=[1, 2]),
    ]
    map_type = h.make_map_type_proto(T.INT64, h.make_tensor_type_proto(T.FLOAT, None))
    inputs = [
        h.make_tensor_value_info("s", T.STRING, [2]),
        h.make_tensor_value_info("i", T.INT64, [2]),
        h.make_tensor_value_info("x", T.FLOAT, [1, 1]),
        h.make_value_info("m", map_type),
    ]
    model = make_model(nodes, inputs, [untyped("zm")], extra_opsets=ml)
    mine = agree_with_onnx(model)
    assert mine["cm_i"] == "tensor(int64)" and mine["cm_s"] == "tensor(string)"
    assert mine["le_f"] == "tensor(float)" and mine["le_s"] == "tensor(string)"
    assert mine["lc_label"] == "tensor(string)" and mine["lc_ilabel"] == "tensor(int64)"
    assert mine["lc_scores"] == "tensor(float)"
    assert mine["zm"] == "seq(map(string,tensor(float)))" and mine["zm_i"] == "seq(map(int64,tensor(float)))"
    assert mine["cast_map"] == "tensor(string)"
    assert mine["dv"] == "tensor(float)"


def test_never_raises_on_mangled_node_cases(node_cases):
    # Clause 9.4: inference yields unknown, never an error. Mangle real models every way that still decodes.
    import random

    rng = random.Random(4)
    ops = sorted({s.name for s in onnxcore.defs.all_schemas() if s.domain == ""})
    for d in node_cases[::5]:
        model = onnxcore.load(d / "model.onnx")
        for node in model.graph.node:
            choice = rng.randrange(5)
            if choice == 0:
                node.attribute = []
            elif choice == 1:
                node.op_type = rng.choice(ops)
            elif choice == 2:
                node.input = list(reversed(node.input)) + [""]
            elif choice == 3:
                for a in node.attribute:
                    a.type = rng.choice([1, 2, 3, 4, 5, 7, 13])
            else:
                node.output = [*node.output, "extra"]
        for vi in model.graph.input:
            if rng.random() < 0.3:
                vi.type = onnxcore.TypeProto(tensor_type=onnxcore.TypeProto.Tensor(elem_type=rng.choice([0, 99, 8])))
        infer(model)


def test_deep_nesting_stays_unknown_without_recursion_error():
    from onnxcore import AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, ValueInfoProto

    def float_vi(name):
        return ValueInfoProto(name=name, type=onnxcore.TypeProto(tensor_type=onnxcore.TypeProto.Tensor(elem_type=1)))

    inner = GraphProto(
        name="g0", node=[NodeProto(op_type="Relu", input=["x"], output=["y0"])], output=[untyped_ours("y0")]
    )
    for depth in range(1, 300):
        branch = AttributeProto(name="then_branch", type=AttributeProto.AttributeType.GRAPH, g=inner)
        leaf = GraphProto(
            name="e",
            node=[NodeProto(op_type="Mystery", domain="com.example", input=["x"], output=["e"])],
            output=[untyped_ours("e")],
        )
        other = AttributeProto(name="else_branch", type=AttributeProto.AttributeType.GRAPH, g=leaf)
        node = NodeProto(op_type="If", input=["c"], output=[f"y{depth}"], attribute=[branch, other])
        inner = GraphProto(name=f"g{depth}", node=[node], output=[untyped_ours(f"y{depth}")])
    inner.input = [
        float_vi("x"),
        ValueInfoProto(name="c", type=onnxcore.TypeProto(tensor_type=onnxcore.TypeProto.Tensor(elem_type=9))),
    ]
    model = ModelProto(ir_version=10, opset_import=[OperatorSetIdProto(domain="", version=21)], graph=inner)
    r = infer(model)  # deeper than the walk follows: unknown, no RecursionError
    assert "y299" not in r.type_strings["graph"]
    # at a modest depth the type comes through every level
    shallow = model.graph
    for _ in range(280):
        shallow = shallow.node[0].attribute[0].g
    shallow.input = list(model.graph.input)
    model.graph = shallow
    r = infer(model)
    assert r.type_strings["graph"][shallow.output[0].name] == "tensor(float)"


def untyped_ours(name):
    return onnxcore.ValueInfoProto(name=name)


def test_shared_subgraph_objects_do_not_explode():
    # Built in memory, one graph object may be both branches at every level: 2**60 paths. The walk
    # has a budget of node visits; past it, what is left is unknown.
    from onnxcore import AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, ValueInfoProto

    inner = GraphProto(
        name="g0", node=[NodeProto(op_type="Relu", input=["x"], output=["y0"])], output=[untyped_ours("y0")]
    )
    for depth in range(1, 60):
        a = AttributeProto(name="then_branch", type=AttributeProto.AttributeType.GRAPH, g=inner)
        b = AttributeProto(name="else_branch", type=AttributeProto.AttributeType.GRAPH, g=inner)
        inner = GraphProto(
            name=f"g{depth}",
            node=[NodeProto(op_type="If", input=["c"], output=[f"y{depth}"], attribute=[a, b])],
            output=[untyped_ours(f"y{depth}")],
        )
    inner.input = [
        ValueInfoProto(name="x", type=onnxcore.TypeProto(tensor_type=onnxcore.TypeProto.Tensor(elem_type=1)))
    ]
    model = ModelProto(ir_version=10, opset_import=[OperatorSetIdProto(domain="", version=21)], graph=inner)
    # The budget is Limits.max_inference_nodes (the default, 2,000,000 visits, takes a while here).
    r = infer(model, limits=onnxcore.Limits(max_inference_nodes=20_000))  # unknowns past the budget, no hang
    assert 20_000 <= len(r.nodes) <= 21_000
