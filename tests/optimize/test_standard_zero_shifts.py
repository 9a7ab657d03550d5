"""drop_zero_shifts (runtime/optimize/standard/neutral.py, issue 39 item 2): a float ``x + (+0)`` (a fresh model's
zero bias) or ``x - (-0)`` is left out where no reader can tell the result from ``x``: the two differ only where
``x`` is ``-0`` (the sum is ``+0``), an equal value (IEEE 754). Judged by onnxruntime on the original: every output
equal as values, and where the sum reaches what sees a zero's sign (a divisor, a base raised to a power, a cast to
text, a subgraph, another domain) the node stays, because there the sign becomes a value (1 / -0 is -inf)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from standard_helpers import ops, ort_run, rewrite

import onnxcore
from onnxcore.runtime.optimize.pipeline import Rewrite
from onnxcore.runtime.optimize.standard import drop_zero_shifts

DROP = [Rewrite("drop_zero_shifts", drop_zero_shifts, 1)]


def _model(op: str, c: np.ndarray, after: list[onnx.NodeProto], extra: list[onnx.TensorProto] = (),
           y_type: int = TP.FLOAT) -> onnx.ModelProto:  # fmt: skip
    """x[B, 8] -> op(x, c) as ``s`` -> the nodes ``after`` (reading ``s``, writing ``y``)."""
    nodes = [h.make_node(op, ["x", "c"], ["s"]), *after]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, ["B", 8])],
                     [h.make_tensor_value_info("y", y_type, ["B", 8])], [nh.from_array(c, "c"), *extra])  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _x(rows: int) -> np.ndarray:
    x = np.random.default_rng(rows).standard_normal((rows, 8)).astype(np.float32)
    x[0, :3] = [-0.0, 0.0, -0.0]  # where x + 0 differs from x
    return x


PLUS_ZERO = np.zeros(8, np.float32)
MINUS_ZERO = np.full((1, 8), -0.0, np.float32)
TWO = nh.from_array(np.array(2.0, np.float32), "two")


@pytest.mark.parametrize(
    ("op", "c", "after", "extra"),
    [
        ("Add", PLUS_ZERO, [h.make_node("Relu", ["s"], ["y"])], []),
        ("Sub", MINUS_ZERO, [h.make_node("Tanh", ["s"], ["y"])], []),
        # A Div by a constant reads the sum as its dividend: -0 / 2 and +0 / 2 are equal.
        ("Add", PLUS_ZERO, [h.make_node("Div", ["s", "two"], ["y"])], [TWO]),
        # The sum a graph output through an Identity: the output may hold -0 where the original held +0.
        ("Add", PLUS_ZERO, [h.make_node("Identity", ["s"], ["y"])], []),
    ],
)
def test_a_zero_shift_no_reader_can_tell_is_left_out(op: str, c: np.ndarray, after: list, extra: list) -> None:
    m = _model(op, c, after, extra)
    out, fired = rewrite(m, DROP)
    assert fired == ["drop_zero_shifts"] and op not in ops(out)
    for rows in (1, 3):
        x = _x(rows)
        (want,) = ort_run(m.SerializeToString(), {"x": x})
        (got,) = ort_run(out.SerializeToString(), {"x": x})
        assert np.array_equal(want, got)  # equal values; -0 == +0


@pytest.mark.parametrize(
    ("name", "after", "extra", "y_type"),
    [
        ("a divisor", [h.make_node("Div", ["two", "s"], ["y"])], [TWO], TP.FLOAT),
        ("a divisor through a Mul", [h.make_node("Mul", ["s", "two"], ["m"]), h.make_node("Reciprocal", ["m"], ["y"])],
         [TWO], TP.FLOAT),
        ("a base raised to a power", [h.make_node("Pow", ["s", "p"], ["y"])],
         [nh.from_array(np.array(-1.0, np.float32), "p")], TP.FLOAT),
        ("a cast to text", [h.make_node("Cast", ["s"], ["y"], to=TP.STRING)], [], TP.STRING),
        ("another domain", [h.make_node("Relu", ["s"], ["r"]), h.make_node("FusedMatMul", ["r", "r"], ["y"],
                                                                           domain="com.microsoft")], [], TP.FLOAT),
    ],
)  # fmt: skip
def test_a_zero_shift_whose_sign_is_seen_stays(name: str, after: list, extra: list, y_type: int) -> None:
    m = _model("Add", PLUS_ZERO, after, extra, y_type)
    if name == "another domain":
        m.opset_import.append(h.make_opsetid("com.microsoft", 1))
    out, fired = rewrite(m, DROP)
    assert fired == [] and "Add" in ops(out), name
    if name == "a divisor":  # why: without the Add, 2 / x at x = -0 is -inf where the original gives +inf
        x = _x(1)
        (want,) = ort_run(m.SerializeToString(), {"x": x})
        assert want[0, 0] == np.inf


def test_other_constants_are_not_zero_shifts() -> None:
    for op, c in [("Add", MINUS_ZERO), ("Sub", PLUS_ZERO), ("Add", np.r_[np.zeros(7), 1e-30].astype(np.float32))]:
        out, fired = rewrite(_model(op, c, [h.make_node("Relu", ["s"], ["y"])]), DROP)
        assert fired == [] and ops(out) == [op, "Relu"], (op, c)


def test_optimize_leaves_zero_biases_out_and_can_keep_them() -> None:
    m = _model("Add", PLUS_ZERO, [h.make_node("Relu", ["s"], ["y"])])
    out, report = onnxcore.optimize(m.SerializeToString())
    assert [n.op_type for n in out.graph.node] == ["Relu"] and report.fired.get("drop_zero_shifts") == 1
    assert report.verified
    kept, _ = onnxcore.optimize(m.SerializeToString(), disabled=("drop_zero_shifts",))
    assert [n.op_type for n in kept.graph.node] == ["Add", "Relu"]
