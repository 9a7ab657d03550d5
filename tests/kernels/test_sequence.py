"""Sequence and optional operators against the ONNX 1-3 vectors and onnxruntime.

Single-node vectors run through the kernel registry (``node_harness``); SequenceMap's vectors
carry a subgraph and run through :class:`onnxcore.Session`, which supplies ``run_subgraph``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from runtime.node_harness import assert_close, run_single_node_case

from kernels import assert_every_version_has_a_kernel
from onnxcore.errors import EvaluationError
from onnxcore.kernels.registry import lookup

onnx = pytest.importorskip("onnx")

PREFIXES = ("test_sequence_", "test_split_to_sequence", "test_optional_", "test_concat_from_sequence")


def _single_node(node_cases: list[Path]) -> list[Path]:
    out = []
    for c in node_cases:
        if c.name.startswith(PREFIXES) and "expanded" not in c.name:
            if len(onnx.load(str(c / "model.onnx")).graph.node) == 1:
                out.append(c)
    return out


def test_node_vectors(node_cases: list[Path]) -> None:
    cases = [c for c in _single_node(node_cases) if not c.name.startswith("test_sequence_map")]
    assert len(cases) >= 16
    for case in cases:
        out = run_single_node_case(case)
        assert out is not None, case.name
        actual, expected = out
        assert len(actual) == len(expected), case.name
        for a, e in zip(actual, expected):
            assert_close(a, e)


def _run_session(case: Path) -> tuple[list[Any], list[Any]]:
    """The case through :class:`onnxcore.Session` (which evaluates the body with ``run_subgraph``)."""
    from runtime.node_harness import _load_value

    import onnxcore

    model = onnx.load(str(case / "model.onnx"))
    ds = case / "test_data_set_0"
    feeds = {vi.name: _load_value(ds / f"input_{i}.pb", vi.type) for i, vi in enumerate(model.graph.input)}
    expected = [_load_value(ds / f"output_{i}.pb", vi.type) for i, vi in enumerate(model.graph.output)]
    return list(onnxcore.Session(str(case / "model.onnx")).run(None, feeds)), expected


def test_sequence_map_vectors(node_cases: list[Path]) -> None:
    cases = [c for c in _single_node(node_cases) if c.name.startswith("test_sequence_map")]
    assert len(cases) >= 6
    for case in cases:
        actual, expected = _run_session(case)
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_close(a, e)


def _fn(op: str, version: int) -> Any:
    k = lookup("", op, version)
    assert k is not None, (op, version)
    return k.fn


def _ort_run(nodes: list[Any], inputs: list[Any], outputs: list[Any], feeds: dict[str, Any], opset: int = 17) -> Any:
    ort = pytest.importorskip("onnxruntime")
    from onnx import helper

    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def test_split_to_sequence_against_onnxruntime() -> None:
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    fn = _fn("SplitToSequence", 11)
    cases: list[tuple[tuple[int, ...], np.ndarray | None, int, int]] = [
        ((5, 7), None, 0, 1),
        ((5, 7), None, 1, 0),
        ((5, 7), None, -1, 0),
        ((5, 7), np.array(3, np.int64), 1, 1),
        ((5, 7), np.array(2, np.int32), -2, 1),
        ((5, 7), np.array([1, 4, 2], np.int64), 1, 0),
        ((5, 7), np.array([0, 5], np.int64), 0, 1),
        ((2, 0, 3), np.array(2, np.int64), 2, 1),
        ((4,), None, 0, 0),
    ]
    for shape, split, axis, keepdims in cases:
        x = rng.standard_normal(shape).astype(np.float32)
        ins = ["x"] + (["s"] if split is not None else [])
        node = helper.make_node("SplitToSequence", ins, ["seq"], axis=axis, keepdims=keepdims)
        vis = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))]
        feeds: dict[str, Any] = {"x": x}
        if split is not None:
            vis.append(helper.make_tensor_value_info("s", helper.np_dtype_to_tensor_dtype(split.dtype), None))
            feeds["s"] = split
        outs = [helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, None)]
        (expected,) = _ort_run([node], vis, outs, feeds)
        (seq,) = (
            fn(x, split, axis=axis, keepdims=keepdims) if split is not None else fn(x, axis=axis, keepdims=keepdims)
        )
        assert isinstance(seq, list) and len(seq) == len(expected), (shape, split, axis)
        for a, e in zip(seq, expected):
            assert a.dtype == e.dtype and a.shape == e.shape
            np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize(("axis", "new_axis"), [(0, 0), (1, 0), (-1, 0), (0, 1), (2, 1), (-3, 1), (-1, 1)])
def test_concat_from_sequence_against_onnxruntime(axis: int, new_axis: int) -> None:
    from onnx import TensorProto, helper

    rng = np.random.default_rng(1)
    parts = [rng.integers(-5, 5, (2, 3)).astype(np.int32) for _ in range(3)]
    construct = helper.make_node("SequenceConstruct", ["a", "b", "c"], ["seq"])
    cat = helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=axis, new_axis=new_axis)
    vis = [helper.make_tensor_value_info(n, TensorProto.INT32, [2, 3]) for n in "abc"]
    (expected,) = _ort_run(
        [construct, cat], vis, [helper.make_tensor_value_info("y", TensorProto.INT32, None)], dict(zip("abc", parts))
    )
    (seq,) = _fn("SequenceConstruct", 11)(*parts)
    actual = _fn("ConcatFromSequence", 11)(seq, axis=axis, new_axis=new_axis)
    assert actual.dtype == expected.dtype
    np.testing.assert_array_equal(actual, expected)


def test_insert_erase_at_length() -> None:
    a, b, c = (np.full((2,), v, np.float32) for v in (1, 2, 3))
    (seq,) = _fn("SequenceConstruct", 11)(a, b)
    (s2,) = _fn("SequenceInsert", 11)(seq, c, np.array(-2, np.int64))
    assert [float(t[0]) for t in s2] == [3.0, 1.0, 2.0]
    assert [float(t[0]) for t in seq] == [1.0, 2.0]  # the input is not mutated
    (s3,) = _fn("SequenceInsert", 11)(seq, c, np.array(2, np.int32))
    assert [float(t[0]) for t in s3] == [1.0, 2.0, 3.0]
    (s4,) = _fn("SequenceErase", 11)(s2)
    assert [float(t[0]) for t in s4] == [3.0, 1.0]
    (s5,) = _fn("SequenceErase", 11)(s2, np.array(-3, np.int64))
    assert [float(t[0]) for t in s5] == [1.0, 2.0]
    assert float(_fn("SequenceAt", 11)(s2, np.array(-1, np.int64))[0]) == 2.0
    n = _fn("SequenceLength", 11)(s2)
    assert n.dtype == np.int64 and n.shape == () and int(n) == 3
    (empty,) = _fn("SequenceEmpty", 11)(dtype=7)
    assert empty == [] and int(_fn("SequenceLength", 11)(empty)) == 0
    with pytest.raises(EvaluationError):
        _fn("SequenceAt", 11)(seq, np.array(2, np.int64))
    with pytest.raises(EvaluationError):
        _fn("SequenceInsert", 11)(seq, c, np.array(3, np.int64))
    with pytest.raises(EvaluationError):
        _fn("SequenceErase", 11)(empty)
    with pytest.raises(EvaluationError):
        _fn("ConcatFromSequence", 11)(empty, axis=0)


def test_optional_values() -> None:
    x = np.arange(3, dtype=np.int64)
    for v in (15, 18):
        assert bool(_fn("OptionalHasElement", v)(x)) is True
        assert bool(_fn("OptionalHasElement", v)(None)) is False
        assert bool(_fn("OptionalHasElement", v)([])) is True  # an empty sequence is still an element
    assert _fn("Optional", 15)(x)[0] is x
    assert _fn("Optional", 15)(None, type=object())[0] is None
    assert _fn("OptionalGetElement", 18)([x])[0] == [x]
    with pytest.raises(EvaluationError):
        _fn("OptionalGetElement", 18)(None)


def test_sequence_map_through_session() -> None:
    from onnx import TensorProto, helper

    import onnxcore

    body = helper.make_graph(
        [helper.make_node("Mul", ["e", "kk"], ["y"]), helper.make_node("Shape", ["e"], ["s"])],
        "body",
        [
            helper.make_tensor_value_info("e", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("kk", TensorProto.FLOAT, None),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("s", TensorProto.INT64, None),
        ],
    )
    node = helper.make_node("SequenceMap", ["seq", "k"], ["ys", "ss"], body=body)
    f_seq = helper.make_tensor_sequence_value_info
    graph = helper.make_graph(
        [node],
        "g",
        [f_seq("seq", TensorProto.FLOAT, None), helper.make_tensor_value_info("k", TensorProto.FLOAT, [])],
        [f_seq("ys", TensorProto.FLOAT, None), f_seq("ss", TensorProto.INT64, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    seq = [np.ones((2, 3), np.float32), np.arange(4, dtype=np.float32)]
    ys, ss = onnxcore.Session(model.SerializeToString()).run(None, {"seq": seq, "k": np.array(2.0, np.float32)})
    assert len(ys) == 2 and len(ss) == 2
    np.testing.assert_array_equal(ys[1], np.arange(4, dtype=np.float32) * 2)
    assert ss[0].tolist() == [2, 3] and ss[1].tolist() == [4]


@pytest.mark.parametrize(
    "op",
    [
        "SequenceConstruct",
        "SequenceEmpty",
        "SequenceAt",
        "SequenceErase",
        "SequenceInsert",
        "SequenceLength",
        "SplitToSequence",
        "ConcatFromSequence",
        "SequenceMap",
        "Optional",
        "OptionalGetElement",
        "OptionalHasElement",
    ],
)
def test_every_since_version_has_a_kernel(op: str) -> None:
    pytest.importorskip("onnx")
    assert_every_version_has_a_kernel(op)
