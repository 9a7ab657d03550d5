"""Each pass of onnxcore.optimize on hand-built models, the traps included (Clause 8.2: a rewrite keeps what the graph
computes for every input it admits, dimension variables of any extent, 0 and 1 included, Clause 6.5.2)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from optimize_models import T, assert_same_by_ort, model, ops, ort_run, tensor, vi

import onnxcore
from onnxcore import helper
from onnxcore.optimizer import PASSES, optimize
from onnxcore.runtime.optimize.model_graph import STANDARD, ModelGraph
from onnxcore.runtime.step import PlanNode

pytest.importorskip("onnxruntime")

X4 = vi("X", T.FLOAT, ["N", 4])
Y4 = vi("Y", T.FLOAT, ["N", 4])


def _x(n: int = 3) -> dict[str, np.ndarray]:
    return {"X": np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)}


def _one(
    op: str, inputs: list[str], inits: list[object], out: list[int | str] | None = None, **attrs: object
) -> onnxcore.ModelProto:
    """Relu, then ``op`` of its result (the node under test), then Relu: a no-op left out leaves two Relus."""
    nodes = [
        helper.make_node("Relu", ["X"], ["x0"]),
        helper.make_node(op, ["x0", *inputs[1:]], ["t"], **attrs),
        helper.make_node("Relu", ["t"], ["Y"]),
    ]
    return model(nodes, [X4], [vi("Y", T.FLOAT, out or ["N", 4])], inits)


def _removed(m: onnxcore.ModelProto) -> bool:
    names = ops(m)
    assert names in (["Relu", "Relu"], ["Relu", names[1], "Relu"])
    return names == ["Relu", "Relu"]


def _size_without_annotations(m: onnxcore.ModelProto) -> int:
    """Bytes of ``m`` without the value_info the optimizer states (the inferred shapes are not folding's growth)."""
    bare = copy.copy(m)
    bare.graph = copy.copy(m.graph)
    bare.graph.value_info = []
    return len(onnxcore.encode(bare))


# --- constant folding --------------------------------------------------------------------------------------------


def test_folding_writes_the_value_and_drops_the_nodes() -> None:
    w = tensor("w", np.arange(4, dtype=np.float32))
    m = model(
        [helper.make_node("Neg", ["w"], ["nw"]), helper.make_node("Exp", ["nw"], ["e"]),
         helper.make_node("Add", ["X", "e"], ["Y"])],
        [X4], [Y4], [w],
    )  # fmt: skip
    out, rep = optimize(m)
    assert ops(out) == ["Add"]
    assert rep.fired["fold_constants"] >= 1 and rep.verified
    assert [t.name for t in out.graph.initializer] == ["e"]
    assert_same_by_ort(m, out, _x())


def test_folding_keeps_the_integer_overflow_of_the_kernel() -> None:
    """int32 products that overflow wrap in the folded value exactly as when the node runs (onnxruntime too)."""
    a = tensor("a", np.array([2**30, 3, -(2**31)], dtype=np.int32))
    b = tensor("b", np.array([4, 5, -1], dtype=np.int32))
    xi = vi("X", T.INT32, [3])
    yi = vi("Y", T.INT32, [3])
    m = model([helper.make_node("Mul", ["a", "b"], ["p"]), helper.make_node("Add", ["X", "p"], ["Y"])], [xi], [yi],
              [a, b])  # fmt: skip
    out, _ = optimize(m)
    assert ops(out) == ["Add"]
    folded = onnxcore.to_array(next(t for t in out.graph.initializer if t.name == "p"))
    with np.errstate(over="ignore"):
        assert folded.tolist() == (np.array([2**30, 3, -(2**31)], np.int32) * np.array([4, 5, -1], np.int32)).tolist()
    x = {"X": np.array([1, 2, 3], dtype=np.int32)}
    assert_same_by_ort(m, out, x)


def test_a_constant_of_shape_that_would_grow_the_file_stays_a_node() -> None:
    shape = tensor("s", np.array([256, 256], dtype=np.int64))
    xb = vi("X", T.FLOAT, [256, 256])
    yb = vi("Y", T.FLOAT, [256, 256])
    m = model(
        [helper.make_node("ConstantOfShape", ["s"], ["c"], value=helper.make_tensor("v", T.FLOAT, [1], [0.5])),
         helper.make_node("Add", ["X", "c"], ["Y"])],
        [xb], [yb], [shape],
    )  # fmt: skip
    out, rep = optimize(m)
    assert ops(out) == ["ConstantOfShape", "Add"]
    assert _size_without_annotations(out) <= rep.size_before
    # Even with room to grow: an expanding operator's large output stays a node.
    grown, rep2 = optimize(m, fold_growth=1000.0)
    assert ops(grown) == ["ConstantOfShape", "Add"]
    assert rep2.size_after < 256 * 256 * 4


def test_folding_within_the_growth_factor_only() -> None:
    """A float16 weight cast to float32 doubles: not folded at factor 1, folded at factor 3."""
    w = tensor("w", np.ones((64, 4), dtype=np.float16))
    xw = vi("X", T.FLOAT, [64, 4])
    yw = vi("Y", T.FLOAT, [64, 4])
    m = model([helper.make_node("Cast", ["w"], ["wf"], to=T.FLOAT), helper.make_node("Mul", ["X", "wf"], ["Y"])],
              [xw], [yw], [w])  # fmt: skip
    out, rep = optimize(m)
    assert "Cast" in ops(out) and _size_without_annotations(out) <= rep.size_before
    out3, rep3 = optimize(m, fold_growth=3.0)
    assert ops(out3) == ["Mul"] and rep3.size_after <= 3 * rep3.size_before


# --- no-ops ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("end", "removed"),
    [(2**63 - 1, True), (4, False), (2**31 - 1, False)],
)
def test_a_slice_is_left_out_only_if_it_takes_everything_at_every_size(end: int, removed: bool) -> None:
    """X[0:end] on an axis of extent N: only an end past any extent is a no-op (onnxslim's EliminationSlice kept
    rows 0..3 of whatever N the trace had)."""
    inits = [tensor("st", np.array([0], np.int64)), tensor("en", np.array([end], np.int64)),
             tensor("ax", np.array([0], np.int64))]  # fmt: skip
    m = _one("Slice", ["X", "st", "en", "ax"], inits)
    out, rep = optimize(m)
    assert _removed(out) is removed
    assert rep.verified
    assert_same_by_ort(m, out, _x(6))


