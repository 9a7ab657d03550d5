"""Shape operators with constant arguments as numpy views (runtime/optimize/shapeops.py, Clause 8.2): the fast path
taken from the second call with an input shape on, its results equal to onnxruntime's over several shapes, a
refused shape still refused, and repeated nodes still evaluated once."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore
from onnxcore.errors import EvaluationError
from onnxcore.kernels.fused.shape import ExpandLike, ReshapeLike, SameTypeCast, SliceLike

BIG = np.iinfo(np.int64).max


def _i64(name: str, v: list[int]) -> object:
    return nh.from_array(np.array(v, np.int64), name)


def _model(slice_case: tuple[list[int], list[int], list[int], list[int]]) -> bytes:
    starts, ends, axes, steps = slice_case
    nodes = [
        h.make_node("Reshape", ["x", "shape"], ["r"]),  # (B, S, 4, C/4), 0 copies an extent
        h.make_node("Cast", ["r"], ["rc"], to=TP.FLOAT),  # already float: the input itself
        h.make_node("Slice", ["rc", "starts", "ends", "axes", "steps"], ["s"]),
        h.make_node("Unsqueeze", ["s", "ax1"], ["u"]),
        h.make_node("Squeeze", ["u", "ax1"], ["q"]),
        h.make_node("Expand", ["q", "eshape"], ["e"]),  # (2, B', S', 4', c') from a leading 1
        h.make_node("Flatten", ["e"], ["f"], axis=2),  # (2 B', S' 4' c')
        h.make_node("Reshape", ["x", "shape"], ["r2"]),  # a repeat of the first Reshape
        h.make_node("ReduceSum", ["r2"], ["t"], keepdims=0),
    ]
    inits = [
        _i64("shape", [0, 0, 4, -1]),
        _i64("starts", starts),
        _i64("ends", ends),
        _i64("axes", axes),
        _i64("steps", steps),
        _i64("ax1", [1]),
        _i64("eshape", [2, 1, 1, 1, 1]),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, ["B", "S", 8])],
        [h.make_tensor_value_info("f", TP.FLOAT, ["a", "b"]), h.make_tensor_value_info("t", TP.FLOAT, [])],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


SLICES = {
    "forward": ([0, 1], [BIG, 3], [1, 3], [1, 1]),
    "backward, clamped": ([-1, BIG], [-BIG, 0], [2, 3], [-1, -2]),
    "negative axes and steps of 2": ([1], [-1], [-2], [2]),
    "empty": ([3], [1], [1], [1]),
}


@pytest.mark.parametrize("case", list(SLICES))
def test_fast_paths_match_onnxruntime_over_shapes(case: str) -> None:
    model = _model(SLICES[case])
    s = onnxcore.Session(model)
    calls = {type(bn.call) for bn in s._plan.info}
    assert {ReshapeLike, SliceLike, ExpandLike, SameTypeCast} <= calls
    # The two equal Reshapes are one computation still.
    assert sum(1 for bn in s._plan.info if bn.node.op_type == "Reshape") == 1
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for shape in [(2, 3, 8), (1, 5, 8), (2, 3, 8), (4, 1, 8), (1, 5, 8)]:
        x = rng.standard_normal(shape).astype(np.float32)
        for _ in range(2):  # the first call with a shape runs the kernel, the second the view
            got = s.run(None, {"x": x})
            want = ref.run(None, {"x": x})
            for a, b in zip(got, want):
                assert a.shape == b.shape
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
                assert a.flags.writeable  # the caller's own array, whatever view the plan made
    # Every shape's slice index was checked against the kernel and taken (so the later calls used the view).
    slicer = next(bn.call for bn in s._plan.info if isinstance(bn.call, SliceLike))
    assert len(slicer.seen) == 3 and all(slicer.seen.values())


def test_a_refused_shape_stays_refused() -> None:
    nodes = [h.make_node("Squeeze", ["x", "ax"], ["y"])]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, ["A", "B"])],
        [h.make_tensor_value_info("y", TP.FLOAT, ["A"])],
        [_i64("ax", [1])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    s = onnxcore.Session(m.SerializeToString())
    for _ in range(2):
        np.testing.assert_array_equal(s.run(None, {"x": np.ones((3, 1), np.float32)})[0], np.ones(3))
        with pytest.raises(EvaluationError, match="Squeeze"):
            s.run(None, {"x": np.ones((3, 2), np.float32)})


def test_cast_to_the_same_type_as_output_is_a_new_array() -> None:
    """A Cast whose result is a graph output keeps its kernel: the caller never gets its own input back."""
    g = h.make_graph(
        [h.make_node("Cast", ["x"], ["y"], to=TP.FLOAT)],
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [3])],
        [h.make_tensor_value_info("y", TP.FLOAT, [3])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    s = onnxcore.Session(m.SerializeToString())
    x = np.arange(3, dtype=np.float32)
    for _ in range(2):
        y = s.run(None, {"x": x})[0]
        assert y is not x
        np.testing.assert_array_equal(y, x)


def test_array_feature_extractor_with_constant_indices_takes_them() -> None:
    nodes = [
        h.make_node("ArrayFeatureExtractor", ["x", "idx"], ["a"], domain="ai.onnx.ml"),
        h.make_node("ArrayFeatureExtractor", ["x", "idx2"], ["b"], domain="ai.onnx.ml"),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, None)],
        [h.make_tensor_value_info("a", TP.FLOAT, None), h.make_tensor_value_info("b", TP.FLOAT, None)],
        [_i64("idx", [2, 0, 2]), _i64("idx2", [[1], [3]])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18), h.make_opsetid("ai.onnx.ml", 3)], ir_version=9)
    data = m.SerializeToString()
    sess = onnxcore.Session(data, check=False)  # the inputs declare no shape (each feed below has its own)
    assert sum(type(st[0]).__name__ == "TakeLike" for st in sess._plan.steps) == 2
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for shape in [(2, 5), (2, 5), (4,), (4,), (3, 2, 4), (3, 2, 4)]:  # each shape twice: the kernel, then take
        x = rng.standard_normal(shape).astype(np.float32)
        got = sess.run(None, {"x": x})
        for a, b in zip(got, ref.run(None, {"x": x})):
            assert a.shape == b.shape
            np.testing.assert_array_equal(a, b)
    for _ in range(2):  # an extent the indices exceed: still the kernel's refusal, every time
        with pytest.raises(EvaluationError, match="index out of range"):
            sess.run(None, {"x": np.zeros((2, 3), np.float32)})


def test_transpose_takes_the_view_directly() -> None:
    nodes = [
        h.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
        h.make_node("Transpose", ["x"], ["r"]),  # reversed axes (no perm)
        h.make_node("Concat", ["t", "y", "t"], ["c"], axis=-1),
        h.make_node("Concat", ["t", "y", "t"], ["c2"], axis=-1),  # a repeat
        h.make_node("Add", ["c", "c2"], ["s"]),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, ["A", "B", "C"]), h.make_tensor_value_info("y", TP.FLOAT, None)],
        [h.make_tensor_value_info("r", TP.FLOAT, None), h.make_tensor_value_info("s", TP.FLOAT, None)],
    )
    data = h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=9).SerializeToString()
    sess = onnxcore.Session(data, check=False)  # y declares no shape (the feeds below vary it)
    kinds = [type(st[0]).__name__ for st in sess._plan.steps]
    assert kinds.count("TransposeLike") == 2 and len(kinds) == 4, kinds  # the repeated Concat runs once
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for a, b, c, extra in [(2, 3, 4, 1), (2, 3, 4, 1), (2, 3, 4, 5), (1, 5, 2, 2), (1, 5, 2, 2)]:
        feeds = {"x": rng.standard_normal((a, b, c)).astype(np.float32)}
        feeds["y"] = rng.standard_normal((b, a, extra)).astype(np.float32)
        for got, want in zip(sess.run(None, feeds), ref.run(None, feeds)):
            assert got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    for _ in range(2):  # extents that differ off the axis: the kernel's refusal, every time
        with pytest.raises(EvaluationError, match="differ off axis"):
            sess.run(None, {"x": np.zeros((2, 3, 4), np.float32), "y": np.zeros((2, 2, 1), np.float32)})
