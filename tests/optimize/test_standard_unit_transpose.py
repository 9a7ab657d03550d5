"""unit_transposes_as_reshape (runtime/optimize/standard/unit_transpose.py, issue 39 item 2): a Transpose that moves
only axes of extent 1 (a decoder step's heads moved past its sequence of one) becomes a Reshape merged with the
shape-only node before it or the Reshape after it, equal to onnxruntime on the original with the batch at 1 and
larger; an axis whose extent is a dimension variable (1 for some sizes only) or non-unit axes that change order keep
the Transpose."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from standard_helpers import ops, rewrite, rewrite_and_compare

import onnxcore
from onnxcore.runtime.optimize.pipeline import Rewrite
from onnxcore.runtime.optimize.standard import merge_layout_ops, unit_transposes_as_reshape

RNG = np.random.default_rng(23)
UNIT = [Rewrite("unit_transposes_as_reshape", unit_transposes_as_reshape, 1)]
UNIT_THEN_MERGE = [*UNIT, Rewrite("merge_layout_ops", merge_layout_ops, 1)]


def _i(name: str, v: list[int]) -> object:
    return nh.from_array(np.asarray(v, np.int64), name)


def _model(nodes: list, inits: list, x_shape: list, y_rank: int) -> onnx.ModelProto:
    nodes = [*nodes, h.make_node("Neg", ["y"], ["z"])]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, x_shape)],
                     [h.make_tensor_value_info("z", TP.FLOAT, [f"d{i}" for i in range(y_rank)])], inits)  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 14)])
    m.ir_version = 8
    return m


def _feeds(shape: list) -> list[dict[str, np.ndarray]]:
    return [{"x": RNG.standard_normal([n if isinstance(d, str) else d for d in shape]).astype(np.float32)}
            for n in (1, 3)]  # fmt: skip


def test_heads_split_then_moved_past_a_sequence_of_one_is_one_reshape() -> None:
    nodes = [h.make_node("Reshape", ["x", "t"], ["r"], name="split"),
             h.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 1, 3], name="heads")]  # fmt: skip
    m = _model(nodes, [_i("t", [0, 1, -1, 32])], ["B", 1, 128], 4)
    out, fired = rewrite_and_compare(m, _feeds(["B", 1, 128]), UNIT)
    assert fired == ["unit_transposes_as_reshape"] and ops(out) == ["Reshape", "Neg"]
    node = out.graph.node[0]
    assert node.name == "split+heads" and node.input[0] == "x"
    target = nh.to_array(next(t for t in out.graph.initializer if t.name == node.input[1])).tolist()
    assert target == [0, 4, 1, 32]  # the batch copied from x (a variable), the rest fixed


def test_a_transpose_before_a_reshape_merges_with_it() -> None:
    # The heads moved back (perm [0, 2, 1, 3] of [B, 4, 1, 32]) and flattened: one Reshape once merged.
    nodes = [h.make_node("Transpose", ["x"], ["p"], perm=[0, 2, 1, 3]), h.make_node("Reshape", ["p", "t"], ["y"])]
    m = _model(nodes, [_i("t", [-1, 1, 128])], ["B", 4, 1, 32], 3)
    out, fired = rewrite_and_compare(m, _feeds(["B", 4, 1, 32]), UNIT_THEN_MERGE)
    assert fired == ["unit_transposes_as_reshape", "merge_layout_ops"] and ops(out) == ["Reshape", "Neg"]


def test_traps_keep_the_transpose() -> None:
    split = h.make_node("Reshape", ["x", "t"], ["r"])
    heads = h.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 1, 3])
    swap = h.make_node("Transpose", ["r"], ["y"], perm=[0, 1, 3, 2])
    traps = {
        # The sequence is a dimension variable: 1 for one size, not for others.
        "variable sequence": _model([split, heads], [_i("t", [0, 0, 4, 32])], ["B", "T", 128], 4),
        # Axes of extent other than 1 change order (the heads and the head size).
        "non-unit order": _model([split, swap], [_i("t", [0, 1, 4, 32])], ["B", 1, 128], 4),
        # Nothing to merge with: a Reshape for the Transpose alone saves no node.
        "alone": _model([h.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 1, 3])], [], ["B", 1, 4, 32], 4),
    }
    for name, m in traps.items():
        out, fired = rewrite(m, UNIT)
        assert fired == [] and "Transpose" in ops(out), name


def test_variable_sequence_is_not_merged_and_stays_right() -> None:
    # The same graph as the trap, run at T = 1 and T = 3 through the whole optimizer: the Transpose stays and the
    # result agrees with the original at both.
    split = h.make_node("Reshape", ["x", "t"], ["r"])
    heads = h.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 1, 3])
    m = _model([split, heads], [_i("t", [0, 0, 4, 32])], ["B", "T", 128], 4)
    optimized, report = onnxcore.optimize(onnxcore.load(m.SerializeToString()))
    assert report.verified and "Transpose" in [n.op_type for n in optimized.graph.node]
    for t in (1, 3):
        x = RNG.standard_normal((2, t, 128)).astype(np.float32)
        want = -x.reshape(2, t, 4, 32).transpose(0, 2, 1, 3)
        got = onnxcore.Session(onnxcore.encode(optimized)).run(None, {"x": x})[0]
        np.testing.assert_array_equal(got, want)