def test_a_slice_of_a_fixed_extent_to_its_end_is_left_out() -> None:
    inits = [tensor("st", np.array([0], np.int64)), tensor("en", np.array([4], np.int64)),
             tensor("ax", np.array([1], np.int64))]  # fmt: skip
    out, _ = optimize(_one("Slice", ["X", "st", "en", "ax"], inits))
    assert _removed(out)


@pytest.mark.parametrize(
    ("shape", "removed"),
    [([1, 4], True), ([4], True), ([3, 4], False), ([2, 1, 4], False)],
)
def test_expand_is_left_out_only_if_it_never_broadcasts(shape: list[int], removed: bool) -> None:
    """Expand to [3, 4] of X[N, 4] broadcasts when N is 1: kept."""
    out_shape: list[int | str] = ["N", 4] if len(shape) < 3 else [2, "N", 4]
    m = _one("Expand", ["X", "s"], [tensor("s", np.array(shape, np.int64))], out_shape)
    out, _ = optimize(m)
    assert _removed(out) is removed
    x1 = {"X": np.ones((1, 4), np.float32)}
    x3 = {"X": np.ones((3, 4), np.float32)}
    assert_same_by_ort(m, out, x1)
    if shape != [3, 4]:
        assert_same_by_ort(m, out, x3)


@pytest.mark.parametrize(
    ("shape", "removed"),
    [([0, 4], True), ([0, 0], True), ([-1, 4], True), ([0, -1], False), ([3, 4], False)],
)
def test_reshape_to_the_same_shape_only_for_every_extent(shape: list[int], removed: bool) -> None:
    """X[M, 4]: a -1 beside the fixed 4 is M for every M, 0 included; a -1 beside the copied M is undetermined at
    M = 0, where the Reshape fails (onnxruntime too): kept, or the optimized model would compute a value there."""
    m = _one("Reshape", ["X", "s"], [tensor("s", np.array(shape, np.int64))], ["M", 4])
    out, _ = optimize(m)
    assert _removed(out) is removed
    if removed:
        for rows in (0, 1, 3):
            assert_same_by_ort(m, out, {"X": np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)})


