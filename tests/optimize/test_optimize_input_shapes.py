"""optimize(input_shapes=...) (optimizer/shapes.py, issue 39 item 2): shape arithmetic is resolved concretely only
with input_shapes. Without them the result keeps its dimension variables; with them the declared inputs take the
given shapes (a variable fixed wherever the graph names it) and the arithmetic over them folds; a shape that
contradicts the declaration is refused, naming the input and the axis. onnxruntime judges the results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from optimize_models import assert_same_by_ort

import onnxcore
from onnxcore.cli import main
from onnxcore.errors import InputError


def _flatten_model() -> onnx.ModelProto:
    """x[N, C, 4] -> Reshape(x, [Shape(x)[0], Shape(x)[1] * 4]) -> Relu -> y[N, ?]; z[N] -> Neg -> w[N]."""
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Gather", ["s", "i0"], ["n"], axis=0),
        h.make_node("Gather", ["s", "i1"], ["c"], axis=0),
        h.make_node("Mul", ["c", "four"], ["c4"]),
        h.make_node("Concat", ["n", "c4"], ["target"], axis=0),
        h.make_node("Reshape", ["x", "target"], ["r"]),
        h.make_node("Relu", ["r"], ["y"]),
        h.make_node("Neg", ["z"], ["w"]),
    ]
    inits = [nh.from_array(np.array([0], np.int64), "i0"), nh.from_array(np.array([1], np.int64), "i1"),
             nh.from_array(np.array([4], np.int64), "four")]  # fmt: skip
    g = h.make_graph(
        nodes, "g",
        [h.make_tensor_value_info("x", TP.FLOAT, ["N", "C", 4]), h.make_tensor_value_info("z", TP.FLOAT, ["N"])],
        [h.make_tensor_value_info("y", TP.FLOAT, ["N", None]), h.make_tensor_value_info("w", TP.FLOAT, ["N"])],
        inits,
    )  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _dims(vi: object) -> list[object]:
    return [d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim]  # type: ignore[attr-defined]


def test_without_input_shapes_the_variables_stay() -> None:
    m = _flatten_model()
    out, _ = onnxcore.optimize(m.SerializeToString())
    out = onnx.load_from_string(out.SerializeToString())
    assert _dims(out.graph.input[0]) == ["N", "C", 4] and "Shape" in [n.op_type for n in out.graph.node]


def test_input_shapes_fix_the_declaration_and_the_arithmetic_folds() -> None:
    m = _flatten_model()
    out, report = onnxcore.optimize(m.SerializeToString(), input_shapes={"x": (2, 3, 4)})
    out = onnx.load_from_string(out.SerializeToString())
    onnx.checker.check_model(out, full_check=True)
    assert [n.op_type for n in out.graph.node] == ["Reshape", "Relu", "Neg"]
    assert _dims(out.graph.input[0]) == [2, 3, 4]
    # N is one extent wherever the graph names it: z's and the outputs' N are 2 too.
    assert _dims(out.graph.input[1]) == [2] and _dims(out.graph.output[1]) == [2]
    assert report.verified and report.verify_shapes and all(tuple(s["x"]) == (2, 3, 4) for s in report.verify_shapes)
    rng = np.random.default_rng(0)
    feeds = {"x": rng.standard_normal((2, 3, 4)).astype(np.float32), "z": rng.standard_normal(2).astype(np.float32)}
    assert_same_by_ort(m, out, feeds)
    # The given model is not changed.
    assert _dims(m.graph.input[0]) == ["N", "C", 4]


@pytest.mark.parametrize(
    ("shapes", "words"),
    [
        ({"q": (2, 3, 4)}, "names no graph input"),
        ({"x": (2, 3)}, "rank 2"),
        ({"x": (2, 3, 5)}, "axis 2 is declared 4"),
        ({"x": (2, 3, 4), "z": (5,)}, "'N' is given 2 and 5"),
        ({"x": (2, -1, 4)}, "whole numbers"),
    ],
)
def test_a_contradicting_shape_is_refused_by_name(shapes: dict[str, tuple[int, ...]], words: str) -> None:
    with pytest.raises(InputError, match=words):
        onnxcore.optimize(_flatten_model().SerializeToString(), input_shapes=shapes)


def test_the_command_fixes_shapes(tmp_path: Path) -> None:
    src, dst = tmp_path / "m.onnx", tmp_path / "o.onnx"
    src.write_bytes(_flatten_model().SerializeToString())
    assert main(["optimize", str(src), str(dst), "--input-shape", "x=2,3,4", "--input-shape", "z=2"]) == 0
    out = onnx.load(str(dst))
    assert _dims(out.graph.input[0]) == [2, 3, 4] and "Shape" not in [n.op_type for n in out.graph.node]
    bad = tmp_path / "bad.onnx"
    assert main(["optimize", str(src), str(bad), "--input-shape", "x=2,3,5"]) != 0 and not bad.exists()
