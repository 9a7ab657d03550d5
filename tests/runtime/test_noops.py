"""Nodes that give back their input, as aliases in the plan (runtime/optimize/noops.py, Clause 8.2): each left out
where its result is its input bit for bit, kept where it is not (``x + 0`` on -0, a broadcast that grows the
shape, an integer times a float, an unknown input type, a graph input handed out as an output); the outputs the same,
bit for bit, as the graph run as written (``intermediates=True``, which the pass never touches) and as
onnxruntime's."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore

ML = "ai.onnx.ml"


def _regressor(x: str, out: str) -> Any:
    """A one-tree TreeEnsembleRegressor: a float32 [N, 1] value of known type and rank for the pass."""
    return h.make_node(
        "TreeEnsembleRegressor",
        [x],
        [out],
        domain=ML,
        nodes_treeids=[0, 0, 0],
        nodes_nodeids=[0, 1, 2],
        nodes_featureids=[0, 0, 0],
        nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
        nodes_values=[0.0, 0.0, 0.0],
        nodes_truenodeids=[1, 0, 0],
        nodes_falsenodeids=[2, 0, 0],
        target_treeids=[0, 0],
        target_nodeids=[1, 2],
        target_ids=[0, 0],
        target_weights=[-0.0, 2.5],
        n_targets=1,
    )


def _model(nodes: list[Any], inits: list[Any], outputs: list[str], *, out_type: int = TP.FLOAT, rank: int = 2) -> bytes:
    dims = [f"d{i}" for i in range(rank)]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, ["N", 2])],
        [h.make_tensor_value_info(o, out_type, dims) for o in outputs],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid(ML, 3)])
    m.ir_version = 8
    return m.SerializeToString()


def _steps(sess: onnxcore.Session, feeds: dict[str, np.ndarray]) -> list[str]:
    return [s.op_type for s in sess.profile(feeds, repeat=1)]


def _check(model: bytes, *, check: bool = True, ort_too: bool = True) -> tuple[list[str], list[np.ndarray]]:
    """The plan's steps and outputs; the outputs equal, bit for bit, the graph's run as written (and onnxruntime's)."""
    sess = onnxcore.Session(model, check=check)
    x = np.array([[-1.0, 0.5], [2.0, -0.0], [np.nan, 1.0]], np.float32)
    feeds = {"x": x}
    got = sess.run(None, feeds)
    written = sess.run(None, feeds, intermediates=True)
    written = written[0] if isinstance(written, tuple) else written
    for a, b in zip(got, written):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if ort_too:
        ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
        for a, b in zip(got, ref):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)
    return _steps(sess, feeds), got


def test_identity_cast_and_times_one_chain_becomes_one_step() -> None:
    """onnxmltools' LightGBM tail: Identity, a Cast of int64 labels to int64, probabilities times a 0-d 1."""
    nodes = [
        h.make_node(
            "TreeEnsembleClassifier",
            ["x"],
            ["label_t", "prob_t"],
            domain=ML,
            nodes_treeids=[0, 0, 0],
            nodes_nodeids=[0, 1, 2],
            nodes_featureids=[1, 0, 0],
            nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
            nodes_values=[0.7, 0.0, 0.0],
            nodes_truenodeids=[1, 0, 0],
            nodes_falsenodeids=[2, 0, 0],
            class_treeids=[0, 0, 0, 0, 0, 0],
            class_nodeids=[1, 1, 1, 2, 2, 2],
            class_ids=[0, 1, 2, 0, 1, 2],
            class_weights=[0.25, 0.5, 0.25, 0.7, 0.1, 0.2],
            classlabels_int64s=[3, 8, 5],
        ),
        h.make_node("Identity", ["label_t"], ["lab"]),
        h.make_node("Identity", ["prob_t"], ["prob"]),
        h.make_node("Cast", ["lab"], ["label"], to=TP.INT64),
        h.make_node("Mul", ["prob", "one"], ["probabilities"]),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, ["N", 2])],
        [
            h.make_tensor_value_info("label", TP.INT64, ["N"]),
            h.make_tensor_value_info("probabilities", TP.FLOAT, ["N", 3]),
        ],
        [nh.from_array(np.array(1.0, np.float32), "one")],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid(ML, 3)])
    m.ir_version = 8
    steps, got = _check(m.SerializeToString())
    assert steps == ["TreeEnsembleClassifier"]
    assert got[0].dtype == np.int64 and got[1].dtype == np.float32


