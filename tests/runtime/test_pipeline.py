"""The declared pipeline of plan-time rewrites (issue 37, Clause 8.2): one contract, a switch per rewrite, the names
of those that fired, declared conditions, the same pipeline for plans specialised to input shapes."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore
from onnxcore.errors import ValidationError
from onnxcore.kernels.fused.linear import LinearStep
from onnxcore.runtime import ort_api, plan
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.pipeline import (
    PIPELINE,
    REWRITE_NAMES,
    ConditionError,
    Rewrite,
    check_conditions,
    disabled_for,
)
from onnxcore.runtime.step import PlanNode

RNG = np.random.default_rng(37)


def _mlp() -> bytes:
    """x -> MatMul(W1) -> Add(b1) -> Relu -> MatMul(W2): a linear layer and a Relu after it."""
    rng = np.random.default_rng(1)  # one model, whichever test builds it
    w1, b1, w2 = (rng.standard_normal(s).astype(np.float32) for s in ((8, 16), (16,), (16, 4)))
    nodes = [
        h.make_node("MatMul", ["x", "w1"], ["m"]),
        h.make_node("Add", ["m", "b1"], ["a"]),
        h.make_node("Relu", ["a"], ["r"]),
        h.make_node("MatMul", ["r", "w2"], ["y"]),
    ]
    g = h.make_graph(
        nodes,
        "mlp",
        [h.make_tensor_value_info("x", TP.FLOAT, ["N", 8])],
        [h.make_tensor_value_info("y", TP.FLOAT, ["N", 4])],
        [nh.from_array(w1, "w1"), nh.from_array(b1, "b1"), nh.from_array(w2, "w2")],
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)]).SerializeToString()


def _shaped() -> bytes:
    """x -> Reshape(x, Concat(Shape(x)[0], [-1])) -> Mul(2): shape arithmetic a run's input shape decides."""
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        h.make_node("Unsqueeze", ["n", "zero"], ["n1"]),
        h.make_node("Concat", ["n1", "minus_one"], ["target"], axis=0),
        h.make_node("Reshape", ["x", "target"], ["flat"]),
        h.make_node("Mul", ["flat", "two"], ["y"]),
    ]
    inits = [
        nh.from_array(np.array(0, np.int64), "zero"),
        nh.from_array(np.array([-1], np.int64), "minus_one"),
        nh.from_array(np.array(2, np.float32), "two"),
    ]
    g = h.make_graph(
        nodes,
        "shaped",
        [h.make_tensor_value_info("x", TP.FLOAT, ["N", 3, 4])],
        [h.make_tensor_value_info("y", TP.FLOAT, ["N", 12])],
        inits,
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)]).SerializeToString()


def test_the_pipeline_is_declared_once() -> None:
    names = [r.name for r in PIPELINE]
    assert len(names) == len(set(names)) == len(REWRITE_NAMES)
    assert names[:2] == ["fold_constants", "drop_noops"]  # the nodes as written come first
    assert all(isinstance(r, Rewrite) and r.requires and r.ensures for r in PIPELINE)


def test_fired_rewrites_name_what_changed_the_plan() -> None:
    s = onnxcore.Session(_mlp())
    fired = s.fired_rewrites()
    assert "fuse_linear" in fired and "fuse_relu" in fired
    assert fired == [r.name for r in PIPELINE if r.name in fired]  # in pipeline order
    kernels = {st.kernel for st in s.profile({"x": RNG.standard_normal((3, 8)).astype(np.float32)}, repeat=1)}
    assert "onnxcore.fused::WithRelu" in kernels  # the Relu applied in place on the Linear step's product


