"""The proof: a pass that changes the result is caught by evaluation and named by bisection; nothing is returned."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from optimize_models import T, model, ops, tensor, vi

import onnxcore
from onnxcore import helper
from onnxcore.optimizer import OptimizeError, api, optimize
from onnxcore.optimizer.verify import SIZES, input_sets
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.model_passes import MODEL_PIPELINE, model_rewrite
from onnxcore.runtime.optimize.pipeline import ConditionError
from onnxcore.runtime.rewrite_model import rewrite_model
from onnxcore.runtime.step import PlanNode

X = vi("X", T.FLOAT, ["N", 4])
Y = vi("Y", T.FLOAT, ["N", 4])


def _swap_sub_operands(graph: PlanGraph) -> list[PlanNode]:
    """A deliberately broken rewrite: ``a - b`` becomes ``b - b`` (a fixed point, so the pipeline's rounds keep it)."""
    out = []
    for bn in graph.nodes:
        if bn.node.op_type == "Sub" and bn.inputs[0] != bn.inputs[1]:
            copy = PlanNode(bn.index, bn.node, bn.call, bn.kw, bn.outer)
            copy.inputs, copy.outputs, copy.since = [bn.inputs[1], bn.inputs[1]], list(bn.outputs), bn.since
            bn = copy
        out.append(bn)
    return out


@pytest.fixture
def broken(monkeypatch: pytest.MonkeyPatch) -> None:
    rewrites = (*MODEL_PIPELINE, model_rewrite("swap_sub_operands", _swap_sub_operands))
    monkeypatch.setattr(api, "rewrite_model", functools.partial(rewrite_model, rewrites=rewrites))


def _sub_model() -> onnxcore.ModelProto:
    nodes = [helper.make_node("Identity", ["X"], ["a"]), helper.make_node("Relu", ["X"], ["r"]),
             helper.make_node("Sub", ["a", "r"], ["Y"])]  # fmt: skip
    return model(nodes, [X], [Y])


@pytest.mark.usefixtures("broken")
def test_a_broken_pass_is_caught_and_named() -> None:
    with pytest.raises(OptimizeError, match="swap_sub_operands") as info:
        optimize(_sub_model())
    assert info.value.pass_name == "swap_sub_operands"
    assert isinstance(info.value, ValueError)  # what a script catches


@pytest.mark.usefixtures("broken")
def test_without_verification_the_broken_result_is_returned_unproved() -> None:
    out, rep = optimize(_sub_model(), verify=False)
    assert not rep.verified and rep.verify_shapes == []
    assert ops(out) == ["Relu", "Sub"]


def test_a_proof_on_generated_sizes_including_1() -> None:
    m = _sub_model()
    _, rep = optimize(m)
    assert rep.verified
    assert [s["X"] for s in rep.verify_shapes] == [(n, 4) for n in SIZES]
    assert 1 in SIZES


def test_input_shapes_pin_the_verification() -> None:
    _, rep = optimize(_sub_model(), input_shapes={"X": (5, 4)})
    assert rep.verify_shapes == [{"X": (5, 4)}]


def test_a_size_the_model_refuses_is_skipped() -> None:
    """Reshape to [2, 2] admits only N = 1: the sets of other sizes are not compared (the model refuses them)."""
    nodes = [helper.make_node("Reshape", ["X", "s"], ["r"]), helper.make_node("Relu", ["r"], ["Y"])]
    m = model(nodes, [X], [vi("Y", T.FLOAT, [2, 2])], [tensor("s", np.array([2, 2], np.int64))])
    _, rep = optimize(m)
    assert rep.verified and [s["X"] for s in rep.verify_shapes] == [(1, 4)]


def test_a_model_that_cannot_be_evaluated_is_not_proved() -> None:
    fn_less = model([helper.make_node("Mystery", ["X"], ["Y"], domain="acme")], [X], [Y],
                    extra_opsets=[helper.make_opsetid("acme", 1)])  # fmt: skip
    with pytest.raises(OptimizeError, match="cannot verify"):
        optimize(fn_less)
    out, rep = optimize(fn_less, verify=False)
    assert ops(out) == ["Mystery"] and not rep.verified


def test_generated_inputs_by_element_type() -> None:
    inputs = [vi("f", T.FLOAT16, ["B"]), vi("i", T.INT64, [2]), vi("b", T.BOOL, []), vi("s", T.STRING, [1])]
    nodes = [helper.make_node("Identity", [n], [f"o{n}"]) for n in "fibs"]
    outputs = [vi("of", T.FLOAT16, ["B"]), vi("oi", T.INT64, [2]), vi("ob", T.BOOL, []), vi("os", T.STRING, [1])]
    sets = input_sets(model(nodes, inputs, outputs))
    assert len(sets) == len(SIZES)
    first: dict[str, Any] = sets[0]
    assert first["f"].dtype == np.float16 and first["f"].shape == (1,)
    assert first["i"].dtype == np.int64 and (first["i"] >= 0).all()
    assert first["b"].dtype == np.bool_ and first["s"].dtype == object


def test_a_model_with_random_operators_is_proved_with_seeded_sessions() -> None:
    nodes = [helper.make_node("RandomNormalLike", ["X"], ["n"]), helper.make_node("Identity", ["n"], ["i"]),
             helper.make_node("Add", ["X", "i"], ["Y"])]  # fmt: skip
    out, rep = optimize(model(nodes, [X], [Y]))
    assert rep.verified and ops(out) == ["RandomNormalLike", "Add"]


def test_inputs_every_set_of_which_the_model_refuses_cannot_be_verified() -> None:
    """Generated axes that are out of range for every generated size: nothing compared, said so (no pass blamed)."""
    nodes = [helper.make_node("Identity", ["X"], ["a"]), helper.make_node("Split", ["a", "s"], ["Y"], axis=1)]
    m = model(nodes, [X, vi("s", T.INT64, [1])], [Y])
    with pytest.raises(OptimizeError, match="cannot verify") as info:
        optimize(m, input_shapes={"X": (2, 4), "s": (1,)})
    assert info.value.pass_name is None


def _to_contrib(graph: PlanGraph) -> list[PlanNode]:
    """A rewrite that writes a com.microsoft node: refused by the STANDARD postcondition."""
    out = []
    for bn in graph.nodes:
        if bn.node.op_type == "Relu" and bn.node.domain == "":
            node = helper.make_node("Gelu", list(bn.inputs), list(bn.outputs), domain="com.microsoft")
            copy = PlanNode(bn.index, node, bn.call, bn.kw, bn.outer)
            copy.inputs, copy.outputs = list(bn.inputs), list(bn.outputs)
            bn = copy
        out.append(bn)
    return out


def test_a_rewrite_writing_a_non_standard_node_breaks_its_postcondition(monkeypatch: pytest.MonkeyPatch) -> None:
    rewrites = (*MODEL_PIPELINE, model_rewrite("to_contrib", _to_contrib))
    monkeypatch.setattr(api, "rewrite_model", functools.partial(rewrite_model, rewrites=rewrites))
    with pytest.raises(ConditionError, match=r"to_contrib.*standard operator"):
        optimize(_sub_model())


def test_opset_converts_first() -> None:
    nodes = [helper.make_node("Relu", ["X"], ["a"]), helper.make_node("Identity", ["a"], ["Y"])]
    out, rep = optimize(model(nodes, [X], [Y], opset=13), opset=18)
    assert {(o.domain, o.version) for o in out.opset_import} == {("", 18)}
    assert rep.verified and ops(out) == ["Relu"]


def _gemm_bn(mean: float, k: int = 1024, m: int = 8) -> bytes:
    """Gemm then an inference BatchNormalization whose mean cancels most of the product: ``y = g - mean``, with the
    product ``g`` about ``mean`` (Clause 8.2: folding rounds the scaled weights anew)."""
    from onnx import TensorProto as TP
    from onnx import helper as oh
    from onnx import numpy_helper

    rng = np.random.default_rng(0)
    w = (mean / k + 1e-3 * rng.standard_normal((k, m)) / np.sqrt(k)).astype(np.float32)
    inits = [
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(np.ones(m, np.float32), "s"),
        numpy_helper.from_array(np.zeros(m, np.float32), "b"),
        numpy_helper.from_array(np.full(m, mean, np.float32), "m"),
        numpy_helper.from_array(np.ones(m, np.float32), "v"),
    ]
    g = oh.make_graph(
        [oh.make_node("Gemm", ["x", "w"], ["g"]), oh.make_node("BatchNormalization", ["g", "s", "b", "m", "v"], ["y"])],
        "gemm_bn",
        [oh.make_tensor_value_info("x", TP.FLOAT, ["N", k])],
        [oh.make_tensor_value_info("y", TP.FLOAT, ["N", m])],
        inits,
    )
    model = oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


@pytest.mark.parametrize("mean", [10.0, 30.0])
def test_a_fold_that_rounds_a_cancelling_sum_anew_is_proved(mean: float) -> None:
    """The folded weights round every product anew; where the sum cancels (outputs a thousandth of the terms) the
    difference is beyond Clause 11.4's rtol relative to the output but within the whole-model tolerance
    (WHOLE_MODEL_ATOL), and the fold is kept. (A mean of 100 sits at the tolerance's edge: one ulp of the terms
    with OpenBLAS's SkylakeX kernels, five with its Haswell ones, which a machine may force: refused there.)"""
    feeds = [{"x": np.ones((2, 1024), np.float32)}]
    _, report = onnxcore.optimize(_gemm_bn(mean), inputs=feeds)
    assert report.fired.get("fold_batchnorm") == 1
    assert report.verified and 0 < report.max_error <= 1e-5


def test_a_fold_whose_difference_is_beyond_the_rounding_of_the_output_is_refused() -> None:
    """Where the cancellation is so deep that the folded weights' rounding is the whole output (a mean of 1000 over a
    product about 1000), the proof fails and names the pass: the tolerance is not stretched to any size."""
    feeds = [{"x": np.ones((2, 1024), np.float32)}]
    with pytest.raises(onnxcore.OptimizeError, match="fold_batchnorm"):
        onnxcore.optimize(_gemm_bn(1000.0), inputs=feeds)