# (op, constant, constant first, dropped): x * 1, x / 1, x - (+0), x + (-0) are x; x + (+0) is not (-0 + 0 = +0),
# nor x - (-0), nor 1 / x.
CASES = [
    ("Mul", 1.0, False, True),
    ("Mul", 1.0, True, True),
    ("Div", 1.0, False, True),
    ("Div", 1.0, True, False),
    ("Sub", 0.0, False, True),
    ("Sub", -0.0, False, False),
    ("Sub", 0.0, True, False),
    ("Add", -0.0, False, True),
    ("Add", -0.0, True, True),
    ("Add", 0.0, False, False),
    ("Mul", 2.0, False, False),
]


@pytest.mark.parametrize(("op", "value", "first", "dropped"), CASES, ids=str)
def test_neutral_constants(op: str, value: float, first: bool, dropped: bool) -> None:
    ins = ["c", "r"] if first else ["r", "c"]
    nodes = [_regressor("x", "r"), h.make_node(op, ins, ["y"])]
    steps, got = _check(_model(nodes, [nh.from_array(np.array(value, np.float32), "c")], ["y"]))
    assert (op not in steps) == dropped, steps
    if op == "Add" and not dropped:
        assert not np.signbit(got[0][0, 0])  # the leaf weight -0 plus +0 is +0: why the node stays


@pytest.mark.parametrize(("shape", "dropped"), [((1, 1), True), ((1,), True), ((1, 1, 1), False), ((2,), False)])
def test_a_broadcast_that_grows_the_shape_keeps_the_node(shape: tuple[int, ...], dropped: bool) -> None:
    """The regressor's output is [N, 1]: a [1, 1] or [1] one leaves it as it is, a [1, 1, 1] or [2] one grows it."""
    nodes = [_regressor("x", "r"), h.make_node("Mul", ["r", "c"], ["y"])]
    rank = max(2, len(shape))
    steps, got = _check(_model(nodes, [nh.from_array(np.ones(shape, np.float32), "c")], ["y"], rank=rank))
    assert ("Mul" not in steps) == dropped
    assert got[0].shape == np.broadcast_shapes((3, 1), shape)


def test_an_integer_times_a_float_one_keeps_the_node() -> None:
    """int64 * float 1.0 (an unchecked model: the types differ) is not the int64 input: the node stays."""
    nodes = [
        _regressor("x", "r"),
        h.make_node("Cast", ["r"], ["ri"], to=TP.INT64),
        h.make_node("Mul", ["ri", "c"], ["y"]),
    ]
    model = _model(nodes, [nh.from_array(np.array(1.0, np.float32), "c")], ["y"], out_type=TP.FLOAT)
    steps, got = _check(model, check=False, ort_too=False)
    assert "Mul" in steps
    assert got[0].dtype != np.int64


def test_unknown_input_types_keep_the_node() -> None:
    """A graph input's element type is not read by the pass: a Cast or a Mul by 1 of it stays; a Cast of a Cast's
    output (known) goes."""
    nodes = [
        h.make_node("Cast", ["x"], ["a"], to=TP.FLOAT),
        h.make_node("Cast", ["a"], ["b"], to=TP.FLOAT),
        h.make_node("Mul", ["x", "c"], ["m"]),
        h.make_node("Add", ["b", "m"], ["y"]),
    ]
    steps, _ = _check(_model(nodes, [nh.from_array(np.array(1.0, np.float32), "c")], ["y"]))
    assert steps.count("Cast") == 1 and "Mul" in steps


def test_graph_inputs_and_shared_outputs_are_not_aliased() -> None:
    """An Identity from a graph input to a graph output stays (the caller's array is not handed back), and so does
    one whose input is another graph output (two outputs would be one array); an Identity between two other nodes
    goes."""
    nodes = [
        h.make_node("Identity", ["x"], ["same"]),
        _regressor("x", "r"),
        h.make_node("Identity", ["r"], ["r2"]),
        h.make_node("Identity", ["r2"], ["r3"]),
        h.make_node("Neg", ["r3"], ["y"]),
        h.make_node("Identity", ["y"], ["y2"]),
    ]
    steps, got = _check(_model(nodes, [], ["same", "y", "y2"]))
    assert steps.count("Identity") == 2
    np.testing.assert_array_equal(got[0], np.array([[-1.0, 0.5], [2.0, -0.0], [np.nan, 1.0]], np.float32))
