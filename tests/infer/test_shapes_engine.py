"""The shape inference walk (Clause 9): dimension variables, declared against inferred, folding, functions,
control flow, and what the validator and the session make of a contradiction (Clause 10.3)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

import onnxcore
from onnxcore.infer import annotate, infer_shapes, shape_ops, shape_step
from onnxcore.infer import shapes as shape_engine
from onnxcore.infer.shape_core import SHAPE_RULES
from onnxcore.proto.messages import ModelProto

shape_ops.load_all()  # inference imports rule families as it meets their operators; these tests read the table whole


@pytest.fixture(autouse=True)
def _strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shape_step, "STRICT", True)


def _model(nodes, inputs, outputs, inits=(), opset=21, functions=(), value_info=()) -> ModelProto:
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits), value_info=list(value_info))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset), h.make_opsetid("local", 1)], functions=functions)
    return onnxcore.decode(ModelProto, m.SerializeToString())


def _vi(name, shape, elem=T.FLOAT):
    return h.make_tensor_value_info(name, elem, shape)


def _ref(name: str, ref: str, kind: int) -> onnx.AttributeProto:
    """An attribute referring to a function's attribute parameter (Clause 8.4)."""
    a = onnx.AttributeProto()
    a.name, a.ref_attr_name, a.type = name, ref, kind
    return a


def _with_attr(node: onnx.NodeProto, a: onnx.AttributeProto) -> onnx.NodeProto:
    node.attribute.append(a)
    return node


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (["N", 3], [3], ("N", 3)),
        (["N", 3], ["N", 1], ("N", 3)),
        (["N"], ["M"], (None,)),  # two variables are never concluded equal (Clause 9.3)
        (["N"], [1], ("N",)),
        (["N"], [3], (3,)),  # a fixed extent other than 1 is the result whatever N is, if the model runs
        ([None, 4], [2, 1, 1], (2, None, 4)),
        ([0, 3], [1, 3], (0, 3)),
    ],
)
def test_broadcasting_keeps_variables_and_concludes_nothing_about_them(a, b, expected) -> None:
    m = _model([h.make_node("Add", ["a", "b"], ["y"])], [_vi("a", a), _vi("b", b)], [_vi("y", None)])
    r = infer_shapes(m)
    assert r.shape("y") == expected
    assert not r.incompatibilities and not r.mismatches


def test_a_fixed_extent_contradiction_is_an_incompatibility_with_its_node() -> None:
    m = _model(
        [h.make_node("Mul", ["a", "b"], ["y"], name="mul")], [_vi("a", [2, 3]), _vi("b", [4])], [_vi("y", [None, None])]
    )
    r = infer_shapes(m)
    assert r.shape("y") == (None, None)  # only the declared rank
    [inc] = r.incompatibilities
    assert inc.location == 'graph/node[0] "mul"' and inc.op_type == "Mul" and "3 and 4" in inc.message
    report = onnxcore.check(m)
    assert [f.code for f in report.errors] == ["E-SHAPE-INCOMPATIBLE"]
    with pytest.raises(onnxcore.ValidationError, match="E-SHAPE-INCOMPATIBLE"):
        onnxcore.Session(m)


@pytest.mark.parametrize(
    ("declared", "mismatch", "merged"),
    [
        ([2, 4], True, (2, 4)),
        ([2, 3, 1], True, (2, 3, 1)),
        (["N", 3], False, (2, 3)),  # a variable may take the inferred extent (Clause 6.5.2)
        ([None, 3], False, (2, 3)),
        ([2, 3], False, (2, 3)),
    ],
)
def test_declared_against_inferred(declared, mismatch, merged) -> None:
    m = _model(
        [h.make_node("Relu", ["x"], ["r"], name="relu"), h.make_node("Neg", ["r"], ["y"], name="neg")],
        [_vi("x", [2, 3])],
        [_vi("y", [None] * len(declared))],
        value_info=[_vi("r", declared)],
    )
    r = infer_shapes(m)
    assert bool(r.mismatches) == mismatch
    assert r.shape("r") == merged and r.shape("y") == merged
    if mismatch:
        [mm] = r.mismatches
        assert mm.location == 'graph/node[0] "relu"/output[0]' and mm.inferred == (2, 3)
        assert [f.code for f in onnxcore.check(m).errors] == ["E-SHAPE-MISMATCH"]