def test_the_simple_noops_are_left_out() -> None:
    z = tensor("z", np.zeros(4, np.int64))
    one = tensor("one", np.array(1.0, np.float32))
    nodes = [
        helper.make_node("Relu", ["X"], ["a"]),
        helper.make_node("Dropout", ["a"], ["b"]),
        helper.make_node("Cast", ["b"], ["c"], to=T.FLOAT),
        helper.make_node("Transpose", ["c"], ["d"], perm=[0, 1]),
        helper.make_node("Mul", ["d", "one"], ["e"]),
        helper.make_node("Pad", ["e", "z"], ["Y"]),
    ]
    m = model(nodes, [X4], [Y4], [z, one])
    out, rep = optimize(m)
    assert ops(out) == ["Relu"]  # the Relu writes Y itself
    assert out.graph.output[0].name == "Y" and out.graph.node[0].output[0] == "Y"
    assert rep.fired["drop_noops"] >= 1
    assert_same_by_ort(m, out, _x())


def test_add_of_positive_zero_stays_for_floats_unless_no_reader_can_tell() -> None:
    """-0 + +0 is +0: not the input bit for bit, so drop_noops keeps the node (an integer's + 0 goes); a Relu reads
    -0 and +0 as the same value, so drop_zero_shifts leaves it out, and keeps it when switched off."""
    m = _one("Add", ["X", "z"], [tensor("z", np.array(0.0, np.float32))])
    out, _ = optimize(m, disabled=("drop_zero_shifts",))
    assert not _removed(out)
    out, _ = optimize(m)
    assert _removed(out)
    assert_same_by_ort(m, out, {"X": np.array([[-0.0, 0.0, -1.0, 2.0]], np.float32)})
    xi, yi = vi("X", T.INT64, ["N"]), vi("Y", T.INT64, ["N"])
    nodes = [helper.make_node("Neg", ["X"], ["a"]), helper.make_node("Add", ["a", "z"], ["b"]),
             helper.make_node("Neg", ["b"], ["Y"])]  # fmt: skip
    outi, _ = optimize(model(nodes, [xi], [yi], [tensor("z", np.array(0, np.int64))]))
    assert ops(outi) == ["Neg", "Neg"]


def test_dropout_in_training_mode_stays() -> None:
    inits = [tensor("ratio", np.array(0.5, np.float32)), tensor("mode", np.array(True))]
    m = _one("Dropout", ["X", "ratio", "mode"], inits)
    out, _ = optimize(m, verify=False)
    assert not _removed(out)


# --- common subexpressions, duplicate initializers, dead nodes, unused inputs --------------------------------------


def test_common_subexpressions_and_duplicate_initializers_merge() -> None:
    # Larger than the constants CSE compares by value: the initializers must merge first.
    w1 = tensor("w1", np.full(4400, 2.0, np.float32).reshape(1100, 4))
    w2 = tensor("w2", np.full(4400, 2.0, np.float32).reshape(1100, 4))
    xs, ys = vi("X", T.FLOAT, [1100, 4]), vi("Y", T.FLOAT, [1100, 4])
    nodes = [
        helper.make_node("Mul", ["X", "w1"], ["a"]),
        helper.make_node("Mul", ["X", "w2"], ["b"]),
        helper.make_node("Relu", ["a"], ["ra"]),
        helper.make_node("Relu", ["b"], ["rb"]),
        helper.make_node("Sub", ["ra", "rb"], ["Y"]),
    ]
    m = model(nodes, [xs], [ys], [w1, w2])
    out, rep = optimize(m)
    assert ops(out) == ["Mul", "Relu", "Sub"]
    assert [t.name for t in out.graph.initializer] == ["w1"]
    assert rep.fired["merge_initializers"] >= 1 and rep.fired["eliminate_common"] >= 1
    x = {"X": np.random.default_rng(0).standard_normal((1100, 4)).astype(np.float32)}
    assert_same_by_ort(m, out, x)


