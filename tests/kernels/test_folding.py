"""The one constant-folding rule (issue 37; Clause 8.2, Clause 9's values): inference's value propagation and the
plan's constant folding fold the same nodes, with the kernel the session chooses, custom domains included."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore
from onnxcore.infer import infer_both, infer_shapes
from onnxcore.kernels import KernelSet, folding, registry
from onnxcore.kernels.registry import NO_FOLD
from onnxcore.limits import DEFAULT_LIMITS
from onnxcore.validate.checker import check_context

DOMAIN = "test.onnxcore.folding"
CALLS = {"n": 0}


@pytest.fixture
def doubled() -> Iterator[None]:
    """A process-wide kernel of a domain without definitions (Clause 16.1), counted."""

    @registry.kernel("Doubled", 1, domain=DOMAIN)
    def _doubled(x: np.ndarray) -> np.ndarray:
        CALLS["n"] += 1
        return x * 2

    yield
    registry.unregister("Doubled", 1, domain=DOMAIN)


def _model(shape_op: str = "Doubled", domain: str = DOMAIN, out_shape: list[int] | None = None) -> bytes:
    """y = Reshape(x, Doubled([1, 3])): the target shape [2, 6] is known only by folding the custom node."""
    nodes = [
        h.make_node(shape_op, ["half"], ["target"], domain=domain),
        h.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [3, 4])],
        [h.make_tensor_value_info("y", TP.FLOAT, out_shape)],
        [nh.from_array(np.array([1, 3], np.int64), "half")],
    )
    imports = [h.make_opsetid("", 18), h.make_opsetid(DOMAIN, 1)]
    return bytes(h.make_model(g, opset_imports=imports, ir_version=9).SerializeToString())


def test_inference_folds_a_custom_domain_kernel(doubled: None) -> None:
    shapes = infer_shapes(onnxcore.load(_model()))
    assert shapes.shape("target") == (2,)
    assert shapes.shape("y") == (2, 6)  # the Reshape read the folded value


def test_the_plan_folds_the_same_node(doubled: None) -> None:
    s = onnxcore.Session(_model(), check=False)  # y's rank is not declared: not a conforming model
    assert "fold_constants" in s.fired_rewrites()
    assert [bn.node.op_type for bn in s._plan.info] == ["Reshape"]
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    before = CALLS["n"]
    np.testing.assert_array_equal(s.run(None, {"x": x})[0], x.reshape(2, 6))
    assert CALLS["n"] == before  # folded when the plan was made


def test_without_a_kernel_neither_folds() -> None:
    assert infer_shapes(onnxcore.load(_model())).shape("y") is None


@pytest.mark.parametrize("op", sorted(NO_FOLD))
def test_no_fold_operators_are_refused(op: str) -> None:
    assert not folding.may_fold(op)


def test_subgraphs_and_enclosing_scope_reads_are_refused() -> None:
    body = h.make_graph([], "b", [], [])
    node = h.make_node("If", ["c"], ["y"], then_branch=body, else_branch=body)
    assert not folding.may_fold("If", node.attribute)
    assert not folding.may_fold("Add", (), outer=["v"])
    assert folding.may_fold("Add")


def test_a_kernel_needing_a_context_is_not_a_folding_kernel() -> None:
    registry.kernel("Ctx", 1, domain=DOMAIN, context=True)(lambda ctx, x: x)
    try:
        assert folding.fold_kernel(DOMAIN, "Ctx", 1, "custom", None) is None
    finally:
        registry.unregister("Ctx", 1, domain=DOMAIN)


def test_evaluate_says_not_folded_on_failure() -> None:
    def fails(x: Any) -> Any:
        raise ValueError("no")

    assert folding.evaluate(fails, [1], {}) is None
    assert folding.evaluate(lambda x: (x, x), [1], {}) == (1, 1)
    with np.errstate(all="raise"):  # a folded 1 / 0 is inf, as at run time
        (v,) = folding.evaluate(lambda x: np.float32(1) / x, [np.float32(0)], {}) or (None,)
    assert v == np.inf


def _session_kernels() -> KernelSet:
    ops = KernelSet()

    @ops.kernel("Doubled", 1, domain=DOMAIN)
    def _doubled(x: np.ndarray) -> np.ndarray:
        return x * 2

    return ops


def test_inference_folds_with_the_session_s_kernels() -> None:
    """A session's ``custom_ops`` reach inference's folding (through validation), as they reach its plan."""
    model = onnxcore.load(_model())
    assert infer_both(model)[1].shape("y") is None
    assert infer_both(model, custom_ops=_session_kernels())[1].shape("y") == (2, 6)


def _shape_findings(report: Any) -> list[Any]:
    return [f for f in report.findings if "declared with shape [3, 4] but inferred [2, 6]" in f.message]


def test_a_session_validates_with_its_kernels_folded() -> None:
    """Declared [3, 4], computed [2, 6] by the session's kernel: the session's validation sees the contradiction
    (through its ``custom_ops``), which it cannot without them."""
    model = onnxcore.load(_model(out_shape=[3, 4]))
    assert _shape_findings(check_context(model, DEFAULT_LIMITS, custom_ops=_session_kernels())[0])
    assert not _shape_findings(check_context(model, DEFAULT_LIMITS)[0])
    with pytest.raises(onnxcore.ValidationError, match="E-SHAPE-MISMATCH"):
        onnxcore.Session(_model(out_shape=[3, 4]), custom_ops=_session_kernels())