def test_a_switch_leaves_its_rewrite_out_with_the_same_values() -> None:
    x = RNG.standard_normal((5, 8)).astype(np.float32)
    on = onnxcore.Session(_mlp())
    off = onnxcore.Session(_mlp(), disabled_rewrites={"fuse_linear", "fuse_relu"})
    fired = off.fired_rewrites()
    assert "fuse_linear" not in fired and "fuse_relu" not in fired
    assert not {bn.step_kernel for bn in off._plan.info} & {"Linear", "WithRelu"}
    assert {"Linear", "WithRelu"} <= {bn.step_kernel for bn in on._plan.info}
    # The same products and sums: BLAS on the same rows (Clause 11.4 leaves no room used here).
    np.testing.assert_array_equal(on.run(None, {"x": x})[0], off.run(None, {"x": x})[0])


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("rows", [5, 300, 3000])
def test_a_linear_layers_relu_is_applied_with_its_bias(rows: int) -> None:
    """fuse_relu on fuse_linear's step: the step itself applies the Relu (LinearStep.with_relu), with its bias in one
    pass where the compiled loops take the product (300 and 3,000 rows; 3,000 split over the kernel threads): the
    values of the nodes as written, bit for bit, special values included; an input the fast path does not take (1-D)
    runs the nodes as written and then the Relu."""
    x = RNG.standard_normal((rows, 8)).astype(np.float32)
    x[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    on = onnxcore.Session(_mlp(), threads=2)
    off = onnxcore.Session(_mlp(), disabled_rewrites={"fuse_linear", "fuse_relu"})
    (step,) = [bn for bn in on._plan.info if bn.step_kernel == "WithRelu"]
    assert isinstance(step.call, LinearStep)
    got, want = on.run(None, {"x": x})[0], off.run(None, {"x": x})[0]
    assert got.tobytes() == want.tobytes()
    rng = np.random.default_rng(1)  # _mlp's weights
    w1, b1 = (rng.standard_normal(shape).astype(np.float32) for shape in ((8, 16), (16,)))
    y1 = step.call(x[1])  # 1-D: the MatMul and Add as written, then the Relu
    np.testing.assert_allclose(y1, np.maximum(x[1] @ w1 + b1, 0), rtol=1e-6, atol=1e-6)
    assert (y1 >= 0).all()


def test_an_unknown_switch_is_refused() -> None:
    with pytest.raises(ValidationError, match="no plan rewrite named"):
        onnxcore.Session(_mlp(), disabled_rewrites={"fuse_everything"})


def test_specialised_plans_run_the_same_pipeline() -> None:
    s = onnxcore.Session(_shaped())
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    for _ in range(3):
        (y,) = s.run(None, {"x": x})
    np.testing.assert_array_equal(y, x.reshape(2, -1) * 2)
    specialised = [p for key, p in s._ir._plans.items() if key[-1] is not None]
    assert specialised, "the session made no plan for the input shapes"
    # The shape arithmetic the input shape decides is folded; then the pipeline's shape steps take the Reshape.
    assert all({"fold_constants", "fast_shape_ops"} <= set(p.fired) for p in specialised)
    assert "fold_constants" not in s.fired_rewrites()  # the general plan has nothing to fold


def test_conditions_hold_over_the_pipeline() -> None:
    with check_conditions():
        for model in (_mlp(), _shaped()):
            s = onnxcore.Session(model)
            assert s.fired_rewrites()


def test_a_broken_rewrite_breaks_its_postcondition() -> None:
    """The declared postcondition catches a rewrite that leaves a read name unmade (the rule is checked)."""

    def drop_first(graph: PlanGraph) -> list[PlanNode]:
        return graph.nodes[1:]

    s = onnxcore.Session(_mlp())
    ir = s._ir
    graph = PlanGraph(ir.nodes, {n: v for n, v in ir.inits.items()}, ir.output_names, sources=ir.input_names)
    with check_conditions(), pytest.raises(ConditionError, match="postcondition"):
        Rewrite("drop_first", drop_first).apply(graph)


def test_onnxruntime_levels_and_names() -> None:
    basic = disabled_for(1)
    assert {r.name for r in PIPELINE} - basic == {
        "fold_constants",
        "drop_noops",
        "prepare_with_constants",
        "merge_repeats",
    }
    assert disabled_for(0) == REWRITE_NAMES
    assert disabled_for(99) == frozenset()
    assert disabled_for(99, ["MatMulAddFusion", "fuse_rotary", "SomethingElse"]) == {"fuse_linear", "fuse_rotary"}


def test_the_ort_facade_passes_disabled_optimizers() -> None:
    sess = ort_api.InferenceSession(_mlp(), disabled_optimizers=["MatMulAddFusion"])
    assert "fuse_linear" not in sess._session.fired_rewrites()
    opts = ort_api.SessionOptions()
    opts.graph_optimization_level = ort_api.GraphOptimizationLevel.ORT_ENABLE_BASIC
    # Nothing to fold, no no-op; the Add by a constant bias is prepared with it (prepare_with_constants is one of
    # the basic rewrites).
    assert ort_api.InferenceSession(_mlp(), opts)._session.fired_rewrites() == ["prepare_with_constants"]


def test_the_plan_calls_the_prepared_fused_step_directly() -> None:
    """A fused step in the plan is the object its kernel's prepare hook returned (a class of
    ``onnxcore.kernels.fused``), called by the plan with no wrapper in between (no extra layer per step)."""
    s = onnxcore.Session(_mlp())
    fused = [(bn, step) for bn, step in zip(s._plan.info, s._plan.steps) if bn.step_kernel]
    assert fused
    for bn, step in fused:
        assert step[0] is bn.call
        assert type(bn.call).__module__.startswith("onnxcore.kernels.fused."), type(bn.call)


def test_one_rewrite_signature_and_no_rewrite_outside_the_pipeline() -> None:
    """Every rewrite is ``run(graph) -> list[PlanNode]`` behind ``Rewrite.apply`` (common-subexpression elimination
    included, issue 37), and the plan reaches the optimizer only through the plan graph and the pipeline."""
    signatures = {str(inspect.signature(r.run)) for r in PIPELINE}
    assert signatures == {"(graph: 'PlanGraph') -> 'list[PlanNode]'"}
    tree = ast.parse(Path(plan.__file__).read_text(encoding="utf-8"))
    used = {
        n.module
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("onnxcore.runtime.optimize")
    }
    assert used == {"onnxcore.runtime.optimize.graph", "onnxcore.runtime.optimize.pipeline"}