def test_constants_are_folded_so_a_computed_shape_is_known() -> None:
    # ConstantOfShape(Shape(x) * 2): the value of the shape is computed, not only its length.
    two = numpy_helper.from_array(np.array([2], np.int64), "two")
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Mul", ["s", "two"], ["s2"]),
        h.make_node("ConstantOfShape", ["s2"], ["y"]),
    ]
    r = infer_shapes(_model(nodes, [_vi("x", [2, 5])], [_vi("y", None)], inits=[two]))
    assert r.shape("s") == (2,) and r.shape("s2") == (2,)
    assert r.shape("y") == (4, 10)


def test_a_graph_input_with_an_initializer_is_not_a_constant() -> None:
    # Clause 7.2: the initializer of a graph input is only its default, so its value is not known.
    s = numpy_helper.from_array(np.array([3, 4], np.int64), "s")
    m = _model([h.make_node("ConstantOfShape", ["s"], ["y"])], [_vi("s", [2], T.INT64)], [_vi("y", None)], inits=[s])
    assert infer_shapes(m).shape("y") == (None, None)


def test_a_model_local_function_is_walked_with_the_call_site_shapes() -> None:
    fn = h.make_function(
        "local",
        "scaled",
        ["a", "b"],
        ["c"],
        [
            h.make_node("Add", ["a", "b"], ["t"]),
            _with_attr(h.make_node("LeakyRelu", ["t"], ["c"]), _ref("alpha", "alpha", onnx.AttributeProto.FLOAT)),
        ],
        opset_imports=[h.make_opsetid("", 21)],
        attributes=["alpha"],
    )
    node = h.make_node("scaled", ["x", "b"], ["y"], domain="local", alpha=0.5)
    m = _model([node], [_vi("x", ["N", 1, 4]), _vi("b", [3, 1])], [_vi("y", None)], functions=[fn])
    r = infer_shapes(m)
    assert r.shape("y") == ("N", 3, 4)
    assert not r.unruled


def test_an_operator_without_a_rule_is_inferred_through_its_function_body(monkeypatch) -> None:
    # Mish-18 has a (static) function body in ONNX 1-2; with its rule removed the body gives the shape.
    monkeypatch.delitem(SHAPE_RULES, ("", "Mish"))
    m = _model([h.make_node("Mish", ["x"], ["y"])], [_vi("x", ["N", 7])], [_vi("y", ["N", 7])])
    r = infer_shapes(m)
    assert r.shape("y") == ("N", 7) and not r.unruled
    monkeypatch.delitem(SHAPE_RULES, ("", "Neg"))
    r = infer_shapes(_model([h.make_node("Neg", ["x"], ["y"], name="r")], [_vi("x", [2])], [_vi("y", [None])]))
    assert r.shape("y") == (None,) and r.unruled == [('graph/node[0] "r"', "Neg")]


def test_if_joins_its_branches() -> None:
    def branch(name, shape):
        c = numpy_helper.from_array(np.zeros(shape, np.float32), f"{name}_c")
        return h.make_graph([h.make_node("Constant", [], [f"{name}_o"], value=c)], name, [], [_vi(f"{name}_o", None)])

    for then_shape, else_shape, expected in (
        ([2, 3], [2, 3], (2, 3)),
        ([2, 3], [2, 4], (2, None)),
        ([2], [2, 1], None),
    ):
        node = h.make_node("If", ["c"], ["y"], then_branch=branch("t", then_shape), else_branch=branch("e", else_shape))
        m = _model([node], [_vi("c", [], T.BOOL)], [_vi("y", None)])
        assert infer_shapes(m).shape("y") == expected


def test_loop_carries_and_stacks() -> None:
    body = h.make_graph(
        [
            h.make_node("Identity", ["cond_in"], ["cond_out"]),
            h.make_node("Add", ["v_in", "x"], ["v_out"]),
            h.make_node("Relu", ["v_in"], ["scan_out"]),
        ],
        "body",
        [_vi("i", [], T.INT64), _vi("cond_in", [], T.BOOL), _vi("v_in", None)],
        [_vi("cond_out", [], T.BOOL), _vi("v_out", None), _vi("scan_out", None)],
    )
    node = h.make_node("Loop", ["m", "", "v0"], ["v", "stacked"], body=body)
    m = _model(
        [node], [_vi("m", [], T.INT64), _vi("v0", ["N", 4]), _vi("x", [1, 4])], [_vi("v", None), _vi("stacked", None)]
    )
    r = infer_shapes(m)
    assert r.shape("v") == ("N", 4)
    assert r.shape("stacked") == (None, "N", 4)
    # The body's own values are inferred in its scope, with the outer x visible.
    assert r.shape("v_out", "graph/node[0]/body") == ("N", 4)


