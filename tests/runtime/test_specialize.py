"""Plans specialised to the input shapes of a run (runtime/optimize/specialize.py, Clause 8.2): shape arithmetic
folded per shape signature, plans reused for a signature and made again for new shapes, data-dependent shapes
left to run time; every result checked against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore
from onnxcore.runtime.session import MAX_SHAPE_PLANS


def _reshape_model() -> bytes:
    """What exporters write for ``x.view(B, S, -1)`` and a position range: Shape -> Gather -> Unsqueeze ->
    Concat -> Reshape, ConstantOfShape, Range over a Shape's value."""
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Gather", ["s", "i0"], ["b"], axis=0),
        h.make_node("Gather", ["s", "i1"], ["n"], axis=0),
        h.make_node("Unsqueeze", ["b", "ax0"], ["bu"]),
        h.make_node("Unsqueeze", ["n", "ax0"], ["nu"]),
        h.make_node("Concat", ["bu", "nu", "minus1"], ["target"], axis=0),
        h.make_node("Reshape", ["x", "target"], ["r"]),
        h.make_node("Range", ["zero", "n", "one"], ["pos"]),
        h.make_node("Cast", ["pos"], ["posf"], to=TP.FLOAT),
        h.make_node("Unsqueeze", ["posf", "ax1"], ["pos2"]),
        h.make_node("Add", ["r", "pos2"], ["y0"]),
        h.make_node("Concat", ["bu", "nu"], ["bs"], axis=0),
        h.make_node("ConstantOfShape", ["bs"], ["ones"], value=h.make_tensor("v", TP.FLOAT, [1], [1.0])),
        h.make_node("Unsqueeze", ["ones", "ax2"], ["ones3"]),
        h.make_node("Mul", ["y0", "ones3"], ["y"]),
    ]
    inits = [
        nh.from_array(np.array(0, np.int64), "i0"),
        nh.from_array(np.array(1, np.int64), "i1"),
        nh.from_array(np.array([0], np.int64), "ax0"),
        nh.from_array(np.array([1], np.int64), "ax1"),
        nh.from_array(np.array([2], np.int64), "ax2"),
        nh.from_array(np.array([-1], np.int64), "minus1"),
        nh.from_array(np.array(0, np.int64), "zero"),
        nh.from_array(np.array(1, np.int64), "one"),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, ["B", "S", 4, 2])],
        [h.make_tensor_value_info("y", TP.FLOAT, ["B", "S", 8])],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _ops(plan: object) -> list[str]:
    return [bn.node.op_type for bn in plan.info]  # type: ignore[attr-defined]


def test_shape_arithmetic_is_folded_per_signature_and_reused() -> None:
    model = _reshape_model()
    s = onnxcore.Session(model)
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 4, 2)).astype(np.float32)
    for _ in range(3):
        np.testing.assert_allclose(s.run(None, {"x": x})[0], ref.run(None, {"x": x})[0], rtol=1e-6)
    assert len(s._shape_plans) == 1
    plan = next(iter(s._shape_plans.values()))
    general = _ops(s._plan)
    assert "Shape" in general and "Range" in general and "ConstantOfShape" in general
    # Specialised: no shape arithmetic left; the Reshape, the Add and the Mul of the data remain.
    assert not {"Shape", "Gather", "Concat", "Range", "ConstantOfShape"} & set(_ops(plan))
    assert len(plan.steps) < len(s._plan.steps)
    # The same signature reuses the same plan.
    x2 = rng.standard_normal((2, 5, 4, 2)).astype(np.float32)
    np.testing.assert_allclose(s.run(None, {"x": x2})[0], ref.run(None, {"x": x2})[0], rtol=1e-6)
    assert next(iter(s._shape_plans.values())) is plan and len(s._shape_plans) == 1
    # New shapes: the general plan once, then a plan of their own; both signatures' results right.
    x3 = rng.standard_normal((3, 7, 4, 2)).astype(np.float32)
    for _ in range(3):
        np.testing.assert_allclose(s.run(None, {"x": x3})[0], ref.run(None, {"x": x3})[0], rtol=1e-6)
        np.testing.assert_allclose(s.run(None, {"x": x})[0], ref.run(None, {"x": x})[0], rtol=1e-6)
    assert len(s._shape_plans) == 2
    # intermediates=True still runs every node as written.
    _, values = s.run(None, {"x": x3}, intermediates=True)
    np.testing.assert_array_equal(values["s"], [3, 7, 4, 2])
    np.testing.assert_array_equal(values["pos"], np.arange(7))


def test_shape_plans_are_bounded() -> None:
    s = onnxcore.Session(_reshape_model())
    for n in range(1, MAX_SHAPE_PLANS + 4):
        x = np.ones((1, n, 4, 2), np.float32)
        for _ in range(2):
            y = s.run(None, {"x": x})[0]
        np.testing.assert_allclose(y, np.ones((1, n, 8)) + np.arange(n)[None, :, None])
    assert len(s._shape_plans) == MAX_SHAPE_PLANS


def test_data_dependent_shapes_are_not_folded() -> None:
    """A Shape of NonZero's output depends on the data, not on the input's shape: it stays a computation."""
    nodes = [
        h.make_node("Greater", ["x", "zero"], ["pos"]),
        h.make_node("NonZero", ["pos"], ["nz"]),
        h.make_node("Shape", ["nz"], ["sh"]),
        h.make_node("Shape", ["x"], ["sx"]),
        h.make_node("Concat", ["sh", "sx"], ["y"], axis=0),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, ["N"])],
        [h.make_tensor_value_info("y", TP.INT64, [3])],
        [nh.from_array(np.array(0, np.float32), "zero")],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    model = m.SerializeToString()
    s = onnxcore.Session(model)
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for _ in range(6):
        x = rng.standard_normal(9).astype(np.float32)  # one shape, a different count of positives each time
        np.testing.assert_array_equal(s.run(None, {"x": x})[0], ref.run(None, {"x": x})[0])
    plan = next(iter(s._shape_plans.values()))
    assert _ops(plan).count("Shape") == 1  # Shape(x) folded, Shape(NonZero(...)) kept


def test_no_plan_when_no_shape_is_decided() -> None:
    """Only a data-dependent Shape: no specialised plan, and the analysis is made once, not on every run."""
    nodes = [h.make_node("NonZero", ["x"], ["nz"]), h.make_node("Shape", ["nz"], ["y"])]
    g = h.make_graph(
        nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, ["N"])], [h.make_tensor_value_info("y", TP.INT64, [2])]
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    s = onnxcore.Session(m.SerializeToString())
    for k in range(4):
        x = np.zeros(5, np.float32)
        x[:k] = 1
        np.testing.assert_array_equal(s.run(None, {"x": x})[0], [1, k])
    assert s._shape_plans == {} and list(s._decided.values()) == [[]]