def test_dead_nodes_unused_initializers_and_inputs() -> None:
    extra = vi("unused", T.FLOAT, [2])
    nodes = [helper.make_node("Relu", ["X"], ["Y"]), helper.make_node("Neg", ["X"], ["dead"])]
    m = model(nodes, [X4, extra], [Y4], [tensor("w", np.ones(3, np.float32))])
    out, rep = optimize(m)
    assert ops(out) == ["Relu"] and not out.graph.initializer
    assert [i.name for i in out.graph.input] == ["X", "unused"]  # inputs kept without consent
    assert rep.fired["drop_dead_nodes"] == 1 and rep.fired["drop_unused_initializers"] == 1
    out2, rep2 = optimize(m, keep_io=False)
    assert [i.name for i in out2.graph.input] == ["X"] and rep2.fired["drop_unused_inputs"] == 1


def test_every_pass_can_be_switched_off() -> None:
    m = model([helper.make_node("Identity", ["X"], ["a"]), helper.make_node("Relu", ["a"], ["Y"])], [X4], [Y4])
    out, rep = optimize(m, disabled=PASSES)
    assert ops(out) == ["Identity", "Relu"] and not rep.fired
    out, _ = optimize(m, level="none")
    assert ops(out) == ["Identity", "Relu"]
    with pytest.raises(onnxcore.InputError, match="no pass named"):
        optimize(m, disabled=["nope"])


# --- what is kept --------------------------------------------------------------------------------------------------


def test_names_metadata_doc_strings_and_dimension_variables_are_kept() -> None:
    m = model([helper.make_node("Identity", ["X"], ["a"]), helper.make_node("Relu", ["a"], ["Y"])], [X4], [Y4])
    m.doc_string = "the model"
    m.graph.doc_string = "the graph"
    helper.set_model_props(m, {"author": "us"})
    out, _ = optimize(m)
    assert out.doc_string == "the model" and out.graph.doc_string == "the graph"
    assert [(p.key, p.value) for p in out.metadata_props] == [("author", "us")]
    assert [d.dim_param for d in out.graph.input[0].type.tensor_type.shape.dim] == ["N", ""]
    assert out.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "N"
    assert onnxcore.check(out).ok


def test_the_result_is_annotated_with_inferred_shapes() -> None:
    """Within the bytes the rewrites saved (here an unused initializer's): test_optimize_annotations.py."""
    nodes = [helper.make_node("Relu", ["X"], ["a"]), helper.make_node("Neg", ["a"], ["Y"])]
    unused = tensor("unused", np.zeros(64, np.float32))
    out, rep = optimize(model(nodes, [X4], [Y4], [unused]))
    assert rep.annotations_kept == 1 and rep.size_after <= rep.size_before
    (a,) = [v for v in out.graph.value_info if v.name == "a"]
    assert [d.dim_param or d.dim_value for d in a.type.tensor_type.shape.dim] == ["N", 4]


# --- subgraphs and functions ---------------------------------------------------------------------------------------


def test_subgraph_bodies_are_optimized() -> None:
    c = vi("C", T.BOOL, [])
    w = tensor("w", np.arange(4, dtype=np.float32))

    def branch(name: str, op: str) -> object:
        nodes = [helper.make_node("Identity", ["X"], [f"{name}_i"]), helper.make_node("Neg", ["w"], [f"{name}_w"]),
                 helper.make_node(op, [f"{name}_i", f"{name}_w"], [f"{name}_y"])]  # fmt: skip
        return helper.make_graph(nodes, name, [], [vi(f"{name}_y", T.FLOAT, ["N", 4])])

    m = model([helper.make_node("If", ["C"], ["Y"], then_branch=branch("t", "Add"), else_branch=branch("e", "Sub"))],
              [X4, c], [Y4], [w])  # fmt: skip
    out, rep = optimize(m)
    then = next(a.g for a in out.graph.node[0].attribute if a.name == "then_branch")
    assert [n.op_type for n in then.node] == ["Add"]
    for cond in (True, False):
        feeds = {**_x(), "C": np.array(cond)}
        for x, y in zip(ort_run(m, feeds), ort_run(out, feeds), strict=True):
            np.testing.assert_array_equal(x, y)
    assert rep.verified


