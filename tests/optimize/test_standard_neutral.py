"""drop_neutral_operands (runtime/optimize/standard/neutral.py, issue 39 item 2): a Mul or Div by a whole constant
of ones (a fresh RMSNorm's weight), an Add of -0s or a Sub of +0s, left out where the constant's broadcast keeps the
other operand's shape; the result is the original's bit for bit (onnxruntime on the original), and the traps (a
float's + (+0), a broadcast that grows an extent a dimension variable may make 1, a constant of higher rank, a
constant minus x, a value of ones but one) keep the node; a Concat of one input is its input."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from standard_helpers import ops, ort_run, rewrite

from onnxcore.runtime.optimize.pipeline import Rewrite
from onnxcore.runtime.optimize.standard import drop_neutral_operands

RNG = np.random.default_rng(61)
DROP = [Rewrite("drop_neutral_operands", drop_neutral_operands, 1)]


def _model(op: str, c: np.ndarray, x_shape: list, *, constant_first: bool = False, elem: int = TP.FLOAT,
           y_rank: int | None = None) -> onnx.ModelProto:  # fmt: skip
    ins = ["c", "x"] if constant_first else ["x", "c"]
    nodes = [h.make_node(op, ins, ["m"]), h.make_node("Identity", ["m"], ["y"])]
    rank = len(x_shape) if y_rank is None else y_rank
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", elem, x_shape)],
                     [h.make_tensor_value_info("y", elem, [f"d{i}" for i in range(rank)])],
                     [nh.from_array(c, "c")])  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 15)])
    m.ir_version = 8
    return m


def _x(shape: tuple[int, ...], dtype: type = np.float32) -> np.ndarray:
    x = RNG.standard_normal(shape).astype(dtype)
    if x.dtype.kind == "f":
        x.reshape(-1)[:2] = [-0.0, 0.0]  # a -0 must stay -0
    return x


@pytest.mark.parametrize(
    ("op", "c", "first"),
    [
        ("Mul", np.ones(8, np.float32), True),  # T5's RMSNorm weight, as the Mul's first input
        ("Mul", np.ones((1, 1, 8), np.float32), False),
        ("Div", np.ones((3, 1), np.float32), False),
        ("Add", np.full(8, -0.0, np.float32), False),
        ("Sub", np.zeros((1, 8), np.float32), False),
    ],
)
def test_neutral_constants_are_left_out_bit_for_bit(op: str, c: np.ndarray, first: bool) -> None:
    m = _model(op, c, ["B", 3, 8], constant_first=first)
    out, fired = rewrite(m, DROP)
    assert fired == ["drop_neutral_operands"] and ops(out) == ["Identity"] and out.graph.node[0].input == ["x"]
    for b in (1, 2):
        x = _x((b, 3, 8))
        (want,) = ort_run(m.SerializeToString(), {"x": x})
        (got,) = ort_run(out.SerializeToString(), {"x": x})
        assert want.tobytes() == got.tobytes()  # the signs of zeros included


def test_an_integer_plus_zeros_is_left_out() -> None:
    out, fired = rewrite(_model("Add", np.zeros(4, np.int64), ["N", 4], elem=TP.INT64), DROP)
    assert fired and ops(out) == ["Identity"]


def test_traps_keep_the_node() -> None:
    traps = {
        # A float's x + (+0) turns -0 into +0.
        "plus +0": _model("Add", np.zeros(8, np.float32), ["B", 8]),
        # [3] against a dimension variable: where the variable is 1 the broadcast grows it to 3.
        "grows a variable": _model("Mul", np.ones(3, np.float32), ["B", "T"]),
        # Rank 3 against rank 2: the broadcast adds an axis.
        "adds an axis": _model("Mul", np.ones((1, 1, 8), np.float32), ["B", 8], y_rank=3),
        # 1 - x, and 1 / x, are not x.
        "constant minus x": _model("Sub", np.zeros(8, np.float32), ["B", 8], constant_first=True),
        "constant over x": _model("Div", np.ones(8, np.float32), ["B", 8], constant_first=True),
        # Every element but one is 1.
        "not all ones": _model("Mul", np.r_[np.ones(7), 1.0001].astype(np.float32), ["B", 8]),
    }
    for name, m in traps.items():
        out, fired = rewrite(m, DROP)
        assert fired == [] and len(ops(out)) == 2, name


def test_a_concat_of_one_input_is_left_out_unless_it_is_a_graph_output() -> None:
    # TorchScript's torch.cat of a list of one tensor (densenet's first layer of each block).
    nodes = [h.make_node("Concat", ["x"], ["m"], axis=1), h.make_node("Relu", ["m"], ["y"]),
             h.make_node("Concat", ["x"], ["z"], axis=0)]  # fmt: skip
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, ["N", 3])],
                     [h.make_tensor_value_info(o, TP.FLOAT, ["N", 3]) for o in ("y", "z")])  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    out, fired = rewrite(m, DROP)
    assert fired and ops(out) == ["Relu", "Concat"] and out.graph.node[0].input == ["x"]
    x = _x((2, 3))
    assert all(a.tobytes() == b.tobytes() for a, b in zip(ort_run(m.SerializeToString(), {"x": x}),
                                                          ort_run(out.SerializeToString(), {"x": x})))  # fmt: skip


def _logical(op: str, c: np.ndarray, x_shape: list, *, constant_first: bool = False) -> onnx.ModelProto:
    ins = ["c", "x"] if constant_first else ["x", "c"]
    nodes = [h.make_node(op, ins, ["m"]), h.make_node("Not", ["m"], ["y"])]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.BOOL, x_shape)],
                     [h.make_tensor_value_info("y", TP.BOOL, [f"d{i}" for i in range(len(x_shape))])],
                     [nh.from_array(c, "c")])  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 15)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize(
    ("op", "c", "first"),
    [
        # The dynamo exporter's attention mask: ones & (position >= 0).
        ("And", np.ones((1, 1), bool), True),
        ("And", np.ones(5, bool), False),
        ("Or", np.zeros((1, 5), bool), False),
        ("Xor", np.zeros(1, bool), True),
    ],
)
def test_logical_neutrals_are_left_out(op: str, c: np.ndarray, first: bool) -> None:
    m = _logical(op, c, ["B", 5], constant_first=first)
    out, fired = rewrite(m, DROP)
    assert fired == ["drop_neutral_operands"] and ops(out) == ["Not"] and out.graph.node[0].input == ["x"]
    for b in (1, 3):
        x = RNG.random((b, 5)) < 0.5
        (want,) = ort_run(m.SerializeToString(), {"x": x})
        (got,) = ort_run(out.SerializeToString(), {"x": x})
        assert np.array_equal(want, got)


def test_logical_traps_keep_the_node() -> None:
    traps = {
        "and with a false": _logical("And", np.r_[np.ones(4, bool), False], ["B", 5]),
        "or with a true": _logical("Or", np.r_[np.zeros(4, bool), True], ["B", 5]),
        # [5] of trues against a dimension variable that may be 1: the broadcast grows it.
        "grows a variable": _logical("And", np.ones(5, bool), ["B", "T"]),
    }
    for name, m in traps.items():
        out, fired = rewrite(m, DROP)
        assert fired == [] and len(ops(out)) == 2, name


def test_a_neutral_node_writing_a_graph_output_hands_it_to_the_node_before() -> None:
    # Llama's last RMSNorm: a Mul by its weight of ones makes the graph output; the node before writes it instead.
    nodes = [h.make_node("Relu", ["x"], ["m"]), h.make_node("Mul", ["w", "m"], ["y"])]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, ["B", 8])],
                     [h.make_tensor_value_info("y", TP.FLOAT, ["B", 8])],
                     [nh.from_array(np.ones(8, np.float32), "w")])  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 15)])
    m.ir_version = 8
    out, fired = rewrite(m, DROP)
    assert fired and ops(out) == ["Relu"] and list(out.graph.node[0].output) == ["y"]
    assert [o.name for o in out.graph.output] == ["y"]
    x = _x((2, 8))
    (want,) = ort_run(m.SerializeToString(), {"x": x})
    (got,) = ort_run(out.SerializeToString(), {"x": x})
    assert want.tobytes() == got.tobytes()