def test_scan_slices_and_stacks_along_its_axes() -> None:
    body = h.make_graph(
        [h.make_node("Add", ["s_in", "row"], ["s_out"]), h.make_node("Neg", ["row"], ["o"])],
        "body",
        [_vi("s_in", None), _vi("row", None)],
        [_vi("s_out", None), _vi("o", None)],
    )
    node = h.make_node(
        "Scan", ["s0", "xs"], ["s", "os"], body=body, num_scan_inputs=1, scan_input_axes=[1], scan_output_axes=[-1]
    )
    m = _model([node], [_vi("s0", [3]), _vi("xs", [3, "T"])], [_vi("s", None), _vi("os", None)])
    r = infer_shapes(m)
    assert r.shape("s") == (3,)
    assert r.shape("os") == (3, "T")


def test_annotate_states_what_inference_tells_and_onnx_agrees() -> None:
    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "w")
    nodes = [
        h.make_node("MatMul", ["x", "w"], ["mm"]),
        h.make_node("Relu", ["mm"], ["r"]),
        h.make_node("Shape", ["r"], ["s"]),
        h.make_node("Cast", ["r"], ["y"], to=T.DOUBLE),
    ]
    m = _model(nodes, [_vi("x", ["N", 4])], [_vi("y", None, T.DOUBLE)], inits=[w])
    out = annotate(m)
    assert out is not m and not m.graph.value_info
    stated = {vi.name: shape_engine.declared_shape(vi.type) for vi in out.graph.value_info}
    assert stated == {"mm": ("N", 3), "r": ("N", 3), "s": (2,)}
    assert shape_engine.declared_shape(out.graph.output[0].type) == ("N", 3)
    theirs = onnx.load_from_string(onnxcore.encode(out))
    onnx.checker.check_model(theirs, full_check=True)
    onnx.shape_inference.infer_shapes(theirs, strict_mode=True)
    assert onnxcore.check(out).ok


def test_an_unresolvable_attribute_reference_leaves_the_output_unknown() -> None:
    fn = h.make_function(
        "local",
        "f",
        ["a"],
        ["c"],
        [_with_attr(h.make_node("Flatten", ["a"], ["c"]), _ref("axis", "ax", onnx.AttributeProto.INT))],
        opset_imports=[h.make_opsetid("", 21)],
        attributes=["ax"],
    )
    m = _model([h.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])], [_vi("y", None)], functions=[fn])
    r = infer_shapes(m)
    assert r.shape("y") == (2,)
    assert r.shape("c", 'functions[0] "local:f"') is None


def _if_with_bad_else(cond_node: list, cond_inputs: list) -> ModelProto:
    good = h.make_graph([h.make_node("Relu", ["x"], ["t"])], "then", [], [_vi("t", None)])
    bad = h.make_graph([h.make_node("Add", ["x", "z"], ["e"], name="bad")], "else", [], [_vi("e", None)])
    node = h.make_node("If", ["c"], ["y"], then_branch=good, else_branch=bad)
    return _model(cond_node + [node], cond_inputs + [_vi("x", [2, 3]), _vi("z", [4])], [_vi("y", [2, 3])])


def test_a_branch_that_may_not_be_taken_is_not_held_to_its_shapes() -> None:
    # Function bodies test a rank and branch (AffineGrid's): the other branch is written for other inputs.
    r = infer_shapes(_if_with_bad_else([], [_vi("c", [], T.BOOL)]))
    assert not r.incompatibilities and r.shape("y") == (2, 3)
    # A condition known to take the bad branch makes it a finding.
    false = h.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array(False)))
    r = infer_shapes(_if_with_bad_else([false], []))
    [inc] = r.incompatibilities
    assert inc.location == 'graph/node[1]/else_branch/node[0] "bad"'
    true = h.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array(True)))
    assert not infer_shapes(_if_with_bad_else([true], [])).incompatibilities


def test_every_operator_has_a_shape_rule() -> None:
    # Scans every definition: a new operator makes this test fail until it has a rule (If, Loop, Scan and
    # SequenceMap walk their bodies: the engine's own, in shape_ops/control_flow.py).
    from onnxcore import defs

    engine_handled = {("", "If"), ("", "Loop"), ("", "Scan"), ("", "SequenceMap")}
    missing = {(s.domain, s.name) for s in defs.all_schemas()} - set(SHAPE_RULES) - engine_handled
    assert not missing, sorted(missing)
