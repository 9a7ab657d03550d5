"""The session evaluates the bound model (onnxcore.graph.bind): one binding, one precedence rule and one nesting
refusal for validation, inference and evaluation alike (Clause 8.4, 14.3, 15.4)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import onnxcore as oc
from onnxcore import LimitError, Limits, Session, ValidationError
from onnxcore.graph import bound as bound_mod

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402


def _scaler_model() -> bytes:
    # A model-local function named as the ai.onnx.ml operator Scaler, whose body negates.
    fn = h.make_function(
        "ai.onnx.ml", "Scaler", ["X"], ["Y"], [h.make_node("Neg", ["X"], ["Y"])], [h.make_opsetid("", 18)]
    )
    g = h.make_graph(
        [h.make_node("Scaler", ["X"], ["Y"], domain="ai.onnx.ml")],
        "g",
        [h.make_tensor_value_info("X", TP.FLOAT, [2])],
        [h.make_tensor_value_info("Y", TP.FLOAT, [2])],
    )
    m = h.make_model(
        g,
        opset_imports=[h.make_opsetid("", 18), h.make_opsetid("ai.onnx.ml", 3)],
        functions=[fn],
        ir_version=10,
    )
    return m.SerializeToString()


@pytest.mark.parametrize("check", [True, False])
def test_a_local_function_wins_over_the_operator_and_its_kernel(check: bool) -> None:
    # Clause 8.4: the model-local function (ai.onnx.ml, Scaler, "") is what the node invokes, not the
    # definition of Scaler nor its kernel (which, with no attributes, would return X unchanged).
    (y,) = Session(_scaler_model(), check=check).run(None, {"X": np.array([1, 2], np.float32)})
    np.testing.assert_array_equal(y, np.array([-1, -2], np.float32))
    # The validator reads the same binding: the body is checked, no error.
    assert oc.check(_scaler_model()).ok


@pytest.mark.parametrize("check", [True, False])
def test_a_session_binds_the_model_once(monkeypatch: pytest.MonkeyPatch, check: bool) -> None:
    made: list[int] = []
    init = bound_mod.BoundModel.__init__

    def counting(self: Any, *args: Any, **kw: Any) -> None:
        made.append(1)
        init(self, *args, **kw)

    monkeypatch.setattr(bound_mod.BoundModel, "__init__", counting)
    sess = Session(_scaler_model(), check=check)
    assert made == [1]
    sess.run(None, {"X": np.array([1, 2], np.float32)})
    assert made == [1]


def _float1() -> oc.TypeProto:
    dim = oc.TensorShapeProto.Dimension(dim_value=1)
    return oc.TypeProto(tensor_type=oc.TypeProto.Tensor(elem_type=1, shape=oc.TensorShapeProto(dim=[dim])))


def _graph(name: str, nodes: list[oc.NodeProto], out: str, inputs: list[oc.ValueInfoProto] | None = None) -> Any:
    return oc.GraphProto(
        name=name, node=nodes, input=inputs or [], output=[oc.ValueInfoProto(name=out, type=_float1())]
    )


def _if(out: str, then: oc.GraphProto, other: oc.GraphProto) -> oc.NodeProto:
    kind = oc.AttributeProto.AttributeType.GRAPH
    return oc.NodeProto(
        op_type="If",
        input=["c"],
        output=[out],
        attribute=[
            oc.AttributeProto(name="then_branch", type=kind, g=then),
            oc.AttributeProto(name="else_branch", type=kind, g=other),
        ],
    )


def _nested_ifs(depth: int) -> oc.ModelProto:
    """If nodes nested ``depth`` subgraphs deep, built bottom-up (iteratively): the innermost then-branch copies
    the outer x, every else-branch is a leaf giving -x."""
    inner = _graph(f"g{depth}", [oc.NodeProto(op_type="Identity", input=["x"], output=[f"o{depth}"])], f"o{depth}")
    for d in range(depth - 1, -1, -1):
        leaf = _graph(f"e{d}", [oc.NodeProto(op_type="Neg", input=["x"], output=[f"n{d}"])], f"n{d}")
        inner = _graph(f"g{d}", [_if(f"o{d}", inner, leaf)], f"o{d}")
    bool_scalar = oc.TypeProto(tensor_type=oc.TypeProto.Tensor(elem_type=9, shape=oc.TensorShapeProto()))
    inner.input = [oc.ValueInfoProto(name="x", type=_float1()), oc.ValueInfoProto(name="c", type=bool_scalar)]
    return oc.ModelProto(ir_version=10, opset_import=[oc.OperatorSetIdProto(domain="", version=18)], graph=inner)


def test_deep_nesting_within_the_limit_is_evaluated() -> None:
    model = _nested_ifs(100)
    x = np.array([5.0], np.float32)
    for check in (True, False):
        sess = Session(model, limits=Limits(max_nesting_depth=200), check=check)
        (y,) = sess.run(None, {"x": x, "c": np.array(True)})
        np.testing.assert_array_equal(y, x)
        (y,) = sess.run(None, {"x": x, "c": np.array(False)})
        np.testing.assert_array_equal(y, -x)


def test_nesting_beyond_the_limit_is_refused_with_the_validators_code() -> None:
    # Clause 15.4: the same refusal, named by the same code, whether the session validates first or not.
    model = _nested_ifs(100)
    with pytest.raises(ValidationError, match="E-LIMIT-NESTING"):
        Session(model)
    with pytest.raises(LimitError, match=r"E-LIMIT-NESTING.*15\.4"):
        Session(model, check=False)
    assert any(f.code == "E-LIMIT-NESTING" for f in oc.check(model).findings)


def test_run_refuses_a_single_string_for_output_names() -> None:
    """``run("probs", feeds)`` read the string as the names "p", "r", "o", ... before (issue 22)."""
    x = h.make_tensor_value_info("x", TP.FLOAT, [2])
    y = h.make_tensor_value_info("probs", TP.FLOAT, [2])
    g = h.make_graph([h.make_node("Relu", ["x"], ["probs"])], "g", [x], [y])
    sess = Session(h.make_model(g, opset_imports=[h.make_opsetid("", 18)]))
    feeds = {"x": np.array([-1.0, 2.0], np.float32)}
    with pytest.raises(oc.InputError, match=r"single string 'probs'; give a list"):
        sess.run("probs", feeds)  # type: ignore[arg-type]
    np.testing.assert_array_equal(sess.run(["probs"], feeds)[0], [0.0, 2.0])


def test_an_output_too_large_to_copy_is_refused_by_name() -> None:
    """A read-only constant output is copied for the caller outside the plan's error wrapping: a MemoryError
    there escaped bare (issue 29); it is a LimitError naming the output."""
    from onnxcore.runtime import results

    class _Unaffordable(np.ndarray):
        def copy(self, order: Any = "C") -> np.ndarray:
            raise MemoryError

    v = np.zeros((4, 1000), np.float32).view(_Unaffordable)
    v.flags.writeable = False
    with pytest.raises(LimitError, match=r"output 'y' .* cannot be copied for the caller: out of memory"):
        results.value_for_caller(v, "y")
    w = np.ones(3, np.float32)
    w.flags.writeable = False
    out = results.value_for_caller(w, "w")
    assert out.flags.writeable and out is not w


def test_an_output_contradicting_its_declared_shape_is_returned_with_a_warning() -> None:
    """onnxmltools declares LightGBM's label as [1] and a run gives (16,): returned, as onnxruntime does, but not
    in silence (issue 29)."""
    import warnings

    from onnxcore.errors import OutputShapeWarning

    x = h.make_tensor_value_info("x", TP.FLOAT, ["N"])
    outs = [h.make_tensor_value_info("label", TP.FLOAT, [1]), h.make_tensor_value_info("free", TP.FLOAT, ["N"])]
    nodes = [h.make_node("Identity", ["x"], ["label"]), h.make_node("Neg", ["x"], ["free"])]
    sess = Session(h.make_model(h.make_graph(nodes, "g", [x], outs), opset_imports=[h.make_opsetid("", 18)]))
    with pytest.warns(
        OutputShapeWarning, match=r"output 'label': the run computed shape \[16\], the graph declares \[1\]"
    ):
        label, free = sess.run(None, {"x": np.zeros(16, np.float32)})
    assert label.shape == (16,) and free.shape == (16,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a shape that agrees gives no warning
        sess.run(None, {"x": np.zeros(1, np.float32)})