def test_function_bodies_are_optimized_and_may_be_inlined() -> None:
    fn = helper.make_function(
        "local", "F", ["a"], ["b"],
        [helper.make_node("Identity", ["a"], ["t"]), helper.make_node("Relu", ["t"], ["b"])],
        [helper.make_opsetid("", 17)],
    )  # fmt: skip
    m = model([helper.make_node("F", ["X"], ["Y"], domain="local")], [X4], [Y4], functions=[fn],
              extra_opsets=[helper.make_opsetid("local", 1)])  # fmt: skip
    out, rep = optimize(m)
    assert [n.op_type for n in out.functions[0].node] == ["Relu"] and rep.verified
    inlined, _ = optimize(m, inline_functions=True)
    assert ops(inlined) == ["Relu"]
    assert_same_by_ort(m, inlined, _x())


# --- the standard-operators postcondition --------------------------------------------------------------------------


def test_standard_refuses_fused_and_foreign_nodes() -> None:
    def graph_of(domain: str, step: str = "") -> ModelGraph:
        bn = PlanNode(0, helper.make_node("Relu", ["x"], ["y"], domain=domain), None, {}, [])
        bn.step_kernel = step
        return ModelGraph([bn], {}, ["y"], budget=0, sources=["x"], known={}, shapes={}, budget_box=[0],
                          domains=())  # fmt: skip

    assert STANDARD.holds(graph_of(""))
    assert not STANDARD.holds(graph_of("com.microsoft"))
    assert not STANDARD.holds(graph_of("onnxcore.fused"))
    assert not STANDARD.holds(graph_of("", step="FusedConv"))


def test_loop_bodies_are_optimized_and_run_as_before() -> None:
    """A Loop body reading an outer constant: its Identity goes, its constant arithmetic is folded inside."""
    w = tensor("w", np.arange(4, dtype=np.float32))
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Neg", ["w"], ["nw"]),
         helper.make_node("Identity", ["v_in"], ["vi"]), helper.make_node("Add", ["vi", "nw"], ["v_out"])],
        "body",
        [vi("iter", T.INT64, []), vi("cond_in", T.BOOL, []), vi("v_in", T.FLOAT, ["N", 4])],
        [vi("cond_out", T.BOOL, []), vi("v_out", T.FLOAT, ["N", 4])],
    )  # fmt: skip
    m = model([helper.make_node("Loop", ["M", "", "X"], ["Y"], body=body)],
              [vi("M", T.INT64, []), X4], [Y4], [w])  # fmt: skip
    out, rep = optimize(m)
    new_body = out.graph.node[0].attribute[0].g
    assert [n.op_type for n in new_body.node] == ["Identity", "Add"]  # cond_out stays (a body output from an input)
    assert rep.verified
    feeds = {**_x(), "M": np.array(3, np.int64)}
    for x, y in zip(ort_run(m, feeds), ort_run(out, feeds), strict=True):
        np.testing.assert_array_equal(x, y)


def test_an_ir_3_model_lists_a_folded_initializer_among_its_inputs() -> None:
    c = helper.make_node("Constant", [], ["c"], value=tensor("v", np.arange(4, dtype=np.float32)))
    xs, ys = vi("X", T.FLOAT, [4]), vi("Y", T.FLOAT, [4])
    m = model([c, helper.make_node("Neg", ["c"], ["nc"]), helper.make_node("Add", ["X", "nc"], ["Y"])], [xs], [ys],
              opset=8)  # fmt: skip
    m.ir_version = 3
    out, rep = optimize(m)
    assert ops(out) == ["Add"] and [i.name for i in out.graph.input] == ["X", "nc"]
    assert rep.verified and onnxcore.check(out).ok
    assert_same_by_ort(m, out, {"X": np.ones(4, np.float32)})
